"""Split-K by rewrites on a small matmul (the route of examples/scheduling/
gemm_library_schedule.py's split-K variants): C's zero-fill separated and replaced by the host
memset, the K loop divided into interleaved slices, the slice loop moved out of the K loop
(a reassociation: recorded unsafe) and past the i/j loops (checked, bitwise equal); refused:
the zero-fill inside the slice loop (it would clear the earlier slices' sums) and
reordering an accumulation written as an assignment."""

from __future__ import annotations

import pytest
from sched_util import P, last, same

from exogpu_verify.ir.memories import CudaGmemLinear
from exogpu_verify.platforms.cuda import cudaMemsetAsync0_2d_f32
from exogpu_verify.schedule import (SchedulingError, add_loop, divide_loop, fission, fuse,
                                    reorder_loops, replace, set_memory, stage_mem)

MM = """
def mm(M: size, N: size, K: size, A: f32[M, K], B: f32[N, K], C: f32[M, N]):
    assert K % 4 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[j, k]
"""
SIZES = {"M": 3, "N": 5, "K": 12}


def separated():
    """The zero-fill of C as its own nest, before the accumulation."""
    p = P(MM)
    p1 = fission(p, "after: C[_] = 0.0", n_lifts=2)
    assert not last(p1).unsafe
    same(p, p1, SIZES)
    return p, p1


def out(p):
    """The slice loop one level out (swapped with the loop around it)."""
    return reorder_loops(p, p.find_loop("s").parent())


def test_zero_fill_becomes_the_host_memset():
    p, p1 = separated()
    p2 = replace(set_memory(p1, "C", CudaGmemLinear), "for i in _: _", cudaMemsetAsync0_2d_f32)
    assert "cudaMemsetAsync0_2d_f32(M, N, C)" in str(p2) and not last(p2).unsafe
    same(p, p2, SIZES)


def test_slice_loop_out_of_k_is_a_recorded_reassociation_then_checked():
    p, p1 = separated()
    p2 = divide_loop(p1, "k", 4, ["kt", "s"], perfect=True)
    same(p, p2, SIZES)
    p3 = reorder_loops(p2, "kt s")  # k = 4 kt + s: slice s sums k = s, s + 4, ...
    assert last(p3).unsafe and "reassociation" in last(p3).checked
    same(p, p3, SIZES, bitwise=False)
    # past j and i: each element's additions keep their order (checked, bitwise)
    p4 = out(out(p3))
    assert [r.unsafe for r in p4.provenance[-2:]] == [False, False]
    assert [p4.body[-1].iter, p4.body[-1].body[0].iter] == ["s", "i"]
    same(p3, p4, SIZES)
    # a slice's partial sums apart, added back (accum: the second reassociation)
    p5 = stage_mem(p4, "for kt in _: _", "C[i, j]", "Dp", accum=True)
    assert last(p5).unsafe and "reassociation" in last(p5).checked
    same(p, p5, SIZES, bitwise=False)


def test_zero_fill_inside_the_slice_loop_is_refused():
    p, p1 = separated()
    p2 = divide_loop(p1, "k", 4, ["kt", "s"], perfect=True)
    p3 = out(out(reorder_loops(p2, "kt s")))
    # repeating the zero-fill is idempotent (checked) ...
    p4 = add_loop(p3, "for i in _: _", "s0", 4)
    same(p3, p4, SIZES)
    # ... but fusing it with the slice loop would clear slice 0's sums at slice 1
    with pytest.raises(SchedulingError) as e:
        fuse(p4, "for s0 in _: _", "for s in _: _")
    assert "fuse reverses a dependence" in str(e.value)
    # located at the zero-fill (MM line 6) and the accumulation (line 8)
    assert [loc.line for loc in e.value.locations()] == [6, 8]
    assert "write C[i, j] and reduction C[i, j]" in str(e.value)


def test_accumulation_as_an_assignment_is_refused():
    p = P(MM.replace("C[i, j] += A[i, k] * B[j, k]", "C[i, j] = C[i, j] + A[i, k] * B[j, k]"))
    p1 = divide_loop(fission(p, "after: C[_] = 0.0", n_lifts=2), "k", 4, ["kt", "s"],
                     perfect=True)
    with pytest.raises(SchedulingError) as e:
        reorder_loops(p1, "kt s")
    assert "reverses a dependence" in str(e.value)
    assert [loc.line for loc in e.value.locations()] == [8]
