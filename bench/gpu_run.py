"""One script to validate and benchmark the generated kernels on a Hopper GPU, in one lease.

Here (a machine with nvcc 13 and the checker; no GPU needed)::

    python bench/gpu_run.py --dry-run     # build the bundle bench/gpu_bundle, check it, plan
    python bench/gpu_run.py --build       # build only

There (the GPU machine: numpy, PyTorch or CuPy, compute-sanitizer; no islpy, z3 or cvc5)::

    python3 bench/gpu_bundle/runner/gpu_run.py --device --out DIR      # < 8 minutes

Back here::

    python bench/gpu_run.py --ingest DIR  # bench/RESULTS.md section, gpu_results.json, PNG

The device run is one parent process that never touches CUDA and runs every step in a child
process with a timeout, so a hung or crashed kernel costs its own item only: a probe; a load
check of every library (rebuilt there with the recorded nvcc command if one does not load);
the ceilings (copy bandwidth, bf16 8192^3 through cuBLAS); then, side by side, correctness
of every case at every size (one child per case, ``gpu_device.check``) and compute-sanitizer
racecheck, synccheck and memcheck per case at a size where every SMEM ring wraps twice and
each CTA runs two tasks; last, timing of every benchmarked case that passed against cuBLAS
(``gpu_timing``) and the ceilings again. It writes ``DIR/results.json`` (after every
phase), ``DIR/RESULTS.md``, ``DIR/gpu_plot.png`` and ``DIR/log.txt``, and prints a short
table last. docs/gpu.md says how to run it anywhere.
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
IN_BUNDLE = HERE.name == "runner" and (HERE.parent / "manifest.json").exists()
BUNDLE = HERE.parent if IN_BUNDLE else HERE / "gpu_bundle"
sys.path.insert(0, str(HERE))
TOOLS = ("racecheck", "synccheck", "memcheck")
MARK = "@@"
FORMAT = 2                    # of manifest.json (gpu_plan.FORMAT)
MIN_ROUNDS = 50


# ================================================================ children (on the device)
def _emit(kind: str, payload) -> None:
    print(f"{MARK}{kind} {json.dumps(payload)}", flush=True)


def _manifest(bundle: Path) -> dict:
    m = json.loads((Path(bundle) / "manifest.json").read_text())
    if m.get("format") != FORMAT:
        raise SystemExit(f"{bundle}/manifest.json has format {m.get('format')}, this runner "
                         f"reads {FORMAT}: rebuild the bundle (python bench/gpu_run.py --build)")
    return m


def _cases(bundle: Path) -> dict:
    return {c["name"]: c for c in _manifest(bundle)["cases"]}


def child_probe(a) -> int:
    import gpu_device as D
    info = {"python": sys.version.split()[0], "executable": sys.executable}
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
                        capability=f"{pr.major}.{pr.minor}",
                        memory_GiB=round(pr.total_memory / 2**30, 1),
                        l2_MiB=round(getattr(pr, "L2_cache_size", 0) / 2**20, 1),
                        cuda=t.version.cuda)
        else:
            rt = B.xp.cuda.runtime
            pr = rt.getDeviceProperties(0)
            nm = pr["name"]
            info.update(gpu=nm.decode() if isinstance(nm, bytes) else nm,
                        sms=pr["multiProcessorCount"], capability=f"{pr['major']}.{pr['minor']}",
                        memory_GiB=round(pr.get("totalGlobalMem", 0) / 2**30, 1),
                        l2_MiB=round(pr.get("l2CacheSize", 0) / 2**20, 1),
                        cuda=rt.runtimeGetVersion())
    except Exception as e:  # noqa: BLE001 - recorded
        info["backend_error"] = f"{type(e).__name__}: {e}"
    _emit("RESULT", info)
    return 0


def child_libcheck(a) -> int:
    import gpu_device as D
    lib_dir = Path(a.lib_dir) if a.lib_dir else None
    for c in _manifest(a.bundle)["cases"]:
        try:
            D.open_case(c, a.bundle, lib_dir)
            _emit("RESULT", {"case": c["name"], "ok": True})
        except Exception as e:  # noqa: BLE001 - recorded
            _emit("RESULT", {"case": c["name"], "ok": False, "error": f"{type(e).__name__}: {e}"})
    return 0


def child_ceilings(a) -> int:
    import gpu_timing as T
    try:
        fw = T.framework(a.backend)
    except RuntimeError as e:
        _emit("RESULT", {"error": str(e)})
        return 1
    _emit("RESULT", T.ceilings(fw))
    return 0


def child_correct(a) -> int:
    """One case, the sizes ``--items`` (indices into its correctness sizes), one run each;
    exits after the first exception (the CUDA context may be lost: the parent restarts a
    child for the sizes left)."""
    import gpu_device as D
    case = _cases(a.bundle)[a.case]
    try:
        B = D.backend(a.backend)
        lib, raw = D.open_case(case, a.bundle, Path(a.lib_dir) if a.lib_dir else None)
    except Exception as e:  # noqa: BLE001 - no backend or no library: every item fails alike
        for item in a.items.split(","):
            _emit("RESULT", {"item": item, "ok": False, "error": f"{type(e).__name__}: {e}"})
        return 0
    stream = B.t.cuda.current_stream().cuda_stream if B.name == "torch" else \
        B.xp.cuda.get_current_stream().ptr
    for item in a.items.split(","):
        _emit("START", item)
        idx = int(item.rsplit("#", 1)[1])
        try:
            rec = D.check(case, case["sizes"]["correct"][idx], B,
                          D.raw_launcher(lib, raw, int(stream)), seed=idx + 1)
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
    case = _cases(a.bundle)[a.case]
    lib, raw = D.open_case(case, a.bundle, Path(a.lib_dir) if a.lib_dir else None)
    rec = D.check(case, case["sizes"]["sanitize"], D.HostArrays(lib=lib),
                  D.raw_launcher(lib, raw))
    _emit("RESULT", rec)
    return 0 if rec["ok"] else 1


def child_time(a) -> int:
    import gpu_timing as T
    m = _cases(a.bundle)
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
        self.lock = threading.Lock()

    def __call__(self, msg: str, echo: bool = True) -> None:
        line = f"[{time.time() - self.t0:7.1f}s] {msg}"
        with self.lock:
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


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_items(cmd_for, items: list[str], item_timeout: float, deadline: float, log,
              start_timeout: float = 120.0) -> dict:
    """Run ``items`` through children (``cmd_for(items) -> argv``) that print ``@@START item``
    and ``@@RESULT {...}``; a child that passes ``item_timeout`` on one item (or
    ``start_timeout`` before its first) is killed and that item recorded as a timeout, one
    that dies costs its current item; the rest go to a new child. Returns item -> result."""
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

        def pump(p=proc, q=q):
            for ln in p.stdout:
                q.put(ln)
            q.put(None)
        threading.Thread(target=pump, daemon=True).start()
        current, tail, started, progress = None, [], time.time(), False
        while True:
            allowance = item_timeout if current is not None else start_timeout
            limit = min(allowance - (time.time() - started), deadline - time.time())
            try:
                line = q.get(timeout=max(0.05, limit)) if limit > 0 else "TIMEOUT"
            except queue.Empty:
                line = "TIMEOUT"
            if line == "TIMEOUT":
                _kill(proc)
                why = "timeout" if time.time() < deadline else "device-time budget"
                it = current if current is not None else todo[0]
                results[it] = {"item": it, "ok": False, "log": tail[-20:],
                               "error": f"{why} after {time.time() - started:.0f} s"
                               + ("" if current is not None else " (before it started)")}
                todo.remove(it)
                log(f"  {it}: {why}")
                break
            if line is None:                    # the child is gone
                proc.wait()
                if current is not None:         # it died running ``current``
                    results[current] = {"item": current, "ok": False, "log": tail[-20:],
                                        "error": f"the child died (exit {proc.returncode})"}
                    todo.remove(current)
                    log(f"  {current}: child died (exit {proc.returncode}): "
                        f"{' | '.join(tail[-3:])}")
                elif todo and not progress:     # it never ran an item: charge the first
                    it = todo.pop(0)
                    results[it] = {"item": it, "ok": False, "log": tail[-20:],
                                   "error": f"the child exited (status {proc.returncode}) "
                                   "before running it"}
                    log(f"  {it}: child exited at start (exit {proc.returncode}): "
                        f"{' | '.join(tail[-3:])}")
                # else: it stopped after a result (a context it could not trust): a new
                # child takes the items left
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
                current, started, progress = None, time.time(), True
                log(f"  {it}: {'ok' if r.get('ok') else 'FAIL ' + str(r.get('error', ''))}",
                    echo=not r.get("ok"))
            else:
                tail.append(line)
                log("    | " + line, echo=False)
    return results


def run_one(cmd: list[str], timeout: float, log) -> tuple[dict | None, str]:
    """A child printing ``@@RESULT {...}`` lines: (its last result or None, its output)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, timeout),
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
    """``compute-sanitizer --tool TOOL`` on the case's sanitize child: ``ok`` only when the
    tool reports no error and the result is right."""
    cs = shutil.which("compute-sanitizer")
    if cs is None:
        return {"status": "unavailable", "detail": "compute-sanitizer not on PATH"}
    cmd = [cs, "--tool", tool, "--error-exitcode", "99", "--print-limit", "20",
           *child_cmd("sanitize", a, "--case", name)]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, timeout),
                           start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": round(time.time() - t0, 1)}
    out = r.stdout + r.stderr
    summary = [ln.strip() for ln in out.splitlines() if "SUMMARY" in ln]
    res = [json.loads(ln[len(MARK) + 7:]) for ln in out.splitlines()
           if ln.startswith(MARK + "RESULT ")]
    if "Device not supported" in out or "not supported on this" in out:
        status = "unsupported"
    elif r.returncode == 99:
        status = "errors"
    elif r.returncode == 0:
        status = "ok"
    else:
        status = "wrong result" if r.returncode == 1 else f"exit {r.returncode}"
    return {"status": status, "summary": summary[-3:], "seconds": round(time.time() - t0, 1),
            "rc": r.returncode, "result": res[-1] if res else None,
            "tail": out[-1500:] if status != "ok" else ""}


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
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return n, -1, "nvcc timed out"
        return n, r.returncode, (r.stdout + r.stderr)[-500:]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        for n, rc, out in ex.map(one, bad):
            log(f"  rebuilt {n}: {'ok' if rc == 0 else 'FAILED ' + out}")
    return d


def _save(res: dict, out: Path) -> None:
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(res, indent=1, default=str) + "\n")
    os.replace(tmp, out / "results.json")


def device_main(a) -> int:
    import gpu_report as R
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
    if a.rounds < MIN_ROUNDS and not a.allow_few_rounds:
        raise SystemExit(f"--rounds {a.rounds}: medians need at least {MIN_ROUNDS} samples")
    res = {"meta": {"command": " ".join(["python3", str(Path(sys.argv[0]))] + sys.argv[1:]),
                    "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                    "bundle_created": manifest["created"], "commit": manifest["commit"],
                    "dirty": manifest.get("dirty"), "budget_s": a.budget,
                    "dry_run": bool(a.rehearsal)},
           "manifest": manifest}
    log(f"device run: {len(cases)} cases, budget {a.budget:.0f} s")
    res["nvidia_smi"] = _smi()
    log(f"nvidia-smi: {res['nvidia_smi']}")
    probe, tail = run_one(child_cmd("probe", a), 180, log)
    res["probe"] = probe or {"error": tail[-2000:]}
    res["compute_sanitizer"] = _sanitizer_version()
    log(f"probe: {json.dumps(res['probe'])}")
    libs = _libcheck(a, log)
    bad = [c["name"] for c in cases if not libs.get(c["name"])]
    res["libraries"] = {"loaded": sum(1 for c in cases if libs.get(c["name"])), "failed": bad}
    if bad:
        log(f"{len(bad)} libraries do not load here: rebuilding them with nvcc")
        a.lib_dir = _rebuild(manifest, bad, a, log)
        if a.lib_dir is not None:
            libs = _libcheck(a, log)
            res["libraries"]["after_rebuild"] = [c["name"] for c in cases
                                                 if not libs.get(c["name"])]
    cases = [c for c in cases if libs.get(c["name"])]
    _save(res, out)
    # 1. ceilings first: every ratio's anchor from the same machine and hour
    ceil, tail = run_one(child_cmd("ceilings", a), 240, log)
    res["ceilings"] = ceil or {"error": tail[-2000:]}
    log(f"ceilings: {R.ceiling_text(res['ceilings'])}")
    _save(res, out)
    # 2. correctness and the sanitizer, side by side
    checks_deadline = t_start + a.budget * 0.72
    t0 = time.time()
    res["correctness"], res["sanitizer"] = _checks(a, cases, checks_deadline, log)
    passed = [c["name"] for c in cases
              if all(r.get("ok") for r in res["correctness"][c["name"]])]
    log(f"correctness: {len(passed)}/{len(cases)} cases pass every size; sanitizer: "
        f"{sum(r['status'] == 'ok' for v in res['sanitizer'].values() for r in v.values())}/"
        f"{sum(len(v) for v in res['sanitizer'].values())} runs clean ({time.time() - t0:.0f} s)")
    _save(res, out)
    # 3. timing of the cases that passed, with their baselines, and the ceilings again
    timed = [c["name"] for c in cases if c["timed"] and c["name"] in passed]
    res["timing"] = {}
    if timed and not a.no_timing:
        left = deadline - time.time() - 15
        if left > 30:
            r, tail = run_one(child_cmd("time", a, "--items", ",".join(timed),
                                        "--rounds", str(a.rounds)), left, log)
            res["timing"] = r or {"error": tail[-3000:]}
            log(f"timing: {len((r or {}).get('items', []))} items")
        else:
            res["timing"] = {"error": f"no device time left ({left:.0f} s)"}
    res["meta"]["seconds"] = round(time.time() - t_start, 1)
    R.write_all(res, out)
    print(R.short_table(res), flush=True)
    return 0


def _checks(a, cases: list[dict], deadline: float, log) -> tuple[dict, dict]:
    """Correctness (``a.correct_jobs`` cases at a time, one child per case) and the
    sanitizer (``a.sanitizer_jobs`` runs at a time; one case per family first, all three
    tools each), until ``deadline``."""
    corr: dict = {}
    san: dict = {}

    def correct(c):
        n = len(c["sizes"]["correct"])
        items = [f"{c['name']}#{i}" for i in range(n)]
        r = run_items(lambda todo: child_cmd("correct", a, "--case", c["name"], "--items",
                                             ",".join(todo)), items, a.item_timeout,
                      deadline, log)
        return c["name"], [r.get(it, {"ok": False, "error": "no result"}) for it in items]

    first, rest, fams = [], [], set()
    for c in cases:
        (rest if c["family"] in fams else first).append(c["name"])
        fams.add(c["family"])
    jobs = [] if a.no_sanitizer else [(n, t) for n in first + rest for t in TOOLS]

    def sjob(job):
        n, t = job
        left = deadline - time.time()
        if left < 20:
            return job, {"status": "skipped", "detail": "device-time budget"}
        r = sanitize_one(a, n, t, min(a.sanitizer_timeout, left))
        if r["status"] != "ok":
            log(f"  sanitizer {t} {n}: {r['status']} {' '.join(r.get('summary', []))}")
        return job, r

    with ThreadPoolExecutor(max_workers=max(1, a.correct_jobs)) as ce, \
            ThreadPoolExecutor(max_workers=max(1, a.sanitizer_jobs)) as se:
        cf = [ce.submit(correct, c) for c in cases]
        sf = [se.submit(sjob, j) for j in jobs]
        for f in cf:
            name, runs = f.result()
            corr[name] = runs
        for f in sf:
            (n, t), r = f.result()
            san.setdefault(n, {})[t] = r
    return corr, san


def _libcheck(a, log) -> dict:
    _, tail = run_one(child_cmd("libcheck", a), 180, log)
    out = {}
    for line in tail.splitlines():
        if line.startswith(MARK + "RESULT "):
            x = json.loads(line[len(MARK) + 7:])
            out[x["case"]] = x["ok"]
            if not x["ok"]:
                log(f"  {x['case']}: {x['error']}")
    return out


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


def _sanitizer_version() -> str:
    cs = shutil.which("compute-sanitizer")
    if not cs:
        return "not on PATH"
    try:
        out = subprocess.run([cs, "--version"], capture_output=True, text=True,
                             timeout=60).stdout.strip().splitlines()
        return out[-1] if out else "?"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"failed: {e}"


# ================================================================ here: build, dry run, ingest
def host_build(a, log=print) -> tuple[dict, list]:
    """Discover every case and build the bundle: (manifest, cases)."""
    import gpu_plan as P
    t0 = time.time()
    try:
        cases = P.discover(work=HERE / ".gpu_work", log=log)
    except (LookupError, ImportError, ValueError) as e:
        raise SystemExit(f"gpu_run.py: {e}") from None
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c.name in keep or c.recipe.family in keep]
        log(f"--only {a.only}: a partial bundle")
    log(f"{len(cases)} cases: " + ", ".join(f"{c.name} [{c.gate.split(':')[0]}]"
                                            for c in cases))
    m = P.build_bundle(a.bundle, cases, jobs=a.jobs, log=log)
    log(f"bundle {a.bundle}: {len(m['cases'])} built, {len(m['build_failures'])} failed "
        f"({time.time() - t0:.0f} s)")
    return m, cases


def dry_run(a) -> int:
    import gpu_plan as P
    from gpu_dry import exercise_host_paths

    t0 = time.time()
    if a.skip_build:
        m = _manifest(a.bundle)
        print(f"bundle {a.bundle} reused (built {m['created']} at {m['commit']})")
        cases = P.discover(work=HERE / ".gpu_work", certify=False)
        cases = [c for c in cases if c.name in {e["name"] for e in m["cases"]}]
    else:
        m, cases = host_build(a)
    ok = not m["build_failures"]
    for f in m["build_failures"]:
        print(f"build FAILED: {f['name']}: {f['error'][:300]}")
    for c in m["cases"]:
        if "inconclusive" in c["gate"]:
            print(f"WARNING: {c['name']}: {c['gate']}")
    unhealthy = [c["name"] for c in m["cases"] if not c["health"]["ok"]]
    unchecked = [c["name"] for c in m["cases"] if c["kernels"] and
                 not c["health"]["sass_checked"]]
    print(f"health (stack frame 0, no spills, no ptxas warning, no local memory, wgmma not "
          f"serialized): {len(m['cases']) - len(unhealthy)}/{len(m['cases'])} healthy"
          + (f"; UNHEALTHY {unhealthy}" if unhealthy else "")
          + (f"; SASS NOT CHECKED {unchecked}" if unchecked else ""))
    ok = ok and not unhealthy and not unchecked
    ok = exercise_host_paths(m, a.bundle, {c.name: c.proc for c in cases}) and ok
    size = P.carried_bytes(a.bundle)
    print(f"carried to the device: tree {size['tree'] / 2**20:.1f} MiB + bundle "
          f"{size['bundle'] / 2**20:.1f} MiB = {size['total'] / 2**20:.1f} MiB "
          f"(limit {size['limit'] >> 20} MiB)")
    ok = ok and size["total"] <= size["limit"]
    est = P.estimate(m, rounds=a.rounds, correct_jobs=a.correct_jobs,
                     sanitizer_jobs=a.sanitizer_jobs)
    print("device time estimate (from assumed per-step costs, gpu_plan.COST; nothing has "
          "been measured on a GPU yet):")
    for k, v in est.items():
        if k not in ("total", "budget", "_parts"):
            print(f"  {k:78s} {v:6.0f} s")
    print(f"    (correctness {est['_parts']['correctness']:.0f} s, sanitizer "
          f"{est['_parts']['sanitizer']:.0f} s)")
    print(f"  {'total':78s} {est['total']:6.0f} s  (must fit {est['budget']} s; the run "
          f"stops itself at --budget {a.budget:.0f} s)")
    ok = ok and est["total"] <= est["budget"]
    print("plan:")
    for c in m["cases"]:
        s, f = c["sizes"], c["sizes"]["sanitize_facts"]
        print(f"  {c['name']:44s} {c['gate'].split(':')[0]:11s} correct x{len(s['correct'])}, "
              f"sanitize {_sz(s['sanitize'])} ({f['tasks']} tasks on {f['ctas']} CTAs, rings "
              f"wrap {'-' if f['ring_wraps'] is None else format(f['ring_wraps'], '.3g')}x), "
              f"time x{len(s['time']) if c['timed'] else 0}")
    print(f"dry run: {'OK' if ok else 'FAILED'} ({time.time() - t0:.0f} s)")
    return 0 if ok else 1


def _sz(s: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in s.items())


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--build", action="store_true", help="build the bundle (here)")
    g.add_argument("--dry-run", action="store_true",
                   help="build, check health, run the device-side code without a GPU, "
                        "check what travels and print the plan (here)")
    g.add_argument("--device", action="store_true", help="run on the GPU machine")
    g.add_argument("--ingest", metavar="DIR", help="write bench/RESULTS.md etc. from DIR")
    g.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
    ap.add_argument("--backend", default="auto", choices=("auto", "torch", "cupy"))
    ap.add_argument("--budget", type=float, default=420.0, help="device seconds in all")
    ap.add_argument("--rounds", type=int, default=60, help="timing samples per item (>= 50)")
    ap.add_argument("--item-timeout", type=float, default=60.0,
                    help="one correctness run (seconds)")
    ap.add_argument("--sanitizer-timeout", type=float, default=120.0)
    ap.add_argument("--correct-jobs", type=int, default=3)
    ap.add_argument("--sanitizer-jobs", type=int, default=6)
    ap.add_argument("--no-sanitizer", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--only", default="", help="case names or families, comma-separated")
    ap.add_argument("--jobs", type=int, default=2, help="parallel nvcc builds (here)")
    ap.add_argument("--skip-build", action="store_true",
                    help="--dry-run on the existing bundle (no rebuild)")
    ap.add_argument("--allow-few-rounds", action="store_true", help=argparse.SUPPRESS)
    # the dry run's rehearsal of --device on a machine without a GPU: marked as a dry run
    ap.add_argument("--rehearsal", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--items", default="", help=argparse.SUPPRESS)
    ap.add_argument("--case", default="", help=argparse.SUPPRESS)
    ap.add_argument("--lib-dir", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.bundle = a.bundle.resolve()
    if a.child:
        return CHILDREN[a.child](a)
    if a.device:
        runner = a.bundle / "runner" / "gpu_run.py"
        if runner.exists() and runner.resolve() != Path(__file__).resolve():
            # one code path: the bundle's copy of the runner, which matches its manifest
            os.execv(sys.executable, [sys.executable, "-u", str(runner), *argv])
        return device_main(a)
    if IN_BUNDLE:
        raise SystemExit("this is the bundle's copy of the runner: --build, --dry-run and "
                         "--ingest run from the repository (python bench/gpu_run.py ...)")
    if a.ingest:
        import gpu_report as R
        return R.ingest(Path(a.ingest))
    sys.stdout.reconfigure(line_buffering=True)      # progress shows in logs as it happens
    if a.dry_run:
        return dry_run(a)
    m, _ = host_build(a)
    return 0 if not m["build_failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
