"""Value flow through a buffer, on integer sets (islpy): which reads see a value written
earlier in the same region, and which see one carried in from outside it.

Statement instances inside a block are ordered by the usual 2d+1 schedule: loop variables
of shared loops lexicographically, then the textual position where the two statements'
paths diverge (``body`` before ``orelse``). A read instance is *covered* when some write
instance of the same element precedes it inside the region (the same iteration of the loops
named ``same``): it can only see a value made inside the region. Writes that cover are
element writes (``x[i] = e``) and calls whose callee assigns every element of the window
argument (``deps.full_params``); reductions read what they update, so they never cover.

These sets decide the rewrites that change a buffer's lifetime or where its first value
comes from: ``lift_alloc``/``sink_alloc`` (a read not covered in its iteration must not see
an element an earlier iteration wrote), ``stage_mem`` (the load of the staging buffer is
needed only when some read of the window is not covered by the block's own writes) and
``reuse_buffer``. Anything isl cannot represent counts as uncovered: answers stay sound.
"""

from __future__ import annotations

import islpy as isl

from ..ir import nodes as N
from ..ir.affine import NotAffine
from . import deps as D
from .irtools import node_at


def _loops_on(proc, path, start: int):
    """``(step index, iterator)`` of every loop on ``path`` from step ``start`` on."""
    out = []
    for k in range(start, len(path)):
        s = node_at(proc, path[:k + 1])
        if isinstance(s, N.For):
            out.append((k, s.iter))
    return out


def _key(step):
    f, i = step
    return (0 if f == "body" else 1, i)


def precedes(proc, w: D.Access, r: D.Access, rw: dict, rr: dict, start: int) -> str:
    """isl condition: instance ``w`` (renamed ``rw``) runs before instance ``r`` (``rr``),
    both inside the block whose statements are at path depth ``start`` (the loops of
    ``same`` are constrained equal by the caller)."""
    pw, pr = w.path, r.path
    n = 0
    while n < min(len(pw), len(pr)) and pw[n] == pr[n]:
        n += 1
    conds, eqs = [], []
    for k, it in _loops_on(proc, pw, start):
        if k >= n:
            break
        conds.append(" and ".join(eqs + [f"{rw[it]} < {rr[it]}"]))
        eqs.append(f"{rw[it]} = {rr[it]}")
    if n < len(pw) and n < len(pr) and _key(pw[n]) < _key(pr[n]):
        conds.append(" and ".join(eqs) or "1 = 1")
    if not conds:
        return "1 = 0"
    return "(" + " or ".join(f"({c})" for c in conds) + ")"


def _read_set(proc, outer_vars, outer_cons, r: D.Access, rr: dict):
    xs = [f"x__{d}" for d in range(len(r.idx))]
    dims = list(rr.values()) + xs
    cs = D.base_constraints(proc, outer_vars, outer_cons)
    cs += D.var_constraints(r.vars, r.cons, rr)
    cs += [D._elt(x, a, rr) for x, a in zip(xs, r.idx)]
    return dims, cs


def uncovered(proc, outer_vars, outer_cons, r: D.Access, writes, start: int, same=()):
    """``(set, dims)``: the instances of read ``r`` (and the element each reads) that no
    covering write of ``writes`` precedes within the same iteration of the loops ``same``;
    None when isl cannot represent them (callers treat that as 'maybe uncovered')."""
    rr = {v: v + "__r" for v, _, _ in r.vars}
    try:
        dims, cs = _read_set(proc, outer_vars, outer_cons, r, rr)
        out = D.make_set(dims, cs)
        for k, w in enumerate(writes):
            if not w.covers or len(w.idx) != len(r.idx):
                continue
            rw = {v: f"{v}__w{k}" for v, _, _ in w.vars}
            wc = cs + D.var_constraints(w.vars, w.cons, rw)
            wc += [D._elt(f"x__{d}", a, rw) for d, a in enumerate(w.idx)]
            wc += [f"{rw[s]} = {rr[s]}" for s in same]
            wc.append(precedes(proc, w, r, rw, rr, start))
            cov = D.make_set(dims + list(rw.values()), wc).project_out(
                isl.dim_type.set, len(dims), len(rw))
            out, cov = D._align(out, cov)
            out = out.subtract(cov)
            if out.is_empty():
                break
        return out, dims, rr
    except (NotAffine, isl.Error):
        return None, None, rr


def carried(proc, outer_vars, outer_cons, it: str, reads, writes, start: int):
    """A read of one iteration of loop ``it`` that sees a value written in an earlier
    iteration: ``(read, write, sample)`` or None. ``reads``/``writes`` are the accesses of
    one buffer inside the loop (their ``vars`` start with ``it``)."""
    for r in reads:
        u, dims, rr = uncovered(proc, outer_vars, outer_cons, r, writes, start, same=[it])
        if u is not None and u.is_empty():
            continue
        for k, w in enumerate(writes):
            if len(w.idx) != len(r.idx):
                continue
            if u is None:
                return r, w, "some instances (not representable in isl)"
            rw = {v: f"{v}__p{k}" for v, _, _ in w.vars}
            try:
                _, cs = _read_set(proc, outer_vars, outer_cons, r, rr)
                cs += D.var_constraints(w.vars, w.cons, rw)
                cs += [D._elt(f"x__{d}", a, rw) for d, a in enumerate(w.idx)]
                cs.append(f"{rw[it]} < {rr[it]}")
                earlier = D.make_set(dims + list(rw.values()), cs).project_out(
                    isl.dim_type.set, len(dims), len(rw))
                a, b = D._align(u, earlier)
                hit = a.intersect(b)
            except (NotAffine, isl.Error):
                return r, w, "some instances (not representable in isl)"
            if not hit.is_empty():
                return r, w, D._sample(hit, dims).replace("__r=", "=")
    return None


def all_covered(proc, outer_vars, outer_cons, reads, writes, start: int) -> bool:
    """Is every instance of every read preceded by a covering write of its element?"""
    for r in reads:
        u, _, _ = uncovered(proc, outer_vars, outer_cons, r, writes, start)
        if u is None or not u.is_empty():
            return False
    return True
