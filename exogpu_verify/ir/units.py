"""Collective units: shapes of thread sets (paper Figure 11; notes section 1.4).

A unit is a *domain* and a *box* of equal rank. The thread index space of a cluster is
reshaped to the domain (C order) and a unit instance is an aligned sub-box of the given
extents. Entries are monomials in the launch parameters ``blockDim`` and ``clusterDim``
(``Dim``), so ``cuda_cta_in_cluster`` is domain ``(clusterDim*blockDim,)``, box
``(blockDim,)``. Units compare by (domain, box): ``cuda_warpgroup == 4 * cuda_warp``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction


@dataclass(frozen=True, slots=True)
class Dim:
    """``coef * blockDim**block * clusterDim**cluster`` (coef may be a fraction)."""

    coef: Fraction
    block: int = 0
    cluster: int = 0

    def evaluate(self, blockDim: int, clusterDim: int) -> Fraction:
        return self.coef * Fraction(blockDim) ** self.block * Fraction(clusterDim) ** self.cluster

    def scaled(self, k: int) -> "Dim":
        return Dim(self.coef * k, self.block, self.cluster)

    def __str__(self) -> str:
        parts = []
        if self.cluster:
            parts.append("clusterDim" if self.cluster == 1 else f"clusterDim**{self.cluster}")
        if self.block:
            parts.append("blockDim" if self.block == 1 else f"blockDim**{self.block}")
        sym = " * ".join(parts)
        c = self.coef
        if not sym:
            return str(c)
        if c == 1:
            return sym
        if c.denominator == 1:
            return f"{c.numerator} * {sym}"
        if c.numerator == 1:
            return f"{sym} / {c.denominator}"
        return f"{c.numerator} * {sym} / {c.denominator}"


def _d(coef, block=0, cluster=0) -> Dim:
    return Dim(Fraction(coef), block, cluster)


BLOCK = _d(1, block=1)
CLUSTER_THREADS = _d(1, block=1, cluster=1)


@dataclass(frozen=True, slots=True)
class CollUnit:
    """A collective unit. ``box`` entries may be ``None`` (agnostic in that dimension)."""

    domain: tuple[Dim, ...]
    box: tuple[Dim | None, ...]
    name: str = field(compare=False)
    scale_index: int | None = field(default=0, compare=False)

    def __post_init__(self):
        if len(self.domain) != len(self.box):
            raise ValueError("collective unit domain and box must have the same rank")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def scaled(self, k: int) -> "CollUnit":
        if self.scale_index is None:
            raise TypeError(f"collective unit {self.name} cannot be scaled")
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise TypeError(f"Expected {self.name} to be scaled by positive int, not {k!r}")
        if k == 1:
            return self
        box = list(self.box)
        i = self.scale_index
        if box[i] is None:
            raise TypeError(f"collective unit {self.name} cannot be scaled (agnostic box)")
        box[i] = box[i].scaled(k)
        return CollUnit(self.domain, tuple(box), _scaled_name(self.name, k), self.scale_index)

    def __mul__(self, k):
        if not isinstance(k, int) or isinstance(k, bool):
            return NotImplemented
        return self.scaled(k)

    __rmul__ = __mul__

    def threads(self, blockDim: int, clusterDim: int = 1) -> int | None:
        """Number of threads in one instance for a concrete launch shape."""
        n = Fraction(1)
        for b in self.box:
            if b is None:
                return None
            n *= b.evaluate(blockDim, clusterDim)
        return int(n) if n.denominator == 1 else None


def _scaled_name(name: str, k: int) -> str:
    if " * " in name and name.split(" * ", 1)[0].isdigit():
        k0, base = name.split(" * ", 1)
        return f"{int(k0) * k} * {base}"
    return f"{k} * {name}"


cuda_thread = CollUnit((BLOCK,), (_d(1),), "cuda_thread")
cuda_quadpair = CollUnit((_d(Fraction(1, 16), block=1), _d(16)), (_d(2), _d(4)), "cuda_quadpair",
                         scale_index=None)
cuda_warp = CollUnit((BLOCK,), (_d(32),), "cuda_warp")
cuda_warpgroup = CollUnit((BLOCK,), (_d(128),), "cuda_warpgroup")
cuda_cta_in_cluster = CollUnit((CLUSTER_THREADS,), (BLOCK,), "cuda_cta_in_cluster")
cuda_cluster = CollUnit((CLUSTER_THREADS,), (CLUSTER_THREADS,), "cuda_cluster", scale_index=None)
cuda_warp_in_cluster = CollUnit((_d(1, cluster=1), BLOCK), (_d(1), _d(32)), "cuda_warp_in_cluster",
                                scale_index=0)


def cuda_cta_in_cluster_strided(s: int) -> CollUnit:
    """One CTA out of every ``s`` consecutive CTA ranks (multicast partners)."""
    _check_pos(s, "cuda_cta_in_cluster_strided")
    return CollUnit((Dim(Fraction(1, s), 0, 1), _d(s), BLOCK), (_d(1), _d(1), BLOCK),
                    f"cuda_cta_in_cluster_strided({s})")


def cuda_warp_in_cluster_strided(s: int) -> CollUnit:
    """One warp in each of CTAs with rank stride ``s``."""
    _check_pos(s, "cuda_warp_in_cluster_strided")
    return CollUnit((Dim(Fraction(1, s), 0, 1), _d(s), BLOCK), (_d(1), _d(1), _d(32)),
                    f"cuda_warp_in_cluster_strided({s})")


def cuda_threads_strided(n: int, s: int) -> CollUnit:
    """``n`` threads at thread-index stride ``s``."""
    _check_pos(n, "cuda_threads_strided")
    _check_pos(s, "cuda_threads_strided")
    return CollUnit((Dim(Fraction(1, s), 1, 0), _d(s)), (_d(n), _d(1)),
                    f"cuda_threads_strided({n}, {s})", scale_index=0)


def _check_pos(v, who):
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise TypeError(f"{who} expects positive int arguments, not {v!r}")


#: internal unit for CPU scope and for instructions that run on one host thread
standalone_thread = CollUnit((_d(1),), (_d(1),), "standalone_thread", scale_index=None)

UNITS = {
    u.name: u
    for u in (cuda_thread, cuda_quadpair, cuda_warp, cuda_warpgroup, cuda_cta_in_cluster,
              cuda_cluster, cuda_warp_in_cluster)
}
