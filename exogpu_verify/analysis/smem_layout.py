"""Static layout of a kernel's dynamic shared memory (shared by the checker and codegen).

mbarriers live for the whole kernel (they are initialized once, and their phases carry across
tasks), so they are placed first, 8-byte aligned. Data allocations follow with a stack
discipline that mirrors their lifetimes: an allocation lives until the end of its block, so
siblings reuse the same bytes (the language requires every access to be ordered before the
free, which the checker proves). Alignment is 128 bytes, and the swizzle atom for
``Sm90_SmemSwizzled(S)`` tiles (8 rows of S bytes: 1024 for the 128-byte swizzle), because
TMA and wgmma compute the swizzle from address bits. Codegen aligns the base of dynamic
shared memory to the layout's largest alignment, so every offset below is also an address
with that alignment.

``plan_smem`` is the arithmetic (codegen calls it with its own barrier slot counts);
``kernel_smem_layouts`` derives the inputs from the static analyses for the checker's
resource and alignment checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ..ir import nodes as N
from ..ir.affine import const_value
from .walk import Path


class LayoutError(Exception):
    """A device allocation the static layout cannot place (non-constant extent)."""

    def __init__(self, what: str, node):
        super().__init__(what)
        self.what, self.node = what, node


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
            raise LayoutError("a device allocation with a non-constant extent", node)
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


def mbarrier_slots(s: N.BarrierAlloc, ndist: int) -> int | None:
    """Physical mbarriers per CTA of an mbarrier allocation: the product, over its
    non-distributed dimensions, of the ring depth (ring dimensions) or the constant extent;
    None when an extent is not constant (codegen rejects those)."""
    n = 1
    for d in s.dims[ndist:]:
        if d.ring_depth is not None:
            n *= d.ring_depth
        else:
            v = const_value(d.extent)
            if v is None:
                return None
            n *= v
    return n


@dataclass(frozen=True)
class KernelLayout:
    """The SMEM layout of one ``CudaDeviceFunction`` (``kernel`` is its path)."""

    kernel: Path
    config: N.CudaDeviceFunction
    layout: SmemLayout
    srcinfo: object


def task_body(w: N.With, path: Path):
    """The body of the innermost ``cuda_tasks`` loop of kernel ``w`` and its path prefix."""
    body, p = w.body, path + (("body", 0),)
    while len(body) == 1 and isinstance(body[0], N.For) and isinstance(body[0].mode, N.CudaTasks):
        body = body[0].body
        p = p + (("body", 0),)
    return body, p[:-1]


def kernel_smem_layouts(p: N.Procedure, dinfo) -> list[KernelLayout]:
    """The SMEM layout of every kernel of ``p``, laid out exactly as codegen lays it out
    (``dinfo``: the distributed-memory analysis, for the shard shapes). Raises
    ``LayoutError`` for an allocation it cannot place."""
    from .walk import iter_stmts

    shard = {s.path: s.n_distributed for s in dinfo.shardings} if dinfo is not None else {}
    out = []
    for path, s in iter_stmts(p.body):
        if not (isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction)):
            continue
        body, bpath = task_body(s, path)
        slots = {}
        for bp, b in iter_stmts(body, bpath):
            if isinstance(b, N.BarrierAlloc) and b.mech.kind == "mbarrier":
                n = mbarrier_slots(b, shard.get(bp, 0))
                if n is None:
                    raise LayoutError(f"mbarrier '{b.name}' with a non-constant extent that "
                                      "is not a ring buffer", b)
                slots[bp] = n
        lay = plan_smem(body, bpath, "body", shard, slots)
        out.append(KernelLayout(path, s.ctx, lay, s.srcinfo))
    return out
