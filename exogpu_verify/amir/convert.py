"""GPU IR -> AMIR (paper 5.2): inline windows and CPU-scope calls, lower effects to accesses.

``lower_to_amir(p)`` establishes: every data effect is an ``AmAccess`` on a base variable
(windows resolved to boxes of the base), with its mode (read, write-only, read-write or
atomic; for instruction arguments from a syntactic analysis of the instruction body, paper
5.2.3) and its instruction timeline; accesses to sync-exempt memories (DRAM, grid
constants) are dropped; each allocation is followed by an ``AmFree`` at the end of its
block; Fence/Arrive/Await keep their timelines. It assumes a program accepted by the
frontend (names resolve, shapes match).
"""

from __future__ import annotations

import dataclasses

from ..ir import nodes as N
from ..ir.memories import Memory
from ..ir.timelines import cpu_in_order_instr, cuda_in_order_instr
from ..analysis.bounds import index_bounds
from ..analysis.conditions import decide
from ..ir.affine import const_value
from ..ir.types import ScalarType, index
from . import nodes as A


def param_modes(instr: N.Procedure) -> dict[str, str]:
    """Access mode per data parameter of an instruction: read, write (write-only) or rw
    (paper 5.2.3), from the one body analysis the static analyses also use."""
    from ..analysis.walk import param_effects

    names = {"r": "read", "w": "write", "rw": "rw", "": "read"}
    return {k: names[v] for k, v in param_effects(instr).items()}


def _add(a, b):
    if isinstance(a, N.Const) and a.val == 0:
        return b
    if isinstance(b, N.Const) and b.val == 0:
        return a
    return N.BinOp("+", a, b, index)


def rename_expr(e, ren: dict):
    """Substitute control variables (name -> Expr) in a control expression."""
    if isinstance(e, N.Read) and not e.idx:
        return ren.get(e.name, e)
    if isinstance(e, N.BinOp):
        return N.BinOp(e.op, rename_expr(e.lhs, ren), rename_expr(e.rhs, ren), e.type, e.srcinfo)
    if isinstance(e, N.UnOp):
        return N.UnOp(e.op, rename_expr(e.arg, ren), e.type, e.srcinfo)
    return e


class _Scope:
    """Bindings while converting one (possibly inlined) procedure body."""

    def __init__(self, ctrl: dict, data: dict, barriers: dict, prefix: str, pre=None,
                 windows: frozenset = frozenset()):
        self.ctrl = ctrl          # name -> Expr
        self.data = data          # name -> (base, template)
        self.barriers = barriers  # name -> base name
        self.prefix = prefix
        self.pre = pre            # PreconditionInfo of the procedure being converted
        self.windows = windows    # names bound to windows (window statements, inlined params)

    def child(self):
        return _Scope(dict(self.ctrl), dict(self.data), dict(self.barriers), self.prefix,
                      self.pre, self.windows)

    def fresh(self, name: str) -> str:
        return f"{self.prefix}{name}" if self.prefix else name


class _Converter:
    def __init__(self, p: N.Procedure):
        self.p = p
        self.mems: dict[str, Memory] = {}
        self.inline_count = 0
        self.in_cuda = False
        self.alloc_names: set[str] = set()
        self.shapes: dict = {}  # base name -> its shape (AMIR terms)
        #: accumulator base name -> the wgmma shapes that access it (``_wgmma_shape``)
        self.wgmma_shapes: dict[str, set] = {}
        #: base name -> the memory proxies its atomic accesses go through (``_atomic_proxy``)
        self.atomic_proxies: dict[str, set] = {}
        self.positive = frozenset(p.size_params())

    def unique(self, name: str) -> str:
        """Allocation names unique in the whole AMIR: sibling blocks may reuse a source name
        for different allocations, which the checkers must keep apart."""
        out, k = name, 1
        while out in self.alloc_names:
            k += 1
            out = f"{name}~{k}"
        self.alloc_names.add(out)
        return out

    def base_box(self, sc: _Scope, name: str, idx) -> tuple[str, tuple]:
        """Resolve ``name[idx]`` (idx: Point/Interval list or plain exprs) to the base box."""
        base, tmpl = sc.data[name]
        out, k = [], 0
        idx = list(idx)
        for t in tmpl:
            if t[0] == "pt":
                out.append(t)
                continue
            lo = t[1]
            w = idx[k]
            k += 1
            if isinstance(w, N.Interval):
                out.append(("iv", _add(lo, rename_expr(w.lo, sc.ctrl)),
                            _add(lo, rename_expr(w.hi, sc.ctrl))))
            else:
                pt = w.pt if isinstance(w, N.Point) else w
                out.append(("pt", _add(lo, rename_expr(pt, sc.ctrl))))
        return base, tuple(out)

    def exempt(self, base: str) -> bool:
        m = self.mems.get(base)
        return m is None or (isinstance(m, Memory) and m.sync_exempt)

    def tl(self):
        return cuda_in_order_instr if self.in_cuda else cpu_in_order_instr

    def extents(self, sc: _Scope, name: str) -> list:
        """Extents of the interval dimensions of what ``name`` denotes (in AMIR terms)."""
        _, tmpl = sc.data[name]
        return [_sub(t[2], t[1]) for t in tmpl if t[0] == "iv"]

    def needs_bounds(self, sc: _Scope, name: str) -> bool:
        """The access box (checked against the base) does not already bound this access:
        the name is a window narrower than its base, or its memory is sync-exempt."""
        base, tmpl = sc.data[name]
        if self.exempt(base):
            return True
        if name not in sc.windows:
            return False
        shape = self.shapes.get(base)
        return shape is None or len(shape) != len(tmpl) or not all(
            t[0] == "iv" and const_value(t[1]) == 0 and t[2] == e for t, e in zip(tmpl, shape))

    def bounds(self, sc: _Scope, name: str, idx, si, what: str) -> list:
        ren = [_ren_w(w, sc.ctrl) for w in idx]
        return index_bounds(name, ren, self.extents(sc, name), si, what, show_idx=list(idx))

    def reads_of(self, e, sc: _Scope, out: list, src, checks: list | None = None):
        if isinstance(e, N.Read) and isinstance(e.type, ScalarType):
            if checks is not None and self.needs_bounds(sc, e.name):
                checks += self.bounds(sc, e.name, e.idx, e.srcinfo or src, f"read of {e.name}")
            base, box = self.base_box(sc, e.name, e.idx)
            if not self.exempt(base):
                out.append(A.AmAccess(base, box, "read", self.tl(), (), e.srcinfo or src,
                                      what=f"read of {e.name}"))
            for i in e.idx:
                self.reads_of(i, sc, out, src, checks)
            return
        for attr in ("lhs", "rhs", "arg"):
            if hasattr(e, attr):
                self.reads_of(getattr(e, attr), sc, out, src, checks)
        for a in getattr(e, "args", ()) or ():
            self.reads_of(a, sc, out, src, checks)

    def block(self, stmts, sc: _Scope, prefix=(), field="body", lprefix=None) -> tuple:
        """``prefix``: the IR path of the block in the checked procedure (None inside an
        inlined proc); ``lprefix``: its path in the procedure it belongs to."""
        out: list = []
        allocs: list = []
        sc = sc.child()
        lprefix = prefix if lprefix is None else lprefix
        for k, s in enumerate(stmts):
            path = prefix + ((field, k),) if prefix is not None else None
            lpath = lprefix + ((field, k),)
            checks = self.conditions(sc, s, lpath)
            body = self.stmt(s, sc, allocs, path, lpath, checks)
            checks = [c for c in checks if decide(c.cond, self.positive) is not True]
            if checks:
                out.append(A.AmCheck(tuple(checks), s.srcinfo, path))
            out += body
        for name, si, path in reversed(allocs):
            out.append(A.AmFree(name, si, path))
        return tuple(out)

    def conditions(self, sc: _Scope, s, lpath) -> list:
        """The static analyses' conditions for statement ``s`` (renamed to AMIR terms)."""
        if sc.pre is None:
            return []
        return [c.renamed(lambda e: rename_expr(e, sc.ctrl)) for c in sc.pre.at(lpath)]

    def stmt(self, s, sc: _Scope, allocs: list, path=None, lpath=None, checks=None) -> list:
        si = s.srcinfo
        lpath = path if lpath is None else lpath
        checks = [] if checks is None else checks
        if isinstance(s, N.Pass):
            return []
        if isinstance(s, N.Alloc):
            name = self.unique(sc.fresh(s.name))
            sc.data[s.name] = (name, tuple(("iv", N.Const(0, index), e) for e in s.type.shape))
            self.mems[name] = s.mem
            allocs.append((name, si, path))
            shape = tuple(rename_expr(e, sc.ctrl) for e in s.type.shape)
            self.shapes[name] = shape
            out = [A.AmAlloc(name, shape, s.mem, (), si, path, s.name)]
            if self.in_cuda and s.mem.async_registers:
                # the physical registers held earlier values (the previous task of the
                # persistent loop): an access of every element, so that the first wgmma
                # on them needs wgmma.fence (docs/semantics.md, "wgmma registers")
                box = tuple(("iv", N.Const(0, index), e) for e in shape)
                out.append(A.AmAccess(name, box, "write", cuda_in_order_instr, (), si, path,
                                      f"registers of {s.name} (their use before this "
                                      "allocation)"))
            return out
        if isinstance(s, N.BarrierAlloc):
            name = self.unique(sc.fresh(s.name))
            sc.barriers[s.name] = name
            self.mems[name] = s.mech
            allocs.append((name, si, path))
            return [A.AmAlloc(name, tuple(rename_expr(d.extent, sc.ctrl) for d in s.dims),
                              s.mech, tuple(d.ring_depth for d in s.dims), si, path, s.name)]
        if isinstance(s, (N.Assign, N.Reduce)):
            out: list = []
            bnd: list = []
            self.reads_of(s.rhs, sc, out, si, bnd)
            for i in s.idx:
                self.reads_of(i, sc, out, si, bnd)
            if self.needs_bounds(sc, s.name):
                bnd += self.bounds(sc, s.name, s.idx, si, f"write of {s.name}")
            checks[:0] = bnd
            out = [dataclasses.replace(a, path=path) for a in out]
            base, box = self.base_box(sc, s.name, s.idx)
            if not self.exempt(base):
                mode = "write" if isinstance(s, N.Assign) else "rw"
                out.append(A.AmAccess(base, box, mode, self.tl(), (), si, path,
                                      f"{'write' if mode == 'write' else 'reduction'} of {s.name}"))
            return out
        if isinstance(s, N.WindowStmt):
            checks[:0] = self.bounds(sc, s.rhs.name, s.rhs.idx, si, f"window {s.name}")
            base, box = self.base_box(sc, s.rhs.name, s.rhs.idx)
            sc.data[s.name] = (base, box)
            sc.windows = sc.windows | {s.name}
            return []
        if isinstance(s, N.For):
            it = sc.fresh(s.iter)
            inner = sc.child()
            inner.ctrl[s.iter] = N.Read(it, (), index)
            kind = {"Seq": "seq", "CudaTasks": "task", "CudaThreads": "threads"}[
                type(s.mode).__name__]
            unit = s.mode.unit if isinstance(s.mode, N.CudaThreads) else None
            body = self.block(s.body, inner, path, "body", lpath)
            innermost = kind == "task" and not any(
                isinstance(b, N.For) and isinstance(b.mode, N.CudaTasks) for b in s.body)
            return [A.AmFor(it, rename_expr(s.lo, sc.ctrl), rename_expr(s.hi, sc.ctrl), kind,
                            unit, body, si, path, innermost)]
        if isinstance(s, N.If):
            return [A.AmIf(rename_expr(s.cond, sc.ctrl), self.block(s.body, sc, path, "body",
                                                                    lpath),
                           self.block(s.orelse, sc, path, "orelse", lpath) if s.orelse else (),
                           si, path)]
        if isinstance(s, N.With):
            if isinstance(s.ctx, N.CudaDeviceFunction):
                self.in_cuda = True
                try:
                    body = self.block(s.body, sc, path, "body", lpath)
                finally:
                    self.in_cuda = False
                return [A.AmKernel(s.ctx, body, si, path)]
            return [A.AmWarps(s.ctx, self.block(s.body, sc, path, "body", lpath), si, path)]
        if isinstance(s, N.Fence):
            return [A.AmFence(s.L1, s.L2, si, path)]
        if isinstance(s, N.Arrive):
            return [A.AmArrive(s.L1, tuple(self.bref(b, sc) for b in s.targets), si, path)]
        if isinstance(s, N.Await):
            return [A.AmAwait(self.bref(s.target, sc), s.L2, s.N, si, path)]
        if isinstance(s, N.Call):
            bnd = []
            for prm, a in zip(s.callee.params, s.args):
                if prm.is_data and isinstance(a, N.WindowExpr) and (
                        s.callee.instr is None or self.needs_bounds(sc, a.name)):
                    bnd += self.bounds(sc, a.name, a.idx, si,
                                       f"argument '{prm.name}' of {s.callee.name}()")
            checks[:0] = bnd
            if s.callee.instr is None:
                return self.inline(s, sc)
            return [dataclasses.replace(a, path=path) for a in self.instr_call(s, sc)]
        raise TypeError(f"cannot lower {type(s).__name__}")

    def bref(self, b: N.BarrierRef, sc: _Scope) -> A.AmBarrierRef:
        idx = []
        for w in b.idx:
            if isinstance(w, N.Interval):
                idx.append(("iv", rename_expr(w.lo, sc.ctrl), rename_expr(w.hi, sc.ctrl)))
            else:
                idx.append(("pt", rename_expr(w.pt, sc.ctrl)))
        return A.AmBarrierRef(sc.barriers[b.name], tuple(idx), b.srcinfo)

    def instr_call(self, s: N.Call, sc: _Scope) -> list:
        info = s.callee.instr
        modes = param_modes(s.callee)
        barriers = tuple(self.bref(b, sc) for b in s.barriers)
        reads, writes = [], []
        for prm, arg in zip(s.callee.params, s.args):
            if not prm.is_data:
                continue
            base, box = self.base_box(sc, arg.name, arg.idx)
            if self.exempt(base):
                continue
            mode = "atomic" if prm.name in info.atomic else modes[prm.name]
            acc = A.AmAccess(base, box, mode, info.timeline, barriers, s.srcinfo,
                             what=f"argument '{prm.name}' ({arg.name}) of {s.callee.name}()")
            if _hw_ordered_operand(self.mems.get(base), info.timeline):
                self.wgmma_shapes.setdefault(base, set()).add(_wgmma_shape(s.callee, prm))
            if mode == "atomic":
                self.atomic_proxies.setdefault(base, set()).add(
                    _atomic_proxy(self.mems.get(base), info.timeline))
            (reads if mode == "read" else writes).append(acc)
        return reads + writes

    def inline(self, s: N.Call, sc: _Scope) -> list:
        self.inline_count += 1
        callee = s.callee
        inner = _Scope({}, {}, dict(sc.barriers), f"{callee.name}#{self.inline_count}.",
                       _preconditions(callee),
                       frozenset(prm.name for prm in callee.params if prm.is_data))
        for prm, arg in zip(callee.params, s.args):
            if prm.is_data:
                inner.data[prm.name] = self.base_box(sc, arg.name, arg.idx)
            else:
                inner.ctrl[prm.name] = rename_expr(arg, sc.ctrl)
        return list(self.block(callee.body, inner, None, "body", ()))


def _preconditions(p: N.Procedure):
    """The size-dependent preconditions the static analyses found for ``p`` (None when they
    did not get that far: the static analyses report those programs)."""
    from ..analysis import analyze

    return analyze(p).preconditions


def _sub(a, b):
    if isinstance(b, N.Const) and b.val == 0:
        return a
    if isinstance(a, N.Const) and isinstance(b, N.Const):
        return N.Const(a.val - b.val, index)
    return N.BinOp("-", a, b, index)


def _ren_w(w, ren: dict):
    if isinstance(w, N.Interval):
        return N.Interval(rename_expr(w.lo, ren), rename_expr(w.hi, ren), w.srcinfo)
    if isinstance(w, N.Point):
        return N.Point(rename_expr(w.pt, ren), w.srcinfo)
    return rename_expr(w, ren)


def _hw_ordered_operand(mem, timeline) -> bool:
    """Is an asynchronous instruction's access to ``mem`` ordered by the hardware (a wgmma's
    accumulator, qual ``wgD``)?"""
    if timeline.in_order or not isinstance(mem, Memory):
        return False
    q = mem.qual_tls(timeline)
    return bool(q) and q[0].hw_ordered


def _wgmma_shape(callee: N.Procedure, acc: N.Param) -> tuple:
    """The shape ``m64nNkK`` of a wgmma as far as the hardware's accumulator ordering goes:
    N from the accumulator fragment ``[4, 32, N/8, 2, 2]``, K = 32 bytes of the input type.
    An accumulator of another form (a user instruction) is keyed by its whole signature."""
    shape = tuple(const_value(e) for e in acc.type.shape)
    ins = [q.type.scalar.nbytes for q in callee.params if q.is_data and q is not acc]
    if len(shape) == 5 and None not in shape and ins:
        return ("m64", 8 * shape[2], 32 // ins[0])
    return ("sig", callee.name, tuple((q.name, str(q.type)) for q in callee.params))


def _atomic_proxy(mem, timeline) -> str:
    """The memory proxy of an atomic access to ``mem`` under ``timeline`` (``"generic"``,
    ``"async"``, or ``""`` where the memory has none)."""
    q = mem.qual_tls(timeline) if isinstance(mem, Memory) else None
    return q[0].proxy if q else ""


def _map_accesses(stmts: tuple, f) -> tuple:
    """``stmts`` with every ``AmAccess`` ``a`` replaced by ``f(a)``, at any depth."""
    out = []
    for s in stmts:
        if type(s) is A.AmAccess:
            s = f(s)
        else:
            ch = {k: _map_accesses(getattr(s, k), f)
                  for k in ("body", "orelse") if getattr(s, k, None)}
            if ch:
                s = dataclasses.replace(s, **ch)
        out.append(s)
    return tuple(out)


def _demote_cross_proxy_atomics(stmts: tuple, mixed: dict) -> tuple:
    """``stmts`` with every atomic access to a base of ``mixed`` (base name -> its memory)
    that is not made through the async proxy turned into a read-write mutation.

    PTX memory model: two operations are morally strong (and atomic with respect to each
    other) only if both are performed via the same proxy. A generic-proxy atomic (an
    ``atomicAdd``-like user instruction) and a TMA reduce-add (async proxy) on one element are
    therefore not atomic together; the checkers' atomic rule (earlier atomics need nothing)
    holds only within one proxy. Demoting the generic ones orders each of them against every
    other access of the element (stricter for two generic atomics of such a tensor), and leaves
    the async-proxy reductions atomic among themselves."""
    def demote(s):
        if s.mode != "atomic" or s.name not in mixed:
            return s
        proxy = _atomic_proxy(mixed[s.name], s.instr_tl)
        if proxy == "async":
            return s
        return dataclasses.replace(s, mode="rw", what=(
            f"{s.what} (atomic in the {proxy or 'generic'} proxy only, not with the async "
            "proxy's reductions of the same tensor)"))

    return _map_accesses(stmts, demote)


def _unorder_mixed_shapes(stmts: tuple, mixed: dict) -> tuple:
    """``stmts`` with every hardware-ordered access to an accumulator of ``mixed`` (base name
    -> its memory) marked ``hw_order=False``."""
    return _map_accesses(stmts, lambda s: dataclasses.replace(s, hw_order=False)
                         if s.name in mixed and _hw_ordered_operand(mixed[s.name], s.instr_tl)
                         else s)


def lower_to_amir(p: N.Procedure) -> A.AmProc:
    """Translate a procedure to AMIR; see the module docstring for what it establishes."""
    c = _Converter(p)
    sc = _Scope({}, {}, {}, "", _preconditions(p))
    data_params = []
    for prm in p.params:
        if prm.is_data:
            c.alloc_names.add(prm.name)
            sc.data[prm.name] = (prm.name, tuple(("iv", N.Const(0, index), e)
                                                 for e in prm.type.shape))
            c.mems[prm.name] = prm.mem
            c.shapes[prm.name] = tuple(prm.type.shape)
            data_params.append((prm.name, prm.mem, prm.type.shape))
    body = c.block(p.body, sc)
    mixed = {b: c.mems[b] for b, shapes in c.wgmma_shapes.items() if len(shapes) > 1}
    if mixed:
        body = _unorder_mixed_shapes(body, mixed)
    cross = {b: c.mems[b] for b, ps in c.atomic_proxies.items() if len(ps) > 1}
    if cross:
        body = _demote_cross_proxy_atomics(body, cross)
    ctrl = tuple(prm.name for prm in p.params if not prm.is_data)
    from .phases import add_phase_accesses

    return add_phase_accesses(A.AmProc(p.name, ctrl, tuple(data_params), p.preds, body,
                                       p.srcinfo))
