"""A module-level spec and a schedule of it (provenance tests replay it from this file)."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.schedule import *  # noqa: F401,F403


@proc
def saxpy(N: size, a: f32[1] @ CudaGmemLinear, x: f32[N] @ CudaGmemLinear,
          y: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    for i in seq(0, N):
        y[i] += a[0] * x[i]


def schedule(unsafe: bool = False):
    p = divide_loop(saxpy, "i", 256, ["b", "t"], perfect=True)
    p = wrap_with_context(p, "for b in _: _", CudaDeviceFunction(blockDim=256), tasks=1)
    p = set_loop_mode(p, "t", CudaThreads(unit=cuda_thread))
    if unsafe:
        p = add_if(p, p.find("y[_] += _"), "t >= 1", unsafe_disable_check=True)
    return rename(p, "saxpy_kernel")


saxpy_kernel = schedule()
