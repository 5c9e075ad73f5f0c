"""Time to prove each GEMM variant of ``specs/gemm.py`` for all sizes (goal: <= 5 s on one core).

Prints one row per variant: verdict, obligations, wall-clock and process CPU seconds of
``verify(p, mode="symbolic")`` (each variant in a fresh process when ``--fresh``, so caches of
earlier variants do not help), and the machine's load average at the start, since the numbers
are only meaningful on an otherwise idle core.

    python bench/gemm_proofs.py [--only NAME,...] [--fresh]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load():
    import importlib.util

    spec = importlib.util.spec_from_file_location("specs_gemm", ROOT / "specs" / "gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def one(name: str) -> dict:
    from exogpu_verify import verify

    p = _load().VARIANTS[name]
    t, c = time.perf_counter(), time.process_time()
    r = verify(p, mode="symbolic")
    return {"name": name, "verdict": r.verdict, "reason": r.reason or "",
            "wall": time.perf_counter() - t, "cpu": time.process_time() - c}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--fresh", action="store_true", help="one process per variant")
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    names = list(_load().VARIANTS)
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    print("| variant | verdict | wall s | cpu s |")
    print("|---|---|---|---|")
    bad = 0
    for n in names:
        if args.fresh:
            out = subprocess.run([sys.executable, __file__, "--one", n], capture_output=True,
                                 text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
        else:
            row = one(n)
        bad += row["verdict"] != "proven"
        obl = row["reason"].split(" obligations")[0] if "obligations" in row["reason"] else ""
        print(f"| {n} | {row['verdict']} {obl} | {row['wall']:.1f} | {row['cpu']:.1f} |",
              flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
