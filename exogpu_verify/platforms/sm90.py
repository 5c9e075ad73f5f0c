"""Hopper (sm_90a) instructions: TMA, wgmma, and the memories they need.

Everything is built by the family functions in ``_tma.py`` and ``_wgmma.py``; this module
instantiates the common members under stable names and re-exports the factories for the rest.

TMA (``cuda_warp``; see ``_tma``):
  ``tma_load_{1..5}d_{T}`` (``>> mbar``), ``tma_multicast_{1..3}d_{T}_x{2,4}`` (``>> z[:, i]``),
  ``tma_store_{1..5}d_{T}``, ``tma_reduce_add_{1..5}d_{T}``; T in f32, bf16, f16.
  Factories: ``Sm90_tma_load(rank, T)``, ``Sm90_tma_multicast(rank, T, ncta, cta_stride=1)``,
  ``Sm90_tma_store(rank, T)``, ``Sm90_tma_reduce_add(rank, T)``.
wgmma (``cuda_warpgroup``; see ``_wgmma``):
  ``wgmma_m64n{N}k{K}_f32_{T}_ss`` and ``..._rs`` for N in 8..256 step 8, T in f32 (tf32,
  K=8), bf16 and f16 (K=16), 128-byte swizzled operands; ``wgmma_zero_m64n{N}``.
  MN-major (transposed) operands, bf16/f16, 128-byte swizzle: ``..._ss_mn_a`` (A M-major
  ``[1, 16, 64]``) for every N, and for N in 64, 128, 192, 256 ``..._ss_mn_b``,
  ``..._ss_mn_ab`` and ``..._rs_mn_b`` (B N-major ``[N/64, 16, 64]``).
  Factories ``Sm90_wgmma_ss(T, N, swizzle_a, swizzle_b, major_a, major_b)``,
  ``Sm90_wgmma_rs(T, N, swizzle_b, major_b)`` and ``Sm90_wgmma_zero(N)`` give the 64- and
  32-byte swizzle members too (``major_* = "K"`` or ``"MN"``).
Epilogue (``cuda_warpgroup``; see ``_epilogue``): ``store_acc_m64n{32,64}_{T}`` stores a 64 x N
  accumulator column window to 128-byte-swizzled SMEM as f32 (N = 32) or bf16/f16 (N = 64),
  fully unrolled; factory ``Sm90_store_acc(T, swizzle=...)``.
Memories: ``Sm90_RmemMatrixD`` (wgmma accumulator tile), ``Sm90_RmemMatrixA`` (A fragment),
  ``Sm90_tensorMapAny`` (TMA parameter memory: any tensor-map window); ``Sm90_SmemSwizzled``
  and ``Sm90_tensorMap`` come from the language.

Synchronization statements, not instructions, produce ``wgmma.fence`` (``Fence(wgmma_fence_1,
wgmma_fence_2)``), ``wgmma.commit_group`` (``Arrive(wgmma_async) >> cg``),
``wgmma.wait_group N`` (``Await(cg, ..., N)``), ``cp.async.bulk.commit_group`` /
``wait_group`` (``Sm90_TmaCommitGroup``) and ``fence.proxy.async`` (a ``Fence`` or ``Await``
whose second timeline is ``cuda_generic_and_async_proxy``); their PTX is ``SYNC_PTX``.
"""

from __future__ import annotations

from functools import lru_cache

from ..ir.memories import Sm90_SmemSwizzled, Sm90_tensorMap  # noqa: F401
from ..ir.types import bf16, f16, f32
from . import _tma
from ._epilogue import Sm90_store_acc
from ._ptx import SYNC_PTX, renamed
from ._tma import Sm90_tensorMapAny
from ._wgmma import (N_VALUES, Sm90_RmemMatrixA, Sm90_RmemMatrixD, Sm90_wgmma_rs,
                     Sm90_wgmma_ss, Sm90_wgmma_zero, native_k)

_TYPES = (f32, bf16, f16)


@lru_cache(maxsize=None)
def Sm90_tma_load(rank: int, T):
    """``tma_load_{rank}d_{T}``: tensor-map window -> SMEM tile, completes on an mbarrier."""
    return renamed(_tma.LOADS[rank](T), f"tma_load_{rank}d_{T.name}")


@lru_cache(maxsize=None)
def Sm90_tma_multicast(rank: int, T, ncta: int, cta_stride: int = 1):
    """Multicast load into every CTA of ``ncta`` cluster ranks spaced ``cta_stride`` apart."""
    if ncta not in (2, 4, 8, 16) or ncta * cta_stride > 16:
        raise TypeError(f"multicast needs 2, 4, 8 or 16 CTAs within a 16-CTA cluster, not "
                        f"ncta={ncta}, cta_stride={cta_stride}")
    sfx = "" if cta_stride == 1 else f"_s{cta_stride}"
    return renamed(_tma.MULTICASTS[rank](T, ncta, cta_stride),
                   f"tma_multicast_{rank}d_{T.name}_x{ncta}{sfx}")


@lru_cache(maxsize=None)
def Sm90_tma_store(rank: int, T):
    """``tma_store_{rank}d_{T}``: SMEM tile -> tensor-map window (bulk commit group)."""
    return renamed(_tma.STORES[rank](T, False), f"tma_store_{rank}d_{T.name}")


@lru_cache(maxsize=None)
def Sm90_tma_reduce_add(rank: int, T):
    """``tma_reduce_add_{rank}d_{T}``: tensor-map window += SMEM tile, atomically."""
    return renamed(_tma.STORES[rank](T, True), f"tma_reduce_add_{rank}d_{T.name}")


__all__ = ["Sm90_RmemMatrixA", "Sm90_RmemMatrixD", "Sm90_tensorMapAny", "Sm90_SmemSwizzled",
           "Sm90_tensorMap", "Sm90_tma_load", "Sm90_tma_multicast", "Sm90_tma_store",
           "Sm90_tma_reduce_add", "Sm90_wgmma_ss", "Sm90_wgmma_rs", "Sm90_wgmma_zero",
           "Sm90_store_acc", "SYNC_PTX", "native_k"]
INSTRS: dict = {}


def _export(p):
    globals()[p.name] = p
    __all__.append(p.name)
    INSTRS[p.name] = p


for _T in _TYPES:
    for _r in range(1, 6):
        _export(Sm90_tma_load(_r, _T))
        _export(Sm90_tma_store(_r, _T))
        _export(Sm90_tma_reduce_add(_r, _T))
    for _r in range(1, 4):
        for _c in (2, 4):
            _export(Sm90_tma_multicast(_r, _T, _c))
    for _N in N_VALUES:
        _export(Sm90_wgmma_ss(_T, _N))
        _export(Sm90_wgmma_rs(_T, _N))
    if _T.nbytes == 2:  # MN-major operands: 16-bit types; an N-major B spans whole 64-atoms
        for _N in N_VALUES:
            _export(Sm90_wgmma_ss(_T, _N, major_a="MN"))
        for _N in range(64, 257, 64):
            _export(Sm90_wgmma_ss(_T, _N, major_b="MN"))
            _export(Sm90_wgmma_ss(_T, _N, major_a="MN", major_b="MN"))
            _export(Sm90_wgmma_rs(_T, _N, major_b="MN"))
for _N in N_VALUES:
    _export(Sm90_wgmma_zero(_N))
for _T in _TYPES:
    _export(Sm90_store_acc(_T))
