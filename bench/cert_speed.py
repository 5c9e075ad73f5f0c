"""What the second solver and the re-check cost: prints two markdown tables.

1. The GEMM of ``gemm_kernels.py`` proven by ``check_sync_symbolic`` with isl alone, with
   isl + Z3 (whole obligations in SMT-LIB) and with isl + Z3 + cvc5, interleaved in one
   run (``--repeat`` rounds; the median is shown, with the per-solver time summed over all
   obligations).
2. ``exogpu-verify --recheck DIR`` (default ``proofs/``) in a subprocess pinned to one
   core when ``taskset`` exists: wall time and CPU time.

    python bench/cert_speed.py [--repeat 3] [--proofs proofs]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

VARIANTS = [("isl only", ()), ("isl + Z3", ("z3",)), ("isl + Z3 + cvc5", ("z3", "cvc5"))]


def gemm_table(repeat: int) -> str:
    import gemm_kernels as gk

    from exogpu_verify.symbolic import check_sync_symbolic

    rows: dict = {name: {"total": [], "z3": [], "cvc5": []} for name, _ in VARIANTS}
    n_obs = 0
    for _ in range(repeat):
        for name, solvers in VARIANTS:
            t0 = time.perf_counter()
            r = check_sync_symbolic(gk.gemm, solvers=solvers)
            dt = time.perf_counter() - t0
            if r.verdict != "proven":
                raise SystemExit(f"{name}: GEMM not proven ({r.reason})")
            n_obs = len(r.obligations)
            rows[name]["total"].append(dt)
            for s in ("z3", "cvc5"):
                rows[name][s].append(sum(o.extra.get("solver_seconds", {}).get(s, 0.0)
                                         for o in r.obligations))
    base = statistics.median(rows["isl + Z3"]["total"])
    out = [f"GEMM `gemm_sm90` ({n_obs} obligations), median of {repeat} interleaved rounds:",
           "", "| solvers | total s | Z3 s | cvc5 s | vs isl + Z3 |", "|---|---:|---:|---:|---:|"]
    for name, _ in VARIANTS:
        row = rows[name]
        tot = statistics.median(row["total"])
        out.append(f"| {name} | {tot:.2f} | {statistics.median(row['z3']):.2f} | "
                   f"{statistics.median(row['cvc5']):.2f} | {tot / base:.2f}x |")
    return "\n".join(out)


def recheck_table(proofs: str) -> str:
    cmd = [sys.executable, "-m", "exogpu_verify.cli", "--recheck", proofs]
    pinned = shutil.which("taskset") is not None
    if pinned:
        cmd = ["taskset", "-c", "0"] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent,
                       env={**os.environ, "COLUMNS": "200"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    summary = lines[-1] if lines else p.stderr.strip()
    n = len(list(Path(HERE.parent, proofs).glob("*.json")))
    return "\n".join([
        f"`exogpu-verify --recheck {proofs}` ({n} certificates"
        f"{', pinned to one core with taskset' if pinned else ''}): exit {p.returncode}, "
        f"wall {wall:.2f} s, CPU {cpu:.2f} s; {summary.strip()}"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--proofs", default="proofs")
    ap.add_argument("--skip-gemm", action="store_true")
    args = ap.parse_args(argv)
    if not args.skip_gemm:
        print(gemm_table(args.repeat))
        print()
    print(recheck_table(args.proofs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
