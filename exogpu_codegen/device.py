"""One ``CudaDeviceFunction`` -> one persistent ``__global__`` kernel.

Layout of the kernel (docs/codegen.md has the whole picture):

1. unpack the argument struct (``__grid_constant__``) into locals; align the dynamic SMEM base;
2. setup: thread 0 initializes every mbarrier with its arrive count, fences, CTA/cluster sync;
3. one code path per warp group (``setmaxnreg``), each running the *task loop*: clusters take
   linear task indices ``blockIdx.x / clusterDim, + gridDim.x / clusterDim, ...``, decoded
   lexicographically into the ``cuda_tasks`` iterators (last fastest);
4. the task body: ``cuda_threads`` iterators from the collective analysis' inverse mapping
   ``((tid - offset) / pitch) % modulus`` with a guard where the loop uses fewer threads than
   the scope has; sharded allocations as per-thread registers / per-CTA SMEM; sync lowered by
   ``sync.py``;
5. shutdown: a cluster barrier so no CTA exits while its SMEM may still be targeted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod

from exogpu_verify.analysis import StaticInfo
from exogpu_verify.analysis.tiling import Affine
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import const_value
from exogpu_verify.ir.timelines import wgmma_fence_1

from . import sync as S
from .buffers import Buf, c_order_strides
from .cexpr import Ctl, cname, convert, cpp_type, data_expr_t
from .emitter import Lines
from .kernel_facts import bulk_wait_read, proxy_space
from .lazy_zero import LazyZero
from .errors import not_supported
from . import stmt_facts as SF
from .smem import SMEM_LIMIT, plan_smem, shard_shape

_UNROLL_MAX = 64


@dataclass
class Ctx:
    ctl: Ctl
    bufs: dict
    bars: dict
    group: str | None = None
    warps: tuple[int, int] | None = None  # warps [lo, hi) of each CTA running this path
    #: the wgmma accumulator arrays in scope (``Sm90_RmemMatrixD`` allocations' C++ names):
    #: fenced as asm operands at each wgmma wait and ``wgmma.fence`` (``exo_fence_acc``)
    accs: tuple = ()


@dataclass
class KernelCode:
    """What the host side needs to know about one generated kernel."""

    index: int
    name: str
    args_struct: str
    fields: list            # (C++ declaration, host-side value expression)
    block_dim: int
    cluster_dim: int
    blocks_per_sm: int
    smem_bytes: int
    task_count_host: str    # C++ expression (host names) of the number of tasks
    source: str


class KernelGen:
    def __init__(self, p: N.Procedure, info: StaticInfo, k: int, path, w: N.With,
                 host_ctl: Ctl, host_bufs: dict, arch: str):
        self.p, self.info, self.k, self.path, self.w = p, info, k, path, w
        self.cfg: N.CudaDeviceFunction = w.ctx
        self.ci = info.collectives
        self.arch = arch
        self.host_ctl, self.host_bufs = host_ctl, host_bufs
        self.B = self.cfg.blockDim
        self.C = self.cfg.clusterDim
        self.sharding = {s.path: s for s in info.distributed.shardings}
        self.L = Lines()
        self.cnames: dict[str, str] = {}
        self.name = f"exo_kernel{k}_{p.name}"
        self.lazy_zero = LazyZero(p)

    # ------------------------------------------------------------ entry
    def generate(self) -> KernelCode:
        tasks, body, body_path = self._task_nest()
        bars = self._barriers(body, body_path)
        lay = plan_smem(body, body_path, "body", {
            pth: s.n_distributed for pth, s in self.sharding.items()},
            {b.path: b.nslots for b in bars.values() if b.kind == "mbarrier"})
        for b in bars.values():
            if b.kind == "mbarrier":
                b.offset = lay.bar_offsets[b.path]
        self.layout = lay
        limit = SMEM_LIMIT.get(self.arch, 232448)
        if lay.bytes_needed > limit:
            raise not_supported(f"a kernel needing {lay.bytes_needed} bytes of shared memory "
                                f"(at most {limit} on {self.arch})", self.w)
        fields, ctx = self._captures(tasks, body)
        gmem = {q.name for q in self.p.params if q.is_data and q.mem.space == "gmem"}
        self.proxy = proxy_space(self.p, body, gmem, self.C)
        self.bulk_read = bulk_wait_read(self.p, body, [t.iter for t in tasks])
        ctx.bars = {}
        self.bar_by_path = {b.path: b for b in bars.values()}
        L = self.L
        struct = f"exo_Args{self.k}_{self.p.name}"
        L.open(f"struct {struct}")
        for decl, _ in fields:
            L(decl)
        L.close("};")
        L()
        L(f"__global__ void __launch_bounds__({self.B}, {self.cfg.blocks_per_sm})")
        L.open(f"{self.name}(const __grid_constant__ {struct} exo_args)")
        self._prologue(ctx, lay, bars)
        groups = self._groups()
        for g, (w0, w1, dec, inc) in groups:
            gctx = replace(ctx, group=g, warps=(w0, w1))
            if g is not None:
                L.open(f"if ({SF.warp_cond(w0, w1)})")
                if dec is not None:
                    L(f'asm volatile("setmaxnreg.dec.sync.aligned.u32 {dec};\\n" ::: "memory");')
                if inc is not None:
                    L(f'asm volatile("setmaxnreg.inc.sync.aligned.u32 {inc};\\n" ::: "memory");')
            self._task_loop(tasks, body, body_path, gctx)
            if g is not None:
                L.close()
        if self.C > 1:
            L("// no CTA may exit while cluster peers can still access its shared memory")
            L('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");')
            L('asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");')
        L.close()
        ntasks = " * ".join(SF.count(self.host_ctl, t) for t in tasks)
        return KernelCode(self.k, self.name, struct, fields, self.B, self.C,
                          self.cfg.blocks_per_sm, lay.bytes_needed, ntasks, L.text())

    def _task_nest(self):
        body, path = self.w.body, self.path + (("body", 0),)
        tasks = []
        if len(body) != 1 or not (isinstance(body[0], N.For) and
                                  isinstance(body[0].mode, N.CudaTasks)):
            raise not_supported("a CudaDeviceFunction whose body is not a single nest of "
                                "cuda_tasks loops", self.w)
        while len(body) == 1 and isinstance(body[0], N.For) and \
                isinstance(body[0].mode, N.CudaTasks):
            tasks.append(body[0])
            body = body[0].body
            path = path + (("body", 0),)
        return tasks, body, path[:-1]

    # ------------------------------------------------------------ analysis reads
    def _barriers(self, body, body_path) -> dict:
        out = {}
        from exogpu_verify.analysis.walk import iter_stmts
        for pth, s in iter_stmts(body, body_path):
            if isinstance(s, N.BarrierAlloc):
                b = S.make_bar(s, pth, self.sharding.get(pth), self.B, self._fresh(s.name))
                out[pth] = b
        # mbarriers some copy completes on (``tma(...) >> z[...]``)
        copied = set()
        for si in self.ci.stmts:
            st = si.stmt
            if isinstance(st, N.Call) and st.barriers and si.mapping is not None:
                b = self._resolve_bar(st.barriers[0].name, si.path, out)
                if b is not None:
                    copied.add(id(b))
        # arrive counts and async-ness, from every Arrive statement
        for si in self.ci.stmts:
            st = si.stmt
            if not isinstance(st, N.Arrive) or si.mapping is None:
                continue
            b = self._resolve_bar(st.targets[0].name, si.path, out)
            if b is None or b.kind != "mbarrier":
                continue
            S.check_mbar_arrive(st)
            loops: list = []
            conds = S.enclosing_ifs(self.p.body, si.path, loops)
            ctas: list = []
            n = S.arrive_threads(si, st.targets[0], b, self.B, conds, loops, ctas) * \
                S.multicast_factor(st.targets[0], b)
            if id(b) in copied and any(c != set(range(self.C)) for c in ctas):
                # the checkers order each copy's expect_tx (issued by a thread of the CTA
                # whose mbarrier it arms) before every Arrive of that CTA on the element
                # (amir/phases.py, copy issues); a CTA must therefore arrive on its own
                # element in every phase, or its phase could complete on other CTAs'
                # arrivals alone, before its expect_tx
                raise not_supported(f"an Arrive on mbarrier '{b.name}', which copies complete "
                                    "on, that does not arrive from every CTA of the cluster",
                                    st, hint="let a thread of each CTA (its copy-issuing "
                                    "thread) arrive on its own element")
            if b.count and b.count != n:
                raise not_supported(f"mbarrier '{b.name}' arrived on by {n} threads here but "
                                    f"{b.count} elsewhere (one arrive count per barrier)", st)
            b.count = n
            if any(S.multicast_factor(t, b) > 1 for t in st.targets):
                b.remote_arrive = True
            if not st.L1 <= S.cuda_temporal:
                b.async_arrive = True
        for b in out.values():
            if b.kind == "mbarrier" and not b.count:
                raise not_supported(f"mbarrier '{b.name}' that no Arrive statement arrives on",
                                    None)
        return {b.name + str(i): b for i, b in enumerate(out.values())}

    @staticmethod
    def _resolve_bar(name, use_path, bars: dict):
        from exogpu_verify.analysis.walk import visible_from
        best = None
        for pth, b in bars.items():
            if b.name == name and visible_from(pth, use_path):
                if best is None or len(pth) > len(best.path):
                    best = b
        return best

    def _fresh(self, name: str) -> str:
        c = cname(name)
        n = self.cnames.get(c, 0)
        self.cnames[c] = n + 1
        return c if n == 0 else f"{c}_{n}"

    def _groups(self):
        """Code paths: one per warp group of ``warp_config`` (or one for the block). A group
        whose warpgroups behave differently (a ``cuda_threads`` loop over warpgroups whose
        iterator an ``if`` tests, as ping-pong consumers do) gets one path per warpgroup:
        the iterator is then a constant of the path, so the tests fold away and no wgmma
        sits in a branch ptxas must treat as divergent (which serializes them, C7518)."""
        cfg = self.cfg
        if not cfg.warp_config:
            return [(None, (0, cfg.blockDim // 32, None, None))]
        split = SF.tested_wide_iters(self.w.body, self.B, self.C)
        out = []
        for g in cfg.warp_config:
            w0, w1 = cfg.warp_range(g.name)
            if split and (w1 - w0) % 4 == 0 and w1 - w0 > 4 and w0 % 4 == 0:
                for lo in range(w0, w1, 4):
                    out.append((g.name, (lo, lo + 4, g.setmaxnreg_dec, g.setmaxnreg_inc)))
            else:
                out.append((g.name, (w0, w1, g.setmaxnreg_dec, g.setmaxnreg_inc)))
        return out

    def _path_constant(self, ti, ctx: Ctx) -> int | None:
        """The value of thread iterator ``ti`` if it is the same for every thread of the code
        path (``ctx.warps``, in every CTA of the cluster), else None."""
        if ctx.warps is None or ti.offset.terms:
            return None
        w0, w1 = ctx.warps
        vals = {((r * self.B + t - ti.offset.const) // ti.pitch) % ti.modulus
                for r in range(self.C) for t in range(32 * w0, 32 * w1)}
        return vals.pop() if len(vals) == 1 else None

    # ------------------------------------------------------------ captures
    def _captures(self, tasks, body):
        used = set()
        for t in tasks:
            SF.names(t.lo, used)
            SF.names(t.hi, used)
        SF.names_block(body, used)
        hc, hb = self.host_ctl, self.host_bufs
        fields, env, nonneg, bufs = [], {}, set(), {}
        sizes = [q.name for q in self.p.params if not q.is_data and q.type.name == "size"]
        for name in list(hc.env):
            if name in hb or not (name in used or name in sizes):
                continue
            c = cname(name)
            fields.append((f"int {c};", f"int({hc.env[name]})"))
            env[name] = c
            if name in hc.nonneg:
                nonneg.add(name)
        unpack = [f"const int {env[n]} = exo_args.{env[n]};" for n in env]
        for name, b in hb.items():
            if name not in used:
                continue
            c = cname(name)
            if b.tmap is not None:
                fields.append((f"CUtensorMap {c};", b.ptr))
                coords = []
                for d, x in enumerate(b.tmap.coords):
                    if SF.portable(x, sizes):
                        coords.append(x)
                    else:
                        fields.append((f"int {c}_c{d};", f"int({x})"))
                        coords.append(f"exo_args.{c}_c{d}")
                bufs[name] = replace(b, ptr=f"exo_args.{c}",
                                     tmap=replace(b.tmap, lvalue=f"exo_args.{c}",
                                                  coords=tuple(coords)))
                continue
            if b.by_value:
                fields.append((f"{b.ctype} {c};", b.ptr))
                unpack.append(f"const {b.ctype} {c} = exo_args.{c};")
                bufs[name] = replace(b, ptr=c)
                continue
            fields.append((f"{b.ctype}* {c};", b.ptr))
            unpack.append(f"{b.ctype}* const {c} = exo_args.{c};")
            strides = []
            for d, s in enumerate(b.strides):
                if s is None or SF.portable(s, sizes):
                    strides.append(s)
                else:
                    fields.append((f"int {c}_s{d};", f"int({s})"))
                    unpack.append(f"const int {c}_s{d} = exo_args.{c}_s{d};")
                    strides.append(f"{c}_s{d}")
            bufs[name] = replace(b, ptr=c, strides=tuple(strides))
        self.unpack = unpack
        ctl = Ctl(env, nonneg, self._stride_of(bufs))
        return fields, Ctx(ctl, bufs, {})

    @staticmethod
    def _stride_of(bufs):
        def f(name, dim):
            b = bufs.get(name)
            if b is None or b.strides[dim] is None:
                raise not_supported(f"stride({name}, {dim}) in device code")
            return b.strides[dim]
        return f

    # ------------------------------------------------------------ prologue
    def _prologue(self, ctx: Ctx, lay, bars):
        L = self.L
        for u in self.unpack:
            L(u)
        if lay.size:
            L("extern __shared__ __align__(1024) char exo_smem_raw[];")
            if lay.max_align > 128:
                L(f"char* const exo_smem = exo_align_smem<{lay.max_align}>(exo_smem_raw);")
            else:
                L("char* const exo_smem = exo_smem_raw;")
            if any(b.kind == "mbarrier" for b in bars.values()):
                L("const uint32_t exo_smem_sh = exo_smem_u32(exo_smem);")
        if self.C > 1:
            L(f"const int exo_tid = int(exo_cluster_ctarank()) * {self.B} + int(threadIdx.x);")
        else:
            L("const int exo_tid = int(threadIdx.x);")
        L("(void)exo_tid;")
        mbars = [b for b in bars.values() if b.kind == "mbarrier"]
        if mbars:
            L.open("if (threadIdx.x == 0)")
            for b in mbars:
                L(f"// {b.name}: {b.nslots} mbarrier(s), {b.count} arrival(s) per phase")
                L(f"for (int exo_i = 0; exo_i < {b.nslots}; ++exo_i) "
                  f"exo_mbar_init({S.slot_addr(b, 'exo_i')}, {b.count});")
            if self.C > 1:
                L('asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");')
            L('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");')
            L.close()
        if mbars and self.C == 1:
            L('asm volatile("barrier.cta.sync 0;\\n" ::: "memory");')
        if self.C > 1:
            L('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");')
            L('asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");')
        for b in mbars:
            L(f"int {b.base} = 0;")

    # ------------------------------------------------------------ task loop
    def _task_loop(self, tasks, body, body_path, ctx: Ctx):
        L = self.L
        ctl = ctx.ctl
        counts = []
        for i, t in enumerate(tasks):
            counts.append(f"exo_n{i}")
            L(f"const int exo_n{i} = {SF.count(ctl, t)};")
        total = " * ".join(counts)
        L.open(f"for (int exo_task = blockIdx.x / {self.C}; exo_task < {total}; "
               f"exo_task += gridDim.x / {self.C})")
        rem = "exo_task"
        if len(tasks) > 1:
            L("int exo_rem = exo_task;")
            rem = "exo_rem"
        R, n = self.cfg.task_raster, len(tasks)
        vals = {}
        if R > 1 and n >= 2:
            # rasterized order (semantically free: tasks impose no order): panels of R values
            # of loop n-2; within a panel, loop n-2 runs fastest, so the tasks running at one
            # time cover R x (#clusters / R) tiles that share rows and columns in L2
            a, b = f"exo_n{n - 2}", f"exo_n{n - 1}"
            L(f"const int exo_in = {rem} % ({a} * {b});")
            if n > 2:
                L(f"{rem} /= {a} * {b};")
            L(f"const int exo_pan = exo_in / ({R} * {b}), exo_pr = exo_in % ({R} * {b});")
            L(f"const int exo_ph = {a} - exo_pan * {R} < {R} ? {a} - exo_pan * {R} : {R};")
            vals[n - 2] = f"exo_pan * {R} + exo_pr % exo_ph"
            vals[n - 1] = "exo_pr / exo_ph"
        for i in reversed(range(n)):
            t = tasks[i]
            c = self._fresh(t.iter) if t.iter not in ctl.env else cname(t.iter)
            lo = ctl(t.lo)
            val = vals.get(i, rem if i == 0 else f"{rem} % exo_n{i}")
            L(f"const int {c} = {'' if lo == '0' else lo + ' + '}{val};")
            if i > 0 and i not in vals:
                L(f"{rem} /= exo_n{i};")
            ctl = ctl.bind(t.iter, c, ctl.is_nonneg(t.lo))
        self._block(body, body_path, "body", replace(ctx, ctl=ctl))
        L.close()

    # ------------------------------------------------------------ statements
    def _block(self, stmts, prefix, fld, ctx: Ctx):
        ends = []
        for i, s in enumerate(stmts):
            path = prefix + ((fld, i),)
            ctx = self._stmt(s, path, ctx, ends)
        for line in ends:
            self.L(line)

    def _stmt(self, s, path, ctx: Ctx, ends: list) -> Ctx:
        L = self.L
        if isinstance(s, N.Alloc):
            return self._alloc(s, path, ctx)
        if isinstance(s, N.BarrierAlloc):
            b = self.bar_by_path[path]
            if b.kind == "mbarrier":
                ext = "1" if b.ring_extent is None else ctx.ctl(b.ring_extent)
                ends.append(f"{b.base} += {ext};  // {b.name}: virtual indices of this "
                            "lifetime consumed")
            return replace(ctx, bars={**ctx.bars, s.name: b})
        if isinstance(s, N.WindowStmt):
            if s.special is not None:
                raise not_supported("a tensor map made in device code (make it at CPU scope)",
                                    s)
            b = self._buf(s.rhs.name, ctx, s)
            return replace(ctx, bufs={**ctx.bufs, s.name: b.window(s.rhs, ctx.ctl, s.name)})
        if isinstance(s, (N.Assign, N.Reduce)):
            L(self._assign(s, ctx))
        elif isinstance(s, N.For):
            self._for(s, path, ctx)
        elif isinstance(s, N.If):
            L.open(f"if ({ctx.ctl(s.cond)})")
            self._block(s.body, path, "body", ctx)
            if s.orelse:
                L.close("} else {")
                L.depth += 1
                self._block(s.orelse, path, "orelse", ctx)
            L.close()
        elif isinstance(s, N.With):
            self._warps(s, path, ctx)
        elif isinstance(s, N.Call):
            self._call(s, path, ctx)
        elif isinstance(s, N.Fence):
            if s.L1 == wgmma_fence_1:  # register writes before it stay before it
                for c in ctx.accs:
                    L(f"exo_fence_acc({c});")
            for ln in S.lower_fence(s, self._coll(path, s), self.C, self._named(path, ctx),
                                    self.proxy):
                L(ln)
        elif isinstance(s, N.Arrive):
            self._arrive(s, ctx)
        elif isinstance(s, N.Await):
            self._await(s, ctx)
        elif isinstance(s, N.Pass):
            pass
        else:
            raise not_supported(f"statement {type(s).__name__} in device code", s)
        return ctx

    def _named(self, path, ctx: Ctx) -> tuple[str, int] | None:
        """(C++ id, threads) of a named-barrier Fence, from analysis/named_barriers.py."""
        nbi = self.info.named_barriers
        nb = nbi.at(path) if nbi is not None else None
        if nb is None:
            return None
        env = ctx.ctl.env
        aff = nb.affine()
        if aff is not None:
            base, coefs = aff
            terms = [str(base)] + [f"{c} * {env[n]}" if c != 1 else env[n] for n, c in coefs]
            return (" + ".join(terms) if coefs else str(base)), nb.threads
        # not affine in the iterators: select the id by the linear instance index
        lin, stride = [], 1
        for n, cnt in reversed(nb.iters):
            if cnt > 1:
                lin.append(f"{env[n]} * {stride}" if stride > 1 else env[n])
            stride *= cnt
        idx = " + ".join(reversed(lin)) or "0"
        code = str(nb.ids[-1])
        for k in reversed(range(len(nb.ids) - 1)):
            code = f"(exo_lin == {k} ? {nb.ids[k]} : {code})"
        return f"[&] {{ const int exo_lin = {idx}; return {code}; }}()", nb.threads

    def _coll(self, path, node):
        si = self.ci.at(path)
        if si is None or si.mapping is None:
            raise not_supported("a statement the collective analysis did not reach", node)
        return si.mapping.collective

    def _buf(self, name, ctx: Ctx, node) -> Buf:
        try:
            return ctx.bufs[name]
        except KeyError:
            raise not_supported(f"use of '{name}' in device code (not a parameter, CPU-scope "
                                "value or device allocation in scope)", node) from None

    def _alloc(self, s: N.Alloc, path, ctx: Ctx) -> Ctx:
        L = self.L
        sh = self.sharding.get(path)
        nd = sh.n_distributed if sh is not None else 0
        shp = shard_shape(s.type.shape, nd, s)
        ct = cpp_type(s.type.scalar)
        c = self._fresh(s.name)
        strides = [None] * nd + c_order_strides([str(x) for x in shp])
        shape = tuple(str(const_value(e)) for e in s.type.shape)
        n = max(prod(shp), 1)
        mem = s.mem
        if mem.space == "smem":
            off = self.layout.offsets[path]
            L(f"{ct}* const {c} = reinterpret_cast<{ct}*>(exo_smem + {off});  "
              f"// {s.name}: {n} x {ct} per CTA")
            swz = mem.args[0] if mem.name == "Sm90_SmemSwizzled" else 0
            b = Buf(s.name, s.type.scalar, mem, c, shape, tuple(strides), swizzle=swz)
        elif mem.space == "rmem":
            L(f"{ct} {c}[{n}];  // {s.name}: per-thread registers")
            b = Buf(s.name, s.type.scalar, mem, c, shape, tuple(strides))
            if mem.name == "Sm90_RmemMatrixD":
                fl = shp[:-3] if len(shp) > 3 else []
                nf = max(prod(fl), 1)
                L(f"int {c}_scale_d[{nf}];")
                L(f"for (int exo_i = 0; exo_i < {nf}; ++exo_i) {c}_scale_d[exo_i] = 1;")
                b = replace(b, scale_d=(f"{c}_scale_d", tuple(fl)) if fl else
                            (f"{c}_scale_d[0]", ()))
                ctx = replace(ctx, accs=ctx.accs + (c,))
        else:
            raise not_supported(f"allocating {mem} in device code", s)
        return replace(ctx, bufs={**ctx.bufs, s.name: b})

    def _assign(self, s, ctx: Ctx) -> str:
        b = self._buf(s.name, ctx, s)
        lhs = b.element(s.idx, ctx.ctl, s)
        code, t = data_expr_t(s.rhs, ctx.ctl, lambda r: self._buf(r.name, ctx, r).element(
            r.idx, ctx.ctl, r), b.scalar)
        ct = b.ctype
        if isinstance(s, N.Assign):
            return f"{lhs} = {convert(code, t, ct)};"
        if ct in ("float", "double", "int32_t"):
            return f"{lhs} += {convert(code, t, ct)};"
        return f"{lhs} = {ct}(static_cast<float>({lhs}) + {convert(code, t, 'float')});"

    def _for(self, s: N.For, path, ctx: Ctx):
        L = self.L
        ctl = ctx.ctl
        c = self._fresh(s.iter)
        if isinstance(s.mode, N.CudaTasks):
            raise not_supported("a cuda_tasks loop that is not part of the kernel's outer "
                                "task nest", s)
        if isinstance(s.mode, N.CudaThreads):
            inner = self.ci.at(path + (("body", 0),))
            ti = inner.mapping.thread_iters[-1] if inner is not None and inner.mapping \
                and inner.mapping.thread_iters else None
            if ti is None or ti.name != s.iter:
                raise not_supported(f"cuda_threads loop over '{s.iter}' without a thread "
                                    "mapping", s)
            parent = self._coll(path, s)
            n = const_value(s.hi)
            pc = self._path_constant(ti, ctx)
            if pc is not None and pc >= n:
                return  # no thread of this code path runs the loop body
            L.open("")
            L.lines[-1] = L.lines[-1].replace(" {", "{")
            if pc is not None:
                L(f"[[maybe_unused]] constexpr int {c} = {pc};  // every thread of this path")
            else:
                L(f"[[maybe_unused]] const int {c} = {self._iter_value(ti, ctl)};")
            guard = pc is None and n * ti.tile_threads < parent.size
            if guard:
                L.open(f"if ({c} < {n})")
            self._block(s.body, path, "body", replace(ctx, ctl=ctl.bind(s.iter, c, True)))
            if guard:
                L.close()
            L.close()
            return
        lo, hi = ctl(s.lo), ctl(s.hi)
        clo, chi = const_value(s.lo), const_value(s.hi)
        unroll = s.mode.pragma_unroll
        regs = SF.register_index(s.body, s.iter, {n for n, b in ctx.bufs.items()
                                                if b.mem is not None and b.mem.is_device
                                                and b.mem.space == "rmem"})
        if regs is not None:
            # registers need constant indices: a register array indexed by this loop's
            # iterator lives in local memory unless the loop is unrolled completely (and
            # wgmma accumulators there serialize every wgmma: ptxas C7514)
            if clo is None or chi is None:
                raise not_supported(f"register array '{regs}' indexed by the iterator of a loop "
                                    "with a non-constant trip count (it would live in local "
                                    "memory)", s, hint="give the loop constant bounds")
            if unroll is not None and unroll not in (0, chi - clo) and chi - clo > 0:
                L(f"// pragma_unroll={unroll} overridden: '{regs}' is indexed by '{s.iter}'")
            L("#pragma unroll")
        elif unroll is not None:
            L(f"#pragma unroll {unroll}" if unroll > 0 else "#pragma unroll")
        elif clo is not None and chi is not None and 0 < chi - clo <= _UNROLL_MAX:
            L("#pragma unroll")
        L.open(f"for (int {c} = {lo}; {c} < {hi}; ++{c})")
        self._block(s.body, path, "body", replace(ctx, ctl=ctl.bind(s.iter, c,
                                                                      ctl.is_nonneg(s.lo))))
        L.close()

    def _iter_value(self, ti, ctl: Ctl) -> str:
        if ti.modulus == 1:
            return "0"
        x = "exo_tid"
        if not ti.offset.is_zero:
            x = f"(exo_tid - {self._affine(ti.offset, ctl)})"
        if ti.pitch > 1:
            x = f"{x} / {ti.pitch}"
        if ti.pitch * ti.modulus < self.B * self.C:
            x = f"({x}) % {ti.modulus}"
        return x

    @staticmethod
    def _affine(a: Affine, ctl: Ctl) -> str:
        parts = [(ctl.env[nm] if c == 1 else f"{c} * {ctl.env[nm]}") for nm, c in a.terms]
        if a.const or not parts:
            parts.append(str(a.const))
        s = " + ".join(parts)
        return s if len(parts) == 1 and "*" not in s else f"({s})"

    def _warps(self, s: N.With, path, ctx: Ctx):
        L = self.L
        w = s.ctx
        if not isinstance(w, N.CudaWarps):
            raise not_supported("a CudaDeviceFunction inside a kernel", s)
        si = self.ci.at(path)
        wr = si.warps if si is not None else None
        if wr is None:
            raise not_supported("a CudaWarps block the collective analysis did not reach", s)
        if w.name is not None and ctx.group is not None and w.name != ctx.group:
            return  # another warp group's code path
        full = None
        if ctx.group is not None and w.name == ctx.group and wr.first.terms == ():
            g0, g1 = self.cfg.warp_range(ctx.group)
            full = (wr.first.const == g0 and wr.count == g1 - g0)
        if full:
            self._block(s.body, path, "body", ctx)
            return
        first = self._affine(wr.first, ctx.ctl)
        if not wr.first.terms:
            cond = SF.warp_cond(wr.first.const, wr.first.const + wr.count)
        else:
            cond = f"unsigned(int(threadIdx.x / 32) - {first}) < {wr.count}u"
        L.open(f"if ({cond})")
        self._block(s.body, path, "body", ctx)
        L.close()

    # ------------------------------------------------------------ instructions
    def _call(self, s: N.Call, path, ctx: Ctx):
        L = self.L
        callee = s.callee
        if callee.instr is None:
            raise not_supported(f"calling the proc {callee.name}() in device code (procs are "
                                "called at CPU scope)", s)
        info = callee.instr
        if info.codegen is None:
            self._inline_instr(s, ctx)
            return
        args: dict = {}
        for prm, a in zip(callee.params, s.args):
            if prm.is_data:
                if not isinstance(a, N.WindowExpr):
                    raise not_supported(f"argument {prm.name} of {callee.name}()", s)
                buf = self._buf(a.name, ctx, a)
                if buf.scale_d is not None:
                    self.lazy_zero.check(buf, a, callee, s)
                args.update(buf.instr_args(prm.name, a, ctx.ctl))
            else:
                v = const_value(a)
                args[prm.name] = v if v is not None else ctx.ctl(a)
        pre = ""
        if s.barriers:
            ref = s.barriers[0]
            b = ctx.bars.get(ref.name)
            if b is None or b.kind != "mbarrier":
                raise not_supported(f"a trailing barrier that is not an mbarrier on "
                                    f"{callee.name}()", s)
            slot, j = S.slot_index(b, ref, ctx.ctl, s)
            if j is not None:
                pre = f"const int exo_j = {j}; "
            args["_mbar"] = S.slot_addr(b, slot)
        try:
            code = info.codegen(args) if callable(info.codegen) else \
                info.codegen.format(**args)
        except (KeyError, ValueError, IndexError, TypeError) as e:
            raise not_supported(f"instantiating the codegen template of {callee.name}() "
                                f"({type(e).__name__}: {e})", s) from None
        L(f"{{ {pre}{code} }}" if pre else code)

    def _inline_instr(self, s: N.Call, ctx: Ctx):
        """An instruction without ``codegen`` whose body is ordinary single-thread code is
        compiled inline (its sequential body *is* what one thread does)."""
        callee = s.callee
        info = callee.instr
        if info.timeline.name != "cuda_in_order_instr" or info.barrier is not None \
                or info.distributed or SF.has_sync(callee.body):
            raise not_supported(f"instruction {callee.name}() without a codegen template (only "
                                "plain single-thread in-order instructions are inlined)", s,
                                hint="give the @instr a codegen= template")
        if info.unit.name != "cuda_thread":
            raise not_supported(f"inlining instruction {callee.name}() run by {info.unit} "
                                "(only single-thread instructions are inlined)", s,
                                hint="give the @instr a codegen= template")
        L = self.L
        L.open("")
        L.lines[-1] = L.lines[-1].replace(" {", "{")
        L(f"// inlined instruction {callee.name}()")
        ctl, bufs = ctx.ctl, dict(ctx.bufs)
        for prm, a in zip(callee.params, s.args):
            if prm.is_data:
                bufs[prm.name] = self._buf(a.name, ctx, a).window(a, ctx.ctl, prm.name)
            else:
                c = self._fresh(f"exo_a_{prm.name}")
                L(f"const int {c} = {ctx.ctl(a)};")
                ctl = ctl.bind(prm.name, c, ctx.ctl.is_nonneg(a))
        ictx = replace(ctx, ctl=Ctl(ctl.env, ctl.nonneg, self._stride_of(bufs)), bufs=bufs)
        self._block(callee.body, ("instr",), "body", ictx)
        L.close()

    # ------------------------------------------------------------ split barriers
    def _bar(self, name, ctx: Ctx, node):
        b = ctx.bars.get(name)
        if b is None:
            raise not_supported(f"barrier '{name}' not allocated in this kernel", node)
        return b

    def _arrive(self, s: N.Arrive, ctx: Ctx):
        L = self.L
        b = self._bar(s.targets[0].name, ctx, s)
        if b.kind == "commit":
            for ln in S.lower_commit_arrive(s, b):
                L(ln)
            return
        if b.kind == "cluster":
            for ln in S.lower_cluster_arrive(s):
                L(ln)
            return
        how = S.check_mbar_arrive(s)
        for ref in s.targets:
            b = self._bar(ref.name, ctx, s)
            slot, j = S.slot_index(b, ref, ctx.ctl, s)
            pre = f"const int exo_j = {j}; " if j is not None else ""
            addr = S.slot_addr(b, slot)
            multi = [k for k, a in enumerate(ref.idx[:b.ndist]) if isinstance(a, N.Interval)]
            if not multi:
                fn = "exo_mbar_arrive_cp_async" if how == "cp" else "exo_mbar_arrive"
                L(f"{{ {pre}{fn}({addr}); }}" if pre else f"{fn}({addr});")
                continue
            if how == "cp":
                raise not_supported("a cp.async mbarrier arrive on other CTAs", s)
            # every CTA of the multicast dimensions: own rank with those coordinates replaced
            L.open("")
            L.lines[-1] = L.lines[-1].replace(" {", "{")
            if pre:
                L(pre.strip())
            L("const uint32_t exo_rank = exo_cluster_ctarank();")
            base = "int(exo_rank)"
            loops = []
            for k in multi:
                cs, ext = b.dist_strides[k], b.dist_extents[k]
                base = f"{base} - int((exo_rank / {cs}u) % {ext}u) * {cs}"
                loops.append((f"exo_c{k}", cs, ext))
            for v, cs, ext in loops:
                L.open(f"for (int {v} = 0; {v} < {ext}; ++{v})")
            tgt = " + ".join([f"({base})"] + [f"{v} * {cs}" for v, cs, _ in loops])
            L(f"exo_mbar_arrive_cluster({addr}, uint32_t({tgt}));")
            for _ in loops:
                L.close()
            L.close()

    def _await(self, s: N.Await, ctx: Ctx):
        L = self.L
        b = self._bar(s.target.name, ctx, s)
        if b.kind == "commit":
            for ln in S.lower_commit_await(s, b, self.bulk_read):
                L(ln)
            if b.mech.name == "Sm90_WgmmaCommitGroup":  # reads after it stay after it
                for c in ctx.accs:
                    L(f"exo_fence_acc({c});")
            return
        if b.kind == "cluster":
            for ln in S.lower_cluster_await(s, True, self.proxy):
                L(ln)
            return
        proxy = S.mbar_await_proxy(s, b)
        slot, j = S.slot_index(b, s.target, ctx.ctl, s)
        addr = S.slot_addr(b, slot)
        # arrives from other CTAs are release.cluster: only an acquire.cluster wait
        # synchronizes with them (prelude, exo_mbar_wait_cluster)
        fn = "exo_mbar_wait_cluster" if b.remote_arrive else "exo_mbar_wait"
        wait = f"{fn}({addr}, {S.parity(b, j)});"
        fence = " " + S.proxy_fence(self.proxy) if proxy else ""
        if j is None:
            L(wait + fence)
        elif b.pre:
            L(f"{{ const int exo_j = {j}; if (exo_j >= 0) {{ {wait}{fence} }} }}")
        else:
            L(f"{{ const int exo_j = {j}; {wait}{fence} }}")
