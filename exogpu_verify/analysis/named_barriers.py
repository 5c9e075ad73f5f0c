"""Named barriers: which ``Fence`` statements are executed by a set of whole warps smaller than
the CTA, and which hardware barrier id (``bar.sync id, nthreads``) each instance uses.

LANGUAGE.md: a Fence executed by a set of whole warps smaller than the CTA (inside
``with CudaWarps(name="consumer"):``, or per warpgroup inside a ``cuda_threads`` loop over
warpgroups) is a named barrier over those threads. Its meaning for the checkers is that of any
Fence (a rendezvous of exactly its collective's threads, same timeline rules as a CTA Fence);
this pass only decides the *lowering* and the *resource*:

* An instance of such a Fence is identified by the values of the enclosing ``cuda_threads``
  iterators; its warp set is the CTA-relative set of warps of its threads (every CTA of a
  cluster has its own 16 barriers, so CTA-relative sets that coincide share an id).
* Each distinct warp set gets its own id, 1, 2, ... in program order (id 0 is the CTA barrier,
  ``barrier.cta.sync 0``). Two instances with the same warp set may share an id: the same
  threads execute them in program order, so one barrier completes before the next begins
  (as consecutive ``__syncthreads`` share id 0). Different sets never share: overlapping sets
  would count each other's arrivals, and disjoint sets may be at their barriers at once.
* At most 15 named ids exist per CTA (PTX ISA, ``bar.sync``: 16 barriers); more is a
  ``resource`` error at the first Fence that does not fit.

``allocate_named_barriers(p, ci)`` returns a ``NamedBarrierInfo``; codegen reads the id of
each instance from it (``NamedBarrier.id_expr``) and never re-derives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.timelines import wgmma_fence_1
from ..ir.units import cuda_cta_in_cluster, cuda_warp
from .mapping import CollectiveInfo
from .tiling import covers_whole, matches, within_one
from .walk import Path

#: hardware barriers per CTA (PTX ISA bar.sync: ids 0..15); id 0 is the CTA-wide barrier
MAX_BARRIER_IDS = 16
_MAX_INSTANCES = 4096


@dataclass(frozen=True)
class NamedBarrier:
    """The lowering of one named-barrier Fence statement.

    ``iters``: the enclosing ``cuda_threads`` iterators (name, count) that select the
    instance; ``ids``: the barrier id of every combination of their values (C order, last
    iterator fastest); ``threads``: threads taking part in one instance (a multiple of 32).
    """

    path: Path
    threads: int
    iters: tuple[tuple[str, int], ...]
    ids: tuple[int, ...]

    def affine(self) -> tuple[int, tuple[tuple[str, int], ...]] | None:
        """``(base, ((iter, coef), ...))`` with ``id = base + sum(coef * iter)`` if the ids are
        an affine function of the iterators, else None."""
        base = self.ids[0]
        coefs, stride = [], 1
        strides = []
        for _, n in reversed(self.iters):
            strides.append(stride)
            stride *= n
        strides.reverse()
        for (name, n), s in zip(self.iters, strides):
            c = self.ids[s] - base if n > 1 else 0
            if c:
                coefs.append((name, c))
        for k, vals in enumerate(product(*(range(n) for _, n in self.iters))):
            env = dict(zip((nm for nm, _ in self.iters), vals))
            if base + sum(c * env[nm] for nm, c in coefs) != self.ids[k]:
                return None
        return base, tuple(coefs)


@dataclass(frozen=True)
class NamedBarrierInfo:
    """Named-barrier Fences of one procedure, by statement path, and the ids they use."""

    fences: dict = field(default_factory=dict)  # Path -> NamedBarrier
    ids_used: int = 0  # named ids per CTA (1..ids_used are in use), per kernel maximum
    diagnostics: tuple[Diagnostic, ...] = ()

    def at(self, path: Path) -> NamedBarrier | None:
        return self.fences.get(path)


def is_named_barrier_collective(coll) -> bool:
    """A set of whole warps, within one CTA, that is neither one warp nor the whole CTA."""
    if coll.size <= 32 or matches(coll, cuda_warp) or matches(coll, cuda_cta_in_cluster):
        return False
    return covers_whole(coll, cuda_warp) and within_one(coll, cuda_cta_in_cluster)


def allocate_named_barriers(p: N.Procedure, ci: CollectiveInfo) -> NamedBarrierInfo:
    """Find the named-barrier Fences of ``p`` and give every distinct warp set an id (see the
    module docstring). Assumes the collective analysis accepted ``p``."""
    fences: dict = {}
    diags: list[Diagnostic] = []
    # one id table per kernel (a kernel is identified by its launch config's path prefix)
    tables: dict[Path, dict[frozenset, int]] = {}
    kernel_paths = [k.path for k in ci.kernels]
    used = 0
    for si in ci.stmts:
        st = si.stmt
        if not isinstance(st, N.Fence) or si.mapping is None or st.L1 == wgmma_fence_1:
            continue
        coll = si.mapping.collective
        if not is_named_barrier_collective(coll):
            continue
        kpath = next((kp for kp in kernel_paths if si.path[:len(kp)] == kp), ())
        table = tables.setdefault(kpath, {})
        iters = tuple((t.name, t.count) for t in si.mapping.thread_iters)
        combos = 1
        for _, n in iters:
            combos *= n
        if combos > _MAX_INSTANCES:
            diags.append(Diagnostic.at(
                "resource", f"a named-barrier Fence under {combos} cuda_threads iterator "
                "combinations (at most 4096 are supported)", st.srcinfo))
            continue
        bd = coll.block_dim
        ids, overflow = [], False
        for vals in product(*(range(n) for _, n in iters)):
            env = dict(zip((nm for nm, _ in iters), vals))
            warps = frozenset((t % bd) // 32 for t in si.mapping.threads(env))
            if warps not in table:
                if len(table) + 1 >= MAX_BARRIER_IDS:
                    overflow = True
                    break
                table[warps] = len(table) + 1
            ids.append(table[warps])
        if overflow:
            diags.append(Diagnostic.at(
                "resource", f"this Fence needs a named barrier beyond the hardware's "
                f"{MAX_BARRIER_IDS - 1} (ids 1..{MAX_BARRIER_IDS - 1}; id 0 is the CTA "
                "barrier): the kernel's sub-CTA Fences are executed by more distinct warp "
                "sets than that", st.srcinfo,
                hint="let fewer distinct warp sets fence (e.g. one Fence by all consumer "
                     "warps instead of one per warp pair)"))
            continue
        used = max(used, len(table))
        fences[si.path] = NamedBarrier(si.path, coll.size, iters, tuple(ids))
    return NamedBarrierInfo(fences, used, tuple(diags))


__all__ = ["MAX_BARRIER_IDS", "NamedBarrier", "NamedBarrierInfo", "allocate_named_barriers",
           "is_named_barrier_collective"]
