"""CTA-tiled matrix multiply with shared-memory staging: ``C = A @ B``.

``A: f32[M, K]``, ``B: f32[K, N]``, ``C: f32[M, N]``, all multiples of 16. Each task (one CTA
of 256 threads) computes a 16x16 tile of ``C``; thread ``(ty, tx)`` owns one output element
and accumulates it in a register. The accumulator is written as one logical allocation
``acc: f32[16, 16] @ CudaRmem`` indexed ``acc[ty, tx]`` by the two thread iterators, so the
distributed-memory analysis deduces that both dimensions are per-thread: each thread holds a
single register, its own shard (LANGUAGE.md, "Allocations are distributed").

The K loop is sequential. Each step stages a 16x16 tile of ``A`` and one of ``B`` in shared
memory (one element per thread), then every thread reads a row of ``A_tile`` and a column of
``B_tile``, elements other threads wrote:

* ``Fence(cuda_in_order, cuda_in_order)`` after the loads (read-after-write across threads);
* a second ``Fence`` after the multiply-accumulate: the next step overwrites both tiles
  (write-after-read), and after the last step the tiles are freed, which needs every read
  ordered before the free.

Sequentially, each element is a float32 sum over k in increasing order. Expected verdict:
``proven`` (or ``checked`` at ``VERIFY_SIZES``).
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"M": 16, "N": 32, "K": 32}


@proc
def matmul_smem(M: size, N: size, K: size, A: f32[M, K] @ CudaGmemLinear,
                B: f32[K, N] @ CudaGmemLinear, C: f32[M, N] @ CudaGmemLinear):
    assert M % 16 == 0
    assert N % 16 == 0
    assert K % 16 == 0
    with CudaDeviceFunction(blockDim=256):
        for tm in cuda_tasks(0, M / 16):
            for tn in cuda_tasks(0, N / 16):
                A_tile: f32[16, 16] @ CudaSmemLinear
                B_tile: f32[16, 16] @ CudaSmemLinear
                acc: f32[16, 16] @ CudaRmem
                for ty in cuda_threads(0, 16, unit=16 * cuda_thread):
                    for tx in cuda_threads(0, 16, unit=cuda_thread):
                        acc[ty, tx] = 0.0
                for ko in seq(0, K / 16):
                    for ty in cuda_threads(0, 16, unit=16 * cuda_thread):
                        for tx in cuda_threads(0, 16, unit=cuda_thread):
                            A_tile[ty, tx] = A[16 * tm + ty, 16 * ko + tx]
                            B_tile[ty, tx] = B[16 * ko + ty, 16 * tn + tx]
                    # tiles complete before any thread reads another thread's element
                    Fence(cuda_in_order, cuda_in_order)
                    for ty in cuda_threads(0, 16, unit=16 * cuda_thread):
                        for tx in cuda_threads(0, 16, unit=cuda_thread):
                            for ki in seq(0, 16):
                                acc[ty, tx] += A_tile[ty, ki] * B_tile[ki, tx]
                    # all reads done before the next step overwrites (or the end frees) the tiles
                    Fence(cuda_in_order, cuda_in_order)
                for ty in cuda_threads(0, 16, unit=16 * cuda_thread):
                    for tx in cuda_threads(0, 16, unit=cuda_thread):
                        C[16 * tm + ty, 16 * tn + tx] = acc[ty, tx]
