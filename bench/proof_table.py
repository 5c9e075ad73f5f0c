"""Per-kernel proof time and obligation count of every kernel in ``specs/``, ``examples/``
and the benchmark kernels (``bench/gemm_kernels.py``, ``bench/scan_kernels.py``): issue 15's
goals are at most 10 s per kernel and ``specs/`` under 60 s, on one core.

Runs ``exogpu-verify PATH -j 1 --json`` once per path group in a child process (pin it to a
core with ``taskset -c 0 python bench/proof_table.py``) and prints one row per proc: verdict,
obligations, seconds (the report's own time: the proof, not the loading), then per group
the run's whole time (loading and scheduling the modules included) and the sum of the procs'.

    python bench/proof_table.py [--groups specs,examples,bench]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUPS = {
    "specs": ["specs/"],
    "examples": ["examples/"],
    "bench": ["bench/gemm_kernels.py", "bench/scan_kernels.py"],
}
GOAL_PROC_S, GOAL_SPECS_S = 10.0, 60.0


def run_group(paths: list[str]) -> tuple[dict, float]:
    """The JSON of one ``exogpu-verify`` run over ``paths`` and its wall-clock seconds."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "exogpu_verify", *paths, "-j", "1", "--json"],
                         cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    try:
        return json.loads(out.stdout), wall
    except json.JSONDecodeError:
        sys.exit(f"exogpu-verify {' '.join(paths)} printed no JSON (exit {out.returncode}):\n"
                 f"{out.stderr[-2000:]}")


def obligations(reason: str) -> str:
    m = re.match(r"(\d+) obligations", reason or "")
    return m.group(1) if m else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default=",".join(GROUPS))
    args = ap.parse_args(argv)
    names = [g for g in args.groups.split(",") if g]
    unknown = [g for g in names if g not in GROUPS]
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
    print("| group | proc | verdict | obligations | s |")
    print("|---|---|---|---:|---:|")
    summary, worst = [], (0.0, "")
    for g in names:
        data, wall = run_group(GROUPS[g])
        procs = 0.0
        for r in data["reports"]:
            s = r.get("seconds") or 0.0
            procs += s
            worst = max(worst, (s, r["proc"]))
            print(f"| {g} | {r['file']}::{r['proc']} | {r['verdict']} | "
                  f"{obligations(r.get('reason'))} | {s:.2f} |")
        summary.append((g, data.get("seconds", wall), procs))
    print()
    for g, whole, procs in summary:
        goal = f" (goal {GOAL_SPECS_S:.0f} s)" if g == "specs" else ""
        print(f"{g}: {whole:.1f} s in all{goal}, of which the procs' proofs {procs:.1f} s")
    print(f"slowest proc: {worst[1]} {worst[0]:.2f} s (goal {GOAL_PROC_S:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
