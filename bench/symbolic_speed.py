"""Symbolic (all sizes) vs concrete (per size) checking of the GEMM-shaped kernel.

Prints one row per kernel variant (the correct GEMM, the split-K GEMM and each injected bug):
the symbolic verdict and time (independent of size), then the concrete check's time at
M = N = K = 1024, 2048, 4096, 16384 (each under a time limit; ``>`` marks a run cut off).

    python bench/symbolic_speed.py [--sizes 1024,2048] [--limit 60] [--only none,split]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_kernels import BUGS, make_gemm  # noqa: E402

from exogpu_verify import verify  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,2048,4096,16384")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per concrete check")
    ap.add_argument("--only", default="", help="comma-separated variants (default: all)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    variants = ["none", "split"] + list(BUGS)
    if args.only:
        variants = [v for v in variants if v in args.only.split(",")]
    head = f"| variant | symbolic | symbolic s | " + " | ".join(f"concrete {n} s" for n in sizes)
    print(head + " |")
    print("|" + "---|" * (3 + len(sizes)))
    for v in variants:
        p = make_gemm(split=True) if v == "split" else make_gemm(v)
        t = time.perf_counter()
        r = verify(p, mode="auto", timeout_s=args.limit)
        ts = time.perf_counter() - t
        sym = r.verdict
        if r.verdict == "refuted" and r.sizes:
            sym += " at " + ",".join(f"{k}={x}" for k, x in r.sizes.items())
        cells = []
        for n in sizes:
            sz = {"S": 2 if v in ("split", "non_split_two_tasks") else 1, "M": n, "N": n, "K": n}
            t = time.perf_counter()
            c = verify(p, sizes=sz, mode="concrete", timeout_s=args.limit)
            tc = time.perf_counter() - t
            mark = ">" if c.verdict == "unknown" and "timeout" in c.reason else ""
            cells.append(f"{mark}{tc:.2f} ({c.verdict})")
        print(f"| {v} | {sym} | {ts:.2f} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
