"""SAXPY over CUDA threads: ``y = a * x + y`` for ``N`` elements, ``N % 256 == 0``.

``a`` is a kernel parameter passed by value (``CudaGridConstant``), read by every thread;
``x`` and ``y`` live in global memory. As in ``vec_copy``, each element of ``y`` is read and
written by one thread only, so no synchronization is needed. Expected verdict: ``proven``.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"N": 512}


@proc
def saxpy(N: size, a: f32 @ CudaGridConstant, x: f32[N] @ CudaGmemLinear,
          y: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                y[task * 256 + t] = a * x[task * 256 + t] + y[task * 256 + t]
