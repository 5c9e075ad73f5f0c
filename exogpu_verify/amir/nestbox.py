"""Integer boxes for batched access nests (``batch.py``): a box is a tuple of half-open
``(lo, hi)`` ranges, one per array dimension; index arrays are numpy vectors, one entry per
statement instance."""

from __future__ import annotations

import numpy as np


def flat(idx, hull, n):
    """Flat C-order index of each instance's element in ``hull``."""
    if not idx:
        return np.zeros(n, dtype=np.int64)
    out = 0
    for a, (lo, hi) in zip(idx, hull):
        out = out * (hi - lo) + (a - lo)
    return out


def inside(idx, box, n):
    sel = np.ones(n, bool)
    for a, (lo, hi) in zip(idx, box):
        sel &= (a >= lo) & (a < hi)
    return sel


def intersect(a, b):
    out = []
    for (alo, ahi), (blo, bhi) in zip(a, b):
        lo, hi = max(alo, blo), min(ahi, bhi)
        if lo >= hi:
            return None
        out.append((lo, hi))
    return tuple(out)


def slices(box, hull):
    return tuple(slice(lo - hlo, hi - hlo) for (lo, hi), (hlo, _) in zip(box, hull))


def vol(box) -> int:
    n = 1
    for lo, hi in box:
        n *= hi - lo
    return n


def extents(box) -> tuple:
    return tuple(hi - lo for lo, hi in box)


def runs(live, box) -> list:
    """Boxes covering the true cells of ``live`` (shaped like ``box``): runs along the last
    dimension."""
    out = []
    base = [lo for lo, _ in box]
    for pre in np.ndindex(live.shape[:-1]):
        row = live[pre]
        x = 0
        n = row.shape[0]
        while x < n:
            if not row[x]:
                x += 1
                continue
            y = x
            while y < n and row[y]:
                y += 1
            out.append(tuple((base[d] + i, base[d] + i + 1) for d, i in enumerate(pre)) +
                       ((base[-1] + x, base[-1] + y),))
            x = y
    return out
