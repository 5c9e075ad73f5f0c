"""Accepted programs: every construct of LANGUAGE.md parses, type-checks and gives the IR
one expects. Most programs are source text (``parse_proc_source``); decorator-level features
(``@proc`` on a real function, metaprogramming, procs calling procs) use
``progs/accept_progs.py``."""

from __future__ import annotations

import inspect

import pytest

from exogpu_verify import (DRAM, CudaClusterSync, CudaGmemLinear, CudaMbarrier,
                           CudaMbarrierPreArrive, CudaRmem, CudaSmemLinear, Procedure,
                           Sm80_CommitGroup, Sm90_SmemSwizzled, Sm90_TmaCommitGroup,
                           Sm90_tensorMap, Sm90_WgmmaCommitGroup, cuda_cta_in_cluster,
                           cuda_generic_and_async_proxy, cuda_in_order, cuda_thread, cuda_warp,
                           cuda_warpgroup, f16, f32, i32, parse_proc_source, tma_to_smem_async,
                           wgmma_async)
from exogpu_verify.frontend import print_proc, roundtrip_env
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.types import bool_, index, size

# ------------------------------------------------------------------ helpers

TMA_LOAD = '''
@instr(timeline=tma_to_smem_async_instr, unit=cuda_warp, barrier=CudaMbarrier,
       codegen="tma_load({dst}, {src});")
def tma_load(dst: [f32][64, 32] @ CudaSmemLinear, src: [f32][64, 32] @ Sm90_tensorMap(0, 64, 32)):
    for i in seq(0, 64):
        for j in seq(0, 32):
            dst[i, j] = src[i, j]
'''

COPY4 = '''
@instr(timeline=cuda_in_order_instr, unit=cuda_thread, codegen="copy4({dst}, {src});")
def copy4(n: size, dst: [f32][n] @ CudaSmemLinear, src: [f32][n] @ CudaGmemLinear):
    assert n == 4
    for i in seq(0, n):
        dst[i] = src[i]
'''


@pytest.fixture(scope="module")
def instrs():
    return {"tma_load": parse_proc_source(TMA_LOAD), "copy4": parse_proc_source(COPY4)}


def parse(src: str, env: dict | None = None) -> Procedure:
    p = parse_proc_source(src, env, file="<accept>")
    # every accepted program also survives the printer round trip
    q = parse_proc_source(print_proc(p), roundtrip_env(p) | (env or {}))
    assert q == p, print_proc(p)
    return p


def walk(stmts):
    for s in stmts:
        yield s
        for attr in ("body", "orelse"):
            yield from walk(getattr(s, attr, ()) or ())


def find(p: Procedure, cls, pred=lambda s: True):
    out = [s for s in walk(p.body) if isinstance(s, cls) and pred(s)]
    assert out, f"no {cls.__name__} in\n{print_proc(p)}"
    return out


def kernel(body: str, params: str = "N: size, A: f32[N] @ CudaGmemLinear",
           launch: str = "blockDim=256", preds: str = "") -> str:
    """A proc whose CUDA task body is ``body`` (indented 12 spaces by this helper)."""
    inner = "\n".join("            " + ln if ln.strip() else ln for ln in body.strip("\n")
                      .splitlines())
    pre = "".join(f"    {ln}\n" for ln in preds.strip().splitlines())
    return (f"@proc\ndef k({params}):\n{pre}    with CudaDeviceFunction({launch}):\n"
            f"        for task in cuda_tasks(0, 1):\n{inner}\n")


# ------------------------------------------------------------------ parameters and asserts


def test_params_control_dense_window_and_default_memory():
    p = parse('''
@proc
def f(N: size, i0: index, flag: bool, A: f32[N, 16] @ CudaGmemLinear, W: [f16][N] @ DRAM,
      H: i32[4], V: [f32][N, 8]):
    pass
''')
    kinds = {prm.name: prm for prm in p.params}
    assert kinds["N"].type == size and not kinds["N"].is_data
    assert kinds["i0"].type == index
    assert kinds["flag"].type == bool_
    a = kinds["A"]
    assert a.is_data and a.mem == CudaGmemLinear and a.type.scalar == f32
    assert not a.type.is_window and a.type.rank == 2
    assert a.type.shape[0] == N.Read("N", (), size) and a.type.shape[1].val == 16
    assert kinds["W"].type.is_window and kinds["W"].type.scalar == f16 and kinds["W"].mem == DRAM
    assert kinds["H"].mem == DRAM and kinds["H"].type.scalar == i32  # no `@` means DRAM
    assert kinds["V"].mem == DRAM and kinds["V"].type.is_window
    assert p.size_params() == ("N",)
    assert p.body == (N.Pass(),)


def test_asserts_including_stride():
    p = parse('''
@proc
def f(N: size, M: size, A: [f32][N, M] @ CudaGmemLinear):
    assert N % 128 == 0
    assert M >= 1
    assert stride(A, 1) == 1
    assert N / 4 > M or not M == 2
    pass
''')
    assert len(p.preds) == 4
    mod, ge, st, bo = p.preds
    assert mod.op == "==" and mod.lhs.op == "%" and mod.lhs.rhs.val == 128
    assert ge.op == ">=" and ge.type == bool_
    assert st.lhs == N.StrideExpr("A", 1, index)
    assert bo.op == "or" and bo.rhs.op == "not"


def test_docstring_is_skipped():
    p = parse('''
@proc
def f(N: size):
    """A docstring."""
    assert N >= 1
    pass
''')
    assert len(p.preds) == 1 and p.body == (N.Pass(),)


# ------------------------------------------------------------------ allocations


def test_data_and_scalar_allocations():
    p = parse('''
@proc
def f(N: size):
    big: f32[N, 4] @ DRAM
    s: f32 @ DRAM
    g: f16[N] @ CudaGmemLinear
    s = 1.0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            sm: f32[2, 64] @ CudaSmemLinear
            sw: f32[8, 64] @ Sm90_SmemSwizzled(128)
            for t in cuda_threads(0, 64, unit=cuda_thread):
                r: f32[64, 4] @ CudaRmem
                x: f32 @ CudaRmem
                x = 0.0
                r[t, 0] = x
''')
    allocs = {a.name: a for a in find(p, N.Alloc)}
    assert allocs["big"].mem == DRAM and allocs["big"].type.shape[0] == N.Read("N", (), size)
    assert allocs["s"].type.shape == () and allocs["s"].type.rank == 0
    assert allocs["g"].mem == CudaGmemLinear and allocs["g"].type.scalar == f16
    assert allocs["sm"].mem == CudaSmemLinear
    assert allocs["sw"].mem == Sm90_SmemSwizzled(128) and allocs["sw"].mem != Sm90_SmemSwizzled(64)
    assert allocs["r"].mem == CudaRmem and allocs["x"].type.shape == ()
    assert find(p, N.Assign, lambda s: s.name == "x")[0].idx == ()


def test_barrier_allocations():
    p = parse(kernel('''
raw: barrier[2, N / 64 @ ring_buffer_by(4)] @ CudaMbarrier
war: barrier[2, N / 64 @ ring_buffer_by(4)] @ CudaMbarrierPreArrive(2)
rb: barrier[(N + 1) @ ring_buffer_by(3)] @ CudaMbarrier
cs: barrier @ CudaClusterSync
cp: barrier @ Sm80_CommitGroup
tc: barrier @ Sm90_TmaCommitGroup
wc: barrier[2] @ Sm90_WgmmaCommitGroup
pass
''', launch="blockDim=256, clusterDim=2"))
    bars = {b.name: b for b in find(p, N.BarrierAlloc)}
    raw = bars["raw"]
    assert raw.mech == CudaMbarrier and len(raw.dims) == 2
    assert raw.dims[0] == N.BarrierDim(N.Const(2, raw.dims[0].extent.type), None)
    assert raw.dims[1].ring_depth == 4 and raw.dims[1].extent.op == "/"
    assert bars["war"].mech == CudaMbarrierPreArrive(2) and bars["war"].mech.pre_arrive == 2
    assert bars["rb"].dims[0].extent.op == "+" and bars["rb"].dims[0].ring_depth == 3
    assert bars["cs"].mech == CudaClusterSync and bars["cs"].dims == ()
    assert bars["cp"].mech == Sm80_CommitGroup
    assert bars["tc"].mech == Sm90_TmaCommitGroup
    assert bars["wc"].mech == Sm90_WgmmaCommitGroup and bars["wc"].dims[0].ring_depth is None


def test_constant_device_extents_from_python_values_are_folded():
    p = parse(kernel('''
sm: f32[2 * BM, BK + 1] @ CudaSmemLinear
for t in cuda_threads(0, 256 / WARPS, unit=cuda_thread):
    sm[t, 0] = 0.0
''', launch="blockDim=256"), {"BM": 64, "BK": 32, "WARPS": 2})
    sm = find(p, N.Alloc)[0]
    assert [e.val for e in sm.type.shape] == [128, 33]
    loop = find(p, N.For, lambda s: isinstance(s.mode, N.CudaThreads))[0]
    assert isinstance(loop.hi, N.Const) and loop.hi.val == 128


# ------------------------------------------------------------------ loops, units, launches


def test_loops_and_collective_units():
    p = parse(kernel('''
for wg in cuda_threads(0, 2, unit=2 * cuda_warpgroup):
    for w in cuda_threads(0, 4, unit=cuda_warp):
        for q in cuda_threads(0, 4, unit=8 * cuda_thread):
            for t in cuda_threads(0, 8, unit=cuda_thread):
                for i in seq(0, 4):
                    A[task + i] = 0.0
                for j in seq(0, 8, pragma_unroll=2):
                    pass
for c in cuda_threads(0, ncta, unit=ncta * cuda_cta_in_cluster):
    pass
''', launch="blockDim=512, clusterDim=4"), {"ncta": 4})
    loops = {f.iter: f for f in find(p, N.For)}
    assert isinstance(loops["task"].mode, N.CudaTasks)
    assert loops["wg"].mode == N.CudaThreads(2 * cuda_warpgroup)
    assert loops["wg"].mode.unit == 8 * cuda_warp
    assert loops["w"].mode.unit == cuda_warp
    assert loops["q"].mode.unit == 8 * cuda_thread and loops["q"].mode.unit != cuda_warp
    assert loops["t"].mode.unit == cuda_thread
    assert loops["i"].mode == N.Seq() and loops["j"].mode == N.Seq(2)
    assert loops["c"].mode.unit == 4 * cuda_cta_in_cluster and loops["c"].hi.val == 4
    assert str(loops["wg"].mode.unit) == "2 * cuda_warpgroup"
    # units compare by shape, not spelling
    assert cuda_warpgroup == 4 * cuda_warp
    assert 32 * cuda_thread == cuda_warp


def test_cuda_threads_default_unit_is_cuda_thread():
    p = parse(kernel("for t in cuda_threads(0, 32):\n    A[t] = 1.0", launch="blockDim=32"))
    assert find(p, N.For, lambda s: s.iter == "t")[0].mode.unit == cuda_thread


def test_nested_cuda_tasks_perfect_nest():
    p = parse('''
@proc
def f(M: size, N: size, A: f32[M, N] @ CudaGmemLinear):
    assert M % 16 == 0 and N % 16 == 0
    with CudaDeviceFunction(blockDim=128):
        for m in cuda_tasks(0, M / 16):
            for n in cuda_tasks(0, N / 16):
                for t in cuda_threads(0, 16, unit=cuda_thread):
                    A[16 * m + t, 16 * n] = 0.0
''')
    with_ = p.body[0]
    assert isinstance(with_, N.With) and with_.ctx.blockDim == 128 and with_.ctx.clusterDim == 1
    m = with_.body[0]
    assert isinstance(m.mode, N.CudaTasks) and isinstance(m.body[0].mode, N.CudaTasks)


def test_device_function_configs_and_cuda_warps():
    p = parse('''
@proc
def f(N: size, A: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(clusterDim=2, warp_config=[CudaWarpConfig("producer", 4, setmaxnreg_dec=40), CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)]):
        for task in cuda_tasks(0, N):
            with CudaWarps(0, 1, name="producer"):
                pass
            with CudaWarps(name="consumer"):
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    pass
            with CudaWarps(4, 12):
                pass
    with CudaDeviceFunction(blockDim=128, clusterDim=4):
        for task in cuda_tasks(0, N):
            pass
''')
    k1, k2 = p.body
    cfg = k1.ctx
    assert isinstance(cfg, N.CudaDeviceFunction)
    assert cfg.blockDim == 32 * 12 and cfg.clusterDim == 2
    assert [w.name for w in cfg.warp_config] == ["producer", "consumer"]
    assert cfg.warp_config[0].setmaxnreg_dec == 40 and cfg.warp_config[1].setmaxnreg_inc == 232
    assert cfg.warp_range("consumer") == (4, 12)
    warps = [s.ctx for s in walk(k1.body) if isinstance(s, N.With)]
    assert warps == [N.CudaWarps(0, 1, "producer"), N.CudaWarps(None, None, "consumer"),
                     N.CudaWarps(4, 12, None)]
    assert k2.ctx == N.CudaDeviceFunction(128, 4)


# ------------------------------------------------------------------ statements and expressions


def test_assign_reduce_and_data_expressions():
    p = parse('''
@proc
def f(N: size, A: f32[N] @ DRAM, B: f16[N] @ DRAM, c: index):
    acc: f32 @ DRAM
    acc = 0
    for i in seq(0, N):
        acc += A[i] * B[i] - -1.5
        A[i] = relu(-A[i]) + sqrt(abs(B[i])) / exp(2.0)
        B[i] = select(A[i], 0.0, fmax(A[i], 1), fmin(B[i], -3)) + i + c
''')
    red = find(p, N.Reduce)[0]
    assert red.name == "acc" and red.idx == ()
    assert red.rhs.op == "-" and red.rhs.rhs.val == -1.5
    assert red.rhs.lhs.type == f32  # f32 * f16 computes in f32
    a = find(p, N.Assign, lambda s: s.name == "A")[0]
    assert a.rhs.lhs == N.BuiltIn("relu", (N.UnOp("-", N.Read("A", (N.Read("i", (), index),),
                                                                f32), f32),), f32)
    b = find(p, N.Assign, lambda s: s.name == "B")[0]
    assert b.rhs.lhs.lhs.fn == "select" and len(b.rhs.lhs.lhs.args) == 4
    init = find(p, N.Assign, lambda s: s.name == "acc")[0]
    assert init.rhs.val == 0 and isinstance(init.rhs.val, int)


def test_quasi_affine_control_expressions():
    p = parse('''
@proc
def f(N: size, A: f32[N, 8] @ DRAM):
    assert N % 8 == 0
    for i in seq(1, N / 8 - 1):
        for j in seq(0, (N + 7) // 8):
            A[8 * i + j % 8 - 1, (i - 2 * j) % 8] = A[i * 3 - (-2), -j + 7]
''')
    asg = find(p, N.Assign)[0]
    assert asg.idx[0].op == "-" and asg.idx[1].op == "%"
    inner = find(p, N.For, lambda s: s.iter == "j")[0]
    assert inner.hi.op == "/"  # `//` and `/` are the same floor division


def test_windows_and_window_statements(instrs):
    p = parse(kernel('''
sm: f32[2, 64, 4] @ CudaSmemLinear
row = sm[1, :, :]
blk = row[0:8, 0:4]
for t in cuda_threads(0, 64, unit=cuda_thread):
    copy4(4, sm[0, t, 0:4], G[t, 4:8])
    copy4(4, row[t, :], G[t, 0:4])
    copy4(4, blk[t % 8, 0:4], G[t, 0:4])
''', params="G: f32[64, 8] @ CudaGmemLinear", launch="blockDim=64"), instrs)
    ws = {w.name: w for w in find(p, N.WindowStmt)}
    assert ws["row"].rhs.name == "sm" and ws["row"].rhs.rank == 2
    assert isinstance(ws["row"].rhs.idx[0], N.Point)
    assert isinstance(ws["row"].rhs.idx[1], N.Interval) and ws["row"].rhs.idx[1].hi.val == 64
    assert ws["blk"].special is None
    calls = find(p, N.Call)
    assert all(c.callee.name == "copy4" for c in calls) and len(calls) == 3
    w = calls[0].args[1]
    assert isinstance(w, N.WindowExpr) and w.rank == 1 and w.name == "sm"
    assert calls[0].args[0].val == 4


def test_full_tensor_passed_by_name_and_to_dense_param():
    p = parse('''
@instr(timeline=cpu_in_order_instr, codegen="memset0({x});")
def zero(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 0.0
''')
    assert p.is_instr
    q = parse('''
@proc
def f(N: size, X: f32[N] @ DRAM):
    zero(N, X)
    zero(N, X[:])
''', {"zero": p})
    c1, c2 = q.body
    assert c1 == c2
    assert isinstance(c1.args[1].idx[0], N.Interval)


def test_tensor_map_window_statement(instrs):
    p = parse(kernel('''
sm: f32[64, 32] @ CudaSmemLinear
z: barrier[N / 32 @ ring_buffer_by(2)] @ CudaMbarrier
for w in cuda_threads(0, 1, unit=cuda_warp):
    for k in seq(0, N / 32):
        tma_load(sm, tm[0:64, 32 * k:32 * k + 32]) >> z[k]
        Await(z[k], cuda_generic_and_async_proxy, 0)
''', params="N: size, A: f32[64, N] @ CudaGmemLinear", preds='''
assert N % 32 == 0
tm = A[:, :] @ Sm90_tensorMap(0, 64, 32)''',
        launch="blockDim=128"), instrs)
    tm = find(p, N.WindowStmt)[0]
    assert tm.special == Sm90_tensorMap(0, 64, 32)
    assert tm.special != Sm90_tensorMap(128, 64, 32)
    assert tm.rhs.rank == 2
    call = find(p, N.Call)[0]
    assert call.callee.instr.barrier == CudaMbarrier
    assert call.barriers == (N.BarrierRef("z", (N.Point(N.Read("k", (), index)),)),)


def test_if_else_conditions():
    p = parse('''
@proc
def f(N: size, K: size, flag: bool, A: f32[N] @ DRAM):
    for k in seq(0, N):
        if k < K - 1:
            A[k] = 1.0
        else:
            A[k] = 2.0
        if k == 0 and (flag or not k > 3):
            pass
        if 0 <= k < K:
            pass
        if True:
            pass
        if k < 2:
            A[k] = 3.0
        elif k < 4:
            A[k] = 4.0
        else:
            pass
''')
    ifs = find(p, N.If)
    assert ifs[0].cond.op == "<" and ifs[0].orelse and isinstance(ifs[0].orelse[0], N.Assign)
    assert ifs[1].cond.op == "and" and ifs[1].cond.rhs.op == "or"
    assert ifs[1].cond.rhs.lhs == N.Read("flag", (), bool_)
    assert ifs[2].cond.op == "and" and ifs[2].cond.lhs.op == "<="  # chained comparison
    assert ifs[3].cond == N.Const(True, bool_) and ifs[3].orelse == ()
    # elif is an If in the else branch
    assert len(ifs[4].orelse) == 1 and ifs[4].orelse[0] is ifs[5]
    assert ifs[5].orelse == (N.Pass(),)


# ------------------------------------------------------------------ synchronization


def test_fence_arrive_await_forms():
    p = parse(kernel('''
z: barrier[2, N @ ring_buffer_by(4)] @ CudaMbarrierPreArrive(1)
cs: barrier @ CudaClusterSync
wc: barrier[2] @ Sm90_WgmmaCommitGroup
Fence(cuda_in_order, cuda_in_order)
Fence(wgmma_fence_1, wgmma_fence_2)
for c in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    for i in seq(0, N):
        Arrive(tma_to_smem_async) >> z[:, i] >> z[c, i + 1]
        Arrive(cuda_in_order, 1) >> z[c, i]
        Await(z[c, i], cuda_generic_and_async_proxy, 3)
        Await(z[c, i], cuda_in_order)
    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
        Arrive(wgmma_async) >> wc[wg]
        Await(wc[wg], cuda_in_order, 1)
Arrive(cuda_in_order) >> cs
Await(cs, cuda_in_order, 0)
''', launch="blockDim=256, clusterDim=2"))
    f1, f2 = find(p, N.Fence)
    assert (f1.L1, f1.L2) == (cuda_in_order, cuda_in_order)
    assert f2.L1.name == "wgmma_fence_1"
    arrives = find(p, N.Arrive)
    multi = arrives[0]
    assert multi.L1 == tma_to_smem_async and len(multi.targets) == 2
    sl = multi.targets[0].idx[0]
    assert isinstance(sl, N.Interval) and sl.lo.val == 0 and sl.hi.val == 2  # `:` = whole dim
    assert isinstance(multi.targets[1].idx[0], N.Point)
    assert arrives[1].L1 == cuda_in_order and len(arrives[1].targets) == 1
    assert arrives[2].L1 == wgmma_async and arrives[2].targets[0].name == "wc"
    assert arrives[3].targets == (N.BarrierRef("cs", ()),)
    awaits = find(p, N.Await)
    assert awaits[0].N == 3 and awaits[0].L2 == cuda_generic_and_async_proxy
    assert awaits[1].N == 0  # default
    assert awaits[2].N == 1 and awaits[3].target.name == "cs"


def test_instr_call_with_trailing_barrier_and_barrier_kinds(instrs):
    p = parse(kernel('''
sm: f32[2, 64, 32] @ CudaSmemLinear
z: barrier[2] @ CudaMbarrierPreArrive(1)
for w in cuda_threads(0, 1, unit=cuda_warp):
    tma_load(sm[0, :, :], tm[0:64, 0:32]) >> z[0]
    tma_load(sm[1, :, :], tm[0:64, 32:64]) >> z[1]
''', params="A: f32[64, 64] @ CudaGmemLinear", preds="tm = A[:, :] @ Sm90_tensorMap(0, 64, 32)",
        launch="blockDim=32"), instrs)
    c0, c1 = find(p, N.Call)
    assert c0.barriers[0].idx[0].pt.val == 0 and c1.barriers[0].idx[0].pt.val == 1
    assert c0.callee.instr.unit == cuda_warp


def test_instr_definition_records_its_facts(instrs):
    t = instrs["tma_load"]
    assert t.is_instr and t.instr.timeline.name == "tma_to_smem_async_instr"
    assert t.instr.unit == cuda_warp and t.instr.barrier == CudaMbarrier
    assert t.instr.codegen_text == "tma_load({dst}, {src});"
    assert t.params[1].mem == Sm90_tensorMap(0, 64, 32) and t.params[1].type.is_window
    c = instrs["copy4"]
    assert c.instr.barrier is None and c.instr.unit == cuda_thread
    assert c.params[0].type == size and len(c.preds) == 1


# ------------------------------------------------------------------ real files: @proc, metaprogramming


@pytest.fixture(scope="module")
def progs(prog_loader):
    return prog_loader("frontend/progs/accept_progs.py")


def _line_of(mod, text: str) -> int:
    lines, start = inspect.getsourcelines(mod)
    hits = [max(start, 1) + i for i, ln in enumerate(lines) if text in ln]
    assert len(hits) == 1, text
    return hits[0]


def test_language_md_examples_from_a_file(progs):
    vc = progs.vec_copy
    assert isinstance(vc, Procedure) and vc.name == "vec_copy"
    assert vc.srcinfo.line == _line_of(progs, "def vec_copy(")
    assert vc.srcinfo.file.endswith("accept_progs.py")
    loop = find(vc, N.For, lambda s: s.iter == "t")[0]
    assert loop.mode.unit == cuda_thread and loop.hi.val == 256
    assert loop.srcinfo.line == _line_of(progs, "for t in cuda_threads(0, 256, unit=cuda_thread)")
    cp = progs.cp_async
    assert cp.is_instr and cp.instr.timeline.name == "Sm80_cp_async_instr"
    assert cp.instr.codegen_text == "cp_async_{n}x4({dst}, {src});"


def test_everything_kernel_from_a_file(progs):
    p = progs.everything
    assert p.module is vars(progs)
    assert {type(s).__name__ for s in walk(p.body)} >= {
        "WindowStmt", "With", "For", "BarrierAlloc", "Alloc", "Call", "Await", "Arrive", "If",
        "Assign", "Reduce", "Fence"}
    c = find(p, N.For, lambda s: s.iter == "c")[0]
    assert c.mode.unit == 2 * cuda_cta_in_cluster  # NCTA, a module global
    tma = find(p, N.Call, lambda s: s.callee.name == "tma_load")[0]
    assert tma.barriers[0].name == "raw"
    assert tma.srcinfo.line == _line_of(progs, "tma_load(64, smem[c, :, :]")
    acc = find(p, N.Alloc, lambda s: s.name == "acc")[0]
    assert acc.mem == CudaRmem and acc.srcinfo.line == _line_of(progs, "acc: f32[2, 128, 8]")
    q = parse_proc_source(print_proc(p), roundtrip_env(p))
    assert q == p


def test_proc_calls_proc_at_cpu_scope(progs):
    p = progs.caller
    calls = find(p, N.Call)
    assert [c.callee for c in calls] == [progs.cpu_scale, progs.cpu_scale]
    assert calls[0].args[0] == N.Read("N", (), size)
    assert calls[0].args[4] == N.Const(True, bool_)
    assert calls[1].args[4].op == "=="
    assert isinstance(calls[1].args[1], N.WindowExpr) and calls[1].args[1].name == "w"
    q = parse_proc_source(print_proc(p), roundtrip_env(p))
    assert q == p


def test_metaprogramming_closure_and_caller_locals(progs):
    a = progs.make_scale(1024, CudaGmemLinear, cuda_warpgroup, 2)
    b = progs.make_scale(2048, DRAM, 4 * cuda_warp, 2)
    # `n` and `mem` appear only in annotations: caller-local resolution
    assert a.params[0].type.shape[0].val == 1024 and a.params[0].mem == CudaGmemLinear
    assert b.params[0].type.shape[0].val == 2048 and b.params[0].mem == DRAM
    # `unit` and `count` are closure variables of the body
    ga = find(a, N.For, lambda s: s.iter == "g")[0]
    gb = find(b, N.For, lambda s: s.iter == "g")[0]
    assert ga.mode.unit == cuda_warpgroup and gb.mode.unit == cuda_warpgroup
    assert ga.hi.val == 2
    ta = find(a, N.For, lambda s: s.iter == "t")[0]
    assert ta.hi.val == 128  # `256 / count` with a Python int is a constant
    assert a != b
    c = progs.make_scale(1024, CudaGmemLinear, 2 * cuda_warpgroup, 1)
    assert find(c, N.For, lambda s: s.iter == "g")[0].mode.unit == 8 * cuda_warp


def test_metaprogramming_generated_allocation_and_launch(progs):
    p = progs.make_tile_copy(64)
    q = progs.make_tile_copy(96)
    assert p.body[0].ctx.blockDim == 64 and q.body[0].ctx.blockDim == 96
    assert find(q, N.Alloc)[0].type.shape[0].val == 96
    assert find(q, N.Call)[0].callee is progs.cp_async
    f = find(p, N.Fence)[0]
    assert f.L1.name == "Sm80_generic" and f.L2 == cuda_in_order


def test_aliased_keywords_and_names_resolve_by_identity():
    import exogpu_verify as ev

    p = parse('''
@proc
def f(N: size, A: f32[N] @ MEM):
    for i in loop(0, N):
        A[i] = 0.0
''', {"loop": ev.seq, "MEM": ev.CudaGmemLinear})
    assert p.params[1].mem == CudaGmemLinear and isinstance(p.body[0].mode, N.Seq)
