"""Physical phases of an mbarrier ring (docs/semantics.md, "Physical phases of an mbarrier
ring"; ``exogpu_verify/amir/phases.py``): virtual indices ``r`` and ``r + d`` of a
``ring_buffer_by(d)`` ring share one hardware mbarrier, so a ring shallower than the pipeline
it orders is refuted by both checkers even though every virtual Arrive/Await pair matches.
The same program with the ring as deep as the pipeline is proven, and the randomized oracle,
which models the hardware's parity waits, hangs on the shallow one."""

from __future__ import annotations

import pytest

from exogpu_verify import verify
from exogpu_verify.amir import check_sync_concrete
from exogpu_verify.amir.oracle import OracleDeadlock
from rule_helpers import oracle_same, program, proven, refuted

#: a 4-stage TMA ring: the producer runs up to 4 loads ahead (``empty`` pre-arrives 4), so
#: ``full`` needs 4 mbarriers; FULL_DEPTH is the depth under test
RING = """
def ring(K: size, A: f32[K, 64] @ CudaGmemLinear, C: f32[K, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=96):
        for task in cuda_tasks(0, 1):
            buf: f32[4, 64] @ CudaSmemLinear
            full: barrier[K @ ring_buffer_by(FULL_DEPTH)] @ CudaMbarrier
            empty: barrier[K @ ring_buffer_by(4)] @ CudaMbarrierPreArrive(4)
            for k in seq(0, K):
                with CudaWarps(0, 1):
                    Await(empty[k], cuda_temporal, 0)
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        tma_load_ph(64, buf[k % 4, 0:64], A[k, 0:64]) >> full[k]
                        Arrive(cuda_temporal) >> full[k]
                with CudaWarps(1, 3):
                    Await(full[k], cuda_in_order, 0)
                    for w in cuda_threads(0, 2, unit=cuda_warp):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            C[k, 32 * w + t] = buf[k % 4, 32 * w + t]
                        Fence(cuda_in_order, cuda_generic_and_async_proxy)
                    Arrive(cuda_in_order) >> empty[k + 4]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


def ring(depth: int) -> str:
    return RING.replace("FULL_DEPTH", str(depth))


def test_a_ring_as_deep_as_the_pipeline_is_proven():
    p = proven(ring(4), [{"K": 3}, {"K": 5}, {"K": 9}])
    oracle_same(p, {"K": 9})


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_ring_shallower_than_the_pipeline_is_refuted(depth):
    # the load of k + depth reuses full[k]'s mbarrier while full[k]'s copy may be in flight
    # (phase k incomplete): refuted at the first size with such a k, by both checkers
    d = refuted(ring(depth), "Arrive(cuda_temporal) >> full[k]", "hazard", {"K": depth + 1},
                earlier="tma_load_ph(64, buf[k % 4")
    assert f"full (physical mbarriers of ring_buffer_by({depth}))" in d.message, d.message
    assert "Arrive on full" in d.message and "tma_load_ph" in d.message, d.message
    assert "at least as deep as the stages its producer runs ahead" in d.hint, d.hint


@pytest.mark.parametrize("depth", [1, 2])
def test_the_parity_oracle_hangs_on_a_shallow_ring(depth):
    """An independent model of the hardware (physical slots, phases by arrival count and
    transaction bytes, parity waits) agrees: the shallow ring does not run."""
    p = program(ring(depth))
    with pytest.raises(OracleDeadlock):
        oracle_same(p, {"K": 8}, seeds=1)


def test_a_ring_whose_extent_is_its_depth_has_no_lap_to_check():
    # one lap per lifetime: the physical slot of each virtual index is its own
    src = ring(4).replace("    with CudaDevice", "    assert K >= 4\n    with CudaDevice").replace(
        "barrier[K @", "barrier[4 @").replace("for k in seq(0, K)",
                                                         "for k in seq(0, 4)")
    p = program(src)
    assert verify(p, mode="symbolic").verdict == "proven"
    assert check_sync_concrete(p, {"K": 4})[0] == "checked"
