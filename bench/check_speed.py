"""Time the concrete synchronization checker on the warp-specialized GEMM of
``bench/gemm_kernels.py`` (CTA tile 128 x 256, k-step 64, 4-deep TMA ring, clusterDim 1).

    python bench/check_speed.py [--sizes 1024,2048,4096] [--profile] [--no-reuse]

Prints one row per size: tasks (CTA tiles), k-steps per task, statement instances of the
program covered by the abstract machine, how many tasks were replayed from the first task's
trace (``Machine`` task reuse; ``--no-reuse`` runs every task in full), seconds, and
microseconds per task x k-step (flat when the cost grows linearly with tiles x k-steps).

    python bench/check_speed.py --scalar [--sizes 64,256,1024] [--limit 120] [--before DIR]
    python bench/check_speed.py --shipped [--before DIR] [--limit 120]

``--scalar``: the scalar kernels (``specs/matmul_smem.py`` and the scheduled matmul of
``examples/scheduling/``) at M = N = K = each size, with batched access nests (the default
machine) and element by element (``Machine(batch=False)``, the machine before batching; a
run past ``--limit`` CPU seconds is cut off, ``>``). ``--shipped``: every proc of ``specs/``
and ``examples/`` at its ``VERIFY_SIZES`` through ``verify(p, sizes=..., mode="concrete")``.
``--before DIR``: the "before" column runs another checkout's ``exogpu_verify`` (e.g. ``git
archive main | tar -x -C DIR``) in a child process on this tree's kernels, instead of
``batch=False``. Seconds are CPU seconds of the measuring process (``time.process_time``),
steadier than wall time on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from exogpu_verify.amir.convert import lower_to_amir  # noqa: E402
from exogpu_verify.amir.evaluate import ev  # noqa: E402
from exogpu_verify.amir.interp import Machine  # noqa: E402

import gemm_kernels  # noqa: E402


def check_once(p, size: int, reuse: bool = True):
    sizes = {"S": 1, "M": size, "N": size, "K": size}
    t0 = time.perf_counter()
    m = Machine(lower_to_amir(p), dict(sizes), reuse_tasks=reuse)
    m.run()
    dt = time.perf_counter() - t0
    return m, dt


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(rel: str):
    import importlib.util

    path = os.path.join(ROOT, rel)
    name = "bench_" + rel.replace("/", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, os.path.dirname(path))  # its sibling modules (examples/scheduling)
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(os.path.dirname(path))
    return mod


def _child(rel: str, name: str, sizes: str, limit: float, what: str) -> None:
    """In the child of ``--before``: one measurement with the checkout on PYTHONPATH."""
    p = getattr(_load(rel), name)
    sz = dict(kv.split("=") for kv in sizes.split(",")) if sizes else {}
    sz = {k: int(v) for k, v in sz.items()}
    if what == "verify":
        from exogpu_verify import verify

        t0 = time.process_time()
        r = verify(p, sizes=sz, mode="concrete")
        print(f"RESULT {r.verdict} 0 {time.process_time() - t0:.2f} 0")
        return
    t0 = time.process_time()
    m = Machine(lower_to_amir(p), sz)
    cut = 0
    try:
        _run_cpu_limited(m, limit)
    except TimeoutError:
        cut = 1
    print(f"RESULT - {m.steps} {time.process_time() - t0:.2f} {cut}")


def _before(before: str, rel: str, name: str, sz: dict, limit: float, what: str):
    """(verdict, steps, seconds, cut) of one measurement with the checkout ``before``."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.path.abspath(before))
    txt = ",".join(f"{k}={v}" for k, v in sz.items())
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", rel, name,
                          txt, str(limit), what], env=env, capture_output=True, text=True,
                         cwd=ROOT).stdout
    line = [x for x in out.splitlines() if x.startswith("RESULT ")][-1].split()
    return line[1], int(line[2]), float(line[3]), line[4] == "1"


def scalar(sizes, limit: float, before: str | None = None) -> None:
    kernels = [("specs/matmul_smem.py", "matmul_smem"),
               ("examples/scheduling/matmul_schedule.py", "matmul_tiled")]
    print(f"| kernel | M=N=K | statement instances | batched nests | batched s | "
          f"{'before' if before else 'element by element'} s |")
    print("|---|---:|---:|---:|---:|---:|")
    for rel, name in kernels:
        p = getattr(_load(rel), name)
        am = lower_to_amir(p)
        for n in sizes:
            sz = {k: n for k in ("M", "N", "K")}
            if not all(ev(pred, sz) for pred in p.preds):
                continue  # the sizes violate an assert of this kernel
            t0 = time.process_time()
            m = Machine(am, dict(sz))
            m.run()
            dt = time.process_time() - t0
            if before:
                _v, esteps, de, cut = _before(before, rel, name, sz, limit, "machine")
            else:
                t0 = time.process_time()
                e = Machine(am, dict(sz), batch=False)
                cut = False
                try:
                    _run_cpu_limited(e, limit)
                except TimeoutError:
                    cut = True
                de = time.process_time() - t0
                esteps = e.steps
            steps = m.steps
            assert cut or esteps == steps, (esteps, steps)
            print(f"| {name} | {n} | {steps} | {m.batched_nests} | {dt:.2f} | "
                  f"{'>' if cut else ''}{de:.2f} |", flush=True)


def _run_cpu_limited(m, limit: float) -> None:
    """``m.run()``, raising TimeoutError once it used ``limit`` CPU seconds."""
    start = time.process_time()
    block, replay = m.block, m._replay

    def guarded(fn):
        def run(*a):
            if time.process_time() - start > limit:
                raise TimeoutError
            return fn(*a)
        return run

    m.block, m._replay = guarded(block), guarded(replay)
    m.run()


def shipped(before: str | None = None, limit: float = 120.0) -> None:
    from exogpu_verify import verify
    from exogpu_verify.ir.nodes import Procedure

    if before:
        print("| proc | VERIFY_SIZES | verdict | before s | CPU s |")
        print("|---|---|---|---:|---:|")
    else:
        print("| proc | VERIFY_SIZES | verdict | CPU s |")
        print("|---|---|---|---:|")
    for folder in ("specs", "examples"):
        for dirpath, _, files in sorted(os.walk(os.path.join(ROOT, folder))):
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
                mod = _load(rel)
                vs = getattr(mod, "VERIFY_SIZES", None)
                for v in vars(mod).values():
                    if not (isinstance(v, Procedure) and not v.is_instr and
                            v.module is vars(mod)):
                        continue
                    sz = {k: x for k, x in (vs or {}).items() if v.param(k)}
                    t0 = time.process_time()
                    r = verify(v, sizes=sz, mode="concrete")
                    dt = time.process_time() - t0
                    txt = ", ".join(f"{k}={x}" for k, x in sz.items()) or "-"
                    col = ""
                    if before:
                        name = next(k for k, x in vars(mod).items() if x is v)
                        bv, _, bt, _ = _before(before, rel, name, sz, limit, "verify")
                        assert bv == r.verdict, (rel, v.name, bv, r.verdict)
                        col = f" {bt:.2f} |"
                    print(f"| {rel}::{v.name} | {txt} | {r.verdict} |{col} {dt:.2f} |",
                          flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--scalar", action="store_true", help="the scalar kernels' table")
    ap.add_argument("--shipped", action="store_true", help="specs/ and examples/ table")
    ap.add_argument("--limit", type=float, default=120.0,
                    help="CPU seconds for an element-by-element run (--scalar)")
    ap.add_argument("--profile", action="store_true", help="cProfile the largest size")
    ap.add_argument("--no-reuse", action="store_true", help="run every task in full")
    ap.add_argument("--before", default=None, help="checkout of the 'before' column")
    ap.add_argument("--child", nargs=5, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        rel, name, sz, limit, what = args.child
        _child(rel, name, sz, float(limit), what)
        return 0
    if args.shipped:
        shipped(args.before, args.limit)
        return 0
    if args.scalar:
        scalar([int(x) for x in (args.sizes or "64,128,256,512,1024").split(",")], args.limit,
               args.before)
        return 0
    sizes = [int(x) for x in (args.sizes or "1024,2048,4096").split(",")]
    reuse = not args.no_reuse
    p = gemm_kernels.gemm
    print(f"{'M=N=K':>6} {'tasks':>6} {'k-steps':>7} {'stmt inst':>10} {'replayed':>8} "
          f"{'seconds':>8} {'us/(task*k)':>11}")
    for n in sizes:
        m, dt = check_once(p, n, reuse)
        tasks, ks = (n // 128) * (n // 256), n // 64
        print(f"{n:>6} {tasks:>6} {ks:>7} {m.steps:>10} {m.replayed_tasks:>8} {dt:>8.2f} "
              f"{1e6 * dt / (tasks * ks):>11.1f}", flush=True)
    if args.profile:
        import cProfile
        import pstats

        cProfile.runctx("check_once(p, sizes[-1], reuse)", globals(),
                        {"p": p, "sizes": sizes, "check_once": check_once, "reuse": reuse},
                        "/tmp/check_speed.prof")
        pstats.Stats("/tmp/check_speed.prof").sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
