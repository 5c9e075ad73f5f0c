"""One scalar register written by 32 threads and read by 32 others: rejected.

Paper Section 2.1 (inset) and the commentary's "A register cannot secretly become 32
registers". ``tmp: f32 @ CudaRmem`` is *one* logical scalar. Read sequentially, the first
thread loop leaves ``tmp == A[task * 32 + 31]`` and the second loop broadcasts that value to
all 32 elements of the task's slice of ``B``. CUDA would silently give every thread its own
``tmp`` and compute a vector copy instead, a different program. Exo-GPU keeps the sequential
meaning and rejects the parallel one: a register lives in one thread, yet here 32 threads
write it and 32 threads read it with no shuffle.

The program parses (the rejection is not a syntax or type error): ``verify`` is expected to
report ``refuted`` with a diagnostic of kind ``distributed-memory`` pointing at a use of
``tmp`` inside a thread loop. ``interpret`` gives the broadcast. The accepted way to write the
copy is ``tmp_per_thread.py``; a real broadcast needs a warp shuffle.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"N": 128}


@proc
def tmp_scalar_broadcast(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 32 == 0
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N / 32):
            tmp: f32 @ CudaRmem
            for i in cuda_threads(0, 32, unit=cuda_thread):
                tmp = A[task * 32 + i]  # 32 threads write the same register...
            for i in cuda_threads(0, 32, unit=cuda_thread):
                B[task * 32 + i] = tmp  # ...and 32 threads read it: not one thread's shard
