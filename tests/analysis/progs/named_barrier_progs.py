"""Named barriers: Fences executed by sets of whole warps smaller than the CTA.

Each correct program has a buggy twin (same source, a closure flag changes one thing) whose
race both checkers must report. ``BAD_LINES`` names the line the diagnostic must point at
(one of the two racing accesses: the *later* one, found by a marker comment).
"""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403

_CFG = [CudaWarpConfig("producer", 4), CudaWarpConfig("consumer", 8)]


def make_consumer_fence(producer_reads: bool = False):
    """The 8 consumer warps write a tile, fence among themselves (``bar.sync 1, 256``) and read
    it transposed; the buggy twin lets a producer warp read it after the consumer-only Fence,
    which does not include the producer's threads."""
    PROD = 1 if producer_reads else 0

    @proc
    def consumer_fence(N: size, A: f32[N, 16, 16] @ CudaGmemLinear,
                       B: f32[N, 16, 16] @ CudaGmemLinear):
        with CudaDeviceFunction(warp_config=_CFG):
            for t in cuda_tasks(0, N):
                tile: f32[16, 16] @ CudaSmemLinear
                with CudaWarps(name="consumer"):
                    for r in cuda_threads(0, 8, unit=cuda_warp):
                        for c in cuda_threads(0, 16, unit=cuda_thread):
                            for h in seq(0, 2):
                                tile[2 * r + h, c] = A[t, 2 * r + h, c]  # <- consumer write
                    Fence(cuda_in_order, cuda_in_order)
                    if PROD == 0:
                        for r in cuda_threads(0, 8, unit=cuda_warp):
                            for c in cuda_threads(0, 16, unit=cuda_thread):
                                for h in seq(0, 2):
                                    B[t, 2 * r + h, c] = tile[c, 2 * r + h]  # <- consumer read
                if PROD == 1:
                    with CudaWarps(0, 1, name="producer"):
                        for c in cuda_threads(0, 16, unit=cuda_thread):
                            for r in seq(0, 16):
                                B[t, r, c] = tile[c, r]  # <- producer read
                Fence(cuda_in_order, cuda_in_order)

    return consumer_fence


def make_wg_fence(cross: bool = False):
    """Each consumer warpgroup fills its own half of a tile, fences alone (``bar.sync 1+wg,
    128``: two ids, one per warpgroup) and reads its half transposed; the buggy twin reads the
    *other* warpgroup's half, which that warpgroup's Fence does not order."""
    OTHER = 1 if cross else 0

    @proc
    def wg_fence(N: size, A: f32[N, 2, 16, 8] @ CudaGmemLinear,
                 B: f32[N, 2, 8, 16] @ CudaGmemLinear):
        with CudaDeviceFunction(warp_config=_CFG):
            for t in cuda_tasks(0, N):
                tile: f32[2, 16, 8] @ CudaSmemLinear
                with CudaWarps(name="consumer"):
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        for th in cuda_threads(0, 128, unit=cuda_thread):
                            tile[wg, th / 8, th % 8] = A[t, wg, th / 8, th % 8]  # <- wg write
                        Fence(cuda_in_order, cuda_in_order)
                        for th in cuda_threads(0, 128, unit=cuda_thread):
                            if OTHER == 0:
                                B[t, wg, th / 16, th % 16] = tile[wg, th % 16, th / 16]
                            else:
                                B[t, wg, th / 16, th % 16] = tile[1 - wg, th % 16, th / 16]  # <- wg read
                Fence(cuda_in_order, cuda_in_order)

    return wg_fence


tma_store = Sm90_tma_store(2, f32)


def make_tma_epilogue(proxy: bool = True):
    """The canonical TMA-store epilogue with a named barrier: the consumer warps write a tile
    of shared memory, ``Fence(cuda_in_order, cuda_generic_and_async_proxy)`` among them
    (``fence.proxy.async`` + ``bar.sync 1, 256``), one consumer warp TMA-stores it and waits;
    the buggy twin fences on ``cuda_in_order`` only (no proxy fence: the TMA store reads
    stale data)."""
    L2 = cuda_generic_and_async_proxy if proxy else cuda_in_order

    @proc
    def tma_epilogue(M: size, A: f32[M, 32] @ CudaGmemLinear, C: f32[M, 32] @ CudaGmemLinear):
        assert M % 64 == 0
        tC = C[:, :] @ Sm90_tensorMap(128, 64, 32)
        with CudaDeviceFunction(warp_config=_CFG):
            for m in cuda_tasks(0, M / 64):
                C_smem: f32[64, 32] @ Sm90_SmemSwizzled(128)
                tcg: barrier @ Sm90_TmaCommitGroup
                with CudaWarps(name="consumer"):
                    for th in cuda_threads(0, 256, unit=cuda_thread):
                        for j in seq(0, 8):
                            C_smem[th / 4, (th % 4) * 8 + j] = A[  # <- smem write
                                m * 64 + th / 4, (th % 4) * 8 + j]
                    Fence(cuda_in_order, L2)
                    with CudaWarps(0, 1):
                        tma_store(64, 32, tC[m * 64:m * 64 + 64, :], C_smem[:, :])  # <- store
                        Arrive(tma_to_gmem_async) >> tcg
                        Await(tcg, cuda_in_order, 0)
                Fence(cuda_in_order, cuda_in_order)

    return tma_epilogue


consumer_fence = make_consumer_fence()
consumer_fence_bad = make_consumer_fence(producer_reads=True)
wg_fence = make_wg_fence()
wg_fence_bad = make_wg_fence(cross=True)
tma_epilogue = make_tma_epilogue()
tma_epilogue_bad = make_tma_epilogue(proxy=False)

#: buggy twin -> (expected hazard, markers of the two racing accesses' lines)
BAD = {
    "consumer_fence_bad": ("read-after-write", ("# <- consumer write", "# <- producer read")),
    "wg_fence_bad": ("write-after-read", ("# <- wg write", "# <- wg read")),
    "tma_epilogue_bad": ("read-after-write", ("# <- smem write", "# <- store")),
}
GOOD = ("consumer_fence", "wg_fence", "tma_epilogue")
VERIFY_SIZES = {"N": 2, "M": 128}
