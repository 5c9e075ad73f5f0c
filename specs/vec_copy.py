"""Vector copy over CUDA threads: the smallest kernel the tool checks and compiles.

``B[i] = A[i]`` for ``N`` elements, ``N % 256 == 0``: one 256-thread CTA per 256-element
task, one element per thread. Each element is read and written by a single thread and no
thread reads another's writes, so no synchronization is needed. Expected verdict:
``proven`` (every N satisfying the assert).
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"N": 512}


@proc
def vec_copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
