"""Preconditions of calls, tensor maps and launches: what must hold for the hardware to run it.

``analyze_preconditions(p, cinfo, dinfo)`` establishes, from the static SMEM layout (the one
codegen emits) and the variable views of ``p``:

* per call statement: argument shapes (``type``), declared instruction checks and the
  callee's asserts (``instruction``; ``resource`` for register counts), see ``calls`` and
  ``instr_checks``;
* per tensor map: its encoding facts (``instruction``);
* per kernel: launch resources (``resource``), see ``resources``.

Conditions that simplify to constants are decided here: a true one is a *checked fact*
(kept for certificates), a false one a located diagnostic. The others depend on sizes or
loop variables; they are returned by statement path, and both checkers enforce them at every
instance (the AMIR lowering places them before the statement: ``AmCheck``). It assumes the
collective and distributed-memory analyses succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from ..errors import Diagnostic
from ..ir import nodes as N
from .calls import arg_views, assert_conditions, caller_known_strides, shape_conditions
from .conditions import CheckedFact, Condition, ConditionSet
from .instr_checks import declared_conditions, tensor_map_conditions
from .resources import check_resources
from .smem_layout import KernelLayout, LayoutError, kernel_smem_layouts
from .views import walk_views, window_stmt_view


@dataclass(frozen=True)
class PreconditionInfo:
    """Result of ``analyze_preconditions``."""

    conditions: MappingProxyType    # statement path -> tuple[Condition, ...] (size-dependent)
    facts: tuple[CheckedFact, ...]  # decided without a solver
    diagnostics: tuple[Diagnostic, ...]
    layouts: tuple[KernelLayout, ...] = ()

    def at(self, path) -> tuple[Condition, ...]:
        return self.conditions.get(path, ())


EMPTY = PreconditionInfo(MappingProxyType({}), (), ())


def analyze_preconditions(p: N.Procedure, cinfo, dinfo, named=None) -> PreconditionInfo:
    """Call, tensor-map and launch preconditions of ``p``; see the module docstring.
    ``named``: the named-barrier allocation (``named_barriers``), recorded as a fact."""
    if p.is_instr:
        return EMPTY
    diags: list[Diagnostic] = []
    try:
        layouts = kernel_smem_layouts(p, dinfo)
    except LayoutError as e:
        diags.append(Diagnostic.at("type", f"{e.what}: device allocations need constant "
                                   "extents", getattr(e.node, "srcinfo", None)))
        layouts = []
    smem = {}
    for kl in layouts:
        smem.update(kl.layout.offsets)
    shard = {s.path: s.n_distributed for s in dinfo.shardings} if dinfo is not None else {}
    kernels = [(k.path, k.config) for k in cinfo.kernels] if cinfo is not None else []
    strides = caller_known_strides(p)
    cs = ConditionSet(positive=frozenset(p.size_params()),
                      on_fail=lambda c: diags.append(_failed(c)))
    for path, s, scope in walk_views(p, shard, smem):
        if isinstance(s, N.Call):
            kernel = next((cfg for kp, cfg in kernels if path[:len(kp)] == kp), None)
            if not shape_conditions(path, s, scope, cs, diags):
                continue
            views = arg_views(s, scope)
            declared_conditions(path, s, views, kernel, cs, diags)
            assert_conditions(path, s, views, strides, cs, diags)
        elif isinstance(s, N.WindowStmt) and s.special is not None:
            v = window_stmt_view(s, scope)
            if v is not None:
                tensor_map_conditions(path, s, v, cs, diags)
    if cinfo is not None:
        rd, rf = check_resources(p, cinfo, layouts, named)
        diags += rd
        cs.facts += rf
    diags.sort(key=lambda d: d.line or 0)  # stable: a statement's findings in check order
    return PreconditionInfo(MappingProxyType({k: tuple(v) for k, v in cs.at.items()}),
                            tuple(cs.facts), tuple(diags), tuple(layouts))


def _failed(c: Condition) -> Diagnostic:
    """A condition decided false without a solver: its values are constants."""
    from ..ir.affine import const_value

    vals = {}
    for k, e in c.shows:
        v = const_value(e)
        if v is not None:
            vals[k] = v
    return Diagnostic.at(c.kind, c.message(vals), c.srcinfo, c.hint)


__all__ = ["PreconditionInfo", "analyze_preconditions", "EMPTY"]
