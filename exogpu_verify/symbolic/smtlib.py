"""A whole obligation as one SMT-LIB2 script, built from its isl texts by our own reader.

An obligation says: every point of the conflict set ``C`` (instance pairs and elements,
over the size parameters) lies in one of the ordered sets ``O1 .. On`` subtracted from it.
The script declares the parameters and the conflict set's dimensions as integer constants
and asserts ``C`` and ``not Oi`` for every i, so it is satisfiable exactly when some
conflicting pair at some sizes is ordered by nothing: ``unsat`` is the proof. Existentials
of ``C`` stay existentials; those of an ``Oi`` become universals under its negation (the
script keeps ``(not (exists ...))`` and leaves the alternation to the solver: quantified
linear integer arithmetic is decidable, and Z3 and cvc5 both decide it).

With ``witnesses`` (``witness.py``) the script is the *witnessed* one: each ``Oi``'s bound
variables are replaced by the terms of each of its witness's candidates, so no quantifier
is left, and the script is implied by the quantified one (its ``unsat`` is a proof too).

Like isl, sets are matched by parameter *name* and by dimension *position*: dimension i of
every ``Oi`` is dimension i of ``C``. ``floor(t/d)`` and ``t mod d`` become SMT-LIB ``div``
and ``mod`` by the positive numeral ``d`` (there they mean exactly floor and the
non-negative remainder). Nothing of isl is used here: ``isltext.py`` reads the texts.
"""

from __future__ import annotations

import re

from .isltext import IslSet, ParseError, free_names, parse_set
from .witness import WitnessError, parse_witness, witness_form

LOGIC = "LIA"
_SIMPLE = re.compile(r"^[A-Za-z_~!@$%^&*+=<>.?/-][A-Za-z0-9_~!@$%^&*+=<>.?/-]*$")
# SMT-LIB reserved words and the theory's function symbols: never variable names
_RESERVED = {"and", "or", "not", "exists", "forall", "let", "par", "as", "ite", "distinct",
             "true", "false", "div", "mod", "abs", "to_real", "to_int", "is_int", "_", "!",
             "match", "NUMERAL", "DECIMAL", "STRING", "BINARY", "HEXADECIMAL", "Int", "Bool",
             "Real", "assert", "check-sat", "declare-fun", "declare-const", "define-fun",
             "set-logic", "set-info", "set-option", "exit", "push", "pop"}


class SpaceMismatch(ValueError):
    """The sets of an obligation do not live in one space (arity or tuple name differs)."""


def _sym(name: str) -> str:
    return name if _SIMPLE.match(name) else f"|{name}|"


class _Names:
    """Chooses SMT-LIB symbols: isl names where they are valid and not reserved."""

    def __init__(self):
        self.used: set = set()

    def pick(self, want: str) -> str:
        base = want.replace("'", "_p") if "'" in want else want
        if base in _RESERVED or not _SIMPLE.match(base):
            base = f"v_{re.sub(r'[^A-Za-z0-9_]', '_', base)}"
        cand, k = base, 0
        while cand in self.used or cand in _RESERVED:
            k += 1
            cand = f"{base}_{k}"
        self.used.add(cand)
        return cand


def _num(k: int) -> str:
    return str(k) if k >= 0 else f"(- {-k})"


def _render(f, env: dict, names: _Names) -> str:
    tag = f[0]
    if tag == "num":
        return _num(f[1])
    if tag == "var":
        return env[f[1]]  # set_formula checked that every free name is known
    if tag == "add":
        return "(+ " + " ".join(_render(x, env, names) for x in f[1]) + ")"
    if tag == "mul":
        if f[1] == -1:
            return f"(- {_render(f[2], env, names)})"
        return f"(* {_num(f[1])} {_render(f[2], env, names)})"
    if tag == "floor":
        return f"(div {_render(f[1], env, names)} {f[2]})"
    if tag == "mod":
        return f"(mod {_render(f[1], env, names)} {f[2]})"
    if tag == "true":
        return "true"
    if tag == "false":
        return "false"
    if tag == "cmp":
        a, b = _render(f[2], env, names), _render(f[3], env, names)
        if f[1] == "!=":
            return f"(not (= {a} {b}))"
        return f"({f[1]} {a} {b})"
    if tag in ("and", "or"):
        return f"({tag} " + " ".join(_render(x, env, names) for x in f[1]) + ")"
    if tag == "not":
        return f"(not {_render(f[1], env, names)})"
    if tag == "exists":
        inner = dict(env)
        decls = []
        for v in f[1]:
            s = names.pick(v)  # a fresh symbol: no capture of outer names, ever
            inner[v] = _sym(s)
            decls.append(f"({_sym(s)} Int)")
        return f"(exists ({' '.join(decls)}) {_render(f[2], inner, names)})"
    raise ValueError(f"not a syntax-tree node: {tag!r}")


def lift_divisions(f):
    """``f`` with every ``floor(t/d)`` and ``t mod d`` under an ``exists`` replaced by new
    variables of that ``exists``: ``q`` and ``r`` with ``t = d*q + r`` and ``0 <= r < d``
    (the same ``q``, ``r`` for equal terms). An equivalence for a positive numeral ``d``;
    it keeps the quantified bodies linear, which cvc5's quantifier instantiation needs
    (a ``mod`` of a bound variable under a negated ``exists`` defeats it; bench/RESULTS.md).
    Divisions outside every ``exists`` stay as they are."""
    counter = [0]

    def term(t, lifted):
        tag = t[0]
        if tag in ("num", "var"):
            return t
        if tag == "add":
            return ("add", tuple(term(x, lifted) for x in t[1]))
        if tag == "mul":
            return ("mul", t[1], term(t[2], lifted))
        if tag in ("floor", "mod"):
            inner = term(t[1], lifted)
            if lifted is None:
                return (tag, inner, t[2])
            key = (inner, t[2])
            if key not in lifted:
                k = counter[0]
                counter[0] += 1
                lifted[key] = (f"~q{k}", f"~r{k}")
            q, r = lifted[key]
            return ("var", q if tag == "floor" else r)
        raise ValueError(f"not a term: {tag!r}")

    def form(g, lifted):
        tag = g[0]
        if tag in ("true", "false"):
            return g
        if tag == "cmp":
            return ("cmp", g[1], term(g[2], lifted), term(g[3], lifted))
        if tag in ("and", "or"):
            return (tag, tuple(form(x, lifted) for x in g[1]))
        if tag == "not":
            return ("not", form(g[1], lifted))
        if tag == "exists":
            mine: dict = {}
            body = form(g[2], mine)
            if not mine:
                return ("exists", g[1], body)
            names, cons = list(g[1]), []
            for (t, d), (q, r) in mine.items():
                names += [q, r]
                cons += [("cmp", "=", t, ("add", (("mul", d, ("var", q)), ("var", r)))),
                         ("cmp", "<=", ("num", 0), ("var", r)),
                         ("cmp", "<", ("var", r), ("num", d))]
            return ("exists", tuple(names), ("and", tuple(cons) + (body,)))
        raise ValueError(f"not a syntax-tree node: {tag!r}")

    return form(f, None)


def set_formula(s: IslSet, dims: list[str], params: dict, names: _Names,
                lift: bool = False) -> str:
    """The membership formula of ``s`` for the point ``dims`` (SMT symbols, by position);
    ``lift``: divisions under ``exists`` lifted (``lift_divisions``)."""
    if not s.pieces:
        return "false"
    out = []
    for pc in s.pieces:
        if len(pc.dims) != len(dims):
            raise SpaceMismatch(f"a set has {len(pc.dims)} dimensions where the conflict set "
                                f"has {len(dims)}")
        unknown = free_names(pc.formula) - set(s.params) - set(pc.dims)
        if unknown:
            raise ParseError(f"unknown name(s) {', '.join(sorted(unknown))} (neither a "
                             "parameter, nor a dimension, nor bound by exists)", 0, "")
        env = dict(params)
        for d, sym in zip(pc.dims, dims):
            env[d] = sym
        f = lift_divisions(pc.formula) if lift else pc.formula
        if f[0] == "and":  # one top-level conjunct per line, for people reading the script
            out.append("(and\n" + "\n".join(f"    {_render(x, env, names)}" for x in f[1])
                       + ")")
        else:
            out.append(_render(f, env, names))
    return out[0] if len(out) == 1 else "(or\n" + "\n".join(out) + ")"


def _comment(text: str) -> str:
    return " ".join(str(text).split())


def obligation_smtlib(conflict: str, ordered: list, title: str = "",
                      lift: bool = False, witnesses: list | None = None) -> str:
    """The SMT-LIB2 script of an obligation: ``conflict`` and ``ordered`` (a list of
    ``(label, text)``) are isl set texts; see the module docstring. ``witnesses``: one
    witness per ordered set (``witness.py``: candidates, each a list of term texts), and the
    script is the *witnessed* one, without quantifiers: each ordered set's bound variables
    replaced by each candidate's terms. Raises ``ParseError`` (text outside the grammar),
    ``SpaceMismatch`` or ``witness.WitnessError``."""
    C = parse_set(conflict)
    Os = [(lbl, parse_set(t)) for lbl, t in ordered]
    names = _Names()
    pnames: list = list(C.params)
    for _, o in Os:
        for p in o.params:
            if p not in pnames:
                pnames.append(p)
    params = {p: _sym(names.pick(p)) for p in pnames}
    tname = C.pieces[0].tuple_name if C.pieces else None
    ar = C.arity
    for lbl, o in Os:
        if o.pieces and C.pieces and (o.arity != ar or o.pieces[0].tuple_name != tname):
            raise SpaceMismatch(f"the set ordered by {lbl!r} is not in the conflict set's "
                                f"space ([{tname}] with {ar} dimensions)")
    want = list(C.pieces[0].dims) if C.pieces else []
    if any(w.startswith("#") for w in want) or len(set(want)) != len(want):
        want = [f"x{i}" for i in range(ar)]
    dims = [_sym(names.pick(w)) for w in want]
    lines = []
    if title:
        lines.append(f"; exogpu obligation: {_comment(title)}")
    lines += ["; sat = some conflicting instance pair (at some sizes) is ordered by nothing;",
              "; unsat = the obligation holds for every size.",
              f"(set-logic {LOGIC})"]
    lines += [f"(declare-fun {s} () Int)" for s in list(params.values()) + dims]
    lines.append("; the conflict set")
    lines.append(f"(assert {set_formula(C, dims, params, names, lift)})")
    if witnesses is not None and len(witnesses) != len(Os):
        raise WitnessError(f"{len(witnesses)} witness(es) for {len(Os)} ordered set(s)")
    for k, (lbl, o) in enumerate(Os):
        lines.append(f"; minus the pairs ordered by: {_comment(lbl)}")
        if witnesses is None:
            lines.append(f"(assert (not {set_formula(o, dims, params, names, lift)}))")
            continue
        flat = witness_form(o)
        if flat is None:
            raise WitnessError(f"the set ordered by {lbl!r} has a quantifier under a "
                               "negation: no witness can replace it")
        try:
            cands = parse_witness(flat, witnesses[k])
        except WitnessError as e:
            raise WitnessError(f"ordered[{k}].witness{e}") from None
        env0 = dict(params)
        env0.update(zip(flat.dims, dims))
        known = set(params) | set(flat.dims) | set(flat.outer) | set(flat.vars)
        f = flat.pieces[0] if len(flat.pieces) == 1 else ("or", flat.pieces)
        for g in (f, flat.base, flat.guard):
            unknown = free_names(g) - known
            if unknown:
                raise ParseError(f"unknown name(s) {', '.join(sorted(unknown))} in the set "
                                 f"ordered by {lbl!r}", 0, "")
        if flat.outer:
            # not O(x) = not P(x) or exists t . G(x, t) and forall v . not F(x, t, v):
            # t becomes fresh constants (the script is satisfiable exactly when the one
            # with ``exists t`` is), v each candidate's terms over x and t
            lines.append(f"; every thread of B, as {len(flat.outer)} new constant(s), runs "
                         f"none of its holders' instances, given by {len(cands)} "
                         "witness(es) (witness.py)")
            for v in flat.outer:
                env0[v] = _sym(names.pick(v))
                lines.append(f"(declare-fun {env0[v]} () Int)")
        else:
            lines.append(f"; its instances, given by {len(cands)} witness(es) (witness.py)")
        nots = []
        for cand in cands:
            env = dict(env0)
            for v, t in zip(flat.vars, cand):
                env[v] = _render(t, env0, names)
            nots.append(f"(not {_render(f, env, names)})")
        if not flat.outer:
            lines += [f"(assert {x})" for x in nots]
            continue
        lines.append(f"(assert (or (not {_render(flat.base, env0, names)}) (and\n    "
                     f"{_render(flat.guard, env0, names)}\n    " + "\n    ".join(nots) + ")))")
    lines.append("(check-sat)")
    lines.append("(exit)")
    return "\n".join(lines) + "\n"
