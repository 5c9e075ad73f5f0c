"""inline, call_eqv, replace (instruction selection), and the GPU annotations."""

from __future__ import annotations

import pytest
from sched_util import P, same

from exogpu_verify import (CudaDeviceFunction, CudaMbarrier, CudaWarps, cuda_in_order,
                           cuda_thread, cuda_warp)
from exogpu_verify.ir import nodes as N
from exogpu_verify.schedule import (CudaTasks, CudaThreads, SchedulingError, call_eqv,
                                    divide_loop, inline, insert_arrive, insert_await,
                                    insert_barrier_alloc, insert_fence, replace, set_loop_mode,
                                    set_ring_buffer, simplify, wrap_with_context)

SCAL = """
def scal(n: size, x: [f32][n], a: f32[1]):
    for i in seq(0, n):
        x[i] = x[i] * a[0]
"""


def test_inline_and_call_eqv():
    scal = P(SCAL)
    caller = P("""
def f(N: size, X: f32[N, 8], a: f32[1]):
    for r in seq(0, N):
        scal(8, X[r, 0:8], a)
""", {"scal": scal})
    p1 = inline(caller, "scal(_)")
    same(caller, p1, {"N": 3})
    fast = divide_loop(scal, "i", 2, ["io", "ii"])
    p2 = call_eqv(caller, "scal(_)", fast)
    assert p2.body[0].body[0].callee is fast
    same(caller, p2, {"N": 3})
    other = P(SCAL.replace("* a[0]", "* a[0] * a[0]"))
    with pytest.raises(SchedulingError, match="same procedure"):
        call_eqv(caller, "scal(_)", other)


MMA = """
@instr(timeline=cuda_in_order_instr, unit=cuda_thread, codegen="mma4({C}, {A}, {B});")
def mma4(C: [f32][4, 4] @ DRAM, A: [f32][4, 4] @ DRAM, B: [f32][4, 4] @ DRAM):
    for i in seq(0, 4):
        for j in seq(0, 4):
            for k in seq(0, 4):
                C[i, j] += A[i, k] * B[k, j]
"""


def test_replace_unifies_windows():
    from exogpu_verify.ir.timelines import cpu_in_order_instr  # noqa: F401

    mma = P(MMA.replace("cuda_in_order_instr", "cpu_in_order_instr").replace(
        "unit=cuda_thread, ", ""))
    p = P("""
def f(A: f32[8, 8], B: f32[8, 8], C: f32[8, 8]):
    for io in seq(0, 2):
        for jo in seq(0, 2):
            for ko in seq(0, 2):
                for ii in seq(0, 4):
                    for ji in seq(0, 4):
                        for ki in seq(0, 4):
                            C[4 * io + ii, 4 * jo + ji] += A[4 * io + ii, 4 * ko + ki] * B[4 * ko + ki, 4 * jo + ji]
""")
    p1 = replace(p, p.find_loop("ii"), mma)
    call = p1.find("mma4(_)").node()
    assert isinstance(call, N.Call) and call.callee is mma
    same(p, p1, {})
    bad = P("""
def g(A: f32[8, 8], B: f32[8, 8], C: f32[8, 8]):
    for ii in seq(0, 4):
        for ji in seq(0, 4):
            for ki in seq(0, 4):
                C[ii, ji] += A[ii, ki] * B[ji, ki]
""")
    with pytest.raises(SchedulingError, match="does not match"):
        replace(bad, bad.find_loop("ii"), mma)


KERNEL = """
def k(N: size, X: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for t in cuda_tasks(0, N / 64):
            s: f32[64] @ CudaSmemLinear
            for i in seq(0, 64):
                s[i] = X[64 * t + i]
            for j in seq(0, 64):
                X[64 * t + j] = s[63 - j]
"""


def test_gpu_annotations():
    p = P(KERNEL)
    p1 = set_loop_mode(p, "i", CudaThreads(unit=cuda_thread))
    p1 = set_loop_mode(p1, "j", CudaThreads(unit=cuda_thread))
    p1 = insert_fence(p1, p1.find_loop("j").before(), cuda_in_order, cuda_in_order)
    p1 = insert_fence(p1, p1.find_loop("j").after(), cuda_in_order, cuda_in_order)
    for r in p1.provenance:
        assert "annotation: sequential meaning unchanged" in r.checked and not r.unsafe
    same(p, p1, {"N": 128})
    p2 = wrap_with_context(p1, p1.find_loop("i"), CudaWarps(0, 2))
    assert isinstance(p2.find_loop("i").parent().node(), N.With)
    p3 = insert_barrier_alloc(p2, p2.find("s : _").after(), "z", [2], CudaMbarrier,
                              ring_dim_idx=0, ring_depth=2)
    p3 = insert_arrive(p3, p3.find("Fence(_)").before(), cuda_in_order, ["z[0]"])
    p3 = insert_await(p3, p3.find("Fence(_)").before(), "z[0]", cuda_in_order, 0)
    same(p, p3, {"N": 128})
    p4 = set_ring_buffer(p3, "z : _", 0, 2)
    assert p4.find("z : _").node().dims[0].ring_depth == 2
    with pytest.raises(SchedulingError, match="ill-formed"):
        set_loop_mode(p, "t", CudaThreads(unit=cuda_warp))  # cuda_threads needs constant n
    with pytest.raises(SchedulingError):
        insert_fence(p, p.find_loop("i").before(), "cuda_in_order", cuda_in_order)


def test_wrap_kernel_with_tasks():
    p = P("""
def f(N: size, X: f32[N] @ CudaGmemLinear):
    assert N % 32 == 0
    for t in seq(0, N / 32):
        for i in seq(0, 32):
            X[32 * t + i] = 0.0
""")
    p1 = wrap_with_context(p, p.find_loop("t"), CudaDeviceFunction(blockDim=32), tasks=1)
    p1 = set_loop_mode(p1, "i", CudaThreads(unit=cuda_thread))
    assert isinstance(p1.find_loop("t").node().mode, N.CudaTasks)
    same(p, p1, {"N": 64})
    with pytest.raises(SchedulingError, match="ill-formed"):
        wrap_with_context(p, p.find_loop("t"), CudaDeviceFunction(blockDim=32))
    _ = (CudaTasks, simplify)
