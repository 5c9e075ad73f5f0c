"""Parsing of calls and synchronization statements (mixin of the procedure parser).

Checks made here are the ones visible in one statement: argument count, kinds, precisions,
memories and constant shapes of call arguments; the callee's scope; trailing barriers only
for instructions that declare a barrier mechanism; the shapes of ``Fence``, ``Arrive`` and
``Await``. Whole-program barrier rules (every barrier arrived and awaited, accepted timelines
per mechanism, multicast consistency) belong to the static analyses.
"""

from __future__ import annotations

import ast

from ..ir import nodes as N
from ..ir.affine import const_value, extent  # noqa: F401  (extent: re-exported)
from ..ir.timelines import InstrTL, SyncTL
from ..ir.types import bool_, int_, size
from .exprs import _describe


def subst(e, env: dict):
    """Replace control variable reads by expressions (callee params -> call arguments)."""
    if isinstance(e, N.Read) and not e.idx and e.name in env:
        return env[e.name]
    if isinstance(e, N.BinOp):
        return N.BinOp(e.op, subst(e.lhs, env), subst(e.rhs, env), e.type, e.srcinfo)
    if isinstance(e, N.UnOp):
        return N.UnOp(e.op, subst(e.arg, env), e.type, e.srcinfo)
    return e


class SyncParser:
    # ------------------------------------------------------------ calls
    def call(self, s: ast.Expr, node: ast.Call, target_nodes: list):
        si = self.src(s)
        if isinstance(node.func, ast.Name) and node.func.id in self.vars:
            raise self.err("type", f"'{node.func.id}' is a variable, not a procedure", node.func)
        callee = self.eval_py(node.func, "callee")
        if not isinstance(callee, N.Procedure):
            raise self.err("type", f"`{ast.unparse(node.func)}` is {_describe(callee)}, not a "
                           "@proc or @instr", node.func,
                           hint="only procedures and instructions can be called")
        name = callee.name
        if self.instr is not None and callee.instr is None:
            raise self.err("scope", f"instruction bodies cannot call the proc {name}()", s)
        if callee.instr is None and self.in_cuda:
            raise self.err("scope", f"proc {name}() called at CUDA scope; procs can be called "
                           "only at CPU scope", s,
                           hint="call an @instr here, or inline the proc")
        if callee.instr is not None and self.instr is None:
            dev = callee.instr.timeline.device
            if dev == "cuda" and not self.in_cuda:
                raise self.err("scope", f"{name}() has instr-tl {callee.instr.timeline}; it can "
                               "only be called inside a CudaDeviceFunction", s)
            if dev == "cpu" and self.in_cuda:
                raise self.err("scope", f"{name}() has instr-tl {callee.instr.timeline}; it can "
                               "only be called at CPU scope", s)
        params = callee.params
        pos = list(node.args)
        if len(pos) > len(params):
            raise self.err("type", f"{name}() takes {len(params)} argument(s), got "
                           f"{len(pos) + len(node.keywords)}", node)
        by_name = {p.name: a for p, a in zip(params, pos)}
        for k in node.keywords:
            if k.arg is None or callee.param(k.arg) is None:
                raise self.err("type", f"{name}() has no parameter '{k.arg}'", k.value)
            if k.arg in by_name:
                raise self.err("type", f"{name}() got parameter '{k.arg}' twice", k.value)
            by_name[k.arg] = k.value
        missing = [p.name for p in params if p.name not in by_name]
        if missing:
            raise self.err("type", f"{name}() is missing argument(s) {', '.join(missing)}", node)
        args, binding = [], {}
        for p in params:
            a = by_name[p.name]
            if p.is_data:
                args.append(self.data_arg(callee, p, a, binding))
            else:
                if p.type == bool_:
                    e = self.cond(a, f"argument '{p.name}'")
                else:
                    e = self.control(a, f"argument '{p.name}'")
                    v = const_value(e)
                    if p.type == size and v is not None and v <= 0:
                        raise self.err("type", f"size argument '{p.name}' of {name}() must be "
                                       f"positive, not {v}", a)
                binding[p.name] = e
                args.append(e)
        barriers = tuple(self.barrier_ref(t, allow_intervals=True) for t in target_nodes)
        mech = callee.instr.barrier if callee.instr is not None else None
        if barriers and mech is None:
            raise self.err("barrier-usage", f"{name}() does not take a trailing barrier "
                           "expression", target_nodes[0])
        if mech is not None and not barriers:
            raise self.err("barrier-usage", f"{name}() requires a trailing barrier expression in "
                           f"{mech.name}: `{name}(...) >> z[i]`", s)
        for b, t in zip(barriers, target_nodes):
            actual = self.vars[b.name].type
            if actual.kind != mech.kind or (mech.kind != "mbarrier" and actual != mech):
                raise self.err("barrier-usage", f"{name}() completes on {mech.name}, but "
                               f"'{b.name}' is {actual}", t)
        if len({b.name for b in barriers}) > 1:
            raise self.err("barrier-usage", "all trailing barrier targets must name the same "
                           "barrier", target_nodes[1])
        return N.Call(callee, tuple(args), barriers, si)

    def data_arg(self, callee, p: N.Param, a: ast.expr, binding: dict):
        w = self.window(a)
        info = self.vars[w.name]
        ptype: N.TensorType = p.type
        where = f"argument '{p.name}' of {callee.name}()"
        if w.type != ptype.scalar:
            raise self.err("type", f"{where} must be {ptype.scalar}, got {w.type} "
                           f"('{w.name}')", a)
        if not p.mem.accepts_memory(info.mem):
            raise self.err("type", f"{where} must be in {p.mem}, but '{w.name}' is in "
                           f"{info.mem}", a,
                           hint=f"allocate '{w.name}' @ {p.mem} or call an instruction for "
                                f"{info.mem}")
        if w.rank != ptype.rank:
            raise self.err("type", f"{where} has {ptype.rank} dimension(s); the window "
                           f"{self.show(w)} has {w.rank}", a)
        if not ptype.is_window:
            full = all(isinstance(x, N.Interval) and const_value(x.lo) == 0 and x.hi == ext
                       for x, ext in zip(w.idx, info.shape)) and len(w.idx) == len(info.shape)
            if not full or info.type.is_window:
                raise self.err("type", f"{where} is a dense tensor; pass a whole dense tensor "
                               f"or declare the parameter as a window `[{ptype.scalar}][...]`", a)
        ivs = [x for x in w.idx if isinstance(x, N.Interval)]
        for d, (iv, want) in enumerate(zip(ivs, ptype.shape)):
            ext = extent(iv)
            got = ext if isinstance(ext, int) else const_value(ext)
            exp = const_value(subst(want, binding))
            if got is not None and exp is not None and got != exp:
                raise self.err("type", f"{where}: dimension {d} has extent {got}, expected "
                               f"{exp}", a)
        return w

    # ------------------------------------------------------------ barriers
    def barrier_ref(self, node: ast.expr, allow_intervals: bool) -> N.BarrierRef:
        si = self.src(node)
        if isinstance(node, ast.Name):
            name, elts = node.id, []
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            name = node.value.id
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        else:
            raise self.err("syntax", f"expected a barrier, e.g. `z` or `z[i]`, not "
                           f"`{ast.unparse(node)}`", node)
        info = self.vars.get(name)
        if info is None:
            self.lookup_py(name, node)
            raise self.err("type", f"'{name}' is not a barrier of this procedure", node)
        if info.kind != "barrier":
            raise self.err("type", f"'{name}' is a {info.kind} variable, not a barrier", node,
                           hint=f"allocate it as `{name}: barrier @ CudaMbarrier`")
        if len(elts) != len(info.dims):
            raise self.err("type", f"barrier '{name}' has {len(info.dims)} dimension(s) but is "
                           f"indexed with {len(elts)}", node)
        idx = []
        for e, d in zip(elts, info.dims):
            if isinstance(e, ast.Slice):
                if not allow_intervals:
                    raise self.err("syntax", "Await takes a single barrier (no `:` multicast)",
                                   e)
                if e.step is not None:
                    raise self.err("syntax", "barrier slices cannot have a step", e)
                lo = self.control(e.lower, "barrier index") if e.lower else N.Const(0, _int())
                hi = self.control(e.upper, "barrier index") if e.upper else d.extent
                idx.append(N.Interval(lo, hi, self.src(e)))
            else:
                idx.append(N.Point(self.control(e, "barrier index"), self.src(e)))
        return N.BarrierRef(name, tuple(idx), si)

    def sync_tl(self, node: ast.expr, what: str) -> SyncTL:
        v = self.eval_py(node, what)
        if isinstance(v, InstrTL):
            raise self.err("type", f"{what} must be a synchronization timeline, not the "
                           f"instruction timeline {v}", node, hint="maybe cuda_in_order?")
        if not isinstance(v, SyncTL):
            raise self.err("type", f"{what} must be a synchronization timeline (cuda_in_order, "
                           f"cuda_temporal, Sm80_cp_async, ...), not {_describe(v)}", node)
        return v

    def _sync_scope(self, s, what):
        if self.instr is not None:
            raise self.err("scope", f"instruction bodies cannot contain {what}", s)
        if not self.in_cuda:
            raise self.err("scope", f"{what} at CPU scope; synchronization statements belong "
                           "inside a CudaDeviceFunction", s)

    def fence(self, s, node: ast.Call):
        self._sync_scope(s, "Fence")
        if len(node.args) != 2 or node.keywords:
            raise self.err("syntax", "Fence takes two timelines: `Fence(L1, L2)`", node)
        L1 = self.sync_tl(node.args[0], "Fence first timeline")
        L2 = self.sync_tl(node.args[1], "Fence second timeline")
        return N.Fence(L1, L2, self.src(s))

    def arrive(self, s, head: ast.Call, targets: list):
        self._sync_scope(s, "Arrive")
        if not 1 <= len(head.args) <= 2 or head.keywords:
            raise self.err("syntax", "Arrive takes a timeline (and optionally 1): "
                           "`Arrive(cuda_in_order) >> z`", head)
        if len(head.args) == 2:
            n = head.args[1]
            if not (isinstance(n, ast.Constant) and n.value == 1):
                raise self.err("syntax", "Expect N=1 for Arrive", n)
        L1 = self.sync_tl(head.args[0], "Arrive timeline")
        refs = tuple(self.barrier_ref(t, allow_intervals=True) for t in targets)
        if len({r.name for r in refs}) > 1:
            raise self.err("syntax", "all targets of one Arrive must be the same barrier "
                           f"(got {', '.join(sorted({r.name for r in refs}))})", targets[1])
        return N.Arrive(L1, refs, self.src(s))

    def await_(self, s, node: ast.Call):
        self._sync_scope(s, "Await")
        if not 2 <= len(node.args) <= 3 or node.keywords:
            raise self.err("syntax", "Await takes a barrier, a timeline and a count: "
                           "`Await(z[i], cuda_in_order, 0)`", node)
        target = self.barrier_ref(node.args[0], allow_intervals=False)
        L2 = self.sync_tl(node.args[1], "Await timeline")
        n = 0
        if len(node.args) == 3:
            n = self.eval_py(node.args[2], "Await count")
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise self.err("type", f"Await count must be a non-negative int, not {n!r}",
                               node.args[2])
        return N.Await(target, L2, n, self.src(s))


def _int():
    return int_
