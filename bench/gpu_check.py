"""One script for a machine with a Hopper GPU: build, check, sanitize and time the kernels.

    python bench/gpu_check.py --out DIR [--dry-run] [--quick] [--only NAME,...]

For every case (the shipped specs, the warp-specialized Hopper GEMM of the analysis tests, and
the backend's own test kernels) it

1. generates and builds the kernel with nvcc for sm_90a (specs through the proof gate with the
   certificates in ``proofs/``; the others ``unchecked``) and records ptxas resources;
2. runs it on random data and compares with numpy (exact for copies, a tolerance for sums;
   bf16/tf32 tensor-core inputs with a looser one);
3. runs it once more under ``compute-sanitizer --tool racecheck`` and ``--tool synccheck``
   (if compute-sanitizer is installed), in a child process (``--single NAME``);
4. times it (CUDA events, median of repeats) against a reference: a device-to-device copy for
   the copies (bandwidth), CuPy's matmul (cuBLAS) for the matrix multiplies (TFLOP/s).

Writes ``DIR/results.json`` and ``DIR/RESULTS.md``. ``--dry-run`` only builds (no GPU, no
CuPy needed) and writes the same files with the build part filled in.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

# name: (module file, proc, gated by a certificate?, sizes (full), sizes (quick))
CASES = {
    "vec_copy": ("specs/vec_copy.py", "vec_copy", True, {"N": 1 << 26}, {"N": 1 << 16}),
    "saxpy": ("specs/saxpy.py", "saxpy", True, {"N": 1 << 26}, {"N": 1 << 16}),
    "transpose_smem": ("specs/transpose_smem.py", "transpose_smem", True,
                       {"M": 8192, "N": 8192}, {"M": 256, "N": 512}),
    "matmul_smem": ("specs/matmul_smem.py", "matmul_smem", True,
                    {"M": 2048, "N": 2048, "K": 2048}, {"M": 128, "N": 256, "K": 128}),
    "gemm_tile": ("tests/analysis/progs/hopper_gemm.py", "gemm_tile", False,
                  {"M": 4096, "N": 4096, "K": 4096}, {"M": 256, "N": 256, "K": 256}),
    "cp_async_copy": ("tests/codegen/progs/codegen_progs.py", "cp_async_copy", False,
                      {"N": 1 << 24}, {"N": 1 << 14}),
    "mbar_pingpong": ("tests/codegen/progs/codegen_progs.py", "mbar_pingpong", False,
                      {"N": 1 << 14}, {"N": 1 << 10}),
    "tma_store_scale": ("tests/codegen/progs/codegen_progs.py", "tma_store_scale", False,
                        {"M": 4096, "N": 4096}, {"M": 128, "N": 256}),
    "cluster_multicast": ("tests/codegen/progs/codegen_progs.py", "cluster_multicast", False,
                          {"T": 264, "K": 16}, {"T": 4, "K": 3}),
    "warp_mma": ("tests/codegen/progs/codegen_progs.py", "warp_mma", False,
                 {"M": 1 << 16}, {"M": 256}),
}


def load_proc(rel: str, name: str):
    import importlib.util
    path = ROOT / rel
    spec = importlib.util.spec_from_file_location("gpu_check_" + path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def build_case(name: str) -> tuple[object, dict]:
    from exogpu_codegen import compile
    rel, proc, gated, _, _ = CASES[name]
    p = load_proc(rel, proc)
    t0 = time.perf_counter()
    try:
        k = compile(p, unchecked=not gated, proof_dir=str(ROOT / "proofs"))
    except Exception as e:  # noqa: BLE001 - recorded in the report
        return None, {"name": name, "built": False, "error": str(e)}
    return k, {"name": name, "built": True, "checked_by_certificate": k.generated.gate.checked,
               "seconds": round(time.perf_counter() - t0, 2), "cached": k.build.cached,
               "resources": [r.to_json() for r in k.resources],
               "dynamic_smem": {x.name: x.smem_bytes for x in k.generated.kernels}}


# ---------------------------------------------------------------- inputs and references

def make_inputs(name: str, sz: dict, cp):
    rng = np.random.default_rng(0)
    f32 = np.float32

    def r(*shape, dtype=f32, ints=False):
        if ints:  # small integers: exact in bf16/tf32 products and f32 sums
            return rng.integers(-3, 4, size=shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)
    if name in ("vec_copy", "cp_async_copy", "mbar_pingpong"):
        return {"N": sz["N"], "A": r(sz["N"]), "B": np.zeros(sz["N"], f32)}
    if name == "saxpy":
        return {"N": sz["N"], "a": 1.5, "x": r(sz["N"]), "y": r(sz["N"])}
    if name == "transpose_smem":
        return {"M": sz["M"], "N": sz["N"], "A": r(sz["M"], sz["N"]),
                "B": np.zeros((sz["N"], sz["M"]), f32)}
    if name == "matmul_smem":
        return {**sz, "A": r(sz["M"], sz["K"]), "B": r(sz["K"], sz["N"]),
                "C": np.zeros((sz["M"], sz["N"]), f32)}
    if name == "gemm_tile":
        import ml_dtypes
        return {**sz, "A": r(sz["M"], sz["K"], ints=True).astype(ml_dtypes.bfloat16),
                "B": r(sz["N"], sz["K"], ints=True).astype(ml_dtypes.bfloat16),
                "C": np.zeros((sz["M"], sz["N"]), f32)}
    if name == "tma_store_scale":
        return {**sz, "a": 2.0, "A": r(sz["M"], sz["N"]), "B": np.zeros((sz["M"], sz["N"]), f32)}
    if name == "cluster_multicast":
        T, K = sz["T"], sz["K"]
        return {"T": T, "K": K, "A": r(T, K, 64, 16), "C": np.zeros((T, K, 2, 64, 16), f32)}
    if name == "warp_mma":
        return {"M": sz["M"], "A": r(sz["M"], 8, ints=True), "B": r(8, 8, ints=True),
                "C": np.zeros((sz["M"], 8), f32)}
    raise KeyError(name)


def reference(name: str, a: dict) -> tuple[str, np.ndarray, float]:
    """(output name, expected value, relative tolerance)."""
    if name in ("vec_copy", "cp_async_copy", "mbar_pingpong"):
        return "B", a["A"], 0.0
    if name == "saxpy":
        return "y", np.float32(a["a"]) * a["x"] + a["y"], 1e-6
    if name == "transpose_smem":
        return "B", a["A"].T, 0.0
    if name == "matmul_smem":
        return "C", a["A"].astype(np.float64) @ a["B"].astype(np.float64), 1e-4
    if name == "gemm_tile":
        return "C", a["A"].astype(np.float32) @ a["B"].astype(np.float32).T, 0.0
    if name == "tma_store_scale":
        return "B", np.float32(a["a"]) * a["A"], 1e-6
    if name == "cluster_multicast":
        return "C", np.broadcast_to(a["A"][:, :, None], a["C"].shape), 0.0
    if name == "warp_mma":
        return "C", a["A"] @ a["B"], 0.0
    raise KeyError(name)


def run_case(k, name: str, sz: dict, cp, time_it: bool) -> dict:
    host = make_inputs(name, sz, cp)
    dev = {n: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for n, v in host.items()}
    out, want, tol = reference(name, host)
    k(**dev)
    got = cp.asnumpy(dev[out]).astype(np.float64)
    want = np.asarray(want, dtype=np.float64)
    err = float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))
    rec = {"sizes": sz, "max_rel_error": err, "correct": bool(err <= tol)}
    if time_it:
        rec.update(time_case(k, name, dev, cp, sz))
    return rec


def _time(fn, cp, reps=20) -> float:
    fn()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(ts))


def time_case(k, name, dev, cp, sz) -> dict:
    t = _time(lambda: k(**dev), cp)
    rec = {"seconds": t}
    if name in ("vec_copy", "cp_async_copy"):
        nbytes = 2 * 4 * sz["N"]
        ref = _time(lambda: cp.copyto(dev["B"], dev["A"]), cp)
        rec.update(GBps=nbytes / t / 1e9, reference="device-to-device copy (cp.copyto)",
                   reference_GBps=nbytes / ref / 1e9)
    elif name == "saxpy":
        rec.update(GBps=3 * 4 * sz["N"] / t / 1e9)
    elif name == "transpose_smem":
        rec.update(GBps=2 * 4 * sz["M"] * sz["N"] / t / 1e9)
    elif name in ("matmul_smem", "gemm_tile"):
        flops = 2.0 * sz["M"] * sz["N"] * sz["K"]
        if name == "gemm_tile":
            A, B = dev["A"].astype(cp.float32), dev["B"].astype(cp.float32)
            ref = _time(lambda: cp.matmul(A, B.T), cp)
            what = "cuBLAS via cp.matmul on f32 copies of the bf16 inputs (TF32 per CuPy config)"
        else:
            ref = _time(lambda: cp.matmul(dev["A"], dev["B"]), cp)
            what = "cuBLAS via cp.matmul (f32)"
        rec.update(TFLOPs=flops / t / 1e12, reference=what, reference_TFLOPs=flops / ref / 1e12)
    return rec


# ---------------------------------------------------------------- sanitizer

def sanitize(name: str) -> dict:
    cs = shutil.which("compute-sanitizer")
    if not cs:
        return {"skipped": "compute-sanitizer not found"}
    out = {}
    for tool in ("racecheck", "synccheck"):
        cmd = [cs, "--tool", tool, "--error-exitcode", "99", sys.executable, __file__,
               "--single", name]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            out[tool] = {"ok": False, "summary": "timeout"}
            continue
        lines = [ln for ln in (r.stdout + r.stderr).splitlines() if "ERROR SUMMARY" in ln
                 or "RACECHECK SUMMARY" in ln]
        out[tool] = {"ok": r.returncode == 0, "summary": "; ".join(lines)[-300:],
                     "rc": r.returncode}
    return out


# ---------------------------------------------------------------- report

def write_report(out: Path, results: list[dict], meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"meta": meta, "cases": results}, indent=2))
    md = ["# exogpu-codegen: GPU check", "", f"- Date: {meta['date']}",
          f"- Machine: {meta['machine']}", f"- GPU: {meta.get('gpu', 'none (dry run)')}",
          f"- Command: `{meta['command']}`", "",
          "| case | gate | regs | spills | smem B | correct | racecheck | synccheck | time | "
          "throughput | reference |", "|---|---|---:|---:|---:|---|---|---|---:|---:|---:|"]
    for r in results:
        if not r.get("built"):
            md.append(f"| {r['name']} | build failed: {r.get('error', '')[:80]} |||||||||")
            continue
        res = r["resources"]
        regs = ",".join(str(x["registers"]) for x in res) or "-"
        spills = sum(x["spill_stores"] + x["spill_loads"] for x in res)
        smem = ",".join(str(v) for v in r["dynamic_smem"].values()) or "0"
        run = r.get("run", {})
        san = r.get("sanitizer", {})

        def s(tool):
            v = san.get(tool)
            return "-" if v is None else ("ok" if v.get("ok") else "FAIL")
        thr = ref = ""
        if "GBps" in run:
            thr = f"{run['GBps']:.0f} GB/s"
            if "reference_GBps" in run:
                ref = f"{run['reference_GBps']:.0f} GB/s"
        if "TFLOPs" in run:
            thr = f"{run['TFLOPs']:.1f} TFLOP/s"
            ref = f"{run['reference_TFLOPs']:.1f} TFLOP/s"
        md.append(f"| {r['name']} | {'certificate' if r['checked_by_certificate'] else 'unchecked'}"
                  f" | {regs} | {spills} | {smem} | {run.get('correct', '-')} | {s('racecheck')} "
                  f"| {s('synccheck')} | {run.get('seconds', 0) * 1e3:.3f} ms | {thr} | {ref} |")
    (out / "RESULTS.md").write_text("\n".join(md) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="gpu_check_out")
    ap.add_argument("--dry-run", action="store_true", help="build only (no GPU needed)")
    ap.add_argument("--quick", action="store_true", help="small sizes, no timing")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--no-sanitizer", action="store_true")
    ap.add_argument("--single", help=argparse.SUPPRESS)  # child run under compute-sanitizer
    a = ap.parse_args(argv)
    if a.single:
        import cupy as cp
        k, _ = build_case(a.single)
        rec = run_case(k, a.single, CASES[a.single][4], cp, False)
        return 0 if rec["correct"] else 1
    names = [n for n in (a.only.split(",") if a.only else CASES) if n]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs",
            "command": " ".join([Path(sys.argv[0]).name] + (argv or sys.argv[1:]))}
    results = []
    cp = None
    if not a.dry_run:
        import cupy as cp
        props = cp.cuda.runtime.getDeviceProperties(0)
        meta["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    for n in names:
        k, rec = build_case(n)
        print(f"{n}: built={rec['built']}" + (f" {rec.get('error', '')}" if not rec["built"]
                                              else f" resources={rec['resources']}"), flush=True)
        if k is not None and not a.dry_run:
            sz = CASES[n][4] if a.quick else CASES[n][3]
            try:
                rec["run"] = run_case(k, n, sz, cp, not a.quick)
            except Exception as e:  # noqa: BLE001 - recorded
                rec["run"] = {"correct": False, "error": f"{type(e).__name__}: {e}"}
            if not a.no_sanitizer:
                rec["sanitizer"] = sanitize(n)
            print(f"  run={rec['run']} sanitizer={rec.get('sanitizer')}", flush=True)
        results.append(rec)
    write_report(Path(a.out), results, meta)
    bad = [r for r in results if not r.get("built") or
           (not a.dry_run and not r.get("run", {}).get("correct"))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
