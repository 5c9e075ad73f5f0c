"""One script to validate and benchmark the generated kernels on a Hopper GPU, in one lease.

Here (a machine with nvcc 13, no GPU needed)::

    python bench/gpu_run.py --build       # build the bundle bench/gpu_bundle (carried)
    python bench/gpu_run.py --dry-run     # build + health + host paths + size/time checks

There (the GPU machine: numpy, PyTorch or CuPy, compute-sanitizer; no islpy, no z3)::

    python3 bench/gpu_run.py --device --out DIR       # < 8 minutes

Back here::

    python bench/gpu_run.py --ingest DIR              # bench/RESULTS.md, JSON, PNG

The device run is one parent process that never touches CUDA and runs every step in a child
with a timeout (a hung or crashed kernel costs its own item only): a probe; a load check of
every library (rebuilt there with the recorded nvcc command if one does not load);
ceilings (copy bandwidth, bf16 8192^3 through cuBLAS); correctness of every case at every
size (``gpu_device.check``); compute-sanitizer racecheck, synccheck and memcheck per case at
a small size on 2 CTAs (so the K loop wraps the SMEM ring and each CTA runs several tasks),
four at a time; timing of every benchmarked case against cuBLAS (``gpu_timing``), for the
cases that passed. It writes ``DIR/results.json``, ``DIR/RESULTS.md``, ``DIR/gpu_plot.png``
and ``DIR/log.txt``, and prints a short table last. docs/gpu.md says how to run it.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
BUNDLE = HERE / "gpu_bundle"
TOOLS = ("racecheck", "synccheck", "memcheck")
MARK = "@@"


# ================================================================ children (on the device)
def _emit(kind: str, payload) -> None:
    print(f"{MARK}{kind} {json.dumps(payload)}", flush=True)


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def child_probe(a) -> int:
    import gpu_device as D
    info = {"python": sys.version.split()[0], "argv0": sys.executable}
    import numpy
    info["numpy"] = numpy.__version__
    for mod in ("torch", "cupy", "matplotlib"):
        try:
            m = __import__(mod)
            info[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001 - recorded
            info[mod] = f"missing ({type(e).__name__})"
    try:
        B = D.backend(a.backend)
        info["backend"] = B.name
        if B.name == "torch":
            t = B.t
            pr = t.cuda.get_device_properties(0)
            info.update(gpu=pr.name, sms=pr.multi_processor_count,
                        capability=f"{pr.major}.{pr.minor}", memory_GiB=round(pr.total_memory / 2**30, 1),
                        l2_MiB=round(getattr(pr, "L2_cache_size", 0) / 2**20, 1),
                        cuda=t.version.cuda)
        else:
            rt = B.cp.cuda.runtime
            pr = rt.getDeviceProperties(0)
            nm = pr["name"]
            info.update(gpu=nm.decode() if isinstance(nm, bytes) else nm,
                        sms=pr["multiProcessorCount"], capability=f"{pr['major']}.{pr['minor']}",
                        l2_MiB=round(pr.get("l2CacheSize", 0) / 2**20, 1),
                        cuda=rt.runtimeGetVersion())
    except Exception as e:  # noqa: BLE001 - recorded
        info["backend_error"] = f"{type(e).__name__}: {e}"
    _emit("RESULT", info)
    return 0


def child_libcheck(a) -> int:
    import gpu_device as D
    m = _manifest(a.bundle)
    lib_dir = Path(a.lib_dir) if a.lib_dir else None
    for c in m["cases"]:
        try:
            D.open_case(c, a.bundle, lib_dir)
            _emit("RESULT", {"case": c["name"], "ok": True})
        except Exception as e:  # noqa: BLE001 - recorded
            _emit("RESULT", {"case": c["name"], "ok": False, "error": f"{type(e).__name__}: {e}"})
    return 0


def child_ceilings(a) -> int:
    import gpu_timing as T
    _emit("RESULT", T.ceilings(T.framework(a.backend)))
    return 0


def child_correct(a) -> int:
    """Items ``case#index`` from ``--items``: one correctness run each; exits after the
    first failure that leaves the CUDA context unusable (the parent restarts it)."""
    import gpu_device as D
    m = {c["name"]: c for c in _manifest(a.bundle)["cases"]}
    B = D.backend(a.backend)
    lib_dir = Path(a.lib_dir) if a.lib_dir else None
    opened = {}
    for item in a.items.split(","):
        name, idx = item.rsplit("#", 1)
        case = m[name]
        _emit("START", item)
        try:
            if name not in opened:
                opened[name] = D.open_case(case, a.bundle, lib_dir)
            lib, raw = opened[name]
            rec = D.check(case, case["sizes"]["correct"][int(idx)], B,
                          D.raw_launcher(case, lib, raw), seed=int(idx))
            rec["backend"] = B.name
            _emit("RESULT", {"item": item, **rec})
        except Exception as e:  # noqa: BLE001 - reported; the context may be lost
            _emit("RESULT", {"item": item, "ok": False, "error": f"{type(e).__name__}: {e}"})
            return 3
    return 0


def child_sanitize(a) -> int:
    """One case at its sanitizer size on host numpy and the library's own allocations (no
    framework, so only our kernels are instrumented); exit 0 if the result is right."""
    import gpu_device as D
    case = {c["name"]: c for c in _manifest(a.bundle)["cases"]}[a.case]
    lib, raw = D.open_case(case, a.bundle, Path(a.lib_dir) if a.lib_dir else None)
    rec = D.check(case, case["sizes"]["sanitize"], D.HostArrays(lib=lib),
                  D.raw_launcher(case, lib, raw))
    print(json.dumps(rec))
    return 0 if rec["ok"] else 1


def child_time(a) -> int:
    import gpu_timing as T
    m = {c["name"]: c for c in _manifest(a.bundle)["cases"]}
    cases = [m[n] for n in a.items.split(",") if n]
    fw = T.framework(a.backend)
    res = T.timing(cases, a.bundle, fw, rounds=a.rounds,
                   lib_dir=Path(a.lib_dir) if a.lib_dir else None,
                   log=lambda s: print(s, flush=True))
    res["ceilings_after"] = T.ceilings(fw)
    res["framework"] = fw.name
    _emit("RESULT", res)
    return 0


CHILDREN = {"probe": child_probe, "libcheck": child_libcheck, "ceilings": child_ceilings,
            "correct": child_correct, "sanitize": child_sanitize, "time": child_time}


# ================================================================ the parent (on the device)
class Log:
    def __init__(self, path: Path | None):
        self.f = open(path, "a") if path else None
        self.t0 = time.time()

    def __call__(self, msg: str, echo: bool = True) -> None:
        line = f"[{time.time() - self.t0:7.1f}s] {msg}"
        if self.f:
            self.f.write(line + "\n")
            self.f.flush()
        if echo:
            print(line, flush=True)


def child_cmd(kind: str, a, *extra) -> list[str]:
    cmd = [sys.executable, "-u", str(Path(__file__).resolve()), "--child", kind,
           "--bundle", str(a.bundle), "--backend", a.backend, *extra]
    if getattr(a, "lib_dir", None):
        cmd += ["--lib-dir", str(a.lib_dir)]
    return cmd


def run_items(cmd_for, items: list[str], item_timeout: float, deadline: float, log) -> dict:
    """Run ``items`` through children (``cmd_for(items) -> argv``) that print ``@@START item``
    and ``@@RESULT {...}``; a child that passes ``item_timeout`` on one item is killed and that
    item recorded as a timeout, one that dies costs its current item; the rest go to a new
    child. Returns item -> result."""
    results: dict = {}
    todo = list(items)
    while todo:
        if time.time() > deadline:
            for it in todo:
                results[it] = {"item": it, "ok": False, "skipped": "device-time budget"}
            break
        proc = subprocess.Popen(cmd_for(todo), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1, start_new_session=True)
        q: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [q.put(ln) for ln in proc.stdout] + [q.put(None)],
                         daemon=True).start()
        current, tail, started = None, [], time.time()
        while True:
            limit = min(item_timeout - (time.time() - started), deadline - time.time())
            try:
                line = q.get(timeout=max(0.1, limit))
            except queue.Empty:
                line = "TIMEOUT"
            if line == "TIMEOUT" or (limit <= 0):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                if current is not None:
                    why = "timeout" if time.time() < deadline else "device-time budget"
                    results[current] = {"item": current, "ok": False, "error": f"{why} after "
                                        f"{time.time() - started:.0f} s", "log": tail[-20:]}
                    todo.remove(current)
                    log(f"  {current}: {why}")
                break
            if line is None:
                proc.wait()
                if current is not None:
                    results[current] = {"item": current, "ok": False, "error": "the child died "
                                        f"(exit {proc.returncode})", "log": tail[-20:]}
                    todo.remove(current)
                    log(f"  {current}: child died (exit {proc.returncode}): {' | '.join(tail[-3:])}")
                elif todo and proc.returncode != 0:
                    for it in todo:
                        results[it] = {"item": it, "ok": False,
                                       "error": f"child failed at start (exit {proc.returncode})",
                                       "log": tail[-20:]}
                    todo = []
                break
            line = line.rstrip("\n")
            if line.startswith(MARK + "START "):
                current, started, tail = json.loads(line[len(MARK) + 6:]), time.time(), []
            elif line.startswith(MARK + "RESULT "):
                r = json.loads(line[len(MARK) + 7:])
                it = r.get("item", current)
                results[it] = r
                if it in todo:
                    todo.remove(it)
                current = None
                log(f"  {it}: {'ok' if r.get('ok') else 'FAIL ' + str(r.get('error', ''))}",
                    echo=not r.get("ok"))
            else:
                tail.append(line)
                log("    | " + line, echo=False)
    return results


def run_one(cmd: list[str], timeout: float, log) -> tuple[dict | None, str]:
    """A child printing ``@@RESULT {...}`` lines: (its last result or None, its output)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           start_new_session=True)
        out = r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        o = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, f"timeout after {timeout:.0f} s: {o[-2000:]}"
    for line in out.splitlines():
        if not line.startswith(MARK):
            log("    | " + line, echo=False)
    res = [json.loads(ln[len(MARK) + 7:]) for ln in out.splitlines()
           if ln.startswith(MARK + "RESULT ")]
    if not res:
        log(f"  child {cmd[cmd.index('--child') + 1]} gave no result (exit {r.returncode}): "
            f"{out[-800:]}")
    return (res[-1] if res else None), out


def sanitize_one(a, name: str, tool: str, timeout: float) -> dict:
    cs = shutil.which("compute-sanitizer")
    if cs is None:
        return {"status": "unavailable", "detail": "compute-sanitizer not on PATH"}
    cmd = [cs, "--tool", tool, "--error-exitcode", "99", "--print-limit", "20",
           *child_cmd("sanitize", a, "--case", name)]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": round(time.time() - t0, 1)}
    out = r.stdout + r.stderr
    summary = [ln.strip() for ln in out.splitlines() if "SUMMARY" in ln]
    if "Device not supported" in out or "not supported on this" in out:
        status = "unsupported"
    elif r.returncode == 99:
        status = "errors"
    elif r.returncode == 0:
        status = "ok"
    else:
        status = "wrong result" if r.returncode == 1 else f"exit {r.returncode}"
    return {"status": status, "summary": summary[-3:], "seconds": round(time.time() - t0, 1),
            "rc": r.returncode, "tail": out[-1500:] if status != "ok" else ""}


def _rebuild(manifest: dict, bad: list[str], a, log) -> Path | None:
    """Rebuild the libraries that did not load with the device's nvcc (same command line)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        log("  no nvcc here: cannot rebuild")
        return None
    d = Path(tempfile.mkdtemp(prefix="exogpu-rebuild-"))
    for c in manifest["cases"]:
        shutil.copyfile(a.bundle / c["lib"], d / Path(c["lib"]).name)
    cases = {c["name"]: c for c in manifest["cases"]}

    def one(n):
        c = cases[n]
        cmd = [nvcc] + [x.replace("SRC.cu", str(a.bundle / c["cu"])).replace(
            "OUT.so", str(d / Path(c["lib"]).name)) for x in c["nvcc"]]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        return n, r.returncode, (r.stdout + r.stderr)[-500:]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        for n, rc, out in ex.map(one, bad):
            log(f"  rebuilt {n}: {'ok' if rc == 0 else 'FAILED ' + out}")
    return d


def device_main(a) -> int:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "log.txt")
    t_start = time.time()
    deadline = t_start + a.budget
    manifest = _manifest(a.bundle)
    cases = manifest["cases"]
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c["name"] in keep or c["family"] in keep]
    res = {"meta": {"command": " ".join(["python3", "bench/gpu_run.py"] + sys.argv[1:]),
                    "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                    "bundle_created": manifest["created"], "commit": manifest["commit"],
                    "budget_s": a.budget}, "manifest": manifest}
    log(f"device run: {len(cases)} cases, budget {a.budget} s")
    res["nvidia_smi"] = _smi()
    probe, tail = run_one(child_cmd("probe", a), 120, log)
    res["probe"] = probe or {"error": tail}
    log(f"probe: {json.dumps(res['probe'])}")
    libs = _libcheck(a, log)
    bad = [n for n, ok in libs.items() if not ok]
    res["libraries"] = {"loaded": sum(libs.values()), "failed": bad}
    if bad:
        log(f"{len(bad)} libraries do not load here: rebuilding with nvcc")
        a.lib_dir = _rebuild(manifest, bad, a, log)
        if a.lib_dir is not None:
            libs = _libcheck(a, log)
            res["libraries"]["after_rebuild"] = [n for n, ok in libs.items() if not ok]
    loadable = {n for n, ok in libs.items() if ok}
    cases = [c for c in cases if c["name"] in loadable]
    ceil, tail = run_one(child_cmd("ceilings", a), 180, log)
    res["ceilings"] = ceil or {"error": tail}
    log(f"ceilings: {_ceil_text(res['ceilings'])}")
    # correctness
    items = [f"{c['name']}#{i}" for c in cases for i in range(len(c["sizes"]["correct"]))]
    t0 = time.time()
    cr = run_items(lambda todo: child_cmd("correct", a, "--items", ",".join(todo)), items,
                   a.item_timeout, t_start + a.budget * 0.45, log)
    res["correctness"] = {c["name"]: [cr.get(f"{c['name']}#{i}", {"ok": False, "error": "?"})
                                      for i in range(len(c["sizes"]["correct"]))]
                          for c in cases}
    passed = [c["name"] for c in cases if all(r.get("ok") for r in res["correctness"][c["name"]])]
    log(f"correctness: {len(passed)}/{len(cases)} cases pass every size ({time.time() - t0:.0f} s)")
    # sanitizer: one case per family first, then the rest, four at a time
    first, rest, fams = [], [], set()
    for c in cases:
        (rest if c["family"] in fams else first).append(c["name"])
        fams.add(c["family"])
    jobs = [(n, t) for n in first + rest for t in TOOLS] if not a.no_sanitizer else []
    san: dict = {}
    t0 = time.time()
    san_deadline = t_start + a.budget * 0.75

    def sjob(job):
        n, t = job
        if time.time() > san_deadline - 20:
            return job, {"status": "skipped", "detail": "device-time budget"}
        return job, sanitize_one(a, n, t, min(a.sanitizer_timeout, san_deadline - time.time()))
    with ThreadPoolExecutor(max_workers=a.sanitizer_jobs) as ex:
        for (n, t), r in ex.map(sjob, jobs):
            san.setdefault(n, {})[t] = r
            if r["status"] != "ok":
                log(f"  sanitizer {t} {n}: {r['status']} {' '.join(r.get('summary', []))}")
    res["sanitizer"] = san
    log(f"sanitizer: {sum(r['status'] == 'ok' for v in san.values() for r in v.values())}/"
        f"{len(jobs)} runs clean ({time.time() - t0:.0f} s)")
    # timing
    timed = [c["name"] for c in cases if c["timed"] and c["name"] in passed]
    res["timing"] = {}
    if timed and not a.no_timing:
        left = deadline - time.time() - 15
        r, tail = run_one(child_cmd("time", a, "--items", ",".join(timed),
                                    "--rounds", str(a.rounds)), max(30, left), log)
        res["timing"] = r or {"error": tail}
        log(f"timing: {len((r or {}).get('items', []))} items")
    res["meta"]["seconds"] = round(time.time() - t_start, 1)
    import gpu_report as R
    R.write_all(res, out)
    print(R.short_table(res), flush=True)
    return 0


def _libcheck(a, log) -> dict:
    r, tail = run_one(child_cmd("libcheck", a), 180, log)
    out = {}
    for line in tail.splitlines():
        if line.startswith(MARK + "RESULT "):
            x = json.loads(line[len(MARK) + 7:])
            out[x["case"]] = x["ok"]
            if not x["ok"]:
                log(f"  {x['case']}: {x['error']}")
    return out


def _ceil_text(c: dict) -> str:
    if "copy_GBps" not in c:
        return json.dumps(c)[:300]
    return (f"copy {c['copy_GBps']:.0f} GB/s; " +
            (f"bf16 8192^3 {c['matmul_TFLOPs']:.0f} TFLOP/s" if "matmul_TFLOPs" in c
             else c.get("matmul_error", "")))


def _smi() -> str:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "nvidia-smi not found"
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw"
    try:
        return subprocess.run([smi, f"--query-gpu={q}", "--format=csv"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi failed: {e}"


# ================================================================ here: build, dry run, ingest
def host_build(a, log=print) -> dict:
    import gpu_plan as P
    work = HERE / ".gpu_work"
    t0 = time.time()
    cases = P.discover(work=work)
    log(f"{len(cases)} cases: " + ", ".join(f"{c.name} [{c.gate.split(':')[0]}]"
                                            for c in cases))
    m = P.build_bundle(a.bundle, cases, jobs=a.jobs, log=log)
    log(f"bundle {a.bundle}: {len(m['cases'])} built, {len(m['build_failures'])} failed "
        f"({time.time() - t0:.0f} s)")
    return m


def dry_run(a) -> int:
    import gpu_plan as P
    m = host_build(a)
    ok = not m["build_failures"]
    unhealthy = [c["name"] for c in m["cases"] if not c["health"]["ok"]]
    unchecked_sass = [c["name"] for c in m["cases"] if not c["health"]["sass_checked"]
                      and c["kernels"]]
    print(f"health: {len(m['cases']) - len(unhealthy)}/{len(m['cases'])} healthy"
          + (f"; UNHEALTHY {unhealthy}" if unhealthy else "")
          + (f"; SASS NOT CHECKED {unchecked_sass}" if unchecked_sass else ""))
    ok = ok and not unhealthy and not unchecked_sass
    # the runner's host-side code paths: loading, raw-launch plans, every op's inputs,
    # reference and comparison (the interpreter stands in for the GPU), reports
    from gpu_dry import exercise_host_paths
    ok = exercise_host_paths(m, a.bundle, quick=a.quick) and ok
    size = P.carried_bytes(a.bundle)
    print(f"carried to the device: tree {size['tree'] / 2**20:.1f} MiB + bundle "
          f"{size['bundle'] / 2**20:.1f} MiB = {size['total'] / 2**20:.1f} MiB "
          f"(limit {size['limit'] >> 20} MiB)")
    ok = ok and size["total"] <= size["limit"]
    est = P.estimate(m, rounds=a.rounds)
    print("device time estimate (pessimistic):")
    for k, v in est.items():
        if k not in ("total", "budget"):
            print(f"  {k:55s} {v:7.1f} s")
    print(f"  {'total':55s} {est['total']:7.1f} s  (budget {est['budget']} s; run it with "
          f"timeout_s={est['budget']})")
    ok = ok and est["total"] <= est["budget"]
    print("plan:")
    for c in m["cases"]:
        s = c["sizes"]
        print(f"  {c['name']:45s} {c['gate'].split(':')[0]:11s} correct x{len(s['correct'])}, "
              f"sanitize {s['sanitize']}, time x{len(s['time']) if c['timed'] else 0}")
    print("dry run: " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--build", action="store_true", help="build the bundle (here)")
    g.add_argument("--dry-run", action="store_true", help="build, check and plan (here)")
    g.add_argument("--device", action="store_true", help="run on the GPU machine")
    g.add_argument("--ingest", metavar="DIR", help="write bench/RESULTS.md etc. from DIR")
    g.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
    ap.add_argument("--backend", default="auto", choices=("auto", "torch", "cupy"))
    ap.add_argument("--budget", type=float, default=420.0, help="device seconds in all")
    ap.add_argument("--rounds", type=int, default=60, help="timing samples per item")
    ap.add_argument("--item-timeout", type=float, default=60.0)
    ap.add_argument("--sanitizer-timeout", type=float, default=90.0)
    ap.add_argument("--sanitizer-jobs", type=int, default=4)
    ap.add_argument("--no-sanitizer", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--only", default="", help="case names or families, comma-separated")
    ap.add_argument("--jobs", type=int, default=2, help="parallel builds (here)")
    ap.add_argument("--quick", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--items", default="", help=argparse.SUPPRESS)
    ap.add_argument("--case", default="", help=argparse.SUPPRESS)
    ap.add_argument("--lib-dir", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.bundle = a.bundle.resolve()
    if a.child:
        return CHILDREN[a.child](a)
    if a.device:
        return device_main(a)
    if a.ingest:
        import gpu_report as R
        return R.ingest(Path(a.ingest))
    if a.dry_run:
        return dry_run(a)
    m = host_build(a)
    return 0 if not m["build_failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
