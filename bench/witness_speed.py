"""What witnesses save the solvers: per certificate, Z3's and cvc5's time on each
obligation's quantified script (``smtlib``) and on its witnessed script
(``smtlib_witnessed``, no quantifiers), in one run, one obligation after the other.

    python bench/witness_speed.py [proofs/*.json]

Prints a markdown table: obligations, how many are witnessed, and the seconds each solver
took on the witnessed obligations' two scripts (each answer must be unsat).
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

from exogpu_verify.symbolic.solvers import run

LIMIT_MS = 120000


def main(argv=None) -> int:
    files = (argv if argv else sys.argv[1:]) or sorted(glob.glob("proofs/*.json"))
    print("| certificate | obligations | witnessed | Z3 quantified s | Z3 witnessed s "
          "| cvc5 quantified s | cvc5 witnessed s |")
    print("|---|---|---|---|---|---|---|")
    tot = [0.0] * 4
    bad = 0
    for f in files:
        obs = json.loads(Path(f).read_text())["obligations"]
        wit = [o for o in obs if o.get("smtlib_witnessed")]
        t = [0.0] * 4
        for o in wit:
            for k, (solver, key) in enumerate([("z3", "smtlib"), ("z3", "smtlib_witnessed"),
                                               ("cvc5", "smtlib"),
                                               ("cvc5", "smtlib_witnessed")]):
                a = run(solver, o[key], LIMIT_MS)
                t[k] += a.seconds
                if a.result != "unsat":
                    bad += 1
                    print(f"<!-- {Path(f).name}: {o['name']}: {solver} on {key}: "
                          f"{a.result} {a.reason} -->")
        tot = [x + y for x, y in zip(tot, t)]
        print(f"| {Path(f).name} | {len(obs)} | {len(wit)} | " +
              " | ".join(f"{x:.2f}" for x in t) + " |", flush=True)
    print("| all | | | " + " | ".join(f"{x:.2f}" for x in tot) + " |")
    if bad:
        print(f"\n{bad} answer(s) were not unsat (see the comments above)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
