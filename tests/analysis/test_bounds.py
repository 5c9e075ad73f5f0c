"""Bounds at every scope (kind ``bounds``), in both checkers: CPU and CUDA, data and
barriers, windows and window statements, instruction and proc-call arguments.

Each family: the example, variants, and the correct twin that stays ``proven``."""

from __future__ import annotations

from pre_helpers import accepted_both, kinds_of, parse, refuted_both

from exogpu_verify import verify

CPU_COPY = '''
@proc
def k(N: size, A: f32[N] @ DRAM, B: f32[N] @ DRAM):
    for i in seq({lo}, N):
        B[i] = A[i]  # <-
'''


def test_cpu_scope_out_of_bounds_on_dram_is_refuted():
    # the example: it used to be proven with 0 obligations
    d = refuted_both(CPU_COPY.format(lo="-1"), "bounds", {"N": 4}, "read of A")
    assert "0 <= index < N" in d.message and "index = -1" in d.message


def test_cpu_scope_copy_in_bounds_is_proven_with_bounds_obligations():
    r = accepted_both(CPU_COPY.format(lo="0"), {"N": 4})
    assert "bounds" in kinds_of(r)


WINDOW_ACCESS = '''
@proc
def k(N: size, A: f32[16] @ CudaGmemLinear):
    {asserts}
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for h in cuda_threads(0, 1, unit=cuda_thread):
                w = A[0:8]
                for i in seq(0, N):
                    w[i] = 0.0  # <-
'''


def test_access_beyond_a_window_but_inside_its_tensor_is_refuted():
    d = refuted_both(WINDOW_ACCESS.format(asserts="assert N >= 1"), "bounds", {"N": 9},
                     "write of w")
    assert "0 <= index < 8" in d.message
    p = parse(WINDOW_ACCESS.format(asserts="assert N >= 1"))
    assert verify(p).sizes == {"N": 9}


def test_access_inside_the_window_is_proven():
    accepted_both(WINDOW_ACCESS.format(asserts="assert N <= 8"), {"N": 8})


WINDOW_STMT = '''
@proc
def k(N: size, A: f32[N] @ CudaGmemLinear):
    assert N >= 4
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for h in cuda_threads(0, 1, unit=cuda_thread):
                w = A[4:{hi}]  # <-
                for i in seq(0, N - 4):
                    w[i] = 0.0
'''


def test_window_statement_out_of_its_tensor_is_refuted():
    refuted_both(WINDOW_STMT.format(hi="N + 4"), "bounds", {"N": 4}, "window w")


def test_window_statement_inside_its_tensor_is_proven():
    accepted_both(WINDOW_STMT.format(hi="N"), {"N": 6})


INSTR_ARG = '''
@proc
def k(A: f32[{n}] @ CudaGmemLinear, B: f32[32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for h in cuda_threads(0, 4, unit=cuda_thread):
                copy_n(8, B[8 * h:8 * h + 8], A[8 * h:8 * h + 8])  # <-
'''


def test_instruction_argument_window_out_of_bounds_is_bounds_not_sync():
    d = refuted_both(INSTR_ARG.format(n=24), "bounds", {})
    assert "out-of-bounds" in d.message or "out of bounds" in d.message


def test_instruction_argument_window_in_bounds_is_proven():
    accepted_both(INSTR_ARG.format(n=32), {})


BARRIER = '''
@proc
def k(K: size, A: f32[32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            z: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, K):
                Arrive(cuda_in_order) >> z[k + {off}]  # <-
                Await(z[k + {off}], cuda_in_order, 0)
'''


def test_barrier_index_out_of_range_is_a_bounds_error():
    refuted_both(BARRIER.format(off=1), "bounds", {"K": 2}, "barrier index")


def test_barrier_index_in_range_is_proven():
    accepted_both(BARRIER.format(off=0), {"K": 3})


PROC_ARG = '''
@proc
def fill(n: size, x: [f32][n] @ DRAM):
    for i in seq(0, n):
        x[i] = 0.0

@proc
def k(N: size, A: f32[N] @ DRAM):
    fill({m}, A[0:{m}])  # <-
'''


def test_proc_call_argument_window_out_of_bounds_is_refuted():
    from exogpu_verify import parse_proc_source

    fill = parse_proc_source(PROC_ARG.split("@proc\ndef k")[0])
    src = "@proc\ndef k" + PROC_ARG.split("@proc\ndef k")[1]
    refuted_both(src.format(m="N + 1"), "bounds", {"N": 3}, "argument 'x' of fill()",
                 fill=fill)
    # the concrete checker runs it; the symbolic one does not model proc calls yet
    assert verify(parse(src.format(m="N"), fill=fill), sizes={"N": 3}).verdict == "checked"


CALLEE_ACCESS = '''
@proc
def k(A: f32[8] @ DRAM):
    poke(4, A[0:4])
'''

POKE = '''
@proc
def poke(n: size, x: [f32][n] @ DRAM):
    x[n] = 1.0
'''


def test_callee_access_beyond_its_parameter_is_refuted_at_the_callee_line():
    from exogpu_verify import parse_proc_source

    poke = parse_proc_source(POKE, file="<poke>")
    r = verify(parse(CALLEE_ACCESS, poke=poke), sizes={}, mode="concrete")
    assert r.verdict == "refuted"
    d = r.diagnostics[0]
    line = POKE.splitlines().index("    x[n] = 1.0") + 1
    assert (d.kind, d.file, d.line) == ("bounds", "<poke>", line), str(d)
