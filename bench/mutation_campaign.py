"""Mutation campaign against the checkers: perturb one token of a shipped kernel's printed
text (each integer literal by +-1; a few timeline, comparison and unit swaps), verify every
mutant with both checkers, and list the mutants that are still ``proven`` for a person to
review: each must be a correct program (a stronger wait, a larger allocation, fewer tiles).
A ``proven`` mutant that races, overruns a ring or breaks an instruction is a soundness bug.
(It found the physical mbarrier-phase gap of 2026-12-06: docs/semantics.md, "Physical phases
of an mbarrier ring".)

Each mutant is parsed like a user program (``refused``: a static error), then verified
symbolically; a proven one is also checked concretely at ``--sizes``. One JSON line per
mutant goes to ``--out``; the summary table and the proven mutants go to stdout.

    python bench/mutation_campaign.py specs/gemm.py gemm_bf16_f32_128x256_s4_coop_g2 \\
        [--jobs 2] [--out mutants.jsonl] [--sizes M=256,N=512,K=512]

About 1-3 s of CPU per mutant for the GEMMs (~400 mutants each).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import multiprocessing as mp
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: token swaps (from, to); every occurrence is tried alone
SWAPS = [("cuda_generic_and_async_proxy", "cuda_in_order"),
         ("cuda_in_order", "cuda_generic_and_async_proxy"), ("cuda_temporal", "cuda_in_order"),
         (">=", ">"), (" < ", " <= "), ("cuda_warpgroup", "cuda_warp"),
         ("unit=cuda_warp)", "unit=cuda_thread)")]
INT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_PROCS: dict = {}
_SIZES: dict | None = None


def mutants(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line index, description, new line) for every one-token mutation of ``lines``."""
    out = []
    for i, ln in enumerate(lines):
        if ln.strip().startswith(("@proc", "def ")):
            continue
        for m in INT.finditer(ln):
            n = int(m.group(1))
            for v in sorted({n + 1, n - 1} - {-1}):
                out.append((i, f"{n}->{v} at column {m.start() + 1}",
                            ln[:m.start()] + str(v) + ln[m.end():]))
        for a, b in SWAPS:
            k = ln.find(a)
            while k >= 0:
                out.append((i, f"{a.strip()}->{b.strip()} at column {k + 1}",
                            ln[:k] + b + ln[k + len(a):]))
                k = ln.find(a, k + 1)
    return out


def _load(spec: str) -> dict:
    from exogpu_verify.loader import module_procs

    path = (ROOT / spec).resolve()
    mod_spec = importlib.util.spec_from_file_location(f"mutation_{path.stem}", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return {p.name: p for p in module_procs(mod)}


def _init(spec: str, sizes: dict | None) -> None:
    global _PROCS, _SIZES
    _PROCS, _SIZES = _load(spec), sizes


def run(job: tuple) -> dict:
    """Verify one mutant: a record with its verdicts."""
    from exogpu_verify import ExoGpuError, parse_proc_source, verify
    from exogpu_verify.ir.printer import roundtrip_env

    name, line, desc, text = job
    p = _PROCS[name]
    t0 = time.perf_counter()
    rec = {"proc": name, "line": line + 1, "mutation": desc}
    try:
        q = parse_proc_source(text, roundtrip_env(p), file="<mutant>", instr_info=p.instr)
    except ExoGpuError as e:
        rec.update(verdict="refused", kind=e.diagnostic.kind)
    else:
        r = verify(q, mode="symbolic", timeout_s=300)
        rec.update(verdict=r.verdict, kind=",".join(sorted({d.kind for d in r.diagnostics})))
        if r.verdict == "proven":
            try:
                rec["concrete"] = verify(q, sizes=_SIZES, mode="concrete",
                                         timeout_s=300).verdict
            except ExoGpuError as e:  # sizes that violate the mutated asserts
                rec["concrete"] = f"not run: {e.diagnostic.kind}"
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    return rec


def _sizes(text: str | None) -> dict | None:
    if not text:
        return None
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(","))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="a spec module, e.g. specs/gemm.py")
    ap.add_argument("procs", help="comma-separated proc names of that module")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="mutants.jsonl")
    ap.add_argument("--sizes", default="M=256,N=512,K=512",
                    help="sizes of the concrete check of proven mutants")
    a = ap.parse_args(argv)
    sizes = _sizes(a.sizes)
    _init(a.spec, sizes)
    from exogpu_verify.ir.printer import print_proc

    jobs, texts = [], {}
    for name in a.procs.split(","):
        lines = print_proc(_PROCS[name]).splitlines()
        texts[name] = lines
        for i, desc, new in mutants(lines):
            jobs.append((name, i, desc, "\n".join(lines[:i] + [new] + lines[i + 1:])))
    print(f"{len(jobs)} mutants", flush=True)
    recs = []
    with mp.get_context("fork").Pool(a.jobs, _init, (a.spec, sizes)) as pool, \
            open(a.out, "w") as f:
        for rec in pool.imap_unordered(run, jobs):
            recs.append(rec)
            f.write(json.dumps(rec) + "\n")
    counts = collections.Counter((r["proc"], r["verdict"]) for r in recs)
    print("\n| proc | refused | refuted | unknown | proven |\n|---|---:|---:|---:|---:|")
    for name in texts:
        print(f"| {name} | " + " | ".join(str(counts[(name, v)]) for v in
                                         ("refused", "refuted", "unknown", "proven")) + " |")
    print("\nproven mutants (review each: it must be a correct program):")
    for r in sorted((r for r in recs if r["verdict"] == "proven"),
                    key=lambda r: (r["proc"], r["line"])):
        src = texts[r["proc"]][r["line"] - 1].strip()
        print(f"  {r['proc']}:{r['line']} {r['mutation']} (concrete: {r.get('concrete')})"
              f"  | {src[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
