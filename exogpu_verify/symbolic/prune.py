"""Equivalent, smaller isl texts: dead disjuncts and known equalities removed.

The builders state orderings as conjunctions of generic pieces: "the same task" (equal loop
variables), "before" (a lexicographic order: one disjunct per loop level), thread cover
conditions. Put together, many disjuncts are false because a sibling conjunct already equates
the variables they compare (``a0 = pr0 and ((a0 < pr0) or (a0 = pr0 and a1 < pr1) ...)``).
isl turns each text into disjunctive normal form when it reads it, so the dead disjuncts
multiply: reading the chained orderings of the GEMM was most of its proof time. ``prune_text``
removes them before isl (and the SMT solvers) see the text.

The rewrite is an equivalence, by one rule applied everywhere: inside a conjunction that has
the conjunct ``x = y`` (two variables), a sub-formula may assume ``x = y``, so a comparison of
two variables known equal is replaced by its value (``x < y`` false, ``x <= y`` true, ...),
and then ``and``/``or``/``not`` of constants are folded. Knowledge is dropped for a name that
an ``exists`` rebinds. Nothing else changes: terms, divisions and the order of conjuncts stay
as they were, so the text remains readable beside the program.
"""

from __future__ import annotations

from .isltext import IslSet, ParseError, Piece, parse_set

_TRUE, _FALSE = ("true",), ("false",)


class _Classes:
    """Equivalence classes of variable names (from a set of equal pairs)."""

    def __init__(self, pairs: frozenset):
        self.pairs = pairs
        self.rep: dict = {}
        for x, y in pairs:
            rx, ry = self.find(x), self.find(y)
            if rx != ry:
                self.rep[rx] = ry

    def find(self, x: str) -> str:
        while x in self.rep:
            x = self.rep[x]
        return x

    def same(self, x: str, y: str) -> bool:
        return x == y or self.find(x) == self.find(y)

    def extend(self, pairs) -> "_Classes":
        new = frozenset(pairs) - self.pairs
        return self if not new else _Classes(self.pairs | new)

    def without(self, names) -> "_Classes":
        names = set(names)
        keep = frozenset(p for p in self.pairs if p[0] not in names and p[1] not in names)
        return self if keep == self.pairs else _Classes(keep)


def _var_eq(f):
    if f[0] == "cmp" and f[1] == "=" and f[2][0] == "var" and f[3][0] == "var":
        return f[2][1], f[3][1]
    return None


_VALUE = {"=": True, "<=": True, ">=": True, "<": False, ">": False, "!=": False}


def _flat_and(f) -> list:
    out = []
    for x in f[1]:
        if x[0] == "and":
            out += _flat_and(x)
        else:
            out.append(x)
    return out


def prune(f, known: _Classes):
    tag = f[0]
    if tag == "and":
        parts = _flat_and(f)
        eqs = [e for e in (_var_eq(x) for x in parts) if e is not None]
        inner = known.extend(eqs)
        out, seen = [], set()
        for x in parts:
            e = _var_eq(x)
            if e is not None:
                # an equality this conjunction asserts stays (once); one known from outside
                # is true here
                if known.same(*e) or e in seen:
                    continue
                seen.add(e)
                out.append(x)
                continue
            y = prune(x, inner)
            if y == _FALSE:
                return _FALSE
            if y != _TRUE:
                out.append(y)
        if not out:
            return _TRUE
        return out[0] if len(out) == 1 else ("and", tuple(out))
    if tag == "or":
        out = []
        for x in f[1]:
            y = prune(x, known)
            if y == _TRUE:
                return _TRUE
            if y != _FALSE:
                out.append(y)
        if not out:
            return _FALSE
        return out[0] if len(out) == 1 else ("or", tuple(out))
    if tag == "not":
        y = prune(f[1], known)
        return _FALSE if y == _TRUE else _TRUE if y == _FALSE else ("not", y)
    if tag == "exists":
        body = prune(f[2], known.without(f[1]))
        if body == _FALSE:
            return _FALSE
        return ("exists", f[1], body)
    if tag == "cmp" and f[2][0] == "var" and f[3][0] == "var" and \
            known.same(f[2][1], f[3][1]):
        return _TRUE if _VALUE[f[1]] else _FALSE
    return f


# ---------------------------------------------------------------- printing isl text

def term_text(t, compact: bool = False) -> str:
    """A term in isl's syntax; ``compact``: a negative product as ``(-k * t)`` (which our
    reader reads back to the same tree) instead of ``(-(k * t))`` (the pruned texts' form)."""
    tag = t[0]
    if tag == "num":
        return str(t[1]) if t[1] >= 0 else f"(-{-t[1]})"
    if tag == "var":
        return t[1]
    if tag == "add":
        return "(" + " + ".join(term_text(x, compact) for x in t[1]) + ")"
    if tag == "mul":
        inner = term_text(t[2], compact)
        if t[1] >= 0:
            return f"({t[1]} * {inner})"
        return f"(-{-t[1]} * {inner})" if compact else f"(-({-t[1]} * {inner}))"
    if tag == "floor":
        return f"floor(({term_text(t[1], compact)})/{t[2]})"
    if tag == "mod":
        return f"(({term_text(t[1], compact)}) mod {t[2]})"
    raise ValueError(f"not a term: {tag!r}")


def formula_text(f) -> str:
    """A formula in isl's syntax."""
    tag = f[0]
    if tag == "true":
        return "(1 = 1)"
    if tag == "false":
        return "(1 = 0)"
    if tag == "cmp":
        return f"({term_text(f[2])} {f[1]} {term_text(f[3])})"
    if tag in ("and", "or"):
        return "(" + f" {tag} ".join(formula_text(x) for x in f[1]) + ")"
    if tag == "not":
        return f"(not {formula_text(f[1])})"
    if tag == "exists":
        return f"(exists ({', '.join(f[1])} : {formula_text(f[2])}))"
    raise ValueError(f"not a syntax-tree node: {tag!r}")


def set_text(s: IslSet) -> str:
    pieces = []
    for pc in s.pieces:
        body = formula_text(pc.formula)
        pieces.append(f"{pc.tuple_name}[{', '.join(pc.dims)}] : {body}")
    head = f"[{', '.join(s.params)}] -> " if s.params else ""
    return head + "{ " + "; ".join(pieces) + " }"


def prune_text(text: str) -> str:
    """``text`` (an isl set) with the rewrite of the module docstring; the text itself when
    it is outside our reader's grammar, its tuples name computed dimensions or it has no
    dimensions (our reader does not tell a parameter set from a 0-dimensional one)."""
    try:
        s = parse_set(text)
    except ParseError:
        return text
    if any(d.startswith("#") for pc in s.pieces for d in pc.dims) or \
            any(not pc.dims for pc in s.pieces):  # ``{ : ...}`` and ``{ [] : ...}`` differ
        return text
    empty = _Classes(frozenset())
    pieces = []
    for pc in s.pieces:
        f = prune(pc.formula, empty)
        if f != _FALSE:
            pieces.append(Piece(pc.tuple_name, pc.dims, f))
    if not pieces and s.pieces:  # empty, in the same space
        pieces.append(Piece(s.pieces[0].tuple_name, s.pieces[0].dims, _FALSE))
    return set_text(IslSet(s.params, tuple(pieces)))
