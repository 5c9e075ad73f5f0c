"""Build small CUDA translation units that instantiate instruction templates, and compile them.

Every instruction's ``codegen`` is called with the argument conventions of
``exogpu_verify.platforms`` (pointer expressions, strides, tensor-map coordinates, mbarrier
address, scale-d flag) bound to variables of the right C++ types, one kernel (or host function)
per instruction, so that nvcc (and ptxas, for the target architecture) checks every template.
"""

from __future__ import annotations

import shutil
import subprocess
from math import prod
from pathlib import Path

from exogpu_verify.ir import nodes as N
from exogpu_verify.platforms._ptx import CPP_TYPE, cpp_prelude

NVCC = shutil.which("nvcc")


def _eval(e, env: dict) -> int:
    if isinstance(e, N.Const):
        return int(e.val)
    if isinstance(e, N.Read):
        return env[e.name]
    if isinstance(e, N.BinOp):
        a, b = _eval(e.lhs, env), _eval(e.rhs, env)
        return {"+": a + b, "-": a - b, "*": a * b, "/": a // b, "%": a % b}[e.op]
    raise TypeError(f"cannot evaluate {e!r}")


def default_sizes(p) -> dict:
    """Sizes for which an instruction's template can be instantiated."""
    name = p.name
    sizes = [q.name for q in p.params if not q.is_data and q.type.name == "size"]
    if name.startswith("Sm80_cp_async_"):
        return {"n": 4 if name.endswith("f32") else 8}
    if name == "setmaxnreg_inc":
        return {"n": 232}
    if name == "setmaxnreg_dec":
        return {"n": 40}
    if name.startswith("tma_"):
        r = len(sizes)
        return {s: (16 if i == 0 else 2 if i < r - 1 else 32) for i, s in enumerate(sizes)}
    return {s: 4 for s in sizes}


def _param_decl(p, q, env):
    """(declarations, args entries) for data parameter ``q`` of instruction ``p``."""
    T = CPP_TYPE[q.type.scalar.name]
    shape = [_eval(e, env) for e in q.type.shape]
    units = p.instr.distributed_units(q.name)
    shard = prod(shape[len(units):]) if shape[len(units):] else 1
    nm = f"v_{q.name}"
    decls, args = [], {}
    space = q.mem.space if q.mem.space != "abstract" else (
        "tensormap" if "tensorMap" in q.mem.name else "smem")
    if space == "tensormap":
        decls.append(("param", f"const __grid_constant__ CUtensorMap {nm}"))
        args[q.name] = nm
        args[f"{q.name}_coords"] = [f"c_{q.name}_{d}" for d in range(len(shape))]
        decls += [("param", f"int c_{q.name}_{d}") for d in range(len(shape))]
    elif space == "rmem":
        decls.append(("body", f"{T} {nm}[{shard}] = {{}};"))
        args[q.name] = nm
    elif space == "smem":
        decls.append(("body", f"__shared__ alignas(1024) {T} {nm}[{prod(shape)}];"))
        args[q.name] = nm
    else:  # gmem or host
        decls.append(("param", f"{T}* {nm}"))
        args[q.name] = nm
    for d in range(len(shape)):
        decls.append(("param", f"int s_{q.name}_{d}"))
        args[f"{q.name}_stride{d}"] = f"s_{q.name}_{d}"
    if q.mem.name == "Sm90_RmemMatrixD":
        decls.append(("body", f"int {nm}_scale_d = 1;"))
        args[f"{q.name}_scale_d"] = f"{nm}_scale_d"
    if space == "rmem":  # keep the registers observable
        decls.append(("tail", f"for (int i = 0; i < {shard}; ++i) "
                              f"exo_sink[i % 32] = float({nm}[i]);"))
    return decls, args


def instantiate(p, idx: int, sizes: dict | None = None) -> str:
    """A kernel (or host function) whose body is ``p``'s template for some arguments."""
    env = dict(default_sizes(p) if sizes is None else sizes)
    params, body, tail = [], [], []
    args: dict = dict(env)
    for q in p.params:
        if q.is_data:
            decls, a = _param_decl(p, q, env)
            args.update(a)
            for kind, text in decls:
                {"param": params, "body": body, "tail": tail}[kind].append(text)
        elif q.name not in env:  # index parameters: runtime values
            params.append(f"int i_{q.name}")
            args[q.name] = f"i_{q.name}"
    if p.instr.barrier is not None:
        body.append("__shared__ alignas(8) uint64_t v_mbar;")
        args["_mbar"] = "exo_smem_u32(&v_mbar)"
    cg = p.instr.codegen
    stmt = cg(args) if callable(cg) else cg.format(**args)
    if p.instr.timeline.device == "cpu":
        return (f"void exo_host_{idx}_{p.name}({', '.join(params)}) {{\n"
                f"  cudaStream_t exo_cudaStream = 0;\n  {stmt}\n}}\n")
    params.append("float* exo_sink")
    return (f"__global__ void exo_k{idx}_{p.name}({', '.join(params)}) {{\n  "
            + "\n  ".join(body) + f"\n  {stmt}\n  " + "\n  ".join(tail) + "\n}\n")


def translation_unit(items) -> str:
    """``items``: (instr, sizes or None) pairs -> a complete .cu source."""
    instrs = [p for p, _ in items]
    head = ("#include <cstdint>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
            + cpp_prelude(instrs) + "\n")
    return head + "\n".join(instantiate(p, i, s) for i, (p, s) in enumerate(items))


def compile_cu(src: str, arch: str, workdir: Path) -> subprocess.CompletedProcess:
    """``nvcc -gencode arch=compute_X,code=sm_X -c`` (ptxas checks the PTX for ``arch``)."""
    f = workdir / f"instrs_{arch}.cu"
    f.write_text(src)
    cmd = [NVCC, "-std=c++17", "-gencode", f"arch=compute_{arch},code=sm_{arch}", "-c",
           str(f), "-o", str(workdir / f"instrs_{arch}.o")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)
