"""The paper's distributed-memory example (Section 2, "Distributed Memory") as @procs.

``broadcast_tmp`` is rejected: a scalar register written by 32 threads and read by 32
others means "broadcast the last value" sequentially. ``sharded_tmp`` is the vector copy the
CUDA programmer meant: one register shard per thread.
"""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403


@proc
def broadcast_tmp(A: f32[32] @ CudaGmemLinear, B: f32[32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            tmp: f32 @ CudaRmem
            for i in cuda_threads(0, 32, unit=cuda_thread):
                tmp = A[i]  # REJECTED HERE
            for i in cuda_threads(0, 32, unit=cuda_thread):
                B[i] = tmp


@proc
def sharded_tmp(A: f32[32] @ CudaGmemLinear, B: f32[32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            tmp: f32[32] @ CudaRmem
            for i in cuda_threads(0, 32, unit=cuda_thread):
                tmp[i] = A[i]
            for i in cuda_threads(0, 32, unit=cuda_thread):
                B[i] = tmp[i]


@proc
def smem_in_warp(A: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            for w in cuda_threads(0, 2, unit=cuda_warp):
                s: f32[32] @ CudaSmemLinear  # REJECTED HERE
                for i in cuda_threads(0, 32, unit=cuda_thread):
                    s[i] = A[i]


@proc
def host_caller(A: f32[32] @ CudaGmemLinear, B: f32[32] @ CudaGmemLinear):
    broadcast_tmp(A, B)
