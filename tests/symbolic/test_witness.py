"""Witnesses (``symbolic/witness.py``): an ordered set's instances given as terms, so that the
solvers decide an obligation without quantifiers. The witnessed script is implied by the
quantified one, so no witness, however chosen, proves a false obligation."""

from __future__ import annotations

import islpy as isl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exogpu_verify.symbolic import witness as W
from exogpu_verify.symbolic.isltext import parse_set
from exogpu_verify.symbolic.smtlib import obligation_smtlib
from exogpu_verify.symbolic.solvers import run

# the writes a[i] and the reads b[j] of one element; the read j is ordered after the write
# i by some barrier instance k in between (i <= k < j) with k < N
CONFLICT = "[N] -> { [i, j] : 0 <= i < N and 0 <= j < N and i < j }"
ORDERED = "[N] -> { [i, j] : exists (k : i <= k < j and 0 <= k < N) }"
# too weak: only the barriers at even k order anything
EVEN = "[N] -> { [i, j] : exists (k, q : k = 2q and i <= k < j and 0 <= k < N) }"


def answers(conflict, ordered, witnesses=None):
    text = obligation_smtlib(conflict, ordered, "t", witnesses=witnesses)
    return {s: run(s, text, 20000).result for s in ("z3", "cvc5")}


def test_flatten_names_dimensions_and_bound_variables_canonically():
    flat = W.flatten(parse_set(EVEN))
    assert flat.dims == ("x0", "x1") and flat.vars == ("v0", "v1")
    assert W.map_text(flat).startswith("[N] -> { [x0, x1] -> [v0, v1] : ")


def test_flatten_pins_a_disjuncts_variables_in_the_others():
    flat = W.flatten(parse_set("{ [i] : (exists (k : k = i + 1)) or (exists (m : m = i - 1)) }"))
    assert flat.vars == ("v0", "v1")
    # v1 is 0 in the first disjunct and v0 in the second: lexmin stays bounded
    m = isl.Map(W.map_text(flat))
    assert m.is_equal(isl.Map("{ [x0] -> [x0 + 1, 0]; [x0] -> [0, x0 - 1] }"))


def test_flatten_refuses_a_quantifier_under_a_negation():
    assert W.flatten(parse_set("{ [i] : not (exists (k : k = 2i)) }")) is None
    assert W.flatten(parse_set("{ [i] : not (i = 3) }")) is not None


def test_prefixes_avoid_size_parameters_named_like_them():
    flat = W.flatten(parse_set("[x0, v1] -> { [i] : exists (k : k = i + x0) }"))
    assert flat.dims == ("xx0",) and flat.vars == ("vv0",)


def test_compute_and_the_witnessed_script_decide_the_obligation():
    w = W.compute(isl.Set(CONFLICT).intersect(isl.Set(ORDERED)), ORDERED)
    assert w and all(len(c) == 1 for c in w)
    assert answers(CONFLICT, [("barrier", ORDERED)], [w]) == {"z3": "unsat", "cvc5": "unsat"}
    text = obligation_smtlib(CONFLICT, [("barrier", ORDERED)], "t", witnesses=[w])
    assert "exists" not in text and "forall" not in text
    # and the quantified script agrees
    assert answers(CONFLICT, [("barrier", ORDERED)]) == {"z3": "unsat", "cvc5": "unsat"}


def test_the_witness_keeps_only_the_pieces_that_meet_the_pairs():
    # lexmin runs on the pairs' hull without their existentials (4 <= i <= 7, not i = 6),
    # where it has two pieces, k = 5 for i <= 5 and k = i above; only the second meets the
    # pairs, and it alone is the witness (it is pointwise the lexmin on the pairs)
    conflict = ("[N] -> { [i, j] : 0 <= i < N and 0 <= j < N and i < j and "
                "exists (q : i = 3q and 4 <= i <= 7) }")
    ordered = "[N] -> { [i, j] : exists (k : i <= k < j and 0 <= k < N and 2k >= 9) }"
    w = W.compute(isl.Set(conflict).intersect(isl.Set(ordered)), ordered)
    assert w == [["x0"]]
    assert answers(conflict, [("barrier", ordered)], [w]) == {"z3": "unsat", "cvc5": "unsat"}


def test_a_set_without_quantifiers_has_the_empty_witness():
    qf = "[N] -> { [i, j] : i < j }"
    assert W.compute(isl.Set(CONFLICT), qf) == [[]]
    assert answers(CONFLICT, [("order", qf)], [[[]]]) == {"z3": "unsat", "cvc5": "unsat"}


def test_a_wrong_witness_proves_nothing():
    # k = j is never < j: the witnessed script is satisfiable, the obligation is not
    assert answers(CONFLICT, [("barrier", ORDERED)], [[["x1"]]]) == {"z3": "sat", "cvc5": "sat"}


@settings(max_examples=25, deadline=None)
@given(a=st.integers(-3, 3), b=st.integers(-3, 3), c=st.integers(-4, 4),
       d=st.sampled_from([1, 2, 3]), pieces=st.integers(1, 3))
def test_no_witness_proves_a_false_obligation(a, b, c, d, pieces):
    """The EVEN ordering leaves pairs (i, i + 1) with odd i unordered: whatever terms a
    witness gives (here: quasi-affine ones, several candidates), the witnessed script stays
    satisfiable, since it is implied by the quantified one, which is satisfiable."""
    cands = []
    for p in range(pieces):
        k = f"floor(({a + p} * x0 + {b} * x1 + {c})/{d})"
        cands.append([k, f"({k} mod 5)"])
    got = answers(CONFLICT, [("even", EVEN)], [cands])
    assert got == {"z3": "sat", "cvc5": "sat"}


def test_parse_witness_names_what_does_not_fit():
    flat = W.flatten(parse_set(ORDERED))
    with pytest.raises(W.WitnessError, match=r"\[0\]: 2 term\(s\), the set binds 1"):
        W.parse_witness(flat, [["x0", "x1"]])
    with pytest.raises(W.WitnessError, match=r"unknown name\(s\) k"):
        W.parse_witness(flat, [["k + 1"]])
    with pytest.raises(W.WitnessError, match="bad term"):
        W.parse_witness(flat, [["x0 +"]])
    with pytest.raises(W.WitnessError, match="expected a list of term texts"):
        W.parse_witness(flat, [[1]])
    assert W.parse_witness(flat, [["N - 1"], ["floor((x0 + x1)/2)"]])


def test_term_text_reads_back_to_the_same_tree():
    from exogpu_verify.symbolic.isltext import parse_term

    for t in ["(x0 + (-3))", "floor(((2 * x1) + N)/4)", "((x0 + 1) mod 3)", "(-2 * x0)", "7"]:
        tree = parse_term(t)
        assert parse_term(W.term_text(tree)) == tree


def test_a_named_tuple_and_a_negation_without_quantifier_keep_their_witness():
    o = W.Ordered("[N] -> { S[i, j] : 0 <= i < N and exists (k : i <= k < j and not (k = 3)) }")
    conflict = isl.Set("[N] -> { S[i, j] : 0 <= i < j < N }")
    assert o.set.is_equal(isl.Set("[N] -> { S[i, j] : 0 <= i < N and exists (k : i <= k < j "
                                  "and (k < 3 or k > 3)) }"))
    w = o.witness(conflict.intersect(o.set))
    assert sorted(w) == [["4"], ["x0"]]  # lexmin: i itself, or 4 where i = 3


# a holder union (``Builder.union_text``): every thread t of B (four of them) runs some
# holder instance k = 4i + t before it; the obligation's negation makes t existential and
# k universal, so a witness gives k as a term over the point and t
UNION = ("[N] -> { [i] : 0 <= i < N and not (exists (t : 0 <= t < 4 and "
         "not (exists (k : 0 <= k < 4N and k = 4i + t)))) }")
# too weak: only the even threads run a holder
UNION_EVEN = ("[N] -> { [i] : 0 <= i < N and not (exists (t : 0 <= t < 4 and "
              "not (exists (k, q : 0 <= k < 4N and k = 4i + t and t = 2q)))) }")
POINTS = "[N] -> { [i] : 0 <= i < N }"


def test_flatten_union_names_the_thread_before_the_holder():
    flat = W.flatten_union(parse_set(UNION))
    assert flat.outer == ("v0",) and flat.vars == ("v1",) and flat.dims == ("x0",)
    assert W.flatten(parse_set(UNION)) is None
    assert W.witness_form(parse_set(UNION)) == flat
    # other shapes with a negated quantifier have no witness form
    assert W.witness_form(parse_set("{ [i] : not (exists (k : k = 2i)) }")) is None


@pytest.mark.parametrize("text", [UNION, UNION_EVEN, UNION.replace("[i]", "S[i]")])
def test_a_holder_union_splits_a_set_as_isl_reads_its_text(text):
    o = W.Ordered(text)
    assert o.flat is not None and o.flat.outer  # read as the relation, not as the set
    named = "S[" in text
    for left in ([POINTS, "[N] -> { [i] : -2 <= i < N + 3 }", "[N] -> { [i] : N >= 5 and "
                  "i = 3 }"]):
        if named:
            left = left.replace("[i]", "S[i]")
        s = isl.Set(left)
        met, rest = o.split(s)
        ref = isl.Set(text)
        assert met.is_equal(s.intersect(ref)) and rest.is_equal(s.subtract(ref))


def test_a_holder_union_has_a_witness_that_the_solvers_check():
    o = W.Ordered(UNION)
    met, rest = o.split(isl.Set(POINTS))
    assert rest.is_empty()
    w = o.witness(met)
    assert w and all(len(c) == 1 for c in w)
    assert answers(POINTS, [("union", UNION)], [w]) == {"z3": "unsat", "cvc5": "unsat"}
    text = obligation_smtlib(POINTS, [("union", UNION)], "t", witnesses=[w])
    assert "exists" not in text and "forall" not in text
    assert answers(POINTS, [("union", UNION)], [[["((4 * x0) + v0)"]]]) == \
        {"z3": "unsat", "cvc5": "unsat"}


@pytest.mark.parametrize("terms", [[["(4 * x0)"]], [["((4 * x0) + 1)"]], [["v0"]],
                                   [["(4 * x0)"], ["((4 * x0) + 2)"]]])
def test_a_wrong_holder_union_witness_proves_nothing(terms):
    # each misses some thread t of B: the witnessed script is satisfiable
    assert answers(POINTS, [("union", UNION)], [terms]) == {"z3": "sat", "cvc5": "sat"}


@settings(max_examples=15, deadline=None)
@given(a=st.integers(-4, 4), b=st.integers(-3, 3), c=st.integers(-4, 4),
       d=st.sampled_from([1, 2, 4]), pieces=st.integers(1, 3))
def test_no_holder_union_witness_proves_a_false_obligation(a, b, c, d, pieces):
    """UNION_EVEN leaves every point unordered (the odd threads run no holder): whatever
    the terms, over the point and the thread, the witnessed script stays satisfiable."""
    cands = []
    for p in range(pieces):
        k = f"floor(({a + p} * x0 + {b} * v0 + {c})/{d})"
        cands.append([k, f"({k} mod 2)"])
    assert answers(POINTS, [("even", UNION_EVEN)], [cands]) == {"z3": "sat", "cvc5": "sat"}


def test_a_holder_union_witness_may_name_the_thread_but_nothing_else():
    flat = W.flatten_union(parse_set(UNION))
    assert W.parse_witness(flat, [["((4 * x0) + v0)"]])
    with pytest.raises(W.WitnessError, match=r"unknown name\(s\) v1"):
        W.parse_witness(flat, [["v1"]])
