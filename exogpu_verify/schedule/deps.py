"""Dependence analysis for rewrites, on integer sets (islpy).

``collect`` lists the data accesses of a block of statements: buffer (window aliases
resolved to the underlying tensor), kind (``R`` read, ``W`` write, ``RED`` reduction),
per-dimension index (a point, or an interval for window arguments of calls), and the loop
variables and guards inside the block that bound each access instance.

``find_conflict`` asks isl whether two groups of access instances, restricted by the
procedure's asserts, the enclosing loop bounds and guards, and an ordering constraint that
describes the instance pairs a rewrite would reverse, touch the same element with at least
one write. Reduction/reduction pairs commute in exact arithmetic: they are reported
separately so the rewrite can record the reassociation (floating-point results may differ).

``prove`` decides a quasi-affine condition for all instances of a context (the set of
context points violating it must be empty). Conditions isl cannot read (boolean
parameters) are dropped from contexts, which only enlarges them: every answer stays sound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import islpy as isl

from ..ir import nodes as N
from ..ir.affine import NotAffine, cond_to_isl_str, to_isl_str
from ..ir.types import ControlType
from ..ir.printer import expr_str
from .irtools import add


@dataclass
class Access:
    buf: str
    kind: str  # R | W | RED
    idx: tuple  # ("pt", e) | ("iv", lo, hi)
    vars: list = field(default_factory=list)  # [(name, lo, hi)] local loop variables
    cons: list = field(default_factory=list)  # local guard conditions (IR)
    path: tuple = ()  # statement path of the access
    text: str = ""
    #: a write that certainly stores every element of ``idx`` (an element assignment, or a
    #: call whose callee assigns its whole window argument): it can hide earlier values
    covers: bool = False


# ---------------------------------------------------------------- contexts


def window_aliases(proc: N.Procedure) -> dict:
    """name -> (base tensor, WindowExpr) for every window statement (chains resolved)."""
    out: dict = {}
    from .irtools import walk

    for s in walk(proc.body):
        if isinstance(s, N.WindowStmt):
            out[s.name] = s.rhs
    return out


def context(proc: N.Procedure, path: tuple, include_self: bool = False):
    """Loop variables ``[(name, lo, hi)]`` and guard conditions enclosing ``path``."""
    vars_, cons = [], []
    cur = proc
    for i, (f, k) in enumerate(path):
        if isinstance(cur, N.If):  # the statements of a branch run under its condition
            cons.append(cur.cond if f == "body" else N.UnOp("not", cur.cond, cur.cond.type))
        if i == len(path) - 1 and not include_self:
            break
        cur = (cur.body if isinstance(cur, N.Procedure) else getattr(cur, f))[k]
        if isinstance(cur, N.For):
            vars_.append((cur.iter, cur.lo, cur.hi))
    return vars_, cons


def _resolve(name, idx, aliases):
    """Translate an index tuple through window aliases to the base tensor."""
    while name in aliases:
        w = aliases[name]
        out, k = [], 0
        for a in w.idx:
            if isinstance(a, N.Point):
                out.append(("pt", a.pt))
            else:
                sub = idx[k]
                k += 1
                if sub[0] == "pt":
                    out.append(("pt", add(a.lo, sub[1])))
                else:
                    out.append(("iv", add(a.lo, sub[1]), add(a.lo, sub[2])))
        name, idx = w.name, tuple(out)
    return name, tuple(idx)


def _param_kinds(callee: N.Procedure) -> dict:
    """Data parameter -> set of access kinds the callee's body performs on it."""
    kinds: dict = {p.name: set() for p in callee.params if p.is_data}
    from .irtools import expr_walk, walk

    aliases = {}
    for s in walk(callee.body):
        if isinstance(s, N.WindowStmt):
            aliases[s.name] = s.rhs.name

    def base(n):
        while n in aliases:
            n = aliases[n]
        return n

    for s in walk(callee.body):
        exprs = []
        if isinstance(s, (N.Assign, N.Reduce)):
            b = base(s.name)
            if b in kinds:
                kinds[b].add("W" if isinstance(s, N.Assign) else "RED")
            exprs = [s.rhs] + list(s.idx)
        elif isinstance(s, N.Call):
            sub = _param_kinds(s.callee)
            for prm, a in zip(s.callee.params, s.args):
                if prm.is_data and isinstance(a, N.WindowExpr) and base(a.name) in kinds:
                    kinds[base(a.name)] |= sub.get(prm.name, set())
        elif isinstance(s, (N.For, N.If)):
            exprs = [getattr(s, "cond", None)] if isinstance(s, N.If) else []
        for e in exprs:
            for x in expr_walk(e):
                if isinstance(x, N.Read) and not isinstance(x.type, ControlType) \
                        and base(x.name) in kinds:
                    kinds[base(x.name)].add("R")
    return kinds


def collect(proc: N.Procedure, stmts, paths, extra_vars=(), extra_cons=()) -> list[Access]:
    """The accesses of ``stmts`` (at ``paths``), with local loops/guards as bounds."""
    aliases = window_aliases(proc)
    out: list[Access] = []

    def reads(e, vs, cs, path):
        from .irtools import expr_walk

        for x in expr_walk(e):
            if isinstance(x, N.Read) and not isinstance(x.type, ControlType):
                name, idx = _resolve(x.name, tuple(("pt", i) for i in x.idx), aliases)
                out.append(Access(name, "R", idx, list(vs), list(cs), path, expr_str(x)))

    def go(s, vs, cs, path):
        if isinstance(s, (N.Assign, N.Reduce)):
            reads(s.rhs, vs, cs, path)
            name, idx = _resolve(s.name, tuple(("pt", i) for i in s.idx), aliases)
            kind = "W" if isinstance(s, N.Assign) else "RED"
            lhs = s.name + (f"[{', '.join(expr_str(i) for i in s.idx)}]" if s.idx else "")
            out.append(Access(name, kind, idx, list(vs), list(cs), path, lhs,
                              covers=kind == "W" and _readable(cs)))
        elif isinstance(s, N.For):
            nv = vs + [(s.iter, s.lo, s.hi)]
            for k, c in enumerate(s.body):
                go(c, nv, cs, path + (("body", k),))
        elif isinstance(s, N.If):
            for k, c in enumerate(s.body):
                go(c, vs, cs + [s.cond], path + (("body", k),))
            neg = N.UnOp("not", s.cond, s.cond.type)
            for k, c in enumerate(s.orelse):
                go(c, vs, cs + [neg], path + (("orelse", k),))
        elif isinstance(s, N.With):
            for k, c in enumerate(s.body):
                go(c, vs, cs, path + (("body", k),))
        elif isinstance(s, N.Call):
            kinds = _param_kinds(s.callee)
            full = full_params(s.callee)
            for prm, a in zip(s.callee.params, s.args):
                if not prm.is_data or not isinstance(a, N.WindowExpr):
                    continue
                idx = tuple(("pt", w.pt) if isinstance(w, N.Point) else ("iv", w.lo, w.hi)
                            for w in a.idx)
                name, idx = _resolve(a.name, idx, aliases)
                for kd in sorted(kinds.get(prm.name, ())) or ["R"]:
                    out.append(Access(name, kd, idx, list(vs), list(cs), path,
                                      f"{s.callee.name}(..{expr_str(a)}..)",
                                      covers=kd == "W" and prm.name in full
                                      and _readable(cs)))

    for s, p in zip(stmts, paths):
        go(s, list(extra_vars), list(extra_cons), p)
    return out


# ---------------------------------------------------------------- isl plumbing


def _params(proc: N.Procedure) -> list[str]:
    return [p.name for p in proc.params if not p.is_data and p.type.name != "bool"]


def _readable(cs) -> bool:
    """Can isl read every guard in ``cs``? A guard it cannot read (a boolean parameter) is
    dropped from the constraints, which enlarges an access's instance set: sound for
    conflicts, but a write so enlarged must not count as covering (storing every element)."""
    return all(_cons_str(c, {}) is not None for c in cs)


def _cons_str(e, rename) -> str | None:
    try:
        return cond_to_isl_str(e, rename)
    except (NotAffine, AttributeError, KeyError, TypeError):
        return None


def base_constraints(proc: N.Procedure, outer_vars, outer_cons, rename=None) -> list[str]:
    rename = rename or {}
    out = []
    for p in proc.params:
        if not p.is_data and p.type.name == "size":
            out.append(f"{p.name} >= 1")
    for pred in proc.preds:
        c = _cons_str(pred, rename)
        if c is not None:
            out.append(c)
    out += var_constraints(outer_vars, outer_cons, rename)
    return out


def var_constraints(vs, cs, rename) -> list[str]:
    out = []
    for name, lo, hi in vs:
        v = rename.get(name, name)
        out.append(f"{to_isl_str(lo, rename)} <= {v} < {to_isl_str(hi, rename)}")
    for c in cs:
        s = _cons_str(c, rename)
        if s is not None:
            out.append(f"({s})")
    return out


_ID = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_KEYWORDS = {"and", "or", "not", "floor", "mod", "exists"}


def make_set(dims: list[str], constraints: list[str]) -> isl.Set:
    """``[params] -> { [dims] : c1 and c2 ... }``; every other identifier is a parameter."""
    body = " and ".join(f"({c})" for c in constraints) or "1 = 1"
    params = sorted({t for t in _ID.findall(body) if t not in dims and t not in _KEYWORDS})
    text = f"[{', '.join(params)}] -> {{ [{', '.join(dims)}] : {body} }}"
    return _parsed_set(text)


@lru_cache(maxsize=4096)
def _parsed_set(text: str) -> isl.Set:
    """isl's parse of ``text``, shared: a schedule asks the same questions again and again
    (about 2 in 3 sets of a GEMM schedule repeat an earlier text). Sharing is safe because
    islpy objects are values: every operation returns a new set (islpy copies an argument
    that isl would consume)."""
    return isl.Set(text)


def prove(proc: N.Procedure, vars_, cons, cond, rename=None) -> bool:
    """Does ``cond`` hold at every point of the context (asserts, ``vars_``, ``cons``)?"""
    rename = rename or {}
    c = _cons_str(cond, rename)
    if c is None:
        return False
    dims = [rename.get(v, v) for v, _, _ in vars_]
    cs = base_constraints(proc, vars_, cons, rename) + [f"not ({c})"]
    try:
        return make_set(dims, cs).is_empty()
    except isl.Error:
        return False


def satisfiable(proc: N.Procedure, vars_, cons, cond=None) -> bool:
    cs = base_constraints(proc, vars_, cons)
    if cond is not None:
        c = _cons_str(cond, {})
        if c is None:
            return True
        cs.append(c)
    try:
        return not make_set([v for v, _, _ in vars_], cs).is_empty()
    except isl.Error:
        return True


@dataclass
class Conflict:
    first: Access
    second: Access
    sample: str

    def describe(self) -> str:
        k = {"R": "read", "W": "write", "RED": "reduction"}
        return (f"{k[self.first.kind]} {self.first.text} and {k[self.second.kind]} "
                f"{self.second.text} touch the same element of '{self.first.buf}' in an "
                f"instance pair the rewrite would reorder (e.g. {self.sample})")


def find_conflicts(proc, outer_vars, outer_cons, A, B, order, suffix=("__a", "__b")):
    """Instance pairs (a in A, b in B) touching one element, with ``order(ra, rb)`` (isl
    constraint strings over the renamed variables) -> (hard conflicts, reduction pairs)."""
    hard, reds = [], []
    for a in A:
        for b in B:
            if a.buf != b.buf or (a.kind == "R" and b.kind == "R"):
                continue
            if len(a.idx) != len(b.idx):
                continue
            ra = {v: v + suffix[0] for v, _, _ in a.vars}
            rb = {v: v + suffix[1] for v, _, _ in b.vars}
            dims = list(ra.values()) + list(rb.values())
            cs = base_constraints(proc, outer_vars, outer_cons)
            try:
                cs += var_constraints(a.vars, a.cons, ra)
                cs += var_constraints(b.vars, b.cons, rb)
                for d, (x, y) in enumerate(zip(a.idx, b.idx)):
                    xd = f"x__{d}"
                    dims.append(xd)
                    cs.append(_elt(xd, x, ra))
                    cs.append(_elt(xd, y, rb))
                cs += order(ra, rb)
                st = make_set(dims, cs)
            except (NotAffine, isl.Error):
                # not expressible: assume the worst
                (reds if a.kind == b.kind == "RED" else hard).append(Conflict(a, b, "?"))
                continue
            if st.is_empty():
                continue
            c = Conflict(a, b, _sample(st, dims))
            (reds if a.kind == b.kind == "RED" else hard).append(c)
    return hard, reds


def _elt(xd, acc, rename) -> str:
    if acc[0] == "pt":
        return f"{xd} = {to_isl_str(acc[1], rename)}"
    return f"{to_isl_str(acc[1], rename)} <= {xd} < {to_isl_str(acc[2], rename)}"


def _sample(st: isl.Set, dims) -> str:
    try:
        pt = st.sample_point()
        vals = []
        sp = pt.get_space()
        for k in range(sp.dim(isl.dim_type.param)):
            vals.append(f"{sp.get_dim_name(isl.dim_type.param, k)}="
                        f"{pt.get_coordinate_val(isl.dim_type.param, k).to_python()}")
        for k, d in enumerate(dims):
            if d.startswith(("x__", "y__")):
                continue
            vals.append(f"{d}={pt.get_coordinate_val(isl.dim_type.set, k).to_python()}")
        return ", ".join(vals)
    except Exception:  # noqa: BLE001 - a sample is only decoration for the message
        return "some instances"



def _elements(proc, outer_vars, outer_cons, acc: Access, keep: str, suffix: str):
    """``{ [keep, x0, ...] }``: the elements ``acc`` touches, per value of loop var ``keep``
    (every other local variable of the access projected out)."""
    rn = {v: v + suffix for v, _, _ in acc.vars if v != keep}
    locals_ = list(rn.values())
    xs = [f"x__{d}" for d in range(len(acc.idx))]
    cs = base_constraints(proc, outer_vars, outer_cons)
    cs += var_constraints(acc.vars, acc.cons, rn)
    cs += [_elt(x, a, rn) for x, a in zip(xs, acc.idx)]
    st = make_set([keep] + xs + locals_, cs)
    return st.project_out(isl.dim_type.set, 1 + len(xs), len(locals_))


def covered(proc, outer_vars, outer_cons, read: Access, writes: list, keep: str) -> bool:
    """Is every element ``read`` touches (per value of loop var ``keep``) written by one of
    ``writes`` (earlier in the same iteration, which the caller ensures)?"""
    if not writes:
        return False
    try:
        r = _elements(proc, outer_vars, outer_cons, read, keep, "__r")
        u = None
        for k, w in enumerate(writes):
            if len(w.idx) != len(read.idx):
                continue
            s = _elements(proc, outer_vars, outer_cons, w, keep, f"__w{k}")
            u = s if u is None else u.union(s)
        if u is None:
            return False
        r, u = r.align_params(u.get_space()), u.align_params(r.get_space())
        return r.is_subset(u)
    except (NotAffine, isl.Error):
        return False


def equal_in_context(proc, vars_, cons, a, b) -> bool:
    """Is ``a == b`` at every point of the context (asserts, loop bounds ``vars_``, guards
    ``cons``)? Canonical forms first, then isl (exact for quasi-affine expressions)."""
    from ..ir.types import bool_
    from .normalize import same_form

    if same_form(a, b):
        return True
    return prove(proc, vars_, cons, N.BinOp("==", a, b, bool_))


def _align(a, b):
    return a.align_params(b.get_space()), b.align_params(a.get_space())


def writes_all(proc, outer_vars, outer_cons, writes, window, shape_of) -> bool:
    """Does the union of the covering ``writes`` contain every element of ``window`` (a
    ``WindowExpr`` of the written buffer)?"""
    xs = [f"x__{d}" for d in range(len(window.idx))]
    try:
        cs = base_constraints(proc, outer_vars, outer_cons)
        for x, a in zip(xs, window.idx):
            if isinstance(a, N.Point):
                cs.append(f"{x} = {to_isl_str(a.pt)}")
            else:
                cs.append(f"{to_isl_str(a.lo)} <= {x} < {to_isl_str(a.hi)}")
        want = make_set(xs, cs)
        got = None
        for k, w in enumerate(writes):
            if not w.covers or len(w.idx) != len(xs):
                continue
            rw = {v: f"{v}__w{k}" for v, _, _ in w.vars}
            wc = base_constraints(proc, outer_vars, outer_cons)
            wc += var_constraints(w.vars, w.cons, rw)
            wc += [_elt(x, a, rw) for x, a in zip(xs, w.idx)]
            s = make_set(xs + list(rw.values()), wc).project_out(isl.dim_type.set, len(xs),
                                                                    len(rw))
            got = s if got is None else got.union(s)
        if got is None:
            return False
        a, b = _align(want, got)
        return a.is_subset(b)
    except (NotAffine, isl.Error):
        return False


@lru_cache(maxsize=None)
def full_params(callee: N.Procedure) -> frozenset:
    """Data parameters every element of which the callee's body assigns unconditionally
    (loops over constant or size bounds, no guard): a call then writes its whole window."""
    out = set()
    for prm in callee.params:
        if not prm.is_data:
            continue
        writes = []
        _assigns(callee.body, prm.name, [], (), writes)
        if not writes:
            continue
        shape = prm.type.shape
        w = N.WindowExpr(prm.name, tuple(N.Interval(N.Const(0, e.type), e) for e in shape),
                         prm.type.scalar)
        if writes_all(callee, [], [], writes, w, None):
            out.add(prm.name)
    return frozenset(out)


def _assigns(stmts, name, vs, path, out):
    for k, s in enumerate(stmts):
        p = path + (("body", k),)
        if isinstance(s, N.Assign) and s.name == name:
            out.append(Access(name, "W", tuple(("pt", i) for i in s.idx), list(vs), [], p,
                                covers=True))
        elif isinstance(s, N.For):
            _assigns(s.body, name, vs + [(s.iter, s.lo, s.hi)], p, out)
        elif isinstance(s, N.With):
            _assigns(s.body, name, vs, p, out)


def private(accesses, stmts):
    """``accesses`` without those of buffers allocated inside ``stmts``: every instance of
    the enclosing loop iterations has its own such buffer (it is allocated afresh), so they
    carry no dependence between iterations."""
    from .irtools import walk

    local = {s.name for s in walk(stmts) if isinstance(s, N.Alloc)}
    return [a for a in accesses if a.buf not in local]
