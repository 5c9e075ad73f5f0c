"""Time the concrete synchronization checker on the warp-specialized GEMM of
``bench/gemm_kernels.py`` (CTA tile 128 x 256, k-step 64, 4-deep TMA ring, clusterDim 1).

    python bench/check_speed.py [--sizes 1024,2048,4096] [--profile] [--no-reuse]

Prints one row per size: tasks (CTA tiles), k-steps per task, statement instances of the
program covered by the abstract machine, how many tasks were replayed from the first task's
trace (``Machine`` task reuse; ``--no-reuse`` runs every task in full), seconds, and
microseconds per task x k-step (flat when the cost grows linearly with tiles x k-steps).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from exogpu_verify.amir.convert import lower_to_amir  # noqa: E402
from exogpu_verify.amir.interp import Machine  # noqa: E402

import gemm_kernels  # noqa: E402


def check_once(p, size: int, reuse: bool = True):
    sizes = {"S": 1, "M": size, "N": size, "K": size}
    t0 = time.perf_counter()
    m = Machine(lower_to_amir(p), dict(sizes), reuse_tasks=reuse)
    m.run()
    dt = time.perf_counter() - t0
    return m, dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--profile", action="store_true", help="cProfile the largest size")
    ap.add_argument("--no-reuse", action="store_true", help="run every task in full")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
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
