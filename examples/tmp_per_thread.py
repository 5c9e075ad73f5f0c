"""A register temporary per thread: ``tmp: f32[32] @ CudaRmem`` indexed by the thread iterator.

Paper Section 2.1 ("Distributed Memory"): to stage a vector copy through registers, the
temporary must be a *distributed* allocation. ``tmp[i]`` is indexed by the iterator of the
``cuda_threads(0, 32, unit=cuda_thread)`` loop, so the distributed-memory analysis deduces
that dimension 0 of ``tmp`` is per-thread: thread ``i`` owns ``tmp[i]`` and only ever touches
its own shard (one register each). The checker is expected to accept it (``proven``); its
sequential meaning is the vector copy ``B = A``. Compare ``tmp_scalar_broadcast.py``.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"N": 128}


@proc
def tmp_per_thread(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 32 == 0
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N / 32):
            tmp: f32[32] @ CudaRmem
            for i in cuda_threads(0, 32, unit=cuda_thread):
                tmp[i] = A[task * 32 + i]
            # thread i reads back the shard it wrote itself: no communication, no sync
            for i in cuda_threads(0, 32, unit=cuda_thread):
                B[task * 32 + i] = tmp[i]
