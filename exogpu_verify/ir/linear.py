"""Linear simplification of quasi-affine control expressions, to decide conditions exactly.

``linear(e)`` writes an integer expression as a linear form over *atoms* (variables,
strides, and the ``/``/``%`` sub-terms that do not simplify); ``decide(cond)`` says True or
False when a comparison's variable terms cancel (``8*h + 8 - 8*h == 8``), vanish modulo the
divisor of a ``%`` (``(16384*k + 32) % 1024 == 32``), or all have one sign over variables
known to be positive (``0 <= N`` for a size ``N``); otherwise None. Everything is exact:
atoms are integers, so ``(m*q + c) % m == c % m`` and ``(m*q + c) / m == q + c / m``.
Used by the frontend (constant argument extents), the static analyses and the AMIR lowering.
"""

from __future__ import annotations

from .affine import const_value
from . import nodes as N


class NotLinear(Exception):
    """The expression is not a linear form over atoms (a product of two variables)."""


def _key(e) -> str:
    return repr(e)  # srcinfo is not part of a node's repr: equal terms, equal keys


def linear(e, atoms: dict | None = None) -> tuple[dict, int]:
    """``e`` as ``(coefficients by atom, constant)``; atoms are variables, strides and the
    ``/``/``%`` sub-terms that do not simplify (``atoms``, if given, receives each atom's
    expression by key). Raises ``NotLinear`` otherwise."""
    c = const_value(e)
    if c is not None:
        return {}, c
    if isinstance(e, N.Read) and not e.idx:
        return _atom(e.name, e, atoms)
    if isinstance(e, N.StrideExpr):
        return _atom(f"stride({e.name}, {e.dim})", e, atoms)
    if isinstance(e, N.UnOp) and e.op == "-":
        t, k = linear(e.arg, atoms)
        return {a: -v for a, v in t.items()}, -k
    if isinstance(e, N.BinOp):
        if e.op in ("+", "-"):
            ta, ka = linear(e.lhs, atoms)
            tb, kb = linear(e.rhs, atoms)
            s = 1 if e.op == "+" else -1
            out = dict(ta)
            for a, v in tb.items():
                out[a] = out.get(a, 0) + s * v
            return {a: v for a, v in out.items() if v}, ka + s * kb
        if e.op == "*":
            ta, ka = linear(e.lhs, atoms)
            tb, kb = linear(e.rhs, atoms)
            if ta and tb:
                raise NotLinear
            (t, c0), k = ((tb, kb), ka) if not ta else ((ta, ka), kb)
            return {a: k * v for a, v in t.items() if k * v}, k * c0
        if e.op in ("/", "%"):
            m = constant(e.rhs)
            if m is None or m <= 0:
                raise NotLinear
            t, c0 = linear(e.lhs, atoms)
            if all(v % m == 0 for v in t.values()):
                # (sum m*q_i*a_i + c0) / m = sum q_i*a_i + c0 // m, and % m = c0 % m: exact,
                # since every atom is an integer
                if e.op == "%":
                    return {}, c0 % m
                return {a: v // m for a, v in t.items()}, c0 // m
            return _atom(_key(e), e, atoms)
    raise NotLinear


def _atom(key: str, e, atoms: dict | None):
    if atoms is not None:
        atoms.setdefault(key, e)
    return {key: 1}, 0


def simplify(e):
    """``e`` with its linear part collected (``8*h + 8 - 8*h`` is ``8``); ``e`` itself when it
    is not linear. For messages: the result prints as people would write it."""
    atoms: dict = {}
    try:
        t, k = linear(e, atoms)
    except NotLinear:
        return e
    from .types import index

    out = None
    for key, c in t.items():
        a = atoms[key]
        term = a if abs(c) == 1 else N.BinOp("*", N.Const(abs(c), index), a, index)
        if out is None:
            out = term if c > 0 else N.UnOp("-", term, index)
        else:
            out = N.BinOp("+" if c > 0 else "-", out, term, index)
    if out is None:
        return N.Const(k, index)
    if k:
        out = N.BinOp("+" if k > 0 else "-", out, N.Const(abs(k), index), index)
    return out


def decide(cond, positive: frozenset = frozenset()) -> bool | None:
    """True/False when ``cond`` is constant after linear simplification, else None.
    ``positive``: variables known to be at least 1 (size parameters), which also decides
    comparisons whose variable terms all have one sign (``0 <= N``, ``N - 1 < N + M``)."""
    if isinstance(cond, N.Const) and isinstance(cond.val, bool):
        return cond.val
    if isinstance(cond, N.UnOp) and cond.op == "not":
        v = decide(cond.arg, positive)
        return None if v is None else not v
    if isinstance(cond, N.BinOp):
        if cond.op in ("and", "or"):
            a, b = decide(cond.lhs, positive), decide(cond.rhs, positive)
            if cond.op == "and":
                if a is False or b is False:
                    return False
                return True if a is True and b is True else None
            if a is True or b is True:
                return True
            return False if a is False and b is False else None
        if cond.op in ("<", "<=", ">", ">=", "==", "!="):
            try:
                ta, ka = linear(cond.lhs)
                tb, kb = linear(cond.rhs)
            except NotLinear:
                return None
            diff = dict(ta)
            for a, v in tb.items():
                diff[a] = diff.get(a, 0) - v
            diff = {a: v for a, v in diff.items() if v}
            d = ka - kb
            if not diff:
                return {"<": d < 0, "<=": d <= 0, ">": d > 0, ">=": d >= 0, "==": d == 0,
                        "!=": d != 0}[cond.op]
            return _signed(diff, d, cond.op, positive)
    return None


def _signed(diff: dict, d: int, op: str, positive: frozenset) -> bool | None:
    """Decide ``sum(c * a) + d  op  0`` when every atom ``a`` is at least 1 and all ``c``
    share a sign: the sum is then at most (all c <= 0) or at least (all c >= 0) ``sum(c) +
    d``, and unbounded the other way."""
    if not all(a in positive for a in diff):
        return None
    k = sum(diff.values()) + d
    if all(c < 0 for c in diff.values()):   # the value is at most k
        if op in ("<", "<=", "!=", "==") and k < 0:
            return op in ("<", "<=", "!=")
        if op == "<=" and k == 0:
            return True
        if op in (">", ">=") and (k < 0 or (op == ">" and k == 0)):
            return False
    if all(c > 0 for c in diff.values()):   # the value is at least k
        if op in (">", ">=", "!=", "==") and k > 0:
            return op in (">", ">=", "!=")
        if op == ">=" and k == 0:
            return True
        if op in ("<", "<=") and (k > 0 or (op == "<" and k == 0)):
            return False
    return None




def constant(e) -> int | None:
    """The value of ``e`` when its linear form has no variable terms, else None."""
    try:
        t, k = linear(e)
    except NotLinear:
        return None
    return None if t else k


__all__ = ["NotLinear", "constant", "decide", "linear", "simplify"]
