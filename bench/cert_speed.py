"""What the second solver and the re-check cost: prints two markdown tables.

1. The GEMM of ``gemm_kernels.py`` proven by ``check_sync_symbolic`` with isl alone, with
   isl + Z3 (whole obligations in SMT-LIB) and with isl + Z3 + cvc5, interleaved in one
   run (``--repeat`` rounds; the median is shown, with the per-solver time summed over all
   obligations).
2. ``exogpu-verify --recheck DIR`` (default ``proofs/``) in a subprocess pinned to one
   core when ``taskset`` exists: wall time and CPU time.
3. With ``--alternatives``: other ways to decide the quantified obligations (Z3 tactics,
   cvc5 options), CPU time on the GEMM's obligations.

    python bench/cert_speed.py [--repeat 3] [--proofs proofs] [--alternatives]
                               [--spec MODULE:NAME] [--skip-recheck]
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


def _spec_proc(spec: str | None):
    """``bench/gemm_kernels.py``'s ``gemm``, or ``module:name`` of ``specs/``."""
    if spec is None:
        import gemm_kernels as gk

        return gk.gemm
    import importlib.util

    mod, name = spec.split(":", 1)
    sp = importlib.util.spec_from_file_location(f"specs_{mod}", HERE.parent / "specs" /
                                                f"{mod}.py")
    m = importlib.util.module_from_spec(sp)
    sp.loader.exec_module(m)
    return getattr(m, "VARIANTS", {}).get(name) or getattr(m, name)


def gemm_table(repeat: int, spec: str | None = None) -> str:
    from exogpu_verify.symbolic import check_sync_symbolic

    proc = _spec_proc(spec)
    rows: dict = {name: {"total": [], "cpu": [], "z3": [], "cvc5": []} for name, _ in VARIANTS}
    n_obs = 0
    for _ in range(repeat):
        for name, solvers in VARIANTS:
            t0, c0 = time.perf_counter(), time.process_time()
            r = check_sync_symbolic(proc, solvers=solvers)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            if r.verdict != "proven":
                raise SystemExit(f"{name}: GEMM not proven ({r.reason})")
            n_obs = len(r.obligations)
            rows[name]["total"].append(dt)
            rows[name]["cpu"].append(cpu)
            for s in ("z3", "cvc5"):
                rows[name][s].append(sum(o.extra.get("solver_seconds", {}).get(s, 0.0)
                                         for o in r.obligations))
    med = {name: {k: statistics.median(v) for k, v in row.items()} for name, row in rows.items()}
    base = med["isl + Z3"]
    out = [f"GEMM `{proc.name}` ({n_obs} obligations), median of {repeat} interleaved rounds "
           "(wall and CPU seconds of the whole check; solver columns: wall time summed over "
           "the obligations):", "",
           "| solvers | wall s | CPU s | Z3 s | cvc5 s | CPU vs isl + Z3 |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, _ in VARIANTS:
        m = med[name]
        out.append(f"| {name} | {m['total']:.2f} | {m['cpu']:.2f} | {m['z3']:.2f} | "
                   f"{m['cvc5']:.2f} | {m['cpu'] / base['cpu']:.2f}x |")
    return "\n".join(out)


#: how the quantified obligations could be decided: (label, solver, Z3 tactic or cvc5 options)
ALTERNATIVES = [
    ("Z3 default (`(check-sat)`)", "z3", None),
    ("Z3 tactic `qsat`", "z3", "qsat"),
    ("Z3 tactic `qe` (quantifier elimination)", "z3", "qe"),
    ("cvc5 default", "cvc5", {}),
    ("cvc5 `--cegqi-nested-qe`", "cvc5", {"cegqi-nested-qe": "true"}),
    ("cvc5 `--prenex-quant=norm`", "cvc5", {"prenex-quant": "norm"}),
]


def _run_alternative(text: str, solver: str, how, ms: int) -> str:
    if solver == "z3":
        import z3

        ctx = z3.Context()
        s = z3.Solver(ctx=ctx) if how is None else z3.Tactic(how, ctx=ctx).solver()
        s.set("timeout", ms)
        s.from_string(text)
        return str(s.check())
    import cvc5

    tm = cvc5.TermManager()
    slv = cvc5.Solver(tm)
    slv.setOption("tlimit-per", str(ms))
    for k, v in how.items():
        slv.setOption(k, v)
    sm = cvc5.SymbolManager(tm)
    ps = cvc5.InputParser(slv, sm)
    ps.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "ob")
    res = "none"
    while True:
        cmd = ps.nextCommand()
        if cmd.isNull():
            return res
        out = cmd.invoke(slv, sm).strip()
        if out:
            res = out.split()[0]


def alternatives_table(ms: int = 20000) -> str:
    """CPU time of each way to decide the GEMM's 67 whole obligations."""
    import gemm_kernels as gk

    from exogpu_verify.symbolic import check_sync_symbolic
    from exogpu_verify.symbolic.decide import smtlib_of

    r = check_sync_symbolic(gk.gemm, solvers=())
    texts = [smtlib_of(o) for o in r.obligations]
    out = [f"Deciding the GEMM's {len(texts)} whole obligations (SMT-LIB, quantified LIA), "
           f"CPU seconds, {ms // 1000} s limit per obligation:", "",
           "| solver, strategy | total CPU s | slowest s | answers |", "|---|---:|---:|---|"]
    for label, solver, how in ALTERNATIVES:
        answers, worst, c0 = {}, 0.0, time.process_time()
        for t in texts:
            c1 = time.process_time()
            a = _run_alternative(t, solver, how, ms)
            worst = max(worst, time.process_time() - c1)
            answers[a] = answers.get(a, 0) + 1
        tot = time.process_time() - c0
        ans = ", ".join(f"{n} {a}" for a, n in sorted(answers.items()))
        out.append(f"| {label} | {tot:.2f} | {worst:.2f} | {ans} |")
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
    ap.add_argument("--spec", metavar="MODULE:NAME",
                    help="time this proc of specs/ instead of bench/gemm_kernels.py's gemm")
    ap.add_argument("--skip-recheck", action="store_true")
    ap.add_argument("--alternatives", action="store_true",
                    help="also time other Z3 tactics and cvc5 options on the GEMM's obligations")
    args = ap.parse_args(argv)
    if args.alternatives:
        print(alternatives_table())
        print()
    if not args.skip_gemm:
        print(gemm_table(args.repeat, args.spec))
        print()
    if not args.skip_recheck:
        print(recheck_table(args.proofs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
