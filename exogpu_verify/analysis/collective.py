"""Collective analysis (paper Section 4; reference notes 4.1): who executes each statement.

``analyze_collectives(proc)`` walks the procedure once, forward, and annotates every
statement with its scope (CPU or CUDA) and, in CUDA, its thread mapping. A new collective
tiling is derived only at a ``CudaDeviceFunction`` (the whole cluster), a ``cuda_threads``
loop (one dimension tiled by the loop's unit) and a ``CudaWarps`` block (a warp range of each
CTA); every other statement inherits its parent's. On the way it checks the rules that need
the collective (kind ``collective``):

* tiling rules: enough threads, alignment, exactly one tiled dimension, trivial tilings;
* warp specialization: named groups, warp ranges (``setmaxnreg`` budgets are launch
  resources: ``resources.py``);
* instruction calls run at exactly their instruction's unit;
* ``Fence`` runs at a thread, warp, set of whole warps of one CTA (a named barrier), CTA or
  cluster (``wgmma_fence_1`` at a warpgroup);
* ``Arrive``/``Await`` run at the unit their barrier mechanism needs;
* assignments to memory run at a single thread.

It assumes a procedure accepted by the frontend (scope errors are reported by
``check_scopes``; statements in misplaced constructs are skipped, not re-reported). A subtree
whose tiling cannot be derived is skipped, so one mistake gives one diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.memories import BarrierMechanism
from ..ir.timelines import wgmma_fence_1
from ..ir.units import cuda_cluster, cuda_cta_in_cluster, cuda_warp, cuda_warpgroup
from .mapping import CollectiveInfo, KernelInfo, StmtInfo, TaskLoop, ThreadMapping
from .named_barriers import is_named_barrier_collective
from .derive import ThreadIter, derive_loop, specialize_warps, warp_span
from .tiling import Collective, TilingError, align, matches, unit_threads, within_one
from .walk import Path


@dataclass(frozen=True)
class _Ctx:
    scope: str = "cpu"
    kernel: N.CudaDeviceFunction | None = None
    coll: Collective | None = None
    tasks: tuple[TaskLoop, ...] = ()
    iters: tuple[ThreadIter, ...] = ()
    loop_vars: tuple[str, ...] = ()
    warp_name: str | None = None
    in_warps: bool = False
    mems: tuple[tuple[str, object], ...] = ()  # name -> Memory | BarrierMechanism

    def mapping(self) -> ThreadMapping | None:
        if self.coll is None:
            return None
        return ThreadMapping(self.coll, self.tasks, self.iters, self.loop_vars)

    def lookup(self, name: str):
        for k, v in reversed(self.mems):
            if k == name:
                return v
        return None

    def bind(self, name: str, m) -> "_Ctx":
        return replace(self, mems=self.mems + ((name, m),))


def analyze_collectives(p: N.Procedure) -> CollectiveInfo:
    """Derive the collective tiling of every statement of ``p`` and check the unit rules.

    Establishes: a ``ThreadMapping`` for every CUDA statement whose enclosing tilings are
    valid, and one diagnostic per violated collective rule. Assumes the launch shape of each
    ``CudaDeviceFunction`` is concrete (it always is in this language).
    """
    a = _Analysis(p)
    ctx = _Ctx()
    for prm in p.params:
        if prm.is_data:
            ctx = ctx.bind(prm.name, prm.mem)
    a.block(p.body, (), "body", ctx)
    return CollectiveInfo(p.name, tuple(a.stmts), tuple(a.kernels), tuple(a.diags))


class _Analysis:
    def __init__(self, p: N.Procedure):
        self.p = p
        self.stmts: list[StmtInfo] = []
        self.kernels: list[KernelInfo] = []
        self.diags: list[Diagnostic] = []

    def err(self, msg: str, node, hint: str | None = None) -> None:
        self.diags.append(Diagnostic.at("collective", msg, node.srcinfo, hint))

    def block(self, body, prefix: Path, fld: str, ctx: _Ctx) -> None:
        for i, s in enumerate(body):
            ctx = self.stmt(s, prefix + ((fld, i),), ctx)

    # ------------------------------------------------------------ statements
    def stmt(self, s, path: Path, ctx: _Ctx) -> _Ctx:
        """Record ``s`` and check it; returns the context for the following statements."""
        info = StmtInfo(path, s, ctx.scope, ctx.mapping(), ctx.warp_name)
        self.stmts.append(info)
        if isinstance(s, N.Alloc):
            return ctx.bind(s.name, s.mem)
        if isinstance(s, N.BarrierAlloc):
            return ctx.bind(s.name, s.mech)
        if isinstance(s, N.WindowStmt):
            return ctx.bind(s.name, s.special or ctx.lookup(s.rhs.name))
        if isinstance(s, N.For):
            self.for_(s, path, ctx)
        elif isinstance(s, N.If):
            self.block(s.body, path, "body", ctx)
            if s.orelse:
                self.block(s.orelse, path, "orelse", ctx)
        elif isinstance(s, N.With):
            self.with_(s, path, ctx, len(self.stmts) - 1)
        elif ctx.coll is not None:
            self.leaf(s, ctx)
        return ctx

    def for_(self, s: N.For, path: Path, ctx: _Ctx) -> None:
        if isinstance(s.mode, N.CudaTasks):
            if ctx.scope != "cuda":
                return  # scope error
            ctx = replace(ctx, tasks=ctx.tasks + (TaskLoop(s.iter, s.lo, s.hi),),
                          loop_vars=ctx.loop_vars + (s.iter,))
        elif isinstance(s.mode, N.CudaThreads):
            if ctx.coll is None:
                return  # scope error
            n = const_value(s.hi)
            if const_value(s.lo) != 0 or n is None or n < 1:
                self.err(f"cuda_threads loop over '{s.iter}' must be cuda_threads(0, n) with a "
                         "positive constant n", s)
                return
            try:
                coll, ti = derive_loop(ctx.coll, s.iter, n, s.mode.unit)
            except TilingError as e:
                self.err(f"in cuda_threads loop over '{s.iter}': {e.message}", s, e.hint)
                return
            ctx = replace(ctx, coll=coll, iters=ctx.iters + (ti,),
                          loop_vars=ctx.loop_vars + (s.iter,))
        self.block(s.body, path, "body", ctx)

    def with_(self, s: N.With, path: Path, ctx: _Ctx, rec: int) -> None:
        c = s.ctx
        if isinstance(c, N.CudaDeviceFunction):
            if ctx.scope != "cpu":
                return  # scope error
            self.kernels.append(KernelInfo(path, c))
            body_ctx = replace(ctx, scope="cuda", kernel=c,
                               coll=Collective.root(c.blockDim, c.clusterDim))
            self.block(s.body, path, "body", body_ctx)
            return
        if ctx.coll is None:
            return  # CudaWarps outside CUDA: scope error
        try:
            body_ctx, warps = self.cuda_warps(s, c, ctx)
        except TilingError as e:
            self.err(e.message, s, e.hint)
            return
        self.stmts[rec] = replace(self.stmts[rec], warps=warps)
        self.block(s.body, path, "body", body_ctx)

    def cuda_warps(self, s: N.With, w: N.CudaWarps, ctx: _Ctx):
        k = ctx.kernel
        groups = [g.name for g in k.warp_config]
        lo, hi, name = w.lo, w.hi, w.name
        if name is not None and name not in groups:
            raise TilingError("warps", f"CudaWarps(name={name!r}) names no warp group of this "
                              f"kernel" + (f" (groups: {', '.join(groups)})" if groups else
                                           "; declare warp_config=[CudaWarpConfig(...)]"))
        if ctx.in_warps:
            if lo is None:
                raise TilingError("warps", "nested CudaWarps must give both lo and hi")
            if name is not None and name != ctx.warp_name:
                raise TilingError("warps", f"nested CudaWarps may not change the warp group "
                                  f"name ({ctx.warp_name!r} -> {name!r})")
            coll, wr = specialize_warps(ctx.coll, lo, hi, 0, ctx.warp_name)
            return replace(ctx, coll=coll, in_warps=True), wr
        if name is None:
            if len(groups) > 1:
                raise TilingError("warps", "top-level CudaWarps must provide valid warp name "
                                  f"(one of {', '.join(groups)})")
            if lo is None:
                raise TilingError("warps", "CudaWarps needs a warp range (lo, hi) or a name")
            coll, wr = specialize_warps(ctx.coll, lo, hi)
            return replace(ctx, coll=coll, in_warps=True), wr
        _, wd, _ = warp_span(ctx.coll)
        if not wd.full:
            raise TilingError("warps", f"CudaWarps(name={name!r}) requires CTA not to be "
                              f"subdivided, but the scope is {ctx.coll.shape()}",
                              hint="put the named CudaWarps outside sub-CTA cuda_threads loops")
        g0, g1 = k.warp_range(name)
        if lo is None:
            lo, hi = 0, g1 - g0
        if hi > g1 - g0:
            raise TilingError("warps", f"CudaWarps({lo}, {hi}, name={name!r}) is out-of-range: "
                              f"the group has {g1 - g0} warp(s)",
                              hint=f"use hi <= {g1 - g0}, or give the group {hi} warps "
                                   f"(CudaWarpConfig({name!r}, {hi}, ...))")
        coll, wr = specialize_warps(ctx.coll, lo, hi, g0, name)
        return replace(ctx, coll=coll, warp_name=name, in_warps=True), wr

    # ------------------------------------------------------------ leaves
    def leaf(self, s, ctx: _Ctx) -> None:
        coll = ctx.coll
        if isinstance(s, N.Call) and s.callee.instr is not None:
            u = s.callee.instr.unit
            if not matches(coll, u):
                n = unit_threads(u, coll.block_dim, coll.cluster_dim)
                why, hint = _misaligned(coll, u)
                self.err(f"wrong collective unit (need {u}: {n} threads) for "
                         f"{s.callee.name}(): scope has {coll.shape()}{why}", s,
                         hint=hint or f"call it inside a loop such as `for i in "
                                      f"cuda_threads(0, 1, unit={u}):`")
        elif isinstance(s, N.Fence):
            self.fence(s, coll)
        elif isinstance(s, (N.Arrive, N.Await)):
            ref = s.targets[0] if isinstance(s, N.Arrive) else s.target
            mech = ctx.lookup(ref.name)
            if isinstance(mech, BarrierMechanism):
                self.sync_unit(s, ref.name, mech, coll)
        elif isinstance(s, (N.Assign, N.Reduce)):
            if coll.size != 1:
                mem = ctx.lookup(s.name)
                self.err(f"write to '{s.name}' ({mem}) must be executed by a single thread "
                         f"(cuda_thread): scope has {coll.shape()}", s,
                         hint="wrap it in `for t in cuda_threads(0, n, unit=cuda_thread):`")

    def fence(self, s: N.Fence, coll: Collective) -> None:
        if s.L1 == wgmma_fence_1:
            if not matches(coll, cuda_warpgroup):
                self.err(f"Fence({s.L1}, {s.L2}) must be executed by a warpgroup (128 "
                         f"threads): scope has {coll.shape()}", s)
            return
        if coll.size == 1 or any(matches(coll, u) for u in (cuda_warp, cuda_cta_in_cluster,
                                                            cuda_cluster)):
            return
        if is_named_barrier_collective(coll):
            return  # a named barrier (bar.sync id, n): analysis/named_barriers.py
        self.err(f"Fence collective unit matched no known case: scope has {coll.shape()}; a "
                 "Fence is executed by a single thread, a warp, a set of whole warps of one "
                 "CTA (a named barrier), a whole CTA or the whole cluster", s)

    def sync_unit(self, s, name: str, mech: BarrierMechanism, coll: Collective) -> None:
        what = "Arrive" if isinstance(s, N.Arrive) else "Await"
        if mech.kind == "mbarrier":
            if not within_one(coll, cuda_cta_in_cluster):
                self.err(f"{what} on {name} @ {mech} requires a collective within one CTA: "
                         f"scope has {coll.shape()}", s)
            return
        u = mech.native_unit
        if not matches(coll, u):
            n = unit_threads(u, coll.block_dim, coll.cluster_dim)
            self.err(f"{what} on {name} @ {mech} requires {u} ({n} threads): scope has "
                     f"{coll.shape()}", s)


def _misaligned(coll: Collective, unit) -> tuple[str, str | None]:
    """Why the scope cannot hold an aligned ``unit`` at all (e.g. a 160-thread block has no
    second warpgroup, and its tiling into warpgroups is undefined), with the fix; empty
    when it is merely the wrong shape."""
    try:
        align(coll, unit)
    except TilingError as e:
        return f" ({e.message})", e.hint or (f"make the block (or cluster) a whole number of "
                                             f"{unit} instances")
    return "", None

