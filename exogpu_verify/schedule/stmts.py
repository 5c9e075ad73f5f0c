"""Statement-level rewrites: rename, simplify, reorder_stmts, insert_pass, delete_pass,
bind_expr."""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.memories import CudaRmem, DRAM
from ..ir.types import R, ScalarType, promote
from . import deps as D
from .base import block_cursor, check_proc, expr_cursor, finish, gap_cursor
from .cursors import fwd_splice, set_expr
from .errors import SchedulingError
from .irtools import (block_of, bound_here, expr_walk, map_exprs, names_used, node_at, simp,
                      splice, walk_paths)
from .record import primitive


@primitive
def rename(proc, new_name: str):
    """Rename the procedure."""
    check_proc(proc)
    if not isinstance(new_name, str) or not new_name.isidentifier():
        raise SchedulingError(f"rename: {new_name!r} is not an identifier", proc)
    return finish(proc, replace(proc, name=new_name), "rename", [new_name],
                  "name only; body unchanged")


# ---------------------------------------------------------------- simplify


@primitive
def simplify(proc):
    """Normalize control expressions (collect terms, fold constants, exact ``/``/``%`` of
    multiples and of nested ``/``/``%``) and remove ``if`` branches whose condition is
    provably constant and loops provably empty under the asserts and enclosing loop bounds
    (isl). Repeats until nothing changes: one call reaches the fixed point."""
    check_proc(proc)
    p, fwds, removed = proc, [], 0
    for _ in range(32):
        p2, f2, r2 = _simplify_once(p)
        fwds += f2
        removed += r2
        if p2.body == p.body and p2.preds == p.preds:
            break
        p = p2
    from .cursors import fwd_compose

    return finish(proc, p, "simplify", [],
                  f"exact integer normalization; {removed} branch(es)/empty loop(s) removed, "
                  "each proved constant/empty for all sizes satisfying the asserts (isl)",
                  fwd_compose(*fwds) if fwds else None)


def _simplify_once(proc):
    body = tuple(map_exprs(s, simp) for s in proc.body)
    p = replace(proc, body=body, preds=tuple(simp(x) for x in proc.preds))
    p = replace(p, body=_fold_block(p, p.body, [], []))
    fwds = []
    removed = 0
    while True:
        hit = None
        for path, s in walk_paths(p.body):
            if isinstance(s, N.If):
                vs, cs = D.context(p, path)
                if D.prove(p, vs, cs, s.cond):
                    hit = (path, s.body, "body")
                elif D.prove(p, vs, cs, N.UnOp("not", s.cond, s.cond.type)):
                    hit = (path, s.orelse, "orelse")
                if hit:
                    break
            if isinstance(s, N.For) and not D.satisfiable(p, *D.context(p, path),
                                                          N.BinOp("<", s.lo, s.hi, _bool())):
                hit = (path, (), None)
                break
        if hit is None:
            break
        path, keep, fld = hit
        parent, (field, i) = path[:-1], path[-1]
        blk = block_of(node_at(p, parent), field)
        keep = tuple(keep)
        if not keep and len(blk) == 1:
            keep = (N.Pass(),)
        p = splice(p, parent, field, i, i + 1, keep)
        removed += 1

        def inner(k, rest, parent=parent, field=field, i=i, fld=fld):
            if not rest or fld is None or rest[0][0] != fld:
                return None
            return parent + ((field, i + rest[0][1]),) + rest[1:]

        fwds.append(fwd_splice(parent, field, i, i + 1, len(keep), inner))
    return p, fwds, removed


def _fold_block(p, stmts, vs, cs):
    """Fold ``e / d`` to 0 and ``e % d`` to ``e`` where ``0 <= e < d`` is provable in the
    statement's context (loop bounds, guards, asserts)."""
    out = []
    for s in stmts:
        f = _folder(p, vs, cs)
        if isinstance(s, N.For):
            s = replace(s, lo=f(s.lo), hi=f(s.hi))
            s = replace(s, body=_fold_block(p, s.body, vs + [(s.iter, s.lo, s.hi)], cs))
        elif isinstance(s, N.If):
            c = f(s.cond)
            s = replace(s, cond=c, body=_fold_block(p, s.body, vs, cs + [c]),
                        orelse=_fold_block(p, s.orelse, vs, cs + [N.UnOp("not", c, c.type)]))
        elif isinstance(s, N.With):
            s = replace(s, body=_fold_block(p, s.body, vs, cs))
        else:
            s = map_exprs(s, f)
        out.append(s)
    return tuple(out)


def _folder(p, vs, cs):
    from ..ir.affine import const_value
    from .irtools import cmp, conj, const

    def f(e):
        if isinstance(e, N.BinOp):
            e = replace(e, lhs=f(e.lhs), rhs=f(e.rhs))
            d = const_value(e.rhs) if e.op in ("/", "%") and \
                not isinstance(e.type, ScalarType) else None
            if d is not None and d > 0 and const_value(e.lhs) is None and D.prove(
                    p, vs, cs, conj(cmp("<=", const(0), e.lhs), cmp("<", e.lhs, const(d)))):
                return simp(const(0) if e.op == "/" else e.lhs)
            return simp(e)
        if isinstance(e, N.Read) and e.idx:
            return replace(e, idx=tuple(f(x) for x in e.idx))
        if isinstance(e, N.UnOp):
            return simp(replace(e, arg=f(e.arg)))
        if isinstance(e, N.BuiltIn):
            return replace(e, args=tuple(f(x) for x in e.args))
        if isinstance(e, (N.WindowExpr, N.BarrierRef)):
            return replace(e, idx=tuple(
                replace(w, pt=f(w.pt)) if isinstance(w, N.Point)
                else replace(w, lo=f(w.lo), hi=f(w.hi)) for w in e.idx))
        return e

    return f


def _bool():
    from ..ir.types import bool_

    return bool_


# ---------------------------------------------------------------- reorder_stmts


@primitive
def reorder_stmts(proc, block_cursor_):
    """Swap two consecutive statements ``s1; s2``; legal iff they commute: no element is
    touched by both with at least one write (isl), and neither declares a name the other
    uses. Synchronization statements carry no data accesses: moving them is an annotation
    change (sequential meaning unchanged; the synchronization checker judges the result)."""
    check_proc(proc)
    from .cursors import StmtCursor

    b = block_cursor_
    if isinstance(b, StmtCursor):
        b = b.expand(0, 1)
    b = block_cursor(proc, b)
    if len(b) != 2:
        raise SchedulingError("reorder_stmts: expected a block of exactly two statements",
                              proc, b.paths())
    s1, s2 = b.stmts()
    p1, p2_ = b.paths()
    if bound_here([s1]) & names_used([s2]):
        raise SchedulingError(f"reorder_stmts: '{s1.name}' is declared by the first statement "
                              "and used by the second", proc, [p1, p2_])
    vs, cs = D.context(proc, p1)
    A = D.collect(proc, [s1], [p1])
    B = D.collect(proc, [s2], [p2_])
    hard, reds = D.find_conflicts(proc, vs, cs, A, B, lambda ra, rb: [])
    if hard:
        x = hard[0]
        raise SchedulingError("reorder_stmts: the statements do not commute", proc, [p1, p2_],
                              dependence=x.describe())
    parent, field, lo = b._parent, b._field, b._lo
    p2 = splice(proc, parent, field, lo, lo + 2, [s2, s1])

    def inner(k, rest):
        return parent + ((field, lo + 1 - (k - lo)),) + rest

    sync = (N.Fence, N.Arrive, N.Await, N.BarrierAlloc)
    checked = "dependence analysis (isl): no element accessed by both with a write"
    if isinstance(s1, sync) or isinstance(s2, sync):
        checked += "; synchronization moved: annotation, sequential meaning unchanged"
    unsafe = False
    if reds:
        unsafe = True
        checked += "; reassociation: both reduce into the same elements (exact in real " \
                   "arithmetic; floating-point rounding may differ)"
    return finish(proc, p2, "reorder_stmts", [b], checked,
                  fwd_splice(parent, field, lo, lo + 2, 2, inner), unsafe=unsafe)


# ---------------------------------------------------------------- pass


@primitive
def insert_pass(proc, gap_cursor_):
    check_proc(proc)
    g = gap_cursor(proc, gap_cursor_)
    parent, field, i = g.location()
    p2 = splice(proc, parent, field, i, i, [N.Pass()])
    return finish(proc, p2, "insert_pass", [g], "no-op statement",
                  fwd_splice(parent, field, i, i, 1))


@primitive
def delete_pass(proc):
    """Delete every ``pass``; loops, ifs and CudaWarps blocks left empty are removed too
    (they did nothing)."""
    check_proc(proc)

    def clean(stmts):
        out = []
        for s in stmts:
            if isinstance(s, N.Pass):
                continue
            if isinstance(s, (N.For, N.With)):
                b = clean(s.body)
                if not b and not (isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction)):
                    continue
                s = replace(s, body=b or (N.Pass(),))
            elif isinstance(s, N.If):
                b, e = clean(s.body), clean(s.orelse)
                if not b and not e:
                    continue
                if not b:
                    s = replace(s, cond=N.UnOp("not", s.cond, s.cond.type), body=e, orelse=())
                else:
                    s = replace(s, body=b, orelse=e)
            out.append(s)
        return tuple(out)

    body = clean(proc.body) or (N.Pass(),)
    p2 = replace(proc, body=body)
    fwd = None if p2.body != proc.body else (lambda path: path)
    return finish(proc, p2, "delete_pass", [], "removed no-op statements", fwd)


# ---------------------------------------------------------------- bind_expr


def _stmt_precision(p, s):
    """The precision the interpreter computes statement ``s`` in (see semantics)."""
    dest = _scalar_of(p, s.name)
    t = dest
    for x in expr_walk(s.rhs):
        if isinstance(x, N.Read) and isinstance(x.type, ScalarType) and x.type != R:
            t = promote(t, x.type)
    return t


def _scalar_of(p, name):
    prm = p.param(name)
    if prm is not None:
        return prm.type.scalar
    from .irtools import walk

    for s in walk(p.body):
        if isinstance(s, N.Alloc) and s.name == name:
            return s.type.scalar
        if isinstance(s, N.WindowStmt) and s.name == name:
            return s.rhs.type
    raise SchedulingError(f"unknown buffer '{name}'", p)


@primitive
def bind_expr(proc, expr_cursors, new_name: str):
    """Bind a data expression (one or more occurrences inside one assignment/reduction) to a
    new scalar ``new_name`` computed just before the statement. The scalar gets the
    statement's computation precision, so every operation rounds exactly as before."""
    check_proc(proc)
    if not isinstance(expr_cursors, (list, tuple)):
        expr_cursors = [expr_cursors]
    cs = [expr_cursor(proc, c) for c in expr_cursors]
    if not cs:
        raise SchedulingError("bind_expr: no expression given", proc)
    path = cs[0].stmt().path()
    if any(c.stmt().path() != path for c in cs):
        raise SchedulingError("bind_expr: all expressions must be in the same statement", proc,
                              sorted({c.stmt().path() for c in cs}))
    s = node_at(proc, path)
    if not isinstance(s, (N.Assign, N.Reduce)) or any(c._epath[0] != ("rhs",) for c in cs):
        raise SchedulingError("bind_expr: expressions must be on the right-hand side of an "
                              "assignment or reduction", proc, [path])
    e0 = cs[0].node()
    if any(c.node() != e0 for c in cs):
        raise SchedulingError("bind_expr: the expressions differ", proc, [path])
    if not isinstance(e0.type, ScalarType):
        raise SchedulingError("bind_expr: only data expressions can be bound (control "
                              "expressions are not values in memory)", proc, [path])
    from .loops import _check_fresh

    _check_fresh(proc, [new_name], path)
    prec = _stmt_precision(proc, s)
    mem = CudaRmem if _in_cuda(proc, path) else DRAM
    rhs = s.rhs
    rd = N.Read(new_name, (), prec)
    for c in sorted(cs, key=lambda c: len(c._epath), reverse=True):
        rhs = set_expr(rhs, c._epath[1:], rd)
    alloc = N.Alloc(new_name, N.TensorType(prec, ()), mem)
    bind = N.Assign(new_name, (), e0)
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, [alloc, bind, replace(s, rhs=rhs)])
    return finish(proc, p2, "bind_expr", [cs, new_name],
                  f"'{new_name}' has the statement's computation precision {prec}: every "
                  f"operation rounds as before; {expr_str(e0)} reads nothing the statement "
                  "writes before it is evaluated",
                  fwd_splice(parent, field, i, i + 1, 3,
                             lambda k, rest: parent + ((field, i + 2),) + rest))


def _in_cuda(p, path) -> bool:
    for k in range(1, len(path)):
        s = node_at(p, path[:k])
        if isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction):
            return True
    return False


__all__ = ["rename", "simplify", "reorder_stmts", "insert_pass", "delete_pass", "bind_expr"]
