"""A warp-specialized Hopper GEMM tile loop written with the platform instructions: one
producer warp issues TMA loads into a 4-deep SMEM ring, two consumer warpgroups run wgmma
(``setmaxnreg`` budgets, mbarrier rings, per-warpgroup commit groups and accumulators). The
static analyses must accept it and deduce the expected shardings."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403

tma_load = Sm90_tma_load(2, bf16)
wgmma = Sm90_wgmma_ss(bf16, 64, 128, 128)
wgmma_zero = Sm90_wgmma_zero(64)


@proc
def gemm_tile(M: size, N: size, K: size, A: bf16[M, K] @ CudaGmemLinear,
              B: bf16[N, K] @ CudaGmemLinear, C: f32[M, N] @ CudaGmemLinear):
    assert M % 128 == 0
    assert N % 64 == 0
    assert K % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(128, 64, 64)
    tB = B[:, :] @ Sm90_tensorMap(128, 64, 64)
    with CudaDeviceFunction(warp_config=[CudaWarpConfig("producer", 4, setmaxnreg_dec=40),
                                         CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)]):
        for m in cuda_tasks(0, M / 128):
            for n in cuda_tasks(0, N / 64):
                sA: bf16[4, 2, 64, 64] @ Sm90_SmemSwizzled(128)
                sB: bf16[4, 64, 64] @ Sm90_SmemSwizzled(128)
                raw: barrier[K / 64 @ ring_buffer_by(4)] @ CudaMbarrier
                war: barrier[K / 64 @ ring_buffer_by(4)] @ CudaMbarrierPreArrive(4)
                cg: barrier[2] @ Sm90_WgmmaCommitGroup
                D: f32[2, 4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
                with CudaWarps(name="consumer"):
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        wgmma_zero(D[wg, :, :, :, :, :])
                # producer and consumers in one k loop: the sequential order is a valid
                # schedule (an Await never precedes the Arrive it needs)
                for k in seq(0, K / 64):
                    with CudaWarps(0, 1, name="producer"):
                        Await(war[k], cuda_in_order, 0)
                        tma_load(64, 64, sA[k % 4, 0, :, :], tA[m * 128:m * 128 + 64,
                                                            k * 64:k * 64 + 64]) >> raw[k]
                        tma_load(64, 64, sA[k % 4, 1, :, :], tA[m * 128 + 64:m * 128 + 128,
                                                            k * 64:k * 64 + 64]) >> raw[k]
                        tma_load(64, 64, sB[k % 4, :, :], tB[n * 64:n * 64 + 64,
                                                         k * 64:k * 64 + 64]) >> raw[k]
                        for t in cuda_threads(0, 1, unit=cuda_thread):
                            Arrive(cuda_temporal) >> raw[k]
                    with CudaWarps(name="consumer"):
                        for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                            Await(raw[k], cuda_generic_and_async_proxy, 0)
                            Fence(wgmma_fence_1, wgmma_fence_2)
                            for kk in seq(0, 4):
                                wgmma(D[wg, :, :, :, :, :], sA[k % 4, wg, :, kk * 16:kk * 16 + 16],
                                      sB[k % 4, :, kk * 16:kk * 16 + 16])
                            Arrive(wgmma_async) >> cg[wg]
                            Await(cg[wg], cuda_in_order, 0)
                            for t in cuda_threads(0, 1, unit=cuda_thread):
                                Arrive(cuda_in_order) >> war[k + 4]
                with CudaWarps(name="consumer"):
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        for w in cuda_threads(0, 4, unit=cuda_warp):
                            for lane in cuda_threads(0, 32, unit=cuda_thread):
                                for nb in seq(0, 8):
                                    for h in seq(0, 2):
                                        for c in seq(0, 2):
                                            C[m * 128 + wg * 64 + w * 16 + h * 8 + lane / 4,
                                              n * 64 + nb * 8 + (lane % 4) * 2 + c] = D[
                                                wg, w, lane, nb, h, c]
                Fence(cuda_in_order, cuda_in_order)
