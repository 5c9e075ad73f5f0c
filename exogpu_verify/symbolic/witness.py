"""Witnesses: the instances that order a conflicting pair, given as terms, so that the
solvers decide an obligation without quantifiers.

An ordered set is ``O = { x : exists v . F(x, v) }``: the pairs ``x`` for which some
instances ``v`` of the synchronization in between (an Arrive, the Await that matches it,
...) exist. The obligation's script asserts the conflict set ``C(x)`` and ``not O(x)``, so
``v`` becomes universal and the solvers face quantified arithmetic, which is where their
time goes. When proving, isl knows which part ``D`` of the conflict set an ordered set
discharges (what was still left of it, intersected with it), and its ``lexmin`` gives ``v``
on ``D`` as a piecewise quasi-affine function of ``x`` and the sizes: pieces
``v = w_1(x), ..., w_k(x)``. The *witnessed* script asserts ``C(x)`` and, for every ordered
set and every piece, ``not F(x, w_j(x))``: no quantifier is left (``F`` has no negated
quantifier, else there is no witness), and Z3 and cvc5 decide it in milliseconds where the
quantified script takes seconds.

Sound whatever the terms are: ``not exists v . F(x, v)`` implies ``not F(x, w)`` for any
term ``w``, so the witnessed script is implied by the quantified one, and its ``unsat``
proves the obligation. A witness is never trusted: a wrong one only makes the witnessed
script satisfiable, and then the quantified script is decided instead (when proving) or the
certificate is refused (when re-checking). Nothing here needs isl except ``compute``.

Names are canonical, so that a witness means the same to every reader of the text: the
set's dimensions are ``x0, x1, ...`` by position and the variables its ``exists`` bind are
``v0, v1, ...`` in order of appearance (with a longer prefix if a size parameter has such a
name); a variable bound in one disjunct only is 0 in the others.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .isltext import IslSet, ParseError, free_names, parse_set, parse_term
from .prune import formula_text, term_text as _term_text

#: at most this many pieces per ordered set (more: no witness, the quantified script)
MAX_PIECES = 16


class WitnessError(ValueError):
    """A witness that does not fit its ordered set (arity, names, syntax)."""


@dataclass(frozen=True)
class Flat:
    """An ordered set without its quantifiers: each piece's formula over the canonical
    dimension names ``dims`` and bound variables ``vars`` (pinned to 0 where unused)."""

    params: tuple
    dims: tuple
    vars: tuple
    pieces: tuple  # formulas (syntax trees of isltext), one per piece of the set
    tuple_name: str = ""


def _prefixes(params) -> tuple[str, str]:
    x, v = "x", "v"
    while any(re.fullmatch(fr"({x}|{v})\d+", p) for p in params):
        x, v = x + "x", v + "v"
    return x, v


def flatten(s: IslSet) -> Flat | None:
    """``s`` with its bound variables made free (see the module docstring); None when a
    quantifier stands under a negation (no witness can replace it) or ``s`` is empty."""
    if not s.pieces:
        return None
    xp, vp = _prefixes(s.params)
    dims = tuple(f"{xp}{i}" for i in range(s.arity))
    out_vars: list = []
    forms = []
    try:
        for pc in s.pieces:
            env = {d: ("var", n) for d, n in zip(pc.dims, dims)}
            for p in s.params:
                env.setdefault(p, ("var", p))
            mine: list = []
            forms.append((_form(pc.formula, env, mine, vp, out_vars), mine))
    except _Negated:
        return None
    pieces = tuple(_pin(f, [v for v in out_vars if v not in mine]) for f, mine in forms)
    return Flat(s.params, dims, tuple(out_vars), pieces, s.pieces[0].tuple_name)


class _Negated(Exception):
    pass


def _pin(f, others):
    if not others:
        return f
    return ("and", (f,) + tuple(("cmp", "=", ("var", v), ("num", 0)) for v in others))


def _term(t, env):
    tag = t[0]
    if tag == "num":
        return t
    if tag == "var":
        return env.get(t[1], t)
    if tag == "add":
        return ("add", tuple(_term(x, env) for x in t[1]))
    if tag == "mul":
        return ("mul", t[1], _term(t[2], env))
    if tag in ("floor", "mod"):
        return (tag, _term(t[1], env), t[2])
    raise ValueError(f"not a term: {tag!r}")


def _has_exists(f) -> bool:
    tag = f[0]
    if tag == "exists":
        return True
    if tag in ("and", "or"):
        return any(_has_exists(x) for x in f[1])
    if tag == "not":
        return _has_exists(f[1])
    return False


def _form(f, env, mine: list, vp: str, out_vars: list):
    """``f`` renamed by ``env``, its ``exists`` removed (their variables appended to
    ``mine`` and ``out_vars``; a disjunct pins the others' variables to 0)."""
    tag = f[0]
    if tag in ("true", "false"):
        return f
    if tag == "cmp":
        return ("cmp", f[1], _term(f[2], env), _term(f[3], env))
    if tag == "and":
        return ("and", tuple(_form(x, env, mine, vp, out_vars) for x in f[1]))
    if tag == "or":
        parts, owned = [], []
        for x in f[1]:
            own: list = []
            parts.append(_form(x, env, own, vp, out_vars))
            owned.append(own)
            mine += own
        return ("or", tuple(_pin(p, [v for o in owned if o is not own_k for v in o])
                            for p, own_k in zip(parts, owned)))
    if tag == "not":
        if _has_exists(f[1]):
            raise _Negated
        return ("not", _form(f[1], env, mine, vp, out_vars))
    if tag == "exists":
        inner = dict(env)
        for v in f[1]:
            name = f"{vp}{len(out_vars)}"
            out_vars.append(name)
            mine.append(name)
            inner[v] = ("var", name)
        return _form(f[2], inner, mine, vp, out_vars)
    raise ValueError(f"not a syntax-tree node: {tag!r}")


# ------------------------------------------------------------------------ isl text


def term_text(t) -> str:
    """A term in isl's syntax (``parse_term`` reads it back to the same tree)."""
    return _term_text(t, compact=True)


def map_text(flat: Flat) -> str:
    """The isl map from the set's points to its bound variables."""
    head = f"[{', '.join(flat.params)}] -> " if flat.params else ""
    dom, rng = ", ".join(flat.dims), ", ".join(flat.vars)
    return head + "{ " + " ; ".join(f"{flat.tuple_name}[{dom}] -> [{rng}] : {formula_text(f)}"
                                    for f in flat.pieces) + " }"


# ------------------------------------------------------------------------ computing (isl)


class Ordered:
    """An ordered set read by isl once: as the relation from its points to its bound
    variables when it has a flat form (``flatten``; then ``set`` is that relation's domain,
    the same set as the text's), else as the set alone (no witness)."""

    def __init__(self, text: str):
        import islpy as isl

        self.text = text
        try:
            self.flat = flatten(parse_set(text))
        except ParseError:
            self.flat = None
        self.rel = None
        if self.flat is not None and self.flat.vars:
            try:
                self.rel = isl.Map(map_text(self.flat))
                self.set = self.rel.domain()
                return
            except isl.Error:  # not expected; then the set alone, without a witness
                self.flat, self.rel = None, None
        self.set = isl.Set(text)

    def witness(self, domain):
        """The witness on ``domain`` (the pairs this set has to order), as ``compute``."""
        if self.flat is None:
            return None
        if not self.flat.vars:
            return [[]]
        return _lexmin(self.flat, self.rel, domain)


def ordered(text: str) -> Ordered:
    """``Ordered(text)``, read once per text (obligations of one program share orderings:
    the WAR and WAW of one buffer, the RAW of its two operands); isl objects are immutable.
    Keyed by the plain text, so the cache holds no candidate's builder alive."""
    return _ordered(str(text))


@functools.lru_cache(maxsize=512)
def _ordered(text: str) -> Ordered:
    return Ordered(text)


def compute(domain, text: str):
    """The witness of the ordered set ``text`` on ``domain`` (an isl set in its space:
    the pairs it has to order): a list of candidates, each a list of term texts, one per
    bound variable; ``[[]]`` for a set without quantifiers; None when there is none
    (a quantifier under a negation, too many pieces, or isl cannot compute it)."""
    return ordered(text).witness(domain)


def _lexmin(flat: Flat, rel, domain):
    import islpy as isl

    try:
        pma = rel.intersect_domain(domain.coalesce()).lexmin_pw_multi_aff()
        if pma.n_piece() > MAX_PIECES:
            return None
        pieces: list = []
        pma.foreach_piece(lambda _s, ma: pieces.append(ma))
        out = []
        for ma in pieces:
            cand = [term_text(parse_term(_aff_body(str(ma.get_at(k)))))
                    for k in range(len(flat.vars))]
            out.append(cand)
    except (isl.Error, ParseError, ValueError):
        return None
    try:
        parse_witness(flat, out)
    except WitnessError:
        return None
    return out


def _aff_body(text: str) -> str:
    """``(expr)`` of isl's printed ``[P] -> { [x0, ...] -> [(expr)] }``."""
    i = text.rindex("-> [")
    return text[i + 4:text.rindex("]")]


# ------------------------------------------------------------------------ reading


def parse_witness(flat: Flat, witness) -> list:
    """The candidates of ``witness`` (a list of lists of term texts) as syntax trees;
    ``WitnessError`` naming the candidate and term when one does not fit ``flat``."""
    if not isinstance(witness, list):
        raise WitnessError(f": expected a list of candidates, found {type(witness).__name__}")
    known = set(flat.params) | set(flat.dims)
    out = []
    for k, cand in enumerate(witness):
        if not isinstance(cand, list) or not all(isinstance(t, str) for t in cand):
            raise WitnessError(f"[{k}]: expected a list of term texts")
        if len(cand) != len(flat.vars):
            raise WitnessError(f"[{k}]: {len(cand)} term(s), the set binds {len(flat.vars)} "
                               f"variable(s) ({', '.join(flat.vars) or 'none'})")
        terms = []
        for m, t in enumerate(cand):
            try:
                tree = parse_term(t)
            except ParseError as e:
                raise WitnessError(f"[{k}][{m}]: bad term ({e})") from None
            unknown = free_names(tree) - known
            if unknown:
                raise WitnessError(f"[{k}][{m}]: unknown name(s) {', '.join(sorted(unknown))} "
                                   f"(a witness term may use the sizes and the dimensions "
                                   f"{', '.join(flat.dims)})")
            terms.append(tree)
        out.append(terms)
    return out
