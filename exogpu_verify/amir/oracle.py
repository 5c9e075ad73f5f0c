"""Executable parallel semantics: a randomized oracle for the synchronization checker.

``run_parallel(p, args, seed)`` runs ``p`` on copies of the numpy ``args`` and returns the
final data arrays. CPU code runs sequentially. Each ``CudaDeviceFunction`` launches all its
innermost ``cuda_tasks`` iterations as concurrent clusters; each thread of each cluster runs
its own stream of statement instances (``oracle_trace.py``), and a scheduler interleaves
them at random, as far as the program's synchronization allows:

* threads: the scheduler repeatedly picks a random runnable thread and runs a short random
  burst of its next instances;
* ``Fence`` and in-order instruction calls of several threads (a warp shuffle, ``mma.sync``)
  are rendezvous: the statement executes once, when the last of its threads arrives, and
  then all of them continue. A Fence whose first timeline includes ``Sm80_cp_async`` also
  completes its threads' earlier ``cp.async`` copies. An *asynchronous* instruction of
  several threads (a warpgroup's wgmma, a cluster's TMA multicast, whose CTAs issue their
  parts independently) is issued at a random one of its threads' arrivals, often the
  first, and blocks nobody;
* ``Arrive`` never blocks. mbarriers follow the hardware (default ``mbarrier="hardware"``):
  a ring's virtual index maps to a physical slot and a phase as the code generator lowers
  it (running index ``v - pre_arrive``, slot ``j % depth``, parity ``(j / depth) & 1``); a
  phase completes when as many threads arrived as the code generator initializes the
  mbarrier with (the threads one Arrive statement brings to one element) and the
  asynchronous instructions completing on it (trailing ``>> z[i]``) are done. Such an
  instruction holds the phase that is current when its first thread passes the statement
  (the elected lane's ``mbarrier.expect_tx`` precedes the copy and that lane's own later
  Arrive), even when the copy itself issues later; an ``Await`` waits on the parity, so phases that run ahead or behind show as
  races or hangs. ``Arrive(Sm80_cp_async)`` counts a thread once its earlier cp.async
  copies are done. ``mbarrier="virtual"`` instead counts whole Arrive instances per virtual
  index, the abstract machine's view. Cluster syncs count instances. A commit-group
  ``Await(cg, L2, N)`` blocks until all of its collective's groups but the N most recent
  have completed;
* asynchronous instructions (cp.async, TMA, wgmma: instruction timeline not in order) do not
  execute at issue: each read-only operand is read at issue or at completion (chosen at
  random); writes, and read-modify-writes such as accumulators, happen at completion. A pending instruction completes at a random later step, when
  every thread is blocked, or at the latest when a synchronization waiting for it needs it.
  wgmmas of one warpgroup complete in issue order (the tensor-core pipeline is in order);
* memory is sequentially consistent (every completed write is visible to every thread at
  once): the hazards this exposes are ordering races, not weak-memory effects; proxies
  (generic vs async) are not distinguished, so a missing ``fence.proxy.async`` is invisible;
* freed shared memory is reused: once the first thread of an allocation's block passes its
  end, the allocation is overwritten with random values at a random later point (as an
  asynchronous write would land), so an access not ordered before the free can read
  garbage or be lost;
* at the end of a kernel every pending asynchronous instruction completes (stream order).

A state with unfinished threads, none runnable and nothing pending raises
``OracleDeadlock`` naming the blocked statements. Sequential and parallel runs execute the
same statement instances with the same arithmetic, so for a race-free program the result is
bitwise the sequential one (``interpret``).
"""

from __future__ import annotations

import random

import numpy as np

from ..ir import nodes as N
from ..semantics.runtime import alloc, window
from .oracle_trace import (ARRIVE, ASSIGN, AWAIT, AWAIT_OPS, CALL, FENCE, FREE, KIND_NAMES,
                           Compiler, Inst, KernelTrace, OracleDeadlock, OracleError, Tracer,
                           ranges)


def run_parallel(p: N.Procedure, args: dict, seed: int, *, p_async: float = 0.15,
                 p_lazy: float = 0.5, p_early_read: float = 0.5, max_burst: int = 4,
                 mbarrier: str = "hardware") -> dict[str, np.ndarray]:
    """Run ``p`` once with a random parallel schedule (see the module docstring).

    ``args`` as for ``interpret`` (by parameter name); arrays are copied, never mutated.
    ``p_async`` is the chance per scheduling step that a random pending asynchronous
    instruction completes; ``p_lazy`` the share of asynchronous instructions that instead
    wait until every thread is blocked; ``p_early_read`` the chance that an asynchronous
    instruction reads a read-only operand at issue rather than at completion;
    ``max_burst`` the longest run of one thread between switches. ``mbarrier`` picks the
    mbarrier model: ``"hardware"`` (physical slots of a ring, phases completed by a fixed
    number of arriving threads -- the code generator's count -- and transaction bytes,
    Awaits on phase parity) or ``"virtual"`` (each virtual index counts whole Arrive
    instances, as the abstract machine does).
    Returns the final value of every data parameter. Raises ``OracleDeadlock`` when the
    synchronization admits no completion, ``OracleError`` for programs outside the model.
    """
    if mbarrier not in ("hardware", "virtual"):
        raise ValueError(f"mbarrier must be 'hardware' or 'virtual', not {mbarrier!r}")
    run = _Run(seed, p_async, p_lazy, p_early_read, max_burst, mbarrier == "hardware")
    E, V, T, M = {}, {}, {}, {}
    for q in p.params:
        v = args[q.name]
        if q.is_data:
            V[q.name] = np.array(v, copy=True)
            T[q.name] = q.type.scalar
            M[q.name] = q.mem
        else:
            E[q.name] = int(v) if not isinstance(v, (bool, np.bool_)) else bool(v)
    out = {q.name: V[q.name] for q in p.params if q.is_data}
    with np.errstate(all="ignore"):
        run.cpu_block(p.body, E, V, T, M)
    return out


class _Run:
    def __init__(self, seed: int, p_async: float, p_lazy: float, p_early_read: float,
                 max_burst: int, hw: bool):
        self.rng = random.Random(seed)
        self.nprng = np.random.default_rng(seed)
        self.comp = Compiler()
        self.p_async = p_async
        self.p_lazy = p_lazy
        self.p_early_read = p_early_read
        self.max_burst = max_burst
        self.hw = hw

    # ------------------------------------------------------------ CPU code (sequential)
    def cpu_block(self, stmts, E, V, T, M):
        for s in stmts:
            if isinstance(s, N.Alloc):
                shape = tuple(self.comp.ctrl(e)(E, V) for e in s.type.shape)
                V = {**V, s.name: alloc(s.name, shape, s.type.scalar.np_dtype)}
                T = {**T, s.name: s.type.scalar}
                M = {**M, s.name: s.mem}
            elif isinstance(s, N.WindowStmt):
                V = {**V, s.name: self.view(s.rhs, E, V)}
                T = {**T, s.name: T[s.rhs.name]}
                M = {**M, s.name: s.special or M[s.rhs.name]}
            else:
                self.cpu_stmt(s, E, V, T, M)

    def view(self, a, E, V):
        if isinstance(a, N.WindowExpr):
            spec = []
            for w in a.idx:
                if isinstance(w, N.Point):
                    spec.append(self.comp.ctrl(w.pt)(E, V))
                else:
                    spec.append((self.comp.ctrl(w.lo)(E, V), self.comp.ctrl(w.hi)(E, V)))
            return window(V[a.name], tuple(spec))
        return V[a.name]

    def cpu_stmt(self, s, E, V, T, M):
        if isinstance(s, (N.Assign, N.Reduce)):
            self.comp.assign(s, T)(E, V)
        elif isinstance(s, N.For):
            lo, hi = self.comp.ctrl(s.lo)(E, V), self.comp.ctrl(s.hi)(E, V)
            for i in range(lo, hi):
                E2 = dict(E)
                E2[s.iter] = i
                self.cpu_block(s.body, E2, V, T, M)
        elif isinstance(s, N.If):
            body = s.body if self.comp.ctrl(s.cond)(E, V) else s.orelse
            self.cpu_block(body, E, V, T, M)
        elif isinstance(s, N.Call):
            callee = s.callee
            if callee.instr is not None:
                from ..semantics.interpreter import compiled

                vals = [self.view(a, E, V) if q.is_data else self.comp.ctrl(a)(E, V)
                        for q, a in zip(callee.params, s.args)]
                compiled(callee).invoke(False, s.srcinfo, *vals)
                return
            E2, V2, T2, M2 = {}, {}, {}, {}
            for q, a in zip(callee.params, s.args):
                if q.is_data:
                    V2[q.name] = self.view(a, E, V)
                    T2[q.name] = q.type.scalar
                    M2[q.name] = M.get(a.name, q.mem)
                else:
                    E2[q.name] = self.comp.ctrl(a)(E, V)
            self.cpu_block(callee.body, E2, V2, T2, M2)
        elif isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction):
            kt = Tracer(self.comp).trace(s, E, V, T, M)
            _Scheduler(kt, self).run()
        elif isinstance(s, (N.Fence, N.Arrive, N.Await, N.BarrierAlloc, N.Pass)):
            pass  # CPU-side synchronization: CPU code is sequential already
        else:
            raise OracleError(f"cannot run {type(s).__name__} at CPU scope")


_OK, _BLOCKED, _DONE = range(3)


class _Scheduler:
    """Random interleaving of one kernel's thread streams (module docstring)."""

    def __init__(self, kt: KernelTrace, run: _Run):
        self.kt = kt
        self.run_ = run
        self.rng = run.rng
        self.keys = sorted(kt.streams)
        self.streams = [kt.streams[k] for k in self.keys]
        self.pc = [0] * len(self.streams)
        self.ready = list(range(len(self.streams)))
        self.pos = list(range(len(self.streams)))
        self.hw = run.hw
        self.pending: list[Inst] = []  # issued, complete at random steps
        self.lazy: list[Inst] = []  # issued, complete only when all threads are blocked
        self.finished = 0

    # ------------------------------------------------------------ ready set
    def make_ready(self, th: int):
        self.pos[th] = len(self.ready)
        self.ready.append(th)

    def unready(self, th: int):
        i = self.pos[th]
        last = self.ready.pop()
        if last != th:
            self.ready[i] = last
            self.pos[last] = i

    def release(self, th: int):
        """``th`` was parked at its current instance, which is now satisfied."""
        self.pc[th] += 1
        if self.pc[th] == len(self.streams[th]):
            self.finished += 1
        else:
            self.make_ready(th)

    # ------------------------------------------------------------ main loop
    def run(self):
        rng = self.rng
        total = len(self.streams)
        while self.finished < total:
            if self.pending and rng.random() < self.run_.p_async:
                self.complete_random()
            if not self.ready:
                if self.pending or self.lazy:
                    self.complete_random(stalled=True)
                    continue
                raise self.deadlock()
            th = self.ready[rng.randrange(len(self.ready))]
            for _ in range(rng.randint(1, self.run_.max_burst)):
                r = self.step(th)
                if r != _OK:
                    break
            if r != _OK:
                self.unready(th)
        while self.pending or self.lazy:
            self.complete_random(stalled=True)

    def advance(self, th: int) -> int:
        self.pc[th] += 1
        if self.pc[th] == len(self.streams[th]):
            self.finished += 1
            return _DONE
        return _OK

    def step(self, th: int) -> int:
        inst = self.streams[th][self.pc[th]]
        k = inst.kind
        if k == ASSIGN:
            inst.fn(inst.E, inst.V)
        elif k == CALL and inst.is_async and inst.n > 1:
            # the threads of an asynchronous collective issue their parts independently
            # (each CTA's share of a multicast): the effect starts at a random arrival,
            # often the first, and nobody waits for the others
            inst.arrived += 1
            if inst.arrived == 1:
                inst.need = 1 if self.rng.random() < 0.5 else self.rng.randint(1, inst.n)
                # the elected lane announces the bytes (mbarrier.expect_tx) as it passes
                # the statement, before any later Arrive of its own, however late the copy
                # itself is issued
                self.expect_tx(inst)
            if inst.arrived == inst.need and inst.state == 0:
                self.fire(inst)
        elif k == CALL or k == FENCE:
            if inst.n > 1:
                inst.arrived += 1
                if inst.arrived < inst.n:
                    inst.parked.append(th)
                    return _BLOCKED
                parked, inst.parked = inst.parked, []
                self.fire(inst)
                for p in parked:
                    self.release(p)
            else:
                self.fire(inst)
        elif k == ARRIVE:
            if self.hw and inst.targets[0][0].slot is not None:
                # each thread's arrival counts once its earlier cp.async copies are done
                # (cp.async.mbarrier.arrive.noinc)
                missing = [o for o in inst.ops if o.state != 2]
                if missing:
                    self.wait_ops(missing, lambda inst=inst: self.hw_arrive(inst))
                else:
                    self.hw_arrive(inst)
            else:
                inst.remaining -= 1
                if inst.remaining == 0:
                    for target in inst.targets:
                        self.arm(target)
        elif k == AWAIT:
            el = inst.elem
            if self.hw and el.slot is not None:
                if el.parity is not None and el.slot.phases & 1 == el.parity:
                    el.slot.waiters.append((el.parity, th))
                    return _BLOCKED
            elif el.completed < inst.need:
                el.waiters.append((inst.need, th))
                return _BLOCKED
        elif k == AWAIT_OPS:
            missing = [o for o in inst.ops if o.state != 2]
            if missing:
                self.wait_ops(missing, lambda th=th: self.release(th))
                return _BLOCKED
        elif k == FREE:
            # a thread past the end of the block may reuse the memory (a later allocation,
            # the next task of a persistent CTA): the overwrite lands at a random later
            # point, like an asynchronous write. The first thread always does, later ones
            # now and then (a few overwrites per allocation)
            if not inst.done or self.rng.random() < 4 / inst.n:
                inst.done = True
                self.defer(_Overwrite(inst.arr))
        return self.advance(th)

    # ------------------------------------------------------------ effects
    def fire(self, inst: Inst):
        if inst.kind == FENCE:
            for op in inst.ops:
                if op.state == 1:
                    self.complete(op)
            return
        if not inst.is_async:
            inst.callee.invoke(True, inst.stmt.srcinfo, *inst.args)
            return
        prev = inst.fifo_prev
        if prev is not None and prev.state == 0:
            # an in-order pipeline issues in order: the issuing thread has passed the
            # earlier instruction, so issuing that one now is an allowed choice
            self.fire(prev)
        # issue: each read-only operand is read now or at completion; a read-modify-write
        # operand (an accumulator, a reduction target) is updated in place at completion
        snap = {}
        for k, (q, a) in enumerate(zip(inst.callee.proc.params, inst.args)):
            if q.is_data and inst.modes.get(q.name) == "read" and \
                    self.rng.random() < self.run_.p_early_read:
                snap[k] = _snapshot(a)
        inst.snap = snap
        inst.state = 1
        self.expect_tx(inst)
        self.defer(inst)

    def expect_tx(self, inst: Inst):
        """complete_tx: the current phase of each target slot cannot complete before
        ``inst`` does (once per instruction instance)."""
        if not self.hw or inst.txs is not None:
            return
        inst.txs = []
        for el in inst.targets:
            if el.slot is not None:
                ph = el.slot.phases
                el.slot.tx[ph] = el.slot.tx.get(ph, 0) + 1
                inst.txs.append((el.slot, ph))

    def defer(self, op):
        # some are slow: they complete only when every thread is blocked (so a missing
        # wait shows even across long stretches of other work)
        (self.lazy if self.rng.random() < self.run_.p_lazy else self.pending).append(op)

    def complete(self, op: Inst):
        chain = []
        while op is not None and op.state == 1:
            chain.append(op)
            op = op.fifo_prev
        for o in reversed(chain):
            if o.kind == FREE:
                self.scribble(o.arr)
                o.state = 2
                continue
            args = list(o.args)
            for k, copy in o.snap.items():
                args[k] = copy
            o.callee.invoke(True, o.stmt.srcinfo, *args)
            o.state = 2
            o.snap = None
            for slot, ph in o.txs or ():
                slot.tx[ph] -= 1
                self.try_phase(slot)
            waiters, o.waiters = o.waiters, []
            for w in waiters:
                w()

    def complete_random(self, stalled: bool = False):
        pend = self.pending
        if stalled and self.lazy:
            if not pend or self.rng.random() < len(self.lazy) / (len(self.lazy) + len(pend)):
                pend = self.lazy
        while pend:
            i = self.rng.randrange(len(pend))
            op = pend[i]
            pend[i] = pend[-1]
            pend.pop()
            if op.state == 1:
                self.complete(op)
                return

    def wait_ops(self, ops: list, then):
        left = [len(ops)]

        def one():
            left[0] -= 1
            if left[0] == 0:
                then()

        for o in ops:
            o.waiters.append(one)

    def arm(self, target: list):
        """All threads arrived on an Arrive instance: its element counts it once the
        attached asynchronous instructions are done."""
        el, ops = target
        missing = [o for o in ops if o.state != 2]
        if missing:
            self.wait_ops(missing, lambda: self.count(el))
        else:
            self.count(el)

    def hw_arrive(self, inst: Inst):
        for el, _ in inst.targets:
            el.slot.pending += 1
            self.try_phase(el.slot)

    def try_phase(self, slot):
        count = self.kt.counts.get(slot.uid, 1 << 30)  # never arrived on: never completes
        while slot.pending >= count and not slot.tx.get(slot.phases):
            slot.pending -= count
            slot.phases += 1
            keep = []
            for parity, th in slot.waiters:
                if slot.phases & 1 != parity:
                    self.release(th)
                else:
                    keep.append((parity, th))
            slot.waiters = keep

    def count(self, el):
        el.completed += 1
        keep = []
        for need, th in el.waiters:
            if need <= el.completed:
                self.release(th)
            else:
                keep.append((need, th))
        el.waiters = keep

    def scribble(self, arr: np.ndarray):
        raw = self.run_.nprng.integers(0, 256, size=arr.nbytes, dtype=np.uint8)
        arr.view(np.uint8).reshape(-1)[...] = raw

    # ------------------------------------------------------------ diagnostics
    def deadlock(self) -> OracleDeadlock:
        seen: dict = {}
        for th, stream in enumerate(self.streams):
            if self.pc[th] < len(stream):
                inst = stream[self.pc[th]]
                key = id(inst)
                if key not in seen:
                    seen[key] = [inst, []]
                seen[key][1].append(self.keys[th])
        blocked = []
        for inst, ths in seen.values():
            task = ths[0][0]
            tids = sorted(t for _, t in ths)
            who = f"task {task} thread{'s' if len(tids) > 1 else ''} " + ranges(tids)
            what = f"{KIND_NAMES[inst.kind]} at {inst.where()}"
            if inst.kind == AWAIT and self.hw and inst.elem.slot is not None:
                sl = inst.elem.slot
                what += (f" (on {inst.elem.key}: mbarrier slot waits for a phase of parity {inst.elem.parity}; "
                         f"{sl.phases} phase(s) completed, {sl.pending} arrival(s) of "
                         f"{self.kt.counts.get(sl.uid, '?')} in the current one)")
            elif inst.kind == AWAIT:
                what += (f" (needs {inst.need} completed Arrive(s), has "
                         f"{inst.elem.completed})")
            elif inst.kind in (CALL, FENCE) and inst.n > 1:
                what += f" (rendezvous: {inst.arrived} of {inst.n} threads arrived)"
            blocked.append((who, what))
        return OracleDeadlock(blocked)


class _Overwrite:
    """A pending reuse of freed shared memory (completes like an asynchronous write)."""

    __slots__ = ("kind", "arr", "state", "fifo_prev", "waiters")

    def __init__(self, arr: np.ndarray):
        self.kind, self.arr, self.state, self.fifo_prev, self.waiters = FREE, arr, 1, None, []


def _snapshot(a: np.ndarray) -> np.ndarray:
    """A copy of the view ``a`` with the same strides (instructions may assert them)."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    copy = np.array(root, copy=True, order="K")
    if copy.strides != root.strides:
        return np.array(a, copy=True)  # unusual layout: strides are lost, values are not
    off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(a.shape, a.dtype, buffer=copy, offset=off, strides=a.strides)


__all__ = ["OracleDeadlock", "OracleError", "run_parallel"]
