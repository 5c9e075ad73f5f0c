"""The concrete abstract-machine interpreter: run AMIR at given sizes and find hazards.

``run_amir(am, sizes)`` executes statement instances in sequential program order, each
tagged with the threads that execute it (CPU code: every thread; a device task: a fresh
cluster; ``cuda_threads``/``CudaWarps``: sub-collectives), and keeps an access history per
allocation instance. It raises ``Hazard`` at the first access, free or barrier use that the
history cannot order, and ``CheckError`` for misuse it cannot interpret.

Task reuse (``Machine.loop`` on an innermost ``cuda_tasks`` loop, ``_reuse_locals``,
``_replay``). The tasks of a GEMM-like kernel run the same statement instances on their own
fresh SMEM, registers and barriers and differ only in which GMEM tile they touch. The first
task of such a loop (the *reference*) is run in full while the machine records, in program
order, every statement instance except accesses to *task-local* variables (those allocated
inside the loop body), each with its threads and its environment. Every later task with the
same environment outside the task iterators only *replays* that record: task-local accesses
are skipped; allocations, frees, Fences, Arrives, Awaits and every access to a non-local
variable run for real, with the task iterators set to the task's values. This gives the
same verdict and report as running the task in full, when the body qualifies statically:

(a) no task iterator occurs in a loop bound, an If condition, an allocation shape, a barrier
    index, or the box of an access to a task-local variable, and no loop of the body rebinds
    a task iterator; (b) every barrier the body uses is allocated in the body.

Why: by (a) every task executes the same statement instances with the same threads (tiles
of the same cluster mask), the same iterator values except the task iterators, and the same
task-local boxes; by (b) its barrier elements are fresh and receive the same Arrive/Await
sequence, so their arrive counts, pre-arrives, commit groups and misuse checks are the same.
Each record's state changes only through accesses to its own variable (checks, supersede,
coalescing) and through syncs, whose effect on a record depends only on that record's flags
and on the barrier counts; a task-local record is created by the task and only carries flags
of the task's own threads. So the task-local records of task t evolve exactly as the
reference's, every check on them passes as it did there, and they never influence a
non-local record (nor are they visible after their free at the end of the body). The
non-local part of the state (GMEM records, CPU-scope records, any record of an earlier
task) is updated by exactly the statements that are replayed for real, in the same order.
The first error of task t, if any, is therefore the first one raised by a replayed statement,
with the same threads and iterators in its report. ``steps`` still counts every statement
instance of the program.

Batched access nests (``batch.py``; ``replay.py`` for traces). A ``seq``/``cuda_threads``
nest of plain scalar accesses runs at once as arrays; it leaves families of records
(``family.py``) that the rest of the machine treats as their member records. Only what the
rules of ``rules.py`` and ``machine.py`` treat exactly as families do is batched (soundness
argument and the list in ``batch.py``). A batched run that raises nothing implies that the
per-element run raises nothing; when it raises, ``check.py`` re-runs the program element by
element for the report, so verdicts and reports are the per-element machine's.
"""

from __future__ import annotations

import time

from ..ir.memories import PHASE_MEMORIES, BarrierMechanism, MbarrierIssues, Memory
from .lead import lead_mask
from ..ir.timelines import SYNC_TLS, cuda_stream_sync
from . import nodes as A
from .machine import (ALL, ATOMIC, FULL, GENERIC_BITS, TEMPORAL, Event, Record,
                      VarState, contains, subtract)
from .hints import hazard_hint
from .barrier_ops import BarrierOps
from .reuse import smem_reused_by_async
from .rules import ClusterBarrier, check_free, check_ring_balance, split_for_sync
from .threads import CollectiveError, bits, range_mask, tile, warps
from . import batch as B
from . import replay as R
from .evaluate import (_FREE_BITS, _IN_ORDER_BITS, _LAUNCH_L1, _STREAM_BITS,  # noqa: F401
                       CheckError, Hazard, _bits, _free_names, _mutated_names,
                       _sync_bits, _sync_bits_full, box_and_key, box_of,
                       ev)


#: default for ``Machine(reuse_tasks=None)``; tests switch it off to compare both runs
REUSE_TASKS = True
#: default for ``Machine(batch=None)``: run access nests batched (``batch.py``)
BATCH_NESTS = True

_LEAF = frozenset({A.AmAccess, A.AmFence, A.AmArrive, A.AmAwait, A.AmAlloc, A.AmFree,
                   A.AmCheck})


class Machine(BarrierOps):
    def __init__(self, am: A.AmProc, sizes: dict, deadline: float | None = None,
                 reuse_tasks: bool | None = None, batch: bool | None = None):
        self.am = am
        #: SMEM allocations whose freed bytes an async-proxy write may reuse (amir/reuse.py):
        #: their generic accesses must reach the async proxy before the free
        self.async_reuse = smem_reused_by_async(am)
        self.cluster_barrier = ClusterBarrier()  # barrier.cluster arrives pending per task
        self.ring_usage: dict = {}  # mbarrier ring -> (elements in use, first free)
        #: (ring, task) -> {pre-arrived element key: state}: the last lifetime's Arrives on
        #: ``extent + v`` that the next lifetime's Awaits on ``v`` wait for (``continues``)
        self.ring_tail: dict = {}
        #: variables never mutated anywhere: reads of them cannot take part in a hazard
        #: (reads are only checked against later mutations and, for SMEM, frees)
        self.read_only = frozenset()
        self._mutated = _mutated_names(am.body, set())
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
        self.finished: set = set()  # records of finished tasks, for the kernel-exit fence
        self.task_iters: list[str] = []
        #: task reuse (see ``_run_tasks`` in the module docstring); False runs every task
        self.reuse_tasks = REUSE_TASKS if reuse_tasks is None else reuse_tasks
        self.replayed_tasks = 0
        self._reuse_info: dict = {}
        self._traces: dict = {}
        self._trace = None  # while recording a reference task: [(stmt, mask, env)]
        self._trace_local: frozenset = frozenset()
        #: batched access nests (``batch.py``): how many ran batched, the families of each
        #: running task, and the table of thread masks families refer to by index
        self.batch = BATCH_NESTS if batch is None else batch
        self.batched_nests = 0
        self.fam_index: dict[int, set] = {}
        self.masks: list[int] = []
        self._mask_ids: dict[int, int] = {}
        self._nest_shapes: dict = {}  # batch._shape results per (nest, mask, trips)
        # bound methods, so that subclasses and patched methods are honoured
        self._dispatch = {
            A.AmAccess: self.access, A.AmFor: self.loop, A.AmIf: self._if,
            A.AmFence: self._fence_stmt, A.AmArrive: self.arrive, A.AmAwait: self.await_,
            A.AmAlloc: self.alloc, A.AmFree: self.free, A.AmWarps: self.with_warps,
            A.AmKernel: self.kernel, A.AmCheck: self.check, R.NestEntry: self._replay_nest,
        }

    def mask_id(self, mask: int) -> int:
        k = self._mask_ids.get(mask)
        if k is None:
            k = self._mask_ids[mask] = len(self.masks)
            self.masks.append(mask)
        return k

    # ------------------------------------------------------------ records
    def _register(self, rec: Record, task: int):
        if task == ALL:
            self.cpu_records.add(rec)
        else:
            self.index.setdefault(task, set()).add(rec)

    def _unregister(self, rec: Record):
        self.cpu_records.discard(rec)
        for t in rec.tasks() | {rec.event.task}:  # a part record may hold no flags yet
            s = self.index.get(t)
            if s is not None:
                s.discard(rec)

    def _records_for(self, task: int):
        if task == ALL:
            out = set(self.cpu_records) | self.finished
            for s in self.index.values():
                out |= s
            return out
        own = self.index.get(task)
        if not self.cpu_records:
            return list(own) if own else ()
        return (own or set()) | self.cpu_records

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
        tr = self._trace
        if tr is not None and type(s) in _LEAF and \
                not (type(s) is A.AmAccess and s.name in self._trace_local):
            tr.append((s, self.mask, dict(self.env)))
        try:
            fn = self._dispatch[type(s)]
        except KeyError:
            raise TypeError(type(s).__name__) from None
        fn(s)

    def check(self, s: A.AmCheck):
        """Every condition of the statement that follows holds at this instance."""
        env = self.env
        for c in s.conds:
            if not ev(c.cond, env):
                vals = {k: ev(e, env) for k, e in c.shows}
                msg = c.message(vals)
                iters = {k: v for k, v in env.items()
                         if isinstance(k, str) and k not in self.am.params}
                if iters:
                    msg += " at " + ", ".join(f"{k}={v}" for k, v in iters.items())
                raise CheckError(c.kind, msg, c.srcinfo, c.hint)

    def _if(self, s: A.AmIf):
        self.block(s.body if ev(s.cond, self.env) else s.orelse)

    def _fence_stmt(self, s: A.AmFence):
        if self.cfg is not None and self.cfg.clusterDim > 1 and \
                self.mask == range_mask(0, self.cfg.blockDim * self.cfg.clusterDim):
            self.cluster_barrier.fence(self.task, s)
        self.fence(s.L1, s.L2, self.task, self.mask, s.srcinfo)

    # ------------------------------------------------------------ task reuse
    def _reuse_locals(self, s: A.AmFor):
        """The task-local names of innermost task loop ``s`` if its tasks may reuse the first
        task's trace (see ``_run_tasks``), else None. Computed once per loop node."""
        hit = self._reuse_info.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1]
        titers = frozenset(self.task_iters) | {s.iter}
        local: set = set()

        def allocs(stmts):
            for x in stmts:
                if type(x) is A.AmAlloc:
                    local.add(x.name)
                for sub in (getattr(x, "body", None), getattr(x, "orelse", None)):
                    if sub:
                        allocs(sub)

        allocs(s.body)

        def inv(*es):  # no task iterator in these expressions
            for e in es:
                names = _free_names(e)
                if names is None or names & titers:
                    return False
            return True

        def inv_box(box):
            return all(inv(*w[1:]) for w in box)

        def inv_ref(ref):
            return ref.name in local and inv_box(ref.idx)

        def ok(stmts):
            for x in stmts:
                t = type(x)
                if t is A.AmFor:
                    if x.iter in titers or not inv(x.lo, x.hi) or not ok(x.body):
                        return False
                elif t is A.AmIf:
                    if not inv(x.cond) or not ok(x.body) or not ok(x.orelse):
                        return False
                elif t is A.AmWarps:
                    if not ok(x.body):
                        return False
                elif t is A.AmAlloc:
                    if not inv(*x.shape):
                        return False
                elif t is A.AmAccess:
                    if x.name in local and not inv_box(x.box):
                        return False
                    if not all(inv_ref(b) for b in x.barriers):
                        return False
                elif t is A.AmArrive:
                    if not all(inv_ref(b) for b in x.targets):
                        return False
                elif t is A.AmAwait:
                    if not inv_ref(x.target):
                        return False
                elif t not in (A.AmFence, A.AmFree, A.AmCheck):
                    return False  # (an AmCheck is stateless: replaying it is running it)
            return True

        out = frozenset(local) if self.reuse_tasks and ok(s.body) else None
        self._reuse_info[id(s)] = (s, out)
        return out

    def _replay(self, trace, tvals: dict, nsteps: int):
        """Run the recorded non-local statement instances of a reference task for the
        current task: task iterators take this task's values, threads are the recorded
        sub-collectives (identical in every task)."""
        saved_env, saved_mask = self.env, self.mask
        dispatch = self._dispatch
        try:
            for s, mask, env in trace:
                env.update(tvals)
                self.env = env
                self.mask = mask
                dispatch[type(s)](s)
        finally:
            self.env, self.mask = saved_env, saved_mask
        self.steps += nsteps
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise TimeoutError

    def _batched(self, s: A.AmFor) -> bool:
        """Run access nest ``s`` batched if ``batch.run_nest`` can (see ``batch.py``)."""
        n = B.run_nest(self, s)
        if n is None:
            return False
        self.steps += n
        self.batched_nests += 1
        if self._trace is not None:
            # a reference task: later tasks replay the nest's non-task-local statements
            info = B.nest_info(s)
            only = frozenset(x.name for x, _ in info.stmts) - self._trace_local
            if only or info.checks:  # (the checks run in every task, as AmCheck entries do)
                self._trace.append((R.NestEntry(s, only), self.mask, dict(self.env)))
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise TimeoutError
        return True

    def _replay_nest(self, e: R.NestEntry):
        if B.run_nest(self, e.node, e.only) is None:
            R.run_elementwise(self, e.node, e.only)

    def loop(self, s: A.AmFor):
        if self.batch and s.kind != "task" and (self.cfg is None) == (self.task == ALL) \
                and self._batched(s):
            return
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
            local = self._reuse_locals(s) if lo < hi else None
            titers = self.task_iters + [s.iter]
            rkey = None
            if local is not None and self._trace is None:
                try:
                    rkey = (id(s), self.named, cluster,
                            frozenset((k, v) for k, v in env.items() if k not in titers))
                except TypeError:  # an unhashable value: run every task
                    rkey = None
            plan = None  # the reference trace without what these tasks need not replay
            plan_stop = lo  # ... for the tasks before this one (pruned a window at a time)
            for i in range(lo, hi):
                env[s.iter] = i
                self.ntasks += 1
                self.task, self.mask = self.ntasks, cluster
                self.task_desc[self.ntasks] = ", ".join(f"{k}={env[k]}" for k in titers)
                ref = self._traces.get(rkey) if rkey is not None else None
                if ref is not None:
                    self.replayed_tasks += 1
                    if plan is None or (self.batch and i >= plan_stop):
                        plan_stop = min(hi, i + R.PRUNE_WINDOW)
                        plan = R.prune(self, ref[0], {k: env[k] for k in self.task_iters},
                                       s.iter, i, plan_stop) if self.batch else ref[0]
                    self._replay(plan, {k: env[k] for k in titers}, ref[1])
                elif rkey is not None:
                    # the reference task: run it fully, recording what later tasks replay
                    steps0 = self.steps
                    self._trace, self._trace_local = [], local
                    try:
                        self.block(s.body)
                        trace = self._trace
                    finally:
                        self._trace, self._trace_local = None, frozenset()
                    self._traces[rkey] = (trace, self.steps - steps0, s)
                else:
                    self.block(s.body)
                self.cluster_barrier.end_task(self.task)
                for k in [k for k in self.ring_tail if k[1] == self.task]:
                    del self.ring_tail[k]
                # nothing inside the kernel can synchronize a finished task's records any
                # more, but the kernel-exit stream fence must still reach them
                done = self.index.pop(self.task, None)
                self.fam_index.pop(self.task, None)
                if done:
                    self.finished |= done
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
        self.finished = set()

    # ------------------------------------------------------------ allocation
    def alloc(self, s: A.AmAlloc):
        shape = tuple(ev(e, self.env) for e in s.shape)
        if isinstance(s.mem, BarrierMechanism):
            elems = self.ring_tail.pop((s.name, self.task), None) if s.continues else None
            self.barriers[s.name] = {"mech": s.mem, "shape": shape, "ring": s.ring,
                                     "elems": elems or {}, "display": s.display,
                                     "src": s.srcinfo, "continues": s.continues}
            return
        st = self.vars[s.name] = VarState(s.display or s.name, s.mem, shape, self.task)
        st.untracked_reads = s.name not in self._mutated and not s.mem.is_shared

    def free(self, s: A.AmFree):
        if s.name in self.barriers:
            b = self.barriers.pop(s.name)
            check_ring_balance(self, b, s)
            if b.get("continues"):
                self._keep_tail(s.name, b)
            return
        v = self.vars.pop(s.name, None)
        if v is None:
            return
        check_free(self, v, s)
        for f in list(v.fams or ()):
            B.drop_family(self, f)
        for rec in list(v.mutates) + list(v.reads):
            self._unregister(rec)
            rec.dead = True

    def _param_state(self, name: str) -> VarState:
        for pname, mem, shape in self.am.data_params:
            if pname == name:
                st = VarState(name, mem, tuple(ev(e, self.env) for e in shape), ALL)
                st.untracked_reads = name not in self._mutated and not mem.is_shared
                self.vars[name] = st
                return st
        raise CheckError("usage", f"unknown variable {name}")

    # ------------------------------------------------------------ accesses
    def quals_of(self, v, s: A.AmAccess):
        """(qualitative timelines, their bits, the memory's qualifier mask) of access ``s``
        to variable state ``v``, cached per memory and instruction timeline."""
        ck = (id(v.mem), s.instr_tl.name)
        cached = self._qcache.get(ck)
        if cached is None:
            q = v.mem.qual_tls(s.instr_tl)
            cached = self._qcache[ck] = (q, tuple(x.bit for x in q) if q else (),
                                         frozenset(x.bit for x in v.mem.qual_mask()))
        return cached

    def access(self, s: A.AmAccess):
        v = self.vars.get(s.name) or self._param_state(s.name)
        box, pkey = box_and_key(s, self.env)
        for (lo, hi), ext in zip(box, v.shape):
            if lo < 0 or hi > ext or lo > hi:
                raise CheckError("bounds", f"out-of-bounds access {v.name}"
                                 f"[{', '.join(f'{a}:{b}' for a, b in box)}] of an array of "
                                 f"shape {list(v.shape)} ({s.what})", s.srcinfo)
        quals, qbits, qmask = self.quals_of(v, s)
        if quals is None:
            raise CheckError("sync", f"implementation limitation: no qualitative timeline for "
                             f"{v.name} @ {v.mem} accessed by instr-tl {s.instr_tl}", s.srcinfo)
        conv = quals[0].convergent
        if s.lead is not None and self.cfg is not None:
            # a copy's issue by its lead threads (amir/lead.py): the machine runs the access
            # on those threads only
            saved = self.mask
            self.mask = lead_mask(saved, s.lead, self.cfg.blockDim, self.cfg.clusterDim)
            if not self.mask:  # no lead thread in the CTA it names
                self.mask = saved
                return None
            try:
                return self._access_checked(s, v, box, pkey, quals, qbits, qmask, conv)
            finally:
                self.mask = saved
        return self._access_checked(s, v, box, pkey, quals, qbits, qmask, conv)

    def _access_checked(self, s, v, box, pkey, quals, qbits, qmask, conv):
        task, mask = self.task, self.mask
        mode = s.mode
        ev_new = None

        def fail(kind, rec, need):
            nonlocal ev_new
            ev_new = ev_new or self.event(s.srcinfo, s.what, quals)
            who = "any" if conv else "every"
            raise Hazard(kind, v.name, rec.box, rec.event, ev_new,
                         f"no synchronization gives {who} executing thread '{need}' visibility "
                         f"of the earlier access on {' or '.join(q.name for q in quals)}",
                         hint=hazard_hint(rec, ev_new, kind,
                                          phases=v.mem in PHASE_MEMORIES,
                                          issues=v.mem is MbarrierIssues))

        lazy = quals[0].lazy  # touches nothing now: checked at the access it prepares
        if v.fams and not lazy:  # batched records (batch.py) on this box
            B.touch_families(self, v, box, mode, task, mask, qbits, conv)
        # (batch._need and batch._plan_var apply these rules to batched nests: keep in step)
        if mode != "read" and not lazy:
            # reads first: they are later in program order than the mutation they read (a
            # mutation supersedes older reads), so the report names the closest conflict
            for rec in v.reads.overlapping(box, pkey):
                flag = ATOMIC if mode == "atomic" else TEMPORAL
                if not rec.has(flag, qbits, task, mask, conv):
                    fail("WAR", rec, "temporal")
        for rec in () if lazy else v.mutates.overlapping(box, pkey):
            if mode == "atomic":
                if not rec.atomic and not rec.has(ATOMIC, qbits, task, mask, conv):
                    fail("WAW", rec, "atomic")
            elif mode in ("read", "rw"):
                if not rec.has(FULL, qbits, task, mask, conv):
                    fail("RAW" if mode == "read" else "WAW", rec, "full")
            elif not rec.has(TEMPORAL, qbits, task, mask, conv):
                fail("WAW", rec, "temporal")
        # update the history
        if mode == "read" and v.untracked_reads:
            if s.barriers:  # only for the trailing-barrier check
                new = Record(box, False, False, ev_new or self.event(s.srcinfo, s.what, quals),
                             qmask, v.name)
                for b in s.barriers:
                    for key, st in self._elements(b):
                        st.trailing.append((new, st.arrives))
            return
        if mode == "read" and not s.barriers and self._coalesce(v, s, box, pkey):
            return
        new = Record(box, mode != "read", mode == "atomic",
                     ev_new or self.event(s.srcinfo, s.what, quals), qmask, v.name, pkey)
        q0 = qbits[0]
        if not conv and task != ALL and mask & (mask - 1):
            # a collective's access of a non-convergent qual: each thread did a part
            new.part, new.q0 = True, q0
            new.flags, new.init_flags = {}, {}
        elif s.instr_tl.in_order or (q0 in _IN_ORDER_BITS and s.hw_order):
            new.flags = {(q0, 0): {task: mask}, (q0, 1): {task: mask}, (q0, 2): {task: mask},
                         (q0, 3): {task: mask}}
            new.init_flags = {(q0, 0): {task: mask}, (q0, 1): {task: mask},
                              (q0, 2): {task: mask}, (q0, 3): {task: mask}}
        else:
            new.flags = {(q0, 3): {task: mask}}
            new.init_flags = {(q0, 3): {task: mask}}
        if q0 in GENERIC_BITS:
            new.prx = mask
        if mode in ("write", "rw") and not lazy:
            self._supersede(v.mutates, box, pkey)
            self._supersede(v.reads, box, pkey)
        (v.mutates if mode != "read" else v.reads).add(new)
        self._register(new, task)
        if mode == "read" and not s.barriers:
            v.last_read = (s, task, mask, new)
        for b in s.barriers:
            for key, st in self._elements(b):
                new.pending.append((st, st.arrives, FULL))
                st.pending.append((new, st.arrives, FULL))
                st.trailing.append((new, st.arrives))

    def _coalesce(self, v: VarState, s: A.AmAccess, box, pkey) -> bool:
        """Extend the previous read record of the same statement by the same threads when
        its box is adjacent to ``box`` along one dimension and no synchronization touched it
        since (its flags are still the initial ones, and no Arrive enrolled it in a barrier
        phase or commit group, which leaves the flags as they are). Such records behave
        identically in every later check and sync, so their union is exact; only the report
        keeps the first instance's iterators. This makes e.g. the k-slices of one wgmma
        operand one record."""
        last = v.last_read
        if last is None or pkey is not None:
            return False
        ls, ltask, lmask, rec = last
        if ls is not s or ltask != self.task or lmask != self.mask or rec.pending \
                or rec.enrolled or rec.dead or rec.flags != rec.init_flags or \
                rec.own != lmask or \
                (rec.prx is not None and rec.prx != lmask):
            return False
        rb = rec.box
        d = -1
        for j, ((alo, ahi), (blo, bhi)) in enumerate(zip(rb, box)):
            if alo == blo and ahi == bhi:
                continue
            if d >= 0 or not (ahi == blo or bhi == alo):
                return False
            d = j
        if d < 0:
            return True  # the same box again: nothing new to record
        lo = min(rb[d][0], box[d][0])
        hi = max(rb[d][1], box[d][1])
        rec.box = rb[:d] + ((lo, hi),) + rb[d + 1:]
        return True

    def _supersede(self, store, box, pkey=None):
        for r in store.overlapping(box, pkey):
            store.remove(r)
            self._unregister(r)
            r.dead = True
            if contains(box, r.box):
                continue
            for piece in subtract(r.box, box):
                self._add_piece(store, r, piece)

    def _add_piece(self, store, r, piece):
        """The part ``piece`` of the superseded record ``r`` as a record of its own, with
        ``r``'s flags and pending barrier counts (a part record may hold no flags)."""
        nr = r.copy_with_box(piece)
        self.adopt(store, nr, nr.event.task)

    def adopt(self, store, nr, task):
        """Add the new record ``nr`` to ``store``: registered for ``task`` and every task it
        holds flags for, and counted in the pending barrier counts it carries."""
        store.add(nr)
        for t in nr.tasks() | {task}:
            self._register(nr, t)
        for st, count, lvl in nr.pending:
            # the element state itself: after the free of its barrier, a new lifetime's
            # element of the same index is another phase (a continued ring hands its state on)
            st.pending.append((nr, count, lvl))

    # ------------------------------------------------------------ synchronization
    def _fence_bits(self, full1, temp1, full2, temp2, task, mask, proxy=True, srcinfo=None):
        """A Fence given by bit sets (kernel boundaries: the stream fence, a proxy fence)."""
        if self.fam_index:
            B.prepare_sync(self, task, mask)
        full1s = frozenset(full1)
        for rec in self._records_for(task):
            if rec.part:
                split_for_sync(self, rec, task, mask, temp1)
            lvl = rec.sync_level(task, mask, full1s, temp1)
            if lvl is None:
                continue
            rec.augment(task, mask, full2, temp2, lvl)
            if rec.prx is not None and lvl & 3 == FULL:
                rec.fenced(task, mask, proxy, srcinfo)
            self._register(rec, task)

    def fence(self, L1, L2, task, mask, srcinfo=None):
        full1, temp1 = _sync_bits_full(L1)
        full2, temp2 = _sync_bits(L2)
        proxy = L2.proxy_fence
        if self.fam_index:
            B.prepare_sync(self, task, mask)
        for rec in self._records_for(task):
            if rec.part:
                split_for_sync(self, rec, task, mask, temp1)
            lvl = rec.sync_level(task, mask, full1, temp1)
            if lvl is None:
                continue
            rec.augment(task, mask, full2, temp2, lvl)
            if rec.prx is not None and lvl & 3 == FULL:
                rec.fenced(task, mask, proxy, srcinfo)
            self._register(rec, task)


__all__ = ["Machine", "Hazard", "CheckError", "SYNC_TLS", "Memory"]
