"""Conditions: facts that must hold at every instance of a statement, for every size.

A ``Condition`` is a control condition (an IR expression over the procedure's size
parameters and loop variables) attached to one statement, with the diagnostic kind and words
to report when it fails: argument shapes (``type``), instruction preconditions
(``instruction``), register counts (``resource``), indices and windows (``bounds``). The same
condition is decided three ways, so both checkers enforce exactly the same rule:

* statically, when it simplifies to a constant (``decide``): a quasi-affine linear form whose
  variable terms cancel, or vanish modulo the divisor of a ``%``/``/``; the result is a
  *checked fact* (recorded for certificates) or a located error;
* symbolically, as an obligation ``{instances : domain and not cond}`` that isl and Z3 must
  find empty for every size satisfying the asserts (``exogpu_verify.symbolic``);
* concretely, evaluated at every executed instance by the abstract machine
  (``exogpu_verify.amir``), which reports the same kind and line with the values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.linear import decide, linear  # noqa: F401  (re-exported for the checkers)
from ..ir.srcinfo import SrcInfo
from ..ir.types import bool_, index

PRECONDITION_KINDS = ("bounds", "type", "instruction", "resource")


@dataclass(frozen=True)
class Condition:
    """``cond`` must hold at every instance of the statement at ``srcinfo``.

    ``what`` states the requirement in words (it starts the diagnostic); ``shows`` are
    ``(label, expr)`` pairs whose values a failing instance reports."""

    kind: str
    cond: N.Expr
    what: str
    srcinfo: SrcInfo | None
    hint: str | None = None
    shows: tuple = ()
    #: short name of the fact, for certificates and obligation names
    fact: str = ""

    def message(self, values: dict | None = None) -> str:
        if not values:
            return self.what
        return f"{self.what} ({', '.join(f'{k} = {v}' for k, v in values.items())})"

    def renamed(self, fn) -> "Condition":
        """The same condition with every expression mapped by ``fn`` (variable renaming)."""
        return Condition(self.kind, fn(self.cond), self.what, self.srcinfo, self.hint,
                         tuple((k, fn(e)) for k, e in self.shows), self.fact)


@dataclass(frozen=True)
class CheckedFact:
    """A precondition decided without a solver (constant after simplification)."""

    kind: str
    fact: str
    holds: bool
    line: int | None = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "fact": self.fact, "holds": self.holds, "line": self.line}


@dataclass
class ConditionSet:
    """Conditions of one procedure by statement path, plus what was decided statically."""

    at: dict = field(default_factory=dict)        # path -> list[Condition] (undecided)
    facts: list = field(default_factory=list)     # CheckedFact
    positive: frozenset = frozenset()  # size parameters (at least 1)
    #: called with each condition decided false (the analyses turn it into a diagnostic)
    on_fail: object = None

    def add(self, path, c: Condition) -> None:
        v = decide(c.cond, self.positive)
        if v is None:
            self.at.setdefault(path, []).append(c)
            return
        self.facts.append(CheckedFact(c.kind, c.fact or c.what, v,
                                      c.srcinfo.line if c.srcinfo else None))
        if not v and self.on_fail is not None:
            self.on_fail(c)


# ---------------------------------------------------------------- building expressions
def C(v: int) -> N.Const:
    return N.Const(int(v), index)


def _ex(x):
    return C(x) if isinstance(x, int) else x


def add(a, b):
    a, b = _ex(a), _ex(b)
    ca, cb = const_value(a), const_value(b)
    if ca == 0:
        return b
    if cb == 0:
        return a
    if ca is not None and cb is not None:
        return C(ca + cb)
    return N.BinOp("+", a, b, index)


def sub(a, b):
    a, b = _ex(a), _ex(b)
    ca, cb = const_value(a), const_value(b)
    if cb == 0:
        return a
    if ca is not None and cb is not None:
        return C(ca - cb)
    return N.BinOp("-", a, b, index)


def mul(a, b):
    a, b = _ex(a), _ex(b)
    ca, cb = const_value(a), const_value(b)
    if ca == 1:
        return b
    if cb == 1:
        return a
    if ca == 0 or cb == 0:
        return C(0)
    if ca is not None and cb is not None:
        return C(ca * cb)
    return N.BinOp("*", a, b, index)


def mod(a, m: int):
    return N.BinOp("%", _ex(a), C(m), index)


def cmp(op: str, a, b):
    return N.BinOp(op, _ex(a), _ex(b), bool_)


def conj(*cs):
    out = None
    for c in cs:
        if c is None:
            continue
        out = c if out is None else N.BinOp("and", out, c, bool_)
    return out if out is not None else N.Const(True, bool_)


def disj(*cs):
    out = None
    for c in cs:
        out = c if out is None else N.BinOp("or", out, c, bool_)
    return out if out is not None else N.Const(False, bool_)


def free_names(e, out: set | None = None) -> set:
    """Control variables read by an expression."""
    out = set() if out is None else out
    if isinstance(e, N.Read) and not e.idx:
        out.add(e.name)
    elif isinstance(e, N.BinOp):
        free_names(e.lhs, out)
        free_names(e.rhs, out)
    elif isinstance(e, N.UnOp):
        free_names(e.arg, out)
    return out


def has_stride(e) -> bool:
    if isinstance(e, N.StrideExpr):
        return True
    if isinstance(e, N.BinOp):
        return has_stride(e.lhs) or has_stride(e.rhs)
    if isinstance(e, N.UnOp):
        return has_stride(e.arg)
    return False


def subst(e, env: dict):
    """Replace control variables (name -> Expr) and ``stride(name, d)`` (key
    ``("stride", name, d)`` -> Expr) in a control expression."""
    if isinstance(e, N.Read) and not e.idx:
        return env.get(e.name, e)
    if isinstance(e, N.StrideExpr):
        return env.get(("stride", e.name, e.dim), e)
    if isinstance(e, N.BinOp):
        return N.BinOp(e.op, subst(e.lhs, env), subst(e.rhs, env), e.type, e.srcinfo)
    if isinstance(e, N.UnOp):
        return N.UnOp(e.op, subst(e.arg, env), e.type, e.srcinfo)
    return e
