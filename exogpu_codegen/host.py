"""CPU-scope code as host C++: the ``extern "C"`` entry point of a proc, tensor-map encoding,
host/device allocations, stream instructions, and the launch of each kernel.

Entry point: ``int exo_<proc>(void* stream, <params>)`` returning 0 or a CUDA error code, with
parameters in declaration order: ``int64_t`` for size/index/bool, ``void*`` for tensors (plus
one ``int64_t`` element stride per dimension for window parameters ``[T][...]``), ``double``
for by-value scalars (``CudaGridConstant``). Before any work it checks the base pointers
of the global-memory parameters that aligned accesses use (``ld.global.v4``, ``cp.async``):
error ``ALIGN_BASE`` (``launch``) plus the parameter's index.
"""

from __future__ import annotations

from exogpu_verify.analysis import StaticInfo
from exogpu_verify.analysis.instr_checks import gmem_alignment_requirements
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import const_value

from .buffers import Buf, TensorMapView, c_order_strides
from .cexpr import Ctl, cname, convert, cpp_type, data_expr_t
from .device import KernelCode, KernelGen
from .emitter import Lines
from .launch import ALIGN_BASE
from .errors import not_supported

_TMAP_DTYPE = {"f32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", "f16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
               "bf16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", "i32": "CU_TENSOR_MAP_DATA_TYPE_INT32",
               "f64": "CU_TENSOR_MAP_DATA_TYPE_FLOAT64", "ui8": "CU_TENSOR_MAP_DATA_TYPE_UINT8"}
_SWIZZLE = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B",
            64: "CU_TENSOR_MAP_SWIZZLE_64B", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}


def entry_params(p: N.Procedure) -> list[tuple[str, str, str]]:
    """(C++ declaration, ctypes kind, source name) of the entry's parameters after the stream;
    kind in int64 | ptr | double | stride."""
    out = []
    for q in p.params:
        c = cname(q.name)
        if not q.is_data:
            out.append((f"int64_t {c}", "int64", q.name))
        elif q.mem is not None and q.mem.space == "gridconst":
            if q.type.shape:
                raise not_supported(f"CudaGridConstant array parameter '{q.name}'", q)
            out.append((f"double {c}_val", "double", q.name))
        elif q.mem is not None and q.mem.space not in ("host", "gmem"):
            raise not_supported(f"a parameter in {q.mem} ('{q.name}')", q)
        else:
            out.append((f"void* {c}_ptr", "ptr", q.name))
            if q.type.is_window:
                for d in range(q.type.rank):
                    out.append((f"int64_t {c}_s{d}", "stride", q.name))
    return out


class HostGen:
    def __init__(self, p: N.Procedure, info: StaticInfo, arch: str):
        self.p, self.info, self.arch = p, info, arch
        self.L = Lines()
        self.kernels: list[KernelCode] = []

    def generate(self) -> tuple[str, list[KernelCode]]:
        p, L = self.p, self.L
        env, nonneg, bufs = {}, set(), {}
        decls = ["void* exo_stream"] + [d for d, _, _ in entry_params(p)]
        L.open(f'extern "C" int exo_{p.name}({", ".join(decls)})')
        L("cudaStream_t exo_cudaStream = static_cast<cudaStream_t>(exo_stream);")
        L("(void)exo_cudaStream;")
        for q in p.params:
            c = cname(q.name)
            if not q.is_data:
                env[q.name] = c
                if q.type.name == "size":
                    nonneg.add(q.name)
        ctl = Ctl(env, nonneg)
        for q in p.params:
            if not q.is_data:
                continue
            c = cname(q.name)
            ct = cpp_type(q.type.scalar)
            if q.mem is not None and q.mem.space == "gridconst":
                L(f"const {ct} {c} = {ct}({c}_val);")
                bufs[q.name] = Buf(q.name, q.type.scalar, q.mem, c, (), (), by_value=True)
                continue
            L(f"{ct}* const {c} = static_cast<{ct}*>({c}_ptr);")
            shape = tuple(ctl(e) for e in q.type.shape)
            if q.type.is_window:
                strides = tuple(f"{c}_s{d}" for d in range(q.type.rank))
                bufs[q.name] = Buf(q.name, q.type.scalar, q.mem, c, shape, strides,
                                   portable=False)
            else:
                bufs[q.name] = Buf(q.name, q.type.scalar, q.mem, c, shape,
                                   tuple(c_order_strides(list(shape))))
        self._alignment_checks()
        ctl = Ctl(env, nonneg, self._stride_of(bufs))
        self._block(p.body, (), "body", ctl, bufs)
        L("return 0;")
        L.close()
        return L.text(), self.kernels

    def _alignment_checks(self) -> None:
        """The base pointer of every global-memory parameter that an instruction with a
        declared ``Aligned`` check accesses is aligned as it needs: the proofs establish the
        window offsets only (``analysis.instr_checks.gmem_alignment_requirements``); a
        caller may pass an offset slice. Error ``ALIGN_BASE + parameter index`` (``launch``
        names the argument)."""
        index = {q.name: i for i, q in enumerate(self.p.params)}
        reqs = gmem_alignment_requirements(self.p)
        if reqs:
            self.L(f"constexpr int exo_err_align = {ALIGN_BASE};  // + index of a misaligned "
                   "parameter")
        for name, (nbytes, who, line) in reqs.items():
            c = cname(name)
            self.L(f"// {who}() (line {line}) accesses '{name}' {nbytes}-byte aligned")
            self.L(f"if (reinterpret_cast<uintptr_t>({c}_ptr) % {nbytes} != 0) "
                   f"return exo_err_align + {index[name]};")

    @staticmethod
    def _stride_of(bufs):
        def f(name, dim):
            b = bufs.get(name)
            if b is None or b.strides[dim] is None:
                raise not_supported(f"stride({name}, {dim}) here")
            return b.strides[dim]
        return f

    def _block(self, stmts, prefix, fld, ctl: Ctl, bufs: dict):
        ends = []
        for i, s in enumerate(stmts):
            path = prefix + ((fld, i),)
            ctl, bufs = self._stmt(s, path, ctl, bufs, ends)
        for e in reversed(ends):
            self.L(e)

    def _stmt(self, s, path, ctl: Ctl, bufs: dict, ends: list):
        L = self.L
        if isinstance(s, N.WindowStmt):
            base = self._buf(s.rhs.name, bufs, s)
            if s.special is not None:
                b = self._tensor_map(s, base, ctl)
            else:
                b = base.window(s.rhs, ctl, s.name)
            return ctl, {**bufs, s.name: b}
        if isinstance(s, N.Alloc):
            return ctl, {**bufs, s.name: self._alloc(s, ctl, ends)}
        if isinstance(s, (N.Assign, N.Reduce)):
            b = self._buf(s.name, bufs, s)
            if b.mem is None or b.mem.space != "host":
                raise not_supported(f"writing '{s.name}' ({b.mem}) element by element from "
                                    "CPU code", s)
            lhs = b.element(s.idx, ctl, s)
            code, t = data_expr_t(s.rhs, ctl, lambda r: self._host_read(r, bufs, ctl),
                                  b.scalar)
            op = "=" if isinstance(s, N.Assign) else "+="
            L(f"{lhs} {op} {convert(code, t, b.ctype)};")
        elif isinstance(s, N.For):
            if not isinstance(s.mode, N.Seq):
                raise not_supported(f"{s.mode} loop at CPU scope", s)
            c = cname(s.iter)
            L.open(f"for (int64_t {c} = {ctl(s.lo)}; {c} < {ctl(s.hi)}; ++{c})")
            self._block(s.body, path, "body", ctl.bind(s.iter, c, ctl.is_nonneg(s.lo)), bufs)
            L.close()
        elif isinstance(s, N.If):
            L.open(f"if ({ctl(s.cond)})")
            self._block(s.body, path, "body", ctl, bufs)
            if s.orelse:
                L.close("} else {")
                L.depth += 1
                self._block(s.orelse, path, "orelse", ctl, bufs)
            L.close()
        elif isinstance(s, N.With):
            self._launch(s, path, ctl, bufs)
        elif isinstance(s, N.Call):
            self._call(s, ctl, bufs)
        elif isinstance(s, N.Fence):
            L("EXO_TRY(cudaStreamSynchronize(exo_cudaStream));  // CPU-scope Fence")
        elif isinstance(s, N.Pass):
            pass
        else:
            raise not_supported(f"{type(s).__name__} at CPU scope", s)
        return ctl, bufs

    def _buf(self, name, bufs, node) -> Buf:
        try:
            return bufs[name]
        except KeyError:
            raise not_supported(f"use of '{name}' at CPU scope", node) from None

    def _host_read(self, r: N.Read, bufs, ctl) -> str:
        b = self._buf(r.name, bufs, r)
        if b.mem is not None and b.mem.space not in ("host", "gridconst"):
            raise not_supported(f"reading '{r.name}' ({b.mem}) element by element from CPU "
                                "code", r)
        return b.element(r.idx, ctl, r)

    def _alloc(self, s: N.Alloc, ctl: Ctl, ends: list) -> Buf:
        L = self.L
        c = cname(s.name)
        ct = cpp_type(s.type.scalar)
        shape = [ctl(e) for e in s.type.shape]
        n = " * ".join(f"size_t({x})" for x in shape) or "size_t(1)"
        if s.mem.space == "host":
            L(f"{ct}* const {c} = static_cast<{ct}*>(std::calloc({n}, sizeof({ct})));")
            L(f"if (!{c}) return int(cudaErrorMemoryAllocation);")
            ends.append(f"std::free({c});")
        elif s.mem.space == "gmem":
            L(f"{ct}* {c} = nullptr;")
            L(f"EXO_TRY(cudaMallocAsync(reinterpret_cast<void**>(&{c}), {n} * sizeof({ct}), "
              "exo_cudaStream));")
            ends.append(f"EXO_TRY(cudaFreeAsync({c}, exo_cudaStream));")
        else:
            raise not_supported(f"allocating {s.mem} at CPU scope", s)
        return Buf(s.name, s.type.scalar, s.mem, c, tuple(shape),
                   tuple(c_order_strides(shape)))

    def _tensor_map(self, s: N.WindowStmt, base: Buf, ctl: Ctl) -> Buf:
        L = self.L
        mem = s.special
        if base.mem is None or base.mem.space != "gmem":
            raise not_supported(f"a tensor map over '{base.name}' ({base.mem}); tensor maps "
                                "cover CudaGmemLinear tensors", s)
        if base.scalar.name not in _TMAP_DTYPE:
            raise not_supported(f"a tensor map of {base.scalar}", s)
        swz, box_in = mem.args[0], list(mem.args[1:])
        rank = base.rank
        coords, dims, box = [], [], []
        ivs = [k for k, a in enumerate(s.rhs.idx) if isinstance(a, N.Interval)]
        if len(box_in) != len(ivs):
            raise not_supported(f"Sm90_tensorMap with {len(box_in)} box extents for a window "
                                f"with {len(ivs)} interval dimensions", s)
        bi = iter(box_in)
        for k, a in enumerate(s.rhs.idx):
            coords.append(ctl(a.pt if isinstance(a, N.Point) else a.lo))
            if isinstance(a, N.Interval):
                dims.append(k)
                box.append(next(bi))
            else:
                box.append(1)
        c = cname(s.name)
        # encoded once per distinct (pointer, dims, strides): unchanged arguments reuse it
        L(f"static thread_local exo_TmapCache exo_tmc_{c};")
        L.open("")
        L.lines[-1] = L.lines[-1].replace(" {", "{")
        L(f"const int64_t exo_dims[{rank}] = {{{', '.join(base.shape)}}};")
        L(f"const int64_t exo_strides[{rank}] = {{{', '.join(base.strides)}}};")
        L(f"const int exo_box[{rank}] = {{{', '.join(map(str, box))}}};")
        L(f"EXO_TRY(exo_tmap_cached(&exo_tmc_{c}, {rank}, {base.ptr}, exo_dims, exo_strides, "
          f"[&](CUtensorMap* exo_m) {{ return exo_encode_tmap(exo_m, "
          f"{_TMAP_DTYPE[base.scalar.name]}, {rank}, {base.ptr}, exo_dims, exo_strides, "
          f"exo_box, {base.scalar.nbytes}, {_SWIZZLE[swz]}); }}));")
        L.close()
        L(f"const CUtensorMap& {c} = exo_tmc_{c}.map;")
        tm = TensorMapView(c, tuple(coords), tuple(dims), tuple(box), swz)
        return Buf(s.name, base.scalar, mem, c, tuple("1" for _ in dims),
                   tuple("0" for _ in dims), tmap=tm)

    def _call(self, s: N.Call, ctl: Ctl, bufs):
        callee = s.callee
        if callee.instr is None:
            raise not_supported(f"calling the proc {callee.name}() (calls of procs are not "
                                "generated yet; inline it)", s)
        info = callee.instr
        if info.timeline.device != "cpu" or info.codegen is None:
            raise not_supported(f"instruction {callee.name}() at CPU scope", s)
        args: dict = {}
        for prm, a in zip(callee.params, s.args):
            if prm.is_data:
                args.update(self._buf(a.name, bufs, a).instr_args(prm.name, a, ctl))
            else:
                v = const_value(a)
                args[prm.name] = v if v is not None else ctl(a)
        code = info.codegen(args) if callable(info.codegen) else info.codegen.format(**args)
        self.L(f"EXO_TRY({code.rstrip(';')});" if code.startswith("cuda") and
               code.count(";") == 1 else code)

    def _launch(self, s: N.With, path, ctl: Ctl, bufs: dict):
        if not isinstance(s.ctx, N.CudaDeviceFunction):
            raise not_supported("CudaWarps at CPU scope", s)
        k = len(self.kernels)
        kc = KernelGen(self.p, self.info, k, path, s, ctl, bufs, self.arch).generate()
        self.kernels.append(kc)
        L = self.L
        L.open("")
        L.lines[-1] = L.lines[-1].replace(" {", "{")
        L(f"// kernel {k}: {s.ctx}")
        L(f"{kc.args_struct} exo_a{{}};")
        for decl, val in kc.fields:
            fld = decl.rstrip(";").split()[-1]
            L(f"exo_a.{fld} = {val};")
        L(f"EXO_TRY(exo_launch{k}_{self.p.name}(exo_cudaStream, exo_a, "
          f"int64_t({kc.task_count_host})));")
        L.close()


def launch_function(p: N.Procedure, kc: KernelCode) -> str:
    """The host function that sizes the grid and launches kernel ``kc``."""
    L = Lines()
    L.open(f"static int exo_launch{kc.index}_{p.name}(cudaStream_t exo_cudaStream, "
           f"const {kc.args_struct}& exo_a, int64_t exo_ntasks)")
    L("if (exo_ntasks <= 0) return 0;")
    L("int exo_dev = 0;")
    L("const int exo_sms = exo_num_sms(&exo_dev);")
    L("if (exo_sms <= 0) return int(cudaErrorNoDevice);")
    if kc.smem_bytes:
        L("// the dynamic shared-memory limit, raised once per device and host thread")
        L("static thread_local uint64_t exo_smem_set = 0;")
        L.open("if (exo_dev >= 64 || !(exo_smem_set & (uint64_t(1) << exo_dev)))")
        L(f"EXO_TRY(cudaFuncSetAttribute({kc.name}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
          f"{kc.smem_bytes}));")
        L("if (exo_dev < 64) exo_smem_set |= uint64_t(1) << exo_dev;")
        L.close()
    L("// persistent kernel: one cluster per group of SMs, never more clusters than tasks")
    L(f"int64_t exo_clusters = int64_t(exo_sms) * {kc.blocks_per_sm} / {kc.cluster_dim};")
    L(f"if (exo_grid_limit > 0 && exo_clusters * {kc.cluster_dim} > exo_grid_limit)")
    L(f"  exo_clusters = exo_grid_limit / {kc.cluster_dim};")
    L("if (exo_clusters > exo_ntasks) exo_clusters = exo_ntasks;")
    L("if (exo_clusters < 1) exo_clusters = 1;")
    L("cudaLaunchConfig_t exo_cfg = {};")
    L(f"exo_cfg.gridDim = dim3(unsigned(exo_clusters * {kc.cluster_dim}), 1, 1);")
    L(f"exo_cfg.blockDim = dim3({kc.block_dim}, 1, 1);")
    L(f"exo_cfg.dynamicSmemBytes = {kc.smem_bytes};")
    L("exo_cfg.stream = exo_cudaStream;")
    if kc.cluster_dim > 8:  # verified only with CudaDeviceFunction(non_portable_cluster=True)
        L(f"EXO_TRY(cudaFuncSetAttribute({kc.name}, "
          "cudaFuncAttributeNonPortableClusterSizeAllowed, 1));")
    if kc.cluster_dim > 1:
        L("cudaLaunchAttribute exo_attr[1];")
        L("exo_attr[0].id = cudaLaunchAttributeClusterDimension;")
        L(f"exo_attr[0].val.clusterDim.x = {kc.cluster_dim};")
        L("exo_attr[0].val.clusterDim.y = 1;")
        L("exo_attr[0].val.clusterDim.z = 1;")
        L("exo_cfg.attrs = exo_attr;")
        L("exo_cfg.numAttrs = 1;")
    L(f"EXO_TRY(cudaLaunchKernelEx(&exo_cfg, {kc.name}, exo_a));")
    L("return int(cudaGetLastError());")
    L.close()
    return L.text()
