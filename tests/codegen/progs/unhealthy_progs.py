"""A kernel the health rules must reject: an instruction whose C++ template indexes a register
array with a value read from memory, which puts the array in local memory (stack frame, LDL/STL)."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403


@instr(timeline=cuda_in_order_instr, unit=cuda_thread,
       codegen="{dst}[0] = {src}[int({dst}[0]) & 255];")
def pick(dst: [f32][1] @ CudaGmemLinear, src: [f32][256] @ CudaRmem):
    dst[0] = src[0]


@proc
def local_memory(N: size, A: f32[N, 256] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 32 == 0
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N / 32):
            r: f32[32, 256] @ CudaRmem
            for t in cuda_threads(0, 32, unit=cuda_thread):
                for i in seq(0, 256):
                    r[t, i] = A[task * 32 + t, i]
                pick(B[task * 32 + t:task * 32 + t + 1], r[t, :])
