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
quantified script takes seconds. A holder union (``flatten_union``: every thread ``t`` of
B runs some holder instance ``v``) has one: ``not O(x)`` makes ``t`` existential (new
constants in the script) and ``v`` universal, and ``w_j(x, t)`` are terms over both.

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
    #: a holder union (``flatten_union``): the variables of its universal (B's thread and
    #: its helpers), ``v0 ...`` before ``vars``, which witness terms may use; the formula
    #: outside the universal (``base``, over ``dims``) and the universal's guard (``guard``,
    #: over ``dims`` and ``outer``); ``pieces`` is then the one formula under the universal
    outer: tuple = ()
    base: tuple = ("true",)
    guard: tuple = ("true",)


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


def flatten_union(s: IslSet) -> Flat | None:
    """A holder union ``O = { x : P(x) and not (exists t : G(x, t) and not (exists v :
    F(x, t, v))) }`` (``Builder.union_text``: every thread ``t`` of B runs some holder
    instance ``v``) as a ``Flat`` with ``outer`` the variables ``t`` (``v0 ...``), ``vars``
    those of ``v`` (numbered on), ``base`` P, ``guard`` G and the one piece F; None for any
    other shape (P and G without quantifiers, F without one under a negation, one piece).
    Under the obligation's negation ``not O(x)`` is ``not P(x) or exists t . G(x, t) and
    forall v . not F(x, t, v)``: a witness gives ``v`` as terms over ``x`` and ``t``."""
    if len(s.pieces) != 1:
        return None
    pc = s.pieces[0]
    parts = _conjuncts(pc.formula) if pc.formula[0] == "and" else [pc.formula]
    unis = [x for x in parts if x[0] == "not" and x[1][0] == "exists"]
    base = [x for x in parts if not (x[0] == "not" and x[1][0] == "exists")]
    if len(unis) != 1 or any(_has_exists(x) for x in base):
        return None
    outer, body = unis[0][1][1], unis[0][1][2]
    inner = _conjuncts(body) if body[0] == "and" else [body]
    holds = [x for x in inner if x[0] == "not" and x[1][0] == "exists"]
    guard = [x for x in inner if not (x[0] == "not" and x[1][0] == "exists")]
    if len(holds) != 1 or any(_has_exists(x) for x in guard):
        return None
    xp, vp = _prefixes(s.params)
    dims = tuple(f"{xp}{i}" for i in range(len(pc.dims)))
    env = {d: ("var", n) for d, n in zip(pc.dims, dims)}
    for p in s.params:
        env.setdefault(p, ("var", p))
    out_vars: list = []
    inner_env = dict(env)
    for v in outer:
        name = f"{vp}{len(out_vars)}"
        out_vars.append(name)
        inner_env[v] = ("var", name)
    scratch: list = []
    try:
        f = _form(holds[0][1], inner_env, scratch, vp, out_vars)
        p_form = _form(_and(base), env, [], vp, [])
        g_form = _form(_and(guard), inner_env, [], vp, [])
    except _Negated:
        return None
    k = len(outer)
    if len(out_vars) == k:  # no instance to give: not a holder union
        return None
    return Flat(s.params, dims, tuple(out_vars[k:]), (f,), pc.tuple_name,
                tuple(out_vars[:k]), p_form, g_form)


def _and(parts: list):
    return ("true",) if not parts else parts[0] if len(parts) == 1 else ("and", tuple(parts))


def witness_form(s: IslSet) -> Flat | None:
    """The form a witness of ``s`` fits: ``flatten``, else ``flatten_union``."""
    flat = flatten(s)
    return flat if flat is not None else flatten_union(s)


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
    """The isl map from the set's points to its bound variables, each conjunction's
    conjuncts in the order isl reads fastest (``conjuncts_first``). For a holder union:
    from the points and B's thread (``[dims, outer]``, no tuple name) to the holder's
    instances, where ``base`` and ``guard`` hold."""
    head = f"[{', '.join(flat.params)}] -> " if flat.params else ""
    rng = ", ".join(flat.vars)
    if flat.outer:
        f = ("and", (flat.base, flat.guard) + flat.pieces)
        return (head + "{ [" + ", ".join(flat.dims + flat.outer) + f"] -> [{rng}] : "
                + formula_text(conjuncts_first(f)) + " }")
    dom = ", ".join(flat.dims)
    return head + "{ " + " ; ".join(
        f"{flat.tuple_name}[{dom}] -> [{rng}] : {formula_text(conjuncts_first(f))}"
        for f in flat.pieces) + " }"


def _union_texts(flat: Flat) -> tuple[str, str]:
    """A holder union's ``base`` (over its points) and ``base and guard`` (over the points
    and B's thread) as isl set texts."""
    head = f"[{', '.join(flat.params)}] -> " if flat.params else ""
    base = (head + f"{{ {flat.tuple_name}[{', '.join(flat.dims)}] : "
            f"{formula_text(flat.base)} }}")
    guard = (head + "{ [" + ", ".join(flat.dims + flat.outer) + "] : "
             + formula_text(conjuncts_first(("and", (flat.base, flat.guard)))) + " }")
    return base, guard


def conjuncts_first(f):
    """``f`` with nested conjunctions made one and their conjuncts reordered: equalities
    first, then other comparisons, then disjunctions, fewest disjuncts first. The same
    formula (conjunction commutes). isl reads ``a and b`` by intersecting what it read of
    each, in text order, so a disjunction read after the equalities meets one basic set
    where its dead disjuncts die at once, instead of multiplying with the disjunctions
    before it (the flattened orderings: isl reads them in half the time)."""
    tag = f[0]
    if tag == "and":
        parts = [conjuncts_first(x) for x in _conjuncts(f)]
        return ("and", tuple(sorted(parts, key=_read_rank)))  # sorted() is stable
    if tag == "or":
        return ("or", tuple(conjuncts_first(x) for x in f[1]))
    if tag == "not":
        return ("not", conjuncts_first(f[1]))
    return f


def _conjuncts(f) -> list:
    out = []
    for x in f[1]:
        out += _conjuncts(x) if x[0] == "and" else [x]
    return out


def _has_div(t) -> bool:
    tag = t[0]
    if tag in ("floor", "mod"):
        return True
    if tag == "add":
        return any(_has_div(x) for x in t[1])
    return tag == "mul" and _has_div(t[2])


def _read_rank(f) -> tuple:
    if f[0] == "cmp":
        div = _has_div(f[2]) or _has_div(f[3])
        return (0 if f[1] == "=" and not div else 2 if div else 1, 0)
    if f[0] == "or":
        return (4, len(f[1]))
    return (3, 0)


# ------------------------------------------------------------------------ computing (isl)


class Ordered:
    """An ordered set read by isl once: as the relation from its points to its bound
    variables when it has a flat form (``flatten``; then ``set`` is that relation's domain,
    the same set as the text's), else as the set alone (no witness). A holder union
    (``flatten_union``) is read as the relation from its points and B's thread to the
    holder's instances, and the parts of a set it covers are derived from that relation
    (``split``); isl reads its text (``set``), slow for a negated quantifier, only when
    asked."""

    def __init__(self, text: str):
        import islpy as isl

        self.text = text
        self._set = None
        try:
            s = parse_set(text)
            self.flat = flatten(s)
            if self.flat is None:
                self.flat = flatten_union(s)
        except ParseError:
            self.flat = None
        self.rel = None
        if self.flat is not None and self.flat.vars:
            try:
                self.rel = isl.Map(map_text(self.flat))
                if self.flat.outer:
                    base, guard = _union_texts(self.flat)
                    self.base, self.guard = isl.Set(base), isl.Set(guard)
                    self.held = self.rel.domain()
                else:
                    self._set = self.rel.domain()
                return
            except isl.Error:  # not expected; then the set alone, without a witness
                self.flat, self.rel = None, None
        self._set = isl.Set(text)

    @property
    def set(self):
        """The set itself (an isl set in the text's space)."""
        if self._set is None:
            import islpy as isl

            self._set = isl.Set(self.text)
        return self._set

    def split(self, left):
        """``(left & O, left - O)`` for an isl set ``left`` in the set's space; the second
        is ``left`` itself when the first is empty. For a holder union, from the relation:
        ``left - O`` is the part of ``left`` outside ``base`` and the points of ``left``
        with a thread of B (``guard``) that runs no holder instance (outside ``held``, the
        relation's domain), exactly the complement of the universal."""
        if self._set is not None or self.flat is None or not self.flat.outer:
            met = left.intersect(self.set)
            # left - met is left - O, and isl subtracts the smaller set in half the time
            return met, (left if met.is_empty() else left.subtract(met))
        import islpy as isl

        n, k = len(self.flat.dims), len(self.flat.outer)
        bad = self._lift(left).intersect(self.guard).subtract(self.held) \
            .project_out(isl.dim_type.set, n, k)
        name = left.get_tuple_name()
        if name:
            bad = bad.set_tuple_name(name)
        inside = left.intersect(self.base)
        met = inside.subtract(bad)
        if met.is_empty():
            return met, left
        return met, left.subtract(self.base).union(inside.intersect(bad))

    def _lift(self, left):
        """``left`` times every value of ``outer`` (the relation's domain space)."""
        import islpy as isl

        return left.reset_tuple_id().insert_dims(isl.dim_type.set, len(self.flat.dims),
                                                  len(self.flat.outer))

    def witness(self, domain):
        """The witness on ``domain`` (the pairs this set has to order), as ``compute``."""
        if self.flat is None:
            return None
        if not self.flat.vars:
            return [[]]
        if self.flat.outer:  # every thread of B on ``domain``: the relation's domain
            domain = self._lift(domain).intersect(self.guard)
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
        # The domain's existentials dropped (``remove_divs``: a superset of the pairs to
        # order, so the pieces still cover them; a witness is only a hint the discharge
        # re-checks) and equalities made explicit: lexmin then works on fewer variables
        # and eliminates the ones the equalities fix (lexmin 1.7 -> 1.2 s of CPU on the
        # ping-pong GEMM).
        pma = rel.intersect_domain(domain.remove_divs().coalesce()).detect_equalities() \
            .lexmin_pw_multi_aff()
        if pma.n_piece() > MAX_PIECES:
            return None
        pieces: list = []
        pma.foreach_piece(lambda s, ma: pieces.append(ma)
                          if not s.intersect(domain).is_empty() else None)
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
    known = set(flat.params) | set(flat.dims) | set(flat.outer)
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
                                   f"{', '.join(flat.dims + flat.outer)})")
            terms.append(tree)
        out.append(terms)
    return out
