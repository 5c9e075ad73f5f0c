"""The cooperative GEMM kernel written directly, statement by statement, as specs/gemm.py
shipped it before its cooperative variants were scheduled from the naive matmul
(``exogpu_verify.kernels.gemm``). The schedule tests compare what the schedule reaches with
this independent text (tests/schedule/test_gemm_library_example.py): the same
instructions, synchronization and loops in the same places."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.cuda import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403
from exogpu_verify.schedule import rename

_TYPES = {"tf32": f32, "bf16": bf16, "f32": f32}


def cooperative(cfg):
    """The kernel of ``cfg`` (specs/gemm.py's ``GemmConfig``, cooperative, 1x1 cluster)."""
    return rename(_cooperative(cfg), cfg.name)


def _common(cfg):
    T, TC = _TYPES[cfg.dtype], _TYPES[cfg.out]
    KB = 128 // T.nbytes            # k-step: one 128-byte swizzle row of A and B
    W = 128 // TC.nbytes            # epilogue chunk: one 128-byte swizzle row of C
    return T, TC, KB, W


def _cooperative(cfg):
    T, TC, KB, W = _common(cfg)
    BN, S, G, KS, R = cfg.tile_n, cfg.stages, cfg.tiles, cfg.split_k, cfg.raster
    NB = BN // 8                    # accumulator column blocks
    CB = W // 8                     # accumulator column blocks per epilogue chunk
    NCH = BN // W                   # epilogue chunks per tile
    KN = 32 // T.nbytes             # k of one wgmma
    NK = KB // KN                   # wgmmas per k-step
    SPLIT = 1 if KS > 1 else 0
    tma_load = Sm90_tma_load(2, T)
    tma_store = Sm90_tma_reduce_add(2, TC) if SPLIT else Sm90_tma_store(2, TC)
    wgmma = Sm90_wgmma_ss(T, BN)
    wgmma_zero = Sm90_wgmma_zero(BN)
    store_acc = Sm90_store_acc(TC)
    memset = globals()[f"cudaMemsetAsync0_2d_{TC.name}"]

    @proc
    def gemm_coop(M: size, N: size, K: size, A: T[M, K] @ CudaGmemLinear,
                  B: T[N, K] @ CudaGmemLinear, C: TC[M, N] @ CudaGmemLinear):
        assert M % 128 == 0
        assert N % (BN * G) == 0
        assert K % (KB * KS) == 0
        tA = A[:, :] @ Sm90_tensorMap(128, 128, KB)
        tB = B[:, :] @ Sm90_tensorMap(128, BN, KB)
        tC = C[:, :] @ Sm90_tensorMap(128, 128, W)
        if SPLIT == 1:
            memset(M, N, C[:, :])
        with CudaDeviceFunction(warp_config=[CudaWarpConfig("producer", 4, setmaxnreg_dec=40),
                                             CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)],
                                task_raster=R):
            for s in cuda_tasks(0, KS):
                for m in cuda_tasks(0, M / 128):
                    for ng in cuda_tasks(0, N / (BN * G)):
                        sA: T[S, 128, KB] @ Sm90_SmemSwizzled(128)
                        sB: T[S, BN, KB] @ Sm90_SmemSwizzled(128)
                        C_smem: TC[2, 128, W] @ Sm90_SmemSwizzled(128)
                        carry: barrier[G @ ring_buffer_by(2), S] @ CudaMbarrier
                        tcg: barrier @ Sm90_TmaCommitGroup
                        for j in seq(0, G):
                            D: f32[2, 4, 32, NB, 2, 2] @ Sm90_RmemMatrixD
                            raw: barrier[K / (KB * KS) @ ring_buffer_by(S)] @ CudaMbarrier
                            war: barrier[K / (KB * KS) @ ring_buffer_by(S)] @ \
                                CudaMbarrierPreArrive(S)
                            cg: barrier[2] @ Sm90_WgmmaCommitGroup
                            with CudaWarps(name="consumer"):
                                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                    wgmma_zero(D[wg, :, :, :, :, :])
                            for k in seq(0, K / (KB * KS)):
                                with CudaWarps(0, 1, name="producer"):
                                    if j >= 1 and k < S:
                                        Await(carry[j - 1, k], cuda_temporal, 0)
                                    Await(war[k], cuda_temporal, 0)
                                    tma_load(128, KB, sA[k % S, :, :],
                                             tA[m * 128:m * 128 + 128,
                                                (k * KS + s) * KB:(k * KS + s) * KB + KB]
                                             ) >> raw[k]
                                    tma_load(BN, KB, sB[k % S, :, :],
                                             tB[(ng * G + j) * BN:(ng * G + j) * BN + BN,
                                                (k * KS + s) * KB:(k * KS + s) * KB + KB]
                                             ) >> raw[k]
                                    for t in cuda_threads(0, 1, unit=cuda_thread):
                                        Arrive(cuda_temporal) >> raw[k]
                                with CudaWarps(name="consumer"):
                                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                        Await(raw[k], cuda_generic_and_async_proxy, 0)
                                        Fence(wgmma_fence_1, wgmma_fence_2)
                                        for kk in seq(0, NK):
                                            wgmma(D[wg, :, :, :, :, :],
                                                  sA[k % S, wg * 64:wg * 64 + 64,
                                                     kk * KN:kk * KN + KN],
                                                  sB[k % S, :, kk * KN:kk * KN + KN])
                                        Arrive(wgmma_async) >> cg[wg]
                                        if k >= 1:
                                            Await(cg[wg], cuda_in_order, 1)
                                    if k >= 1:
                                        Arrive(cuda_in_order) >> war[k + S - 1]
                                        if k - 1 >= K / (KB * KS) - S:
                                            Arrive(cuda_in_order) >> carry[j, (k - 1) % S]
                            with CudaWarps(name="consumer"):
                                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                    Await(cg[wg], cuda_in_order, 0)
                                Arrive(cuda_in_order) >> war[K / (KB * KS) + S - 1]
                                Arrive(cuda_in_order) >> carry[j, (K / (KB * KS) - 1) % S]
                                for c in seq(0, NCH):
                                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                        store_acc(C_smem[c % 2, wg * 64:wg * 64 + 64, :],
                                                  D[wg, :, :, c * CB:c * CB + CB, :, :])
                                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                                    with CudaWarps(0, 1):
                                        tma_store(128, W,
                                                  tC[m * 128:m * 128 + 128,
                                                     (ng * G + j) * BN + c * W:
                                                     (ng * G + j) * BN + c * W + W],
                                                  C_smem[c % 2, :, :])
                                        Arrive(tma_to_gmem_async) >> tcg
                                        Await(tcg, cuda_in_order, 1)
                                    Fence(cuda_in_order, cuda_in_order)
                        with CudaWarps(name="consumer"):
                            with CudaWarps(0, 1):
                                Await(tcg, cuda_in_order, 0)
                        Fence(cuda_in_order, cuda_in_order)

    return gemm_coop
