"""Tracing a kernel for the parallel oracle: per-thread instruction streams over real arrays.

``trace_kernel`` walks one ``CudaDeviceFunction`` body in sequential program order, like the
abstract machine (``interp.py``) does, but keeps the data: every statement instance becomes
an ``Inst`` with the threads that execute it (natural ids of ``threads.py``, computed with
``tile``/``warps``), its control environment and its numpy views (windows of the current
allocation instances). Control flow never depends on data (conditions and bounds are
control expressions), so the set of instances a parallel execution runs is exactly the set
the sequential walk meets; only their order differs. The walk also resolves, once, every
pairing the scheduler needs at run time:

* an mbarrier or cluster-sync ``Await`` waits until its element has at least as many
  completed ``Arrive`` instances as precede it in program order (plus a pre-arrival) -- a
  count, as the hardware phase counter is;
* an asynchronous instruction with trailing barriers ``>> z[i]`` is attached to the *next*
  ``Arrive`` instance on ``z[i]`` (the phase it completes on, PTX ``complete_tx``);
* an ``Arrive`` or ``Fence`` whose first timeline has ``Sm80_cp_async`` in its full set
  waits for the earlier ``cp.async`` copies of its threads (``cp.async.mbarrier.arrive``,
  ``cp.async.wait_all``);
* a commit-group ``Arrive`` closes a group of the earlier asynchronous instructions of its
  threads that its timeline names; ``Await(cg, L2, N)`` waits for all groups of that
  collective but the ``N`` most recent.

Statement bodies are compiled once per IR node into Python closures that compute with the
precision rule of ``semantics/__init__.py`` (the same numpy operations, in the same order,
as the sequential interpreter's scalar code), so values agree bitwise.
"""

from __future__ import annotations

import numpy as np

from ..errors import InternalError
from ..ir import nodes as N
from ..ir.memories import BarrierMechanism
from ..ir.timelines import QUAL_TLS, Sm80_cp_async_instr, wgmma_async_instr
from ..ir.types import R, ControlType, ScalarType, promote
from ..semantics.interpreter import compiled
from ..semantics.runtime import NAMESPACE, alloc, window
from ..semantics.vectorize import data_reads, is_data_read
from .convert import param_modes
from .threads import CollectiveError, bits, range_mask, tile, warps

_SM80 = QUAL_TLS["sm80"]

# instance kinds
ASSIGN, CALL, FENCE, ARRIVE, AWAIT, AWAIT_OPS, FREE = range(7)
KIND_NAMES = ("assignment", "instruction call", "Fence", "Arrive", "Await", "Await", "free")


class OracleError(Exception):
    """The oracle cannot run this program (it is outside what the oracle models)."""


# ------------------------------------------------------------------ statement compiler

_CTRL_OPS = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%", "<": "<", "<=": "<=",
             ">": ">", ">=": ">=", "==": "==", "!=": "!=", "and": "and", "or": "or"}


class _Code:
    """Python source for one statement or expression, with its bound constants."""

    def __init__(self, types: dict):
        self.types = types  # data name -> ScalarType
        self.ns = dict(NAMESPACE)
        self.n = 0

    def bind(self, value) -> str:
        self.n += 1
        name = f"_k{self.n}"
        self.ns[name] = value
        return name

    def ctrl(self, e) -> str:
        if isinstance(e, N.Const):
            return repr(e.val if isinstance(e.val, bool) else int(e.val))
        if isinstance(e, N.Read) and not is_data_read(e):
            return f"E[{e.name!r}]"
        if isinstance(e, N.StrideExpr):
            return f"(V[{e.name!r}].strides[{e.dim}] // V[{e.name!r}].itemsize)"
        if isinstance(e, N.BinOp) and e.op in _CTRL_OPS:
            return f"({self.ctrl(e.lhs)} {_CTRL_OPS[e.op]} {self.ctrl(e.rhs)})"
        if isinstance(e, N.UnOp) and e.op in ("-", "not"):
            return f"({e.op} {self.ctrl(e.arg)})"
        raise InternalError(f"oracle: not a control expression: {e!r}")

    def access(self, name: str, idx) -> str:
        return f"V[{name!r}][({''.join(self.ctrl(i) + ', ' for i in idx)})]"

    def const(self, val, t: ScalarType) -> str:
        with np.errstate(all="ignore"):
            return self.bind(np.asarray(val).astype(t.np_dtype)[()])

    def precision(self, dest: ScalarType, e) -> ScalarType:
        t = dest
        for r in data_reads(e):
            t = promote(t, self.types[r.name])
        for c in _typed_consts(e):
            t = promote(t, c)
        return t

    def data(self, e, t: ScalarType) -> str:
        D = self.bind(t.np_dtype)
        if isinstance(e, N.Const):
            return self.const(e.val, t)
        if is_data_read(e):
            code = self.access(e.name, e.idx)
            return code if self.types[e.name] == t else f"{code}.astype({D})"
        if isinstance(e.type, ControlType):
            return f"_ctl({self.ctrl(e)}, {D})"
        if isinstance(e, N.UnOp) and e.op == "-":
            return f"(-{self.data(e.arg, t)})"
        if isinstance(e, N.BinOp):
            a, b = self.data(e.lhs, t), self.data(e.rhs, t)
            if e.op in ("+", "-", "*") or (e.op == "/" and t.is_float):
                return f"({a} {e.op} {b})"
            if e.op in ("/", "%"):
                return f"{'_cdiv' if e.op == '/' else '_cmod'}({a}, {b})"
        if isinstance(e, N.BuiltIn):
            codes = [self.data(a, t) for a in e.args]
            if e.fn == "relu":
                return f"_relu_s({codes[0]}, {self.const(0, t)})"
            if e.fn == "select":
                return f"_select_s({', '.join(codes)})"
            if e.fn in ("sqrt", "exp") and not t.is_float:
                return f"np.{e.fn}({codes[0]}).astype({D})"
            return f"np.{e.fn}({', '.join(codes)})"
        raise InternalError(f"oracle: unsupported data expression {e!r}")

    def function(self, body: str):
        src = f"def _f(E, V):\n    {body}\n"
        exec(compile(src, "<exogpu oracle>", "exec"), self.ns)  # noqa: S102 - from our IR
        return self.ns["_f"]


def _typed_consts(e) -> list:
    out = []
    if isinstance(e, N.Const) and isinstance(e.type, ScalarType) and e.type != R:
        out.append(e.type)
    for c in (getattr(e, "lhs", None), getattr(e, "rhs", None), getattr(e, "arg", None)):
        if c is not None:
            out += _typed_consts(c)
    for c in getattr(e, "args", ()) or ():
        out += _typed_consts(c)
    return out


class Compiler:
    """Closures for statements and control expressions, cached per IR node."""

    def __init__(self):
        self._cache: dict[int, tuple] = {}

    def _get(self, node, make):
        hit = self._cache.get(id(node))
        if hit is None or hit[0] is not node:
            hit = self._cache[id(node)] = (node, make())
        return hit[1]

    def assign(self, s, types: dict):
        """``f(E, V)`` performing ``s`` (an Assign or Reduce) on the current values."""

        def make():
            c = _Code(types)
            dest = types[s.name]
            t = c.precision(dest, s.rhs)
            rhs = c.data(s.rhs, t)
            target = c.access(s.name, s.idx)
            if isinstance(s, N.Reduce):
                cur = target if dest == t else f"{target}.astype({c.bind(t.np_dtype)})"
                rhs = f"({cur} + {rhs})"
            if dest != t:
                rhs = f"({rhs}).astype({c.bind(dest.np_dtype)})"
            return c.function(f"{target} = {rhs}")

        return self._get(s, make)

    def ctrl(self, e):
        """``f(E, V)`` evaluating a control expression."""

        def make():
            c = _Code({})
            return c.function(f"return {c.ctrl(e)}")

        return self._get(e, make)


# ------------------------------------------------------------------ trace records


class Inst:
    """One statement instance: executed by the threads ``mask`` of device task ``task``."""

    __slots__ = ("kind", "task", "mask", "n", "stmt", "fn", "E", "V", "callee", "args",
                 "modes", "is_async", "quals", "fifo_prev", "state", "waiters", "snap",
                 "arrived", "parked", "ops", "targets", "remaining", "elem", "need", "arr",
                 "done", "seq", "issuer_task")

    def __init__(self, kind: int, task: int, mask: int, stmt):
        self.kind = kind
        self.task = task
        self.mask = mask
        self.n = bin(mask).count("1")
        self.stmt = stmt
        self.arrived = 0
        self.parked: list = []
        self.done = False

    def where(self) -> str:
        si = getattr(self.stmt, "srcinfo", None)
        return f"{getattr(si, 'file', '?')}:{getattr(si, 'line', '?')}"


class Elem:
    """One barrier element (an allocation instance and a virtual index)."""

    __slots__ = ("key", "count", "pre", "pending_attach", "completed", "waiters", "groups")

    def __init__(self, key, pre: bool):
        self.key = key
        self.count = 0  # Arrive instances traced so far (program order)
        self.pre = pre
        self.pending_attach: list = []  # async ops waiting for the next Arrive instance
        self.completed = 1 if pre else 0  # run time: completed Arrive instances
        self.waiters: list = []  # run time: (need, thread)
        self.groups: list = []  # commit groups: list of op lists


class BarrierInst:
    __slots__ = ("name", "mech", "shape", "ring", "elems", "uid")

    def __init__(self, name, mech: BarrierMechanism, shape, ring, uid: int):
        self.name, self.mech, self.shape, self.ring, self.uid = name, mech, shape, ring, uid
        self.elems: dict = {}


class KernelTrace:
    """All instances of one kernel launch, per task, plus each thread's stream."""

    def __init__(self, cfg: N.CudaDeviceFunction):
        self.cfg = cfg
        self.streams: dict[tuple[int, int], list[Inst]] = {}
        self.ops: list[Inst] = []
        self.ntasks = 0
        self.frees: list[Inst] = []


class Tracer:
    """Walks a kernel body in program order; see the module docstring."""

    def __init__(self, comp: Compiler, rng):
        self.comp = comp
        self.rng = rng
        self.uid = 0

    def trace(self, s: N.With, E: dict, V: dict, T: dict, M: dict) -> KernelTrace:
        self.kt = KernelTrace(s.ctx)
        self.cfg = s.ctx
        self.tasks(s.body, E, V, T, M)
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
            out.append(el)
        return out

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
                B = {**B, s.name: BarrierInst(s.name, s.mech, shape,
                                              tuple(d.ring_depth for d in s.dims), self.uid)}
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
            for ref in s.barriers:
                for el in self.elements(ref, E, V, B):
                    el.pending_attach.append(inst)
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
        inst.targets = []
        for el in elems:
            el.count += 1
            inst.targets.append([el, list(el.pending_attach) + extra])
            el.pending_attach = []
        inst.remaining = inst.n
        self.emit(inst)

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
           "Inst", "KIND_NAMES", "KernelTrace", "OracleError", "Tracer"]
