"""Atomic accesses through two proxies (docs/semantics.md, "Atomics and proxies").

Four K slices (tasks ``s``) add their tile into ``C``, zeroed by the host. A TMA reduce-add
(async proxy) is atomic per element, so slices adding with TMA need no ordering among
themselves; so do slices adding with a generic-proxy atomic instruction. A generic atomic
and a TMA reduce-add on one element are not atomic with each other (PTX memory model: two
operations are morally strong only if both are performed via the same proxy), so a mix of
the two from different slices races. Before the fix both checkers proved ``mixed``.
"""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.cuda import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403

tma_add = Sm90_tma_reduce_add(2, f32)


@instr(timeline=cuda_in_order_instr, unit=cuda_thread, atomic=("dst",),
       codegen="atomicAdd(&({dst})[0], ({src})[0]);")
def atomic_add_f32(dst: [f32][1] @ CudaGmemLinear, src: [f32][1] @ CudaSmemLinear):
    dst[0] += src[0]


def make(kind: str):
    """``kind``: "mixed" (slice 0 adds with the generic atomic, the others with TMA),
    "tma" (every slice with TMA)."""
    FIRST = 1 if kind == "mixed" else 0

    @proc
    def atomics(M: size, A: f32[4, M, 32] @ CudaGmemLinear, C: f32[M, 32] @ CudaGmemLinear):
        assert M % 32 == 0
        cudaMemsetAsync0_2d_f32(M, 32, C)
        tC = C[:, :] @ Sm90_tensorMap(0, 32, 32)
        with CudaDeviceFunction(blockDim=128):
            for s in cuda_tasks(0, 4):
                for tm in cuda_tasks(0, M / 32):
                    tile: f32[32, 32] @ CudaSmemLinear
                    cg: barrier @ Sm90_TmaCommitGroup
                    for w in cuda_threads(0, 4, unit=cuda_warp):
                        for c in cuda_threads(0, 32, unit=cuda_thread):
                            for i in seq(0, 8):
                                tile[8 * w + i, c] = A[s, 32 * tm + 8 * w + i, c]
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                    if s == 0 and FIRST == 1:
                        for w in cuda_threads(0, 4, unit=cuda_warp):
                            for c in cuda_threads(0, 32, unit=cuda_thread):
                                for i in seq(0, 8):
                                    atomic_add_f32(C[32 * tm + 8 * w + i, c:c + 1],  # <- generic
                                                   tile[8 * w + i, c:c + 1])
                    else:
                        for w in cuda_threads(0, 1, unit=cuda_warp):
                            tma_add(32, 32, tC[32 * tm:32 * tm + 32, :], tile[:, :])  # <- tma
                            Arrive(tma_to_gmem_async) >> cg
                            Await(cg, cuda_in_order, 0)
                    Fence(cuda_in_order, cuda_in_order)

    return atomics


@proc
def generic(M: size, A: f32[4, M, 32] @ CudaGmemLinear, C: f32[M, 32] @ CudaGmemLinear):
    """Every slice adds with the generic atomic."""
    assert M % 32 == 0
    cudaMemsetAsync0_2d_f32(M, 32, C)
    with CudaDeviceFunction(blockDim=128):
        for s in cuda_tasks(0, 4):
            for tm in cuda_tasks(0, M / 32):
                tile: f32[32, 32] @ CudaSmemLinear
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        for i in seq(0, 8):
                            tile[8 * w + i, c] = A[s, 32 * tm + 8 * w + i, c]
                            atomic_add_f32(C[32 * tm + 8 * w + i, c:c + 1],
                                           tile[8 * w + i, c:c + 1])
                Fence(cuda_in_order, cuda_in_order)


mixed = make("mixed")
tma = make("tma")
VERIFY_SIZES = {"M": 64}
