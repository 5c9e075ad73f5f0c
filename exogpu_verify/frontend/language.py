"""Names of the language that are not IR value objects: keywords and launch configurations.

Keywords (``seq``, ``cuda_tasks``, ``Fence``, ...) are sentinels: the frontend recognizes
them by identity after resolving a name, so a user may alias or re-export them, and calling
one outside a ``@proc`` body gives a clear error instead of doing something surprising.
"""

from __future__ import annotations

import keyword

from ..ir import nodes
from ..ir.nodes import CudaWarpConfig as _WarpConfig


class Keyword:
    """A language keyword usable only inside ``@proc``/``@instr`` bodies."""

    __slots__ = ("name", "usage")

    def __init__(self, name: str, usage: str):
        self.name = name
        self.usage = usage

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.name} can only be used inside a @proc or @instr body, "
                        f"as in `{self.usage}`")

    def __repr__(self) -> str:
        return self.name


seq = Keyword("seq", "for i in seq(0, n):")
cuda_tasks = Keyword("cuda_tasks", "for t in cuda_tasks(0, n):")
cuda_threads = Keyword("cuda_threads", "for t in cuda_threads(0, 32, unit=cuda_thread):")
Fence = Keyword("Fence", "Fence(cuda_in_order, cuda_in_order)")
Arrive = Keyword("Arrive", "Arrive(cuda_in_order) >> z[i]")
Await = Keyword("Await", "Await(z[i], cuda_in_order, 0)")
stride = Keyword("stride", "assert stride(A, 1) == 1")

KEYWORDS = {k.name: k for k in (seq, cuda_tasks, cuda_threads, Fence, Arrive, Await, stride)}

BUILTINS = {"relu": 1, "sqrt": 1, "exp": 1, "abs": 1, "fmax": 2, "fmin": 2, "select": 4}


def _pos_int(v, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise TypeError(f"{what} must be a positive int, not {v!r}")
    return v


def CudaWarpConfig(name: str, count: int, setmaxnreg_dec: int | None = None,
                   setmaxnreg_inc: int | None = None) -> _WarpConfig:
    """A named group of ``count`` warps, optionally changing its register budget."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise TypeError(f"CudaWarpConfig name must be a C identifier, not {name!r}")
    _pos_int(count, "CudaWarpConfig warp count")
    if setmaxnreg_dec is not None and setmaxnreg_inc is not None:
        raise TypeError(f"CudaWarpConfig {name!r}: give at most one of setmaxnreg_dec and "
                        "setmaxnreg_inc")
    for v in (setmaxnreg_dec, setmaxnreg_inc):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise TypeError(f"CudaWarpConfig {name!r}: setmaxnreg value must be an int, not {v!r}")
    return _WarpConfig(name, count, setmaxnreg_dec, setmaxnreg_inc)


def CudaDeviceFunction(blockDim: int | None = None, clusterDim: int = 1,
                       warp_config=None, blocks_per_sm: int = 1,
                       task_raster: int = 0) -> nodes.CudaDeviceFunction:
    """Launch configuration: exactly one of ``blockDim`` or ``warp_config``. ``task_raster``
    (0: lexicographic) only orders the persistent task loop in generated code."""
    if not isinstance(task_raster, int) or isinstance(task_raster, bool) or task_raster < 0:
        raise TypeError(f"task_raster must be a non-negative int, not {task_raster!r}")
    if (blockDim is None) == (warp_config is None):
        raise TypeError("CudaDeviceFunction needs exactly one of blockDim=... or warp_config=[...]")
    clusterDim = _pos_int(clusterDim, "clusterDim")
    if clusterDim & (clusterDim - 1):
        raise TypeError(f"clusterDim must be a power of two, not {clusterDim}")
    blocks_per_sm = _pos_int(blocks_per_sm, "blocks_per_sm")
    if warp_config is not None:
        if not isinstance(warp_config, (list, tuple)) or not warp_config or not all(
                isinstance(w, _WarpConfig) for w in warp_config):
            raise TypeError("warp_config must be a non-empty list of CudaWarpConfig(name, count)")
        names = [w.name for w in warp_config]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise TypeError(f"warp_config names must be distinct; repeated: {sorted(dup)}")
        blockDim = 32 * sum(w.count for w in warp_config)
        warp_config = tuple(warp_config)
    else:
        blockDim = _pos_int(blockDim, "blockDim")
        if blockDim % 32:
            raise TypeError(f"blockDim must be a multiple of 32, not {blockDim}")
        warp_config = ()
    if blockDim > 1024:
        raise TypeError(f"blockDim {blockDim} exceeds the CUDA limit of 1024 threads per CTA")
    return nodes.CudaDeviceFunction(blockDim, clusterDim, warp_config, blocks_per_sm,
                                    task_raster)


def CudaWarps(lo: int | None = None, hi: int | None = None, *, name: str | None = None
              ) -> nodes.CudaWarps:
    """Restrict a block to warps ``[lo, hi)`` (of the named warp group, if ``name``)."""
    if (lo is None) != (hi is None):
        raise TypeError("CudaWarps needs both lo and hi, or neither")
    if lo is not None:
        if not isinstance(lo, int) or not isinstance(hi, int) or isinstance(lo, bool):
            raise TypeError(f"CudaWarps bounds must be ints, not {lo!r}, {hi!r}")
        if not 0 <= lo < hi:
            raise TypeError(f"CudaWarps({lo}, {hi}) is empty or negative; need 0 <= lo < hi")
    if name is not None and (not isinstance(name, str) or not name.isidentifier()):
        raise TypeError(f"CudaWarps name must be a warp group name, not {name!r}")
    return nodes.CudaWarps(lo, hi, name)
