"""cvc5's time per random seed on the heaviest obligations of the shipped certificates.

cvc5's time on one obligation is heavy-tailed in its seed, which is why
``solvers.CVC5_STRATEGIES`` restarts with other seeds in short slices. This prints, for each
obligation whose script takes cvc5's default options at least ``--min`` seconds (or that
they leave undecided), the seconds to ``unsat`` under seeds 0 (the default) to ``--seeds``-1,
``--`` where the seed is undecided within ``--limit`` seconds. ``--chain``: instead, the
whole strategy chain (``run_cvc5``) on every obligation, its total and each obligation that
needed more than the first strategy.

    python bench/cvc5_seeds.py [CERT.json ...] [--seeds 6] [--limit 10] [--min 0.5] [--chain]

Certificates default to every file of ``proofs/``; the scripts are the certificates' own
``smtlib`` (the lifted ones are rebuilt from their isl texts).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _obligations(files):
    for f in files:
        data = json.loads(Path(f).read_text())
        for ob in data["obligations"]:
            yield Path(f).stem, ob


def _seed_table(files, seeds: int, limit_ms: int, min_s: float) -> None:
    from exogpu_verify.symbolic.solvers import _cvc5_once

    print(f"| obligation | {' | '.join(f'seed {s}' for s in range(seeds))} |")
    print("|---|" + "---:|" * seeds)
    for cert, ob in _obligations(files):
        first = _cvc5_once(ob["smtlib"], limit_ms)
        if first.result == "unsat" and first.seconds < min_s:
            continue
        row = [first]
        for s in range(1, seeds):
            row.append(_cvc5_once(ob["smtlib"], limit_ms, (("seed", str(s)),)))
        cells = [f"{a.seconds:.1f}" if a.result == "unsat" else
                 ("SAT" if a.result == "sat" else "--") for a in row]
        print(f"| {cert} {ob['name'][:40]} | {' | '.join(cells)} |", flush=True)


def _chain(files, limit_ms: int) -> None:
    from exogpu_verify.symbolic import solvers as S
    from exogpu_verify.symbolic.smtlib import obligation_smtlib

    calls = []
    once = S._cvc5_once

    def recording(text, ms, opts=()):
        a = once(text, ms, opts)
        calls.append((dict(opts), a.result, a.seconds))
        return a

    S._cvc5_once = recording
    total = {}
    for cert, ob in _obligations(files):
        ordered = [(o["by"], o["set"]) for o in ob["ordered"]]
        calls.clear()
        a = S.run_cvc5(ob["smtlib"], limit_ms, lifted=lambda: obligation_smtlib(
            ob["conflict"], ordered, f"{ob['kind']}: {ob['name']}", lift=True))
        total[cert] = total.get(cert, 0.0) + a.seconds
        if len(calls) > 1 or a.result != "unsat":
            steps = ", ".join(f"{o or 'default'} {r} {s:.1f} s" for o, r, s in calls)
            print(f"{cert} {ob['name'][:50]}: {a.result} in {a.seconds:.1f} s ({steps})")
    S._cvc5_once = once
    for cert, secs in total.items():
        print(f"{cert:55s} {secs:7.2f} s")
    print(f"{'total':55s} {sum(total.values()):7.2f} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("certs", nargs="*")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--limit", type=float, default=10.0, help="seconds per run")
    ap.add_argument("--min", type=float, default=0.5, help="skip faster obligations")
    ap.add_argument("--chain", action="store_true")
    a = ap.parse_args(argv)
    files = a.certs or sorted(glob.glob(str(ROOT / "proofs" / "*.json")))
    if a.chain:
        _chain(files, int(max(a.limit, 180) * 1000))
    else:
        _seed_table(files, a.seeds, int(a.limit * 1000), a.min)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
