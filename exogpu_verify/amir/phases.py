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

(c) on a ring that copies complete on, one more variable ``z#issues`` (memory
``MbarrierIssues``; ordinary accesses: bounds, supersession): a copy completing on running
index ``r`` *writes* cell ``(lifetime, c..., r, copy id)`` by its lead thread of each CTA
(``amir/lead.py``: the thread whose ``mbarrier.expect_tx`` arms that CTA's mbarrier), and an
Arrive on ``r`` *reads* every copy id's cell of ``r`` by the lead thread of each CTA it runs on,
before the Arrive: the copy's issue happens before an arrival on its element that the phase
needs, local or from another CTA (docs/semantics.md, "Copy issues"). A ref with one CTA
interval ``0:n`` is split into its ``n`` CTAs' elements: a copy's write by the lead of CTA
``j`` on element ``j``; an Arrive's read of element ``j`` by CTA ``j``'s lead where the
Arrive runs on every CTA in each instance (no enclosing ``If``), else by the leads of every
CTA it runs on (``_issue_accesses``).

Not covered: laps that span two lifetimes of the ring (the code generator continues the
running index from one lifetime to the next); see docs/semantics.md.
"""

from __future__ import annotations

import dataclasses

from ..ir import nodes as N
from ..ir.affine import const_value, free_names
from ..ir.memories import BarrierMechanism, MbarrierIssues, MbarrierPhases, MbarrierWaits
from ..ir.timelines import cuda_in_order_instr
from ..ir.types import bool_, index
from . import nodes as A
from .threads import CollectiveError, range_mask, tile, warps


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
    copiers: list = dataclasses.field(default_factory=list)    # copies completing on it
    na: int = 0
    nw: int = 0
    nc: int = 0
    ids: dict = dataclasses.field(default_factory=dict)  # id(stmt) -> (base, strides)
    #: the innermost task loop whose body holds the phase variable (None: the phase
    #: variable lives beside the ring, one lifetime at a time, and its free orders it)
    task: object = None
    #: the seq loop whose body allocates the ring (its iterations are consecutive
    #: lifetimes of one task), or None (at most one lifetime per task)
    life: object = None
    copies: bool = False  # some copy completes on the ring

    @property
    def name(self) -> str:
        return self.alloc.name + "#phases"

    @property
    def waits(self) -> str:
        return self.alloc.name + "#waits"

    @property
    def issues(self) -> str:
        return self.alloc.name + "#issues"

    @property
    def extent(self):
        return _c(1) if self.dim is None else self.alloc.shape[self.dim]

    def index(self, ref):
        """The ref's ring index, as a point expression (0 for a single-phase mbarrier), or
        None for an interval."""
        if self.dim is None:
            return _c(0)
        w = ref.idx[self.dim]
        return w[1] if w[0] == "pt" else None

    @property
    def continues(self) -> bool:
        """The next lifetime's Awaits on pre-arrived indices are real waits on this
        lifetime's last Arrives (module docstring); modelled where no copy completes on the
        ring (the copy-after-Arrive rule is stated for awaited elements of one lifetime)."""
        return self.life is not None and self.pre > 0 and not self.copies

    @property
    def single(self) -> bool:
        """One lap per lifetime and at most one lifetime per task: the only lap pairs are
        across tasks, ordered by the end-of-task rule alone (one access per arrival)."""
        if self.life is not None:
            return False
        e = const_value(self.extent)
        return e is not None and e <= self.depth

    def lifetime(self):
        """The lifetime coordinate of the phase cells: 0, or the lifetime loop's count."""
        if self.life is None:
            return _c(0)
        return _add(N.Read(self.life.iter, (), index), -const_value(self.life.lo)) \
            if const_value(self.life.lo) is not None else \
            _bin("-", N.Read(self.life.iter, (), index), self.life.lo)

    def lifetimes(self):
        if self.life is None:
            return _c(1)
        lo, hi = const_value(self.life.lo), const_value(self.life.hi)
        if lo is not None and hi is not None:
            return _c(max(hi - lo, 1))
        return _bin("-", self.life.hi, self.life.lo)

    def hops(self) -> list[int]:
        """Lifetimes ``h >= 1`` ahead where the next lap of an index may fall: index ``r``'s
        next lap ``r + d`` lies ``h`` lifetimes of ``E`` indices on, at ``r + d - h E``."""
        if self.life is None:
            return []
        top = self.depth
        lo, hi = const_value(self.life.lo), const_value(self.life.hi)
        if lo is not None and hi is not None:
            top = min(top, hi - lo - 1)
        e = const_value(self.extent)
        if e is not None and e > 0:
            top = min(top, 1 + (self.depth - 1) // e)
        return list(range(1, top + 1))


def _ring_of(s: A.AmAlloc):
    if not isinstance(s.mem, BarrierMechanism) or s.mem.kind != "mbarrier":
        return None
    dims = [i for i, d in enumerate(s.ring) if d is not None]
    if not dims:  # one phase per lifetime: a ring of extent 1 and depth 1 over lifetimes
        return _Ring(s, None, 1, 0)
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


def _reads(e, name: str) -> bool:
    """Does control expression ``e`` read ``name`` (or anything it cannot tell)?"""
    if isinstance(e, N.Const):
        return False
    if isinstance(e, N.Read):
        return bool(e.idx) or e.name == name
    if isinstance(e, N.BinOp):
        return _reads(e.lhs, name) or _reads(e.rhs, name)
    if isinstance(e, N.UnOp):
        return _reads(e.arg, name)
    return True


def _place(r: _Ring, task, chain: list) -> None:
    """Where the ring's lifetimes sit in its task: the phase variable spans the task when the
    ring is allocated at most once per task (only Ifs and CudaWarps between the task loop and
    the allocation) or once per iteration of one seq loop directly holding it (only Ifs and
    CudaWarps above that loop), whose extent does not depend on the loop. Otherwise it lives
    beside the ring (its free then orders every lap before the next lifetime)."""
    if task is None:
        return
    outer = [c for c in chain if type(c) not in (A.AmIf, A.AmWarps)]
    if not outer:
        r.task = task
        return
    if len(outer) == 1 and chain[-1] is outer[0] and outer[0].kind == "seq":
        life = outer[0]
        if any(_reads(e, life.iter) for e in r.alloc.shape):
            return
        r.task, r.life = task, life


def _collect(stmts, rings: dict, loops: list, task=None, chain=()):
    for s in stmts:
        t = type(s)
        if t is A.AmAlloc:
            r = _ring_of(s)
            if r is not None:
                _place(r, task, list(chain))
                rings[s.name] = r
        elif t is A.AmFor:
            if s.kind == "task" and s.innermost_task:
                _collect(s.body, rings, loops, s, ())
            else:
                _collect(s.body, rings, loops + [s] if s.kind == "threads" else loops,
                         task, chain + (s,))
        elif t is A.AmIf:
            _collect(s.body, rings, loops, task, chain + (s,))
            _collect(s.orelse, rings, loops, task, chain + (s,))
        elif t is A.AmKernel:
            _collect(s.body, rings, loops, task, chain)
        elif t is A.AmWarps:
            _collect(s.body, rings, loops, task, chain + (s,))
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
                    rings[ref.name].copiers.append((s, _id_terms(loops)))
                    rings[ref.name].copies = True


def _number(r: _Ring) -> None:
    for attr, count in (("arrivers", "na"), ("waiters", "nw"), ("copiers", "nc")):
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


def _box(ref: A.AmBarrierRef, r: _Ring, ell, x, a, w):
    """Box of ``r.name`` over lifetime ``ell``, the ref's other coordinates and (x, a, w)."""
    out = [w_ for i, w_ in enumerate(ref.idx) if i != r.dim]
    return (("pt", ell),) + tuple(out) + (("pt", x), a, w)


def _and(conds: list):
    out = conds[0]
    for c in conds[1:]:
        out = _bin("and", out, c, bool_)
    return out


def _when(conds: list, accesses: list, s) -> list:
    if not conds or not accesses:
        return list(accesses)
    return [A.AmIf(_and(conds), tuple(accesses), (), s.srcinfo, s.path)]


def _in_range(r: _Ring, v) -> list:
    """The ring index ``v`` is a running index in range (the ring's own rules report the
    others)."""
    if r.dim is None:
        return []
    return [_bin(">=", v, _c(r.pre), bool_), _bin("<", v, _add(r.extent, r.pre), bool_)]


def _hop(r: _Ring, x, h: int):
    """``x - h E``."""
    e = r.extent
    if const_value(e) is not None:
        return _add(x, -h * const_value(e))
    return _bin("-", x, e if h == 1 else _bin("*", _c(h), e))


def _arriver(r: _Ring, ref, s, mode: str, instr_tl, trailing: tuple, what: str) -> list:
    """The phase accesses of arriver ``s`` (an Arrive, or a copy completing on ``ref``): on
    ``z#phases`` its lap (the next lap's Arrives and copies conflict with it there, in this
    lifetime or ``h`` lifetimes on) and its claim on the previous lap; on ``z#waits`` its lap
    again (the next lap's Awaits conflict with it there)."""
    v = r.index(ref)
    if v is None:
        return []
    run = _add(v, -r.pre)
    aid = _id_expr(r, "arrivers", s)
    ell = r.lifetime()
    every_a = ("iv", _c(0), _c(r.na))
    every_w = ("iv", _c(0), _c(r.nw))

    def acc(var, box):
        return A.AmAccess(var, box, mode, instr_tl, trailing, s.srcinfo, s.path, what)

    def laps(x, ell_x):
        return [acc(r.name, _box(ref, r, ell_x, x, ("pt", aid), every_a)),
                acc(r.waits, _box(ref, r, ell_x, x, ("pt", aid), every_w))]

    if r.single:
        return _when(_in_range(r, v), laps(_add(run, r.depth), ell)[:1], s)
    out = _when(_in_range(r, v), laps(_add(run, r.depth), ell) +
                [acc(r.name, _box(ref, r, ell, run, every_a, ("pt", aid)))], s)
    for h in r.hops():
        x = _hop(r, _add(run, r.depth), h)
        conds = _in_range(r, v) + [
            _bin(">=", x, _c(0), bool_),
            _bin("<", _add(N.Read(r.life.iter, (), index), h), r.life.hi, bool_)]
        out += _when(conds, laps(x, _add(ell, h)), s)
    return out


def _per_cta(other: tuple) -> list:
    """(lead, coordinates) for each CTA whose own element of the ring ``other`` names: a ref
    with one CTA interval ``0:n`` is split into the ``n`` CTAs of the cluster (coordinate
    ``j`` is CTA ``j``'s element, written by the lead of CTA ``j``, ``amir/lead.py``); any
    other ref is one access by the lead thread of each CTA (``(-1, 0)``)."""
    ivs = [k for k, w in enumerate(other) if w[0] == "iv"]
    if len(ivs) == 1:
        k = ivs[0]
        lo, hi = const_value(other[k][1]), const_value(other[k][2])
        if lo == 0 and hi is not None and hi >= 2:
            return [((j, hi), other[:k] + (("pt", _c(j)),) + other[k + 1:])
                    for j in range(hi)]
    return [((-1, 0), other)]


@dataclasses.dataclass(frozen=True)
class _Threads:
    """The threads a statement runs on, as the concrete machine tiles them
    (``amir/threads.py``): one mask per instance of the enclosing thread loops (None: not
    known, e.g. a loop with non-constant bounds), whether an ``If`` or a loop whose bounds
    read a thread iterator encloses it (``guarded``), and the thread loops' iterators."""

    cfg: object
    masks: tuple | None
    guarded: bool = False
    iters: frozenset = frozenset()
    named: bool = False

    @staticmethod
    def of(cfg) -> "_Threads":
        return _Threads(cfg, (range_mask(0, cfg.blockDim * cfg.clusterDim),))

    def loop(self, s: A.AmFor) -> "_Threads":
        lo, hi = const_value(s.lo), const_value(s.hi)
        masks = None
        if self.masks is not None and lo is not None and hi is not None and hi > lo:
            try:
                masks = tuple(m for p in self.masks for m in tile(
                    p, s.unit, hi - lo, self.cfg.blockDim, self.cfg.clusterDim))
            except CollectiveError:  # reported by the checkers
                masks = None
        return dataclasses.replace(self, masks=masks, iters=self.iters | {s.iter})

    def warps(self, ctx) -> "_Threads":
        masks = None
        if self.masks is not None:
            top = ctx.name is not None and not self.named
            try:
                masks = tuple(warps(m, ctx, self.cfg, top) for m in self.masks)
            except CollectiveError:
                masks = None
        return dataclasses.replace(self, masks=masks,
                                   named=self.named or ctx.name is not None)

    def guard(self) -> "_Threads":
        return dataclasses.replace(self, guarded=True)

    def reads_thread(self, *exprs) -> bool:
        """Whether an expression of ``exprs`` reads a thread iterator (or is not a plain
        control expression)."""
        for e in exprs:
            names = free_names(e)
            if names is None or names & self.iters:
                return True
        return False

    def every_cta(self, ref) -> bool:
        """Whether every CTA of the cluster arrives on barrier ref ``ref`` whenever one
        does, on the same element and lap: no enclosing ``If``, no index reading a thread
        iterator, and the instances' threads cover every CTA."""
        if self.guarded or self.masks is None or \
                any(self.reads_thread(*w[1:]) for w in ref.idx):
            return False
        bd, cd = self.cfg.blockDim, self.cfg.clusterDim
        full = (1 << bd) - 1
        union = 0
        for m in self.masks:
            union |= m
        return all((union >> (c * bd)) & full for c in range(cd))


def _issue_accesses(r: _Ring, ref, s, mode: str, what: str, guarded: bool = False) -> list:
    """Accesses of ``z#issues``, before statement ``s`` on ring element ``ref``: a copy
    completing on it writes its own cell (``mode`` write), an Arrive reads every copy's cell
    of the index (``mode`` read). Each by the lead thread of each CTA (``amir/lead.py``).

    An Arrive on another CTA's element (a remote arrive) can complete that CTA's phase too:
    element ``j``'s cell is read by CTA ``j``'s own arrivals alone (lead ``(j, n)``) only where
    CTA ``j`` arrives on it whenever another CTA does (``_Threads.every_cta``); else
    (``guarded``) by the lead of every CTA the Arrive runs on."""
    v = r.index(ref)
    if v is None:
        return []
    run = _add(v, -r.pre)
    if mode == "write":
        c = ("pt", _id_expr(r, "copiers", s))
    else:
        c = ("iv", _c(0), _c(r.nc))
    other = tuple(w for i, w in enumerate(ref.idx) if i != r.dim)
    per = _per_cta(other)
    if mode == "read":
        per = [((-1, 0) if guarded else lead, coords) for lead, coords in per]
    accs = [A.AmAccess(r.issues, (("pt", r.lifetime()),) + coords + (("pt", run), c), mode,
                       cuda_in_order_instr, (), s.srcinfo, s.path, what, lead=lead)
            for lead, coords in per]
    return _when(_in_range(r, v), accs, s)


def _awaiter(r: _Ring, s: A.AmAwait) -> list:
    """The phase accesses of Await ``s``: its claim on the lap it waits for, on ``z#waits``;
    on a ring that continues, an Await on a pre-arrived index ``v`` after the first lifetime
    waits for the previous lifetime's index ``E + v`` (when that is not pre-arrived itself)."""
    ref = s.target
    v = r.index(ref)
    if v is None or r.single:
        return []
    wid = _id_expr(r, "waiters", s)
    every_a = ("iv", _c(0), _c(r.na))
    what = (f"Await on {_disp(r)} (a parity wait on its physical mbarrier: after the "
            "previous lap's phase completed)")

    def acc(box):
        return A.AmAccess(r.waits, box, "write", cuda_in_order_instr, (), s.srcinfo, s.path,
                          what)

    ell = r.lifetime()
    out = _when(_in_range(r, v), [acc(_box(ref, r, ell, _add(v, -r.pre), every_a,
                                          ("pt", wid)))], s)
    if r.continues:
        x = _add(_bin("+", v, r.extent), -r.pre)
        conds = [_bin(">=", v, _c(0), bool_), _bin("<", v, _c(r.pre), bool_),
                 _bin(">=", x, _c(0), bool_),
                 _bin(">", N.Read(r.life.iter, (), index), r.life.lo, bool_)]
        out += _when(conds, [acc(_box(ref, r, _add(ell, -1), x, every_a, ("pt", wid)))], s)
    return out


def _disp(r: _Ring) -> str:
    return r.alloc.display or r.alloc.name


def _phys(r: _Ring) -> str:
    if r.dim is None:
        return f"{_disp(r)} (its physical mbarrier, one phase per lifetime)"
    return f"{_disp(r)} (physical mbarriers of ring_buffer_by({r.depth}))"


def _waits(r: _Ring) -> str:
    if r.dim is None:
        return f"{_disp(r)} (parity waits on its physical mbarrier, one phase per lifetime)"
    return f"{_disp(r)} (parity waits on the physical mbarriers of ring_buffer_by({r.depth}))"


def _issues_disp(r: _Ring) -> str:
    return (f"{_disp(r)} (copy issues: each copy's expect_tx, by its issuing thread, before "
            "an arrival that can complete its phase)")


def _phase_allocs(r: _Ring, s) -> tuple:
    other = tuple(e for i, e in enumerate(r.alloc.shape) if i != r.dim)
    shape = (r.lifetimes(),) + other + (_add(r.extent, 2 * r.depth + r.pre), _c(r.na))
    phases = A.AmAlloc(r.name, shape + (_c(r.na),), MbarrierPhases, (), s.srcinfo, s.path,
                       _phys(r))
    out = (phases,)
    if not r.single:
        out += (A.AmAlloc(r.waits, shape + (_c(r.nw),), MbarrierWaits, (), s.srcinfo,
                          s.path, _waits(r)),)
    if r.copies:
        out += (A.AmAlloc(r.issues, (r.lifetimes(),) + other + (r.extent, _c(r.nc)),
                          MbarrierIssues, (), s.srcinfo, s.path, _issues_disp(r)),)
    return out


def _phase_frees(r: _Ring, s) -> tuple:
    out = (A.AmFree(r.name, s.srcinfo, s.path),)
    if not r.single:
        out += (A.AmFree(r.waits, s.srcinfo, s.path),)
    if r.copies:
        out += (A.AmFree(r.issues, s.srcinfo, s.path),)
    return out


def _rewrite(stmts, rings: dict, at: "_Threads | None" = None) -> tuple:
    """``at``: where the statements run (``_Threads``; None outside a kernel)."""
    out = []
    for s in stmts:
        t = type(s)
        if t is A.AmFor:
            sub = at
            if at is not None:  # a loop whose bounds read a thread iterator selects threads
                sub = at.loop(s) if s.kind == "threads" else \
                    at.guard() if at.reads_thread(s.lo, s.hi) else at
            body = _rewrite(s.body, rings, sub)
            if s.kind == "task" and s.innermost_task:
                mine = [r for r in rings.values() if r.task is s]
                body = (tuple(a for r in mine for a in _phase_allocs(r, s)) + body +
                        tuple(f for r in mine for f in _phase_frees(r, s)))
            out.append(dataclasses.replace(s, body=body))
        elif t is A.AmIf:
            sub = at.guard() if at is not None else None
            out.append(dataclasses.replace(s, body=_rewrite(s.body, rings, sub),
                                           orelse=_rewrite(s.orelse, rings, sub)))
        elif t is A.AmKernel:
            out.append(dataclasses.replace(s, body=_rewrite(s.body, rings, _Threads.of(s.cfg))))
        elif t is A.AmWarps:
            out.append(dataclasses.replace(s, body=_rewrite(s.body, rings, at.warps(s.ctx)
                                                            if at is not None else None)))
        elif t is A.AmAlloc and s.name in rings:
            r = rings[s.name]
            out.append(dataclasses.replace(s, continues=True) if r.continues else s)
            if r.task is None:
                out += _phase_allocs(r, s)
        elif t is A.AmFree and s.name in rings:
            out.append(s)
            if rings[s.name].task is None:
                out += _phase_frees(rings[s.name], s)
        elif t is A.AmArrive:
            pre = []
            for ref in s.targets:
                r = rings.get(ref.name)
                if r is not None:
                    what = (f"Arrive on {_disp(r)} (its physical mbarrier, slot = running "
                            f"index mod {r.depth}, must have completed the previous lap's "
                            "phase)")
                    pre += _arriver(r, ref, s, "write", cuda_in_order_instr, (), what)
                    if r.copies:
                        pre += _issue_accesses(
                            r, ref, s, "read",
                            f"Arrive on {_disp(r)} (it can complete the phase: every copy "
                            "completing on it must have been issued, its expect_tx done, by "
                            "then)", at is None or not at.every_cta(ref))
            out += pre + [s]
        elif t is A.AmAwait:
            # before the Await: a parity wait is issued there, and passes at once if the
            # previous lap's phase has not completed (its own virtual match orders nothing)
            r = rings.get(s.target.name)
            if r is not None:
                out += _awaiter(r, s)
            out.append(s)
        elif t is A.AmAccess and s.mode != "read" and any(ref.name in rings
                                                           for ref in s.barriers):
            for ref in s.barriers:
                r = rings.get(ref.name)
                if r is not None:
                    out += _issue_accesses(
                        r, ref, s, "write",
                        f"issue of {s.what} (its expect_tx on {_disp(r)}, by the lead thread "
                        "of each CTA)")
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
    rings = {k: r for k, r in rings.items() if r.arrivers or r.waiters}
    if not rings:
        return am
    for r in rings.values():
        _number(r)
    return dataclasses.replace(am, body=_rewrite(am.body, rings))
