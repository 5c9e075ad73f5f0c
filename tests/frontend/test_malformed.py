"""Rejected programs: each raises ``ExoGpuError`` (exactly that class, never a Python
exception) whose diagnostic has the expected kind and the line of the offending construct.

The offending line carries a ``# ERR`` marker, so expected lines are found, not hardcoded.
String programs go through ``parse_proc_source``; ``progs/malformed_progs.py`` holds
programs that go through a real ``@proc``/``@instr`` on a file.
"""

from __future__ import annotations

import inspect
import re
import traceback
from dataclasses import dataclass
from functools import lru_cache

import pytest

from exogpu_verify import ExoGpuError, parse_proc_source

FILE = "<malformed>"

INSTRS = {
    "copy4": '''
@instr(timeline=cuda_in_order_instr, unit=cuda_thread, codegen="copy4({dst}, {src});")
def copy4(n: size, dst: [f32][n] @ CudaSmemLinear, src: [f32][n] @ CudaGmemLinear):
    assert n == 4
    for i in seq(0, n):
        dst[i] = src[i]
''',
    "tma_load": '''
@instr(timeline=tma_to_smem_async_instr, unit=cuda_warp, barrier=CudaMbarrier,
       codegen="tma_load({dst}, {src});")
def tma_load(dst: [f32][8, 8] @ CudaSmemLinear, src: [f32][8, 8] @ Sm90_tensorMap(0, 8, 8)):
    for i in seq(0, 8):
        for j in seq(0, 8):
            dst[i, j] = src[i, j]
''',
    "cpu_zero": '''
@instr(timeline=cpu_in_order_instr, codegen="memset0({x});")
def cpu_zero(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 0.0
''',
    "helper": '''
@proc
def helper(n: size, x: [f32][n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
''',
}


@lru_cache(maxsize=None)
def env() -> dict:
    e = {name: parse_proc_source(src) for name, src in INSTRS.items()}
    e["ncta"] = 2
    return e


def expect_error(fn, kind: str, line: int, file: str | None = None) -> ExoGpuError:
    """Run ``fn``; it must raise exactly ``ExoGpuError`` with this kind and line."""
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - we assert the exact class below
        if type(e) is not ExoGpuError:
            pytest.fail(f"expected ExoGpuError({kind!r}), got {type(e).__name__}: {e}\n"
                        + "".join(traceback.format_exception(e)))
        err = e
    else:
        pytest.fail(f"expected ExoGpuError({kind!r}) at line {line}; the program was accepted")
    d = err.diagnostic
    assert (d.kind, d.line) == (kind, line), f"got {d.kind} at line {d.line}:\n{err}"
    assert err.kind == kind
    text = str(err)
    if file is not None:
        assert d.file == file
    assert f"{d.file}:{line}:" in text.splitlines()[0]
    # the excerpt: the source line with a gutter, then a caret line under it
    lines = text.splitlines()
    gutter = [i for i, ln in enumerate(lines) if re.match(rf"\s*{line} \| ", ln)]
    assert gutter, text
    assert re.fullmatch(r" *\^", lines[gutter[0] + 1]), text
    return err


def marker_line(text: str, marker: str = "# ERR") -> int:
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if marker in ln]
    assert len(hits) == 1, f"exactly one {marker!r} marker expected"
    return hits[0]


@dataclass
class Case:
    id: str
    kind: str
    src: str
    msg: str | None = None  # a regex the message must contain
    hint: str | None = None  # a substring the hint must contain


def kern(body: str, params: str = "N: size, G: f32[N] @ CudaGmemLinear",
         launch: str = "blockDim=128") -> str:
    """A kernel whose task body is ``body``."""
    inner = "\n".join("            " + ln for ln in body.strip("\n").splitlines())
    return (f"@proc\ndef k({params}):\n    with CudaDeviceFunction({launch}):\n"
            f"        for task in cuda_tasks(0, 1):\n{inner}\n")


CASES = [
    # ---------------------------------------------------------------- names and types
    Case("unknown_name", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        A[i] = undefined_value  # ERR
''', msg="unknown name 'undefined_value'"),
    Case("unknown_index_name", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    A[j] = 0.0  # ERR
''', msg="unknown name 'j'"),
    Case("unknown_memory", "syntax", '''
@proc
def f(N: size,
      A: f32[N] @ NoSuchMemory):  # ERR
    pass
''', msg="NoSuchMemory"),
    Case("not_a_memory", "type", '''
@proc
def f(N: size, A: f32[N] @ cuda_warp):  # ERR
    pass
''', msg="not a memory"),
    Case("unknown_scalar_type", "syntax", '''
@proc
def f(N: size, A: f33[N] @ DRAM):  # ERR
    pass
'''),
    Case("param_without_annotation", "syntax", '''
@proc
def f(N: size, A):  # ERR
    pass
'''),
    Case("tensor_extent_zero", "type", '''
@proc
def f(A: f32[0] @ DRAM):  # ERR
    pass
'''),
    Case("python_syntax_error", "syntax", '''
@proc
def f(N: size):
    for i in seq(0, N)  # ERR
        pass
'''),
    # ---------------------------------------------------------------- control expressions
    Case("non_affine_index", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        for j in seq(0, N):
            A[i * j] = 0.0  # ERR
''', msg="non-affine", hint="multiplication by a constant"),
    Case("division_by_variable", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(1, N):
        A[N / i] = 0.0  # ERR
'''),
    Case("modulo_by_zero", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        A[i % 0] = 0.0  # ERR
''', msg="non-positive"),
    Case("data_dependent_index", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM, B: i32[N] @ DRAM):
    for i in seq(0, N):
        A[B[i]] = 0.0  # ERR
''', msg="must not depend on data"),
    Case("float_index", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    A[1.5] = 0.0  # ERR
'''),
    Case("data_in_loop_bound", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    n: i32 @ DRAM
    n = 4
    for i in seq(0, n):  # ERR
        A[i] = 0.0
''', msg="must not depend on data"),
    Case("data_element_in_loop_bound", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM, B: i32[N] @ DRAM):
    for i in seq(0, B[0]):  # ERR
        A[i] = 0.0
'''),
    Case("data_in_if_condition", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        if A[i] > 0:  # ERR
            A[i] = 0.0
''', msg="must not depend on data"),
    Case("integer_as_condition", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        if i:  # ERR
            pass
'''),
    Case("stride_of_non_tensor", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    assert stride(N, 0) == 1  # ERR
    pass
'''),
    # ---------------------------------------------------------------- assignments
    Case("assign_to_size_param", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    N = 3  # ERR
''', msg="cannot assign to size 'N'"),
    Case("assign_to_loop_variable", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        i = 0  # ERR
''', msg="cannot assign"),
    Case("assign_to_unknown_name", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    tmp = A[0]  # ERR
''', msg="unknown name 'tmp'"),
    Case("assign_to_unallocated_python_name", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    ncta = A[0]  # ERR
''', msg="not allocated", hint="declare it first"),
    Case("assign_to_unallocated_array", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        out[i] = A[i]  # ERR
'''),
    Case("sub_reduction", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        A[i] -= 1.0  # ERR
''', msg=r"only `\+=`"),
    Case("mul_reduction", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        A[i] *= 2.0  # ERR
'''),
    Case("array_without_index_in_data", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM, B: f32[N] @ DRAM):
    A[0] = B  # ERR
''', msg="index it"),
    Case("wrong_index_count", "type", '''
@proc
def f(N: size, A: f32[N, N] @ DRAM):
    A[0] = 1.0  # ERR
'''),
    Case("alloc_with_initial_value", "syntax", '''
@proc
def f(N: size):
    x: f32 @ DRAM = 0.0  # ERR
'''),
    Case("chained_assignment", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    A[0] = A[1] = 0.0  # ERR
'''),
    Case("shadow_loop_variable", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        for i in seq(0, 4):  # ERR
            A[i] = 0.0
''', msg="shadowing"),
    Case("shadow_parameter_by_alloc", "type", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    A: f32[4] @ DRAM  # ERR
''', msg="shadowing"),
    Case("keyword_as_variable", "syntax", '''
@proc
def f(N: size):
    for seq in seq(0, N):  # ERR
        pass
'''),
    # ---------------------------------------------------------------- statements
    Case("assert_not_at_top", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    A[0] = 1.0
    assert N >= 1  # ERR
''', hint="move preconditions"),
    Case("assert_with_message", "syntax", '''
@proc
def f(N: size):
    assert N >= 1, "N must be positive"  # ERR
    pass
'''),
    Case("while_loop", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    while True:  # ERR
        pass
''', msg="`while` loops are not part of the language", hint="for i in seq(lo, hi)"),
    Case("while_after_setup", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    x: f32 @ DRAM
    while N > 0:  # ERR
        x = 0.0
''', msg="`while` loops", hint="for i in seq(lo, hi)"),
    Case("break_in_loop", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        if i == 3:
            break  # ERR
        A[i] = 0.0
''', msg="`break` is not part of the language", hint="`if` on the loop variable"),
    Case("return_value", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    A[0] = 0.0
    return A  # ERR
''', msg="`return` is not part of the language", hint="output parameter"),
    Case("recursion", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    A[0] = 0.0
    f(N, A)  # ERR
''', msg="recursion: `f` calls itself", hint="`for` loop"),
    Case("list_comprehension", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        A[i] = fmax(*[A[j] for j in seq(0, 2)])  # ERR
''', msg="a comprehension inside a proc", hint="for i in seq(lo, hi)"),
    Case("lambda_bound", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    g = lambda x: x + 1.0  # ERR
    for i in seq(0, N):
        A[i] = g(A[i])
''', msg="a `lambda` inside a proc", hint="before the `def`"),
    Case("nested_def", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    def g(x):  # ERR
        return x
    A[0] = 0.0
''', msg="a nested `def` inside a proc", hint="module level"),
    Case("range_loop", "syntax", '''
@proc
def f(N: size, A: f32[N] @ DRAM):
    for i in range(N):  # ERR
        pass
'''),
    Case("for_else", "syntax", '''
@proc
def f(N: size):
    for i in seq(0, N):  # ERR
        pass
    else:
        pass
'''),
    Case("with_as", "syntax", kern('''
with CudaWarps(0, 1) as w:  # ERR
    pass
''')),
    # ---------------------------------------------------------------- calls
    Case("wrong_memory_for_instr_arg", "type", kern('''
for t in cuda_threads(0, 32, unit=cuda_thread):
    r: f32[32, 4] @ CudaRmem
    copy4(4, r[t, 0:4], G[0:4])  # ERR
'''), msg="must be in CudaSmemLinear", hint="allocate 'r' @ CudaSmemLinear"),
    Case("wrong_precision_for_instr_arg", "type", kern('''
sm: f16[32, 4] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[t, 0:4], G[0:4])  # ERR
'''), msg="must be f32, got f16"),
    Case("wrong_rank_window", "type", kern('''
sm: f32[32, 4] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[0:2, 0:4], G[0:4])  # ERR
'''), msg="1 dimension"),
    Case("window_index_count", "type", kern('''
sm: f32[32, 4] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[0:4], G[0:4])  # ERR
''')),
    Case("wrong_window_extent", "type", kern('''
sm: f32[32, 8] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[t, 0:8], G[0:4])  # ERR
'''), msg=r"has shape \[8\] but the parameter is \[f32\]\[n\], i.e. \[4\]"),
    # the example: extents that are constant only after simplification
    Case("short_window_symbolic_bounds", "type", kern('''
sm: f32[64] @ CudaSmemLinear
for h in cuda_threads(0, 4, unit=cuda_thread):
    copy4(4, sm[8 * h:8 * h + 2], G[0:4])  # ERR
'''), msg=r"has shape \[2\] but the parameter is \[f32\]\[n\], i.e. \[4\]"),
    Case("window_with_step", "syntax", kern('''
sm: f32[32, 8] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[t, 0:8:2], G[0:4])  # ERR
''')),
    Case("wrong_argument_count", "type", kern('''
sm: f32[32, 4] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[t, 0:4], G[0:4], G[4:8])  # ERR
'''), msg="takes 3 argument"),
    Case("missing_argument", "type", kern('''
sm: f32[32, 4] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[t, 0:4])  # ERR
'''), msg="missing argument"),
    Case("unknown_keyword_argument", "type", kern('''
sm: f32[32, 4] @ CudaSmemLinear
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[t, 0:4], source=G[0:4])  # ERR
''')),
    Case("size_argument_zero", "type", '''
@proc
def f(N: size, X: f32[N] @ DRAM):
    cpu_zero(0, X)  # ERR
'''),
    Case("window_to_dense_param", "type", '''
@proc
def f(N: size, X: f32[N] @ DRAM):
    assert N >= 4
    cpu_zero(4, X[0:4])  # ERR
''', msg="dense tensor"),
    Case("call_a_non_procedure", "type", '''
@proc
def f(N: size, X: f32[N] @ DRAM):
    print(X)  # ERR
'''),
    Case("trailing_barrier_on_plain_instr", "barrier-usage", kern('''
sm: f32[32, 4] @ CudaSmemLinear
z: barrier @ CudaMbarrier
for t in cuda_threads(0, 32, unit=cuda_thread):
    copy4(4, sm[t, 0:4], G[0:4]) >> z  # ERR
'''), msg="does not take a trailing barrier"),
    Case("missing_trailing_barrier", "barrier-usage", kern('''
sm: f32[8, 8] @ CudaSmemLinear
for w in cuda_threads(0, 1, unit=cuda_warp):
    tma_load(sm, tm[0:8, 0:8])  # ERR
''', params="N: size, G: f32[8, 8] @ CudaGmemLinear, tm: [f32][8, 8] @ Sm90_tensorMap(0, 8, 8)"),
         msg="requires a trailing barrier"),
    Case("trailing_barrier_wrong_mechanism", "barrier-usage", kern('''
sm: f32[8, 8] @ CudaSmemLinear
cg: barrier @ Sm80_CommitGroup
for w in cuda_threads(0, 1, unit=cuda_warp):
    tma_load(sm, tm[0:8, 0:8]) >> cg  # ERR
''', params="N: size, G: f32[8, 8] @ CudaGmemLinear, tm: [f32][8, 8] @ Sm90_tensorMap(0, 8, 8)")),
    Case("trailing_barriers_two_names", "barrier-usage", kern('''
sm: f32[8, 8] @ CudaSmemLinear
z: barrier[2] @ CudaMbarrier
y: barrier[2] @ CudaMbarrier
for w in cuda_threads(0, 1, unit=cuda_warp):
    tma_load(sm, tm[0:8, 0:8]) >> z[0] >> y[0]  # ERR
''', params="N: size, G: f32[8, 8] @ CudaGmemLinear, tm: [f32][8, 8] @ Sm90_tensorMap(0, 8, 8)")),
    Case("tensor_map_over_dram", "type", '''
@proc
def f(X: f32[64, 64] @ DRAM):
    tm = X[:, :] @ Sm90_tensorMap(0, 8, 8)  # ERR
''', msg="dense CudaGmemLinear"),
    Case("tensor_map_rank_mismatch", "type", '''
@proc
def f(X: f32[64, 64] @ CudaGmemLinear):
    tm = X[0, :] @ Sm90_tensorMap(0, 8, 8)  # ERR
''', hint="left-padding"),
    Case("window_stmt_with_data_memory", "type", '''
@proc
def f(X: f32[64, 64] @ CudaGmemLinear):
    tm = X[:, :] @ CudaSmemLinear  # ERR
'''),
    # ---------------------------------------------------------------- synchronization
    Case("arrive_without_target", "syntax", kern('''
Arrive(cuda_in_order)  # ERR
'''), msg="needs a barrier target"),
    Case("arrive_count_two", "syntax", kern('''
z: barrier @ CudaMbarrier
Arrive(cuda_in_order, 2) >> z  # ERR
'''), msg="N=1"),
    Case("arrive_two_barriers", "syntax", kern('''
z: barrier[2] @ CudaMbarrier
y: barrier[2] @ CudaMbarrier
Arrive(cuda_in_order) >> z[0] >> y[0]  # ERR
'''), msg="same barrier"),
    Case("arrive_on_data", "type", kern('''
sm: f32[4] @ CudaSmemLinear
Arrive(cuda_in_order) >> sm[0]  # ERR
'''), msg="not a barrier"),
    Case("arrive_with_instr_timeline", "type", kern('''
z: barrier @ CudaMbarrier
Arrive(tma_to_smem_async_instr) >> z  # ERR
''')),
    Case("await_with_slice", "syntax", kern('''
z: barrier[2] @ CudaMbarrier
Await(z[:], cuda_in_order, 0)  # ERR
'''), msg="no `:` multicast"),
    Case("await_negative_count", "type", kern('''
z: barrier @ CudaMbarrier
Await(z, cuda_in_order, -1)  # ERR
''')),
    Case("await_wrong_barrier_rank", "type", kern('''
z: barrier[2, 2] @ CudaMbarrier
Await(z[0], cuda_in_order, 0)  # ERR
''')),
    Case("fence_instr_timeline", "type", kern('''
Fence(cuda_in_order_instr, cuda_in_order)  # ERR
'''), msg="instruction timeline", hint="cuda_in_order"),
    Case("fence_one_argument", "syntax", kern('''
Fence(cuda_in_order)  # ERR
'''), msg="two timelines"),
    Case("fence_not_a_timeline", "type", kern('''
Fence(DRAM, cuda_in_order)  # ERR
''')),
    Case("barrier_read_as_data", "type", kern('''
z: barrier @ CudaMbarrier
sm: f32[4] @ CudaSmemLinear
sm[0] = z  # ERR
''')),
    Case("barrier_mechanism_as_memory", "type", kern('''
sm: f32[4] @ CudaMbarrier  # ERR
''')),
    Case("barrier_without_mechanism", "type", kern('''
z: barrier  # ERR
''')),
    # ---------------------------------------------------------------- scope
    Case("cuda_tasks_outside_device_function", "scope", '''
@proc
def f(N: size, A: f32[N] @ CudaGmemLinear):
    for t in cuda_tasks(0, N):  # ERR
        pass
''', hint="CudaDeviceFunction"),
    Case("cuda_threads_at_cpu_scope", "scope", '''
@proc
def f(N: size, A: f32[N] @ CudaGmemLinear):
    for t in cuda_threads(0, 32, unit=cuda_thread):  # ERR
        pass
'''),
    Case("smem_alloc_at_cpu_scope", "scope", '''
@proc
def f(N: size):
    sm: f32[64] @ CudaSmemLinear  # ERR
''', hint="move the allocation"),
    Case("rmem_alloc_at_cpu_scope", "scope", '''
@proc
def f(N: size):
    r: f32[8] @ CudaRmem  # ERR
'''),
    Case("dram_alloc_in_cuda", "scope", kern('''
x: f32[8] @ DRAM  # ERR
''')),
    Case("barrier_at_cpu_scope", "scope", '''
@proc
def f(N: size):
    z: barrier @ CudaMbarrier  # ERR
'''),
    Case("fence_at_cpu_scope", "scope", '''
@proc
def f(N: size):
    Fence(cuda_in_order, cuda_in_order)  # ERR
'''),
    Case("cuda_warps_outside_device_function", "scope", '''
@proc
def f(N: size):
    with CudaWarps(0, 1):  # ERR
        pass
'''),
    Case("device_function_body_not_task_nest", "scope", '''
@proc
def f(N: size, A: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for i in seq(0, N):  # ERR
            pass
''', hint="cuda_tasks"),
    Case("device_function_two_task_loops", "scope", '''
@proc
def f(N: size, A: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, N):
            pass
        for u in cuda_tasks(0, N):  # ERR
            pass
'''),
    Case("device_function_imperfect_task_nest", "scope", '''
@proc
def f(N: size, A: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, N):
            for i in seq(0, 2):
                for u in cuda_tasks(0, N):  # ERR
                    pass
''', msg="perfect nest"),
    Case("nested_device_function", "scope", kern('''
with CudaDeviceFunction(blockDim=32):  # ERR
    for t in cuda_tasks(0, 1):
        pass
''')),
    Case("proc_call_inside_cuda", "scope", kern('''
for t in cuda_threads(0, 1, unit=cuda_thread):
    helper(4, X[0:4])  # ERR
''', params="N: size, X: f32[8] @ DRAM"), hint="inline the proc"),
    Case("cuda_instr_at_cpu_scope", "scope", '''
@proc
def f(G: f32[4] @ CudaGmemLinear, S: f32[4] @ CudaGmemLinear):
    copy4(4, S[0:4], G[0:4])  # ERR
''', msg="inside a CudaDeviceFunction"),
    Case("cpu_instr_inside_cuda", "scope", kern('''
for t in cuda_threads(0, 1, unit=cuda_thread):
    cpu_zero(8, X)  # ERR
''', params="N: size, X: f32[8] @ DRAM")),
    # ---------------------------------------------------------------- launch and thread loops
    Case("block_dim_not_multiple_of_32", "type", '''
@proc
def f(N: size):
    with CudaDeviceFunction(blockDim=100):  # ERR
        for t in cuda_tasks(0, N):
            pass
''', msg="multiple of 32"),
    Case("cluster_dim_three", "type", '''
@proc
def f(N: size):
    with CudaDeviceFunction(blockDim=128, clusterDim=3):  # ERR
        for t in cuda_tasks(0, N):
            pass
''', msg="power of two"),
    Case("block_dim_and_warp_config", "type", '''
@proc
def f(N: size):
    with CudaDeviceFunction(blockDim=128, warp_config=[CudaWarpConfig("a", 4)]):  # ERR
        for t in cuda_tasks(0, N):
            pass
'''),
    Case("duplicate_warp_config_names", "type", '''
@proc
def f(N: size):
    with CudaDeviceFunction(warp_config=[CudaWarpConfig("a", 4), CudaWarpConfig("a", 4)]):  # ERR
        for t in cuda_tasks(0, N):
            pass
'''),
    Case("cuda_warps_empty_range", "type", kern('''
with CudaWarps(2, 1):  # ERR
    pass
''')),
    Case("device_alloc_symbolic_extent", "type", kern('''
sm: f32[N] @ CudaSmemLinear  # ERR
'''), hint="constant extents"),
    Case("register_alloc_symbolic_extent", "type", kern('''
for t in cuda_threads(0, 32, unit=cuda_thread):
    r: f32[32, N] @ CudaRmem  # ERR
''')),
    Case("cuda_threads_not_from_zero", "type", kern('''
for t in cuda_threads(1, 4, unit=cuda_thread):  # ERR
    pass
'''), msg="start at 0"),
    Case("cuda_threads_symbolic_count", "type", kern('''
for t in cuda_threads(0, N, unit=cuda_thread):  # ERR
    pass
''')),
    Case("cuda_threads_unit_not_a_unit", "type", kern('''
for t in cuda_threads(0, 4, unit=cuda_in_order):  # ERR
    pass
''')),
    Case("cuda_threads_unknown_option", "syntax", kern('''
for t in cuda_threads(0, 4, unit=cuda_thread, stride=2):  # ERR
    pass
''')),
    Case("unit_from_procedure_variable", "type", kern('''
for t in cuda_threads(0, 4, unit=N * cuda_thread):  # ERR
    pass
'''), msg="known when the procedure is defined"),
    # ---------------------------------------------------------------- @instr text
    Case("instr_decorator_unknown_name", "syntax", '''
@instr(timeline=no_such_timeline)  # ERR
def bad(x: f32[4] @ DRAM):
    x[0] = 0.0
'''),
    Case("instr_decorator_sync_timeline", "type", '''
@instr(timeline=cuda_in_order, unit=cuda_thread)  # ERR
def bad(x: f32[4] @ CudaSmemLinear):
    x[0] = 0.0
''', msg="instruction timeline"),
    Case("instr_decorator_raises", "type", '''
@instr(timeline=cuda_in_order_instr, unit=3 * cuda_quadpair)  # ERR
def bad(x: f32[4] @ CudaSmemLinear):
    x[0] = 0.0
''', msg="cannot be scaled"),
    Case("instr_body_parallel_loop", "scope", '''
@instr(timeline=cuda_in_order_instr, unit=cuda_warp)
def bad(x: f32[32] @ CudaSmemLinear):
    for t in cuda_threads(0, 32, unit=cuda_thread):  # ERR
        x[t] = 0.0
'''),
]


def test_enough_cases():
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_source(case: Case):
    line = marker_line(case.src.lstrip("\n"))
    err = expect_error(lambda: parse_proc_source(case.src.lstrip("\n"), env(), file=FILE),
                       case.kind, line, FILE)
    d = err.diagnostic
    if case.msg is not None:
        assert re.search(case.msg, d.message), d.message
    if case.hint is not None:
        assert d.hint and case.hint in d.hint, d.hint
    # the excerpt shows the offending source line itself
    src_line = case.src.lstrip("\n").splitlines()[line - 1]
    assert src_line.strip() in str(err)


def test_error_rendering_has_location_caret_and_hint():
    src = kern("Fence(cuda_in_order_instr, cuda_in_order)  # ERR")
    err = expect_error(lambda: parse_proc_source(src, env(), file="kernel.py"), "type",
                       marker_line(src), "kernel.py")
    text = str(err)
    first = text.splitlines()[0]
    # the column is 1-based and points at the offending argument, as does the caret
    assert first.startswith(f"kernel.py:{marker_line(src)}:19: type error:")
    caret = text.splitlines()[2]
    assert caret.index("^") == text.splitlines()[1].index("cuda_in_order_instr")
    assert "hint: maybe cuda_in_order?" in text


# ------------------------------------------------------------------ through real files


@pytest.fixture(scope="module")
def bad(prog_loader):
    return prog_loader("frontend/progs/malformed_progs.py")


def _builders(mod):
    return sorted(n for n in vars(mod) if n.startswith("build_"))


def test_file_cases_exist(bad):
    assert len(_builders(bad)) >= 5
    assert set(_builders(bad)) == set(FILE_KINDS)


FILE_KINDS = {
    "build_unknown_name": "syntax",
    "build_data_loop_bound": "type",
    "build_cuda_threads_at_cpu": "scope",
    "build_missing_trailing_barrier": "barrier-usage",
    "build_bad_block_dim": "type",
    "build_not_a_memory_from_caller": "type",
    "build_shadowed_param": "type",
    "build_generated_symbolic_smem": "type",
    "build_bad_instr_decorator": "type",
    "build_multiline_call": "type",
}


@pytest.mark.parametrize("builder", sorted(FILE_KINDS))
def test_malformed_file(bad, builder):
    fn = getattr(bad, builder)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, ln in enumerate(lines) if "# ERR" in ln]
    assert len(hits) == 1
    err = expect_error(fn, FILE_KINDS[builder], hits[0], inspect.getsourcefile(fn))
    # the excerpt is read from the real file
    assert lines[hits[0] - start].strip() in str(err)
