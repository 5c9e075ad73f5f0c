"""CPU seconds of the all-size proof of spec procs in two checkouts, interleaved in one run.

Each (proc, checkout) pair is proven by ``verify(p, mode="symbolic")`` in a fresh Python
process with that checkout first on ``sys.path``; the table shows the process CPU time
(user + system, from ``getrusage``, so load on other cores matters less than for wall
time), the solvers' summed wall time per obligation, and the ratio. Use it to measure a
change to the checker against the commit before it:

    git worktree add /tmp/before <commit>
    python bench/proof_ab.py /tmp/before . gemm:gemm_bf16_f32_128x256_s4_coop_g2 gemm:...

A proc is ``module:name`` with ``module`` a file of ``specs/`` (``VARIANTS`` entries or
module-level procs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import importlib.util, json, sys, time
root, mod, name = sys.argv[1:4]
sys.path.insert(0, root)
from exogpu_verify.api import verify
spec = importlib.util.spec_from_file_location("m", f"{root}/specs/{mod}.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
p = getattr(m, "VARIANTS", {}).get(name) or getattr(m, name)
r = verify(p, mode="symbolic", timeout_s=3600)
sol = {}
for ob in r.extra.get("obligations", []):
    for s, v in ob.extra.get("solver_seconds", {}).items():
        sol[s] = sol.get(s, 0.0) + v
print(json.dumps({"verdict": r.verdict, "obligations": len(r.extra.get("obligations", [])),
                  "solvers": sol}))
'''


def run_one(root: Path, mod: str, name: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), mod, name],
                         capture_output=True, text=True, env=env, cwd=root)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{root}: {mod}:{name} failed:\n{out.stderr[-2000:]}")
    d = json.loads(out.stdout.strip().splitlines()[-1])
    d["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", type=Path, help="first checkout (e.g. the commit before a change)")
    ap.add_argument("b", type=Path, help="second checkout")
    ap.add_argument("procs", nargs="+", help="module:name of spec procs")
    args = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    print(f"| proc | {args.a} CPU s (Z3, cvc5 s) | {args.b} CPU s (Z3, cvc5 s) | ratio |")
    print("|---|---|---|---:|")
    for spec in args.procs:
        mod, name = spec.split(":", 1)
        ra, rb = run_one(args.a.resolve(), mod, name), run_one(args.b.resolve(), mod, name)

        def cell(r):
            s = r["solvers"]
            return (f"{r['verdict']} {r['cpu']:.1f} (Z3 {s.get('z3', 0):.1f}, "
                    f"cvc5 {s.get('cvc5', 0):.1f})")

        print(f"| {name} | {cell(ra)} | {cell(rb)} | {ra['cpu'] / rb['cpu']:.2f}x |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
