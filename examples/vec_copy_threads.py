"""Vector copy with its iterations mapped to CUDA threads (LANGUAGE.md's first example).

Each cluster (= CTA, clusterDim 1) takes one 256-element task and each of its 256 threads
copies one element. Read sequentially (``cuda_tasks``/``cuda_threads`` are annotations) it
is exactly ``vec_copy_seq``. Every element is read and written by one thread and no thread
reads what another wrote, so the checker is expected to accept it with no synchronization at
all (``proven`` for every N with N % 256 == 0).
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"N": 1024}


@proc
def vec_copy_threads(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
