"""Matrix transpose through a shared-memory tile: ``B = A.T`` for ``A: f32[M, N]``.

Each task (one CTA of 256 threads, 8 warps) moves one 32x32 tile. Loading, warp ``w``
handles tile rows ``4w .. 4w+3`` and lane ``c`` column ``c``, so a warp's global reads are
contiguous; ``tile[r, c] = A[...]``. Storing, the same thread layout writes row ``4w + i`` of
the *transposed* tile, reading ``tile[c, 4w + i]``: an element another warp wrote. Hence:

* ``Fence(cuda_in_order, cuda_in_order)`` at CTA scope (``__syncthreads``) between the loads
  and the stores, ordering every thread's writes of ``tile`` before every thread's reads;
* a second CTA ``Fence`` at the end of the task body: the compiler frees ``tile`` there and
  the next task reuses the shared memory, so every read must be ordered before the free
  (LANGUAGE.md, "Freed shared memory is reused"). With ``clusterDim=1`` a CTA fence is a
  cluster fence.

Expected verdict: ``proven`` (``checked`` at ``VERIFY_SIZES`` if the symbolic check gives
up). Removing either fence should be reported as a race (kind ``sync``).
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"M": 32, "N": 64}


@proc
def transpose_smem(M: size, N: size, A: f32[M, N] @ CudaGmemLinear,
                   B: f32[N, M] @ CudaGmemLinear):
    assert M % 32 == 0
    assert N % 32 == 0
    with CudaDeviceFunction(blockDim=256):
        for tm in cuda_tasks(0, M / 32):
            for tn in cuda_tasks(0, N / 32):
                tile: f32[32, 32] @ CudaSmemLinear
                for w in cuda_threads(0, 8, unit=cuda_warp):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        for i in seq(0, 4):
                            tile[4 * w + i, c] = A[32 * tm + 4 * w + i, 32 * tn + c]
                # every warp's writes of tile before any warp reads a transposed element
                Fence(cuda_in_order, cuda_in_order)
                for w in cuda_threads(0, 8, unit=cuda_warp):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        for i in seq(0, 4):
                            B[32 * tn + 4 * w + i, 32 * tm + c] = tile[c, 4 * w + i]
                # every read of tile before its free (the next task reuses the SMEM)
                Fence(cuda_in_order, cuda_in_order)
