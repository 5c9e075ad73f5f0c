"""Device side of the GPU run: correctness of one case at one size, on any array backend.

Runs where the checker does not exist: it imports numpy, ctypes and, when present, PyTorch
or CuPy, and loads the raw launch path ``launch.py`` (a copy of ``exogpu_codegen/launch.py``
in the bundle's ``runner/``, else the repository's) by file path; the kernels are the
bundle's built libraries, described by its ``manifest.json`` (``gpu_plan.py``).

A run (``check``): random normal inputs (never zeros) in the kernel's dtypes, outputs
pre-filled with NaN, the raw launch (optionally on a limited number of CTAs, so each runs
several tasks), a synchronization that reports any fault, then a float64 reference computed
from the exact inputs the kernel saw, compared chunk by chunk (no float64 copy of a whole
large array is ever made): every output element finite, the norm-wise error
``||out - ref|| / ||ref||`` within ``tol_norm`` and the largest element error within
``tol_elem * rms(ref)`` (``tolerances``: an error model of the case's arithmetic; exact for
copies). Backends:

* ``TorchArrays`` / ``CupyArrays``: data made and compared on the GPU (fast at any size);
* ``HostArrays(lib=...)``: numpy on the host, device buffers through the library's own
  ``exo_rt_*`` helpers (no framework at all: the sanitizer runs use it, so only our kernels
  are instrumented);
* ``HostArrays(interpret=True)``: no GPU; the "launch" is the sequential interpreter on
  numpy arrays (the dry run runs every op's input, reference and comparison code so).

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

HERE = Path(__file__).resolve().parent
BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4, "f64": 8}
#: elements of one float64 temporary in the reference (256 MiB)
CHUNK = 1 << 25
EXACT_OPS = ("copy", "transpose", "multicast")


def launch_module():
    """The raw launch path loaded by file path (the package ``exogpu_codegen`` itself needs
    the checker): the bundle's copy beside this file, else the repository's."""
    if "exo_launch" in sys.modules:
        return sys.modules["exo_launch"]
    path = HERE / "launch.py"
    if not path.exists():
        path = HERE.parent / "exogpu_codegen" / "launch.py"
    spec = importlib.util.spec_from_file_location("exo_launch", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["exo_launch"] = mod
    spec.loader.exec_module(mod)
    return mod


def eval_shape(expr: str, sizes: dict) -> int:
    """A shape expression of the manifest (``M``, ``N / 32``, ``2 * K``; ``/`` is floor
    division) at ``sizes``."""
    return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(sizes)))  # noqa: S307


def shape_of(case: dict, name: str, sizes: dict) -> tuple[int, ...]:
    return tuple(eval_shape(e, sizes) for e in case["arrays"][name]["shape"])


def product_flops(case: dict, sizes: dict) -> float:
    """Floating-point operations of one run of a product case (``gemm_abt``, ``matmul``:
    ``2 M N K`` read off the shapes of ``A`` and the output; ``gemv``: ``2 M K``), else 0."""
    if case["op"] in ("gemm_abt", "matmul"):
        out = (list(case["outputs"]) + list(case.get("inout", ())))[0]
        return 2.0 * math.prod(shape_of(case, out, sizes)) * shape_of(case, "A", sizes)[-1]
    if case["op"] == "gemv":
        return 2.0 * math.prod(shape_of(case, "A", sizes))
    return 0.0


def proc_sizes(case: dict, sz: dict) -> dict:
    """The proc's size arguments of a size record (which may also hold ``grid`` etc.)."""
    return {k: v for k, v in sz.items() if k in case["moduli"]}


# ---------------------------------------------------------------- bf16 on numpy
def bf16_bits(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 bit patterns (round to nearest even), as uint16."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns -> f32 values."""
    return (np.ascontiguousarray(bits).astype(np.uint32) << 16).view(np.float32)


BF16_NAN = 0x7FC0


# ---------------------------------------------------------------- tolerances
def tolerances(case: dict, sizes: dict) -> tuple[float, float]:
    """``(tol_norm, tol_elem)`` of ``case`` at ``sizes``: the norm-wise relative error allowed
    and the largest element error allowed in units of ``rms(ref)``; ``(0, 0)``: bitwise.

    The reference is float64 from the exact inputs, so what remains is (relative, per
    element): tf32 operands (a tensor core keeps 10 of f32's 23 mantissa bits, possibly by
    truncation, which biases products by up to 2^-10), f32 accumulation over the reduction
    length ``k`` (tensor cores add each 16-wide block with truncation, so the error can grow
    faster than sqrt(k): ``2^-22 sqrt(k) (1 + sqrt(k)/64)``), and the rounding of a 16-bit
    output (2^-9, bounded by 2^-8). ``tol_norm`` is twice their sum, ``tol_elem`` 24 times:
    loose for rounding, yet a wrong tile, a stale or unwritten element or a missing
    K-slice is off by O(1) (never within 0.1 rms)."""
    op = case["op"]
    if op in EXACT_OPS:
        return 0.0, 0.0
    dts = {n: a["dtype"] for n, a in case["arrays"].items()}
    red = case.get("reduction")            # a size name, or a constant ("8")
    k = max(1, int(red) if red and red.isdigit() else int(sizes.get(red, 1))) if red else 1
    r_op = 2.0 ** -10 if case.get("tensor_cores") and dts.get("A") == "f32" else 0.0
    r_acc = 2.0 ** -22 * math.sqrt(k) * (1 + math.sqrt(k) / 64) if red else 2.0 ** -23
    outs = list(case["outputs"]) + list(case.get("inout", ()))
    r_out = 2.0 ** -8 if any(dts[o] in ("bf16", "f16") for o in outs) else 2.0 ** -24
    base = r_op + r_acc + r_out
    return 2 * base, 24 * base


# ---------------------------------------------------------------- backends
class TorchArrays:
    name = "torch"

    def __init__(self, device: str = "cuda"):
        import torch
        self.t = torch
        self.device = device
        self.dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

    def rand(self, shape, dtype, seed):
        g = self.t.Generator(device=self.device).manual_seed(seed)
        x = self.t.randn(shape, generator=g, device=self.device, dtype=self.t.float32)
        return x.to(self.dt[dtype])

    def nan(self, shape, dtype):
        return self.t.full(shape, float("nan"), device=self.device, dtype=self.dt[dtype])

    def copy(self, x):
        return x.clone()

    def view(self, x):
        return x

    def f64(self, x, dtype):
        return x.to(self.t.float64)

    def zeros64(self, shape):
        return self.t.zeros(shape, device=self.device, dtype=self.t.float64)

    def stats(self, o, r):
        t = self.t
        bad = int((~t.isfinite(o)).sum())
        d = t.nan_to_num(o - r, nan=0.0, posinf=0.0, neginf=0.0)
        return (float((d * d).sum()), float((r * r).sum()), bad,
                float(d.abs().max()) if d.numel() else 0.0, int(d.numel()))

    def release(self):
        if self.device == "cuda":
            self.t.cuda.synchronize()
            self.t.cuda.empty_cache()


class CupyArrays:
    """CuPy (any version with ``cupy.random.default_rng``); ``xp`` may be numpy, which the
    tests use to run this class's code without a GPU."""

    name = "cupy"

    def __init__(self, xp=None):
        if xp is None:
            import cupy as xp
        self.xp = xp

    def rand(self, shape, dtype, seed):
        xp = self.xp
        x = xp.random.default_rng(seed).standard_normal(shape, dtype=xp.float32)
        if dtype == "bf16":
            u = x.view(xp.uint32).astype(xp.uint64)
            return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(xp.uint16)
        return x

    def nan(self, shape, dtype):
        if dtype == "bf16":
            return self.xp.full(shape, BF16_NAN, dtype=self.xp.uint16)
        return self.xp.full(shape, self.xp.nan, dtype=self.xp.float32)

    def copy(self, x):
        return x.copy()

    def view(self, x):
        return x

    def f64(self, x, dtype):
        xp = self.xp
        if dtype == "bf16":
            return (xp.ascontiguousarray(x).astype(xp.uint32) << 16).view(xp.float32) \
                .astype(xp.float64)
        return x.astype(xp.float64)

    def zeros64(self, shape):
        return self.xp.zeros(shape, dtype=self.xp.float64)

    def stats(self, o, r):
        xp = self.xp
        bad = int((~xp.isfinite(o)).sum())
        d = xp.nan_to_num(o - r, nan=0.0, posinf=0.0, neginf=0.0)
        return (float((d * d).sum()), float((r * r).sum()), bad,
                float(abs(d).max()) if d.size else 0.0, int(d.size))

    def release(self):
        if self.xp is not np:
            self.xp.cuda.Device().synchronize()
            self.xp.get_default_memory_pool().free_all_blocks()


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
    """numpy data; with ``lib`` the kernel's arrays live in ``DevBuf``s, with ``interpret``
    (dry run, no GPU) they stay numpy arrays (bf16 as ``ml_dtypes.bfloat16``)."""

    name = "numpy"

    def __init__(self, lib=None, interpret=False):
        self.lib, self.interpret, self.xp = lib, interpret, np
        self.bufs: list[DevBuf] = []

    def _dev(self, host: np.ndarray, dtype: str):
        if self.interpret:
            if dtype == "bf16":
                import ml_dtypes
                return host.view(ml_dtypes.bfloat16)
            return host
        b = DevBuf(self.lib, host)
        self.bufs.append(b)
        return b

    def view(self, x) -> np.ndarray:
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
        return self.view(x).copy()

    def f64(self, x, dtype):
        if x.dtype.name == "bfloat16":
            x = x.view(np.uint16)
        return (bf16_value(x) if dtype == "bf16" else x).astype(np.float64)

    def zeros64(self, shape):
        return np.zeros(shape, np.float64)

    def stats(self, o, r):
        bad = int((~np.isfinite(o)).sum())
        d = np.nan_to_num(o - r, nan=0.0, posinf=0.0, neginf=0.0)
        return (float((d * d).sum()), float((r * r).sum()), bad,
                float(np.abs(d).max()) if d.size else 0.0, int(d.size))

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
                errors.append("cupy: no GPU visible")
        except Exception as e:  # noqa: BLE001 - try the next one
            errors.append(f"{name}: {type(e).__name__}: {e}")
    raise RuntimeError("no array backend: " + "; ".join(errors))


# ---------------------------------------------------------------- references
def _spans(n: int, step: int):
    step = max(1, step)
    for i in range(0, n, step):
        yield i, min(n, i + step)


def reference_chunks(case: dict, B, arrays: dict, before: dict, scalars: dict):
    """Yield ``(output name, out chunk, ref chunk)``, both float64, for the case's op;
    ``arrays`` are the kernel's arrays after the launch (``B.view``: indexable), ``before``
    the inputs that the kernel also updates, as they were before it (a product into an
    ``inout`` output accumulates: ``C += A @ B``)."""
    dt = {n: a["dtype"] for n, a in case["arrays"].items()}
    f = B.f64
    op = case["op"]
    if op in ("gemm_abt", "matmul"):           # C = A @ B.T  |  C = A @ B
        A, Bm, C = arrays["A"], arrays["B"], arrays["C"]
        C0 = before.get("C")
        M, K = A.shape
        N = Bm.shape[0] if op == "gemm_abt" else Bm.shape[1]
        kc = min(K, max(1, CHUNK // max(N, 1)))
        rm = min(M, max(1, CHUNK // max(kc, N)))
        for i, j in _spans(M, rm):
            acc = None
            for k0, k1 in _spans(K, kc):
                a = f(A[i:j, k0:k1], dt["A"])
                b = f(Bm[:, k0:k1], dt["B"]).T if op == "gemm_abt" else f(Bm[k0:k1, :], dt["B"])
                acc = a @ b if acc is None else acc + a @ b
            if C0 is not None:
                acc = acc + f(C0[i:j], dt["C"])
            yield "C", f(C[i:j], dt["C"]), acc
    elif op == "gemv":                         # y = A @ x
        A, x, y = arrays["A"], arrays["x"], arrays["y"]
        M, K = A.shape
        kc = min(K, CHUNK)
        rm = min(M, max(1, CHUNK // kc))
        for i, j in _spans(M, rm):
            acc = None
            for k0, k1 in _spans(K, kc):
                v = f(A[i:j, k0:k1], dt["A"]) @ f(x[k0:k1], dt["x"])
                acc = v if acc is None else acc + v
            yield "y", f(y[i:j], dt["y"]), acc
    elif op in ("copy", "saxpy", "scale"):     # B = A  |  y = a x + y  |  B = a A
        src, dst = {"copy": ("A", "B"), "saxpy": ("x", "y"), "scale": ("A", "B")}[op]
        a = float(scalars.get("a", 1.0))
        X, Y = arrays[src].reshape(-1), arrays[dst].reshape(-1)
        Y0 = before[dst].reshape(-1) if dst in before else None
        for i, j in _spans(X.shape[0], CHUNK):
            ref = f(X[i:j], dt[src])
            if op != "copy":
                ref = ref * a
            if Y0 is not None:
                ref = ref + f(Y0[i:j], dt[dst])
            yield dst, f(Y[i:j], dt[dst]), ref
    elif op == "transpose":                    # B[n, m] = A[m, n]
        A, Bo = arrays["A"], arrays["B"]
        for i, j in _spans(Bo.shape[0], CHUNK // max(1, Bo.shape[1])):
            yield "B", f(Bo[i:j], dt["B"]), f(A[:, i:j], dt["A"]).T
    elif op == "multicast":                    # C[t, k, c] = A[t, k] for each CTA c
        A, C = arrays["A"], arrays["C"]
        for c in range(C.shape[2]):
            yield "C", f(C[:, :, c], dt["C"]), f(A, dt["A"])
    else:
        raise KeyError(f"unknown op {op!r} (gpu_device.reference_chunks)")


# ---------------------------------------------------------------- one correctness run
def make_arrays(case: dict, sizes: dict, B, seed: int = 0) -> tuple[dict, dict]:
    """The kernel's arrays at ``sizes``: outputs NaN, the rest random normal (a seed per
    array and run); and copies of the inputs that the kernel updates (``inout``)."""
    outs = set(case["outputs"])
    arrays, before = {}, {}
    for i, (n, a) in enumerate(sorted(case["arrays"].items())):
        shape = shape_of(case, n, sizes)
        if n in outs:
            arrays[n] = B.nan(shape, a["dtype"])
        else:
            arrays[n] = B.rand(shape, a["dtype"], 1000 * seed + 17 * i + 1)
        if n in case.get("inout", ()):
            before[n] = B.copy(arrays[n])
    return arrays, before


def check(case: dict, sz: dict, B, launcher, seed: int = 0) -> dict:
    """Run ``case`` at ``sz`` (``grid`` in ``sz``: CTAs per launch) with backend ``B``;
    ``launcher(args, grid)`` launches and synchronizes. Returns the record of the run."""
    sizes = proc_sizes(case, sz)
    t0 = time.perf_counter()
    arrays, before = make_arrays(case, sizes, B, seed)
    args = {**sizes, **case["scalars"], **arrays}
    t1 = time.perf_counter()
    launcher(args, sz.get("grid", 0))
    t2 = time.perf_counter()
    views = {n: B.view(x) for n, x in arrays.items()}
    acc: dict[str, list] = {}
    for name, o, r in reference_chunks(case, B, views, {n: B.view(x) for n, x in
                                                         before.items()}, case["scalars"]):
        s = B.stats(o, r)
        a = acc.setdefault(name, [0.0, 0.0, 0, 0.0, 0])
        a[0] += s[0]
        a[1] += s[1]
        a[2] += s[2]
        a[3] = max(a[3], s[3])
        a[4] += s[4]
    tol_norm, tol_elem = tolerances(case, sizes)
    rec = {"sizes": sz, "tol_norm": tol_norm, "tol_elem": tol_elem, "outputs": {},
           "seconds": {"inputs": round(t1 - t0, 3), "kernel": round(t2 - t1, 3),
                       "reference": round(time.perf_counter() - t2, 3)}}
    ok = bool(acc)
    for name in list(case["outputs"]) + list(case.get("inout", ())):
        if name not in acc:
            rec["outputs"][name] = {"ok": False, "error": "not compared"}
            ok = False
            continue
        sd, sr, bad, dmax, n = acc[name]
        want = math.prod(shape_of(case, name, sizes))
        rel = math.sqrt(sd / sr) if sr > 0 else (0.0 if sd == 0 else math.inf)
        rms = math.sqrt(sr / n) if n else 0.0
        elem = dmax / rms if rms > 0 else (0.0 if dmax == 0 else math.inf)
        good = bad == 0 and n == want and (sd == 0 if tol_norm == 0 else
                                           rel <= tol_norm and elem <= tol_elem)
        rec["outputs"][name] = {"rel_error": rel, "max_error_rms": elem, "max_abs_error": dmax,
                                "rms_ref": rms, "nonfinite": bad, "compared": n, "ok": good}
        ok = ok and good
    rec["ok"] = ok
    del arrays, before, views
    B.release()
    return rec


def raw_launcher(lib, raw, stream: int = 0):
    """``launcher(args, grid)`` for ``check``: the raw launch on ``stream``, then the
    library's own synchronize, whose error (a fault in the kernel) is raised."""
    L = launch_module()

    def run(args, grid):
        L.set_grid_limit(lib, grid)
        try:
            raw(stream, **args)
            _rt(lib, lib.exo_rt_sync(ctypes.c_void_p(stream)), "the kernel")
        finally:
            L.set_grid_limit(lib, 0)
    return run


def open_case(case: dict, bundle: Path, lib_dir: Path | None = None):
    """``(lib, RawLaunch)`` of a manifest case (its library from ``lib_dir`` if rebuilt)."""
    L = launch_module()
    path = (Path(lib_dir) / Path(case["lib"]).name) if lib_dir else Path(bundle) / case["lib"]
    lib = L.load_library(path)
    return lib, L.RawLaunch(lib, case["entry"], [tuple(p) for p in case["params"]],
                            case["proc"])
