"""Static analyses: scope rules, collective analysis, distributed memory, barrier usage.

``analyze_static(p)`` runs them in order (for ``p`` and every proc it calls) and returns the
diagnostics; ``analyze(p)`` returns the results as data for later passes (thread mappings for
the checkers and codegen, shardings for codegen). Stages stop at the first that reports
errors, because later ones assume the earlier ones' guarantees:

1. ``check_scopes`` (kind ``scope``)
2. ``analyze_collectives`` (kind ``collective``)
3. ``analyze_distributed_memory`` (kind ``distributed-memory``),
   ``check_barrier_usage`` (kind ``barrier-usage``) and ``allocate_named_barriers`` (ids of
   sub-CTA Fences, kind ``resource``), which are independent.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Diagnostic
from ..ir import nodes as N
from .barriers import check_barrier_usage
from .collective import analyze_collectives
from .distributed import DistributedInfo, Sharding, ShardDim, analyze_distributed_memory
from .mapping import CollectiveInfo, KernelInfo, StmtInfo, TaskLoop, ThreadMapping
from .named_barriers import NamedBarrierInfo, allocate_named_barriers
from .scope import check_scopes
from .derive import ThreadIter, WarpRange
from .tiling import Affine, Collective, TilingError
from .walk import iter_stmts

__all__ = [
    "Affine", "Collective", "CollectiveInfo", "DistributedInfo", "KernelInfo",
    "NamedBarrierInfo", "ShardDim",
    "Sharding", "StaticInfo", "StmtInfo", "TaskLoop", "ThreadIter", "ThreadMapping",
    "TilingError", "WarpRange", "analyze", "analyze_collectives", "analyze_distributed_memory",
    "analyze_static", "check_barrier_usage", "check_scopes",
]


@dataclass(frozen=True)
class StaticInfo:
    """All static-analysis results of one procedure (``None`` for stages not reached)."""

    proc: str
    diagnostics: tuple[Diagnostic, ...]
    collectives: CollectiveInfo | None = None
    distributed: DistributedInfo | None = None
    stages: tuple[str, ...] = ()
    named_barriers: NamedBarrierInfo | None = None

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def analyze(p: N.Procedure) -> StaticInfo:
    """Run the static analyses on ``p`` alone (not its callees); see the module docstring."""
    if p.is_instr:
        return StaticInfo(p.name, ())
    d = check_scopes(p)
    if d:
        return StaticInfo(p.name, d, stages=("scope",))
    ci = analyze_collectives(p)
    if ci.diagnostics:
        return StaticInfo(p.name, ci.diagnostics, ci, stages=("scope", "collective"))
    di = analyze_distributed_memory(p, ci)
    bu = check_barrier_usage(p, ci, di)
    nb = allocate_named_barriers(p, ci)
    diags = tuple(sorted(di.diagnostics + bu + nb.diagnostics,
                         key=lambda x: (x.line or 0, x.kind)))
    return StaticInfo(p.name, diags, ci, di,
                      ("scope", "collective", "distributed-memory", "barrier-usage"), nb)


def analyze_static(p: N.Procedure) -> list[Diagnostic]:
    """Diagnostics of all static analyses for ``p`` and the procs it calls (each once)."""
    out: list[Diagnostic] = []
    seen: set[int] = set()

    def go(q: N.Procedure):
        if id(q) in seen or q.is_instr:
            return
        seen.add(id(q))
        out.extend(analyze(q).diagnostics)
        for _, s in iter_stmts(q.body):
            if isinstance(s, N.Call) and not s.callee.is_instr:
                go(s.callee)

    go(p)
    return out
