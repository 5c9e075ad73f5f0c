"""Placeholder instructions for the symbolic-checker tests (their bodies give the sequential
meaning; they have no codegen and are never compiled)."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403


@instr(timeline=Sm80_cp_async_instr, unit=cuda_thread)
def cp_async_ph(n: size, dst: [f32][n] @ CudaSmemLinear, src: [f32][n] @ CudaGmemLinear):
    # placeholder for cp.async: an asynchronous GMEM -> SMEM copy by one thread
    for i in seq(0, n):
        dst[i] = src[i]


@instr(timeline=tma_to_smem_async_instr, unit=cuda_thread, barrier=CudaMbarrier)
def tma_load_ph(n: size, dst: [f32][n] @ CudaSmemLinear, src: [f32][n] @ CudaGmemLinear):
    # placeholder for a TMA load: completes on the mbarrier given as its trailing target
    for i in seq(0, n):
        dst[i] = src[i]


@instr(timeline=tma_to_gmem_async_instr, unit=cuda_warp)
def tma_store_ph(n: size, dst: [f32][n] @ CudaGmemLinear, src: [f32][n] @ CudaSmemLinear):
    # placeholder for a TMA store: an async-proxy read of shared memory (bulk commit group)
    for i in seq(0, n):
        dst[i] = src[i]


@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup)
def wg_store_ph(dst: [f32][128] @ CudaSmemLinear, src: [f32][128] @ CudaGmemLinear):
    # placeholder for a collective generic-proxy store by a whole warpgroup (e.g. an
    # accumulator tile written to shared memory): one access record for its 128 threads
    for i in seq(0, 128):
        dst[i] = src[i]


@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup)
def wg_load_ph(dst: [f32][128] @ CudaGmemLinear, src: [f32][128] @ CudaSmemLinear):
    # placeholder for a collective generic-proxy read of shared memory by a whole warpgroup
    # (e.g. a tile loaded into registers): one access record for its 128 threads
    for i in seq(0, 128):
        dst[i] = src[i]


@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup)
def stage_ph(dst: [bf16][64, 64] @ Sm90_SmemSwizzled(128), src: [bf16][64, 64] @ CudaGmemLinear):
    # placeholder for a warpgroup's ordinary stores of a wgmma operand tile into SMEM
    for i in seq(0, 64):
        for j in seq(0, 64):
            dst[i, j] = src[i, j]


@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup,
       distributed={"src": (cuda_warp, cuda_thread)})
def acc_out_ph(dst: [f32][64, 64] @ CudaGmemLinear, src: [f32][4, 32, 8, 2, 2] @ Sm90_RmemMatrixD):
    # placeholder for the epilogue: every thread reads its accumulator registers (ordinary
    # register reads, PTX fragment layout of wgmma's D) and stores them
    for m in seq(0, 64):
        for n in seq(0, 64):
            dst[m, n] = src[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2]


@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup,
       distributed={"D": (cuda_warp, cuda_thread)})
def acc_zero_ph(D: [f32][4, 32, 8, 2, 2] @ Sm90_RmemMatrixD):
    # placeholder for zeroing the accumulator with ordinary register writes
    for w in seq(0, 4):
        for lane in seq(0, 32):
            for nb in seq(0, 8):
                for h in seq(0, 2):
                    for c in seq(0, 2):
                        D[w, lane, nb, h, c] = 0.0


ENV = {"cp_async_ph": cp_async_ph, "tma_load_ph": tma_load_ph, "tma_store_ph": tma_store_ph,
       "wg_store_ph": wg_store_ph, "wg_load_ph": wg_load_ph, "stage_ph": stage_ph, "acc_out_ph": acc_out_ph,
       "acc_zero_ph": acc_zero_ph, "Sm90_RmemMatrixA": Sm90_RmemMatrixA,
       "Sm90_RmemMatrixD": Sm90_RmemMatrixD, "wgmma": Sm90_wgmma_ss(bf16, 64),
       "wgmma_rs": Sm90_wgmma_rs(bf16, 64, 32), "wgmma_zero": Sm90_wgmma_zero(64)}
