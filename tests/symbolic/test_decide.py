"""Two solvers, one verdict: every obligation of a proof, stated whole in SMT-LIB, is unsat
in Z3 and in cvc5; a disagreement or a solver giving up is reported, never hidden."""

from __future__ import annotations

import pytest
from testlib import ROOT, load_path

from exogpu_verify.api import verify
from exogpu_verify.symbolic import check_sync_symbolic
from exogpu_verify.symbolic import decide as decide_mod
from exogpu_verify.symbolic.decide import discharge, smtlib_of
from exogpu_verify.symbolic.events import Unsupported
from exogpu_verify.symbolic.obligations import Obligation
from exogpu_verify.symbolic.solvers import Answer, run


def transpose():
    return load_path(ROOT / "specs" / "transpose_smem.py").transpose_smem


def test_proof_records_both_solvers_on_whole_obligations():
    r = check_sync_symbolic(transpose())
    assert r.verdict == "proven"
    for ob in r.obligations:
        assert ob.extra["solvers"] == {"isl": "empty", "z3": "unsat", "cvc5": "unsat"}
        text = ob.extra["smtlib"]
        # the conflict set and one negated assertion per ordered set: the whole obligation
        assert text.count("(assert (not ") == len(ob.ordered)
        for label, _ in ob.ordered:
            assert f"; minus the pairs ordered by: {label}" in text


def test_dropping_an_ordering_makes_the_formula_satisfiable():
    """The script decides the obligation itself, not isl's remainder: without the Fence that
    orders the transpose's tile write before its read, both solvers find the race."""
    r = check_sync_symbolic(transpose())
    ob = next(o for o in r.obligations if o.kind == "RAW" and
              any(lbl.startswith("fence") for lbl, _ in o.ordered))
    kept = [(lbl, t) for lbl, t in ob.ordered if not lbl.startswith("fence")]
    weak = Obligation(ob.name, ob.kind, ob.first, ob.second, ob.conflict, kept)
    text = smtlib_of(weak)
    assert run("z3", text, 30000).result == "sat"
    assert run("cvc5", text, 30000).result == "sat"


def test_z3_only_and_isl_only_modes_for_benchmarks():
    r = check_sync_symbolic(transpose(), solvers=("z3",))
    assert r.verdict == "proven"
    assert all(set(o.extra["solvers"]) == {"isl", "z3"} for o in r.obligations)
    r = check_sync_symbolic(transpose(), solvers=())
    assert r.verdict == "proven"
    assert all(set(o.extra["solvers"]) == {"isl"} for o in r.obligations)


@pytest.mark.parametrize("answer,words", [
    ("sat", "isl and cvc5 disagree on obligation"),
    ("unknown", "cvc5 could not decide obligation"),
])
def test_solver_disagreement_is_unknown_with_the_reason(monkeypatch, answer, words):
    real = decide_mod.run

    def fake(solver, text, ms, checked=False, lifted=None):
        if solver == "cvc5":
            return Answer("cvc5", answer, 0.0, "timeout" if answer == "unknown" else "")
        return real(solver, text, ms, checked, lifted)

    monkeypatch.setattr(decide_mod, "run", fake)
    r = check_sync_symbolic(transpose())
    assert r.verdict == "unknown" and words in r.reason
    rep = verify(transpose(), mode="symbolic")
    assert rep.verdict == "unknown" and words in rep.reason


def test_text_outside_the_grammar_is_never_a_proof():
    ob = Obligation("bad", "WAW", None, None, "[N] -> { [i] : i < N * i }", [])
    ob.empty = True
    with pytest.raises(Unsupported) as e:
        discharge([ob])
    assert "cannot be stated in SMT-LIB" in e.value.reason


def test_time_limit_is_unknown():
    ob = Obligation("late", "WAW", None, None, "[N] -> { [i] : 1 = 0 }", [])
    ob.empty = True
    with pytest.raises(Unsupported) as e:
        discharge([ob], deadline=0.0)
    assert "time limit ran out" in e.value.reason


def test_lifted_divisions_are_an_equivalence():
    """``lift_divisions`` (cvc5's second strategy) turns a ``mod``/``floor`` of a bound
    variable into new bound variables; the lifted script answers as the plain one, on a
    true and on a false obligation."""
    from exogpu_verify.symbolic.smtlib import lift_divisions, obligation_smtlib
    from exogpu_verify.symbolic.isltext import parse_set
    from exogpu_verify.symbolic.solvers import run_cvc5, run_z3

    f = parse_set("[N] -> { [a] : exists (k : a = 2k and k mod 4 = 1 and floor(k/3) > N) }"
                  ).pieces[0].formula
    g = lift_divisions(f)
    assert g[0] == "exists" and len(g[1]) == 5  # k, and q, r per distinct division
    assert "mod" not in repr(g) and "floor" not in repr(g)
    # every even i in [0, 2N) is 2k with k < N: covered by the ordered set
    conflict = "[N] -> { [i] : 0 <= i < 2N and i mod 2 = 0 and N >= 1 }"
    covered = ["[N] -> { [i] : exists (k : i = 2k and 0 <= k and k mod 1 = 0 and "
               "floor(k/1) < N) }"]
    short = ["[N] -> { [i] : exists (k : i = 2k and 0 <= k and k mod 2 = 0 and "
             "floor(k/1) < N) }"]
    for ordered, want in ((covered, "unsat"), (short, "sat")):
        plain = obligation_smtlib(conflict, [("o", t) for t in ordered])
        lifted = obligation_smtlib(conflict, [("o", t) for t in ordered], lift=True)
        assert plain != lifted and "(mod k" in plain and "(mod k" not in lifted
        for text in (plain, lifted):
            assert run_z3(text, 10000).result == want
            assert run_cvc5(text, 10000).result == want


def test_cvc5_without_time_left_is_unknown_not_an_error():
    from exogpu_verify.symbolic.solvers import run_cvc5

    a = run_cvc5("(set-logic LIA)\n(assert false)\n(check-sat)\n", 0)
    assert a.result == "unknown" and "no time left" in a.reason
