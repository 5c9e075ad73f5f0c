"""Loop-nest rewrites that merge loops: ``mult_loops`` (the inverse of ``divide_loop``)
and ``join_loops`` (the inverse of ``cut_loop``). Both keep the order of every statement
instance, so they need no dependence analysis; their checks are that the iteration spaces
match exactly (isl over the asserts and enclosing loops)."""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.affine import const_value
from . import deps as D
from .base import check_proc, finish, loop_cursor, stmt_cursor
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import (cmp, const, div, mod, mul, names_used, rename_var, splice, sub,
                      subst_stmts, var)
from .deps import equal_in_context
from .record import primitive


def _nested(proc, nested_loops):
    if isinstance(nested_loops, str) and len(nested_loops.split("#")[0].split()) == 2:
        names = nested_loops.split("#")[0].split()
        nth = nested_loops.split("#")[1].strip() if "#" in nested_loops else None
        c = loop_cursor(proc, names[0] + (f" #{nth}" if nth else ""))
        body = c.node().body
        if len(body) != 1 or not isinstance(body[0], N.For) or body[0].iter != names[1]:
            raise SchedulingError(f"loop '{names[1]}' is not the only statement directly "
                                  f"inside '{names[0]}'", proc, [c.path()])
        return c
    return loop_cursor(proc, nested_loops)


def _merged_mode(proc, outer, inner, c_in, path):
    mo, mi = outer.mode, inner.mode
    if isinstance(mo, N.Seq) and isinstance(mi, N.Seq):
        return N.Seq(mi.pragma_unroll)
    if isinstance(mo, N.CudaTasks) and isinstance(mi, N.CudaTasks):
        return mo
    if isinstance(mo, N.CudaThreads) and isinstance(mi, N.CudaThreads):
        try:
            ok = mo.unit == mi.unit.scaled(c_in)
        except TypeError:
            ok = False
        if ok:
            return mi
        raise SchedulingError(
            f"mult_loops: the outer cuda_threads loop's unit is {mo.unit}, not {c_in} * "
            f"{mi.unit}: the merged loop could not keep every iteration on its threads",
            proc, [path, path + (("body", 0),)])
    raise SchedulingError(f"mult_loops: cannot merge a {mo} loop with a {mi} loop", proc,
                          [path, path + (("body", 0),)])


@primitive
def mult_loops(proc, nested_loops, new_iter_name: str):
    """``for i in seq(0, e): for j in seq(0, c): s`` (``c`` a constant) becomes
    ``for k in seq(0, e * c): s[i -> k / c, j -> k % c]``; also ``"i j"`` shorthand."""
    check_proc(proc)
    c = _nested(proc, nested_loops)
    outer, path = c.node(), c.path()
    if len(outer.body) != 1 or not isinstance(outer.body[0], N.For):
        raise SchedulingError("mult_loops: the outer loop's body must be exactly one loop",
                              proc, [path])
    inner = outer.body[0]
    from .loops import _check_fresh

    _check_fresh(proc, [new_iter_name], path)
    n_in = const_value(sub(inner.hi, inner.lo))
    if const_value(inner.lo) != 0 or n_in is None or n_in < 1:
        raise SchedulingError(f"mult_loops: the inner loop '{inner.iter}' must run over "
                              f"seq(0, c) with a constant c, not seq({expr_str(inner.lo)}, "
                              f"{expr_str(inner.hi)})", proc, [path + (("body", 0),)])
    if const_value(outer.lo) != 0:
        raise SchedulingError(f"mult_loops: the outer loop '{outer.iter}' must start at 0 "
                              "(shift_loop first)", proc, [path])
    mode = _merged_mode(proc, outer, inner, n_in, path)
    k = var(new_iter_name)
    body = subst_stmts(inner.body, {outer.iter: div(k, n_in), inner.iter: mod(k, n_in)})
    new = N.For(new_iter_name, const(0), mul(n_in, outer.hi), mode, body, outer.srcinfo)
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, [new])
    n = len(path)

    def fwd(pth):
        if pth[:n] != path:
            return pth
        if len(pth) == n:
            return path
        if len(pth) == n + 1:
            return None  # the inner loop is gone
        return path + pth[n + 1:]

    return finish(proc, p2, "mult_loops", [c, new_iter_name],
                  f"exact index map {outer.iter} = {new_iter_name} / {n_in}, {inner.iter} = "
                  f"{new_iter_name} % {n_in}: the same instances in the same order", fwd)


@primitive
def join_loops(proc, loop1_cursor, loop2_cursor):
    """``for i in seq(lo, mid): s`` followed by ``for j in seq(mid, hi): s[i -> j]`` becomes
    ``for i in seq(lo, hi): s`` (bodies equal up to the iterator, bounds proved to meet)."""
    check_proc(proc)
    c1, c2 = stmt_cursor(proc, loop1_cursor, "loop"), stmt_cursor(proc, loop2_cursor, "loop")
    p1, p2_ = c1.path(), c2.path()
    s1, s2 = c1.node(), c2.node()
    if not isinstance(s1, N.For) or not isinstance(s2, N.For):
        raise SchedulingError("join_loops: expected two loops", proc, [p1, p2_])
    if p1[:-1] != p2_[:-1] or p1[-1][0] != p2_[-1][0] or p2_[-1][1] != p1[-1][1] + 1:
        raise SchedulingError("join_loops: the loops must be consecutive in one block", proc,
                              [p1, p2_])
    if s1.mode != s2.mode:
        raise SchedulingError(f"join_loops: the loops have different modes ({s1.mode} and "
                              f"{s2.mode})", proc, [p1, p2_])
    vs, cs = D.context(proc, p1)
    if not equal_in_context(proc, vs, cs, s1.hi, s2.lo):
        raise SchedulingError(f"join_loops: cannot prove the first loop ends where the second "
                              f"starts ({expr_str(s1.hi)} vs {expr_str(s2.lo)})", proc,
                              [p1, p2_])
    if not D.prove(proc, vs, cs, cmp("<=", s1.lo, s1.hi)) or \
            not D.prove(proc, vs, cs, cmp("<=", s2.lo, s2.hi)):
        raise SchedulingError("join_loops: cannot prove both loops have lo <= hi (a loop with "
                              "hi < lo runs no iterations, so the join would add some)", proc,
                              [p1, p2_])
    body2 = s2.body
    if s2.iter != s1.iter:
        if s1.iter in names_used(s2.body):
            raise SchedulingError(f"join_loops: '{s1.iter}' is used inside the second loop",
                                  proc, [p2_])
        body2 = rename_var(s2.body, s2.iter, s1.iter)
    if body2 != s1.body:
        raise SchedulingError("join_loops: the loop bodies differ (after renaming the second "
                              f"loop's iterator '{s2.iter}' to '{s1.iter}')", proc, [p1, p2_])
    new = replace(s1, hi=s2.hi)
    parent, (field, i) = p1[:-1], p1[-1]
    p2 = splice(proc, parent, field, i, i + 2, [new])

    def inner(k, rest):
        return parent + ((field, i),) + rest if k == i else None

    return finish(proc, p2, "join_loops", [c1, c2],
                  f"identical bodies; proved {expr_str(s1.hi)} == {expr_str(s2.lo)} and both "
                  "ranges non-empty or empty consistently: the same instances in order",
                  fwd_splice(parent, field, i, i + 2, 1, inner))


__all__ = ["mult_loops", "join_loops"]
