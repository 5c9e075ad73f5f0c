"""Static layout of a kernel's dynamic shared memory.

The arithmetic lives in ``exogpu_verify.analysis.smem_layout`` (the checker's resource and
alignment checks use the same layout, so what is proven is what is generated); this module
turns its errors into codegen's and names the per-architecture limit.
"""

from __future__ import annotations

from exogpu_verify.analysis import smem_layout as _L
from exogpu_verify.analysis.smem_layout import SmemLayout, align_of  # noqa: F401
from exogpu_verify.platforms.limits import LIMITS

from .errors import not_supported

#: usable dynamic shared memory per CTA (bytes): sm_90 227 KB, sm_80 163 KB
SMEM_LIMIT = {arch: lim.smem_per_cta for arch, lim in LIMITS.items()}


def shard_shape(shape, ndist: int, node) -> list[int]:
    try:
        return _L.shard_shape(shape, ndist, node)
    except _L.LayoutError as e:
        raise not_supported(e.what, e.node) from None


def plan_smem(body, prefix, field_name, shardings: dict, bar_slots: dict) -> SmemLayout:
    """Offsets for every SMEM allocation (by path) and mbarrier array in a kernel body."""
    try:
        return _L.plan_smem(body, prefix, field_name, shardings, bar_slots)
    except _L.LayoutError as e:
        raise not_supported(e.what, e.node) from None
