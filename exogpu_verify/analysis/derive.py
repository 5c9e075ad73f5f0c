"""Tiling derivations: the collective of a ``cuda_threads`` body, a ``CudaWarps`` block and a
distributed instruction operand, plus the per-iterator inverse formulas codegen reads.

Each derivation takes a ``Collective`` (``tiling.py``), refines it against the unit
(``align``) and restricts one grid dimension; failures raise ``TilingError``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir.units import CollUnit
from .tiling import Affine, Collective, GridDim, TilingError, align, unit_threads


# ---------------------------------------------------------------- derivations


@dataclass(frozen=True, slots=True)
class ThreadIter:
    """How a ``cuda_threads`` iterator is recovered from the natural thread index.

    ``value = ((tid - offset) // pitch) % modulus`` for threads of the enclosing collective;
    the thread runs iteration ``value`` iff ``value < count``. ``offset`` is affine in the
    enclosing thread iterators; each tile has ``tile_threads`` threads.
    """

    name: str
    unit: CollUnit
    count: int
    pitch: int
    modulus: int
    offset: Affine
    tile_threads: int

    def value(self, tid: int, env: dict | None = None) -> int | None:
        v = ((tid - self.offset.eval(env or {})) // self.pitch) % self.modulus
        return v if v < self.count else None

    def formula(self) -> str:
        off = f"tid - ({self.offset})" if not self.offset.is_zero else "tid"
        return f"{self.name} = (({off}) // {self.pitch}) % {self.modulus}  [< {self.count}]"


def derive_loop(coll: Collective, it: str, n: int, unit: CollUnit) -> tuple[Collective, ThreadIter]:
    """``for it in cuda_threads(0, n, unit=unit)`` at ``coll``: the body's collective."""
    need = unit_threads(unit, coll.block_dim, coll.cluster_dim)
    c2, boxes = align(coll, unit)
    cands, short = [], False
    for i, (d, b) in enumerate(zip(c2.dims, boxes)):
        if b is None:
            raise TilingError("alignment", f"{unit} has no definite shape to tile with")
        if b > d.length:
            short = True
        elif b < d.length:
            cands.append(i)
        if b <= d.length and not d.start.divisible(b):
            raise TilingError("alignment", f"thread alignment issue: instances of {unit} "
                              f"({need} threads) must start at multiples of {b} threads "
                              f"(pitch {d.pitch}), but the scope starts at {d.start}")
    have = coll.size
    if short or (not cands and n > 1) or (len(cands) == 1 and
                                           n * boxes[cands[0]] > c2.dims[cands[0]].length):
        raise TilingError("threads", f"not enough threads for cuda_threads(0, {n}, "
                          f"unit={unit}): needs {n * need} threads, the scope has {have}")
    ranges = coll.ranges + ((it, n),)
    if not cands:  # trivial tiling: the scope already is one instance
        ti = ThreadIter(it, unit, 1, coll.total, 1, Affine(), need)
        return replace(c2, ranges=ranges).normalize(), ti
    if len(cands) > 1:
        raise TilingError("ambiguous", f"ambiguous dimension to tile for cuda_threads(0, {n}, "
                          f"unit={unit}): the scope ({coll.shape()}) differs from {unit} in "
                          f"{len(cands)} dimensions",
                          hint="tile in steps, e.g. first by cuda_cta_in_cluster")
    j = cands[0]
    d, b = c2.dims[j], boxes[j]
    ti = ThreadIter(it, unit, n, d.pitch * b, d.extent // b, d.start.scale(d.pitch), need)
    nd = GridDim(d.extent, d.pitch, d.start + Affine.var(it, b), b)
    dims = c2.dims[:j] + (nd,) + c2.dims[j + 1:]
    return Collective(dims, coll.block_dim, coll.cluster_dim, ranges).normalize(), ti


@dataclass(frozen=True, slots=True)
class WarpRange:
    """The warps a ``CudaWarps`` block selects in each CTA: ``[first, first + count)``."""

    first: Affine
    count: int
    name: str | None


def warp_span(coll: Collective) -> tuple[Collective, GridDim, int]:
    """The collective with its warp dimension (pitch 32, within the CTA) made explicit."""
    b = coll.block_dim
    c2 = coll.refine({32, b}).merge(32, b)
    lanes = [d for d in c2.dims if d.pitch < 32]
    if any(not d.full for d in lanes):
        raise TilingError("warps", f"CudaWarps needs whole warps, but the scope is "
                          f"{coll.shape()}")
    wd = [i for i, d in enumerate(c2.dims) if 32 <= d.pitch < b]
    if not wd:  # a one-warp CTA
        return c2, GridDim(1, 32, Affine(), 1), -1
    return c2, c2.dims[wd[0]], wd[0]


def specialize_warps(coll: Collective, lo: int, hi: int, base: int = 0,
                     name: str | None = None) -> tuple[Collective, WarpRange]:
    """Restrict ``coll`` to its warps ``[base + lo, base + hi)`` (relative to its first warp)."""
    c2, wd, j = warp_span(coll)
    if base + hi > wd.length:
        raise TilingError("warps", f"CudaWarps({lo}, {hi}) is out-of-range: the scope has "
                          f"{wd.length - base} warp(s)"
                          + (" (trivial tiling: only CudaWarps(0, 1) is allowed)"
                             if wd.length == 1 else ""))
    first = wd.start + (base + lo)
    if j < 0:
        return c2.normalize(), WarpRange(first, 1, name)
    nd = GridDim(wd.extent, wd.pitch, first, hi - lo)
    dims = c2.dims[:j] + (nd,) + c2.dims[j + 1:]
    return replace(c2, dims=dims).normalize(), WarpRange(first, hi - lo, name)


def derive_partition(coll: Collective, it: str, n: int, unit: CollUnit
                     ) -> tuple[Collective, ThreadIter]:
    """Split ``coll`` by the ``unit`` instance each thread belongs to, into exactly ``n``
    parts: the callee-side view of an instruction operand sharded per ``unit`` (e.g. a TMA
    multicast issued by one warp per CTA, with one destination shard per CTA). Unlike
    ``derive_loop`` the parts need not be whole instances."""
    c2, boxes = align(coll, unit)
    cands = [i for i, (d, b) in enumerate(zip(c2.dims, boxes)) if b is not None and b < d.length]
    ranges = coll.range_dict
    for i, (d, b) in enumerate(zip(c2.dims, boxes)):
        if i in cands or b is None or b == d.extent:
            continue
        inner = Affine(d.start.const % b, tuple((v, c) for v, c in d.start.terms if c % b))
        lo, hi = inner.bounds(ranges)
        if lo < 0 or hi + d.length > b:
            raise TilingError("alignment", f"thread alignment issue: the collective "
                              f"({coll.shape()}) straddles instances of {unit}")
    if len(cands) != 1:
        if not cands and n == 1:
            return replace(c2, ranges=coll.ranges + ((it, 1),)), ThreadIter(
                it, unit, 1, coll.total, 1, Affine(), coll.size)
        raise TilingError("ambiguous", f"the collective ({coll.shape()}) does not split into "
                          f"{n} instance(s) of {unit} along one dimension")
    j = cands[0]
    d, b = c2.dims[j], boxes[j]
    if d.length % b or not d.start.divisible(b) or d.length // b != n:
        raise TilingError("threads", f"the collective ({coll.shape()}) spans "
                          f"{d.length / b:g} instance(s) of {unit}, not {n}")
    ti = ThreadIter(it, unit, n, d.pitch * b, d.extent // b, d.start.scale(d.pitch),
                    coll.size // n)
    nd = GridDim(d.extent, d.pitch, d.start + Affine.var(it, b), b)
    dims = c2.dims[:j] + (nd,) + c2.dims[j + 1:]
    return Collective(dims, coll.block_dim, coll.cluster_dim,
                      coll.ranges + ((it, n),)).normalize(), ti
