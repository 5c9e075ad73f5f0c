"""Buffer shape rewrites: ``mult_dim`` (the inverse of ``divide_dim``), ``resize_dim`` and
``unroll_buffer``. Each relabels the elements of one allocation injectively and rewrites
every access (and window) of it in its scope, so values are unchanged; the checks are that
the relabeling is a bijection onto what is used (isl) and that windows stay windows."""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.affine import const_value
from . import deps as D
from .base import alloc_cursor, check_proc, finish, parse_expr, where_of
from .buffers import _WindowUse, _replace_scope, _retype, _scope_after, _uses_in_context, \
    map_buffer
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import add, block_of, cmp, conj, const, mul, node_at, simp, splice, sub
from .deps import equal_in_context
from .record import primitive


def _data_alloc(proc, alloc, who):
    c = alloc_cursor(proc, alloc)
    a = c.node()
    if not isinstance(a, N.Alloc):
        raise SchedulingError(f"{who}: expected a data allocation", proc, [c.path()])
    return c, a


# ---------------------------------------------------------------- mult_dim


@primitive
def mult_dim(proc, alloc_cursor_, hi_dim_idx: int, lo_dim_idx: int):
    """Merge dimension ``lo_dim_idx`` (constant extent ``c``) into ``hi_dim_idx``:
    ``x: T[n, m, 4]``, ``mult_dim(x, 0, 2)`` -> ``x: T[4 * n, m]`` indexed
    ``x[4 * i + k, j]``."""
    check_proc(proc)
    c, a = _data_alloc(proc, alloc_cursor_, "mult_dim")
    path = c.path()
    shape = list(a.type.shape)
    hi, lo = hi_dim_idx, lo_dim_idx
    for d in (hi, lo):
        if not isinstance(d, int) or not 0 <= d < len(shape):
            raise SchedulingError(f"mult_dim: {d!r} is not a dimension of '{a.name}' (rank "
                                  f"{len(shape)})", proc, [path])
    if hi == lo:
        raise SchedulingError("mult_dim: cannot multiply a dimension by itself", proc, [path])
    k = const_value(shape[lo])
    if k is None:
        raise SchedulingError(f"mult_dim: dimension {lo} of '{a.name}' must have a constant "
                              f"extent, not {expr_str(shape[lo])}", proc, [path])
    vs, cs = D.context(proc, path)

    def merge_idx(idx):
        idx = list(idx)
        idx[hi] = add(mul(k, idx[hi]), idx[lo])
        del idx[lo]
        return tuple(idx)

    def merge_win(w):
        w = list(w)
        x, y = w[hi], w[lo]
        if isinstance(x, N.Point) and isinstance(y, N.Point):
            m = N.Point(add(mul(k, x.pt), y.pt))
        elif isinstance(x, N.Point):
            m = N.Interval(add(mul(k, x.pt), y.lo), add(mul(k, x.pt), y.hi))
        elif isinstance(y, N.Interval) and equal_in_context(proc, vs, cs, y.lo, const(0)) \
                and equal_in_context(proc, vs, cs, y.hi, const(k)):
            m = N.Interval(mul(k, x.lo), mul(k, x.hi))
        else:
            raise _WindowUse(None)
        tags = [d for d, v in enumerate(w) if isinstance(v, N.Interval)]
        w[hi] = m
        src = lo if isinstance(x, N.Point) else hi
        new_tags = [(src if d == hi else d) for d, v in enumerate(w)
                    if d != lo and isinstance(v, N.Interval)]
        if [t for t in tags if t in new_tags] != new_tags:
            raise _WindowUse(None)  # the window's dimensions would be reordered
        del w[lo]
        return tuple(w)

    try:
        rest = map_buffer(_scope_after(proc, path), a.name, merge_idx, merge_win)
    except _WindowUse:
        raise SchedulingError(f"mult_dim: a window of '{a.name}' over dimensions {hi} and {lo} "
                              "is not a window after merging them (it would be strided or "
                              "reordered)", proc, [path]) from None
    shape[hi] = mul(k, shape[hi])
    del shape[lo]
    p2 = _replace_scope(proc, path, _retype(a, shape), rest)
    return finish(proc, p2, "mult_dim", [c, hi, lo],
                  f"(i, j) -> {k} * i + j with 0 <= j < {k}: a bijection onto the merged "
                  "dimension")


# ---------------------------------------------------------------- resize_dim


@primitive
def resize_dim(proc, alloc_cursor_, dim_idx: int, size, offset, fold: bool = False):
    """Give dimension ``dim_idx`` the extent ``size`` and index it ``i - offset``; every
    access must provably lie in ``[offset, offset + size)`` (isl). With ``fold=True`` the
    dimension becomes a circular buffer of ``size`` entries indexed ``i % size`` (``offset``
    ignored): legal when no value is read after an element ``size`` apart overwrote its
    slot."""
    check_proc(proc)
    c, a = _data_alloc(proc, alloc_cursor_, "resize_dim")
    path = c.path()
    if not isinstance(dim_idx, int) or not 0 <= dim_idx < len(a.type.shape):
        raise SchedulingError(f"resize_dim: {dim_idx!r} is not a dimension of '{a.name}'",
                              proc, [path])
    where = where_of(c)
    n = parse_expr(proc, where, size)
    vs, cs = D.context(proc, path)
    if not D.prove(proc, vs, cs, cmp(">", n, const(0))):
        raise SchedulingError(f"resize_dim: cannot prove the new size {expr_str(n)} > 0",
                              proc, [path])
    if fold:
        from .fold import fold_dim

        return fold_dim(proc, c, a, dim_idx, n)
    off = parse_expr(proc, where, offset)
    d = dim_idx
    for x in _uses_in_context(proc, path, a.name):
        ix = x.idx[d]
        lo_ok, hi_ok = (ix[1], add(ix[1], const(1))) if ix[0] == "pt" else (ix[1], ix[2])
        ok = D.prove(proc, vs + x.vars, cs + x.cons,
                     conj(cmp("<=", off, lo_ok), cmp("<=", hi_ok, add(off, n))))
        if not ok:
            raise SchedulingError(f"resize_dim: access {x.text} may fall outside "
                                  f"[{expr_str(off)}, {expr_str(add(off, n))}) in dimension "
                                  f"{d}", proc, [path, x.path])

    def fp(idx):
        idx = list(idx)
        idx[d] = sub(idx[d], off)
        return tuple(idx)

    def fw(w):
        w = list(w)
        x = w[d]
        w[d] = N.Point(sub(x.pt, off)) if isinstance(x, N.Point) else \
            N.Interval(sub(x.lo, off), sub(x.hi, off))
        return tuple(w)

    rest = map_buffer(_scope_after(proc, path), a.name, fp, fw)
    shape = list(a.type.shape)
    shape[d] = simp(n)
    p2 = _replace_scope(proc, path, _retype(a, shape), rest)
    return finish(proc, p2, "resize_dim", [c, d, size, offset],
                  f"every access of dimension {d} lies in [{expr_str(off)}, "
                  f"{expr_str(add(off, n))}) (isl): i -> i - ({expr_str(off)}) is injective on "
                  "the elements used")


# ---------------------------------------------------------------- unroll_buffer


@primitive
def unroll_buffer(proc, alloc_cursor_, dimension: int):
    """Split a buffer along a dimension of constant extent ``c`` into ``c`` buffers
    ``name_0 .. name_{c-1}``; every access must index that dimension with a constant."""
    check_proc(proc)
    c, a = _data_alloc(proc, alloc_cursor_, "unroll_buffer")
    path = c.path()
    shape = list(a.type.shape)
    d = dimension
    if not isinstance(d, int) or not 0 <= d < len(shape):
        raise SchedulingError(f"unroll_buffer: {d!r} is not a dimension of '{a.name}'", proc,
                              [path])
    k = const_value(shape[d])
    if k is None:
        raise SchedulingError(f"unroll_buffer: dimension {d} of '{a.name}' must have a "
                              "constant extent", proc, [path])
    from .irtools import all_names

    taken = all_names(proc)
    names = [f"{a.name}_{j}" for j in range(k)]
    clash = [n for n in names if n in taken]
    if clash:
        raise SchedulingError(f"unroll_buffer: names {clash} are already used", proc, [path])
    rest = _scope_after(proc, path)

    def pick(e, where_):
        v = const_value(simp(e))
        if v is None or not 0 <= v < k:
            raise _Bad(f"index {expr_str(e)} of {where_} is not a constant in [0, {k})")
        return v

    try:
        rest = _split_accesses(rest, a.name, d, names, pick)
    except _Bad as e:
        raise SchedulingError(f"unroll_buffer: {e} (unroll the loops that index it first)",
                              proc, [path]) from None
    new_allocs = [replace(a, name=n, type=replace(a.type, shape=tuple(
        shape[:d] + shape[d + 1:]))) for n in names]
    parent, (field, i) = path[:-1], path[-1]
    blk = block_of(node_at(proc, parent), field)
    p2 = splice(proc, parent, field, i, len(blk), new_allocs + list(rest))
    nn = len(new_allocs)
    return finish(proc, p2, "unroll_buffer", [c, d],
                  f"every access indexes dimension {d} with a constant: element (.., j, ..) "
                  f"of '{a.name}' is element (.., ..) of '{a.name}_j'",
                  fwd_splice(parent, field, i, i + 1, nn))


class _Bad(Exception):
    pass


def _split_accesses(stmts, name, d, names, pick):
    """Accesses ``name[.., j, ..]`` (``j = pick(index)``) become ``names[j][.., ..]``."""

    def fe(e):
        if isinstance(e, N.Read):
            idx = tuple(fe(x) for x in e.idx)
            if e.name == name and e.idx:
                j = pick(idx[d], f"'{name}'")
                return replace(e, name=names[j], idx=idx[:d] + idx[d + 1:])
            return replace(e, idx=idx)
        if isinstance(e, N.BinOp):
            return replace(e, lhs=fe(e.lhs), rhs=fe(e.rhs))
        if isinstance(e, N.UnOp):
            return replace(e, arg=fe(e.arg))
        if isinstance(e, N.BuiltIn):
            return replace(e, args=tuple(fe(x) for x in e.args))
        if isinstance(e, N.WindowExpr) and e.name == name:
            w = e.idx[d]
            if not isinstance(w, N.Point):
                raise _Bad(f"the window {expr_str(e)} spans dimension {d}")
            j = pick(w.pt, f"the window {expr_str(e)}")
            return replace(e, name=names[j], idx=e.idx[:d] + e.idx[d + 1:])
        return e

    def fs(s):
        if isinstance(s, (N.Assign, N.Reduce)):
            s = replace(s, rhs=fe(s.rhs), idx=tuple(fe(x) for x in s.idx))
            if s.name == name:
                j = pick(s.idx[d], f"'{name}'")
                s = replace(s, name=names[j], idx=s.idx[:d] + s.idx[d + 1:])
            return s
        if isinstance(s, N.Call):
            return replace(s, args=tuple(fe(x) for x in s.args))
        if isinstance(s, N.WindowStmt):
            return replace(s, rhs=fe(s.rhs))
        if isinstance(s, N.If):
            return replace(s, body=tuple(fs(x) for x in s.body),
                           orelse=tuple(fs(x) for x in s.orelse))
        if isinstance(s, (N.For, N.With)):
            return replace(s, body=tuple(fs(x) for x in s.body))
        return s

    return tuple(fs(s) for s in stmts)


__all__ = ["mult_dim", "resize_dim", "unroll_buffer"]
