"""Programs written in the surface language for the interpreter tests (``@proc`` needs a file)."""

from __future__ import annotations

from exogpu_verify import *


@proc
def vec_copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]


@proc
def gemm_bf16(M: size, N: size, K: size, A: bf16[M, K], B: bf16[K, N], C: f32[M, N]):
    assert M % 16 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def copy4(n: size, dst: [f32][n], src: [f32][n]):
    assert n == 4
    for i in seq(0, n):
        dst[i] = src[i]


@proc
def swap_halves(M: size, A: f32[M, 8], B: f32[M, 9]):
    for i in seq(0, M):
        copy4(4, B[i, 0:4], A[i, 4:8])
        copy4(4, B[i, 4:8], A[i, 0:4])
        tmp: f32
        tmp = relu(A[i, 0]) + select(A[i, 1], 0.0, 1.0, -1.0)
        B[i, 8] = tmp


@proc
def bad_call(A: f32[8], B: f32[8]):
    copy4(4, B[0:4], A[5:9])
