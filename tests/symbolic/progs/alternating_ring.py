"""A ring whose producer alternates between two warps (``if w == i % 2``, the ping-pong
pattern): each index is arrived by exactly one warp, so the ring is balanced although no
thread-iterator combination arrives on every index."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403


def make(both: bool = False):
    """``both``: the buggy twin where both producer warps read every slot but only the
    selected one releases it."""
    BOTH = 1 if both else 0

    @proc
    def alternating_ring(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
        assert N % 32 == 0
        with CudaDeviceFunction(blockDim=96):
            for task in cuda_tasks(0, 1):
                buf: f32[2, 32] @ CudaSmemLinear
                full: barrier[N / 32 @ ring_buffer_by(2)] @ CudaMbarrier
                empty: barrier[N / 32 @ ring_buffer_by(2)] @ CudaMbarrierPreArrive(2)
                for i in seq(0, N / 32):
                    for w in cuda_threads(0, 3, unit=cuda_warp):
                        if w == i % 2:
                            Await(empty[i], cuda_in_order, 0)
                            for l in cuda_threads(0, 32, unit=cuda_thread):
                                buf[i % 2, l] = A[32 * i + l]
                            Arrive(cuda_in_order) >> full[i]
                        if w == 2:
                            Await(full[i], cuda_in_order, 0)
                            for l in cuda_threads(0, 32, unit=cuda_thread):
                                B[32 * i + l] = buf[i % 2, l]
                            Arrive(cuda_in_order) >> empty[i + 2]
                        if BOTH == 1:
                            if w == 1 - i % 2:
                                for l in cuda_threads(0, 32, unit=cuda_thread):
                                    B[32 * i + l] = buf[i % 2, l]  # <- unordered read
                Fence(cuda_in_order, cuda_in_order)

    return alternating_ring


alternating_ring = make()
alternating_ring_bad = make(both=True)
