"""The dry run's exercise of the device-side code here, without a GPU (``gpu_run.py
--dry-run``): everything the device run does except what needs CUDA to succeed.

1. The bundle's own runner (``runner/``), with the checker and its dependencies made
   unimportable (``exogpu_verify``, ``exogpu_codegen``, islpy, z3, cvc5, sympy, ...): the
   probe and library-load children, then ``--device`` itself end to end on a tiny budget
   (a rehearsal: every child that needs a GPU fails for want of one, and the parent must
   still record each failure and write its reports).
2. Argument preparation: every library's entry called through its raw-launch plan with
   stand-in device arrays (``__cuda_array_interface__`` with null pointers) at the smallest
   allowed sizes; the CUDA runtime refuses (no device) after the arguments went through.
3. ``gpu_device.check`` on every case at its smallest size with the sequential interpreter
   standing in for the kernel (numpy arrays; the CuPy backend's array code too, on numpy):
   inputs, NaN pre-fill, float64 references and comparison of every op; then three negative
   controls per op (one element left unwritten, the output scaled by 5%, one element off
   by one rms) must fail.
4. ``gpu_timing.timing`` with a CPU stand-in framework (host clocks as events), then every
   report (markdown, short table, plot) from that synthetic run, marked as a dry run, into
   a temporary folder; ``--ingest`` must refuse it.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BLOCKED = ("exogpu_verify", "exogpu_codegen", "islpy", "z3", "cvc5", "sympy", "networkx",
           "rich", "ml_dtypes", "platformdirs", "filelock")
BLOCK = """# written by bench/gpu_dry.py: the device has none of these
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ImportError('not on the device: ' + name)
sys.meta_path.insert(0, _Block())
"""


def blocked_env(tmp: Path) -> dict:
    """An environment whose Python processes (the runner and every child it starts) cannot
    import the checker or its dependencies: a ``sitecustomize`` on ``PYTHONPATH``, and
    nothing of the repository on it."""
    d = tmp / "blocker"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(BLOCK.format(blocked=BLOCKED))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(d)
    env.pop("OUT", None)
    return env


def _results(out: str) -> list[dict]:
    return [json.loads(ln[9:]) for ln in out.splitlines() if ln.startswith("@@RESULT ")]


def check_runner(bundle: Path, manifest: dict) -> bool:
    """Step 1 of the module docstring."""
    runner = bundle / "runner" / "gpu_run.py"
    ok = True
    with tempfile.TemporaryDirectory() as d:
        env = blocked_env(Path(d))
        r = subprocess.run([sys.executable, str(runner), "--child", "probe", "--bundle",
                            str(bundle)], capture_output=True, text=True, timeout=300, cwd=d,
                           env=env)
        res = _results(r.stdout)
        good = r.returncode == 0 and res and "numpy" in res[0] and \
            ("backend" in res[0] or "backend_error" in res[0])
        print(f"  bundle runner, checker unimportable: probe {'ok' if good else 'FAILED'} "
              f"({(res[0].get('backend') or res[0].get('backend_error', ''))[:90] if res else r.stderr[-300:]})")
        ok &= bool(good)
        r = subprocess.run([sys.executable, str(runner), "--child", "libcheck", "--bundle",
                            str(bundle)], capture_output=True, text=True, timeout=300, cwd=d,
                           env=env)
        res = _results(r.stdout)
        bad = [x for x in res if not x["ok"]]
        good = r.returncode == 0 and len(res) == len(manifest["cases"]) and not bad
        print(f"  bundle runner, checker unimportable: {len(res) - len(bad)}/"
              f"{len(manifest['cases'])} libraries load"
              f"{'' if good else ' FAILED: ' + str(bad or r.stderr[-300:])}")
        ok &= bool(good)
        ok &= rehearse_device(runner, bundle, manifest, Path(d), env)
    return ok


def rehearse_device(runner: Path, bundle: Path, manifest: dict, tmp: Path, env: dict) -> bool:
    """``--device`` end to end without a GPU (step 1): it must finish within its budget and
    record every case's failure, then write its reports."""
    out = tmp / "rehearsal"
    t0 = time.time()
    r = subprocess.run([sys.executable, str(runner), "--device", "--rehearsal", "--bundle",
                        str(bundle), "--out", str(out), "--budget", "120"],
                       capture_output=True, text=True, timeout=600, cwd=tmp, env=env)
    secs = time.time() - t0
    problems = []
    try:
        res = json.loads((out / "results.json").read_text())
        md = (out / "RESULTS.md").read_text()
    except (OSError, ValueError) as e:
        res, md = None, ""
        problems.append(f"no reports ({e}); exit {r.returncode}: {(r.stdout + r.stderr)[-800:]}")
    if res is not None:
        names = {c["name"] for c in manifest["cases"]}
        corr = res.get("correctness", {})
        if set(corr) != names:
            problems.append(f"correctness recorded for {len(corr)} of {len(names)} cases")
        passed = [n for n, runs in corr.items() if any(x.get("ok") for x in runs)]
        if passed:
            problems.append(f"cases passed without a GPU: {passed[:3]}")
        if not all(x.get("error") for runs in corr.values() for x in runs):
            problems.append("a run failed without saying why")
        if "error" not in res.get("ceilings", {}) and "matmul_error" not in res.get(
                "ceilings", {}):
            problems.append("the ceilings did not fail without a GPU")
        if set(res.get("sanitizer", {})) != names:
            problems.append("the sanitizer step did not record every case")
        if "DRY RUN" not in md or r.returncode != 0:
            problems.append(f"exit {r.returncode}; report marked as a dry run: "
                            f"{'DRY RUN' in md}")
    print(f"  --device rehearsed without a GPU: {'ok' if not problems else 'FAILED'} "
          f"({secs:.0f} s; every child failed for want of a GPU and was recorded)"
          + ("" if not problems else ": " + "; ".join(problems)))
    return not problems


class FakeDeviceArray:
    """A stand-in device array (``__cuda_array_interface__``, null pointer): what the raw
    launch reads off a CuPy or Numba array."""

    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (0, False), "strides": None, "version": 3}


def check_entries(manifest: dict, bundle: Path) -> bool:
    """Step 2 of the module docstring."""
    import gpu_device as D
    L = D.launch_module()
    n_ok, problems = 0, []
    for c in manifest["cases"]:
        lib, raw = D.open_case(c, bundle)
        cnt = ctypes.c_int(0)
        lib.exo_rt_device_count(ctypes.byref(cnt))
        if cnt.value:
            print("  a GPU is present: entries are not called with null pointers")
            return True
        sizes = dict(c["moduli"])
        args = dict(sizes, **c["scalars"])
        for n, a in c["arrays"].items():
            args[n] = FakeDeviceArray(D.shape_of(c, n, sizes),
                                      {"f32": "<f4", "bf16": "<V2", "f16": "<f2"}[a["dtype"]])
        try:
            raw(0, **args)
            problems.append(f"{c['name']}: the entry returned 0 without a GPU")
        except L.LaunchError:
            n_ok += 1
        except Exception as e:  # noqa: BLE001 - a plan that does not fit the arguments
            problems.append(f"{c['name']}: {type(e).__name__}: {e}")
    print(f"  raw launch plans: {n_ok}/{len(manifest['cases'])} entries took their arguments "
          f"(refused by the CUDA runtime: no device){'; ' + '; '.join(problems) if problems else ''}")
    return not problems


def _interpreter(p):
    """``launcher(args, grid)`` running the sequential meaning of ``p`` on numpy arrays
    (scalars as 0-d arrays of the parameter's dtype, bf16 bit patterns as bfloat16)."""
    import ml_dtypes
    from exogpu_verify import interpret

    def run(args, grid):
        a = dict(args)
        for q in p.params:
            if not q.is_data or q.name not in a:
                continue
            dt = q.type.scalar.np_dtype
            v = a[q.name]
            if not isinstance(v, np.ndarray):
                a[q.name] = np.asarray(v, dtype=dt)
            elif dt == ml_dtypes.bfloat16 and v.dtype == np.uint16:
                a[q.name] = v.view(ml_dtypes.bfloat16)
        interpret(p, **a)
    return run


def _broken(p, case: dict, how: str):
    """The interpreter's launch, then one way of being wrong (``how``)."""
    import gpu_device as D
    good = _interpreter(p)
    out = (case["outputs"] or case["inout"])[0]
    bf16 = case["arrays"][out]["dtype"] == "bf16"

    def run(args, grid):
        before = np.array(args[out], copy=True)
        good(args, grid)
        flat = args[out].reshape(-1)
        x = (D.bf16_value(flat.view(np.uint16)) if bf16 else flat).astype(np.float64)
        if how == "unwritten":         # an output element the kernel never stored
            x[x.size // 2] = (D.bf16_value(before.reshape(-1).view(np.uint16)) if bf16 else
                              before.reshape(-1))[x.size // 2]
        elif how == "scaled":
            x *= 1.05
        else:                          # one element off by one rms of the output
            x[x.size // 3] += float(np.sqrt(np.mean(x * x))) or 1.0
        if bf16:
            flat.view(np.uint16)[:] = D.bf16_bits(x.astype(np.float32))
        else:
            flat[:] = x.astype(flat.dtype)
    return run


def _smallest(c: dict) -> dict:
    """The case's smallest correctness size (by the sum of its sizes), without ``grid``."""
    s = min(c["sizes"]["correct"], key=lambda s: sum(v for k, v in s.items()
                                                     if k in c["moduli"]))
    return {k: v for k, v in s.items() if k in c["moduli"]}


def check_ops(manifest: dict, procs: dict) -> bool:
    """Step 3 of the module docstring."""
    import gpu_device as D
    ok, seen_ops, t0 = True, set(), time.time()
    for c in manifest["cases"]:
        p = procs[c["name"]]
        sz = _smallest(c)
        rec = D.check(c, sz, D.HostArrays(interpret=True), _interpreter(p))
        if not rec["ok"]:
            print(f"  interpreter run of {c['name']} at {sz}: FAILED {rec}")
            ok = False
        if c["op"] in seen_ops:
            continue
        seen_ops.add(c["op"])
        rec = D.check(c, sz, D.CupyArrays(xp=np), _interpreter(p), seed=1)
        if not rec["ok"]:
            print(f"  CuPy backend's array code (on numpy) for {c['name']}: FAILED {rec}")
            ok = False
        for how in ("unwritten", "scaled", "one element"):
            bad = D.check(c, sz, D.HostArrays(interpret=True), _broken(p, c, how))
            if bad["ok"]:
                print(f"  negative control ({how}) of {c['name']} PASSED: the comparison "
                      "is vacuous")
                ok = False
    print(f"  correctness harness with the interpreter: {'ok' if ok else 'FAILED'} "
          f"({len(manifest['cases'])} cases at their smallest sizes, {len(seen_ops)} ops each "
          f"also through the CuPy backend's code on numpy and 3 negative controls; "
          f"{time.time() - t0:.0f} s); the PyTorch backend needs torch, "
          + ("not installed here" if not _have_torch() else "run on its CPU device below"))
    if _have_torch():
        ok = check_torch_cpu(manifest, procs) and ok
    return ok


def _have_torch() -> bool:
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def check_torch_cpu(manifest: dict, procs: dict) -> bool:
    """The PyTorch backend's array code on torch's CPU device (where torch is installed)."""
    import gpu_device as D
    ok, seen = True, set()
    for c in manifest["cases"]:
        if c["op"] in seen:
            continue
        seen.add(c["op"])
        p = procs[c["name"]]
        sz = _smallest(c)
        B = D.TorchArrays(device="cpu")
        run = _interpreter(p)

        def launch(args, grid, run=run):
            a = {k: (v.view(B.t.int16).numpy().view(np.uint16) if hasattr(v, "numpy") and
                     v.dtype == B.t.bfloat16 else v.numpy() if hasattr(v, "numpy") else v)
                 for k, v in args.items()}
            run(a, grid)
        rec = D.check(c, sz, B, launch)
        if not rec["ok"]:
            print(f"  PyTorch backend (CPU) for {c['name']}: FAILED {rec}")
            ok = False
    print(f"  PyTorch backend's array code on its CPU device: {'ok' if ok else 'FAILED'} "
          f"({len(seen)} ops)")
    return ok


class CpuFramework:
    """``gpu_timing``'s framework interface on the host: numpy arrays, host-clock events."""

    name = "cpu stand-in (dry run)"

    class Event:
        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    def rand(self, shape, dtype, seed):
        return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

    def empty(self, shape, dtype):
        return np.empty(shape, np.float32)

    def bytes_buffer(self, n):
        return np.empty(min(n, 1 << 20), np.uint8)

    def flush(self, buf):
        buf.fill(1)

    def event(self):
        return self.Event()

    def elapsed_ms(self, a, b):
        return (b.t - a.t) * 1e3 + 1e-3

    def sync(self):
        pass

    def stream(self):
        return 0

    def copy(self, dst, src):
        dst[...] = src

    def l2_bytes(self):
        return 60 << 20

    def baselines(self, op, mode, A, B, C):
        return {f"stand-in {op}": (lambda: None)}


def check_timing_and_reports(manifest: dict, bundle: Path) -> bool:
    """Step 4 of the module docstring."""
    import gpu_report as R
    import gpu_timing as T

    class FakeRaw:
        def bind(self, **args):
            return lambda stream=None: None

    fw = CpuFramework()
    timed = [c for c in manifest["cases"] if c["timed"]]
    small = [dict(c, sizes=dict(c["sizes"], time=[_smallest(c)])) for c in timed]
    t = T.timing(small, bundle, fw, rounds=3, opener=lambda c, b, d: (None, FakeRaw()),
                 log=lambda s: None)
    t["ceilings_after"] = {"copy_GBps": 1.0, "matmul_TFLOPs": 1.0}
    t["framework"] = fw.name
    corr = {c["name"]: [{"ok": True, "tol_norm": 1e-5, "tol_elem": 1e-4,
                         "outputs": {"C": {"rel_error": 0.0, "max_error_rms": 0.0,
                                           "nonfinite": 0, "compared": 1, "ok": True}}}]
            * len(c["sizes"]["correct"]) for c in manifest["cases"]}
    res = {"meta": {"command": "gpu_run.py --dry-run (synthetic numbers)", "date": "dry run",
                    "budget_s": 420, "bundle_created": manifest["created"],
                    "commit": manifest["commit"], "seconds": 0, "dry_run": True},
           "manifest": manifest, "probe": {"gpu": "none (dry run)"}, "nvidia_smi": "",
           "ceilings": {"copy_GBps": 1.0, "matmul_TFLOPs": 1.0, "matmul_how": "stand-in"},
           "correctness": corr, "timing": t,
           "sanitizer": {c["name"]: {x: {"status": "ok"} for x in
                                     ("racecheck", "synccheck", "memcheck")}
                         for c in manifest["cases"]}}
    with tempfile.TemporaryDirectory() as d:
        png = R.write_all(res, Path(d) / "out")
        md = (Path(d) / "out" / "RESULTS.md").read_text()
        table = R.short_table(res)
        bench = Path(d) / "bench"
        bench.mkdir()
        with contextlib.redirect_stdout(io.StringIO()):
            refused = R.ingest(Path(d) / "out", bench) == 1
        refused = refused and not (bench / "RESULTS.md").exists()
    errs = [it for it in t["items"] if "error" in it]
    good = (not errs and "## Timing" in md and R.DRY in md and refused and png
            and len(table.splitlines()) > len(manifest["cases"]))
    print(f"  timing ({len(t['items'])} items, cpu stand-in), reports (markdown, table, "
          f"plot{'' if png else ' NOT drawn: matplotlib missing'}) marked as a dry run, "
          f"--ingest refusing them: {'ok' if good else 'FAILED ' + str(errs[:3])}")
    return good


def exercise_host_paths(manifest: dict, bundle: Path, procs: dict) -> bool:
    print("device-side code, run here:")
    ok = check_runner(bundle, manifest)
    ok = check_entries(manifest, bundle) and ok
    ok = check_ops(manifest, procs) and ok
    ok = check_timing_and_reports(manifest, bundle) and ok
    return ok
