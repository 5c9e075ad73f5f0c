"""Canonical quasi-affine forms of integer control expressions.

``linear(e)`` reads ``e`` as ``sum(c_k * atom_k) + c0`` where an atom is a variable, a
``stride(...)``, or a floor division / modulo of a canonical form by a constant. Division
and modulo are normalized so that equal values get equal forms in the common cases that
schedules produce:

* ``(d*q + r) / d == q + r / d`` and ``(d*q + r) % d == r % d``, with the remainder's
  coefficients reduced into ``[0, d)`` (``(x - 1) % 4`` is ``(x + 3) % 4``);
* ``(x % a) % d == x % d`` and ``(c*(x % a) + r) % d == (c*x + r) % d`` when ``d | a``;
* ``(x / a + r) / d == (x + r*a) / (a*d)`` and ``(x % a) / d == (x / d) % (a / d)`` when
  ``d | a``;
* ``d * (r / d) + r % d == r``.

Every rule is an identity of floor division by positive constants, so ``build(linear(e))``
always equals ``e``. Forms that the rules do not make equal are compared by
``deps.equal_in_context`` (isl decides them over the loop bounds), never by their text.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.types import index, int_


@dataclass(frozen=True)
class Atom:
    """A variable (``op`` None) or ``inner op d`` with ``inner`` a canonical ``Lin``."""

    key: tuple
    node: object = None
    op: str | None = None
    inner: "Lin | None" = None
    d: int = 0


@dataclass(frozen=True)
class Lin:
    """``sum(coef * atom) + const``; ``terms`` is a tuple of ``(key, coef, atom)`` in first
    appearance order (the printed order follows the source)."""

    terms: tuple
    const: int

    @property
    def key(self) -> tuple:
        return (tuple(sorted((k, c) for k, c, _ in self.terms)), self.const)

    def scaled(self, k: int) -> "Lin":
        if k == 0:
            return Lin((), 0)
        return Lin(tuple((key, c * k, a) for key, c, a in self.terms), self.const * k)


def _add(a: Lin, b: Lin, sb: int = 1) -> Lin:
    terms = {key: [c, at] for key, c, at in a.terms}
    order = [key for key, _, _ in a.terms]
    for key, c, at in b.terms:
        if key in terms:
            terms[key][0] += sb * c
        else:
            terms[key] = [sb * c, at]
            order.append(key)
    out = tuple((k, terms[k][0], terms[k][1]) for k in order if terms[k][0] != 0)
    return _recombine(Lin(out, a.const + sb * b.const))


def _recombine(f: Lin) -> Lin:
    """``d * (r / d) + r % d -> r`` (and multiples of it)."""
    by_key = {k: (c, a) for k, c, a in f.terms}
    for k, c, a in f.terms:
        if a.op != "%" or k not in by_key:
            continue
        dk = ("/", a.inner.key, a.d)
        if dk in by_key and by_key[dk][0] == c * a.d:
            rest = Lin(tuple(t for t in f.terms if t[0] not in (k, dk)), f.const)
            return _add(rest, a.inner.scaled(c))
    return f


def _var(key, node) -> Lin:
    return Lin(((key, 1, Atom(key, node)),), 0)


def linear(e) -> Lin | None:
    """The canonical form of an integer control expression, or None if not quasi-affine."""
    c = const_value(e)
    if c is not None:
        return Lin((), c)
    if isinstance(e, N.Read) and not e.idx:
        return _var(("v", e.name), e)
    if isinstance(e, N.StrideExpr):
        return _var(("s", e.name, e.dim), e)
    if isinstance(e, N.UnOp) and e.op == "-":
        r = linear(e.arg)
        return None if r is None else r.scaled(-1)
    if not isinstance(e, N.BinOp):
        return None
    if e.op in ("+", "-"):
        a, b = linear(e.lhs), linear(e.rhs)
        if a is None or b is None:
            return None
        return _add(a, b, -1 if e.op == "-" else 1)
    if e.op == "*":
        k, other = const_value(e.lhs), e.rhs
        if k is None:
            k, other = const_value(e.rhs), e.lhs
        r = None if k is None else linear(other)
        return None if r is None else r.scaled(k)
    if e.op in ("/", "%"):
        d = const_value(e.rhs)
        inner = linear(e.lhs)
        if d is None or d <= 0 or inner is None:
            return None
        return div(inner, d) if e.op == "/" else mod(inner, d)
    return None


def _split(f: Lin, d: int):
    """``f == d * q + r`` with r's coefficients and constant in ``[0, d)``."""
    q = tuple((k, c // d, a) for k, c, a in f.terms if c // d)
    r = tuple((k, c % d, a) for k, c, a in f.terms if c % d)
    return Lin(q, f.const // d), Lin(r, f.const % d)


def _upper(f: Lin):
    """An upper bound of ``f`` when every term is a modulo with a non-negative coefficient
    (its values lie in ``[0, a)``), else None."""
    if not all(a.op == "%" and c > 0 for _, c, a in f.terms):
        return None
    return f.const + sum(c * (a.d - 1) for _, c, a in f.terms)


def div(f: Lin, d: int) -> Lin:
    if d == 1:
        return f
    q, r = _split(f, d)
    up = _upper(r)
    if not r.terms or (up is not None and up < d):
        return q  # 0 <= r < d: its quotient is 0
    if len(r.terms) == 1 and r.terms[0][1] == 1:
        a = r.terms[0][2]
        if a.op == "/":  # (x / a + c) / d == (x + c*a) / (a*d)
            return _add(q, div(_add(a.inner, Lin((), r.const * a.d)), a.d * d))
        if a.op == "%" and r.const == 0 and a.d % d == 0:  # (x % a) / d == (x / d) % (a / d)
            return _add(q, mod(div(a.inner, d), a.d // d))
    return _add(q, _atom("/", r, d))


def mod(f: Lin, d: int) -> Lin:
    if d == 1:
        return Lin((), 0)
    flat = Lin((), f.const)
    for k, c, a in f.terms:  # (x % a) == x (mod d) when d | a
        part = a.inner.scaled(c) if a.op == "%" and a.d % d == 0 else Lin(((k, c, a),), 0)
        flat = _add(flat, part)
    _, r = _split(flat, d)
    up = _upper(r)
    if not r.terms or (up is not None and up < d):
        return r  # 0 <= r < d already
    return _atom("%", r, d)


def _atom(op, inner: Lin, d: int) -> Lin:
    key = (op, inner.key, d)
    node = N.BinOp(op, build(inner), N.Const(d, int_), index)
    return Lin(((key, 1, Atom(key, node, op, inner, d)),), 0)


def build(f: Lin, like=None):
    """The IR expression of a form (``like``: an expression whose type to keep)."""
    out = None
    for _, c, a in f.terms:
        t = a.node
        term = t if abs(c) == 1 else N.BinOp("*", N.Const(abs(c), int_), t, index)
        if out is None:
            out = term if c > 0 else (N.UnOp("-", t, index) if abs(c) == 1 else
                                      N.BinOp("*", N.Const(c, int_), t, index))
        else:
            out = N.BinOp("+" if c > 0 else "-", out, term, index)
    if out is None:
        return N.Const(f.const, int_)
    if f.const > 0:
        out = N.BinOp("+", out, N.Const(f.const, int_), index)
    elif f.const < 0:
        out = N.BinOp("-", out, N.Const(-f.const, int_), index)
    return out


def same_form(a, b) -> bool:
    """Do two integer expressions have the same canonical form (equal for all values)?"""
    fa, fb = linear(a), linear(b)
    return fa is not None and fb is not None and fa.key == fb.key
