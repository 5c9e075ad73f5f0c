"""Device side of the GPU run: ceilings and timing (METHOD.md's way of measuring).

* ``ceilings``: a device-to-device copy of 2 GiB (bytes read plus written) and a bf16
  8192^3 matrix product through cuBLAS, medians of 10 after 3 warm-ups, measured first (and
  again after the timing, to see drift).
* ``timing``: every kernel at its benchmark sizes and its cuBLAS baselines, launched raw
  (``RawLaunch.bind``: arguments converted once; in the generated entry tensor maps are
  encoded once and the shared-memory attribute set once) on the framework's current
  stream, CUDA events around each launch, an L2 flush (a write of max(2 x L2, 256 MiB))
  before every sample, all items in a freshly shuffled order each round, ``rounds`` samples
  each (at least 50 on the device) after warm-up; medians reported, every sample kept in
  the JSON. Clocks are left alone.

PyTorch is the first choice (``torch.backends.cuda.matmul.allow_tf32`` per call for TF32);
with CuPy alone the baselines are ``cupy.matmul`` (imported with ``CUPY_TF32=1``, so f32
products are TF32), cuBLAS ``gemmEx`` for bf16, and ``cupy.matmul`` for GEMV.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import time

from gpu_device import eval_shape, open_case, product_flops, shape_of


# ---------------------------------------------------------------- framework adapter
class Torch:
    name = "torch"

    def __init__(self):
        import torch
        self.t = torch
        self.dt = {"f32": torch.float32, "bf16": torch.bfloat16}

    def rand(self, shape, dtype, seed):
        g = self.t.Generator(device="cuda").manual_seed(seed)
        return self.t.randn(shape, generator=g, device="cuda").to(self.dt[dtype])

    def empty(self, shape, dtype):
        return self.t.empty(shape, device="cuda", dtype=self.dt[dtype])

    def bytes_buffer(self, n):
        return self.t.empty(n, device="cuda", dtype=self.t.uint8)

    def flush(self, buf):
        buf.fill_(1)

    def event(self):
        return self.t.cuda.Event(enable_timing=True)

    def elapsed_ms(self, a, b):
        return a.elapsed_time(b)

    def sync(self):
        self.t.cuda.synchronize()

    def stream(self) -> int:
        return int(self.t.cuda.current_stream().cuda_stream)

    def copy(self, dst, src):
        dst.copy_(src)

    def l2_bytes(self):
        return int(getattr(self.t.cuda.get_device_properties(0), "L2_cache_size", 60 << 20))

    def tf32(self, on: bool) -> None:
        """f32 products on tf32 tensor cores or not: ``allow_tf32`` (and, in a torch that has
        it, the newer ``fp32_precision`` it stands for)."""
        m = self.t.backends.cuda.matmul
        m.allow_tf32 = on
        if hasattr(m, "fp32_precision"):
            m.fp32_precision = "tf32" if on else "ieee"

    def baselines(self, op, mode, A, B, C):
        """name -> callable: cuBLAS doing the same product (see the module docstring)."""
        t = self.t
        out = {}
        if op == "gemm_abt" and mode == "bf16":
            out["cuBLAS bf16 (bf16 out)"] = lambda: t.matmul(A, B.T)
            try:
                t.mm(A[:8, :8], B[:8, :8].T, out_dtype=t.float32)
                out["cuBLAS bf16 (f32 out)"] = lambda: t.mm(A, B.T, out_dtype=t.float32)
            except Exception:  # noqa: BLE001 - not in this torch
                pass
        elif op == "gemm_abt" and mode == "tf32":
            def tf32():
                self.tf32(True)
                return t.matmul(A, B.T)
            out["cuBLAS tf32"] = tf32
        elif op == "matmul" and mode == "bf16":  # C = A @ B, B stored K x N
            out["cuBLAS bf16 (bf16 out)"] = lambda: t.matmul(A, B)
            try:
                t.mm(A[:8, :8], B[:8, :8], out_dtype=t.float32)
                out["cuBLAS bf16 (f32 out)"] = lambda: t.mm(A, B, out_dtype=t.float32)
            except Exception:  # noqa: BLE001 - not in this torch
                pass
        elif op == "matmul":
            def sgemm():
                self.tf32(False)
                return t.matmul(A, B)
            out["cuBLAS f32 (SGEMM)"] = sgemm
        elif op == "gemv":
            out["cuBLAS gemv (torch.mv)"] = lambda: t.mv(A, B)
        elif op == "copy":
            out["device copy"] = lambda: C.copy_(A)
        return out


class Cupy:
    name = "cupy"

    def __init__(self):
        os.environ.setdefault("CUPY_TF32", "1")
        import cupy
        self.cp = cupy

    def rand(self, shape, dtype, seed):
        x = self.cp.random.default_rng(seed).standard_normal(shape, dtype=self.cp.float32)
        if dtype == "bf16":
            u = x.view(self.cp.uint32)
            return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(self.cp.uint16)
        return x

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype=self.cp.uint16 if dtype == "bf16" else self.cp.float32)

    def bytes_buffer(self, n):
        return self.cp.empty(n, dtype=self.cp.uint8)

    def flush(self, buf):
        buf.fill(1)

    def event(self):
        return self.cp.cuda.Event()

    def elapsed_ms(self, a, b):
        return self.cp.cuda.get_elapsed_time(a, b)

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def stream(self) -> int:
        return int(self.cp.cuda.get_current_stream().ptr)

    def copy(self, dst, src):
        self.cp.copyto(dst, src)

    def l2_bytes(self):
        return int(self.cp.cuda.runtime.getDeviceProperties(0).get("l2CacheSize", 60 << 20))

    def _gemm_ex_bf16(self, A, B, C):
        """C[M, N] (f32) = A[M, K] @ B[N, K].T with bf16 inputs through cublasGemmEx (row
        major as column major: C^T = B A^T)."""
        import numpy as np
        from cupy_backends.cuda.libs import cublas
        M, K = A.shape
        N = B.shape[0]
        h = self.cp.cuda.device.get_cublas_handle()
        one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
        return lambda: cublas.gemmEx(h, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, N, M, K,
                                     one.ctypes.data, B.data.ptr, 14, K, A.data.ptr, 14, K,
                                     zero.ctypes.data, C.data.ptr, 0, N, 68, -1)

    def baselines(self, op, mode, A, B, C):
        cp = self.cp
        out = {}
        if op == "gemm_abt" and mode == "bf16":
            try:
                Cf = cp.empty((A.shape[0], B.shape[0]), dtype=cp.float32)
                f = self._gemm_ex_bf16(A, B, Cf)
                f()
                out["cuBLAS bf16 gemmEx (f32 out)"] = f
            except Exception:  # noqa: BLE001 - reported as no baseline
                pass
        elif op == "gemm_abt" and mode == "tf32":
            out["cupy.matmul (CUPY_TF32=1)"] = lambda: cp.matmul(A, B.T)
        elif op == "matmul" and mode == "bf16":
            out["cupy.matmul bf16"] = lambda: cp.matmul(A, B)
        elif op == "gemv":
            out["cupy.matmul gemv"] = lambda: cp.matmul(A, B)
        elif op == "copy":
            out["device copy"] = lambda: cp.copyto(C, A)
        return out


def framework(prefer: str = "auto"):
    errors = []
    for name in (("torch", "cupy") if prefer == "auto" else (prefer,)):
        try:
            fw = Torch() if name == "torch" else Cupy()
            fw.sync()
            return fw
        except Exception as e:  # noqa: BLE001 - try the next one
            errors.append(f"{name}: {type(e).__name__}: {e}")
    raise RuntimeError("no framework for timing: " + "; ".join(errors))


# ---------------------------------------------------------------- measuring
def _median_ms(fw, fn, reps: int, warm: int = 3, flush=None) -> list[float]:
    for _ in range(warm):
        fn()
    fw.sync()
    out = []
    for _ in range(reps):
        if flush is not None:
            flush()
        a, b = fw.event(), fw.event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(fw.elapsed_ms(a, b))
    return out


def ceilings(fw) -> dict:
    """Copy bandwidth (GB/s, read + written) and bf16 8192^3 rate (TFLOP/s), this machine."""
    n = 2 << 30
    src, dst = fw.bytes_buffer(n), fw.bytes_buffer(n)
    fw.flush(src)
    ms = _median_ms(fw, lambda: fw.copy(dst, src), 10)
    del src, dst
    out = {"copy_GBps": 2 * n / (statistics.median(ms) * 1e-3) / 1e9, "copy_ms": ms}
    s = 8192
    try:
        A, B = fw.rand((s, s), "bf16", 1), fw.rand((s, s), "bf16", 2)
        C = fw.empty((s, s), "f32")
        base = fw.baselines("gemm_abt", "bf16", A, B, C)
        name, f = next(iter(base.items()))
        ms = _median_ms(fw, f, 10)
        out.update(matmul_TFLOPs=2 * s ** 3 / (statistics.median(ms) * 1e-3) / 1e12,
                   matmul_ms=ms, matmul_how=f"{name}, {s}^3, random data")
    except Exception as e:  # noqa: BLE001 - recorded
        out["matmul_error"] = f"{type(e).__name__}: {e}"
    return out


def _metric(case: dict, sz: dict) -> tuple[str, float]:
    """(unit, amount per run): TFLOP for products, GB moved for memory-bound kernels."""
    if case["op"] in ("gemm_abt", "matmul"):
        return "TFLOP/s", product_flops(case, sz) / 1e12
    nbytes = 0
    for n, a in case["arrays"].items():
        nbytes += math.prod(eval_shape(e, sz) for e in a["shape"]) * \
            {"bf16": 2}.get(a["dtype"], 4) * (2 if n in case.get("inout", ()) else 1)
    return "GB/s", nbytes / 1e9


def _mode(case: dict) -> str:
    a = case["arrays"].get("A", {}).get("dtype", "f32")
    return "bf16" if a == "bf16" else ("tf32" if case["tensor_cores"] else "f32")


def timing(cases: list[dict], bundle, fw, rounds: int = 60, seed: int = 0,
           lib_dir=None, log=print, opener=open_case) -> dict:
    """Time every (case, size) of ``cases`` and its baselines, interleaved (module doc);
    ``opener(case, bundle, lib_dir) -> (lib, RawLaunch)``."""
    inputs: dict = {}
    outputs: dict = {}
    stream = fw.stream()

    def arr(key, shape, dtype, make):
        d = inputs if make else outputs
        k = (key, tuple(shape), dtype)
        if k not in d:
            d[k] = fw.rand(shape, dtype, len(d) + 7) if make else fw.empty(shape, dtype)
        return d[k]

    items = []                       # (label dict, callable)
    seen_base = set()
    for case in cases:
        lib, raw = opener(case, bundle, lib_dir)
        for sz in case["sizes"]["time"]:
            sizes = {k: v for k, v in sz.items() if k in case["moduli"]}
            args = dict(sizes, **case["scalars"])
            for n, a in case["arrays"].items():
                out = n in case["outputs"] or n in case["inout"]
                args[n] = arr(n if not out else f"out:{n}", shape_of(case, n, sizes),
                              a["dtype"], not out or n in case["inout"])
            unit, amount = _metric(case, sizes)
            bound = raw.bind(**args)
            items.append(({"case": case["name"], "family": case["family"], "sizes": sizes,
                           "unit": unit, "amount": amount, "kind": "ours"},
                          (lambda b=bound: b(stream))))
            mode = _mode(case)
            key = (case["op"], mode, tuple(sorted(sizes.items())))
            if key in seen_base:
                continue
            seen_base.add(key)
            A = args.get("A")
            Bm = args.get("B") if case["op"] != "gemv" else args.get("x")
            C = args.get("C", args.get("B")) if case["op"] == "copy" else args.get("C")
            for name, f in fw.baselines(case["op"], mode, A, Bm, C).items():
                items.append(({"case": name, "family": case["family"], "sizes": sizes,
                               "unit": unit, "amount": amount, "kind": "baseline",
                               "op": case["op"], "mode": mode}, f))
    flush_bytes = max(2 * fw.l2_bytes(), 256 << 20)
    flush_buf = fw.bytes_buffer(flush_bytes)
    log(f"timing {len(items)} items x {rounds} rounds (L2 flush: {flush_bytes >> 20} MiB)")
    t0 = time.perf_counter()
    failed = {}
    for i, (lab, f) in enumerate(items):            # warm-up, and a first error per item
        try:
            for _ in range(3):
                f()
            fw.sync()
        except Exception as e:  # noqa: BLE001 - the item is dropped, the rest goes on
            failed[i] = f"{type(e).__name__}: {e}"
    live = [i for i in range(len(items)) if i not in failed]
    ev = {i: (fw.event(), fw.event()) for i in live}
    samples = {i: [] for i in live}
    rng = random.Random(seed)
    for _ in range(rounds):
        order = live[:]
        rng.shuffle(order)
        # queued without waiting: the flush before each sample (~0.1 ms of GPU work) keeps
        # the GPU behind the CPU, so no launch gap lands between an item's two events
        for i in order:
            fw.flush(flush_buf)
            a, b = ev[i]
            a.record()
            items[i][1]()
            b.record()
        fw.sync()
        for i in order:
            samples[i].append(fw.elapsed_ms(*ev[i]))
    out = []
    for i, (lab, _) in enumerate(items):
        rec = dict(lab)
        if i in failed:
            rec["error"] = failed[i]
        else:
            s = sorted(samples[i])
            med = statistics.median(s)
            rec.update(median_ms=med, p10_ms=s[len(s) // 10], p90_ms=s[(9 * len(s)) // 10],
                       n=len(s), rate=lab["amount"] / (med * 1e-3),
                       samples_ms=[round(x, 6) for x in samples[i]])
        out.append(rec)
    del inputs, outputs, flush_buf
    return {"items": out, "rounds": rounds, "flush_bytes": flush_bytes,
            "seconds": round(time.perf_counter() - t0, 1)}
