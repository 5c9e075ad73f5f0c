"""What the bounds, argument-shape, instruction and resource checks cost on the GEMM proof.

Runs ``verify(p)`` (all sizes) on ``gemm_kernels.gemm`` and ``gemm_split`` with this tree and
with a baseline commit (default: the commit before the checks, extracted with ``git archive``
into a temporary folder), alternating in fresh processes within one run, and prints one row
per kernel: obligations and CPU seconds (minimum over ``--repeat`` runs, after a warm-up run
in the same process) for each, the ratio, and the seconds this tree spends in the new
obligations and in the static precondition analysis. CPU time, not wall time: the machine
is shared.

    python bench/precondition_cost.py [--base e72697d] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
root = sys.argv[1]
sys.path[:0] = [root + "/bench", root]
import exogpu_verify
assert exogpu_verify.__file__.startswith(root), exogpu_verify.__file__
from gemm_kernels import gemm, gemm_split
from exogpu_verify import verify
NEW = ("bounds", "type", "instruction", "resource")
verify(gemm)  # warm up: imports, platform libraries, caches
out = {}
for p, name in ((gemm, "gemm"), (gemm_split, "gemm_split")):
    best = None
    for _ in range(int(sys.argv[2])):
        t = time.process_time()
        r = verify(p)
        dt = time.process_time() - t
        obs = r.extra.get("obligations", [])
        new = sum(o.seconds for o in obs if o.kind in NEW)
        if best is None or dt < best[0]:
            best = (dt, r.verdict, len(obs), sum(o.kind in NEW for o in obs), new,
                    len(r.extra.get("facts", ())))
    t = time.process_time()
    try:
        from exogpu_verify.analysis.preconditions import analyze_preconditions
        from exogpu_verify.analysis import analyze
        info = analyze(p)
        t = time.process_time()
        analyze_preconditions(p, info.collectives, info.distributed)
        pre = time.process_time() - t
    except ImportError:
        pre = 0.0
    out[name] = best + (pre,)
print(json.dumps(out))
"""


def run(root: Path, repeat: int) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(root), str(repeat)],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="e72697d", help="baseline commit (before the checks)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", args.base],
                              capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
        base1, now1 = run(Path(tmp), args.repeat), run(ROOT, args.repeat)
        base2, now2 = run(Path(tmp), args.repeat), run(ROOT, args.repeat)
    print(f"| kernel | base obligations | base s | obligations (new) | facts | s | ratio | "
          f"new obligations s | static preconditions s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in base1:
        b = min(base1[k][0], base2[k][0])
        n = min(now1[k][0], now2[k][0])
        _, verdict, nobs, nnew, news, nfacts, pre = now1[k]
        print(f"| {k} ({verdict}) | {base1[k][2]} | {b:.2f} | {nobs} ({nnew}) | {nfacts} | "
              f"{n:.2f} | {n / b:.2f}x | {news:.2f} | {pre:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
