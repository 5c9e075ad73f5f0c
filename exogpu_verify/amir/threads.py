"""Concrete thread collectives for the abstract machine.

Inside one device task (a cluster) a collective is a bitmask over natural thread ids
``cta_rank * blockDim + threadIdx.x``. ``tile`` splits a collective into ``n`` tiles of a
collective unit the way the collective analysis does (paper 4; notes 4.1): the unit's domain
is completed with a leading dimension to cover the cluster, the collective must be an aligned
box in that domain, and exactly one dimension may be subdivided. ``warps`` restricts a
collective to a warp range (``CudaWarps``).
"""

from __future__ import annotations

from functools import lru_cache

from ..ir.nodes import CudaDeviceFunction, CudaWarps
from ..ir.units import CollUnit


class CollectiveError(Exception):
    """A collective cannot be tiled as asked (the static analysis would reject it)."""


def bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def range_mask(lo: int, hi: int) -> int:
    return ((1 << (hi - lo)) - 1) << lo


def _coords(t: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for d in reversed(dims):
        out.append(t % d)
        t //= d
    return tuple(reversed(out))


def _dims(unit: CollUnit, bd: int, cd: int):
    total = bd * cd
    D = []
    for d in unit.domain:
        v = d.evaluate(bd, cd)
        if v.denominator != 1 or v <= 0:
            raise CollectiveError(f"{unit} domain has divisibility issue with blockDim={bd}, "
                                  f"clusterDim={cd} (alignment)")
        D.append(int(v))
    B = []
    for b in unit.box:
        if b is None:
            B.append(None)
            continue
        v = b.evaluate(bd, cd)
        if v.denominator != 1:
            raise CollectiveError(f"{unit} box has divisibility issue with blockDim={bd} "
                                  "(alignment)")
        B.append(int(v))
    prod = 1
    for d in D:
        prod *= d
    if total % prod:
        raise CollectiveError(f"{unit} does not tile {total} threads (alignment)")
    if total // prod > 1:
        D.insert(0, total // prod)
        B.insert(0, 1)
    return tuple(D), tuple(B)


@lru_cache(maxsize=65536)
def tile(mask: int, unit: CollUnit, n: int, bd: int, cd: int) -> tuple[int, ...]:
    """Split collective ``mask`` into ``n`` tiles of ``unit``; raises ``CollectiveError``."""
    D, B = _dims(unit, bd, cd)
    tids = bits(mask)
    cs = [_coords(t, D) for t in tids]
    lo = [min(c[j] for c in cs) for j in range(len(D))]
    hi = [max(c[j] for c in cs) + 1 for j in range(len(D))]
    size = 1
    for a, b in zip(lo, hi):
        size *= b - a
    if size != len(tids):
        raise CollectiveError(f"the executing threads do not form a box in the domain of {unit} "
                              "(alignment)")
    counts, boxes = [], []
    for j in range(len(D)):
        ext = hi[j] - lo[j]
        b = B[j] if B[j] is not None else ext
        if b > ext:
            raise CollectiveError(f"not enough threads: {unit} needs "
                                  f"{unit.threads(bd, cd)} threads, the collective has "
                                  f"{len(tids)}")
        if ext % b or lo[j] % b:
            raise CollectiveError(f"thread alignment issue tiling {len(tids)} threads by {unit}")
        counts.append(ext // b)
        boxes.append(b)
    tiled = [j for j, c in enumerate(counts) if c > 1]
    if len(tiled) > 1:
        raise CollectiveError(f"ambiguous dimension to tile for {unit}")
    if not tiled:
        if n != 1:
            raise CollectiveError(f"not enough threads: only one {unit} tile is available, "
                                  f"asked for {n}")
        return (mask,)
    j = tiled[0]
    if n > counts[j]:
        raise CollectiveError(f"not enough threads available for {n} x {unit}: "
                              f"max_tile_count={counts[j]}")
    out = []
    for i in range(n):
        a = lo[j] + i * boxes[j]
        m = 0
        for t, c in zip(tids, cs):
            if a <= c[j] < a + boxes[j]:
                m |= 1 << t
        out.append(m)
    return tuple(out)


@lru_cache(maxsize=4096)
def warps(mask: int, ctx: CudaWarps, cfg: CudaDeviceFunction, top_level: bool) -> int:
    """Threads of ``mask`` in warps [lo, hi) (of the named group) of each CTA."""
    bd = cfg.blockDim
    out = 0
    per_cta: dict[int, list[int]] = {}
    for t in bits(mask):
        per_cta.setdefault(t // bd, []).append(t)
    for cta, ts in per_cta.items():
        ws = sorted({(t % bd) // 32 for t in ts})
        if ctx.name is not None and top_level:
            rng = cfg.warp_range(ctx.name)
            if rng is None:
                raise CollectiveError(f"no warp group named {ctx.name!r} in warp_config")
            ws = [w for w in ws if rng[0] <= w < rng[1]]
        if ctx.lo is not None:
            if ctx.hi > len(ws):
                raise CollectiveError(f"CudaWarps({ctx.lo}, {ctx.hi}) out-of-range: only "
                                      f"{len(ws)} warps available")
            ws = ws[ctx.lo:ctx.hi]
        for w in ws:
            out |= range_mask(cta * bd + 32 * w, cta * bd + 32 * w + 32) & mask
    return out


def runs_text(ids, limit: int | None = None) -> str:
    """``ids`` (any order) as maximal runs of consecutive ids, ``"0-31, 64, 96-127"``; with
    ``limit``, the first ``limit`` runs and then ``", ..."``."""
    ts = sorted(ids)
    if not ts:
        return ""
    runs, start, prev = [], ts[0], ts[0]
    for t in ts[1:]:
        if t != prev + 1:
            runs.append((start, prev))
            start = t
        prev = t
    runs.append((start, prev))
    shown = runs if limit is None else runs[:limit]
    txt = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in shown)
    return txt + (", ..." if len(shown) < len(runs) else "")
