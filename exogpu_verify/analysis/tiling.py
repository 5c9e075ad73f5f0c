"""Collective tilings (paper Section 4; reference notes 4.1) for concrete launch shapes.

Inside a ``CudaDeviceFunction`` the launch shape (``blockDim``, ``clusterDim``) is a known
integer, so a collective tiling is concrete data: the natural thread index space of a cluster
(``tid = cta_rank * blockDim + threadIdx.x``) is viewed as a mixed-radix *grid* of dimensions
(C order, each with an extent and a thread *pitch*), and the collective that runs a scope is a
*box* of that grid: in every dimension an interval ``[start, start + length)`` whose start is
an affine function of the enclosing ``cuda_threads`` iterators. The thread set for an
environment is ``{ sum_m pitch_m * (start_m + x_m) : 0 <= x_m < length_m }``.

A collective unit is completed to the same kind of grid (a domain and an aligned box). To
compare a scope with a unit, both grids are refined to the union of their boundaries (domain
completion); a refinement that would cut an interval unevenly is an *alignment* failure. The
derivations built on this (``derive.py``): a ``cuda_threads`` loop tiles the single dimension
where the unit's box is smaller than the scope's (``derive_loop``); ``CudaWarps`` selects a
warp range within each CTA (``specialize_warps``). Every failure raises ``TilingError``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import product

from ..ir.units import CollUnit


class TilingError(Exception):
    """A tiling rule is violated; ``reason`` in alignment | threads | ambiguous | warps."""

    def __init__(self, reason: str, message: str, hint: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.hint = hint


# ---------------------------------------------------------------- affine starts


@dataclass(frozen=True, slots=True)
class Affine:
    """``const + sum(coef * var)`` over thread-loop iterators (terms sorted, non-zero)."""

    const: int = 0
    terms: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def var(name: str, coef: int = 1) -> "Affine":
        return Affine(0, ((name, coef),)) if coef else Affine()

    def __add__(self, other: "Affine | int") -> "Affine":
        if isinstance(other, int):
            return Affine(self.const + other, self.terms)
        acc = dict(self.terms)
        for k, v in other.terms:
            acc[k] = acc.get(k, 0) + v
        return Affine(self.const + other.const, tuple(sorted((k, v) for k, v in acc.items() if v)))

    def scale(self, k: int) -> "Affine":
        if k == 0:
            return Affine()
        return Affine(self.const * k, tuple((n, c * k) for n, c in self.terms))

    def divisible(self, f: int) -> bool:
        return self.const % f == 0 and all(c % f == 0 for _, c in self.terms)

    def div(self, f: int) -> "Affine":
        assert self.divisible(f)
        return Affine(self.const // f, tuple((n, c // f) for n, c in self.terms))

    def eval(self, env: dict) -> int:
        return self.const + sum(c * int(env.get(n, 0)) for n, c in self.terms)

    def bounds(self, ranges: dict[str, int]) -> tuple[int, int]:
        lo = hi = self.const
        for n, c in self.terms:
            span = c * (ranges.get(n, 1) - 1)
            lo, hi = (lo + span, hi) if span < 0 else (lo, hi + span)
        return lo, hi

    @property
    def is_zero(self) -> bool:
        return self.const == 0 and not self.terms

    def isl(self) -> str:
        parts = [f"{c}*{n}" for n, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts).replace("+ -", "- ")

    def __str__(self) -> str:
        parts = [n if c == 1 else f"{c} * {n}" for n, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


# ---------------------------------------------------------------- the grid


@dataclass(frozen=True, slots=True)
class GridDim:
    """One grid dimension: ``extent`` coordinates at thread ``pitch``; the scope's interval."""

    extent: int
    pitch: int
    start: Affine
    length: int

    @property
    def full(self) -> bool:
        return self.start.is_zero and self.length == self.extent


@dataclass(frozen=True, slots=True)
class Collective:
    """The thread collective of a scope, as a function of the thread iterators in ``ranges``."""

    dims: tuple[GridDim, ...]
    block_dim: int
    cluster_dim: int
    ranges: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def root(block_dim: int, cluster_dim: int) -> "Collective":
        """The whole cluster: 1-D ``(blockDim,)`` if ``clusterDim == 1`` else 2-D."""
        dims = [GridDim(block_dim, 1, Affine(), block_dim)]
        if cluster_dim > 1:
            dims.insert(0, GridDim(cluster_dim, block_dim, Affine(), cluster_dim))
        return Collective(tuple(dims), block_dim, cluster_dim)

    @property
    def total(self) -> int:
        return self.block_dim * self.cluster_dim

    @property
    def size(self) -> int:
        n = 1
        for d in self.dims:
            n *= d.length
        return n

    @property
    def range_dict(self) -> dict[str, int]:
        return dict(self.ranges)

    def boundaries(self) -> set[int]:
        return {d.pitch for d in self.dims} | {self.total}

    def threads(self, env: dict) -> range | frozenset:
        """Natural thread ids of the collective for concrete iterator values ``env``."""
        live = [(d.pitch, d.start.eval(env), d.length) for d in self.dims if d.length > 1]
        base = sum(d.pitch * d.start.eval(env) for d in self.dims if d.length == 1)
        if not live:
            return range(base, base + 1)
        if len(live) == 1:
            p, s, n = live[0]
            return range(base + p * s, base + p * (s + n), p)
        out = []
        for xs in product(*(range(s, s + n) for _, s, n in live)):
            out.append(base + sum(p * x for (p, _, _), x in zip(live, xs)))
        return frozenset(out)

    def first_thread(self, env: dict) -> int:
        return sum(d.pitch * d.start.eval(env) for d in self.dims)

    def shape(self) -> str:
        """People's description: ``32 threads`` plus the box when it is not contiguous."""
        n = self.size
        live = [d for d in self.dims if d.length > 1]
        if len(live) <= 1 and (not live or live[0].pitch == 1):
            return f"{n} thread{'s' if n != 1 else ''}"
        box = " x ".join(f"{d.length}@pitch {d.pitch}" for d in live)
        return f"{n} threads ({box})"

    # ------------------------------------------------------------ refinement
    def refine(self, bounds: set[int]) -> "Collective":
        """Split dimensions so that every boundary in ``bounds`` is a dimension boundary."""
        dims = list(self.dims)
        ranges = self.range_dict
        for b in sorted(bounds):
            if b >= self.total or any(d.pitch == b for d in dims):
                continue
            for i, d in enumerate(dims):
                if d.pitch < b < d.pitch * d.extent:
                    if b % d.pitch or (d.pitch * d.extent) % b:
                        raise TilingError("alignment", f"thread alignment issue: a boundary at "
                                          f"{b} threads cuts a dimension of {d.extent} x "
                                          f"{d.pitch} threads")
                    dims[i:i + 1] = _split(d, b // d.pitch, ranges)
                    break
        return replace(self, dims=tuple(dims))

    def normalize(self) -> "Collective":
        """Merge adjacent dimensions whenever the thread set stays a box (the inner one is
        full, or the outer one has length 1): the coarsest grid, so the "one dimension
        differs" test of a later derivation sees only the boundaries that matter."""
        dims = list(self.dims)
        i = len(dims) - 2
        while i >= 0:
            a, b = dims[i], dims[i + 1]
            if b.full:
                m = GridDim(a.extent * b.extent, b.pitch, a.start.scale(b.extent),
                            a.length * b.extent)
            elif a.length == 1:
                m = GridDim(a.extent * b.extent, b.pitch, a.start.scale(b.extent) + b.start,
                            b.length)
            else:
                i -= 1
                continue
            dims[i:i + 2] = [m]
            i = min(i, len(dims) - 2)
        return replace(self, dims=tuple(dims))

    def merge(self, lo: int, hi: int) -> "Collective":
        """Merge the dimensions with pitches in ``[lo, hi)`` into one (or raise)."""
        idx = [i for i, d in enumerate(self.dims) if lo <= d.pitch < hi]
        if len(idx) <= 1:
            return self
        acc = self.dims[idx[-1]]
        for i in reversed(idx[:-1]):
            d = self.dims[i]
            if acc.full:
                acc = GridDim(d.extent * acc.extent, acc.pitch, d.start.scale(acc.extent),
                              d.length * acc.extent)
            elif d.length == 1:
                acc = GridDim(d.extent * acc.extent, acc.pitch,
                              d.start.scale(acc.extent) + acc.start, acc.length)
            else:
                raise TilingError("alignment", "the collective is not a contiguous range of "
                                  f"threads between pitches {lo} and {hi}")
        dims = self.dims[:idx[0]] + (acc,) + self.dims[idx[-1] + 1:]
        return replace(self, dims=dims)


def _split(d: GridDim, f: int, ranges: dict[str, int]) -> list[GridDim]:
    """Split ``d`` into (extent/f at pitch*f, f at pitch); the interval must split exactly."""
    outer_e = d.extent // f
    if d.length % f == 0:
        if not d.start.divisible(f):
            raise TilingError("alignment", f"thread alignment issue: a range of {d.length} "
                              f"starting at {d.start} is not aligned to {f}")
        return [GridDim(outer_e, d.pitch * f, d.start.div(f), d.length // f),
                GridDim(f, d.pitch, Affine(), f)]
    if d.length < f:
        outer = Affine(d.start.const // f,
                       tuple((n, c // f) for n, c in d.start.terms if c % f == 0))
        inner = Affine(d.start.const % f, tuple((n, c) for n, c in d.start.terms if c % f))
        lo, hi = inner.bounds(ranges)
        if lo >= 0 and hi + d.length <= f:
            return [GridDim(outer_e, d.pitch * f, outer, 1), GridDim(f, d.pitch, inner, d.length)]
    raise TilingError("alignment", f"thread alignment issue: a range of {d.length} starting at "
                      f"{d.start} straddles groups of {f}")


# ---------------------------------------------------------------- units


@lru_cache(maxsize=256)
def unit_grid(unit: CollUnit, block_dim: int,
              cluster_dim: int) -> tuple[tuple[int, int, int | None], ...]:
    """The unit's completed domain as ``(extent, pitch, box)`` triples, C order."""
    total = block_dim * cluster_dim
    exts, boxes = [], []
    for dom, box in zip(unit.domain, unit.box):
        e = dom.evaluate(block_dim, cluster_dim)
        b = None if box is None else box.evaluate(block_dim, cluster_dim)
        if e.denominator != 1 or e < 1 or (b is not None and (b.denominator != 1 or b < 1)):
            raise TilingError("alignment", f"Invalid alignment for {unit}: {dom} has "
                              f"divisibility issue with blockDim={block_dim}, "
                              f"clusterDim={cluster_dim}", hint="change clusterDim/blockDim?")
        if b is not None and e % b:
            raise TilingError("alignment", f"Invalid alignment for {unit}: box {b} does not "
                              f"divide domain {e} (blockDim={block_dim}, clusterDim="
                              f"{cluster_dim}: the {unit} instances must tile it)",
                              hint=f"make the {'block' if e <= block_dim else 'cluster'}'s "
                                   f"thread count a multiple of {b} (change "
                                   "clusterDim/blockDim)")
        exts.append(int(e))
        boxes.append(None if b is None else int(b))
    n = 1
    for e in exts:
        n *= e
    if total % n:
        raise TilingError("alignment", f"Invalid alignment for {unit}: domain of {n} threads "
                          f"does not divide the cluster's {total} threads")
    if n < total:
        exts.insert(0, total // n)
        boxes.insert(0, 1)
    out, pitch = [], 1
    for e, b in reversed(list(zip(exts, boxes))):
        if e > 1:
            out.append((e, pitch, b))
        pitch *= e
    return tuple(reversed(out))


def unit_threads(unit: CollUnit, block_dim: int, cluster_dim: int) -> int | None:
    return unit.threads(block_dim, cluster_dim)


def _refine_unit(ug: list, bounds: set[int]) -> dict[int, tuple[int, int | None]]:
    """Unit dims keyed by pitch after splitting at ``bounds``: pitch -> (extent, box)."""
    dims = list(ug)
    for b in sorted(bounds):
        for i, (e, p, box) in enumerate(dims):
            if p < b < p * e:
                if b % p or (p * e) % b:
                    raise TilingError("alignment", f"thread alignment issue: the unit's "
                                      f"dimension of {e} x {p} threads is cut at {b}")
                f = b // p
                if box is None:
                    nb = (None, None)
                elif box % f == 0:
                    nb = (box // f, f)
                elif f % box == 0:
                    nb = (1, box)
                else:
                    raise TilingError("alignment", f"thread alignment issue: a unit box of "
                                      f"{box} cannot be split in groups of {f}")
                dims[i:i + 1] = [(e // f, p * f, nb[0]), (f, p, nb[1])]
                break
    return {p: (e, box) for e, p, box in dims}


def align(coll: Collective, unit: CollUnit) -> tuple[Collective, list[int | None]]:
    """Refine ``coll`` and ``unit`` to common dims; returns the refined collective and the
    unit's box per dimension (``None`` where the unit is agnostic)."""
    ug = unit_grid(unit, coll.block_dim, coll.cluster_dim)
    ubounds = {p for _, p, _ in ug} | {coll.total}
    c2 = coll.refine(ubounds)
    ud = _refine_unit(ug, c2.boundaries())
    boxes = []
    for d in c2.dims:
        e, box = ud.get(d.pitch, (d.extent, 1))
        if e != d.extent:
            raise TilingError("alignment", f"thread alignment issue between {unit} and the "
                              "scope's tiling")
        boxes.append(box)
    return c2, boxes


def matches(coll: Collective, unit: CollUnit) -> bool:
    """The collective is exactly one aligned instance of ``unit`` (for every environment)."""
    try:
        c2, boxes = align(coll, unit)
    except TilingError:
        return False
    for d, b in zip(c2.dims, boxes):
        if b is None:
            continue
        if d.length != b or not d.start.divisible(b):
            return False
    return True


def within_one(coll: Collective, unit: CollUnit) -> bool:
    """Every environment's threads lie inside a single instance of ``unit``."""
    try:
        ug = unit_grid(unit, coll.block_dim, coll.cluster_dim)
        c2 = coll.refine({p for _, p, _ in ug} | {coll.total})
        ud = _refine_unit(ug, c2.boundaries())
    except TilingError:
        return False
    ranges = coll.range_dict
    for d in c2.dims:
        e, b = ud.get(d.pitch, (d.extent, 1))
        if b is None or b == e:
            continue
        if d.length > b:
            return False
        if d.start.divisible(b):
            continue
        lo, hi = Affine(d.start.const % b,
                        tuple((n, c) for n, c in d.start.terms if c % b)).bounds(ranges)
        if lo < 0 or hi + d.length > b:
            return False
    return True


def covers_whole(coll: Collective, unit: CollUnit) -> bool:
    """The collective is a union of whole, aligned instances of ``unit``."""
    try:
        c2, boxes = align(coll, unit)
    except TilingError:
        return False
    for d, b in zip(c2.dims, boxes):
        if b is None:
            continue
        if d.length % b or not d.start.divisible(b):
            return False
    return True


def instance_of(tid: int, unit: CollUnit, block_dim: int, cluster_dim: int) -> tuple[int, ...]:
    """Coordinates of the ``unit`` instance that contains natural thread ``tid``."""
    return tuple((tid // p) % e // (b or e)
                 for e, p, b in unit_grid(unit, block_dim, cluster_dim))
