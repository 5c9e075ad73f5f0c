"""Tracing a kernel for the parallel oracle: per-thread instruction streams over real arrays.

``trace_kernel`` walks one ``CudaDeviceFunction`` body in sequential program order, like the
abstract machine (``interp.py``) does, but keeps the data: every statement instance becomes
an ``Inst`` with the threads that execute it (natural ids of ``threads.py``, computed with
``tile``/``warps``), its control environment and its numpy views (windows of the current
allocation instances). Control flow never depends on data (conditions and bounds are
control expressions), so the set of instances a parallel execution runs is exactly the set
the sequential walk meets; only their order differs. The walk also resolves, once, every
pairing the scheduler needs at run time:

* an mbarrier element gets its physical slot and wait parity (``Tracer.place``), and each
  mbarrier the number of arriving threads that completes one of its phases
  (``KernelTrace.counts``, computed like the code generator's init count);
* for the instance-counting model (cluster syncs, ``mbarrier="virtual"``) an ``Await``
  waits until its element has as many completed ``Arrive`` instances as precede it in
  program order (plus a pre-arrival);
* an asynchronous instruction with trailing barriers ``>> z[i]`` is attached to the *next*
  ``Arrive`` instance on ``z[i]`` (the phase it completes on, PTX ``complete_tx``);
* an ``Arrive`` or ``Fence`` whose first timeline has ``Sm80_cp_async`` in its full set
  waits for the earlier ``cp.async`` copies of its threads (``cp.async.mbarrier.arrive``,
  ``cp.async.wait_all``);
* a commit-group ``Arrive`` closes a group of the earlier asynchronous instructions of its
  threads that its timeline names; ``Await(cg, L2, N)`` waits for all groups of that
  collective but the ``N`` most recent.

Statement bodies are compiled by ``oracle_eval.py``.
"""

from __future__ import annotations

from ..errors import InternalError
from ..ir import nodes as N
from ..ir.memories import BarrierMechanism
from ..ir.timelines import QUAL_TLS, Sm80_cp_async_instr, wgmma_async_instr
from ..semantics.interpreter import compiled
from ..semantics.runtime import alloc, window
from .convert import param_modes
from .oracle_eval import Compiler
from .threads import CollectiveError, bits, range_mask, runs_text, tile, warps

_SM80 = QUAL_TLS["sm80"]

# instance kinds
ASSIGN, CALL, FENCE, ARRIVE, AWAIT, AWAIT_OPS, FREE = range(7)
KIND_NAMES = ("assignment", "instruction call", "Fence", "Arrive", "Await", "Await", "free")


class OracleError(Exception):
    """The oracle cannot run this program (it is outside what the oracle models)."""


class OracleDeadlock(Exception):
    """No thread can make progress and work is left; ``blocked`` lists (threads, statement)."""

    def __init__(self, blocked: list[tuple[str, str]]):
        self.blocked = blocked
        lines = [f"  {who}: {what}" for who, what in blocked[:8]]
        more = f"\n  ... and {len(blocked) - 8} more" if len(blocked) > 8 else ""
        super().__init__("deadlock: no thread can proceed\n" + "\n".join(lines) + more)


def ranges(ts: list[int]) -> str:
    return runs_text(ts)


# ------------------------------------------------------------------ trace records


class Inst:
    """One statement instance: executed by the threads ``mask`` of device task ``task``."""

    __slots__ = ("kind", "task", "mask", "n", "stmt", "fn", "E", "V", "callee", "args",
                 "modes", "is_async", "quals", "fifo_prev", "state", "waiters", "snap",
                 "arrived", "parked", "ops", "targets", "remaining", "elem", "need", "arr",
                 "done", "txs")

    def __init__(self, kind: int, task: int, mask: int, stmt):
        self.kind = kind
        self.task = task
        self.mask = mask
        self.n = bin(mask).count("1")
        self.stmt = stmt
        self.arrived = 0
        self.parked: list = []
        self.done = False
        self.txs = None

    def where(self) -> str:
        si = getattr(self.stmt, "srcinfo", None)
        return f"{getattr(si, 'file', '?')}:{getattr(si, 'line', '?')}"


class Slot:
    """A physical mbarrier (hardware model): arrivals in the current phase, completed
    phases, outstanding transaction bytes (as instructions) per phase, waiting threads."""

    __slots__ = ("uid", "pending", "phases", "tx", "waiters")

    def __init__(self, uid: int):
        self.uid = uid
        self.pending = 0
        self.phases = 0
        self.tx: dict[int, int] = {}
        self.waiters: list = []  # (parity, thread)


class Elem:
    """One barrier element (an allocation instance and a virtual index). For an mbarrier
    also its physical slot and the parity an Await on it waits for (``None``: no wait)."""

    __slots__ = ("key", "count", "pre", "pending_attach", "completed", "waiters", "groups",
                 "slot", "parity")

    def __init__(self, key, pre: bool):
        self.key = key
        self.count = 0  # Arrive instances traced so far (program order)
        self.pre = pre
        self.pending_attach: list = []  # async ops waiting for the next Arrive instance
        self.completed = 1 if pre else 0  # run time: completed Arrive instances
        self.waiters: list = []  # run time: (need, thread)
        self.groups: list = []  # commit groups: list of op lists
        self.slot: Slot | None = None
        self.parity: int | None = None


class BarrierInst:
    __slots__ = ("name", "mech", "shape", "ring", "elems", "uid", "site", "base")

    def __init__(self, name, mech: BarrierMechanism, shape, ring, uid: int, site=None,
                 base: int = 0):
        self.name, self.mech, self.shape, self.ring, self.uid = name, mech, shape, ring, uid
        self.elems: dict = {}
        #: the allocation statement, and the running index this lifetime starts at: the code
        #: generator continues an allocation's mbarriers from one lifetime to the next
        self.site, self.base = site, base


class KernelTrace:
    """All instances of one kernel launch, per task, plus each thread's stream."""

    def __init__(self, cfg: N.CudaDeviceFunction):
        self.cfg = cfg
        self.streams: dict[tuple[int, int], list[Inst]] = {}
        self.ops: list[Inst] = []
        self.ntasks = 0
        self.counts: dict[int, int] = {}


class Tracer:
    """Walks a kernel body in program order; see the module docstring."""

    def __init__(self, comp: Compiler):
        self.comp = comp
        self.uid = 0
        self.thread_iters: set[str] = set()
        #: barrier uid -> {(statement, non-thread iterators, element): arriving threads}
        self.arrive_groups: dict[int, dict] = {}
        self.slots: dict = {}
        self.site_base: dict = {}  # (allocation statement, task) -> next lifetime's base

    def trace(self, s: N.With, E: dict, V: dict, T: dict, M: dict) -> KernelTrace:
        self.kt = KernelTrace(s.ctx)
        self.cfg = s.ctx
        self.tasks(s.body, E, V, T, M)
        self.kt.counts = self.arrival_counts()
        return self.kt

    def tasks(self, body, E, V, T, M):
        for st in body:
            if not (isinstance(st, N.For) and isinstance(st.mode, N.CudaTasks)):
                if isinstance(st, N.Pass):
                    continue
                raise OracleError("a CudaDeviceFunction body must be a cuda_tasks nest")
            lo, hi = self.ev(st.lo, E, V), self.ev(st.hi, E, V)
            inner = any(isinstance(b, N.For) and isinstance(b.mode, N.CudaTasks)
                        for b in st.body)
            for i in range(lo, hi):
                E2 = dict(E)
                E2[st.iter] = i
                if inner:
                    self.tasks(st.body, E2, V, T, M)
                else:
                    self.task = self.kt.ntasks
                    self.kt.ntasks += 1
                    self.uncommitted: list[Inst] = []
                    self.cp_async: list[Inst] = []
                    self.fifo: dict = {}
                    cluster = range_mask(0, self.cfg.blockDim * self.cfg.clusterDim)
                    self.block(st.body, E2, V, T, M, {}, cluster, False)

    # ------------------------------------------------------------ helpers
    def ev(self, e, E, V):
        return self.comp.ctrl(e)(E, V)

    def emit(self, inst: Inst) -> Inst:
        streams = self.kt.streams
        task = inst.task
        for t in bits(inst.mask):
            lst = streams.get((task, t))
            if lst is None:
                lst = streams[(task, t)] = []
            lst.append(inst)
        return inst

    def view(self, a, E, V):
        if isinstance(a, N.WindowExpr):
            spec = []
            for w in a.idx:
                if isinstance(w, N.Point):
                    spec.append(self.ev(w.pt, E, V))
                else:
                    spec.append((self.ev(w.lo, E, V), self.ev(w.hi, E, V)))
            return window(V[a.name], tuple(spec))
        if isinstance(a, N.Read) and not a.idx:
            return V[a.name]
        raise InternalError(f"oracle: data argument {a!r} is not a window")

    def elements(self, ref: N.BarrierRef, E, V, B) -> list[Elem]:
        b: BarrierInst = B[ref.name]
        idxs = [()]
        for d, w in enumerate(ref.idx):
            if isinstance(w, N.Point):
                vals = [self.ev(w.pt, E, V)]
            else:
                vals = list(range(self.ev(w.lo, E, V), self.ev(w.hi, E, V)))
            ext = b.shape[d]
            if b.ring[d] is not None:
                # virtual ring indices run past the extent by the pre-arrive count (the
                # consumer that frees slot i arrives on z[i + k])
                ext += b.mech.pre_arrive
            for x in vals:
                if not 0 <= x < ext:
                    raise OracleError(f"barrier index {x} out of range for {b.name}")
            idxs = [i + (x,) for i in idxs for x in vals]
        out = []
        for i in idxs:
            key = (b.uid, i)
            if b.mech.kind == "commit":
                key = key + (self.task, self.mask)
            el = b.elems.get(key)
            if el is None:
                pre = bool(b.mech.pre_arrive) and any(
                    depth is not None and x < b.mech.pre_arrive for x, depth in zip(i, b.ring))
                el = b.elems[key] = Elem(key, pre)
                if b.mech.kind == "mbarrier":
                    self.place(b, i, el)
            out.append(el)
        return out

    def place(self, b: BarrierInst, idx: tuple, el: Elem) -> None:
        """The physical slot and wait parity of a virtual index, as the code generator
        lowers rings: running index j = v - pre_arrive + base (``base``: the virtual indices
        of the allocation's earlier lifetimes in this task), slot j % depth, parity
        (j / depth) & 1; an Await with j < 0 does not wait. Without a ring, one phase per
        lifetime: parity base & 1."""
        phys = list(idx)
        j = None
        for d, depth in enumerate(b.ring):
            if depth is not None:
                j = idx[d] - b.mech.pre_arrive + b.base
                phys[d] = j % depth
                break
        key = (b.site, self.task, tuple(phys))
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = Slot(b.uid)
        el.slot = slot
        if j is None:
            el.parity = b.base & 1
        else:
            el.parity = None if j < 0 else (j // depth) & 1

    # ------------------------------------------------------------ statements
    def block(self, stmts, E, V, T, M, B, mask, named):
        frees = []
        for s in stmts:
            if isinstance(s, N.Alloc):
                shape = tuple(self.ev(e, E, V) for e in s.type.shape)
                arr = alloc(s.name, shape, s.type.scalar.np_dtype)
                V = {**V, s.name: arr}
                T = {**T, s.name: s.type.scalar}
                M = {**M, s.name: s.mem}
                if s.mem.is_shared:
                    inst = Inst(FREE, self.task, mask, s)
                    inst.arr = arr
                    frees.append(inst)
            elif isinstance(s, N.BarrierAlloc):
                self.uid += 1
                shape = tuple(self.ev(d.extent, E, V) for d in s.dims)
                ring = tuple(d.ring_depth for d in s.dims)
                key = (id(s), self.task)
                base = self.site_base.get(key, 0)
                rdims = [k for k, r in enumerate(ring) if r is not None]
                self.site_base[key] = base + (shape[rdims[0]] if rdims else 1)
                B = {**B, s.name: BarrierInst(s.name, s.mech, shape, ring, self.uid, id(s),
                                              base)}
            elif isinstance(s, N.WindowStmt):
                V = {**V, s.name: self.view(s.rhs, E, V)}
                T = {**T, s.name: T[s.rhs.name]}
                M = {**M, s.name: s.special or M[s.rhs.name]}
            else:
                self.mask = mask
                self.stmt(s, E, V, T, M, B, mask, named)
        for inst in reversed(frees):
            self.emit(inst)

    def stmt(self, s, E, V, T, M, B, mask, named):
        task = self.task
        if isinstance(s, (N.Assign, N.Reduce)):
            inst = Inst(ASSIGN, task, mask, s)
            inst.fn = self.comp.assign(s, T)
            inst.E, inst.V = E, V
            self.emit(inst)
        elif isinstance(s, N.For):
            lo, hi = self.ev(s.lo, E, V), self.ev(s.hi, E, V)
            if isinstance(s.mode, N.CudaThreads):
                self.thread_iters.add(s.iter)
                if hi <= lo:
                    return
                try:
                    tiles = tile(mask, s.mode.unit, hi - lo, self.cfg.blockDim,
                                 self.cfg.clusterDim)
                except CollectiveError as e:
                    raise OracleError(f"cuda_threads loop over {s.iter}: {e}") from None
            elif isinstance(s.mode, N.CudaTasks):
                raise OracleError("cuda_tasks loop inside a device task")
            for i in range(lo, hi):
                E2 = dict(E)
                E2[s.iter] = i
                m = tiles[i - lo] if isinstance(s.mode, N.CudaThreads) else mask
                self.block(s.body, E2, V, T, M, B, m, named)
        elif isinstance(s, N.If):
            body = s.body if self.ev(s.cond, E, V) else s.orelse
            self.block(body, E, V, T, M, B, mask, named)
        elif isinstance(s, N.With):
            if not isinstance(s.ctx, N.CudaWarps):
                raise OracleError("nested CudaDeviceFunction")
            top = s.ctx.name is not None and not named
            try:
                m = warps(mask, s.ctx, self.cfg, top)
            except CollectiveError as e:
                raise OracleError(str(e)) from None
            self.block(s.body, E, V, T, M, B, m, named or s.ctx.name is not None)
        elif isinstance(s, N.Call):
            if s.callee.instr is None:
                raise OracleError(f"call of proc {s.callee.name} inside a kernel")
            self.call(s, E, V, M, B, mask)
        elif isinstance(s, N.Fence):
            inst = Inst(FENCE, task, mask, s)
            inst.ops = self.cp_async_of(mask) if _SM80 in s.L1.full else []
            if inst.ops:
                covered = set(map(id, inst.ops))
                self.cp_async = [o for o in self.cp_async if id(o) not in covered]
            self.emit(inst)
        elif isinstance(s, N.Arrive):
            self.arrive(s, E, V, B, mask)
        elif isinstance(s, N.Await):
            self.await_(s, E, V, B, mask)
        elif isinstance(s, N.Pass):
            pass
        else:
            raise OracleError(f"cannot trace {type(s).__name__} in a kernel")

    def cp_async_of(self, mask) -> list:
        return [o for o in self.cp_async if o.mask & mask]

    def call(self, s: N.Call, E, V, M, B, mask):
        callee = s.callee
        info = callee.instr
        args = []
        quals = set()
        for q, a in zip(callee.params, s.args):
            if q.is_data:
                args.append(self.view(a, E, V))
                mem = M.get(a.name)
                qs = mem.qual_tls(info.timeline) if mem is not None else None
                if qs:
                    quals.add(qs[0])
            else:
                args.append(self.ev(a, E, V))
        inst = Inst(CALL, self.task, mask, s)
        inst.callee = compiled(callee)
        inst.args = tuple(args)
        inst.is_async = not info.timeline.in_order
        inst.modes = param_modes(callee)
        if inst.is_async:
            inst.quals = frozenset(quals)
            inst.state = 0
            inst.waiters = []
            inst.snap = None
            inst.fifo_prev = None
            if info.timeline == wgmma_async_instr:
                # the wgmma pipeline of one warpgroup completes in issue order (a later
                # wgmma on the same accumulator sees the earlier one's result)
                key = mask
                inst.fifo_prev = self.fifo.get(key)
                self.fifo[key] = inst
            if info.timeline == Sm80_cp_async_instr:
                self.cp_async.append(inst)
            self.uncommitted.append(inst)
            self.kt.ops.append(inst)
            inst.targets = []
            for ref in s.barriers:
                for el in self.elements(ref, E, V, B):
                    el.pending_attach.append(inst)
                    inst.targets.append(el)
        self.emit(inst)

    def arrive(self, s: N.Arrive, E, V, B, mask):
        elems = [el for ref in s.targets for el in self.elements(ref, E, V, B)]
        mech = B[s.targets[0].name].mech
        if mech.kind == "commit":
            # closes one group per element of the ops of these threads that L1 names;
            # nothing happens at run time (the ops were issued before, by these threads)
            names = s.L1.temporal
            group = [o for o in self.uncommitted if o.mask & mask and o.quals & names]
            taken = set(map(id, group))
            self.uncommitted = [o for o in self.uncommitted if id(o) not in taken]
            for el in elems:
                el.groups.append(group)
            return
        inst = Inst(ARRIVE, self.task, mask, s)
        extra = self.cp_async_of(mask) if _SM80 in s.L1.full else []
        inst.ops = extra
        inst.targets = []
        for el in elems:
            el.count += 1
            inst.targets.append([el, list(el.pending_attach) + extra])
            el.pending_attach = []
        inst.remaining = inst.n
        if mech.kind == "mbarrier":
            # the code generator's arrival count per phase: the threads one Arrive statement
            # brings to one element, over all values of its thread iterators
            groups = self.arrive_groups.setdefault(B[s.targets[0].name].uid, {})
            env = tuple(sorted((k, v) for k, v in E.items() if k not in self.thread_iters))
            for el in elems:
                g = (id(s), env, el.key)
                groups[g] = groups.get(g, 0) + inst.n
        self.emit(inst)

    def arrival_counts(self) -> dict[int, int]:
        """Arrivals that complete one phase of each mbarrier (by allocation uid)."""
        return {uid: max(g.values()) for uid, g in self.arrive_groups.items()}

    def await_(self, s: N.Await, E, V, B, mask):
        [el] = self.elements(s.target, E, V, B)
        mech = B[s.target.name].mech
        if mech.kind == "commit":
            inst = Inst(AWAIT_OPS, self.task, mask, s)
            done = el.groups[:max(len(el.groups) - s.N, 0)]
            inst.ops = [o for g in done for o in g]
        else:
            inst = Inst(AWAIT, self.task, mask, s)
            inst.elem = el
            # hardware phases count arrivals; program order fixes how many this Await needs
            inst.need = max(1, el.count + (1 if el.pre else 0) - s.N)
        self.emit(inst)


__all__ = ["ASSIGN", "ARRIVE", "AWAIT", "AWAIT_OPS", "CALL", "Compiler", "FENCE", "FREE",
           "Inst", "KIND_NAMES", "KernelTrace", "OracleDeadlock", "OracleError", "Tracer",
           "ranges"]
