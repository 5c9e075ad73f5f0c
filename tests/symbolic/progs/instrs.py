"""Placeholder instructions for the symbolic-checker tests (their bodies give the sequential
meaning; they have no codegen and are never compiled)."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403


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


ENV = {"cp_async_ph": cp_async_ph, "tma_load_ph": tma_load_ph}
