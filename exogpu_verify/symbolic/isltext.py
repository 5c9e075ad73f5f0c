"""A reader for the isl set texts of obligations, independent of isl.

It parses the grammar the ``Encoder`` emits (and the subset of isl's own printed form that
obligations may contain) into a small syntax tree: a parameter list, then one or more
pieces ``[d0, d1, ...] : formula`` separated by ``;``. Formulas are built from chains of
comparisons (``0 <= a < N``), ``and``, ``or``, ``not``, ``exists (v, ... : f)``, ``true`` and
``false`` over quasi-affine terms: integers, names, ``+``, ``-``, multiplication by an
integer constant (``128*a``, ``2 * (x)``, ``3a``), ``floor(t / d)`` and ``t mod d`` with a
positive integer ``d``. Anything else is a ``ParseError`` naming the position.

The meaning is isl's (integer points; ``floor`` rounds down; ``t mod d`` lies in
``[0, d)``; a chain ``a <= b < c`` is ``a <= b and b < c``); ``smtlib.py`` renders the tree as
SMT-LIB2, where ``div``/``mod`` by a positive numeral have exactly this meaning.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# ------------------------------------------------------------------------ syntax tree
# integer terms:  ("num", k) ("var", name) ("add", (t, ...)) ("mul", k, t)
#                 ("floor", t, d) ("mod", t, d)
# formulas:       ("true",) ("false",) ("cmp", op, t1, t2) with op in < <= = >= > !=
#                 ("and", (f, ...)) ("or", (f, ...)) ("not", f) ("exists", (name, ...), f)


class ParseError(ValueError):
    """Text outside the grammar; ``pos`` is the character offset."""

    def __init__(self, msg: str, pos: int, text: str):
        if text:
            snippet = text[max(0, pos - 30):pos + 30].replace("\n", " ")
            msg = f"{msg} at character {pos} (near '{snippet}')"
        super().__init__(msg)
        self.pos = pos


@dataclass(frozen=True)
class Piece:
    """One disjunct of a set: tuple name, dimension names, constraint (a formula)."""

    tuple_name: str
    dims: tuple
    formula: tuple


@dataclass(frozen=True)
class IslSet:
    params: tuple
    pieces: tuple  # of Piece; no piece means the empty set

    @property
    def arity(self) -> int:
        return len(self.pieces[0].dims) if self.pieces else 0


_TOKEN = re.compile(r"\s*(?:(?P<num>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_']*)|"
                    r"(?P<op><=|>=|!=|->|[-+*/%(){}\[\]:;,<>=]))")
_KEYWORDS = {"and", "or", "not", "exists", "floor", "mod", "true", "false"}
_CMP = {"<", "<=", "=", ">=", ">", "!="}


def _tokens(text: str) -> list:
    out, pos = [], 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                break
            raise ParseError(f"unexpected character {text[pos]!r}", pos, text)
        kind = m.lastgroup
        val = m.group(kind)
        out.append((kind, val, m.start(kind)))
        pos = m.end()
    out += [("end", "", n)] * 3  # padding: peek(k) needs no bounds check (k <= 2)
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.fresh = 0
        self.boolean = _boolean_parens(self.toks)

    # ---------------------------------------------------------------- helpers
    def peek(self, k: int = 0):
        return self.toks[self.i + k]

    def at(self, val: str) -> bool:
        kind, v, _ = self.toks[self.i]
        return v == val and kind != "num"

    def take(self, val: str | None = None, kind: str | None = None):
        t = self.peek()
        if (val is not None and (t[1] != val or t[0] == "num")) or \
                (kind is not None and t[0] != kind):
            want = repr(val) if val is not None else kind
            got = repr(t[1]) if t[0] != "end" else "the end of the text"
            raise ParseError(f"expected {want}, found {got}", t[2], self.text)
        self.i += 1
        return t

    def error(self, msg: str):
        raise ParseError(msg, self.peek()[2], self.text)

    def name(self) -> str:
        t = self.take(kind="name")
        if t[1] in _KEYWORDS:
            raise ParseError(f"expected a name, found the keyword {t[1]!r}", t[2], self.text)
        return t[1]

    # ---------------------------------------------------------------- sets
    def parse_set(self) -> IslSet:
        params: tuple = ()
        if self.at("["):
            self.take("[")
            names = []
            if not self.at("]"):
                names.append(self.name())
                while self.at(","):
                    self.take(",")
                    names.append(self.name())
            self.take("]")
            self.take("->")
            params = tuple(names)
            if len(set(params)) != len(params):
                self.error("a parameter is named twice")
        self.take("{")
        pieces = []
        if not self.at("}"):
            pieces.append(self.piece(params))
            while self.at(";"):
                self.take(";")
                pieces.append(self.piece(params))
        self.take("}")
        if self.peek()[0] != "end":
            self.error("text after the closing '}'")
        if pieces:
            ar = len(pieces[0].dims)
            for p in pieces[1:]:
                if len(p.dims) != ar or p.tuple_name != pieces[0].tuple_name:
                    self.error("the pieces of a set must have the same tuple (name and arity)")
        return IslSet(params, tuple(pieces))

    def piece(self, params) -> Piece:
        tname = ""
        if self.at(":") or self.at("}") or self.at(";"):  # a parameter-only set: { : N > 3 }
            return Piece("", (), self._constraint(()))
        if self.peek()[0] == "name" and self.peek(1)[1] == "[":
            tname = self.name()
        self.take("[")
        dims, eqs = [], []
        if not self.at("]"):
            while True:
                # a fresh name is a dimension, ``name = term`` a dimension equal to the term
                # (isl prints [i, j = 2i]), anything else a dimension equal to that term
                t, t1 = self.peek(), self.peek(1)
                fresh = t[0] == "name" and t[1] not in _KEYWORDS and t[1] not in params \
                    and t[1] not in dims
                if fresh and t1[1] in (",", "]"):
                    dims.append(self.name())
                elif fresh and t1[1] == "=" and t1[0] == "op":
                    d = self.name()
                    self.take("=")
                    dims.append(d)
                    eqs.append(("cmp", "=", ("var", d), self.term()))
                else:
                    self.fresh += 1
                    d = f"#t{self.fresh}"  # cannot clash with a name of the text
                    dims.append(d)
                    eqs.append(("cmp", "=", ("var", d), self.term()))
                if self.at(","):
                    self.take(",")
                    continue
                break
        self.take("]")
        if len(set(dims)) != len(dims):
            self.error("a tuple names a dimension twice")
        f = self._constraint(eqs)
        return Piece(tname, tuple(dims), f)

    def _constraint(self, eqs):
        f = ("true",)
        if self.at(":"):
            self.take(":")
            f = self.formula()
        return ("and", tuple(eqs) + (f,)) if eqs else f

    # ---------------------------------------------------------------- formulas
    def formula(self):
        parts = [self.conj()]
        while self.at("or"):
            self.take("or")
            parts.append(self.conj())
        return parts[0] if len(parts) == 1 else ("or", tuple(parts))

    def conj(self):
        parts = [self.neg()]
        while self.at("and"):
            self.take("and")
            parts.append(self.neg())
        return parts[0] if len(parts) == 1 else ("and", tuple(parts))

    def neg(self):
        if self.at("not"):
            self.take("not")
            return ("not", self.neg())
        return self.atom()

    def atom(self):
        if self.at("exists"):
            self.take("exists")
            self.take("(")
            names, eqs = [], []
            while True:
                v = self.name()
                names.append(v)
                if self.at("="):  # isl prints exists (e0 = floor((i)/4) : ...)
                    self.take("=")
                    eqs.append(("cmp", "=", ("var", v), self.term()))
                if not self.at(","):
                    break
                self.take(",")
            if len(set(names)) != len(names):
                self.error("an exists binds a name twice")
            self.take(":")
            body = self.formula()
            self.take(")")
            return ("exists", tuple(names), ("and", tuple(eqs) + (body,)) if eqs else body)
        if self.at("true") or self.at("false"):
            return (self.take()[1],)
        item = self.item()
        if item[0] == "formula":
            if self.peek()[1] in _CMP:
                self.error("a comparison needs terms on both sides, not a formula")
            return item[1]
        return self.chain(item[1])

    def chain(self, first):
        if self.peek()[1] not in _CMP or self.peek()[0] != "op":
            self.error("expected a comparison (<, <=, =, >=, >, !=)")
        parts, lhs = [], first
        while self.peek()[0] == "op" and self.peek()[1] in _CMP:
            op = self.take()[1]
            rhs = self.term()
            parts.append(("cmp", op, lhs, rhs))
            lhs = rhs
        return parts[0] if len(parts) == 1 else ("and", tuple(parts))

    def item(self):
        """A term, or a parenthesized formula: a parenthesis holds a formula exactly when a
        comparison, a boolean keyword or a parenthesized formula stands at its own top level
        (``(a < b)``, ``((x) mod 4 = 0)``, ``((a = b))``), and a term otherwise
        (``((a) mod 4)``). Returns ("term", t)
        or ("formula", f)."""
        if self.at("(") and self.i in self.boolean:
            self.take("(")
            f = self.formula()
            self.take(")")
            return ("formula", f)
        return ("term", self.term())

    # ---------------------------------------------------------------- terms
    def term(self):
        parts = [self.product()]
        while self.peek()[0] == "op" and self.peek()[1] in "+-":
            op = self.take()[1]
            p = self.product()
            parts.append(p if op == "+" else ("mul", -1, p))
        return parts[0] if len(parts) == 1 else ("add", tuple(parts))

    def product(self):
        t = self.unary()
        while True:
            if self.peek()[0] == "op" and self.peek()[1] == "*":
                self.take("*")
                u = self.unary()
                t = self._mul(t, u)
            elif self.at("mod"):
                self.take("mod")
                t = ("mod", t, self.divisor())
            elif self.peek()[0] == "op" and self.peek()[1] == "%":
                self.take("%")
                t = ("mod", t, self.divisor())
            elif t[0] == "num" and self.peek()[0] == "name" and \
                    self.peek()[1] not in _KEYWORDS:  # isl's 2i0
                t = self._mul(t, self.unary())
            else:
                return t

    def _mul(self, a, b):
        ka, kb = _const(a), _const(b)
        if ka is None and kb is None:
            self.error("a product of two non-constant terms is not linear")
        if ka is not None and kb is not None:
            return ("num", ka * kb)
        return ("mul", ka, b) if ka is not None else ("mul", kb, a)

    def divisor(self) -> int:
        if self.at("("):
            self.take("(")
            d = self.divisor()
            self.take(")")
            return d
        t = self.take(kind="num") if self.peek()[0] == "num" else None
        if t is None:
            self.error("the divisor of floor/mod must be a positive integer constant")
        d = int(t[1])
        if d <= 0:
            raise ParseError("the divisor of floor/mod must be positive", t[2], self.text)
        return d

    def unary(self):
        if self.peek()[0] == "op" and self.peek()[1] == "-":
            self.take("-")
            u = self.unary()
            k = _const(u)
            return ("num", -k) if k is not None else ("mul", -1, u)
        if self.peek()[0] == "op" and self.peek()[1] == "+":
            self.take("+")
            return self.unary()
        return self.primary()

    def primary(self):
        kind, val, pos = self.peek()
        if kind == "num":
            self.take()
            return ("num", int(val))
        if val == "floor" and kind == "name":
            self.take("floor")
            self.take("(")
            num = self.term()
            self.take("/")
            d = self.divisor()
            self.take(")")
            return ("floor", num, d)
        if kind == "name" and val not in _KEYWORDS:
            self.take()
            return ("var", val)
        if val == "(" and kind == "op":
            self.take("(")
            t = self.term()
            self.take(")")
            return t
        got = repr(val) if kind != "end" else "the end of the text"
        raise ParseError(f"expected a term, found {got}", pos, self.text)


def _const(t):
    return t[1] if t[0] == "num" else None


def _boolean_parens(toks) -> set:
    """Token indices of the '(' whose contents, at their own top level, hold a comparison,
    a boolean keyword or such a parenthesis (one pass; unbalanced text is left to the
    parser to report)."""
    out, stack = set(), []
    for k, (kind, val, _) in enumerate(toks):
        if kind == "op" and val == "(":
            stack.append(k)
        elif kind == "op" and val == ")":
            if stack:
                k0 = stack.pop()
                if k0 in out and stack:  # ((a < b)): a formula inside makes one
                    out.add(stack[-1])
        elif stack and ((kind == "op" and val in _CMP) or
                        (kind == "name" and val in ("and", "or", "not", "exists", "true",
                                                    "false"))):
            out.add(stack[-1])
    return out


def parse_set(text: str) -> IslSet:
    """Parse an isl set text (see the module docstring); ``ParseError`` if outside it."""
    if not isinstance(text, str):
        raise ParseError(f"expected isl text, got {type(text).__name__}", 0, "")
    return _parsed(text)


@functools.lru_cache(maxsize=2048)
def _parsed(text: str) -> IslSet:
    # an obligation's texts are read for its script, its witnessed script and its
    # witnesses; the trees are immutable, so one parse serves them all
    return _Parser(text).parse_set()


def parse_term(text: str):
    """Parse a whole text as one quasi-affine term (``ParseError`` if it is not one)."""
    if not isinstance(text, str):
        raise ParseError(f"expected a term's text, got {type(text).__name__}", 0, "")
    return _term_parsed(text)


@functools.lru_cache(maxsize=8192)
def _term_parsed(text: str):
    # witness terms repeat (``x6``, ``((x3) mod 2)``, ...) across candidates, sets and
    # scripts, and each is read from isl's print and again for every script; trees are
    # immutable, so one parse serves them all
    p = _Parser(text)
    t = p.term()
    if p.peek()[0] != "end":
        p.error("text after the term")
    return t


def free_names(f, bound=frozenset()) -> set:
    """Names a formula or term uses that no ``exists`` inside it binds."""
    tag = f[0]
    if tag == "var":
        return set() if f[1] in bound else {f[1]}
    if tag in ("num", "true", "false"):
        return set()
    if tag == "cmp":
        return free_names(f[2], bound) | free_names(f[3], bound)
    if tag in ("and", "or", "add"):
        out = set()
        for x in f[1]:
            out |= free_names(x, bound)
        return out
    if tag == "not":
        return free_names(f[1], bound)
    if tag == "mul":
        return free_names(f[2], bound)
    if tag in ("floor", "mod"):
        return free_names(f[1], bound)
    if tag == "exists":
        return free_names(f[2], bound | set(f[1]))
    raise ValueError(f"not a syntax-tree node: {tag!r}")
