"""``resize_dim(..., fold=True)``: a dimension becomes a circular buffer of ``n`` slots.

Element ``i`` of the dimension is stored in slot ``i % n``. The values the program reads are
unchanged when (1) every read of the buffer is covered by an earlier write of its element in
the buffer's scope (so no read sees uninitialized data, which another element's slot would
now supply), and (2) no write of an element ``e'`` lands between a write of ``e`` and a read
of ``e`` when ``e'`` differs from ``e`` only in the folded dimension by a non-zero multiple
of ``n`` (it would overwrite the slot before the read). Both are integer-set emptiness
questions over the statement instances of the scope, ordered by ``flow.precedes``; any
pattern isl cannot represent refuses the fold.
"""

from __future__ import annotations

import islpy as isl

from ..ir import nodes as N
from ..ir.affine import NotAffine
from . import deps as D
from . import flow as F
from .base import finish
from .buffers import _replace_scope, _retype, _scope_after, map_buffer
from .errors import SchedulingError
from .irtools import mod, simp


def fold_dim(proc, c, a, d: int, n):
    from ..ir.affine import const_value

    path = c.path()
    k = const_value(simp(n))
    if k is None:
        raise SchedulingError("resize_dim(fold=True): the number of slots must be a constant",
                              proc, [path])
    parent, (field, i) = path[:-1], path[-1]
    vs, cs = D.context(proc, path)
    acc = [x for x in D.collect(proc, _scope_after(proc, path),
                                [parent + ((field, j),) for j in range(
                                    i + 1, i + 1 + len(_scope_after(proc, path)))])
           if x.buf == a.name]
    reads = [x for x in acc if x.kind in ("R", "RED")]
    writes = [x for x in acc if x.kind in ("W", "RED")]
    start = len(parent)
    if not F.all_covered(proc, vs, cs, reads, writes, start):
        raise SchedulingError(f"resize_dim(fold=True): some read of '{a.name}' is not "
                              "preceded by a write of its element in the buffer's scope; "
                              "folded, it could see another element's value", proc, [path])
    for r in reads:
        for w in writes:
            for w2 in writes:
                hit = _clobber(proc, vs, cs, w, w2, r, d, k, start)
                if hit is not None:
                    raise SchedulingError(
                        f"resize_dim(fold=True): {w2.text} may overwrite the slot of the "
                        f"value {w.text} stored before {r.text} reads it ({k} slots are too "
                        f"few; e.g. {hit})", proc, [path, w2.path, r.path])

    def fp(idx):
        idx = list(idx)
        idx[d] = mod(idx[d], k)
        return tuple(idx)

    def fw(win):
        win = list(win)
        x = win[d]
        if not isinstance(x, N.Point):
            from .buffers import _WindowUse

            raise _WindowUse(None)
        win[d] = N.Point(mod(x.pt, k))
        return tuple(win)

    from .buffers import _WindowUse

    try:
        rest = map_buffer(_scope_after(proc, path), a.name, fp, fw)
    except _WindowUse:
        raise SchedulingError(f"resize_dim(fold=True): a window of '{a.name}' spans the folded "
                              f"dimension {d}", proc, [path]) from None
    shape = list(a.type.shape)
    shape[d] = N.Const(k, shape[d].type if hasattr(shape[d], "type") else None)
    p2 = _replace_scope(proc, path, _retype(a, shape), rest)
    return finish(proc, p2, "resize_dim", [c, d, k, "fold"],
                  f"circular buffer of {k} slots in dimension {d} (i -> i % {k}): every read "
                  "is covered by an earlier write of its element, and no write of an element "
                  f"{k} * m apart lands between a write and a read of the same element (isl)")


def _clobber(proc, vs, cs, w, w2, r, d, k, start):
    """A sample of ``w`` then ``w2`` then ``r`` with ``w`` and ``r`` on one element and
    ``w2`` on an element sharing its slot, or None."""
    if not (len(w.idx) == len(w2.idx) == len(r.idx)):
        return None
    rw = {v: f"{v}__a" for v, _, _ in w.vars}
    r2 = {v: f"{v}__b" for v, _, _ in w2.vars}
    rr = {v: f"{v}__c" for v, _, _ in r.vars}
    xs = [f"x__{j}" for j in range(len(r.idx))]
    ys = [f"y__{j}" for j in range(len(r.idx))]
    try:
        cons = D.base_constraints(proc, vs, cs)
        cons += D.var_constraints(w.vars, w.cons, rw)
        cons += D.var_constraints(w2.vars, w2.cons, r2)
        cons += D.var_constraints(r.vars, r.cons, rr)
        cons += [D._elt(x, ix, rw) for x, ix in zip(xs, w.idx)]
        cons += [D._elt(x, ix, rr) for x, ix in zip(xs, r.idx)]
        cons += [D._elt(y, ix, r2) for y, ix in zip(ys, w2.idx)]
        for j, (x, y) in enumerate(zip(xs, ys)):
            if j == d:
                cons.append(f"({x} - {y}) mod {k} = 0 and ({x} < {y} or {x} > {y})")
            else:
                cons.append(f"{x} = {y}")
        cons.append(F.precedes(proc, w, w2, rw, r2, start))
        cons.append(F.precedes(proc, w2, r, r2, rr, start))
        dims = xs + ys + list(rw.values()) + list(r2.values()) + list(rr.values())
        st = D.make_set(dims, cons)
    except (NotAffine, isl.Error):
        return "some instances (not representable in isl)"
    if st.is_empty():
        return None
    return D._sample(st, dims)


__all__ = ["fold_dim"]
