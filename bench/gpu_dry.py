"""The dry run's exercise of the device-side code, here, without a GPU (``gpu_run.py
--dry-run``): everything the device run does except touching CUDA.

1. The device-side modules and children run with the checker (``exogpu_verify``,
   ``exogpu_codegen``, islpy, z3) made unimportable: ``--child probe`` and ``--child
   libcheck`` in a subprocess; libcheck loads every bundled library with ctypes.
2. Every library's entry is called through its ``RawLaunch`` plan with null pointers when no
   GPU is present: the CUDA runtime refuses (no device) after the arguments went through,
   which checks the plan's arity and types against the built entry.
3. ``gpu_device.check`` on every case at its smallest size with the sequential interpreter
   standing in for the kernel: inputs, NaN pre-fill, references and comparison of every op;
   then a negative control per op (a "kernel" that leaves one output element unwritten, and
   one that is off by 1%) must fail.
4. ``gpu_timing.timing`` with a CPU stand-in framework (host clocks as events), then every
   report (markdown, short table, plot) from that synthetic run, into a temporary folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BLOCK = """
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('exogpu_verify', 'exogpu_codegen', 'islpy', 'z3', 'sympy'):
            raise ImportError('not on the device: ' + name)
sys.meta_path.insert(0, _Block())
sys.argv = {argv!r}
sys.path.insert(0, {here!r})
import runpy
runpy.run_path({script!r}, run_name='__main__')
"""


def _child_without_checker(args: list[str]) -> subprocess.CompletedProcess:
    script = str(HERE / "gpu_run.py")
    code = BLOCK.format(argv=[script, *args], here=str(HERE), script=script)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)


def _results(out: str) -> list[dict]:
    return [json.loads(ln[9:]) for ln in out.splitlines() if ln.startswith("@@RESULT ")]


def check_children(bundle: Path) -> bool:
    ok = True
    r = _child_without_checker(["--child", "probe", "--bundle", str(bundle)])
    res = _results(r.stdout)
    good = r.returncode == 0 and res and "python" in res[0]
    print(f"  probe child without the checker: {'ok' if good else 'FAILED'} "
          f"({res[0].get('backend', res[0].get('backend_error', ''))[:80] if res else r.stderr[-300:]})")
    ok &= bool(good)
    r = _child_without_checker(["--child", "libcheck", "--bundle", str(bundle)])
    res = _results(r.stdout)
    bad = [x for x in res if not x["ok"]]
    good = r.returncode == 0 and res and not bad
    print(f"  libcheck child without the checker: {len(res) - len(bad)}/{len(res)} libraries "
          f"load{'' if good else ' FAILED: ' + str(bad or r.stderr[-300:])}")
    return ok and bool(good)


def check_entries(manifest: dict, bundle: Path) -> bool:
    import gpu_device as D
    L = D.launch_module()
    n_ok, problems = 0, []
    for c in manifest["cases"]:
        lib, raw = D.open_case(c, bundle)
        cnt = __import__("ctypes").c_int(0)
        lib.exo_rt_device_count(__import__("ctypes").byref(cnt))
        if cnt.value:
            print("  a GPU is present: entries are not called with null pointers")
            return True
        args = {k: 1 for k in c["moduli"]}
        args.update({k: 0 for k in c["arrays"]})
        args.update(c["scalars"])
        try:
            raw(0, **args)
            problems.append(f"{c['name']}: the entry returned 0 without a GPU")
        except L.LaunchError as e:
            n_ok += 1
            _ = e
        except Exception as e:  # noqa: BLE001 - a plan that does not fit the entry
            problems.append(f"{c['name']}: {type(e).__name__}: {e}")
    print(f"  raw launch plans: {n_ok}/{len(manifest['cases'])} entries called (refused by the "
          f"CUDA runtime: no device){'; ' + '; '.join(problems) if problems else ''}")
    return not problems


def check_ops(manifest: dict, quick: bool = False) -> bool:
    import gpu_device as D
    import gpu_plan as P
    from exogpu_verify import interpret

    procs = {}
    for case in P.discover(with_examples=True, with_backend=True, work=HERE / ".gpu_work"):
        procs[case.name] = case.proc
    ok, seen_ops, t0 = True, set(), time.time()
    for c in manifest["cases"]:
        if quick and c["op"] in seen_ops:
            continue
        p = procs[c["name"]]
        sz = min(c["sizes"]["correct"], key=lambda s: sum(v for k, v in s.items()
                                                        if k in c["moduli"]))

        def interp(args, grid, p=p):
            interpret(p, **args)
        rec = D.check(c, sz, D.HostArrays(interpret=True), interp)
        if not rec["ok"]:
            print(f"  interpreter run of {c['name']} at {sz}: FAILED {rec}")
            ok = False
        if c["op"] not in seen_ops:
            seen_ops.add(c["op"])
            for how in ("unwritten", "off"):
                bad = D.check(c, sz, D.HostArrays(interpret=True), _broken(p, c, how))
                if bad["ok"]:
                    print(f"  negative control ({how}) of {c['name']} PASSED: the comparison "
                          "is vacuous")
                    ok = False
    print(f"  correctness harness with the interpreter: {'ok' if ok else 'FAILED'} "
          f"({len(manifest['cases']) if not quick else len(seen_ops)} cases, "
          f"{len(seen_ops)} ops, 2 negative controls each, {time.time() - t0:.0f} s)")
    return ok


def _broken(p, case: dict, how: str):
    from exogpu_verify import interpret
    out = (case["outputs"] or case["inout"])[0]

    def run(args, grid):
        keep = np.array(args[out], copy=True)
        interpret(p, **args)
        a = args[out].reshape(-1)
        if how == "unwritten":
            a[a.size // 2] = keep.reshape(-1)[a.size // 2] if case["outputs"] else np.nan
        else:
            a[:] = (a.astype(np.float64) * 1.01).astype(a.dtype)
    return run


class CpuFramework:
    """``gpu_timing``'s framework interface on the host: numpy arrays, host-clock events."""

    name = "cpu stand-in"

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

    def copy(self, dst, src):
        dst[...] = src

    def l2_bytes(self):
        return 60 << 20

    def baselines(self, op, mode, A, B, C):
        return {f"stand-in {op}": (lambda: None)}


def check_timing_and_reports(manifest: dict, bundle: Path) -> bool:
    import gpu_report as R
    import gpu_timing as T

    class FakeRaw:
        def bind(self, **args):
            return lambda stream=None: None

    fw = CpuFramework()
    timed = [c for c in manifest["cases"] if c["timed"]]
    small = [dict(c, sizes=dict(c["sizes"], time=[min(c["sizes"]["correct"],
                                                      key=lambda s: sum(s.values()))]))
             for c in timed]
    t = T.timing(small, bundle, fw, rounds=3, opener=lambda c, b, d: (None, FakeRaw()),
                 log=lambda s: None)
    t["ceilings_after"] = {"copy_GBps": 1.0, "matmul_TFLOPs": 1.0}
    t["framework"] = fw.name
    corr = {c["name"]: [{"ok": True, "outputs": {"C": {"rel_error": 0.0, "nonfinite": 0,
                                                       "ok": True}}}] * len(c["sizes"]["correct"])
            for c in manifest["cases"]}
    res = {"meta": {"command": "dry run (synthetic numbers)", "date": "now", "budget_s": 420,
                    "bundle_created": manifest["created"], "commit": manifest["commit"],
                    "seconds": 0},
           "manifest": manifest, "probe": {"gpu": "none (dry run)"}, "nvidia_smi": "",
           "ceilings": {"copy_GBps": 1.0, "matmul_TFLOPs": 1.0, "matmul_how": "stand-in"},
           "correctness": corr, "timing": t,
           "sanitizer": {c["name"]: {x: {"status": "ok"} for x in
                                     ("racecheck", "synccheck", "memcheck")}
                         for c in manifest["cases"]}}
    with tempfile.TemporaryDirectory() as d:
        R.write_all(res, Path(d))
        md = (Path(d) / "RESULTS.md").read_text()
        table = R.short_table(res)
        png = (Path(d) / "gpu_plot.png").exists()
    errs = [it for it in t["items"] if "error" in it]
    good = not errs and "## Timing" in md and len(table.splitlines()) > len(manifest["cases"])
    print(f"  timing ({len(t['items'])} items, cpu stand-in) and reports (markdown, table, "
          f"plot {'written' if png else 'skipped: no matplotlib'}): "
          f"{'ok' if good else 'FAILED ' + str(errs[:3])}")
    return good


def exercise_host_paths(manifest: dict, bundle: Path, quick: bool = False) -> bool:
    print("device-side code, run here:")
    ok = check_children(bundle)
    ok = check_entries(manifest, bundle) and ok
    ok = check_ops(manifest, quick=quick) and ok
    ok = check_timing_and_reports(manifest, bundle) and ok
    return ok
