"""Bugs that only appear beyond the ring depth: refuted symbolically with the exact smallest
failing size, while a concrete check at small sizes (up to one ring wrap) passes. This is the
headline argument for symbolic checking (reference notes 4.4: with a one-wrap error the race
needs K >= 5 iterations of a 4-deep ring)."""

from __future__ import annotations

import islpy as isl
import pytest

from exogpu_verify import verify
from exogpu_verify.amir import check_sync_concrete
from exogpu_verify.analysis import analyze_static
from exogpu_verify.symbolic import check_sync_symbolic
from symbolic_helpers import parse

#: a 4-deep SMEM ring between one producer warp and two consumer warps; the producer waits
#: for the consumers' release of iteration k - WAIT before overwriting slot k % 4
RING = """
def ring(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(warp_config=[CudaWarpConfig("producer", 1),
                                         CudaWarpConfig("consumer", 2)]):
        for task in cuda_tasks(0, 1):
            buf: f32[4, 64] @ CudaSmemLinear
            full: barrier[N / 64 @ ring_buffer_by(4)] @ CudaMbarrier
            empty: barrier[N / 64 @ ring_buffer_by(4)] @ CudaMbarrier
            for k in seq(0, N / 64):
                with CudaWarps(0, 1, name="producer"):
                    if k >= WAIT:
                        Await(empty[k - WAIT], cuda_in_order, 0)
                    for t in cuda_threads(0, 32, unit=cuda_thread):
                        buf[k % 4, t] = A[64 * k + t]
                        buf[k % 4, t + 32] = A[64 * k + t + 32]
                    Arrive(cuda_in_order) >> full[k]
                with CudaWarps(0, 2, name="consumer"):
                    Await(full[k], cuda_in_order, 0)
                    for w in cuda_threads(0, 2, unit=cuda_warp):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            C[64 * k + 32 * w + t] = buf[k % 4, 32 * w + t]
                    Arrive(cuda_in_order) >> empty[k]
            Fence(cuda_in_order, cuda_in_order)
"""

ONE_WRAP = [64 * k for k in range(1, 5)]  # 1..4 iterations: at most one pass over the ring


def ring(wait: int):
    p = parse(RING.replace("WAIT", str(wait)))
    assert analyze_static(p) == []
    return p


def test_correct_ring_is_proven_and_checked_beyond_several_wraps():
    p = ring(4)
    r = verify(p)
    assert r.verdict == "proven", r.reason
    for n in ONE_WRAP + [320, 512, 576]:
        assert check_sync_concrete(p, {"N": n})[0] == "checked", n


def test_waiting_one_wrap_too_late_is_refuted_at_exactly_five_iterations():
    p = ring(8)  # the release of k - 2 * depth instead of k - depth
    # a concrete check at sizes up to one ring wrap sees nothing
    for n in ONE_WRAP:
        assert check_sync_concrete(p, {"N": n})[0] == "checked", n
    res = check_sync_symbolic(p)
    assert res.verdict == "refuted"
    assert res.sizes == {"N": 320}  # K = 5 iterations: the first overwrite of slot 0
    # the data race (and, from the same size on, the physical mbarrier ring overrun: a
    # consumer warp can arrive on empty[k + 4] before the other one arrived on empty[k])
    war = [o for o in res.obligations if o.kind == "WAR" and o.empty is False]
    assert war and any("physical mbarriers" in o.name for o in res.obligations
                       if o.empty is False)
    # and the sizes where it fails are exactly N >= 320 (all sizes from the fifth iteration on)
    fails = war[0].remainder.params()
    expect = isl.Set("[N] -> { : N >= 320 and N mod 64 = 0 }")
    assert fails.align_params(expect.get_space()).is_equal(
        expect.align_params(fails.get_space())), fails
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"N": 320}
    assert "smallest failing sizes found symbolically: N=320" in r.reason
    assert r.witness is not None and r.witness.sizes == {"N": 320}
    assert "write-after-read" in r.diagnostics[0].message
    assert check_sync_concrete(p, {"N": 320})[0] == "refuted"


@pytest.mark.parametrize("wait,smallest", [(5, 320), (6, 320), (7, 320), (3, None)])
def test_other_wait_distances(wait, smallest):
    """Waiting for k - 5..7 is refuted at the first overwrite (k = 4, N = 320); waiting for
    k - 3 is stricter than needed and proven."""
    p = ring(wait)
    r = verify(p)
    if smallest is None:
        assert r.verdict == "proven", r.reason
    else:
        assert r.verdict == "refuted" and r.sizes == {"N": smallest}
        assert check_sync_concrete(p, {"N": smallest - 64})[0] == "checked"


#: the same ring released through a pre-arrived ``empty`` ring: the producer waits on
#: empty[k], consumers release slot k by arriving on empty[k + PRE]
PRE_RING = """
def pre_ring(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(warp_config=[CudaWarpConfig("producer", 1),
                                         CudaWarpConfig("consumer", 1)]):
        for task in cuda_tasks(0, 1):
            buf: f32[SLOTS, 64] @ CudaSmemLinear
            full: barrier[N / 64 @ ring_buffer_by(4)] @ CudaMbarrier
            empty: barrier[N / 64 @ ring_buffer_by(4)] @ CudaMbarrierPreArrive(PRE)
            for k in seq(0, N / 64):
                with CudaWarps(0, 1, name="producer"):
                    Await(empty[k], cuda_in_order, 0)
                    for t in cuda_threads(0, 32, unit=cuda_thread):
                        buf[k % SLOTS, t] = A[64 * k + t]
                        buf[k % SLOTS, t + 32] = A[64 * k + t + 32]
                    Arrive(cuda_in_order) >> full[k]
                with CudaWarps(0, 1, name="consumer"):
                    Await(full[k], cuda_in_order, 0)
                    for t in cuda_threads(0, 32, unit=cuda_thread):
                        C[64 * k + t] = buf[k % SLOTS, t]
                        C[64 * k + t + 32] = buf[k % SLOTS, t + 32]
                    Arrive(cuda_in_order) >> empty[k + PRE]
            Fence(cuda_in_order, cuda_in_order)
"""


def pre_ring(slots: int, pre: int):
    return parse(PRE_RING.replace("SLOTS", str(slots)).replace("PRE", str(pre)))


def test_pre_arrived_ring_with_as_many_slots_is_proven():
    p = pre_ring(4, 4)
    assert analyze_static(p) == []
    r = verify(p)
    assert r.verdict == "proven", r.reason
    for n in ONE_WRAP + [320, 448]:
        assert check_sync_concrete(p, {"N": n})[0] == "checked", n


def test_pre_arrive_count_above_the_slot_count_is_refuted_at_the_first_overwrite():
    # 4 pre-arrived releases but only 2 buffer slots: the producer may run 4 iterations
    # ahead; iteration 2 overwrites slot 0 before the consumer read it
    p = pre_ring(2, 4)
    assert analyze_static(p) == []
    for n in (64, 128):
        assert check_sync_concrete(p, {"N": n})[0] == "checked", n
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"N": 192}, r.summary()
    assert "write-after-read" in r.diagnostics[0].message


def test_pre_arrive_count_above_the_ring_depth_is_a_static_error():
    p = pre_ring(4, 5)
    diags = analyze_static(p)
    assert [d.kind for d in diags] == ["barrier-usage"]
    assert "exceed the ring depth" in diags[0].message
    assert verify(p).verdict == "refuted"


def test_the_witness_is_the_smallest_over_all_obligations():
    """The WAW between iterations needs two iterations (N = 128), the RAW on the copy still
    in flight (Await depth 1 right after the first commit) needs one (N = 64): the witness
    must be N = 64 whichever obligation comes first."""
    src = """
def pipe(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[1, 64] @ CudaSmemLinear
            cg: barrier[64] @ Sm80_CommitGroup
            for k in seq(0, N / 64):
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    cp_async_ph(1, buf[0, t:t + 1], A[64 * k + t:64 * k + t + 1])
                    Arrive(Sm80_cp_async) >> cg[t]
                    Await(cg[t], cuda_in_order, 1)
                    C[64 * k + t] = buf[0, t]
            Fence(cuda_in_order, cuda_in_order)
"""
    p = parse(src)
    assert analyze_static(p) == []
    assert check_sync_concrete(p, {"N": 64})[0] == "refuted"
    res = check_sync_symbolic(p)
    assert res.verdict == "refuted" and res.sizes == {"N": 64}
    failing = {ob.kind for ob in res.obligations if ob.empty is False}
    assert {"WAW", "RAW"} <= failing
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"N": 64}
