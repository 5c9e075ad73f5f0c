"""Small IR toolkit for rewrites: tree paths, substitution, name sets, affine expression
building with light normalization.

A statement *path* is a tuple of ``(field, index)`` steps from the procedure: the first step
is ``("body", i)``; each further step goes into a ``For``/``If``/``With`` body (``"body"``)
or an ``If`` else-branch (``"orelse"``). Rewrites build new trees and keep untouched subtrees
shared.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import nodes as N
from ..ir.types import ControlType, bool_, index, int_

Path = tuple  # tuple[tuple[str, int], ...]

# ---------------------------------------------------------------- tree access


def block_of(proc_or_stmt, field: str):
    if isinstance(proc_or_stmt, N.Procedure):
        assert field == "body"
        return proc_or_stmt.body
    return getattr(proc_or_stmt, field)


def node_at(proc: N.Procedure, path: Path):
    """The statement at ``path`` (or the procedure for the empty path)."""
    cur = proc
    for field, i in path:
        cur = block_of(cur, field)[i]
    return cur


def valid_path(proc: N.Procedure, path: Path) -> bool:
    cur = proc
    for field, i in path:
        if not isinstance(cur, N.Procedure) and not hasattr(cur, field):
            return False
        blk = block_of(cur, field) if isinstance(cur, N.Procedure) or hasattr(cur, field) else ()
        if not isinstance(blk, tuple) or not 0 <= i < len(blk):
            return False
        cur = blk[i]
    return True


def splice(proc: N.Procedure, parent: Path, field: str, lo: int, hi: int, new) -> N.Procedure:
    """Replace statements ``[lo, hi)`` of block ``field`` of the node at ``parent``."""
    new = tuple(new)

    def go(node, steps):
        if not steps:
            blk = block_of(node, field)
            nb = blk[:lo] + new + blk[hi:]
            if isinstance(node, N.Procedure):
                return replace(node, body=nb)
            return replace(node, **{field: nb})
        (f, i), rest = steps[0], steps[1:]
        blk = block_of(node, f)
        child = go(blk[i], rest)
        nb = blk[:i] + (child,) + blk[i + 1:]
        if isinstance(node, N.Procedure):
            return replace(node, body=nb)
        return replace(node, **{f: nb})

    return go(proc, tuple(parent))


def replace_stmt(proc: N.Procedure, path: Path, new) -> N.Procedure:
    """Replace the statement at ``path`` by the statements ``new`` (a list or one node)."""
    if not isinstance(new, (list, tuple)):
        new = (new,)
    field, i = path[-1]
    return splice(proc, path[:-1], field, i, i + 1, new)


def ancestors(proc: N.Procedure, path: Path):
    """``(path, node)`` of every enclosing statement of ``path``, outermost first."""
    out = []
    for k in range(1, len(path)):
        out.append((path[:k], node_at(proc, path[:k])))
    return out


def walk(stmts):
    """Every statement in ``stmts``, pre-order."""
    for s in stmts:
        yield s
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, tuple):
                yield from walk(sub)


def walk_paths(stmts, prefix: Path = (), field: str = "body"):
    for i, s in enumerate(stmts):
        p = prefix + ((field, i),)
        yield p, s
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, tuple):
                yield from walk_paths(sub, p, f)


def stmt_exprs(s):
    """The expressions directly held by a statement (not its sub-statements)."""
    if isinstance(s, (N.Assign, N.Reduce)):
        return list(s.idx) + [s.rhs]
    if isinstance(s, N.For):
        return [s.lo, s.hi]
    if isinstance(s, N.If):
        return [s.cond]
    if isinstance(s, N.Call):
        return list(s.args) + list(s.barriers)
    if isinstance(s, N.WindowStmt):
        return [s.rhs]
    if isinstance(s, N.Alloc):
        return list(s.type.shape)
    if isinstance(s, N.BarrierAlloc):
        return [d.extent for d in s.dims]
    if isinstance(s, N.Arrive):
        return list(s.targets)
    if isinstance(s, N.Await):
        return [s.target]
    return []


def expr_walk(e):
    yield e
    if isinstance(e, N.Read):
        for x in e.idx:
            yield from expr_walk(x)
    elif isinstance(e, N.BinOp):
        yield from expr_walk(e.lhs)
        yield from expr_walk(e.rhs)
    elif isinstance(e, N.UnOp):
        yield from expr_walk(e.arg)
    elif isinstance(e, N.BuiltIn):
        for x in e.args:
            yield from expr_walk(x)
    elif isinstance(e, (N.WindowExpr, N.BarrierRef)):
        for w in e.idx:
            if isinstance(w, N.Point):
                yield from expr_walk(w.pt)
            else:
                yield from expr_walk(w.lo)
                yield from expr_walk(w.hi)


def names_used(stmts) -> set[str]:
    """Every variable name read, written, allocated or bound in ``stmts``."""
    out: set[str] = set()
    for s in walk(stmts):
        for e in stmt_exprs(s):
            for x in expr_walk(e):
                if isinstance(x, (N.Read, N.WindowExpr, N.BarrierRef, N.StrideExpr)):
                    out.add(x.name)
        if isinstance(s, (N.Assign, N.Reduce, N.Alloc, N.BarrierAlloc, N.WindowStmt)):
            out.add(s.name)
        if isinstance(s, N.For):
            out.add(s.iter)
    return out


def all_names(proc: N.Procedure) -> set[str]:
    return {p.name for p in proc.params} | names_used(proc.body)


def fresh(proc: N.Procedure, base: str, taken: set[str] | None = None) -> str:
    taken = (taken or set()) | all_names(proc)
    if base not in taken:
        return base
    k = 0
    while f"{base}{k}" in taken:
        k += 1
    return f"{base}{k}"


def bound_here(stmts) -> set[str]:
    """Names declared by the statements of a block (allocs, windows, barriers)."""
    return {s.name for s in stmts if isinstance(s, (N.Alloc, N.BarrierAlloc, N.WindowStmt))}


# ---------------------------------------------------------------- substitution


def subst(e, env: dict):
    """Replace reads of control variables named in ``env`` by expressions (recursively)."""
    if not env:
        return e
    if isinstance(e, N.Read):
        if not e.idx:
            return env.get(e.name, e)
        return replace(e, idx=tuple(subst(x, env) for x in e.idx))
    if isinstance(e, N.BinOp):
        return replace(e, lhs=subst(e.lhs, env), rhs=subst(e.rhs, env))
    if isinstance(e, N.UnOp):
        return replace(e, arg=subst(e.arg, env))
    if isinstance(e, N.BuiltIn):
        return replace(e, args=tuple(subst(x, env) for x in e.args))
    if isinstance(e, (N.WindowExpr, N.BarrierRef)):
        return replace(e, idx=tuple(_subst_w(w, env) for w in e.idx))
    return e


def _subst_w(w, env):
    if isinstance(w, N.Point):
        return replace(w, pt=subst(w.pt, env))
    return replace(w, lo=subst(w.lo, env), hi=subst(w.hi, env))


def map_exprs(s, fn):
    """Apply ``fn`` to every expression directly held by statement ``s`` (and its children)."""
    if isinstance(s, (N.Assign, N.Reduce)):
        return replace(s, idx=tuple(fn(x) for x in s.idx), rhs=fn(s.rhs))
    if isinstance(s, N.For):
        return replace(s, lo=fn(s.lo), hi=fn(s.hi), body=tuple(map_exprs(c, fn) for c in s.body))
    if isinstance(s, N.If):
        return replace(s, cond=fn(s.cond), body=tuple(map_exprs(c, fn) for c in s.body),
                       orelse=tuple(map_exprs(c, fn) for c in s.orelse))
    if isinstance(s, N.With):
        return replace(s, body=tuple(map_exprs(c, fn) for c in s.body))
    if isinstance(s, N.Call):
        return replace(s, args=tuple(fn(a) for a in s.args),
                       barriers=tuple(fn(b) for b in s.barriers))
    if isinstance(s, N.WindowStmt):
        return replace(s, rhs=fn(s.rhs))
    if isinstance(s, N.Alloc):
        return replace(s, type=replace(s.type, shape=tuple(fn(x) for x in s.type.shape)))
    if isinstance(s, N.BarrierAlloc):
        return replace(s, dims=tuple(replace(d, extent=fn(d.extent)) for d in s.dims))
    if isinstance(s, N.Arrive):
        return replace(s, targets=tuple(fn(t) for t in s.targets))
    if isinstance(s, N.Await):
        return replace(s, target=fn(s.target))
    return s


def subst_stmts(stmts, env: dict):
    return tuple(map_exprs(s, lambda e: simp(subst(e, env))) for s in stmts)


def rename_var(stmts, old: str, new: str):
    """Rename a variable (control or data) everywhere in ``stmts``."""

    def fe(e):
        if isinstance(e, (N.Read, N.WindowExpr, N.BarrierRef, N.StrideExpr)) and e.name == old:
            e = replace(e, name=new)
        if isinstance(e, N.Read):
            return replace(e, idx=tuple(fe(x) for x in e.idx))
        if isinstance(e, N.BinOp):
            return replace(e, lhs=fe(e.lhs), rhs=fe(e.rhs))
        if isinstance(e, N.UnOp):
            return replace(e, arg=fe(e.arg))
        if isinstance(e, N.BuiltIn):
            return replace(e, args=tuple(fe(x) for x in e.args))
        if isinstance(e, (N.WindowExpr, N.BarrierRef)):
            return replace(e, idx=tuple(
                replace(w, pt=fe(w.pt)) if isinstance(w, N.Point)
                else replace(w, lo=fe(w.lo), hi=fe(w.hi)) for w in e.idx))
        return e

    def fs(s):
        s = map_exprs(s, fe)
        return _rename_binders(s, old, new)

    return tuple(fs(s) for s in stmts)


def _rename_binders(s, old, new):
    if isinstance(s, (N.Assign, N.Reduce, N.Alloc, N.BarrierAlloc, N.WindowStmt)) \
            and s.name == old:
        s = replace(s, name=new)
    if isinstance(s, N.For) and s.iter == old:
        s = replace(s, iter=new)
    for f in ("body", "orelse"):
        sub = getattr(s, f, None)
        if isinstance(sub, tuple):
            s = replace(s, **{f: tuple(_rename_binders(c, old, new) for c in sub)})
    return s


# ---------------------------------------------------------------- expression building


def const(v: int):
    return N.Const(int(v), int_)


def var(name: str, t: ControlType = index):
    return N.Read(name, (), t)


def simp(e):
    """Normalize an integer control expression (collect terms, fold constants); data and
    boolean expressions are simplified in their integer sub-expressions only."""
    if isinstance(e, N.Read) and e.idx:
        return replace(e, idx=tuple(simp(x) for x in e.idx))
    if isinstance(e, (N.WindowExpr, N.BarrierRef)):
        return replace(e, idx=tuple(
            replace(w, pt=simp(w.pt)) if isinstance(w, N.Point)
            else replace(w, lo=simp(w.lo), hi=simp(w.hi)) for w in e.idx))
    t = getattr(e, "type", None)
    if isinstance(t, ControlType) and t.is_int and not isinstance(e, N.Const):
        from .normalize import build, linear

        r = linear(e)
        if r is not None:
            out = build(r)
            return out if out != e else e
        return e
    if isinstance(e, N.BinOp):
        return replace(e, lhs=simp(e.lhs), rhs=simp(e.rhs))
    if isinstance(e, N.UnOp):
        return replace(e, arg=simp(e.arg))
    if isinstance(e, N.BuiltIn):
        return replace(e, args=tuple(simp(x) for x in e.args))
    return e


def add(a, b):
    return simp(N.BinOp("+", a, b, index))


def sub(a, b):
    return simp(N.BinOp("-", a, b, index))


def mul(k: int, a):
    return simp(N.BinOp("*", const(k), a, index))


def div(a, k: int):
    return simp(N.BinOp("/", a, const(k), index))


def mod(a, k: int):
    return simp(N.BinOp("%", a, const(k), index))


def cmp(op: str, a, b):
    return N.BinOp(op, a, b, bool_)


def conj(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return N.BinOp("and", a, b, bool_)


def window_composers(w):
    """For a window ``w`` of a base buffer: ``fp(idx)`` maps point indices of the window to
    the base's indices, ``fw(waccess)`` maps a window of the window to a window of the base."""

    def fp(idx):
        out, k = [], 0
        for a in w.idx:
            if isinstance(a, N.Point):
                out.append(a.pt)
            else:
                out.append(add(a.lo, idx[k]))
                k += 1
        return tuple(out)

    def fw(wi):
        out, k = [], 0
        for a in w.idx:
            if isinstance(a, N.Point):
                out.append(a)
            else:
                x = wi[k]
                k += 1
                out.append(N.Point(add(a.lo, x.pt)) if isinstance(x, N.Point) else
                           N.Interval(add(a.lo, x.lo), add(a.lo, x.hi)))
        return tuple(out)

    return fp, fw
