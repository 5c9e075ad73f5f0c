"""Regression tests for the scheduling defects of issue 16: each failed before its fix."""

from __future__ import annotations

import pytest
from sched_util import P, same

from exogpu_verify.ir import nodes as N
from exogpu_verify.schedule import (SchedulingError, divide_dim, lift_alloc, simplify,
                                    sink_alloc)
from exogpu_verify.schedule.irtools import walk

# ---------------------------------------------------------------- lift_alloc soundness

READ_FIRST = """
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        for j in seq(0, 4):
            y[i] += t[j]
        for j in seq(0, 4):
            t[j] = A[i, j]
"""


def test_lift_alloc_of_buffer_read_before_written_is_refused():
    # fresh each iteration, t[j] is NaN when read; lifted, it would be the previous row
    p = P(READ_FIRST)
    with pytest.raises(SchedulingError) as e:
        lift_alloc(p, "t : _")
    assert "carry values between iterations of 'i'" in e.value.message
    assert "y[i] += t[j]" in str(e.value) or "t[j]" in e.value.message
    assert e.value.line == p.find("t : _").node().srcinfo.line  # the allocation


def test_lift_alloc_partially_covered_read_refused():
    p = P("""
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        for j in seq(0, 2):
            t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j]
        for j in seq(2, 4):
            t[j] = A[i, j]
""")
    with pytest.raises(SchedulingError, match="carry values"):
        lift_alloc(p, "t : _")


def test_lift_alloc_written_first_is_accepted_and_equal():
    p = P("""
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        for j in seq(0, 4):
            t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j]
""")
    p1 = lift_alloc(p, "t : _")
    assert isinstance(p1.body[0], N.Alloc)
    same(p, p1, {"N": 3})
    p2 = sink_alloc(p1, "t : _")
    same(p, p2, {"N": 3})


def test_lift_alloc_never_written_before_is_accepted():
    # reads of elements no iteration writes see NaN either way
    p = P("""
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[8] @ DRAM
        for j in seq(0, 4):
            t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j] + t[j + 4]
""")
    same(p, lift_alloc(p, "t : _"), {"N": 3})


# ---------------------------------------------------------------- simplify: one call


def test_simplify_reaches_fixed_point_in_one_call():
    p = P("""
def f(A: f32[64]):
    t: f32[64] @ DRAM
    for wr in seq(0, 4):
        for lr in seq(0, 4):
            for r in seq(0, 4):
                t[16 * wr + 4 * lr + r] = A[16 * wr + 4 * lr + r]
    for i in seq(0, 64):
        A[i] = t[i]
""")
    q = divide_dim(divide_dim(p, "t : _", 0, 16), "t : _", 1, 4)
    a = simplify(q)
    assert simplify(a).body == a.body
    assert "t[wr, lr, r] = " in str(a)
    same(p, a, {})


# ---------------------------------------------------------------- located statements


def test_statements_made_by_rewrites_are_located():
    from exogpu_verify.schedule import stage_mem

    p = P("""
def f(N: size, A: f32[N], y: f32[N]):
    assert N % 4 == 0
    for i in seq(0, N / 4):
        for j in seq(0, 4):
            y[4 * i + j] = A[4 * i + j] * 2.0
""")
    loop = p.find_loop("j")
    p1 = stage_mem(p, loop, "A[4 * i:4 * i + 4]", "As")
    for s in walk(p1.body):
        assert s.srcinfo.line > 0 and s.srcinfo.file != "<generated>", s
    made = [s for s in walk(p1.body) if s.srcinfo.via]
    line = loop.node().srcinfo.line
    assert made and all(s.srcinfo.line == line for s in made)  # the staged loop's line
    assert all("step 1: stage_mem" in s.srcinfo.via for s in made)


# ---------------------------------------------------------------- loop modes kept / adjusted

THREADS = """
def f(N: size, A: f32[N] @ CudaGmemLinear, y: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for b in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                y[256 * b + t] = A[256 * b + t] * 2.0
"""


def test_divide_loop_keeps_thread_loops_threads():
    from exogpu_verify import verify
    from exogpu_verify.schedule import divide_loop

    p = P(THREADS)
    p1 = divide_loop(p, "t", 32, ["w", "l"], perfect=True)
    w, l_ = p1.find_loop("w").node(), p1.find_loop("l").node()
    assert isinstance(w.mode, N.CudaThreads) and str(w.mode.unit) == "32 * cuda_thread"
    assert isinstance(l_.mode, N.CudaThreads) and str(l_.mode.unit) == "cuda_thread"
    same(p, p1, {"N": 512})
    assert verify(p1).verdict == "proven"


def test_reorder_loops_adjusts_thread_units():
    from exogpu_verify import verify
    from exogpu_verify.schedule import divide_loop, reorder_loops

    p = divide_loop(P(THREADS), "t", 32, ["w", "l"], perfect=True)
    p1 = reorder_loops(p, "w l")
    outer = p1.find_loop("l").node()
    assert str(outer.mode.unit) == "cuda_threads_strided(8, 32)"
    assert "keeps its thread" in p1.provenance[-1].checked
    same(p, p1, {"N": 512})
    assert verify(p1).verdict == "proven"
    q = P("""
def f(N: size, A: f32[N] @ CudaGmemLinear, y: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for b in cuda_tasks(0, N / 256):
            for w in cuda_threads(0, 8, unit=cuda_warp):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    y[256 * b + 32 * w + t] = A[256 * b + 32 * w + t] * 2.0
""")
    q2 = divide_loop(q, "t", 16, ["h", "u"], perfect=True)
    with pytest.raises(SchedulingError, match="would change which threads") as e:
        reorder_loops(q2, "w h")
    assert e.value.line == q2.find_loop("w").node().srcinfo.line


# ---------------------------------------------------------------- gap patterns


def test_fission_and_insert_fence_take_gap_patterns():
    from exogpu_verify import cuda_in_order
    from exogpu_verify.schedule import fission, insert_fence

    p = P("""
def f(N: size, A: f32[N], B: f32[N], C: f32[N]):
    for i in seq(0, N):
        B[i] = A[i] * 2.0
        C[i] = A[i] + 1.0
""")
    with pytest.raises(SchedulingError, match="does not say on which side"):
        fission(p, "B[_] = _")
    p1 = fission(p, "after: B[_] = _")
    assert len(p1.body) == 2
    same(p, p1, {"N": 3})
    q = P(THREADS)
    with pytest.raises(SchedulingError, match="does not say on which side"):
        insert_fence(q, "y[_] = _", cuda_in_order, cuda_in_order)
    q1 = insert_fence(q, "after: for t in _: _", cuda_in_order, cuda_in_order)
    assert "Fence(cuda_in_order, cuda_in_order)" in str(q1)
    with pytest.raises(SchedulingError, match="expected a gap cursor"):
        insert_fence(q, 3, cuda_in_order, cuda_in_order)


# ---------------------------------------------------------------- tensor maps

TMA_SRC = """
def f(M: size, K: size, A: bf16[M, K] @ CudaGmemLinear, B: bf16[M, K] @ CudaGmemLinear):
    assert M % 128 == 0
    assert K % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(128, 128, 64)
    with CudaDeviceFunction(blockDim=128):
        for io in cuda_tasks(0, M / 128):
            for ko in cuda_tasks(0, K / 64):
                for i in seq(0, 128):
                    for k in seq(0, 64):
                        B[128 * io + i, 64 * ko + k] = A[128 * io + i, 64 * ko + k]
"""


def _tma_env():
    from exogpu_verify.platforms import sm90

    return {k: getattr(sm90, k) for k in dir(sm90) if not k.startswith("_")}


def test_stage_mem_from_a_tensor_map_window_and_replace_with_tma():
    from exogpu_verify.ir.memories import CudaMbarrier, Sm90_SmemSwizzled
    from exogpu_verify.ir.types import bf16
    from exogpu_verify.platforms.sm90 import Sm90_tma_load
    from exogpu_verify.schedule import insert_barrier_alloc, replace, stage_mem

    p = P(TMA_SRC, _tma_env())
    p1 = stage_mem(p, p.find_loop("i"), "tA[128 * io:128 * io + 128, 64 * ko:64 * ko + 64]",
                   "sA", mem=Sm90_SmemSwizzled(128))
    assert "sA[i0, i1] = tA[128 * io + i0, 64 * ko + i1]" in str(p1)
    same(p, p1, {"M": 128, "K": 128})
    p2 = insert_barrier_alloc(p1, p1.find("sA : _").after(), "bar", [], CudaMbarrier)
    copy = p2.find("sA : _").next().next()
    tma = Sm90_tma_load(2, bf16)
    with pytest.raises(SchedulingError, match="completes on a barrier"):
        replace(p2, copy, tma)
    p3 = replace(p2, copy, tma, barrier="bar")
    assert ("tma_load_2d_bf16(128, 64, sA, tA[128 * io:128 * io + 128, "
            "64 * ko:64 * ko + 64]) >> bar") in str(p3)
    same(p, p3, {"M": 128, "K": 128})


def test_inline_window_on_tensor_maps():
    from exogpu_verify.ir.memories import CudaMbarrier, Sm90_SmemSwizzled
    from exogpu_verify.ir.types import bf16
    from exogpu_verify.platforms.sm90 import Sm90_tma_load
    from exogpu_verify.schedule import inline_window, insert_barrier_alloc, replace, stage_mem

    p = P(TMA_SRC.replace("= A[128 * io + i, 64 * ko + k]", "= tA[128 * io + i, 64 * ko + k]"),
          _tma_env())
    p1 = inline_window(p, "tA = _")  # plain reads: an alias like any other
    assert "tA" not in str(p1)
    same(p, p1, {"M": 128, "K": 64})
    p2 = stage_mem(p, p.find_loop("i"), "tA[128 * io:128 * io + 128, 64 * ko:64 * ko + 64]",
                   "sA", mem=Sm90_SmemSwizzled(128))
    p2 = insert_barrier_alloc(p2, p2.find("sA : _").after(), "bar", [], CudaMbarrier)
    p2 = replace(p2, p2.find("sA : _").next().next(), Sm90_tma_load(2, bf16), barrier="bar")
    with pytest.raises(SchedulingError, match="takes a tensor map") as e:
        inline_window(p2, "tA = _")
    assert e.value.line == p2.find("tA = _").node().srcinfo.line


def test_replace_binds_window_statement_names():
    from exogpu_verify.schedule import replace

    cp = P("""
@instr(timeline=cpu_in_order_instr)
def copy4(dst: [f32][4], src: [f32][4]):
    for i in seq(0, 4):
        dst[i] = src[i]
""")
    p = P("""
def f(A: f32[16], y: f32[16]):
    w = A[4:8]
    for i in seq(0, 4):
        y[i] = w[i]
""")
    p1 = replace(p, p.find_loop("i"), cp)
    assert "copy4(y[0:4], w)" in str(p1) or "copy4(y[0:4], w[0:4])" in str(p1)
    same(p, p1, {})


# ---------------------------------------------------------------- wgmma / wgmma_zero by replace

WGMMA_SRC = """
def f(A: bf16[64, 64] @ CudaGmemLinear, B: bf16[256, 64] @ CudaGmemLinear, C: f32[64, 256] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, 1):
            sA: bf16[64, 64] @ Sm90_SmemSwizzled(128)
            sB: bf16[256, 64] @ Sm90_SmemSwizzled(128)
            for t in cuda_threads(0, 128, unit=cuda_thread):
                for r in seq(0, 32):
                    sA[t / 2, 32 * (t % 2) + r] = A[t / 2, 32 * (t % 2) + r]
            for t in cuda_threads(0, 128, unit=cuda_thread):
                for r in seq(0, 128):
                    sB[2 * t + r / 64, r % 64] = B[2 * t + r / 64, r % 64]
            Fence(cuda_in_order, cuda_in_order)
            D: f32[64, 256] @ Sm90_RmemMatrixD
            for m in seq(0, 64):
                for n in seq(0, 256):
                    D[m, n] = 0.0
            for m in seq(0, 64):
                for n in seq(0, 256):
                    for k in seq(0, 64):
                        D[m, n] += sA[m, k] * sB[n, k]
            for m in seq(0, 64):
                for n in seq(0, 256):
                    C[m, n] = D[m, n]
"""


def test_library_wgmma_and_wgmma_zero_are_matchable():
    """The accumulator is reshaped into the fragment layout by divide_dim / rearrange_dim /
    mult_dim, the zero nest into the instruction's loops by divide_loop / reorder_loops /
    mult_loops; replace then unifies indices as values (``m % 16 % 8`` meets ``m % 8``)."""
    from exogpu_verify.ir.types import bf16
    from exogpu_verify.platforms.sm90 import Sm90_wgmma_ss, Sm90_wgmma_zero
    from exogpu_verify.schedule import (divide_dim, divide_loop, mult_dim, mult_loops,
                                        rearrange_dim, reorder_loops, replace, simplify)

    src = WGMMA_SRC
    env = _tma_env()
    p0 = p = P(src, env)
    p = divide_dim(p, "D : _", 0, 16); p = divide_dim(p, "D : _", 1, 8); p = divide_dim(p, "D : _", 3, 8); p = divide_dim(p, "D : _", 4, 2)
    p = rearrange_dim(p, "D : _", [0, 2, 4, 3, 1, 5]); p = mult_dim(p, "D : _", 1, 2); p = simplify(p)
    z = p.find_loop("m")
    p = divide_loop(p, z, 16, ["w", "mm"], perfect=True)
    p = divide_loop(p, "mm", 8, ["h", "g"], perfect=True)
    p = divide_loop(p, p.find_loop("n"), 8, ["nb", "rr"], perfect=True)
    p = divide_loop(p, "rr", 2, ["tt", "j"], perfect=True)
    for a, b in (("h", "g"), ("h", "nb"), ("h", "tt"), ("nb", "tt")):
        p = reorder_loops(p, f"{a} {b}")
    p = mult_loops(p, "g tt", "l")
    p = simplify(p)
    same(p0, p, {})
    p = replace(p, p.find_loop("w"), Sm90_wgmma_zero(256))
    p = divide_loop(p, "k", 16, ["kk", "k2"], perfect=True)
    p = reorder_loops(p, "n kk"); p = reorder_loops(p, "m kk")
    p = replace(p, p.find_loop("m"), Sm90_wgmma_ss(bf16, 256))
    same(p0, p, {})
    assert "wgmma_zero_m64n256(D)" in str(p)
    assert ("wgmma_m64n256k16_f32_bf16_ss(D, sA[0:64, 16 * kk:16 * kk + 16], "
            "sB[0:256, 16 * kk:16 * kk + 16])") in str(p)


def test_replace_compares_indices_as_values():
    from exogpu_verify.schedule import replace

    cp = P("""
@instr(timeline=cpu_in_order_instr)
def scale8(dst: [f32][2, 4], src: [f32][8]):
    for i in seq(0, 8):
        dst[i / 4, i % 4] = src[i] * 2.0
""")
    p = P("""
def f(A: f32[8], y: f32[2, 4]):
    for i in seq(0, 8):
        y[i % 8 / 4, i % 16 % 4] = A[4 * (i / 4) + i % 4] * 2.0
""")
    p1 = replace(p, p.find_loop("i"), cp)
    assert "scale8(y, A)" in str(p1) or "scale8(y[0:2, 0:4], A[0:8])" in str(p1)
    same(p, p1, {})


def test_loop_rewrites_see_buffers_allocated_per_iteration_as_private():
    from exogpu_verify.schedule import fission, reorder_loops

    p = P("""
def f(N: size, A: f32[N, N], y: f32[N, N]):
    for i in seq(0, N):
        for j in seq(0, N):
            t: f32 @ DRAM
            t = A[i, j] * 2.0
            y[i, j] = t + 1.0
""")
    p1 = reorder_loops(p, "i j")  # t is fresh in every (i, j): no dependence through it
    same(p, p1, {"N": 3})
    with pytest.raises(SchedulingError):
        fission(p, "after: t = _")  # t is used after the gap
