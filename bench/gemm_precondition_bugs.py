"""The warp-specialized Hopper GEMM with injected *instruction and resource* bugs (the
synchronization bugs are in ``gemm_kernels.py``).

``make_gemm_pre(bug="none", cluster=1)`` returns a ``@proc`` computing ``C[m, n] = sum_k
A[s, m, k] * B[s, n, k]`` like ``gemm_kernels.gemm`` (bf16 x bf16 -> f32, CTA tile 128 x 256,
k-steps of 64, a 4-deep TMA/mbarrier ring, one producer warp and two consumer warpgroups
with ``wgmma_m64n256k16``, SMEM-reusing TMA-store epilogue), written for a cluster of
``cluster`` CTAs that each compute their own C tile: the CTA loop ``for cta in
cuda_threads(0, cluster, unit=cuda_cta_in_cluster)`` holds the per-CTA work, SMEM, barriers
and accumulators have one shard per CTA, and the Fences around the epilogue are
cluster-wide (shared memory may be reused by any CTA of the cluster).

``bug`` injects one of ``BUGS``: each entry says what changes, the diagnostic kind the
checkers must report and the construct whose line it is (a marker comment in the source
below, such as ``@launch``). Every other construct is the correct kernel, so a
bug's correct twin is ``make_gemm_pre("none")``.
"""

from __future__ import annotations

import re
from pathlib import Path

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403


#: bug -> (what is changed, expected diagnostic kind, marker of the line it is reported at)
BUGS = {
    "tma_box_mismatch": ("A's tensor map box is 64 x 64 but the TMA load copies 128 x 64",
                         "instruction", "@tma-a"),
    "tma_swizzle_mismatch": ("A's tensor map has no swizzle; its SMEM tile is "
                             "Sm90_SmemSwizzled(128)", "instruction", "@tma-a"),
    "tma_inner_box_over_swizzle": ("B's tensor map uses the 64-byte swizzle, but its inner "
                                   "box is 128 bytes", "instruction", "@map-b"),
    "tma_box_over_256": ("C's tensor map box has 512 rows (the hardware's limit is 256)",
                         "instruction", "@map-c"),
    "tma_smem_misaligned": ("A's ring slots are 132 rows: odd slots start 512 bytes into a "
                            "1024-byte swizzle atom", "instruction", "@tma-a"),
    "tma_stride_violation": ("A's SMEM rows are padded to 72 elements: the TMA tile's row "
                             "stride is not its width (stride(dst, 0) == n1)", "instruction",
                             "@tma-a"),
    "wgmma_misaligned_operand": ("the wgmma A operand starts 4 rows into its swizzle atom",
                                 "instruction", "@wgmma"),
    "short_argument_window": ("the wgmma B window has 128 rows, the instruction's B is 256 "
                              "(constant extents: found when the proc is defined)", "type",
                              "@wgmma-b"),
    "wgmma_wrong_majorness": ("the consumers call the M-major-A wgmma (A as [1, 16, 64] "
                              "atoms) on the K-major A tile", "type", "@wgmma-a"),
    "setmaxnreg_over_budget": ("consumers ask for 240 registers: 128 x 40 + 256 x 240 > "
                               "384 x 168", "resource", "@launch"),
    "setmaxnreg_not_multiple_of_8": ("consumers ask for setmaxnreg_inc=236", "resource",
                                     "@launch"),
    "smem_over_capacity": ("a 6-deep ring: 6 x (16 + 32) KB of tiles exceed 227 KB",
                           "resource", "@launch"),
    "oversized_cluster": ("a cluster of 16 CTAs without non_portable_cluster=True",
                          "resource", "@launch"),
    "block_too_large": ("36 warps per CTA (1152 threads)", "resource", "@launch"),
    "global_stride_unaligned": ("K only a multiple of 4: rows of A and B are 8-byte "
                                "multiples, TMA needs 16", "instruction", "@map-a"),
}

tma_load = Sm90_tma_load(2, bf16)
tma_store = Sm90_tma_store(2, f32)
wgmma_k = Sm90_wgmma_ss(bf16, 256)
wgmma_mn_a = Sm90_wgmma_ss(bf16, 256, major_a="MN")
wgmma_zero = Sm90_wgmma_zero(256)
store_acc = Sm90_store_acc(f32)


def make_gemm_pre(bug: str = "none", cluster: int = 1, non_portable: bool = False):
    """The GEMM for a cluster of ``cluster`` CTAs with ``bug`` injected (``"none"``: correct)."""
    if bug != "none" and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}; choose from {', '.join(BUGS)}")
    CL = 16 if bug == "oversized_cluster" else cluster
    NP = non_portable
    BOX_A = 64 if bug == "tma_box_mismatch" else 128
    SW_A = 0 if bug == "tma_swizzle_mismatch" else 128
    SW_B = 64 if bug == "tma_inner_box_over_swizzle" else 128
    BOX_C = 512 if bug == "tma_box_over_256" else 128
    ROWS_A = 132 if bug == "tma_smem_misaligned" else 128
    COLS_A = 72 if bug == "tma_stride_violation" else 64
    OFF_A = 4 if bug == "wgmma_misaligned_operand" else 0
    ROWS_A = 136 if bug == "wgmma_misaligned_operand" else ROWS_A
    B_ROWS = 128 if bug == "short_argument_window" else 256
    INC = {"setmaxnreg_over_budget": 240, "setmaxnreg_not_multiple_of_8": 236}.get(bug, 232)
    RING = 6 if bug == "smem_over_capacity" else 4
    CONSUMERS = 32 if bug == "block_too_large" else 8
    KMUL = 4 if bug == "global_stride_unaligned" else 64
    wgmma = wgmma_mn_a if bug == "wgmma_wrong_majorness" else wgmma_k

    @proc
    def gemm_pre(S: size, M: size, N: size, K: size, A: bf16[S, M, K] @ CudaGmemLinear,
                 B: bf16[S, N, K] @ CudaGmemLinear, C: f32[M, N] @ CudaGmemLinear):
        assert M % 128 == 0
        assert N % (256 * CL) == 0
        assert K % KMUL == 0
        assert S == 1
        tA = A[:, :, :] @ Sm90_tensorMap(SW_A, 1, BOX_A, 64)  # @map-a
        tB = B[:, :, :] @ Sm90_tensorMap(SW_B, 1, 256, 64)  # @map-b
        tC = C[:, :] @ Sm90_tensorMap(128, BOX_C, 32)  # @map-c
        with CudaDeviceFunction(clusterDim=CL, non_portable_cluster=NP, warp_config=[  # @launch
                CudaWarpConfig("producer", 4, setmaxnreg_dec=40),
                CudaWarpConfig("consumer", CONSUMERS, setmaxnreg_inc=INC)]):
            for s in cuda_tasks(0, S):
                for m in cuda_tasks(0, M / 128):
                    for n in cuda_tasks(0, N / (256 * CL)):
                        D: f32[CL, 2, 4, 32, 32, 2, 2] @ Sm90_RmemMatrixD
                        for cta in cuda_threads(0, CL, unit=cuda_cta_in_cluster):
                            with CudaWarps(name="consumer"):
                                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                    wgmma_zero(D[cta, wg, :, :, :, :, :])
                        for main_loop in seq(0, 1):
                            sA: bf16[CL, RING, ROWS_A, COLS_A] @ Sm90_SmemSwizzled(128)
                            sB: bf16[CL, RING, 256, 64] @ Sm90_SmemSwizzled(128)
                            raw: barrier[CL, K / 64 @ ring_buffer_by(RING)] @ CudaMbarrier
                            war: barrier[CL, K / 64 @ ring_buffer_by(RING)] @ \
                                CudaMbarrierPreArrive(RING)
                            cg: barrier[CL, 2] @ Sm90_WgmmaCommitGroup
                            for cta in cuda_threads(0, CL, unit=cuda_cta_in_cluster):
                                for k in seq(0, K / 64):
                                    with CudaWarps(0, 1, name="producer"):
                                        Await(war[cta, k], cuda_temporal, 0)
                                        tma_load(128, 64, sA[cta, k % RING, 0:128, 0:64],  # @tma-a
                                                 tA[s, m * 128:m * 128 + 128,
                                                    k * 64:k * 64 + 64]) >> raw[cta, k]
                                        tma_load(256, 64, sB[cta, k % RING, :, :],
                                                 tB[s, (n * CL + cta) * 256:(n * CL + cta) * 256
                                                    + 256, k * 64:k * 64 + 64]) >> raw[cta, k]
                                        for t in cuda_threads(0, 1, unit=cuda_thread):
                                            Arrive(cuda_temporal) >> raw[cta, k]
                                    with CudaWarps(name="consumer"):
                                        for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                            Await(raw[cta, k], cuda_generic_and_async_proxy, 0)
                                            Fence(wgmma_fence_1, wgmma_fence_2)
                                            for kk in seq(0, 4):
                                                wgmma(D[cta, wg, :, :, :, :, :],  # @wgmma
                                                      sA[cta, k % RING,  # @wgmma-a
                                                         OFF_A + wg * 64:OFF_A + wg * 64 + 64,
                                                         kk * 16:kk * 16 + 16],
                                                      sB[cta, k % RING, 0:B_ROWS,  # @wgmma-b
                                                         kk * 16:kk * 16 + 16])
                                            Arrive(wgmma_async) >> cg[cta, wg]
                                            if k >= 1:
                                                Await(cg[cta, wg], cuda_in_order, 1)
                                        if k >= 1:
                                            with CudaWarps(0, 8):
                                                Arrive(cuda_in_order) >> war[cta, k + RING - 1]
                                with CudaWarps(name="consumer"):
                                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                        Await(cg[cta, wg], cuda_in_order, 0)
                                    with CudaWarps(0, 8):
                                        Arrive(cuda_in_order) >> war[cta, K / 64 + RING - 1]
                            Fence(cuda_in_order, cuda_in_order)
                        for epilogue in seq(0, 1):
                            C_smem: f32[CL, 8, 128, 32] @ Sm90_SmemSwizzled(128)
                            tcg: barrier[CL] @ Sm90_TmaCommitGroup
                            for cta in cuda_threads(0, CL, unit=cuda_cta_in_cluster):
                                with CudaWarps(name="consumer"):
                                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                        for j in seq(0, 8):
                                            store_acc(C_smem[cta, j, wg * 64:wg * 64 + 64, :],
                                                      D[cta, wg, :, :, j * 4:j * 4 + 4, :, :])
                                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                                with CudaWarps(0, 1, name="producer"):
                                    for j in seq(0, 8):
                                        tma_store(128, 32,
                                                  tC[m * 128:m * 128 + 128,
                                                     (n * CL + cta) * 256 + j * 32:
                                                     (n * CL + cta) * 256 + j * 32 + 32],
                                                  C_smem[cta, j, :, :])
                                    Arrive(tma_to_gmem_async) >> tcg[cta]
                                    Await(tcg[cta], cuda_in_order, 0)
                            Fence(cuda_in_order, cuda_in_order)

    return gemm_pre


def marker_line(marker: str) -> int:
    """The source line of this module holding ``# <marker>`` (where a bug is reported)."""
    lines = Path(__file__).read_text().splitlines()
    hits = [i + 1 for i, ln in enumerate(lines)
            if re.search(rf"# {re.escape(marker)}(?![\w-])", ln)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


gemm_pre = make_gemm_pre()
VERIFY_SIZES = {"S": 1, "M": 256, "N": 512, "K": 512}
