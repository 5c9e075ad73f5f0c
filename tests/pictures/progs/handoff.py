"""Shared-memory hand-offs between threads, buggy and fixed (pictures tests).

``handoff_bug``: each warp fences inside the warp loop (one rendezvous per warp), then reads
the other warp's half. ``partial_arrive``: all 64 threads write, only warp 0 arrives on the
one-shot mbarrier, so warp 1's writes are not ordered before the reads. ``free_bug``: only
per-warp Fences between the last read and the end of the buffer's block. ``handoff`` is the
fixed version (a CTA Fence).
"""

from __future__ import annotations

from exogpu_verify import *


@proc
def handoff_bug(N: size, A: f32[N, 64] @ CudaGmemLinear, B: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[2, 32] @ CudaSmemLinear
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    buf[w, t] = A[task, w * 32 + t]  # WRITE
            for w in cuda_threads(0, 2, unit=cuda_warp):
                Fence(cuda_in_order, cuda_in_order)  # WARP FENCE
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    B[task, w * 32 + t] = buf[1 - w, t]  # READ
            Fence(cuda_in_order, cuda_in_order)  # CTA FENCE


@proc
def partial_arrive(N: size, A: f32[N, 64] @ CudaGmemLinear, B: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[64] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            for t in cuda_threads(0, 64, unit=cuda_thread):
                buf[t] = A[task, t]  # WRITE
            for w in cuda_threads(0, 1, unit=cuda_warp):
                Arrive(cuda_in_order, 1) >> z  # ARRIVE
            Await(z, cuda_in_order, 0)  # AWAIT
            for t in cuda_threads(0, 64, unit=cuda_thread):
                B[task, t] = buf[63 - t]  # READ
            Fence(cuda_in_order, cuda_in_order)  # CTA FENCE


@proc
def handoff(N: size, A: f32[N, 64] @ CudaGmemLinear, B: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[2, 32] @ CudaSmemLinear
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    buf[w, t] = A[task, w * 32 + t]
            Fence(cuda_in_order, cuda_in_order)
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    B[task, w * 32 + t] = buf[1 - w, t]
            Fence(cuda_in_order, cuda_in_order)


@proc
def free_bug(N: size, A: f32[N, 64] @ CudaGmemLinear, B: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[64] @ CudaSmemLinear  # ALLOC
            for t in cuda_threads(0, 64, unit=cuda_thread):
                buf[t] = A[task, t]
            Fence(cuda_in_order, cuda_in_order)
            for t in cuda_threads(0, 64, unit=cuda_thread):
                B[task, t] = buf[63 - t]  # LAST READ
            for w in cuda_threads(0, 2, unit=cuda_warp):
                Fence(cuda_in_order, cuda_in_order)  # WARP FENCE AFTER
