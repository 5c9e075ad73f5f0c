"""Buffer rewrites: lift_alloc, sink_alloc, expand_dim, divide_dim, rearrange_dim,
set_memory, set_precision, inline_window (stage_mem: stage.py)."""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.memories import Memory
from ..ir.types import ScalarType
from . import deps as D
from .base import (alloc_cursor, check_proc, finish, parse_expr, stmt_cursor,
                   where_of)
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import (block_of, cmp, conj, const, div, expr_walk, mod, names_used, node_at,
                      simp, splice, sub, walk, walk_paths, window_composers)
from .record import primitive

# ---------------------------------------------------------------- access mapping


def map_buffer(stmts, name, f_pt, f_win=None, new_name=None):
    """Rewrite every access of buffer ``name``: point indices with ``f_pt(idx) -> idx`` and
    windows with ``f_win(waccess tuple) -> waccess tuple`` (None: refuse windows)."""
    nn = new_name or name

    def fe(e):
        if isinstance(e, N.Read):
            idx = tuple(fe(x) for x in e.idx)
            if e.name == name and isinstance(e.type, ScalarType):
                return replace(e, name=nn, idx=tuple(simp(x) for x in f_pt(idx)))
            return replace(e, idx=idx)
        if isinstance(e, N.BinOp):
            return replace(e, lhs=fe(e.lhs), rhs=fe(e.rhs))
        if isinstance(e, N.UnOp):
            return replace(e, arg=fe(e.arg))
        if isinstance(e, N.BuiltIn):
            return replace(e, args=tuple(fe(x) for x in e.args))
        if isinstance(e, N.WindowExpr) and e.name == name:
            if f_win is None:
                raise _WindowUse(e)
            return replace(e, name=nn, idx=tuple(_simp_w(w) for w in f_win(e.idx)))
        return e

    def fs(s):
        if isinstance(s, (N.Assign, N.Reduce)):
            s = replace(s, rhs=fe(s.rhs), idx=tuple(fe(x) for x in s.idx))
            if s.name == name:
                s = replace(s, name=nn, idx=tuple(simp(x) for x in f_pt(s.idx)))
            return s
        if isinstance(s, N.Call):
            return replace(s, args=tuple(fe(a) for a in s.args))
        if isinstance(s, N.WindowStmt):
            return replace(s, rhs=fe(s.rhs))
        if isinstance(s, N.If):
            return replace(s, body=tuple(fs(c) for c in s.body),
                           orelse=tuple(fs(c) for c in s.orelse))
        if isinstance(s, (N.For, N.With)):
            return replace(s, body=tuple(fs(c) for c in s.body))
        return s

    return tuple(fs(s) for s in stmts)


def _simp_w(w):
    if isinstance(w, N.Point):
        return replace(w, pt=simp(w.pt))
    return replace(w, lo=simp(w.lo), hi=simp(w.hi))


class _WindowUse(Exception):
    def __init__(self, e):
        self.e = e


def _scope_after(proc, path):
    """The statements after an allocation in its block (its whole lifetime)."""
    parent, (field, i) = path[:-1], path[-1]
    return block_of(node_at(proc, parent), field)[i + 1:]


def _replace_scope(proc, path, new_alloc, new_rest):
    parent, (field, i) = path[:-1], path[-1]
    blk = block_of(node_at(proc, parent), field)
    return splice(proc, parent, field, i, len(blk), [new_alloc] + list(new_rest))


# ---------------------------------------------------------------- lift / sink


@primitive
def lift_alloc(proc, alloc_cursor_, n_lifts: int = 1):
    """Move an allocation out of the enclosing loop/if/CudaWarps ``n_lifts`` times."""
    check_proc(proc)
    c = alloc_cursor(proc, alloc_cursor_)
    p, path = proc, c.path()
    a = c.node()
    fwds = []
    notes = ["shape independent of the loops left"]
    for _ in range(n_lifts):
        if len(path) < 2:
            raise SchedulingError("lift_alloc: the allocation is already at the top level", p,
                                  [path])
        parent_path = path[:-1]
        par = node_at(p, parent_path)
        if isinstance(par, N.With) and isinstance(par.ctx, N.CudaDeviceFunction):
            raise SchedulingError("lift_alloc: cannot lift out of a CudaDeviceFunction", p,
                                  [path])
        if isinstance(par, N.For):
            shape_vars = set()
            for e in _alloc_exprs(a):
                shape_vars |= {x.name for x in expr_walk(e) if isinstance(x, N.Read)}
            if par.iter in shape_vars:
                raise SchedulingError(f"lift_alloc: the shape depends on loop variable "
                                      f"'{par.iter}'", p, [path])
            if isinstance(a, N.Alloc):
                _no_carried_value(p, parent_path, path[-1][1] + 1, a.name, "lift_alloc",
                                  [path])
                notes.append(f"no read in an iteration of '{par.iter}' sees an element of "
                             f"'{a.name}' written in an earlier iteration (isl)")
        field, i = path[-1]
        blk = block_of(par, field)
        newpar = replace(par, **{field: blk[:i] + blk[i + 1:]}) if len(blk) > 1 else \
            replace(par, **{field: (N.Pass(),)})
        gp, (gf, gi) = parent_path[:-1], parent_path[-1]
        p = splice(p, gp, gf, gi, gi + 1, [a, newpar])

        def inner(k, rest, field=field, i=i, gp=gp, gf=gf, gi=gi, solo=len(blk) == 1):
            if not rest:
                return gp + ((gf, gi + 1),)
            (f2, j), tail = rest[0], rest[1:]
            if f2 == field and j == i:
                return gp + ((gf, gi),) + tail
            if f2 == field and j > i:
                return gp + ((gf, gi + 1), (f2, j - 1)) + tail
            return gp + ((gf, gi + 1),) + rest

        fwds.append(fwd_splice(gp, gf, gi, gi + 1, 2, inner))
        path = gp + ((gf, gi),)
    from .cursors import fwd_compose

    return finish(proc, p, "lift_alloc", [c, n_lifts], "; ".join(notes), fwd_compose(*fwds))


def _no_carried_value(p, loop_path, first, name, who, marks):
    """A buffer allocated in (or sunk into) the body of the loop at ``loop_path``, used by
    its statements ``first..``: the allocation may move across the loop only if no read in
    an iteration sees an element written in an earlier one (a fresh allocation would read
    uninitialized data there, a lifted one the earlier value)."""
    from .flow import carried

    loop = node_at(p, loop_path)
    vs, cs = D.context(p, loop_path)
    stmts = loop.body[first:]
    paths = [loop_path + (("body", k),) for k in range(first, len(loop.body))]
    acc = [x for x in D.collect(p, stmts, paths, extra_vars=[(loop.iter, loop.lo, loop.hi)])
           if x.buf == name]
    reads = [x for x in acc if x.kind in ("R", "RED")]
    writes = [x for x in acc if x.kind in ("W", "RED")]
    hit = carried(p, vs, cs, loop.iter, reads, writes, len(loop_path))
    if hit is not None:
        r, w, sample = hit
        raise SchedulingError(
            f"{who}: '{name}' would carry values between iterations of '{loop.iter}': "
            f"{_kind(r)} {r.text} can see the element {_kind(w)} {w.text} stored in an "
            f"earlier iteration (e.g. {sample}), because nothing earlier in its own iteration "
            "overwrites it", p, list(marks) + sorted({r.path, w.path}))


def _kind(a):
    return {"R": "the read", "W": "the write", "RED": "the reduction"}[a.kind]


def _alloc_exprs(a):
    if isinstance(a, N.Alloc):
        return list(a.type.shape)
    return [d.extent for d in a.dims]


@primitive
def sink_alloc(proc, alloc_cursor_):
    """Move an allocation into the loop/if that immediately follows it. For a loop, no
    value may flow between iterations through the buffer: every read must be covered by a
    write earlier in the same iteration, or touch no element written in an earlier one."""
    check_proc(proc)
    c = alloc_cursor(proc, alloc_cursor_)
    a, path = c.node(), c.path()
    nxt = c.next()
    if nxt.is_invalid() or not isinstance(nxt.node(), (N.For, N.If)):
        raise SchedulingError("sink_alloc: the allocation must be followed by a loop or if",
                              proc, [path])
    s, spath = nxt.node(), nxt.path()
    rest = _scope_after(proc, path)[1:]
    if a.name in names_used(rest):
        raise SchedulingError(f"sink_alloc: '{a.name}' is used after the loop/if", proc, [path])
    checked = "not used after the scope"
    if isinstance(s, N.For) and isinstance(a, N.Alloc):
        _no_carried_value(proc, spath, 0, a.name, "sink_alloc", [path, spath])
        it = s.iter
        checked += (f"; no read in an iteration of '{it}' sees an element written in an "
                    "earlier iteration (isl)")
    elif isinstance(s, N.If) and s.orelse and a.name in names_used(s.orelse):
        raise SchedulingError("sink_alloc: the buffer is used in the else branch too", proc,
                              [path])
    new = replace(s, body=(a,) + s.body)
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 2, [new])

    def inner(k, rest):
        if k == i:
            return parent + ((field, i), ("body", 0))
        if not rest:
            return parent + ((field, i),)
        (f2, j), tail = rest[0], rest[1:]
        return parent + ((field, i), (f2, j + (1 if f2 == "body" else 0))) + tail

    return finish(proc, p2, "sink_alloc", [c], checked,
                  fwd_splice(parent, field, i, i + 2, 1, inner))


# ---------------------------------------------------------------- dimensions


def _retype(a, shape):
    return replace(a, type=replace(a.type, shape=tuple(shape)))


def _windows_of(stmts, name):
    for s in walk(stmts):
        if isinstance(s, N.WindowStmt) and s.rhs.name == name:
            return True
        if isinstance(s, N.Call) and any(isinstance(x, N.WindowExpr) and x.name == name
                                         for x in s.args):
            return True
    return False


def _uses_in_context(proc, path, name):
    """Paths/contexts of every statement that accesses ``name`` after the alloc at ``path``."""
    parent, (field, i) = path[:-1], path[-1]
    blk = block_of(node_at(proc, parent), field)
    acc = D.collect(proc, blk[i + 1:], [parent + ((field, k),) for k in range(i + 1, len(blk))])
    return [x for x in acc if x.buf == name]


@primitive
def expand_dim(proc, alloc_cursor_, alloc_dim, indexing_expr):
    """Add a leading dimension of extent ``alloc_dim``, indexed everywhere by
    ``indexing_expr`` (over variables in scope at the allocation, so constant during the
    buffer's lifetime); checked in bounds."""
    check_proc(proc)
    c = alloc_cursor(proc, alloc_cursor_)
    a, path = c.node(), c.path()
    if not isinstance(a, N.Alloc):
        raise SchedulingError("expand_dim: expected a data allocation", proc, [path])
    where = where_of(c)
    size = parse_expr(proc, where, alloc_dim)
    e = parse_expr(proc, where, indexing_expr)
    vs, cs = D.context(proc, path)
    if not D.prove(proc, vs, cs, conj(cmp("<=", const(0), e), cmp("<", e, size))):
        raise SchedulingError(f"expand_dim: cannot prove 0 <= {expr_str(e)} < "
                              f"{expr_str(size)}", proc, [path])
    rest = map_buffer(_scope_after(proc, path), a.name, lambda idx: (e,) + tuple(idx),
                      lambda w: (N.Point(e),) + tuple(w))
    p2 = _replace_scope(proc, path, _retype(a, (size,) + a.type.shape), rest)
    return finish(proc, p2, "expand_dim", [c, alloc_dim, indexing_expr],
                  f"proved 0 <= {expr_str(e)} < {expr_str(size)}; index fixed during the "
                  "buffer's lifetime: an injective relabeling of elements")


@primitive
def divide_dim(proc, alloc_cursor_, dim_idx: int, quotient: int):
    """Split dimension ``dim_idx`` (extent divisible by ``quotient``) into
    ``[extent / quotient, quotient]`` indexed by ``i / quotient, i % quotient``."""
    check_proc(proc)
    c = alloc_cursor(proc, alloc_cursor_)
    a, path = c.node(), c.path()
    if not isinstance(a, N.Alloc) or not 0 <= dim_idx < len(a.type.shape):
        raise SchedulingError("divide_dim: expected a data allocation and a valid dimension",
                              proc, [path])
    if not isinstance(quotient, int) or quotient < 1:
        raise SchedulingError("divide_dim: quotient must be a positive int", proc, [path])
    ext = a.type.shape[dim_idx]
    vs, cs = D.context(proc, path)
    if not D.prove(proc, vs, cs, cmp("==", mod(ext, quotient), const(0))):
        raise SchedulingError(f"divide_dim: cannot prove {expr_str(ext)} % {quotient} == 0",
                              proc, [path])
    d, q = dim_idx, quotient

    def fp(idx):
        idx = list(idx)
        return tuple(idx[:d] + [div(idx[d], q), mod(idx[d], q)] + idx[d + 1:])

    def fw(w):
        w = list(w)
        if isinstance(w[d], N.Interval):
            lo, hi = w[d].lo, w[d].hi
            n = const_value(sub(hi, lo))
            if n is not None and n % q == 0 and D.prove(proc, vs, cs, cmp("==", mod(lo, q),
                                                                           const(0))):
                return tuple(w[:d] + [N.Interval(div(lo, q), div(hi, q)),
                                      N.Interval(const(0), const(q))] + w[d + 1:])
            raise _WindowUse(None)
        return tuple(w[:d] + [N.Point(div(w[d].pt, q)), N.Point(mod(w[d].pt, q))] + w[d + 1:])

    try:
        rest = map_buffer(_scope_after(proc, path), a.name, fp, fw)
    except _WindowUse:
        raise SchedulingError("divide_dim: a window over the divided dimension does not align "
                              "with the quotient", proc, [path]) from None
    shape = list(a.type.shape)
    shape[d:d + 1] = [div(ext, q), const(q)]
    p2 = _replace_scope(proc, path, _retype(a, shape), rest)
    return finish(proc, p2, "divide_dim", [c, dim_idx, quotient],
                  f"proved {expr_str(ext)} % {q} == 0: i -> (i / {q}, i % {q}) is a bijection")


@primitive
def rearrange_dim(proc, alloc_cursor_, permute_vector):
    """Permute the dimensions of an allocation (and every index into it)."""
    check_proc(proc)
    c = alloc_cursor(proc, alloc_cursor_)
    a, path = c.node(), c.path()
    perm = list(permute_vector)
    if not isinstance(a, N.Alloc) or sorted(perm) != list(range(len(a.type.shape))):
        raise SchedulingError(f"rearrange_dim: {perm} is not a permutation of the dimensions",
                              proc, [path])
    rest = _scope_after(proc, path)
    if _windows_of(rest, a.name):
        raise SchedulingError("rearrange_dim: the buffer is used through windows; permuting "
                              "would transpose them", proc, [path])
    rest = map_buffer(rest, a.name, lambda idx: tuple(idx[k] for k in perm))
    p2 = _replace_scope(proc, path, _retype(a, [a.type.shape[k] for k in perm]), rest)
    return finish(proc, p2, "rearrange_dim", [c, perm], "index permutation: a bijection")


# ---------------------------------------------------------------- memory and precision


@primitive
def set_memory(proc, alloc_cursor_, memory):
    """Place an allocation, or a data parameter (its name or argument cursor), in another
    memory (an annotation: sequential meaning unchanged; the result must still respect scope
    and argument-memory rules, and callers pass arrays in the new memory)."""
    check_proc(proc)
    from .cursors import ArgCursor

    arg = alloc_cursor_.name() if isinstance(alloc_cursor_, ArgCursor) else alloc_cursor_
    if isinstance(arg, str) and proc.param(arg.strip()) is not None:
        prm = proc.param(arg.strip())
        if not isinstance(memory, Memory):
            raise SchedulingError(f"set_memory: {memory!r} is not a memory", proc)
        if not prm.is_data:
            raise SchedulingError(f"set_memory: '{prm.name}' is a control parameter", proc)
        params = tuple(replace(q, mem=memory) if q.name == prm.name else q
                       for q in proc.params)
        return finish(proc, replace(proc, params=params), "set_memory", [prm.name, memory],
                      "annotation: sequential meaning unchanged (the parameter's placement)")
    c = alloc_cursor(proc, alloc_cursor_)
    if not isinstance(memory, Memory):
        raise SchedulingError(f"set_memory: {memory!r} is not a memory", proc, [c.path()])
    a = c.node()
    if not isinstance(a, N.Alloc):
        raise SchedulingError("set_memory: expected a data allocation", proc, [c.path()])
    p2 = _replace_scope(proc, c.path(), replace(a, mem=memory), _scope_after(proc, c.path()))
    return finish(proc, p2, "set_memory", [c, memory],
                  "annotation: sequential meaning unchanged (placement only)")


@primitive
def set_precision(proc, alloc_cursor_, typ):
    """Change an allocation's scalar type. Value-sensitive and not proven: recorded unsafe."""
    check_proc(proc)
    c = alloc_cursor(proc, alloc_cursor_)
    if not isinstance(typ, ScalarType):
        raise SchedulingError(f"set_precision: {typ!r} is not a scalar type", proc, [c.path()])
    a = c.node()
    if not isinstance(a, N.Alloc):
        raise SchedulingError("set_precision: expected a data allocation", proc, [c.path()])
    rest = _scope_after(proc, c.path())

    def retype(e):
        if isinstance(e, N.Read) and e.name == a.name:
            return replace(e, type=typ, idx=tuple(retype(x) for x in e.idx))
        if isinstance(e, N.Read):
            return replace(e, idx=tuple(retype(x) for x in e.idx))
        if isinstance(e, N.WindowExpr) and e.name == a.name:
            return replace(e, type=typ)
        if isinstance(e, N.BinOp):
            lhs, rhs = retype(e.lhs), retype(e.rhs)
            t = e.type
            if isinstance(t, ScalarType):
                from ..ir.types import promote

                t = promote(_dt(lhs), _dt(rhs))
            return replace(e, lhs=lhs, rhs=rhs, type=t)
        if isinstance(e, N.UnOp):
            arg = retype(e.arg)
            return replace(e, arg=arg, type=_dt(arg) if isinstance(e.type, ScalarType) else e.type)
        if isinstance(e, N.BuiltIn):
            return replace(e, args=tuple(retype(x) for x in e.args))
        return e

    from .irtools import map_exprs

    rest = tuple(map_exprs(s, retype) for s in rest)
    p2 = _replace_scope(proc, c.path(), replace(a, type=replace(a.type, scalar=typ)), rest)
    return finish(proc, p2, "set_precision", [c, typ],
                  f"UNCHECKED (value-sensitive): values stored in '{a.name}' are now rounded "
                  f"to {typ} instead of {a.type.scalar}", unsafe=True)


def _dt(e):
    return e.type if isinstance(e.type, ScalarType) else e.type


# ---------------------------------------------------------------- windows


@primitive
def inline_window(proc, winstmt_cursor):
    """Replace a window statement ``w = A[...]`` by its definition at every use."""
    check_proc(proc)
    c = stmt_cursor(proc, winstmt_cursor, "window statement")
    w, path = c.node(), c.path()
    if not isinstance(w, N.WindowStmt):
        raise SchedulingError("inline_window: expected a window statement", proc, [path])
    if w.special is not None:
        # a tensor map is an alias like any window for plain accesses; an instruction that
        # takes a tensor-map parameter needs the map itself
        parent, (field, i) = path[:-1], path[-1]
        blk = block_of(node_at(proc, parent), field)
        for upath, s in walk_paths(blk, parent, field):
            if upath[len(parent)][1] > i and isinstance(s, N.Call) and any(
                    isinstance(a, N.WindowExpr) and a.name == w.name for a in s.args):
                raise SchedulingError(
                    f"inline_window: '{w.name}' is passed to {s.callee.name}, which takes a "
                    f"tensor map ({w.special}); inlining would pass the plain tensor "
                    f"'{w.rhs.name}'", proc, [path, upath])
    base = w.rhs

    fp, fw = window_composers(base)

    rest = map_buffer(_scope_after(proc, path), w.name, fp, fw, new_name=base.name)
    parent, (field, i) = path[:-1], path[-1]
    blk = block_of(node_at(proc, parent), field)
    p2 = splice(proc, parent, field, i, len(blk), list(rest))
    return finish(proc, p2, "inline_window", [c], "alias substitution: same elements",
                  fwd_splice(parent, field, i, i + 1, 0))


def _scalar(proc, name):
    from .bufinfo import tensor_scalar

    return tensor_scalar(proc, name)


def _in_cuda_path(p, path) -> bool:
    for k in range(1, len(path) + 1):
        s = node_at(p, path[:k])
        if isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction):
            return True
    return False


__all__ = ["lift_alloc", "sink_alloc", "expand_dim", "divide_dim", "rearrange_dim",
           "set_memory", "set_precision", "inline_window"]
