"""The concrete abstract-machine interpreter: run AMIR at given sizes and find hazards.

``run_amir(am, sizes)`` executes statement instances in sequential program order, each
tagged with the threads that execute it (CPU code: every thread; a device task: a fresh
cluster; ``cuda_threads``/``CudaWarps``: sub-collectives), and keeps an access history per
allocation instance. It raises ``Hazard`` at the first access, free or barrier use that the
history cannot order, and ``CheckError`` for misuse it cannot interpret.
"""

from __future__ import annotations

import time

from ..ir import nodes as N
from ..ir.memories import BarrierMechanism, Memory
from ..ir.timelines import QUAL_TLS, SYNC_TLS, cuda_stream_sync
from . import nodes as A
from .machine import (ALL, ATOMIC, FULL, TEMPORAL, BarrierState, Event, Record, VarState,
                      contains, point_key, subtract)
from .threads import CollectiveError, bits, range_mask, tile, warps


class Hazard(Exception):
    def __init__(self, kind: str, var: str, box, first: Event | None, second: Event,
                 missing: str):
        super().__init__(f"{kind} on {var}")
        self.kind, self.var, self.box = kind, var, box
        self.first, self.second, self.missing = first, second, missing


class CheckError(Exception):
    """Something the abstract machine cannot interpret (bad sizes, out of bounds, misuse)."""

    def __init__(self, kind: str, message: str, srcinfo=None, hint=None):
        super().__init__(message)
        self.kind, self.message, self.srcinfo, self.hint = kind, message, srcinfo, hint


_PY = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%", "<": "<", "<=": "<=", ">": ">",
       ">=": ">=", "==": "==", "!=": "!=", "and": "and", "or": "or"}


def _py(e) -> str:
    if isinstance(e, N.Const):
        return repr(e.val)
    if isinstance(e, N.Read):
        return f"E[{e.name!r}]"
    if isinstance(e, N.BinOp):
        return f"({_py(e.lhs)} {_PY[e.op]} {_py(e.rhs)})"
    if isinstance(e, N.UnOp):
        return f"(not {_py(e.arg)})" if e.op == "not" else f"(-{_py(e.arg)})"
    if isinstance(e, N.StrideExpr):
        return f"E[{('stride', e.name, e.dim)!r}]"
    raise CheckError("usage", f"cannot evaluate {type(e).__name__} as a control expression",
                     getattr(e, "srcinfo", None))


_COMPILED: dict = {}


def ev(e, env):
    # keyed by identity: hashing an expression tree on every evaluation is the hot path
    hit = _COMPILED.get(id(e))
    if hit is None or hit[0] is not e:
        hit = _COMPILED[id(e)] = (e, eval(f"lambda E: {_py(e)}"))  # noqa: S307 - our own IR
    return hit[1](env)


_STREAM_BITS = tuple(q.bit for q in cuda_stream_sync.full)
_LAUNCH_L1 = tuple(sorted(set(_STREAM_BITS) | {QUAL_TLS["cpu"].bit}))
_FREE_BITS = (QUAL_TLS["c2"].bit, QUAL_TLS["aret"].bit)


def _bits(qs) -> tuple:
    return tuple(sorted(q.bit for q in qs))


class Machine:
    def __init__(self, am: A.AmProc, sizes: dict, deadline: float | None = None):
        self.am = am
        self.deadline = deadline
        self.task_desc: dict[int, str] = {}
        self.env: dict = dict(sizes)
        self.vars: dict[str, VarState] = {}
        self.barriers: dict[str, dict] = {}  # name -> {"mech", "shape", "ring", "elems"}
        self.index: dict[int, set] = {}  # task -> records with flags for that task
        self.cpu_records: set = set()
        self.task = ALL
        self.mask = -1
        self.cfg = None
        self.named = False
        self.ntasks = 0
        self.steps = 0
        self._qcache: dict = {}
        self.task_iters: list[str] = []

    # ------------------------------------------------------------ records
    def _register(self, rec: Record, task: int):
        if task == ALL:
            self.cpu_records.add(rec)
        else:
            self.index.setdefault(task, set()).add(rec)

    def _unregister(self, rec: Record):
        self.cpu_records.discard(rec)
        for t in rec.tasks():
            s = self.index.get(t)
            if s is not None:
                s.discard(rec)

    def _records_for(self, task: int):
        if task == ALL:
            out = set(self.cpu_records)
            for s in self.index.values():
                out |= s
            return out
        return self.index.get(task, set()) | self.cpu_records

    def event(self, si, what, quals=()) -> Event:
        return Event(si, what, self.task, self.mask, quals, dict(self.env))

    # ------------------------------------------------------------ statements
    def run(self):
        self.block(self.am.body)
        # program exit: CPU reads nothing more; device work must have been fenced by kernels

    def block(self, stmts):
        for s in stmts:
            self.stmt(s)

    def stmt(self, s):
        self.steps += 1
        if self.deadline is not None and not self.steps & 4095 and \
                time.perf_counter() > self.deadline:
            raise TimeoutError
        t = type(s)
        if t is A.AmAccess:
            self.access(s)
        elif t is A.AmFor:
            self.loop(s)
        elif t is A.AmIf:
            self.block(s.body if ev(s.cond, self.env) else s.orelse)
        elif t is A.AmFence:
            self.fence(s.L1, s.L2, self.task, self.mask)
        elif t is A.AmArrive:
            self.arrive(s)
        elif t is A.AmAwait:
            self.await_(s)
        elif t is A.AmAlloc:
            self.alloc(s)
        elif t is A.AmFree:
            self.free(s)
        elif t is A.AmWarps:
            self.with_warps(s)
        elif t is A.AmKernel:
            self.kernel(s)
        else:
            raise TypeError(t.__name__)

    def loop(self, s: A.AmFor):
        lo, hi = ev(s.lo, self.env), ev(s.hi, self.env)
        env = self.env
        if s.kind == "threads":
            n = hi - lo
            if n <= 0:
                return
            try:
                tiles = tile(self.mask, s.unit, n, self.cfg.blockDim, self.cfg.clusterDim)
            except CollectiveError as e:
                raise CheckError("collective", f"{e} (in cuda_threads loop over {s.iter})",
                                 s.srcinfo) from None
            saved = self.mask
            for i in range(lo, hi):
                env[s.iter] = i
                self.mask = tiles[i - lo]
                self.block(s.body)
            self.mask = saved
            env.pop(s.iter, None)
            return
        if s.kind == "task" and s.innermost_task:
            cluster = range_mask(0, self.cfg.blockDim * self.cfg.clusterDim)
            for i in range(lo, hi):
                env[s.iter] = i
                self.ntasks += 1
                self.task, self.mask = self.ntasks, cluster
                self.task_desc[self.ntasks] = ", ".join(
                    f"{k}={env[k]}" for k in self.task_iters + [s.iter])
                self.block(s.body)
                self.index.pop(self.task, None)
            self.task, self.mask = ALL, -1
            env.pop(s.iter, None)
            return
        if s.kind == "task":
            self.task_iters.append(s.iter)
        for i in range(lo, hi):
            env[s.iter] = i
            self.block(s.body)
        if s.kind == "task":
            self.task_iters.pop()
        env.pop(s.iter, None)

    def with_warps(self, s: A.AmWarps):
        saved_mask, saved_named = self.mask, self.named
        top = s.ctx.name is not None and not self.named
        try:
            self.mask = warps(self.mask, s.ctx, self.cfg, top)
        except CollectiveError as e:
            raise CheckError("collective", str(e), s.srcinfo) from None
        self.named = self.named or s.ctx.name is not None
        try:
            self.block(s.body)
        finally:
            self.mask, self.named = saved_mask, saved_named

    def kernel(self, s: A.AmKernel):
        launch = self.event(s.srcinfo, "kernel launch")
        self._fence_bits(_LAUNCH_L1, _LAUNCH_L1, _bits(cuda_stream_sync.full),
                         _bits(cuda_stream_sync.temporal), ALL, -1)
        self.cfg = s.cfg
        try:
            self.block(s.body)
        finally:
            self.cfg = None
        del launch
        self._fence_bits(_STREAM_BITS, _STREAM_BITS, _bits(cuda_stream_sync.full),
                         _bits(cuda_stream_sync.temporal), ALL, -1)

    # ------------------------------------------------------------ allocation
    def alloc(self, s: A.AmAlloc):
        shape = tuple(ev(e, self.env) for e in s.shape)
        if isinstance(s.mem, BarrierMechanism):
            self.barriers[s.name] = {"mech": s.mem, "shape": shape, "ring": s.ring,
                                     "elems": {}, "display": s.display, "src": s.srcinfo}
            return
        self.vars[s.name] = VarState(s.display or s.name, s.mem, shape, self.task)

    def free(self, s: A.AmFree):
        if s.name in self.barriers:
            del self.barriers[s.name]
            return
        v = self.vars.pop(s.name, None)
        if v is None:
            return
        if v.mem.is_shared and self.task != ALL:
            cluster = range_mask(0, self.cfg.blockDim * self.cfg.clusterDim)
            for rec in list(v.mutates) + list(v.reads):
                if not rec.has(TEMPORAL, _FREE_BITS, self.task, cluster, False):
                    raise Hazard("free without sync", v.name, rec.box, rec.event,
                                 self.event(s.srcinfo, f"free of {v.name} (end of its block)"),
                                 "the access is not ordered before the free for every thread "
                                 "of the cluster; add a CTA/cluster Fence before the end of "
                                 "the block")
        for rec in list(v.mutates) + list(v.reads):
            self._unregister(rec)

    def _param_state(self, name: str) -> VarState:
        for pname, mem, shape in self.am.data_params:
            if pname == name:
                st = VarState(name, mem, tuple(ev(e, self.env) for e in shape), ALL)
                self.vars[name] = st
                return st
        raise CheckError("usage", f"unknown variable {name}")

    # ------------------------------------------------------------ accesses
    def access(self, s: A.AmAccess):
        v = self.vars.get(s.name) or self._param_state(s.name)
        box = []
        for d, w in enumerate(s.box):
            if w[0] == "pt":
                i = ev(w[1], self.env)
                box.append((i, i + 1))
            else:
                box.append((ev(w[1], self.env), ev(w[2], self.env)))
        box = tuple(box)
        pkey = point_key(box)
        for (lo, hi), ext in zip(box, v.shape):
            if lo < 0 or hi > ext or lo > hi:
                raise CheckError("sync", f"out-of-bounds access {v.name}"
                                 f"[{', '.join(f'{a}:{b}' for a, b in box)}] of an array of "
                                 f"shape {list(v.shape)} ({s.what})", s.srcinfo)
        ck = (id(v.mem), s.instr_tl.name)
        cached = self._qcache.get(ck)
        if cached is None:
            q = v.mem.qual_tls(s.instr_tl)
            cached = self._qcache[ck] = (q, tuple(x.bit for x in q) if q else (),
                                         frozenset(x.bit for x in v.mem.qual_mask()))
        quals, qbits, qmask = cached
        if quals is None:
            raise CheckError("sync", f"implementation limitation: no qualitative timeline for "
                             f"{v.name} @ {v.mem} accessed by instr-tl {s.instr_tl}", s.srcinfo)
        conv = quals[0].convergent
        task, mask = self.task, self.mask
        mode = s.mode
        ev_new = None

        def fail(kind, rec, need):
            nonlocal ev_new
            ev_new = ev_new or self.event(s.srcinfo, s.what, quals)
            who = "any" if conv else "every"
            raise Hazard(kind, v.name, rec.box, rec.event, ev_new,
                         f"no synchronization gives {who} executing thread '{need}' visibility "
                         f"of the earlier access on {' or '.join(q.name for q in quals)}")

        for rec in v.mutates.overlapping(box, pkey):
            if mode == "atomic":
                if not rec.atomic and not rec.has(ATOMIC, qbits, task, mask, conv):
                    fail("WAW" if True else "", rec, "atomic")
            elif mode in ("read", "rw"):
                if not rec.has(FULL, qbits, task, mask, conv):
                    fail("RAW" if mode == "read" else "WAW", rec, "full")
            elif not rec.has(TEMPORAL, qbits, task, mask, conv):
                fail("WAW", rec, "temporal")
        if mode != "read":
            for rec in v.reads.overlapping(box, pkey):
                flag = ATOMIC if mode == "atomic" else TEMPORAL
                if not rec.has(flag, qbits, task, mask, conv):
                    fail("WAR", rec, "temporal")
        # update the history
        new = Record(box, mode != "read", mode == "atomic",
                     ev_new or self.event(s.srcinfo, s.what, quals), qmask, v.name)
        q0 = qbits[0]
        if s.instr_tl.in_order:
            new.flags = {(q0, 0): {task: mask}, (q0, 1): {task: mask}, (q0, 2): {task: mask},
                         (q0, 3): {task: mask}}
        else:
            new.flags = {(q0, 3): {task: mask}}
        if mode in ("write", "rw"):
            self._supersede(v.mutates, box, pkey)
            self._supersede(v.reads, box, pkey)
        (v.mutates if mode != "read" else v.reads).add(new)
        self._register(new, task)
        for b in s.barriers:
            for key, st in self._elements(b):
                new.pending.append((key, st.arrives, FULL))
                st.pending.append((new, st.arrives, FULL))

    def _supersede(self, store, box, pkey=None):
        for r in store.overlapping(box, pkey):
            store.remove(r)
            self._unregister(r)
            if contains(box, r.box):
                continue
            for piece in subtract(r.box, box):
                nr = r.copy_with_box(piece)
                for t in nr.tasks():
                    self._register(nr, t)
                for key, count, lvl in nr.pending:
                    b = self.barriers.get(key[0])
                    st = b["elems"].get(key) if b is not None else None
                    if st is not None:
                        st.pending.append((nr, count, lvl))
                store.add(nr)

    # ------------------------------------------------------------ synchronization
    def _fence_bits(self, full1, temp1, full2, temp2, task, mask):
        full1s = frozenset(full1)
        for rec in list(self._records_for(task)):
            lvl = rec.sync_level(task, mask, full1s, temp1)
            if lvl is not None:
                rec.augment(task, mask, full2, temp2, lvl)
                self._register(rec, task)

    def fence(self, L1, L2, task, mask):
        self._fence_bits(_bits(L1.full), _bits(L1.temporal), _bits(L2.full), _bits(L2.temporal),
                         task, mask)

    def _elements(self, ref: A.AmBarrierRef):
        b = self.barriers.get(ref.name)
        if b is None:
            raise CheckError("barrier-usage", f"barrier {ref.name} used outside its lifetime",
                             ref.srcinfo)
        idxs = [[]]
        for d, w in enumerate(ref.idx):
            if w[0] == "pt":
                vals = [ev(w[1], self.env)]
            else:
                vals = list(range(ev(w[1], self.env), ev(w[2], self.env)))
            ext = b["shape"][d]
            for x in vals:
                if not 0 <= x < ext:
                    raise CheckError("barrier-usage", f"barrier index {x} out of range "
                                     f"[0, {ext}) for {b['display']}", ref.srcinfo)
            idxs = [i + [x] for i in idxs for x in vals]
        mech = b["mech"]
        out = []
        for i in idxs:
            key = (ref.name, tuple(i))
            if mech.kind == "commit":
                key = key + (self.task, self.mask)
            st = b["elems"].get(key)
            if st is None:
                pre = False
                if mech.pre_arrive:
                    for d, depth in enumerate(b["ring"]):
                        if depth is not None and i[d] < mech.pre_arrive:
                            pre = True
                st = b["elems"][key] = BarrierState(mech.kind, pre)
            out.append((key, st))
        return out

    def arrive(self, s: A.AmArrive):
        task, mask = self.task, self.mask
        elems = [e for ref in s.targets for e in self._elements(ref)]
        full1, temp1 = frozenset(_bits(s.L1.full)), _bits(s.L1.temporal)
        for rec in list(self._records_for(task)):
            lvl = rec.sync_level(task, mask, full1, temp1)
            if lvl is None:
                continue
            for key, st in elems:
                st.pending.append((rec, st.arrives, lvl))
        for _, st in elems:
            st.arrives += 1

    def await_(self, s: A.AmAwait):
        task, mask = self.task, self.mask
        [(key, st)] = self._elements(s.target)
        if st.arrives == 0:
            raise CheckError("barrier-usage", f"Await on {s.target.name} "
                             f"{list(key[1])} before any Arrive: no forward progress",
                             s.srcinfo, hint="move the Arrive before the Await in program order, "
                                             "or pre-arrive the ring with CudaMbarrierPreArrive")
        limit = st.arrives - 1 - s.N
        full2, temp2 = _bits(s.L2.full), _bits(s.L2.temporal)
        keep = []
        for rec, count, lvl in st.pending:
            if count <= limit:
                rec.augment(task, mask, full2, temp2, lvl)
                self._register(rec, task)
                if st.kind != "commit":
                    keep.append((rec, count, lvl))
            else:
                keep.append((rec, count, lvl))
        st.pending = keep
        st.awaited = True


def describe_threads(task: int, mask: int, blockDim: int | None,
                     task_desc: dict | None = None) -> str:
    if task == ALL:
        return "all threads (CPU scope / kernel boundary)"
    where = f"task ({task_desc[task]})" if task_desc and task in task_desc else f"task #{task}"
    ts = bits(mask)
    if not ts:
        return f"{where}: no threads"
    runs, start, prev = [], ts[0], ts[0]
    for t in ts[1:]:
        if t != prev + 1:
            runs.append((start, prev))
            start = t
        prev = t
    runs.append((start, prev))
    txt = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:6])
    if len(runs) > 6:
        txt += ", ..."
    word = "thread" if len(ts) == 1 else "threads"
    return f"{word} {txt} of {where}"


__all__ = ["Machine", "Hazard", "CheckError", "describe_threads", "SYNC_TLS", "Memory"]
