"""The quantifier-free and pruned texts are equivalent to what they replace (isl decides).

``prune.prune_text`` drops disjuncts that sibling equalities make false; the Encoder states
"some thread runs both" and "every thread of one runs the other" without quantifiers when
both thread sets are arithmetic progressions (``ThreadMapping.progression``). Both only make
texts smaller for isl and the solvers: each test compares the new text with the old one as
isl sets (``is_equal``), on unit cases and on random ones.
"""

from __future__ import annotations

import islpy as isl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exogpu_verify.analysis.mapping import ThreadMapping
from exogpu_verify.analysis.tiling import Affine, Collective, GridDim
from exogpu_verify.symbolic.isltext import parse_set
from exogpu_verify.symbolic.prune import _Classes, prune, prune_text
from exogpu_verify.symbolic.relations import _meet, _within

SETTINGS = dict(deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SIZES = [pytest.param(40, True, id="fast"),
         pytest.param(400, False, id="many", marks=pytest.mark.slow)]


def _same(a: str, b: str) -> None:
    assert isl.Set(a).is_equal(isl.Set(b)), (a, b)


def _lex(xs, ys) -> str:
    """xs before ys (lexicographically, or equal), as the Encoder writes it."""
    out = []
    for i in range(len(xs)):
        eq = [f"{xs[j]} = {ys[j]}" for j in range(i)]
        out.append("(" + " and ".join(eq + [f"{xs[i]} < {ys[i]}"]) + ")")
    out.append("(" + " and ".join(f"{x} = {y}" for x, y in zip(xs, ys)) + ")")
    return "(" + " or ".join(out) + ")"


# ------------------------------------------------------------------ prune: unit cases

def test_dead_disjuncts_of_a_lexicographic_order_are_removed():
    a, k = ["a0", "a1", "a2"], ["k0", "k1", "k2"]
    text = (f"[N] -> {{ [a0, a1, a2] : exists (k0, k1, k2 : 0 <= k0 < N and 0 <= k1 < N and "
            f"0 <= k2 < N and "
            f"a0 = k0 and a1 = k1 and {_lex(a, k)}) }}")
    out = prune_text(text)
    _same(text, out)
    assert "a0 < k0" not in out and "a1 < k1" not in out and "a2 < k2" in out


def test_an_equality_known_outside_is_true_inside():
    text = "[N] -> { [a, b] : a = b and (not (a = b) or a < N) }"
    out = prune_text(text)
    _same(text, out)
    assert "not" not in out


def test_an_exists_that_rebinds_a_name_hides_what_was_known_of_it():
    # (isl refuses such texts; our reader accepts them, so prune must be right on them)
    a_lt_b = ("cmp", "<", ("var", "a"), ("var", "b"))
    f = ("and", (("cmp", "=", ("var", "a"), ("var", "b")), ("exists", ("a",), a_lt_b)))
    assert prune(f, _Classes(frozenset())) == f
    g = ("and", (("cmp", "=", ("var", "a"), ("var", "b")), ("exists", ("c",), a_lt_b)))
    assert prune(g, _Classes(frozenset())) == ("false",)


def test_a_negated_comparison_of_equal_variables_folds():
    text = "{ [a, b, c] : a = b and b = c and not (a < c) and 0 <= a <= 4 }"
    out = prune_text(text)
    _same(text, out)
    assert "not" not in out


def test_a_set_pruned_to_nothing_stays_in_its_space():
    text = "[N] -> { [a, b] : a = b and a < b }"
    out = prune_text(text)
    _same(text, out)
    s = isl.Set(out)
    assert s.is_empty() and s.dim(isl.dim_type.set) == 2


def test_several_pieces_are_pruned_each():
    text = "[N] -> { [a, b] : a = b and (a < b or a <= N); [a, b] : a < b and b < N }"
    out = prune_text(text)
    _same(text, out)
    assert len(parse_set(out).pieces) == 2


def test_text_outside_the_grammar_is_returned_unchanged():
    assert prune_text("{ [a] : a * a = 4 }") == "{ [a] : a * a = 4 }"
    _same("{ [i, j = 2i] : 0 <= i < 4 }", prune_text("{ [i, j = 2i] : 0 <= i < 4 }"))
    assert prune_text("{ [i, 2i] : 0 <= i < 4 }") == "{ [i, 2i] : 0 <= i < 4 }"


# ------------------------------------------------------------------ prune: random sets

VARS = ["a0", "a1", "a2", "b0", "b1", "b2"]


@st.composite
def _formula(draw, names, depth=3):
    kind = draw(st.sampled_from(["eq", "eq", "cmp", "lex", "and", "or", "not", "exists"]
                                if depth > 0 else ["eq", "cmp"]))
    if kind == "eq":
        x, y = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        return f"{x} = {y}"
    if kind == "cmp":
        x, y = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        op = draw(st.sampled_from(["<", "<=", ">=", ">", "!=", "="]))
        k = draw(st.integers(-2, 2))
        return f"{x} {op} {y}" if k == 0 else f"{x} {op} {y} + {k}" if k > 0 else \
            f"{x} {op} {y} - {-k}"
    if kind == "lex":
        n = draw(st.integers(1, 3))
        xs = [draw(st.sampled_from(names)) for _ in range(n)]
        ys = [draw(st.sampled_from(names)) for _ in range(n)]
        return _lex(xs, ys)
    if kind in ("and", "or"):
        parts = [draw(_formula(names, depth - 1)) for _ in range(draw(st.integers(2, 4)))]
        return "(" + f" {kind} ".join(f"({p})" for p in parts) + ")"
    if kind == "not":
        return f"not ({draw(_formula(names, depth - 1))})"
    v = f"k{len(names)}"  # fresh: isl refuses an exists that rebinds a name
    body = draw(_formula(names + [v], depth - 1))
    return f"exists ({v} : -3 <= {v} <= 3 and ({body}))"


@st.composite
def _sets(draw):
    box = " and ".join(f"-3 <= {v} <= 3" for v in VARS)
    return f"[N] -> {{ [{', '.join(VARS)}] : {box} and ({draw(_formula(VARS))}) }}"


@pytest.mark.parametrize("n,derandomize", SIZES)
def test_pruning_random_sets_keeps_them_equal(n, derandomize):
    def check(text):
        _same(text, prune_text(text))

    settings(**SETTINGS, max_examples=n, derandomize=derandomize)(given(_sets())(check))()


# ------------------------------------------------------------------ thread progressions

def _quantified_meet(p1, p2) -> str:
    (b1, s1, n1), (b2, s2, n2) = p1, p2
    return (f"exists (t, x1, x2 : 0 <= x1 < {n1} and t = {b1} + {s1}*x1 and "
            f"0 <= x2 < {n2} and t = {b2} + {s2}*x2)")


def _quantified_within(inner, outer) -> str:
    (bi, si, ni), (bo, so, no) = inner, outer
    return (f"not (exists (t, xi : 0 <= xi < {ni} and t = {bi} + {si}*xi and "
            f"not (exists (xo : 0 <= xo < {no} and t = {bo} + {so}*xo))))")


_BOX = "0 <= u <= 6 and 0 <= v <= 6"


@st.composite
def _progressions(draw, var):
    c = draw(st.integers(0, 8))
    k = draw(st.integers(0, 40))
    base = f"({c}*{var} + {k})"
    pitch = draw(st.sampled_from([1, 1, 2, 4, 8, 32]))
    length = draw(st.sampled_from([1, 1, 2, 3, 4, 32]))
    return base, pitch, length


@pytest.mark.parametrize("n,derandomize", SIZES)
def test_thread_set_meet_and_cover_without_quantifiers_are_exact(n, derandomize):
    def check(p1, p2):
        for fast, slow in ((_meet(p1, p2), _quantified_meet(p1, p2)),
                           (_within(p1, p2), _quantified_within(p1, p2))):
            if fast is None:  # not stated without quantifiers: the Encoder keeps the text
                continue
            _same(f"{{ [u, v] : {_BOX} and {fast} }}", f"{{ [u, v] : {_BOX} and {slow} }}")

    settings(**SETTINGS, max_examples=n, derandomize=derandomize)(
        given(_progressions("u"), _progressions("v"))(check))()


def test_common_thread_sets_are_stated_without_quantifiers():
    warp = ("(32*u)", 1, 32)
    group = ("(128*v)", 1, 128)
    lane0 = ("(32*u)", 1, 1)
    one_per_warp = ("(128*v)", 32, 4)
    assert _within(warp, group) is not None and _meet(warp, group) is not None
    assert _within(lane0, one_per_warp) is not None
    assert _within(one_per_warp, group) is not None
    assert _within(group, warp) == "(1 = 0)"


def _mapping(dims) -> ThreadMapping:
    col = Collective(tuple(GridDim(e, p, Affine(c, tuple(t)), n) for e, p, c, t, n in dims),
                     256, 2)
    return ThreadMapping(col, (), (), ("u", "v"))


MAPPINGS = [
    # (extent, pitch, start const, start terms, length) per grid dimension
    [(256, 1, 0, [("u", 32)], 32)],                               # warp u
    [(2, 256, 1, [], 1), (256, 1, 0, [("v", 128)], 128)],         # a warpgroup of CTA 1
    [(2, 256, 0, [], 2), (256, 1, 0, [], 256)],                   # the whole cluster
    [(8, 32, 0, [("u", 4)], 4), (32, 1, 0, [], 1)],               # lane 0 of 4 warps
    [(8, 32, 0, [], 8), (32, 1, 0, [("v", 1)], 2)],               # 2 lanes of 8 warps: none
]


@pytest.mark.parametrize("dims", MAPPINGS)
def test_a_mapping_progression_is_its_thread_set(dims):
    m = _mapping(dims)
    prog = m.progression({})
    cons, xs = m.tid_constraint({}, "tid", "x")
    quantified = f"exists ({', '.join(xs)} : {cons})" if xs else cons
    want = isl.Set(f"{{ [u, v, tid] : {_BOX} and {quantified} }}")
    if prog is None:  # several live dimensions that do not tile: stays quantified
        assert len([d for d in dims if d[4] > 1]) > 1
        return
    base, pitch, length = prog
    got = isl.Set(f"{{ [u, v, tid] : {_BOX} and exists (x : 0 <= x < {length} and "
                  f"tid = {base} + {pitch}*x) }}")
    assert got.is_equal(want), (prog, cons)


def test_sets_without_dimensions_are_left_alone():
    for text in ("[N] -> { : N > 3 and N = N }", "[N] -> { [] : N > 3 }"):
        assert prune_text(text) == text
