"""GEMM proof time of two versions of the checker, measured in the same run.

Runs the symbolic check of this checkout's ``bench/gemm_kernels.py`` kernels (``gemm``,
``gemm_split``) in fresh processes, alternating between the checker of ``--before`` (a
checkout, e.g. ``git worktree add /tmp/base <commit>``) and of ``--after`` (default: this
checkout), ``--reps`` times each; prints one row per kernel and version with the minimum and
median seconds, the obligation count and the after/before ratio of the minima (the machine
is shared, so the minimum is the fairest single number).

    python bench/proof_time_vs.py --before /tmp/base [--after .] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = ("gemm", "gemm_split")

CHILD = """
import importlib.util, json, sys, time
import exogpu_verify
assert exogpu_verify.__file__.startswith(sys.argv[1]), exogpu_verify.__file__
spec = importlib.util.spec_from_file_location("gk", sys.argv[2])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
from exogpu_verify.symbolic import check_sync_symbolic
out = {}
for name in sys.argv[3:]:
    t = time.perf_counter()
    r = check_sync_symbolic(getattr(m, name), timeout_s=600)
    out[name] = [r.verdict, len(r.obligations), time.perf_counter() - t]
print(json.dumps(out))
"""


def run(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    # cwd = root: ``python -c`` puts the working directory first on sys.path
    res = subprocess.run([sys.executable, "-c", CHILD, str(root), str(HERE / "gemm_kernels.py"),
                          *KERNELS], env=env, cwd=root, capture_output=True, text=True,
                         check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, type=Path)
    ap.add_argument("--after", default=HERE.parent, type=Path)
    ap.add_argument("--reps", default=3, type=int)
    args = ap.parse_args(argv)
    times: dict = {}
    for _ in range(args.reps):
        for label, root in (("before", args.before), ("after", args.after)):
            for k, (verdict, nobs, secs) in run(root.resolve()).items():
                times.setdefault((k, label), []).append((secs, verdict, nobs))
    print("| kernel | checker | verdict | obligations | min s | median s | after/before |")
    print("|---|---|---|---|---|---|---|")
    for k in KERNELS:
        mins = {}
        for label in ("before", "after"):
            rows = times[(k, label)]
            secs = [r[0] for r in rows]
            mins[label] = min(secs)
            ratio = f"{mins['after'] / mins['before']:.2f}" if label == "after" else ""
            print(f"| {k} | {label} | {rows[0][1]} | {rows[0][2]} | {min(secs):.2f} | "
                  f"{statistics.median(secs):.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
