"""Decoration-time check that a procedure's asserts can hold: a proof "for every size that
satisfies the asserts" is vacuous when no size does (``assert M == 0`` for a size, ``assert
N % 256 == -1``), so that is a user error of kind ``type`` at the first assert.

isl decides the conjunction of every assert it can express (quasi-affine conditions over
the size parameters, each at least 1, and the index parameters and ``stride()`` values,
unconstrained). Asserts it cannot express are left out: that only enlarges the set, so the
error is raised only when no size can satisfy the asserts.
"""

from __future__ import annotations

from ..ir import nodes as N
from ..ir.affine import NotAffine, cond_to_isl_str


def _names(e, out: set) -> None:
    if isinstance(e, N.Read) and not e.idx:
        out.add(e.name)
    elif isinstance(e, N.StrideExpr):
        out.add(f"stride_{e.name}_{e.dim}")
    for attr in ("lhs", "rhs", "arg"):
        sub = getattr(e, attr, None)
        if sub is not None:
            _names(sub, out)


def unsatisfiable(params, preds) -> bool:
    """True when no value of the parameters (sizes >= 1) satisfies all of ``preds`` (the
    ones isl can express)."""
    if not preds:
        return False
    kinds = {p.name: p.type.name for p in params if not p.is_data}
    cons, names = [], set()
    for pred in preds:
        ns: set = set()
        _names(pred, ns)
        if any(n in kinds and kinds[n] == "bool" for n in ns):
            continue
        ren = {n: f"v_{n}" for n in ns}
        try:
            cons.append(f"({cond_to_isl_str(pred, ren)})")
        except NotAffine:
            continue
        names |= ns
    if not cons:
        return False
    import islpy as isl

    cons += [f"v_{n} >= 1" for n in names if kinds.get(n) == "size"]
    ps = ", ".join(f"v_{n}" for n in sorted(names))
    try:
        return isl.Set(f"[{ps}] -> {{ : {' and '.join(cons)} }}").is_empty()
    except isl.Error:
        return False  # not expressible after all: never claim emptiness
