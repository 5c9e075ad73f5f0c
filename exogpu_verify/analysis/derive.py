"""Tiling derivations: the collective of a ``cuda_threads`` body, a ``CudaWarps`` block and a
distributed instruction operand, plus the per-iterator inverse formulas codegen reads.

Each derivation takes a ``Collective`` (``tiling.py``), refines it against the unit
(``align``) and restricts one grid dimension; failures raise ``TilingError``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir.units import CollUnit, cuda_cta_in_cluster, cuda_thread, cuda_warp, cuda_warpgroup
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
    """``for it in cuda_threads(0, n, unit=unit)`` at ``coll``: the body's collective. A loop
    that does not fit the scope (too many tiles, a unit too large or not aligned there) is
    a ``TilingError`` whose hint names loops that do fit (``fit_hint``)."""
    try:
        return _derive_loop(coll, it, n, unit)
    except TilingError as e:
        if e.hint is not None or e.reason not in ("threads", "alignment"):
            raise
        raise TilingError(e.reason, e.message, fit_hint(coll, it, n, unit, e.reason)) \
            from None


def _derive_loop(coll: Collective, it: str, n: int, unit: CollUnit
                 ) -> tuple[Collective, ThreadIter]:
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


def _fits(coll: Collective, it: str, n: int, unit: CollUnit) -> bool:
    try:
        _derive_loop(coll, it, n, unit)
    except TilingError:
        return False
    return True


def _unit_of(t: int, coll: Collective) -> CollUnit:
    """The user's spelling of a unit of ``t`` contiguous threads."""
    if t == coll.block_dim and coll.cluster_dim > 1:
        return cuda_cta_in_cluster
    for base, bt in ((cuda_warpgroup, 128), (cuda_warp, 32)):
        if t % bt == 0:
            return base if t == bt else base * (t // bt)
    return cuda_thread if t == 1 else cuda_thread * t


def fit_hint(coll: Collective, it: str, n: int, unit: CollUnit, reason: str) -> str:
    """How to write ``cuda_threads(0, n, unit=unit)`` so that it fits ``coll``: the most
    tiles of ``unit`` the scope holds, and ``n`` tiles of the largest smaller unit that
    fits; each suggestion is a loop that ``derive_loop`` accepts here."""
    need = unit_threads(unit, coll.block_dim, coll.cluster_dim) or 0
    have = coll.size
    # fewer tiles: as many as there is room for (else one)
    most = min(n - 1, have // need) if need else 0
    k = next((m for m in (most, 1) if 0 < m < n and _fits(coll, it, m, unit)), 0)
    # as many tiles of a smaller unit: the largest that fits, of the units people write
    alt, cap = None, have // n
    for t in sorted({cap, coll.block_dim} | {1 << j for j in range(11)}, reverse=True):
        if 0 < t <= cap and (t < need or not need) and _fits(coll, it, n, _unit_of(t, coll)):
            alt = _unit_of(t, coll)
            break
    loops = []
    if k:
        loops.append(f"cuda_threads(0, {k}, unit={unit})")
    if alt is not None:
        loops.append(f"cuda_threads(0, {n}, unit={alt})"
                     + (" for a smaller tile" if n == 1 else f" for {n} smaller tiles"))
    each = f"{need} thread{'s' if need != 1 else ''}"
    if reason == "alignment":
        what = f"instances of {unit} ({each}) are not aligned with this scope ({coll.shape()})"
        other = f"make the enclosing tiles a multiple of {need} threads"
    elif k:
        what = f"this scope has {have} threads, room for {k} x {unit} ({each} each), not {n}"
        other = _launch(coll, n, unit, need)
    else:
        what = f"a {unit} ({each}) does not fit in this scope ({coll.shape()})"
        other = (f"put the loop outside the enclosing cuda_threads/CudaWarps, where a whole "
                 f"{unit} runs")
    fixes = ", or ".join(loops + [other] if other else loops)
    return f"{what}: use {fixes}" if loops else f"{what}: {fixes}"


def _launch(coll: Collective, n: int, unit: CollUnit, need: int) -> str:
    """The launch that gives a whole-kernel scope room for ``n`` tiles of ``unit``."""
    if coll.size != coll.total:
        return ""
    if unit == cuda_cta_in_cluster and n & (n - 1) == 0:
        return f"launch clusterDim={n}"
    if coll.cluster_dim == 1 and n * need <= 1024 and n * need % 32 == 0:
        return f"launch blockDim={n * need}"
    return ""


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
                          f"{coll.shape()}",
                          hint="put the CudaWarps outside the cuda_threads loops over units "
                               "smaller than a cuda_warp")
    wd = [i for i, d in enumerate(c2.dims) if 32 <= d.pitch < b]
    if not wd:  # a one-warp CTA
        return c2, GridDim(1, 32, Affine(), 1), -1
    return c2, c2.dims[wd[0]], wd[0]


def specialize_warps(coll: Collective, lo: int, hi: int, base: int = 0,
                     name: str | None = None) -> tuple[Collective, WarpRange]:
    """Restrict ``coll`` to its warps ``[base + lo, base + hi)`` (relative to its first warp)."""
    c2, wd, j = warp_span(coll)
    if base + hi > wd.length:
        have = wd.length - base
        raise TilingError("warps", f"CudaWarps({lo}, {hi}) is out-of-range: the scope has "
                          f"{have} warp(s)"
                          + (" (trivial tiling: only CudaWarps(0, 1) is allowed)"
                             if wd.length == 1 else ""),
                          hint=f"use CudaWarps(lo, hi) with 0 <= lo < hi <= {have}")
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
