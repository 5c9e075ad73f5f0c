"""Static layout of a kernel's dynamic shared memory.

mbarriers live for the whole kernel (they are initialized once, and their phases carry across
tasks), so they are placed first, 8-byte aligned. Data allocations follow with a stack
discipline that mirrors their lifetimes: an allocation lives until the end of its block, so
siblings reuse the same bytes (the language requires every access to be ordered before the
free, which the checker proves). Alignment is 128 bytes, and the swizzle period for
``Sm90_SmemSwizzled(S)`` tiles (8 rows of S bytes: 1024 for the 128-byte swizzle), because
TMA and wgmma compute the swizzle from address bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import const_value

from .errors import not_supported

#: usable dynamic shared memory per CTA (bytes): sm_90 227 KB, sm_80 163 KB
SMEM_LIMIT = {"sm_90a": 232448, "sm_80": 166912}


def align_of(mem) -> int:
    if mem.name == "Sm90_SmemSwizzled":
        return max(128, 8 * mem.args[0])
    return 128


@dataclass
class SmemLayout:
    offsets: dict = field(default_factory=dict)   # alloc path -> byte offset
    bar_offsets: dict = field(default_factory=dict)  # barrier alloc path -> byte offset
    size: int = 0
    max_align: int = 8

    @property
    def bytes_needed(self) -> int:
        """Dynamic SMEM to request: the layout plus slack to align the base at run time."""
        if self.size == 0:
            return 0
        return self.size + (self.max_align if self.max_align > 128 else 0)


def _round(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def shard_shape(shape, ndist: int, node) -> list[int]:
    out = []
    for e in shape[ndist:]:
        v = const_value(e)
        if v is None:
            raise not_supported("a device allocation with a non-constant extent", node)
        out.append(v)
    return out


def plan_smem(body, prefix, field_name, shardings: dict, bar_slots: dict) -> SmemLayout:
    """Offsets for every SMEM allocation (by path) and mbarrier array in a kernel body.
    ``shardings``: alloc path -> number of distributed dims; ``bar_slots``: barrier alloc
    path -> number of physical mbarriers per CTA."""
    lay = SmemLayout()
    top = 0
    for path, n in bar_slots.items():
        lay.bar_offsets[path] = top
        top += 8 * n
    base = _round(top, 128) if top else 0

    def block(stmts, pre, fld, top):
        peak = top
        for i, s in enumerate(stmts):
            path = pre + ((fld, i),)
            if isinstance(s, N.Alloc) and s.mem.is_shared:
                nd = shardings.get(path, 0)
                shp = shard_shape(s.type.shape, nd, s)
                a = align_of(s.mem)
                lay.max_align = max(lay.max_align, a)
                top = _round(top, a)
                lay.offsets[path] = top
                top += prod(shp) * s.type.scalar.nbytes
                peak = max(peak, top)
            elif isinstance(s, (N.For, N.With)):
                peak = max(peak, block(s.body, path, "body", top))
            elif isinstance(s, N.If):
                peak = max(peak, block(s.body, path, "body", top),
                           block(s.orelse, path, "orelse", top))
        return peak

    lay.size = max(block(body, prefix, field_name, base), top)
    return lay
