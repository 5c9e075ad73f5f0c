"""Guard and scope rewrites: ``lift_scope``, ``specialize``, ``eliminate_dead_code``,
``add_if`` and ``unsafe_remove_if``.

Control conditions read only control values, which statements never write, so moving a
condition across a loop that does not bind its variables keeps every instance's guard.
Adding or removing a guard is exact when the guard is provably true wherever the block runs
(isl) or when the block has no data effect (only synchronization: an annotation whose
sufficiency ``verify`` judges); otherwise ``add_if``/``unsafe_remove_if`` record the step as
unsafe, never silently.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.types import bool_
from . import deps as D
from .base import block_cursor, check_proc, finish, parse_expr, stmt_cursor, where_of
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import block_of, expr_walk, node_at, splice, walk
from .record import primitive

_SYNC = (N.Fence, N.Arrive, N.Await, N.Pass)


def _not(c):
    return N.UnOp("not", c, bool_)


def _vars_of(e) -> set:
    return {x.name for x in expr_walk(e) if isinstance(x, N.Read) and not x.idx}


def sync_only(stmts) -> bool:
    """Statements without data effects (synchronization, ``pass``), loops and guards of
    them, and ``CudaWarps`` blocks of them."""
    for s in walk(stmts):
        if not isinstance(s, _SYNC + (N.For, N.If, N.With)):
            return False
        if isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction):
            return False
    return True


# ---------------------------------------------------------------- lift_scope


@primitive
def lift_scope(proc, scope_cursor):
    """Lift a loop or ``if`` (the only statement of its parent's body) above its parent
    loop or ``if``: ``for i: if p: s1 else: s2`` -> ``if p: for i: s1 else: for i: s2``;
    ``if p: for i: s`` -> ``for i: if p: s``; ``if p: if q: s1 else: s2`` ->
    ``if q: if p: s1 else: if p: s2``; a loop in a loop is ``reorder_loops``."""
    check_proc(proc)
    c = stmt_cursor(proc, scope_cursor, "loop or if")
    s, path = c.node(), c.path()
    if not isinstance(s, (N.For, N.If)) or len(path) < 2:
        raise SchedulingError("lift_scope: expected a loop or if inside a loop or if", proc,
                              [path])
    ppath = path[:-1]
    par = node_at(proc, ppath)
    if not isinstance(par, (N.For, N.If)):
        raise SchedulingError(f"lift_scope: the parent is a {type(par).__name__}, not a loop "
                              "or if", proc, [ppath])
    if isinstance(par, N.For) and isinstance(s, N.For):
        from .loops import reorder_loops

        return reorder_loops(proc, c.parent())
    blk = block_of(par, path[-1][0])
    if isinstance(par, N.If) and isinstance(s, N.For) and par.orelse and len(blk) == 1:
        return _lift_loop_out_of_if_else(proc, c, par, s, ppath)
    if len(blk) != 1 or (isinstance(par, N.If) and par.orelse):
        raise SchedulingError("lift_scope: the statement must be the only statement of its "
                              "parent, and a parent if must have no else", proc, [ppath, path])
    if isinstance(par, N.For) and isinstance(s, N.If):
        if par.iter in _vars_of(s.cond):
            raise SchedulingError(f"lift_scope: the condition {expr_str(s.cond)} depends on "
                                  f"'{par.iter}'", proc, [path])
        body = (replace(par, body=s.body),)
        orelse = (replace(par, body=s.orelse),) if s.orelse else ()
        new = replace(s, body=body, orelse=orelse)
        checked = (f"the condition does not depend on '{par.iter}': each iteration takes the "
                   "same branch, in the same order")
    elif isinstance(par, N.If) and isinstance(s, N.For):
        if s.iter in _vars_of(par.cond):
            raise SchedulingError("lift_scope: the condition uses the loop's iterator", proc,
                                  [ppath])
        new = replace(s, body=(replace(par, body=s.body),))
        checked = (f"the condition does not depend on '{s.iter}' (bounds are side-effect "
                   "free): the guarded loop runs the same instances")
    else:  # an if in an if: swap the conditions
        body = (replace(par, body=s.body),)
        orelse = (replace(par, body=s.orelse),) if s.orelse else ()
        new = replace(s, body=body, orelse=orelse)
        checked = "control conditions commute (statements never write control values)"
    gp, (gf, gi) = ppath[:-1], ppath[-1]
    p2 = splice(proc, gp, gf, gi, gi + 1, [new])
    n = len(ppath)

    def fwd(pth):
        if pth[:n] != ppath:
            return pth
        if len(pth) == n:
            return ppath + (("body", 0),)
        if len(pth) == n + 1:
            return ppath
        f, k = pth[n + 1]  # a statement of the inner scope's branch f
        return ppath + ((f, 0), ("body", k)) + pth[n + 2:]

    return finish(proc, p2, "lift_scope", [c], checked, fwd)


def _lift_loop_out_of_if_else(proc, c, par, s, ppath):
    """``if p: for i: s1 else: for i: s2`` -> ``for i: if p: s1 else: s2``."""
    o = par.orelse
    if len(o) != 1 or not isinstance(o[0], N.For) or \
            (o[0].iter, o[0].lo, o[0].hi, o[0].mode) != (s.iter, s.lo, s.hi, s.mode):
        raise SchedulingError("lift_scope: both branches must be one loop with the same "
                              "iterator, bounds and mode", proc, [ppath])
    if s.iter in _vars_of(par.cond):
        raise SchedulingError("lift_scope: the condition uses the loop's iterator", proc,
                              [ppath])
    new = replace(s, body=(replace(par, body=s.body, orelse=o[0].body),))
    gp, (gf, gi) = ppath[:-1], ppath[-1]
    p2 = splice(proc, gp, gf, gi, gi + 1, [new])
    n = len(ppath)

    def fwd(pth):
        if pth[:n] != ppath:
            return pth
        if len(pth) == n:
            return ppath + (("body", 0),)
        if len(pth) == n + 1:
            return ppath
        f, _ = pth[n]  # the loop of branch f
        return ppath + (("body", 0), (f, pth[n + 1][1])) + pth[n + 2:]

    return finish(proc, p2, "lift_scope", [c], f"the condition does not depend on '{s.iter}' "
                  "and both branches loop over the same range: each iteration takes the same "
                  "branch, in the same order", fwd)


# ---------------------------------------------------------------- specialize


@primitive
def specialize(proc, block, conds):
    """``B`` -> ``if c0: B elif c1: B ... else: B``: ``n`` conditions give ``n + 1``
    copies, each scheduled separately afterwards."""
    check_proc(proc)
    b = block_cursor(proc, block)
    conds = [conds] if isinstance(conds, str) else list(conds)
    if not conds:
        raise SchedulingError("specialize: give at least one condition", proc, b.paths())
    where = where_of(b)
    parsed = [parse_expr(proc, where, cnd, kind="cond") for cnd in conds]
    stmts = tuple(b.stmts())
    new = stmts
    for cnd in reversed(parsed):
        new = (N.If(cnd, stmts, new, stmts[0].srcinfo),)
    parent, field, lo, hi = b._parent, b._field, b._lo, b._hi
    p2 = splice(proc, parent, field, lo, hi, list(new))

    def inner(k, rest):
        return parent + ((field, lo), ("body", k - lo)) + rest

    return finish(proc, p2, "specialize", [b, conds],
                  f"{len(parsed) + 1} identical copies of the block, one per branch of "
                  f"{', '.join(expr_str(x) for x in parsed)} / else",
                  fwd_splice(parent, field, lo, hi, 1, inner))


# ---------------------------------------------------------------- dead code


@primitive
def eliminate_dead_code(proc, stmt_cursor_):
    """An ``if`` whose condition is provably constant becomes the branch that runs; a loop
    that provably runs no iteration is removed (isl, under the asserts and enclosing
    loops)."""
    check_proc(proc)
    c = stmt_cursor(proc, stmt_cursor_, "if or loop")
    s, path = c.node(), c.path()
    vs, cs = D.context(proc, path)
    parent, (field, i) = path[:-1], path[-1]
    if isinstance(s, N.If):
        if D.prove(proc, vs, cs, s.cond):
            keep, fld, why = s.body, "body", f"{expr_str(s.cond)} is always true"
        elif D.prove(proc, vs, cs, _not(s.cond)):
            keep, fld, why = s.orelse, "orelse", f"{expr_str(s.cond)} is always false"
        else:
            raise SchedulingError(f"eliminate_dead_code: cannot prove {expr_str(s.cond)} "
                                  "constant here", proc, [path])
    elif isinstance(s, N.For):
        if D.satisfiable(proc, vs, cs, N.BinOp("<", s.lo, s.hi, bool_)):
            raise SchedulingError(f"eliminate_dead_code: the loop over '{s.iter}' may run "
                                  "(cannot prove it empty)", proc, [path])
        keep, fld, why = (), None, "the loop runs no iteration"
    else:
        raise SchedulingError("eliminate_dead_code: expected an if or a loop", proc, [path])
    blk = block_of(node_at(proc, parent), field)
    keep = tuple(keep) or ((N.Pass(s.srcinfo),) if len(blk) == 1 else ())
    p2 = splice(proc, parent, field, i, i + 1, keep)

    def inner(k, rest):
        if not rest or fld is None or rest[0][0] != fld:
            return None
        return parent + ((field, i + rest[0][1]),) + rest[1:]

    return finish(proc, p2, "eliminate_dead_code", [c], f"{why} (isl, for all sizes "
                  "satisfying the asserts)", fwd_splice(parent, field, i, i + 1, len(keep),
                                                        inner))


# ---------------------------------------------------------------- add / remove guards


@primitive
def add_if(proc, block, cond, unsafe_disable_check: bool = False):
    """Wrap a block in ``if cond:``. Exact when ``cond`` is provably true wherever the block
    runs, or when the block only synchronizes (an annotation); otherwise refused, unless
    ``unsafe_disable_check`` (recorded unsafe)."""
    check_proc(proc)
    b = block_cursor(proc, block)
    cnd = parse_expr(proc, where_of(b), cond, kind="cond")
    parent, field, lo, hi = b._parent, b._field, b._lo, b._hi
    stmts = tuple(b.stmts())
    vs, cs = D.context(proc, parent + ((field, lo),))
    unsafe = False
    if D.prove(proc, vs, cs, cnd):
        checked = f"{expr_str(cnd)} is always true here (isl)"
    elif sync_only(stmts):
        checked = ("the block only synchronizes: annotation, sequential meaning unchanged "
                   "(verify judges the synchronization)")
    elif unsafe_disable_check:
        unsafe = True
        checked = (f"UNCHECKED: the block has data effects and {expr_str(cnd)} may be false "
                   "(check disabled by the user)")
    else:
        raise SchedulingError(f"add_if: the block writes or reads data and {expr_str(cnd)} "
                              "is not provably true here: guarding it would skip its effects",
                              proc, b.paths())
    p2 = splice(proc, parent, field, lo, hi, [N.If(cnd, stmts, (), stmts[0].srcinfo)])

    def inner(k, rest):
        return parent + ((field, lo), ("body", k - lo)) + rest

    return finish(proc, p2, "add_if", [b, cond], checked,
                  fwd_splice(parent, field, lo, hi, 1, inner), unsafe=unsafe)


@primitive
def unsafe_remove_if(proc, if_cursor):
    """Replace ``if c: s`` (no else) by ``s``. Recorded safe when ``c`` is provably true
    (isl) or ``s`` only synchronizes; otherwise recorded UNSAFE (``s`` then runs where the
    guard was false)."""
    check_proc(proc)
    c = stmt_cursor(proc, if_cursor, "if")
    s, path = c.node(), c.path()
    if not isinstance(s, N.If):
        raise SchedulingError("unsafe_remove_if: expected an if", proc, [path])
    if s.orelse:
        raise SchedulingError("unsafe_remove_if: the if has an else branch; "
                              "eliminate_dead_code or lift_scope instead", proc, [path])
    vs, cs = D.context(proc, path)
    unsafe = False
    if D.prove(proc, vs, cs, s.cond):
        checked = f"{expr_str(s.cond)} is always true here (isl)"
    elif sync_only(s.body):
        checked = "the guarded block only synchronizes: annotation, sequential meaning " \
                  "unchanged (verify judges the synchronization)"
    else:
        unsafe = True
        checked = (f"UNSAFE: {expr_str(s.cond)} is not provably true; the block now also runs "
                   "where it was false")
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, list(s.body))

    def inner(k, rest):
        if not rest:
            return None
        return parent + ((field, i + rest[0][1]),) + rest[1:]

    return finish(proc, p2, "unsafe_remove_if", [c], checked,
                  fwd_splice(parent, field, i, i + 1, len(s.body), inner), unsafe=unsafe)


__all__ = ["lift_scope", "specialize", "eliminate_dead_code", "add_if", "unsafe_remove_if"]
