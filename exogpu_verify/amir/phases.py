"""Physical mbarrier phases of a ring, as accesses both checkers check (docs/semantics.md,
"Physical phases of an mbarrier ring").

The checkers index an mbarrier ring by its *virtual* index; the code generator maps running
index ``r = v - k`` (``k`` pre-arrived indices) to physical slot ``r mod d`` and waits on the
phase parity ``(r / d) & 1`` (``ring_buffer_by(d)``). Virtual indices ``r`` and ``r + d``
therefore share one hardware mbarrier, in consecutive phases, and the hardware gives two
more obligations the virtual view does not:

* (a) every Arrive, and every copy completing on the barrier (its ``expect_tx``), of index
  ``r + d`` happens after phase ``r`` completed (else it counts into phase ``r``);
* (b) every Await of ``r + d`` happens after phase ``r`` completed (else its parity wait can
  pass on phase ``r - d``'s completion: it reads data not yet there).

(A waiter lapped by phase ``r + d`` before it waits for ``r`` waits on a parity that came
round again: it waits longer, never shorter; a possible hang, not a race, and not checked.)

``add_phase_accesses`` states (a) and (b) as accesses of one more variable per ring,
``z#phases`` (memory ``MbarrierPhases``, whose one qual ``mbar`` every synchronization
timeline orders in full): cells ``(c..., x, a, w)`` with ``c`` the ring element's other
coordinates, ``x`` a running index shifted by ``d``, ``a`` an arriver id (Arrive statement or
completing copy, and its thread-loop iterators) and ``w`` a waiter id (Await statement and its
iterators) or ``NW + a`` for the arriver ``a`` of the next lap. Before an Arrive by ``a`` on
``r``: writes of ``(r + d, a, *)`` (its lap) and ``(r, *, NW + a)`` (its claim on the previous
lap); after an Await by ``w`` on ``r``: a write of ``(r, *, w)``; a copy ``a`` completing on
``r`` *reads* the Arrive's two boxes (copies of one statement in a loop complete on one index
together, and reads do not conflict with each other). Same-index accesses never share a cell,
so the conflicts are (a) and (b) between adjacent laps of one lifetime of the ring, each an
ordinary ordering obligation of the existing rules. Indices that are pre-arrived or out of
range get no access (the ring's own rules report those).

Not covered: laps that span two lifetimes of the ring (the code generator continues the
running index from one lifetime to the next); see docs/semantics.md.
"""

from __future__ import annotations

import dataclasses

from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.memories import BarrierMechanism, MbarrierPhases
from ..ir.timelines import cuda_in_order_instr
from ..ir.types import bool_, index
from . import nodes as A


def _c(v: int):
    return N.Const(v, index)


def _bin(op, a, b, t=index):
    return N.BinOp(op, a, b, t)


def _add(a, v: int):
    if v == 0:
        return a
    if isinstance(a, N.Const):
        return _c(a.val + v)
    return _bin("+", a, _c(v)) if v > 0 else _bin("-", a, _c(-v))


@dataclasses.dataclass
class _Ring:
    alloc: A.AmAlloc
    dim: int           # the ring dimension
    depth: int
    pre: int
    arrivers: list = dataclasses.field(default_factory=list)   # (stmt id, loops)
    waiters: list = dataclasses.field(default_factory=list)
    na: int = 0
    nw: int = 0
    ids: dict = dataclasses.field(default_factory=dict)  # id(stmt) -> (base, strides)

    @property
    def name(self) -> str:
        return self.alloc.name + "#phases"


def _ring_of(s: A.AmAlloc):
    if not isinstance(s.mem, BarrierMechanism) or s.mem.kind != "mbarrier":
        return None
    dims = [i for i, d in enumerate(s.ring) if d is not None]
    if len(dims) != 1:
        return None
    return _Ring(s, dims[0], s.ring[dims[0]], s.mem.pre_arrive)


def _id_terms(loops) -> tuple:
    """(iter, lo, extent) of the enclosing thread loops with constant bounds: the instances
    of one statement that may touch one ring element in one phase differ in these."""
    out = []
    for lp in loops:
        lo, hi = const_value(lp.lo), const_value(lp.hi)
        if lo is not None and hi is not None and hi > lo:
            out.append((lp.iter, lo, hi - lo))
    return tuple(out)


def _collect(stmts, rings: dict, loops: list):
    for s in stmts:
        t = type(s)
        if t is A.AmAlloc:
            r = _ring_of(s)
            if r is not None:
                rings[s.name] = r
        elif t is A.AmFor:
            _collect(s.body, rings, loops + [s] if s.kind == "threads" else loops)
        elif t is A.AmIf:
            _collect(s.body, rings, loops)
            _collect(s.orelse, rings, loops)
        elif t in (A.AmKernel, A.AmWarps):
            _collect(s.body, rings, loops)
        elif t is A.AmArrive:
            for ref in s.targets:
                if ref.name in rings:
                    rings[ref.name].arrivers.append((s, _id_terms(loops)))
        elif t is A.AmAwait:
            if s.target.name in rings:
                rings[s.target.name].waiters.append((s, _id_terms(loops)))
        elif t is A.AmAccess and s.mode != "read":
            for ref in s.barriers:  # a copy completing on the ring: its destination write
                if ref.name in rings:
                    rings[ref.name].arrivers.append((s, _id_terms(loops)))


def _number(r: _Ring) -> None:
    for attr, count in (("arrivers", "na"), ("waiters", "nw")):
        n = 0
        for s, terms in getattr(r, attr):
            if (attr, id(s)) in r.ids:
                continue
            strides, size = [], 1
            for _, _, ext in reversed(terms):
                strides.append(size)
                size *= ext
            r.ids[(attr, id(s))] = (n, terms, tuple(reversed(strides)))
            n += size
        setattr(r, count, max(n, 1))


def _id_expr(r: _Ring, attr: str, s):
    base, terms, strides = r.ids[(attr, id(s))]
    e = _c(base)
    for (it, lo, _), st in zip(terms, strides):
        term = _add(N.Read(it, (), index), -lo)
        e = _bin("+", e, term if st == 1 else _bin("*", term, _c(st)))
    return e


def _box(ref: A.AmBarrierRef, r: _Ring, x, a, w):
    """Box of ``r.name`` over the ref's other coordinates and (x, a, w)."""
    out = [w_ for i, w_ in enumerate(ref.idx) if i != r.dim]
    return tuple(out) + (x, a, w)


def _guarded(ref: A.AmBarrierRef, r: _Ring, accesses: list, path, si) -> list:
    """The accesses, run only where the ring index is a running index in range (the ring's
    own rules report the others)."""
    w = ref.idx[r.dim]
    if w[0] != "pt":
        return []
    v = w[1]
    hi = _add(r.alloc.shape[r.dim], r.pre)
    cond = _bin("and", _bin(">=", v, _c(r.pre), bool_), _bin("<", v, hi, bool_), bool_)
    return [A.AmIf(cond, tuple(accesses), (), si, path)]


def _arrive_boxes(r: _Ring, ref, aid):
    v = ref.idx[r.dim][1]
    run = _add(v, -r.pre)
    full_w = ("iv", _c(0), _c(r.nw + r.na))
    all_a = ("iv", _c(0), _c(r.na))
    nxt = ("pt", _bin("+", aid, _c(r.nw)))
    return (_box(ref, r, ("pt", _add(run, r.depth)), ("pt", aid), full_w),
            _box(ref, r, ("pt", run), all_a, nxt))


def _await_boxes(r: _Ring, ref, wid):
    v = ref.idx[r.dim][1]
    run = _add(v, -r.pre)
    all_a = ("iv", _c(0), _c(r.na))
    return (_box(ref, r, ("pt", run), all_a, ("pt", wid)),)


def _arriver(r: _Ring, ref, s, mode: str, instr_tl, trailing: tuple, what: str) -> list:
    """The phase accesses of arriver ``s`` (an Arrive, or a copy completing on ``ref``)."""
    aid = _id_expr(r, "arrivers", s)
    acc = [A.AmAccess(r.name, b, mode, instr_tl, trailing, s.srcinfo, s.path, what)
           for b in _arrive_boxes(r, ref, aid)]
    return _guarded(ref, r, acc, s.path, s.srcinfo)


def _disp(r: _Ring) -> str:
    return r.alloc.display or r.alloc.name


def _rewrite(stmts, rings: dict) -> tuple:
    out = []
    for s in stmts:
        t = type(s)
        if t is A.AmFor:
            out.append(dataclasses.replace(s, body=_rewrite(s.body, rings)))
        elif t is A.AmIf:
            out.append(dataclasses.replace(s, body=_rewrite(s.body, rings),
                                           orelse=_rewrite(s.orelse, rings)))
        elif t in (A.AmKernel, A.AmWarps):
            out.append(dataclasses.replace(s, body=_rewrite(s.body, rings)))
        elif t is A.AmAlloc and s.name in rings:
            r = rings[s.name]
            shape = [e for i, e in enumerate(s.shape) if i != r.dim]
            x = _add(s.shape[r.dim], 2 * r.depth + r.pre)
            out.append(s)
            out.append(A.AmAlloc(r.name, tuple(shape) + (x, _c(r.na), _c(r.nw + r.na)),
                                 MbarrierPhases, (), s.srcinfo, s.path,
                                 f"{_disp(r)} (physical mbarriers of ring_buffer_by({r.depth}))"))
        elif t is A.AmFree and s.name in rings:
            out.append(s)
            out.append(A.AmFree(rings[s.name].name, s.srcinfo, s.path))
        elif t is A.AmArrive:
            pre = []
            for ref in s.targets:
                r = rings.get(ref.name)
                if r is not None:
                    what = (f"Arrive on {_disp(r)} (its physical mbarrier, slot = running "
                            f"index mod {r.depth}, must have completed the previous lap's "
                            "phase)")
                    pre += _arriver(r, ref, s, "write", cuda_in_order_instr, (), what)
            out += pre + [s]
        elif t is A.AmAwait:
            out.append(s)
            r = rings.get(s.target.name)
            if r is not None:
                wid = _id_expr(r, "waiters", s)
                what = (f"Await on {_disp(r)} (a parity wait on its physical mbarrier, "
                        f"ring_buffer_by({r.depth}): after the previous lap's phase)")
                acc = [A.AmAccess(r.name, b, "write", cuda_in_order_instr, (), s.srcinfo,
                                  s.path, what) for b in _await_boxes(r, s.target, wid)]
                out += _guarded(s.target, r, acc, s.path, s.srcinfo)
        elif t is A.AmAccess and s.mode != "read" and any(ref.name in rings
                                                           for ref in s.barriers):
            out.append(s)
            for ref in s.barriers:
                r = rings.get(ref.name)
                if r is not None:
                    what = (f"{s.what}, completing on {_disp(r)} (its physical mbarrier, "
                            f"ring_buffer_by({r.depth}))")
                    out += _arriver(r, ref, s, "read", s.instr_tl, (ref,), what)
        else:
            out.append(s)
    return tuple(out)


def add_phase_accesses(am: A.AmProc) -> A.AmProc:
    """``am`` with the physical-phase accesses of its mbarrier rings (module docstring)."""
    rings: dict = {}
    _collect(am.body, rings, [])
    # a ring no longer than its depth has one lap per lifetime: nothing to check
    rings = {k: r for k, r in rings.items() if (r.arrivers or r.waiters) and not (
        const_value(r.alloc.shape[r.dim]) is not None
        and const_value(r.alloc.shape[r.dim]) <= r.depth)}
    if not rings:
        return am
    for r in rings.values():
        _number(r)
    return dataclasses.replace(am, body=_rewrite(am.body, rings))
