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


def test_cvc5_restarts_with_other_seeds_and_stops_at_sat(monkeypatch):
    """cvc5's time is heavy-tailed in its seed, so an ``unknown`` under the default options
    is followed by restarts with other seeds (and the lifted script); the first ``sat`` or
    ``unsat`` ends the search, and the whole search keeps within the limit."""
    from exogpu_verify.symbolic import solvers as S

    seen = []

    def fake(text, ms, opts=()):
        seen.append((text, ms, dict(opts)))
        if dict(opts).get("seed") == "3":
            return S.Answer("cvc5", "sat", 0.0, "")
        return S.Answer("cvc5", "unknown", 0.0, "cvc5 answered unknown (timeout)")

    monkeypatch.setattr(S, "_cvc5_once", fake)
    a = S.run_cvc5("plain", 100000, lifted=lambda: "lifted")
    assert a.result == "sat"
    assert [o.get("seed") for _, _, o in seen] == [None, "1", "3"]
    assert all(t == "plain" and ms <= 8000 for t, ms, _ in seen)
    seen.clear()
    clock = [0.0]  # each fake run takes its whole slice

    def slow(text, ms, opts=()):
        seen.append((text, ms, dict(opts)))
        clock[0] += ms / 1000
        return S.Answer("cvc5", "unknown", ms / 1000, "cvc5 answered unknown (timeout)")

    monkeypatch.setattr(S, "_cvc5_once", slow)
    monkeypatch.setattr(S.time, "perf_counter", lambda: clock[0])
    a = S.run_cvc5("plain", 100000, lifted=lambda: "lifted")
    assert a.result == "unknown"
    assert "lifted" in {t for t, _, _ in seen}            # the lifted script was tried
    assert len({tuple(sorted(o.items())) for _, _, o in seen}) >= 5  # several seeds/options
    assert sum(ms for _, ms, _ in seen) <= 100000          # never past the limit


def test_cvc5_seeds_decide_alike():
    """A seed steers cvc5's search, never its answer: on a true and on a false obligation
    every strategy's options give the same verdict."""
    from exogpu_verify.symbolic.smtlib import obligation_smtlib
    from exogpu_verify.symbolic.solvers import CVC5_STRATEGIES, _cvc5_once

    conflict = "[N] -> { [i] : 0 <= i < 2N and i mod 2 = 0 and N >= 1 }"
    for ordered, want in (("[N] -> { [i] : exists (k : i = 2k and 0 <= k < N) }", "unsat"),
                          ("[N] -> { [i] : exists (k : i = 2k and 0 <= k < N - 1) }", "sat")):
        for lift, opts, _ in CVC5_STRATEGIES:
            text = obligation_smtlib(conflict, [("o", ordered)], lift=lift)
            assert _cvc5_once(text, 10000, opts).result == want, (opts, lift)


def test_a_recorded_cvc5_strategy_is_tried_first_and_only_from_the_list(monkeypatch):
    """A certificate names the cvc5 strategy that decided an obligation (``strategy``);
    re-checking tries it first. A name that is not one of ``CVC5_STRATEGIES`` (a forged
    option) is ignored, and the answer says which strategy gave it."""
    from exogpu_verify.symbolic import solvers as S

    seen = []

    def fake(text, ms, opts=()):
        seen.append(dict(opts))
        return S.Answer("cvc5", "unsat", 0.0, "")

    monkeypatch.setattr(S, "_cvc5_once", fake)
    assert S.run_cvc5("t", 1000).strategy == ""                    # the defaults answered
    with S.preferring({"t": "--seed=3"}):
        a = S.run_cvc5("t", 1000)
    assert seen[-1] == {"seed": "3"} and a.strategy == "--seed=3"
    with S.preferring({"t": "--arith-no-partial-fun --seed=3"}):  # not a strategy of ours
        a = S.run_cvc5("t", 1000)
    assert seen[-1] == {} and a.strategy == ""
    names = [S.strategy_name(lift, o) for lift, o, _ in S.CVC5_STRATEGIES]
    assert names[0] == names[-1] == "" and {"lifted", "--mbqi", "--seed=1"} <= set(names)


def test_the_strategy_field_of_a_certificate_is_checked():
    from exogpu_verify.recheck import schema_problems

    import json
    data = json.loads((ROOT / "proofs" / "saxpy.saxpy.json").read_text())
    assert schema_problems(data) == []
    data["obligations"][0]["strategy"] = {"cvc5": "--seed=1"}
    assert schema_problems(data) == []
    data["obligations"][0]["strategy"] = {"cvc5": 1}
    assert any("strategy.cvc5: a number (expected a string)" in p for p in schema_problems(data))
    data["obligations"][0]["strategy"] = "--seed=1"
    assert any("strategy: a string (expected an object)" in p for p in schema_problems(data))
