"""One-shot mbarriers (``z: barrier @ CudaMbarrier``, no ring dimension): a single phase,
one Arrive statement per CTA, then Awaits (LANGUAGE.md)."""

from __future__ import annotations
from exogpu_verify import *

@proc
def oneshot(N: size, A: f32[N, 64] @ CudaGmemLinear, B: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[64] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            for w in cuda_threads(0, 1, unit=cuda_warp):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    buf[t] = A[task, t]
                    buf[32 + t] = A[task, 32 + t]
                Arrive(cuda_in_order, 1) >> z
            Await(z, cuda_in_order, 0)
            for t in cuda_threads(0, 64, unit=cuda_thread):
                B[task, t] = buf[63 - t]
            Fence(cuda_in_order, cuda_in_order)

@proc
def oneshot_twice(N: size, K: size, A: f32[N, 64] @ CudaGmemLinear, B: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[64] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            for k in seq(0, K):
                for w in cuda_threads(0, 1, unit=cuda_warp):
                    for t in cuda_threads(0, 32, unit=cuda_thread):
                        buf[t] = A[task, t]
                        buf[32 + t] = A[task, 32 + t]
                    Arrive(cuda_in_order, 1) >> z  # SECOND PHASE
                Await(z, cuda_in_order, 0)
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    B[task, t] = buf[63 - t]
                Fence(cuda_in_order, cuda_in_order)

@proc
def oneshot_no_wait(N: size, A: f32[N, 64] @ CudaGmemLinear, B: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[64] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            for w in cuda_threads(0, 1, unit=cuda_warp):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    buf[t] = A[task, t]
                    buf[32 + t] = A[task, 32 + t]
                Arrive(cuda_in_order, 1) >> z
            for t in cuda_threads(0, 64, unit=cuda_thread):
                B[task, t] = buf[63 - t]  # EARLY READ
            Await(z, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
