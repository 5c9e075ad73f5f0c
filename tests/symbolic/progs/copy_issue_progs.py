"""Copy issues (docs/semantics.md, "Copy issues"): a copy completing on an mbarrier
(``tma_load(...) >> z``) arms the barrier's phase with ``mbarrier.expect_tx`` from the thread
that issues it (lane 0 of the warp in the generated code); some arrival that can complete the
phase must come after that, or the phase completes with the copy's bytes not counted and the
Await passes before they land. Each program: a TMA load by warp 1 completing on ``z``, then
an Arrive on ``z`` by:

* ``other_warp``: thread 0 of warp 0, unordered with the issue (refuted; was proven);
* ``other_warp_fenced``: the same after a CTA Fence that orders the issue (proven);
* ``issuer``: lane 0 of warp 1 after the copy (proven);
* ``issuing_warp``: all of warp 1 (proven: lane 0 arrives after its expect_tx);
* ``other_lane``: lane 5 of warp 1 (refuted: lane 0 issues, lane 5 may arrive first).
"""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403

tma_load = Sm90_tma_load(2, f32)


@proc
def other_warp(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 32] @ CudaGmemLinear):
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 64, 32)
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, M / 64):
            s: f32[64, 32] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_load(64, 32, s[:, :], tA[task * 64:task * 64 + 64, :]) >> z
            with CudaWarps(0, 1):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    Arrive(cuda_temporal) >> z
            Await(z, cuda_generic_and_async_proxy, 0)
            for t in cuda_threads(0, 128, unit=cuda_thread):
                for r in seq(0, 16):
                    B[task * 64 + r * 4 + t / 32, t % 32] = s[r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def other_warp_fenced(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 32] @ CudaGmemLinear):
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 64, 32)
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, M / 64):
            s: f32[64, 32] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_load(64, 32, s[:, :], tA[task * 64:task * 64 + 64, :]) >> z
            Fence(cuda_in_order, cuda_in_order)
            with CudaWarps(0, 1):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    Arrive(cuda_temporal) >> z
            Await(z, cuda_generic_and_async_proxy, 0)
            for t in cuda_threads(0, 128, unit=cuda_thread):
                for r in seq(0, 16):
                    B[task * 64 + r * 4 + t / 32, t % 32] = s[r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def issuer(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 32] @ CudaGmemLinear):
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 64, 32)
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, M / 64):
            s: f32[64, 32] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_load(64, 32, s[:, :], tA[task * 64:task * 64 + 64, :]) >> z
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    Arrive(cuda_temporal) >> z
            Await(z, cuda_generic_and_async_proxy, 0)
            for t in cuda_threads(0, 128, unit=cuda_thread):
                for r in seq(0, 16):
                    B[task * 64 + r * 4 + t / 32, t % 32] = s[r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def issuing_warp(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 32] @ CudaGmemLinear):
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 64, 32)
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, M / 64):
            s: f32[64, 32] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_load(64, 32, s[:, :], tA[task * 64:task * 64 + 64, :]) >> z
                Arrive(cuda_temporal) >> z
            Await(z, cuda_generic_and_async_proxy, 0)
            for t in cuda_threads(0, 128, unit=cuda_thread):
                for r in seq(0, 16):
                    B[task * 64 + r * 4 + t / 32, t % 32] = s[r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def other_lane(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 32] @ CudaGmemLinear):
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 64, 32)
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, M / 64):
            s: f32[64, 32] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_load(64, 32, s[:, :], tA[task * 64:task * 64 + 64, :]) >> z
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    if t == 5:
                        Arrive(cuda_temporal) >> z
            Await(z, cuda_generic_and_async_proxy, 0)
            for t in cuda_threads(0, 128, unit=cuda_thread):
                for r in seq(0, 16):
                    B[task * 64 + r * 4 + t / 32, t % 32] = s[r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


tma_mc = Sm90_tma_multicast(2, f32, 2)


@proc
def multicast_issuer(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 2, 32] @ CudaGmemLinear):
    """A 2-CTA multicast issued by warp 1 of both CTAs (lane 0 of each: one expect_tx per
    CTA, on its own mbarrier), each CTA's Arrive on its own element by that lane: proven."""
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 32, 32)
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, M / 64):
            s: f32[2, 64, 32] @ CudaSmemLinear
            z: barrier[2] @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_mc(64, 32, s[:, :, :], tA[task * 64:task * 64 + 64, :]) >> z[:]
                for cw in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        Arrive(cuda_temporal) >> z[cw]
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                Await(z[cta], cuda_generic_and_async_proxy, 0)
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    for r in seq(0, 16):
                        B[task * 64 + r * 4 + t / 32, cta, t % 32] = s[cta, r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def multicast_other_warp(M: size, A: f32[M, 32] @ CudaGmemLinear,
                         B: f32[M, 2, 32] @ CudaGmemLinear):
    """The same multicast, each CTA's Arrive by thread 0 of its warp 0, unordered with its
    own lane's expect_tx: refuted (was proven)."""
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 32, 32)
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, M / 64):
            s: f32[2, 64, 32] @ CudaSmemLinear
            z: barrier[2] @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_mc(64, 32, s[:, :, :], tA[task * 64:task * 64 + 64, :]) >> z[:]
            with CudaWarps(0, 1):
                for cw in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        Arrive(cuda_temporal) >> z[cw]
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                Await(z[cta], cuda_generic_and_async_proxy, 0)
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    for r in seq(0, 16):
                        B[task * 64 + r * 4 + t / 32, cta, t % 32] = s[cta, r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def multicast_one_cta_arrives(M: size, A: f32[M, 32] @ CudaGmemLinear,
                              B: f32[M, 2, 32] @ CudaGmemLinear):
    """The multicast's phase on CTA 1's mbarrier is completed by CTA 0's remote arrive only:
    nothing orders CTA 1's expect_tx before it. The checkers order each CTA's issue before
    that CTA's own Arrives (there are none here); code generation refuses an Arrive on a
    copied-into mbarrier that does not arrive from every CTA."""
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 32, 32)
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, M / 64):
            s: f32[2, 64, 32] @ CudaSmemLinear
            z: barrier[2] @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_mc(64, 32, s[:, :, :], tA[task * 64:task * 64 + 64, :]) >> z[:]
                for cw in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                    if cw == 0:
                        for t in cuda_threads(0, 1, unit=cuda_thread):
                            Arrive(cuda_temporal) >> z[:]
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                Await(z[cta], cuda_generic_and_async_proxy, 0)
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    for r in seq(0, 16):
                        B[task * 64 + r * 4 + t / 32, cta, t % 32] = s[cta, r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def multicast_all_arrive_all(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 2, 32] @ CudaGmemLinear):
    """The same, each CTA's lane arriving on both CTAs' elements: proven (every CTA arrives
    on every element in each phase, so each CTA's own arrival, after its expect_tx, is among
    those its phase needs; the remote arrivals need no order with the peer's issue)."""
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 32, 32)
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, M / 64):
            s: f32[2, 64, 32] @ CudaSmemLinear
            z: barrier[2] @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_mc(64, 32, s[:, :, :], tA[task * 64:task * 64 + 64, :]) >> z[:]
                for cw in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        Arrive(cuda_temporal) >> z[:]
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                Await(z[cta], cuda_generic_and_async_proxy, 0)
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    for r in seq(0, 16):
                        B[task * 64 + r * 4 + t / 32, cta, t % 32] = s[cta, r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def multicast_seq_by_cta(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 2, 32] @ CudaGmemLinear):
    """The same, each CTA arriving in a loop of cw iterations: CTA 0 never arrives, so its
    phase is completed by CTA 1's remote arrive alone, unordered with CTA 0's expect_tx:
    refuted (a loop whose bounds read a thread iterator selects threads like an If; it was
    proven while only an If counted)."""
    assert M % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(0, 32, 32)
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, M / 64):
            s: f32[2, 64, 32] @ CudaSmemLinear
            z: barrier[2] @ CudaMbarrier
            with CudaWarps(1, 2):
                tma_mc(64, 32, s[:, :, :], tA[task * 64:task * 64 + 64, :]) >> z[:]
                for cw in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        for i in seq(0, cw):
                            Arrive(cuda_temporal) >> z[:]
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                Await(z[cta], cuda_generic_and_async_proxy, 0)
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    for r in seq(0, 16):
                        B[task * 64 + r * 4 + t / 32, cta, t % 32] = s[cta, r * 4 + t / 32, t % 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
