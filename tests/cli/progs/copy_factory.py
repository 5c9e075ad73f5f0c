"""A kernel factory: procs built by calling it count where they are bound (cli tests)."""

from __future__ import annotations

from exogpu_verify import *


def make_copy(T: int):
    @proc
    def copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
        assert N % T == 0
        with CudaDeviceFunction(blockDim=T):
            for task in cuda_tasks(0, N / T):
                for t in cuda_threads(0, T, unit=cuda_thread):
                    B[task * T + t] = A[task * T + t]

    return copy
