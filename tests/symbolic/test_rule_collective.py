"""Collective accesses (docs/semantics.md, "Collective accesses"): an instruction executed by
several threads (a warpgroup's store of an accumulator tile, a warp's TMA) accesses one box,
but each thread makes only its own, unknown part of it. So only synchronization run by all
of those threads orders the whole access, and a later access by one of them is not ordered
by program order alone. Before this rule a synchronization by one warp of a warpgroup
ordered the warpgroup's whole store (a false ``proven``). Both checkers, bugs and twins."""

from __future__ import annotations

import pytest

from rule_helpers import concrete_only, proven, refuted

STORE = """
def k(N: size, A: f32[N, 128] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N):
            x: f32[128] @ CudaSmemLinear
            bar: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
            with CudaWarps(0, 4):
                wg_store_ph(x[0:128], A[task, 0:128])
                RELEASE
            with CudaWarps(4, 8):
                Await(bar[0], cuda_in_order, 0)
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    C[task, t] = x[t]
            Fence(cuda_in_order, cuda_in_order)
"""
READ = "C[task, t] = x[t]"


def test_release_by_one_warp_of_the_storing_warpgroup_is_refuted():
    # warps 1-3 of the warpgroup stored parts of x that nothing orders before the reads
    src = STORE.replace("RELEASE", "with CudaWarps(0, 1):\n"
                                   "                    Arrive(cuda_in_order) >> bar[0]")
    refuted(src, READ, "read-after-write hazard", {"N": 1})


def test_release_by_the_whole_warpgroup_is_proven():
    proven(STORE.replace("RELEASE", "Arrive(cuda_in_order) >> bar[0]"), [{"N": 1}, {"N": 3}])


SELF = """
def k(N: size, A: f32[N, 128] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, N):
            x: f32[128] @ CudaSmemLinear
            wg_store_ph(x[0:128], A[task, 0:128])
            SYNC
            for t in cuda_threads(0, 128, unit=cuda_thread):
                C[task, t] = x[127 - t]
            Fence(cuda_in_order, cuda_in_order)
"""


def test_reading_back_a_collective_store_needs_a_barrier():
    # thread t reads an element another thread of the warpgroup may have stored
    refuted(SELF.replace("SYNC", "pass"), "C[task, t] = x[127 - t]", "read-after-write hazard",
            {"N": 1})
    proven(SELF.replace("SYNC", "Fence(cuda_in_order, cuda_in_order)"), [{"N": 1}, {"N": 2}])


@pytest.mark.parametrize("nwarps", [1, 3])
def test_per_warp_fences_order_the_parts_of_their_warps(nwarps):
    # each warp's Fence orders its own part for itself only; the reads of other warps' parts
    # stay unordered, whatever the number of warps that fence
    fences = (f"for w in cuda_threads(0, 4, unit=cuda_warp):\n"
              f"                if w < {nwarps}:\n"
              "                    Fence(cuda_in_order, cuda_in_order)")
    refuted(SELF.replace("SYNC", fences), "C[task, t] = x[127 - t]", "read-after-write hazard",
            {"N": 1})


def test_parts_split_by_warp_fences_then_joined_by_a_cta_barrier_are_accepted():
    # a warp Fence splits the record into parts; the CTA Fence then orders every part
    fences = ("for w in cuda_threads(0, 4, unit=cuda_warp):\n"
              "                Fence(cuda_in_order, cuda_in_order)\n"
              "            Fence(cuda_in_order, cuda_in_order)")
    proven(SELF.replace("SYNC", fences), [{"N": 1}, {"N": 2}])


TMA_BY_WARP = """
def k(N: size, A: f32[N, 64] @ CudaGmemLinear, C: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            x: f32[64] @ CudaSmemLinear
            tcg: barrier @ Sm90_TmaCommitGroup
            for t in cuda_threads(0, 64, unit=cuda_thread):
                x[t] = A[task, t]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
            for w in cuda_threads(0, 1, unit=cuda_warp):
                tma_store_ph(64, C[task, 0:64], x[0:64])
                Arrive(tma_to_gmem_async) >> tcg
                Await(tcg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""


def test_a_warps_tma_store_committed_by_that_warp_is_proven():
    # the commit group of the issuing warp catches the whole (part) access
    proven(TMA_BY_WARP, [{"N": 1}, {"N": 2}])


def test_a_collective_store_partly_overwritten_needs_a_barrier_before_the_overwrite():
    # thread 0 may overwrite x[0] only once every part of the collective store is ordered
    # before it (another thread of the warpgroup may have stored x[0])
    over = ("for t in cuda_threads(0, 1, unit=cuda_thread):\n"
            "                x[0] = 0.0\n"
            "            Fence(cuda_in_order, cuda_in_order)")
    refuted(SELF.replace("SYNC", over), "x[0] = 0.0", "write-after-write hazard", {"N": 1})
    proven(SELF.replace("SYNC", "Fence(cuda_in_order, cuda_in_order)\n            " + over),
           [{"N": 1}, {"N": 2}])
