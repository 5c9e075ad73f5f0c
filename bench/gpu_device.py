"""Device side of the GPU run: correctness of one case at one size, on any array backend.

Runs where the checker does not exist: it imports numpy, ctypes and, when present, PyTorch
or CuPy, and loads ``exogpu_codegen/launch.py`` by file path (``launch_module``); the kernels
are the bundle's built libraries, described by its ``manifest.json`` (``gpu_plan.py``).

A run (``check``): random inputs (never zeros) in the kernel's dtypes, outputs pre-filled
with NaN, the raw launch (optionally on a limited number of CTAs, so each runs several
tasks), a synchronization that reports any fault, then a float64 reference computed from
the exact inputs the kernel saw and compared in row chunks: ``||out - ref|| / ||ref||``
against the case's tolerance, every element finite. Backends:

* ``TorchArrays`` / ``CupyArrays``: data made and compared on the GPU (fast at any size);
* ``HostArrays``: numpy on the host, device buffers through the library's own ``exo_rt_*``
  helpers (no framework at all: the sanitizer runs use it, so only our kernels are
  instrumented);
* ``HostArrays(interpret=...)``: no GPU; the "launch" is the sequential interpreter on
  numpy arrays. The dry run uses it to run every op's input, reference and comparison code
  here.

bf16 data is kept as its 16-bit pattern where the backend has no bf16 type (numpy, CuPy).
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4, "f64": 8}


def launch_module():
    """``exogpu_codegen/launch.py`` loaded by path (the package itself needs the checker)."""
    if "exo_launch" in sys.modules:
        return sys.modules["exo_launch"]
    spec = importlib.util.spec_from_file_location("exo_launch",
                                                  ROOT / "exogpu_codegen" / "launch.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["exo_launch"] = mod
    spec.loader.exec_module(mod)
    return mod


def eval_shape(expr: str, sizes: dict) -> int:
    return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(sizes)))  # noqa: S307


def shape_of(case: dict, name: str, sizes: dict) -> tuple[int, ...]:
    return tuple(eval_shape(e, sizes) for e in case["arrays"][name]["shape"])


# ---------------------------------------------------------------- bf16 on numpy
def bf16_bits(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 bit patterns (round to nearest even), as uint16."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns -> f32 values."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


BF16_NAN = 0x7FC0


# ---------------------------------------------------------------- backends
class TorchArrays:
    name = "torch"

    def __init__(self):
        import torch
        self.t = torch
        self.xp = torch
        self.dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

    def rand(self, shape, dtype, seed):
        g = self.t.Generator(device="cuda").manual_seed(seed)
        x = self.t.randn(shape, generator=g, device="cuda", dtype=self.t.float32)
        return x.to(self.dt[dtype])

    def nan(self, shape, dtype):
        return self.t.full(shape, float("nan"), device="cuda", dtype=self.dt[dtype])

    def copy(self, x):
        return x.clone()

    def f64(self, x, dtype):
        return x.to(self.t.float64)

    def matmul(self, a, b):
        return a @ b

    def stats(self, o, r):
        t = self.t
        bad = int((~t.isfinite(o)).sum())
        d = t.nan_to_num(o - r, nan=0.0, posinf=0.0, neginf=0.0)
        return (float((d * d).sum()), float((r * r).sum()), bad,
                float(d.abs().max()) if d.numel() else 0.0,
                float(r.abs().max()) if r.numel() else 0.0)

    def release(self):
        self.t.cuda.empty_cache()


class CupyArrays:
    name = "cupy"

    def __init__(self):
        import cupy
        self.cp = cupy
        self.xp = cupy

    def rand(self, shape, dtype, seed):
        x = self.cp.random.default_rng(seed).standard_normal(shape, dtype=self.cp.float32)
        if dtype == "bf16":
            u = x.view(self.cp.uint32)
            return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(self.cp.uint16)
        return x

    def nan(self, shape, dtype):
        if dtype == "bf16":
            return self.cp.full(shape, BF16_NAN, dtype=self.cp.uint16)
        return self.cp.full(shape, self.cp.nan, dtype=self.cp.float32)

    def copy(self, x):
        return x.copy()

    def f64(self, x, dtype):
        if dtype == "bf16":
            return (x.astype(self.cp.uint32) << 16).view(self.cp.float32).astype(self.cp.float64)
        return x.astype(self.cp.float64)

    def matmul(self, a, b):
        return a @ b

    def stats(self, o, r):
        cp = self.cp
        bad = int((~cp.isfinite(o)).sum())
        d = cp.nan_to_num(o - r, nan=0.0, posinf=0.0, neginf=0.0)
        return (float((d * d).sum()), float((r * r).sum()), bad,
                float(abs(d).max()) if d.size else 0.0, float(abs(r).max()) if r.size else 0.0)

    def release(self):
        self.cp.get_default_memory_pool().free_all_blocks()


class DevBuf:
    """A device allocation made through a kernel library's ``exo_rt_malloc``."""

    def __init__(self, lib, host: np.ndarray):
        self.lib, self.shape, self.dtype, self.nbytes = lib, host.shape, host.dtype, host.nbytes
        p = ctypes.c_void_p(0)
        _rt(lib, lib.exo_rt_malloc(ctypes.byref(p), host.nbytes), "cudaMalloc")
        self.ptr = p.value
        _rt(lib, lib.exo_rt_memcpy(ctypes.c_void_p(self.ptr), ctypes.c_void_p(host.ctypes.data),
                                   host.nbytes, 1), "cudaMemcpy to the device")

    def data_ptr(self) -> int:
        return self.ptr

    def get(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        _rt(self.lib, self.lib.exo_rt_memcpy(ctypes.c_void_p(out.ctypes.data),
                                             ctypes.c_void_p(self.ptr), self.nbytes, 2),
            "cudaMemcpy to the host")
        return out

    def free(self):
        if self.ptr:
            self.lib.exo_rt_free(ctypes.c_void_p(self.ptr))
            self.ptr = 0


def _rt(lib, rc: int, what: str) -> None:
    if rc:
        raise RuntimeError(f"{what} failed: {launch_module().error_string(lib, rc)} "
                           f"(error {rc})")


class HostArrays:
    """numpy data; with ``lib`` the kernel's inputs live in ``DevBuf``s, with ``interpret``
    (dry run, no GPU) they stay numpy arrays (bf16 as ``ml_dtypes.bfloat16``)."""

    name = "numpy"

    def __init__(self, lib=None, interpret=None):
        self.lib, self.interpret, self.xp = lib, interpret, np
        self.bufs: list[DevBuf] = []

    def _dev(self, host: np.ndarray, dtype: str):
        if self.interpret is not None:
            if dtype == "bf16":
                import ml_dtypes
                return host.view(ml_dtypes.bfloat16)
            return host
        b = DevBuf(self.lib, host)
        self.bufs.append(b)
        return b

    def _host(self, x) -> np.ndarray:
        if isinstance(x, DevBuf):
            return x.get()
        return x.view(np.uint16) if x.dtype.name == "bfloat16" else x

    def rand(self, shape, dtype, seed):
        x = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
        return self._dev(bf16_bits(x) if dtype == "bf16" else x, dtype)

    def nan(self, shape, dtype):
        h = np.full(shape, BF16_NAN, np.uint16) if dtype == "bf16" else \
            np.full(shape, np.nan, np.float32)
        return self._dev(h, dtype)

    def copy(self, x):
        return self._host(x).copy()

    def f64(self, x, dtype):
        h = self._host(x)
        return (bf16_value(h) if dtype == "bf16" else h).astype(np.float64)

    def matmul(self, a, b):
        return a @ b

    def stats(self, o, r):
        bad = int((~np.isfinite(o)).sum())
        d = np.nan_to_num(o - r, nan=0.0, posinf=0.0, neginf=0.0)
        return (float((d * d).sum()), float((r * r).sum()), bad,
                float(np.abs(d).max()) if d.size else 0.0,
                float(np.abs(r).max()) if r.size else 0.0)

    def release(self):
        for b in self.bufs:
            b.free()
        self.bufs = []


def backend(prefer: str = "auto"):
    """PyTorch if it imports and sees a GPU, else CuPy; ``prefer`` forces one."""
    errors = []
    for name in (("torch", "cupy") if prefer == "auto" else (prefer,)):
        try:
            if name == "torch":
                import torch
                if torch.cuda.is_available():
                    return TorchArrays()
                errors.append("torch: no GPU visible")
            elif name == "cupy":
                import cupy
                if cupy.cuda.runtime.getDeviceCount() > 0:
                    return CupyArrays()
        except Exception as e:  # noqa: BLE001 - try the next one
            errors.append(f"{name}: {type(e).__name__}: {e}")
    raise RuntimeError("no array backend: " + "; ".join(errors))


# ---------------------------------------------------------------- references
def _row_chunks(n_rows: int, row_elems: int):
    step = max(1, (1 << 25) // max(1, row_elems))
    for i in range(0, n_rows, step):
        yield i, min(n_rows, i + step)


def reference_pairs(case: dict, sz: dict, B, ins: dict, outs: dict, scalars: dict):
    """Yield ``(output name, out chunk, ref chunk)`` in float64 for the case's op: ``ins``
    holds float64 inputs (as the kernel saw them), ``outs`` float64 outputs."""
    op = case["op"]
    if op == "gemm_abt":                       # C = A @ B.T
        A, Bm, C = ins["A"], ins["B"], outs["C"]
        Bt = Bm.T
        for i, j in _row_chunks(A.shape[0], Bm.shape[0]):
            yield "C", C[i:j], B.matmul(A[i:j], Bt)
    elif op == "matmul":                       # C = A @ B
        A, Bm, C = ins["A"], ins["B"], outs["C"]
        for i, j in _row_chunks(A.shape[0], Bm.shape[1]):
            yield "C", C[i:j], B.matmul(A[i:j], Bm)
    elif op == "gemv":                         # y = A @ x
        A, x, y = ins["A"], ins["x"], outs["y"]
        for i, j in _row_chunks(A.shape[0], 1):
            yield "y", y[i:j], B.matmul(A[i:j], x)
    elif op == "copy":
        for i, j in _row_chunks(ins["A"].shape[0], 1):
            yield "B", outs["B"][i:j], ins["A"][i:j]
    elif op == "saxpy":                        # y = a x + y
        a = scalars["a"]
        for i, j in _row_chunks(ins["x"].shape[0], 1):
            yield "y", outs["y"][i:j], ins["x"][i:j] * a + ins["y"][i:j]
    elif op == "scale":
        yield "B", outs["B"], ins["A"] * scalars["a"]
    elif op == "transpose":                    # B[n, m] = A[m, n]
        A, Bo = ins["A"], outs["B"]
        for i, j in _row_chunks(Bo.shape[0], Bo.shape[1]):
            yield "B", Bo[i:j], A[:, i:j].T
    elif op == "multicast":                    # C[t, k, c] = A[t, k] for both CTAs c
        for c in range(outs["C"].shape[2]):
            yield "C", outs["C"][:, :, c], ins["A"]
    else:
        raise KeyError(f"unknown op {op!r}")


# ---------------------------------------------------------------- one correctness run
def check(case: dict, sz: dict, B, launcher, seed: int = 0) -> dict:
    """Run ``case`` at sizes ``sz`` (``grid`` in ``sz``: CTAs per launch) with backend ``B``;
    ``launcher(args, grid)`` launches and synchronizes. Returns the record of the run."""
    sizes = {k: v for k, v in sz.items() if k in case["moduli"]}
    t0 = time.perf_counter()
    outs_names = set(case["outputs"])
    arrays, before = {}, {}
    for i, (n, a) in enumerate(sorted(case["arrays"].items())):
        shape = shape_of(case, n, sizes)
        if n in outs_names:
            arrays[n] = B.nan(shape, a["dtype"])
        else:
            arrays[n] = B.rand(shape, a["dtype"], 1000 * seed + 17 * i + 1)
        if n in case["inout"]:
            before[n] = B.copy(arrays[n])
    args = {**sizes, **case["scalars"], **arrays}
    t1 = time.perf_counter()
    launcher(args, sz.get("grid", 0))
    t2 = time.perf_counter()
    dt = {n: a["dtype"] for n, a in case["arrays"].items()}
    ins = {n: B.f64(before.get(n, x), dt[n]) for n, x in arrays.items() if n not in outs_names}
    outs = {n: B.f64(arrays[n], dt[n]) for n in list(outs_names) + case["inout"]}
    acc: dict[str, list] = {}
    for name, o, r in reference_pairs(case, sizes, B, ins, outs, case["scalars"]):
        s = B.stats(o, r)
        a = acc.setdefault(name, [0.0, 0.0, 0, 0.0, 0.0])
        a[0] += s[0]
        a[1] += s[1]
        a[2] += s[2]
        a[3] = max(a[3], s[3])
        a[4] = max(a[4], s[4])
    tol = case["tolerance"]
    rec = {"sizes": sz, "tolerance": tol, "outputs": {}, "seconds": {
        "inputs": round(t1 - t0, 3), "kernel": round(t2 - t1, 3),
        "reference": round(time.perf_counter() - t2, 3)}}
    ok = bool(acc)
    for name, (sd, sr, bad, dmax, rmax) in acc.items():
        rel = math.sqrt(sd / sr) if sr > 0 else (0.0 if sd == 0 else math.inf)
        good = bad == 0 and (sd == 0 if tol == 0 else rel <= tol)
        rec["outputs"][name] = {"rel_error": rel, "max_abs_error": dmax, "max_abs_ref": rmax,
                                "nonfinite": bad, "ok": good}
        ok = ok and good
    rec["ok"] = ok
    del arrays, before, ins, outs
    B.release()
    return rec


def raw_launcher(case: dict, lib, raw):
    """``launcher(args, grid)`` for ``check``: the raw launch on the default stream, then
    the library's own synchronize, whose error (a fault in the kernel) is raised."""
    L = launch_module()

    def run(args, grid):
        L.set_grid_limit(lib, grid)
        try:
            raw(0, **args)
            _rt(lib, lib.exo_rt_sync(ctypes.c_void_p(0)), "the kernel")
        finally:
            L.set_grid_limit(lib, 0)
    return run


def open_case(case: dict, bundle: Path, lib_dir: Path | None = None):
    """``(lib, RawLaunch)`` of a manifest case (its library from ``lib_dir`` if rebuilt)."""
    L = launch_module()
    path = (lib_dir / Path(case["lib"]).name) if lib_dir else bundle / case["lib"]
    lib = L.load_library(path)
    return lib, L.RawLaunch(lib, case["entry"], [tuple(p) for p in case["params"]],
                            case["proc"])
