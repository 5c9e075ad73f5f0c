"""Expression and write rewrites: ``rewrite_expr``, ``commute_expr``, ``inline_assign``,
``merge_writes`` and ``lift_reduce_constant``.

Values follow the sequential semantics (``semantics``): a statement computes in the widest
precision among its destination and operands, then rounds to the destination. A rewrite is
exact when it keeps every operation and every rounding; ``commute_expr`` (IEEE ``+`` and
``*`` commute), control-expression rewrites proved by isl, and merges/inlines whose
precisions provably agree are. Reassociations (``a += b; a += c`` into ``a += b + c``) and
distributions (``lift_reduce_constant``) are exact in real arithmetic only: they are
recorded unsafe on floating-point data, never silently.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.types import ControlType, R, ScalarType, bool_, promote
from . import deps as D
from .base import block_cursor, check_proc, expr_cursor, finish, parse_expr, stmt_cursor
from .cursors import fwd_splice, get_expr, set_expr
from .errors import SchedulingError
from .irtools import expr_walk, names_used, node_at, splice, walk
from .deps import equal_in_context
from .record import primitive


def precision(proc, dest_name: str, e) -> ScalarType:
    """The computation precision of ``dest = e`` (semantics.compile.precision)."""
    from .bufinfo import tensor_scalar

    t = tensor_scalar(proc, dest_name)
    for x in expr_walk(e):
        if isinstance(x, N.Read) and isinstance(x.type, ScalarType):
            t = promote(t, tensor_scalar(proc, x.name))
        elif isinstance(x, N.Const) and isinstance(x.type, ScalarType) and x.type != R:
            t = promote(t, x.type)
    return t


def _data_reads(e) -> set:
    return {x.name for x in expr_walk(e) if isinstance(x, N.Read) and
            isinstance(x.type, ScalarType)}


def _bases(proc):
    """name -> the tensor it views (window statements resolved; others map to themselves):
    a write through ``w = A[0:4]`` is a write of ``A``."""
    aliases = D.window_aliases(proc)

    def base(n):
        seen = set()
        while n in aliases and n not in seen:
            seen.add(n)
            n = aliases[n].name
        return n

    return base


# ---------------------------------------------------------------- rewrite_expr


@primitive
def rewrite_expr(proc, expr_cursor_, new_expr):
    """Replace a control expression (an index, a bound, a condition) by ``new_expr`` when
    isl proves them equal (conditions: equivalent) wherever the statement runs."""
    check_proc(proc)
    c = expr_cursor(proc, expr_cursor_)
    old = c.node()
    path = c.stmt().path()
    if not isinstance(getattr(old, "type", None), ControlType):
        raise SchedulingError(f"rewrite_expr: {expr_str(old)} is a data expression; only "
                              "control expressions (indices, bounds, conditions) can be "
                              "proved equal", proc, [path])
    parent, (field, i) = path[:-1], path[-1]
    kind = "cond" if old.type == bool_ else "control"
    new = parse_expr(proc, (parent, field, i), new_expr, kind=kind)
    s = node_at(proc, path)
    vs, cs = D.context(proc, path)
    if kind == "cond":
        ok = D.prove(proc, vs, cs, N.BinOp("or", N.UnOp("not", old, bool_), new, bool_)) and \
            D.prove(proc, vs, cs, N.BinOp("or", N.UnOp("not", new, bool_), old, bool_))
    else:
        ok = equal_in_context(proc, vs, cs, old, new)
    if not ok:
        raise SchedulingError(f"rewrite_expr: cannot prove {expr_str(old)} "
                              f"{'<=>' if kind == 'cond' else '=='} {expr_str(new)} here",
                              proc, [path])
    s2 = set_expr(s, c._epath, new)
    p2 = splice(proc, parent, field, i, i + 1, [s2])
    return finish(proc, p2, "rewrite_expr", [c, new_expr],
                  f"{expr_str(old)} {'<=>' if kind == 'cond' else '=='} {expr_str(new)} for "
                  "every instance (isl)")


# ---------------------------------------------------------------- commute_expr


@primitive
def commute_expr(proc, expr_cursors):
    """Swap the operands of ``+`` or ``*`` expressions (``a * b`` -> ``b * a``); exact
    (IEEE addition and multiplication commute)."""
    check_proc(proc)
    if not isinstance(expr_cursors, (list, tuple)):
        expr_cursors = [expr_cursors]
    cs_ = [expr_cursor(proc, x) for x in expr_cursors]
    p = proc
    for c in sorted(cs_, key=lambda c: (c.stmt().path(), -len(c._epath))):
        e = c.node()
        path = c.stmt().path()
        if not isinstance(e, N.BinOp) or e.op not in ("+", "*"):
            raise SchedulingError(f"commute_expr: {expr_str(e)} is not a + or * expression",
                                  proc, [path])
        s = node_at(p, path)
        cur = get_expr(s, c._epath)
        s2 = set_expr(s, c._epath, replace(cur, lhs=cur.rhs, rhs=cur.lhs))
        p = splice(p, path[:-1], path[-1][0], path[-1][1], path[-1][1] + 1, [s2])
    return finish(proc, p, "commute_expr", [cs_],
                  "operands of + / * swapped: commutative (also in IEEE floating point)")


# ---------------------------------------------------------------- inline_assign


@primitive
def inline_assign(proc, assign_cursor):
    """``x = e ; s`` -> ``s[x -> e]`` for a scalar ``x``: legal when nothing after the
    assignment in ``x``'s scope writes ``x`` or any buffer ``e`` reads, and the inlined
    ``e`` is computed as precisely as before (``e`` is a copy, or every use computes in
    ``x``'s precision)."""
    check_proc(proc)
    c = stmt_cursor(proc, assign_cursor, "assignment")
    s, path = c.node(), c.path()
    if not isinstance(s, N.Assign) or s.idx:
        raise SchedulingError("inline_assign: expected an assignment to a scalar `x = e`",
                              proc, [path])
    x = s.name
    parent, (field, i) = path[:-1], path[-1]
    from .irtools import block_of

    blk = block_of(node_at(proc, parent), field)
    rest = blk[i + 1:]
    elsewhere = _uses_outside(proc.body, x, path)
    if elsewhere:
        raise SchedulingError(f"inline_assign: '{x}' is also used outside the statements "
                              "that follow the assignment in its block (or written "
                              "elsewhere); its value there would change", proc,
                              [path] + elsewhere[:3])
    base = _bases(proc)
    watched = {base(n) for n in {x} | _data_reads(s.rhs)}
    for t in walk(rest):
        if isinstance(t, (N.Assign, N.Reduce)) and base(t.name) in watched:
            raise SchedulingError(f"inline_assign: '{t.name}' is written after the "
                                  f"assignment; the inlined {expr_str(s.rhs)} could see a "
                                  "different value", proc, [path])
        if isinstance(t, N.Call):
            from .deps import _param_kinds

            kinds = _param_kinds(t.callee)
            for prm, a in zip(t.callee.params, t.args):
                if isinstance(a, N.WindowExpr) and base(a.name) in watched and \
                        kinds.get(prm.name, set()) & {"W", "RED"}:
                    raise SchedulingError(f"inline_assign: {t.callee.name} writes "
                                          f"'{a.name}' after the assignment", proc, [path])
    if _windows_of(rest, x):
        raise SchedulingError(f"inline_assign: '{x}' is passed as a window", proc, [path])
    xt = precision(proc, x, N.Const(0, R))
    exact_copy = isinstance(s.rhs, (N.Read, N.Const)) and precision(proc, x, s.rhs) == xt
    if not exact_copy:
        if precision(proc, x, s.rhs) != xt:
            raise SchedulingError(f"inline_assign: {expr_str(s.rhs)} is computed in "
                                  f"{precision(proc, x, s.rhs)} and rounded to {xt} when "
                                  "stored; inlined, the rounding would be lost", proc, [path])
        for t in walk(rest):
            if isinstance(t, (N.Assign, N.Reduce)) and x in _data_reads(t.rhs) and \
                    precision(proc, t.name, t.rhs) != xt:
                raise SchedulingError(f"inline_assign: a use of '{x}' computes in "
                                      f"{precision(proc, t.name, t.rhs)}, not {xt}: the "
                                      "inlined expression would round differently", proc,
                                      [path])
    from .irtools import map_exprs

    def fe(e):
        if isinstance(e, N.Read) and e.name == x and not e.idx:
            return s.rhs
        if isinstance(e, N.Read):
            return replace(e, idx=tuple(fe(y) for y in e.idx))
        if isinstance(e, N.BinOp):
            return replace(e, lhs=fe(e.lhs), rhs=fe(e.rhs))
        if isinstance(e, N.UnOp):
            return replace(e, arg=fe(e.arg))
        if isinstance(e, N.BuiltIn):
            return replace(e, args=tuple(fe(y) for y in e.args))
        return e

    new_rest = tuple(map_exprs(t, fe) for t in rest)
    p2 = splice(proc, parent, field, i, len(blk), list(new_rest))
    return finish(proc, p2, "inline_assign", [c],
                  f"'{x}' replaced by {expr_str(s.rhs)} at every later use; nothing after the "
                  "assignment writes it or what it reads; same rounding",
                  fwd_splice(parent, field, i, i + 1, 0))


def _uses_outside(stmts, x, path):
    """Paths of statements that use ``x`` and are neither the assignment at ``path`` nor
    after it in its block."""
    from .irtools import walk_paths

    parent, (field, i) = path[:-1], path[-1]
    n = len(parent)
    out = []
    for q, t in walk_paths(stmts):
        if q == path or isinstance(t, (N.For, N.If, N.With)):
            continue
        after = q[:n] == parent and len(q) > n and q[n][0] == field and q[n][1] > i
        if not after and x in names_used([t]) and not (isinstance(t, N.Alloc)
                                                        and t.name == x):
            out.append(q)
    return out


def _windows_of(stmts, name):
    for t in walk(stmts):
        if isinstance(t, N.Call) and any(isinstance(a, N.WindowExpr) and a.name == name
                                         for a in t.args):
            return True
        if isinstance(t, N.WindowStmt) and t.rhs.name == name:
            return True
    return False


# ---------------------------------------------------------------- merge_writes


@primitive
def merge_writes(proc, block_cursor_):
    """Merge two consecutive writes of one element: ``a = b; a = c`` -> ``a = c``;
    ``a += b; a = c`` -> ``a = c``; ``a = b; a += c`` -> ``a = b + c``; ``a += b; a += c``
    -> ``a += b + c`` (reassociation: recorded unsafe on floats)."""
    check_proc(proc)
    b = block_cursor(proc, block_cursor_)
    if len(b) != 2:
        raise SchedulingError("merge_writes: expected a block of two statements", proc,
                              b.paths())
    s1, s2 = b.stmts()
    p1, p2_ = b.paths()
    if not all(isinstance(s, (N.Assign, N.Reduce)) for s in (s1, s2)) or s1.name != s2.name:
        raise SchedulingError("merge_writes: expected two writes (= or +=) of one buffer",
                              proc, [p1, p2_])
    vs, cs = D.context(proc, p1)
    if len(s1.idx) != len(s2.idx) or not all(
            equal_in_context(proc, vs, cs, a, c) for a, c in zip(s1.idx, s2.idx)):
        raise SchedulingError("merge_writes: the two statements do not provably write the "
                              "same element", proc, [p1, p2_])
    name = s1.name
    base = _bases(proc)
    if base(name) in {base(n) for n in _data_reads(s2.rhs)}:
        raise SchedulingError(f"merge_writes: the second statement reads '{name}'", proc,
                              [p2_])
    unsafe = False
    dest_t = precision(proc, name, N.Const(0, R))
    if isinstance(s2, N.Assign):
        new = s2
        checked = "the second write overwrites the first (its value reads nothing the first " \
                  "wrote)"
    else:
        t1, t2 = precision(proc, name, s1.rhs), precision(proc, name, s2.rhs)
        rhs = N.BinOp("+", s1.rhs, s2.rhs, promote(s1.rhs.type, s2.rhs.type))
        new = replace(s1, rhs=rhs)
        if isinstance(s1, N.Assign):
            if not (t1 == t2 == dest_t):
                raise SchedulingError(f"merge_writes: the writes compute in {t1} and {t2}, "
                                      f"the destination is {dest_t}: merged, the intermediate "
                                      "rounding would be lost", proc, [p1, p2_])
            checked = f"a = b; a += c is a = b + c: one rounding to {dest_t} as before"
        else:
            if dest_t.is_float:
                unsafe = True
                checked = ("reassociation: (a + b) + c becomes a + (b + c) (exact in real "
                           "arithmetic; floating-point rounding may differ)")
            else:
                checked = "integer addition is associative"
    parent, field, lo = b._parent, b._field, b._lo
    p2 = splice(proc, parent, field, lo, lo + 2, [new])
    return finish(proc, p2, "merge_writes", [b], checked,
                  fwd_splice(parent, field, lo, lo + 2, 1, lambda k, rest: None),
                  unsafe=unsafe)


# ---------------------------------------------------------------- lift_reduce_constant


@primitive
def lift_reduce_constant(proc, block_cursor_):
    """``x = 0.0; for i: x += c * e`` -> ``x = 0.0; for i: x += e; x = c * x`` for a scalar
    ``x`` and a ``c`` the loop does not change (distribution: recorded unsafe on floats)."""
    check_proc(proc)
    b = block_cursor(proc, block_cursor_)
    if len(b) != 2:
        raise SchedulingError("lift_reduce_constant: expected a block of two statements: the "
                              "zero assignment and the loop", proc, b.paths())
    z, loop = b.stmts()
    pz, pl = b.paths()
    if not (isinstance(z, N.Assign) and not z.idx and isinstance(z.rhs, N.Const)
            and z.rhs.val == 0):
        raise SchedulingError("lift_reduce_constant: the first statement must be `x = 0`",
                              proc, [pz])
    x = z.name
    if not isinstance(loop, N.For) or len(loop.body) != 1:
        raise SchedulingError("lift_reduce_constant: the second statement must be a loop of "
                              "one reduction", proc, [pl])
    r = loop.body[0]
    if not (isinstance(r, N.Reduce) and r.name == x and not r.idx and
            isinstance(r.rhs, N.BinOp) and r.rhs.op == "*"):
        raise SchedulingError(f"lift_reduce_constant: the loop body must be `{x} += c * e`",
                              proc, [pl + (("body", 0),)])
    cexp, e = r.rhs.lhs, r.rhs.rhs
    used = {v.name for v in expr_walk(cexp) if isinstance(v, N.Read)}
    if x in _data_reads(e):
        raise SchedulingError(f"lift_reduce_constant: {expr_str(e)} reads '{x}'", proc, [pl])
    if loop.iter in used or x in used:
        raise SchedulingError(f"lift_reduce_constant: {expr_str(cexp)} changes with the loop",
                              proc, [pl])
    dest_t = precision(proc, x, N.Const(0, R))
    scale = N.Assign(x, (), N.BinOp("*", cexp, N.Read(x, (), dest_t), r.rhs.type), r.srcinfo)
    new_loop = replace(loop, body=(replace(r, rhs=e),))
    parent, field, lo = b._parent, b._field, b._lo
    p2 = splice(proc, parent, field, lo, lo + 2, [z, new_loop, scale])
    unsafe = dest_t.is_float
    checked = ("distribution: sum(c * e) becomes c * sum(e) (exact in real arithmetic; "
               "floating-point rounding may differ)" if unsafe else
               "integer distribution: exact")
    return finish(proc, p2, "lift_reduce_constant", [b], checked,
                  fwd_splice(parent, field, lo, lo + 2, 3,
                             lambda k, rest: parent + ((field, k),) + rest), unsafe=unsafe)


__all__ = ["rewrite_expr", "commute_expr", "inline_assign", "merge_writes",
           "lift_reduce_constant"]
