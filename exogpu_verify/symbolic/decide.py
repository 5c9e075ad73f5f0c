"""Deciding obligations: isl first, then the whole obligation in two SMT solvers.

``decide`` (called by the obligation builders) records isl's verdict on the remainder (the
conflict set less every ordered set). ``discharge`` runs after all obligations of a proc are
built and isl found every one empty: each obligation's isl texts (``Obligation.conflict``
and ``Obligation.ordered``) become one SMT-LIB2 script (``smtlib.py``, our own reader, not
isl's simplified remainder), and Z3 and cvc5, each in a fresh solver, must both answer
``unsat``. Where every ordered set of an obligation has a witness (``witness.py``), the
solvers decide its witnessed script first, without quantifiers; its ``unsat`` implies the
quantified script's, and any other answer drops the witnesses and decides the quantified
script. Anything else (a solver says ``sat``, gives up, or rejects the script) is never
a proof: ``discharge`` raises ``Unsupported`` with the reason, so the verdict is ``unknown``.
The builders are not involved: any ``Obligation`` with a conflict text and ordered texts
flows through, whatever its kind.
"""

from __future__ import annotations

import time

import islpy as isl

from .events import Unsupported
from .isltext import ParseError
from .obligations import Obligation
from .smtlib import SpaceMismatch, obligation_smtlib
from .witness import WitnessError
from .solvers import SOLVERS, ScriptError, check_script, run


#: ``extra["isl"]`` of an obligation re-derived with a certificate's orderings
#: (``check.replaying``): isl computed no remainder, the solvers alone decide
REPLAYED = "not computed (re-check: the certificate's orderings, decided by the solvers)"


def decide(ob: Obligation, remainder: isl.Set, timeout_ms: int = 0) -> None:
    """isl's verdict: ``ob.empty`` is whether ``remainder`` (conflicts less ordered pairs)
    is empty. The solvers' verdicts come later, from ``discharge``."""
    ob.remainder = remainder
    ob.empty = remainder.is_empty()
    ob.extra["isl"] = "empty" if ob.empty else "non-empty"


def smtlib_of(ob: Obligation, lift: bool = False) -> str:
    """The SMT-LIB2 script of ``ob`` (``ParseError``/``SpaceMismatch`` if its texts are
    outside the grammar, which is a bug in the builder that wrote them); ``lift``: the
    equivalent script with divisions under quantifiers lifted (``lift_divisions``)."""
    return obligation_smtlib(ob.conflict, list(ob.ordered), f"{ob.kind}: {ob.name}", lift)


def discharge(obs: list, solvers=SOLVERS, deadline: float | None = None,
              max_ms: int = 180000) -> None:
    """Decide every obligation isl found empty with each of ``solvers``; all must answer
    ``unsat`` (see the module docstring). Records ``extra["smtlib"]``,
    ``extra["smtlib_witnessed"]`` (when the witnessed script decided),
    ``extra["solvers"]`` and ``extra["solver_seconds"]``; raises ``Unsupported``. Each
    solver has at most ``max_ms`` per obligation (and the stage ends at ``deadline``): 3
    minutes, as cvc5's strategies (restarts with other seeds, the lifted script; see
    ``solvers.CVC5_STRATEGIES``) run one after the other."""
    seen: dict = {}
    for ob in obs:
        if ob.empty is not True:
            continue
        where = ob.second.srcinfo if ob.second is not None else None
        try:
            text = smtlib_of(ob)
        except (ParseError, SpaceMismatch) as e:
            raise Unsupported(f"obligation {ob.name}: its isl text cannot be stated in "
                              f"SMT-LIB ({e}); this is a bug in exogpu", where) from None
        ob.extra["smtlib"] = text
        replayed = ob.extra.get("isl") == REPLAYED
        answers = ob.extra.setdefault("solvers", {"isl": "not computed" if replayed
                                                  else "empty"})
        secs = ob.extra.setdefault("solver_seconds", {})

        def answer(solver, text, cap=None, lifted=None):
            key = (solver, text)
            if key not in seen:
                ms = max_ms if cap is None else min(max_ms, cap)
                if deadline is not None:
                    ms = min(ms, int((deadline - time.perf_counter()) * 1000))
                    if ms <= 0:
                        raise Unsupported(f"the time limit ran out before {solver} decided "
                                          f"obligation {ob.name}", where)
                seen[key] = run(solver, text, ms, checked=True, lifted=lifted)
            return seen[key]

        if _witnessed(ob, solvers, answer, answers, secs):
            continue
        try:  # checked only when a solver reads it (most obligations are witnessed)
            check_script(text)
        except ScriptError as e:
            raise Unsupported(f"obligation {ob.name}: the SMT-LIB script is malformed "
                              f"({e}); this is a bug in exogpu", where) from None
        for solver in solvers:
            a = answer(solver, text, lifted=lambda ob=ob: smtlib_of(ob, lift=True))
            answers[solver] = a.result
            secs[solver] = round(a.seconds, 4)
            if a.strategy:  # cvc5 answered under other options than its defaults
                ob.extra.setdefault("strategy", {})[solver] = a.strategy
            if a.result == "unsat":
                continue
            if a.result == "sat" and replayed:
                raise Unsupported(f"the certificate's orderings do not discharge obligation "
                                  f"{ob.name}: {solver} finds the whole obligation "
                                  "satisfiable", where)
            if a.result == "sat":
                raise Unsupported(f"isl and {solver} disagree on obligation {ob.name}: isl "
                                  f"finds it empty, {solver} finds the whole obligation "
                                  "satisfiable; no proof (this is a bug in exogpu or a "
                                  "solver)", where)
            raise Unsupported(f"{solver} could not decide obligation {ob.name} "
                              f"({a.reason or 'unknown'}); no proof", where)


#: each solver's limit on a witnessed script (quantifier-free: milliseconds, as a rule)
WITNESSED_MS = 20000


def witnessed_smtlib(ob: Obligation) -> str | None:
    """The witnessed script of ``ob`` (``witness.py``), or None when some ordered set has
    no witness (or there is no ordered set: the script has no quantifier to replace).
    Raises ``WitnessError``/``ParseError`` for a witness that does not fit its set."""
    if not ob.ordered or len(ob.witnesses) != len(ob.ordered) or \
            any(w is None for w in ob.witnesses):
        return None
    return obligation_smtlib(ob.conflict, list(ob.ordered), f"{ob.kind}: {ob.name}",
                             witnesses=list(ob.witnesses))


def _witnessed(ob: Obligation, solvers, answer, answers: dict, secs: dict) -> bool:
    """Decide ``ob`` on its witnessed script: True when every solver answered unsat (then
    ``extra["smtlib_witnessed"]`` is the script and the answers are recorded); else the
    witnesses are dropped (``extra["witness_rejected"]`` says why) and the quantified
    script decides, as without witnesses."""
    try:  # written by our renderer from parsed trees: check_script would only cost time
        text = witnessed_smtlib(ob)
    except (WitnessError, ParseError, SpaceMismatch) as e:
        ob.extra["witness_rejected"] = f"the witness does not fit its ordered set ({e})"
        ob.witnesses = []
        return False
    if text is None:
        ob.witnesses = []
        return False
    got = {}
    for solver in solvers:
        a = answer(solver, text, cap=WITNESSED_MS)
        got[solver] = a
        if a.result != "unsat":
            ob.extra["witness_rejected"] = (
                f"{solver} answers {a.result} on the witnessed script"
                + (f" ({a.reason})" if a.reason else "")
                + ("" if a.result != "sat" else ": the witness misses some pair"))
            ob.witnesses = []
            return False
    ob.extra["smtlib_witnessed"] = text
    for solver, a in got.items():
        answers[solver] = a.result
        secs[solver] = round(a.seconds, 4)
        if a.strategy:
            ob.extra.setdefault("strategy", {})[solver] = a.strategy
    return True
