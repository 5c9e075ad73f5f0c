"""Sequential interpreter speed: an n x n x n f32 matmul.

Prints one row per size: the best of three runs of ``interpret``. Speed goals live here, not
in tests (tests/semantics/test_interpreter.py checks the results).

    python bench/interp_speed.py [--sizes 64,128,256]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from exogpu_verify import interpret, parse_proc_source

SRC = """
def matmul(N: size, A: f32[N, N], B: f32[N, N], C: f32[N, N]):
    for i in seq(0, N):
        for j in seq(0, N):
            for k in seq(0, N):
                C[i, j] += A[i, k] * B[k, j]
"""


def best(fn, reps: int = 3) -> float:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,128,256")
    args = ap.parse_args(argv)
    p = parse_proc_source(SRC, file="matmul.py")
    rng = np.random.default_rng(0)
    print(f"{'n':>6} {'interpret (s)':>14}")
    for n in (int(x) for x in args.sizes.split(",") if x):
        A = rng.standard_normal((n, n)).astype(np.float32)
        B = rng.standard_normal((n, n)).astype(np.float32)
        C = np.zeros((n, n), np.float32)
        print(f"{n:>6} {best(lambda: interpret(p, N=n, A=A, B=B, C=C)):>14.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
