"""Linear simplification that decides conditions exactly (``ir/linear.py``): what it decides,
what it must leave to the solver, and that every decision agrees with evaluation."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.linear import NotLinear, constant, decide, linear, simplify
from exogpu_verify.ir.printer import expr_str
from exogpu_verify.ir.types import bool_, index, size


def c(v):
    return N.Const(v, index)


def v(name, t=index):
    return N.Read(name, (), t)


def b(op, x, y, t=index):
    return N.BinOp(op, x, y, t)


h, k, Nn = v("h"), v("k"), v("N", size)


def test_extents_that_cancel_are_constant():
    assert constant(b("-", b("+", b("*", c(8), h), c(8)), b("*", c(8), h))) == 8
    assert constant(b("-", b("+", h, Nn), h)) is None


def test_modulo_and_floor_division_of_multiples_are_exact():
    x = b("+", b("*", c(16384), b("%", k, c(4))), c(32))
    assert constant(b("%", x, c(1024))) == 32
    assert constant(b("/", b("+", b("*", c(8), h), c(5)), c(8))) is None  # h + 0: variable
    t, k0 = linear(b("/", b("+", b("*", c(8), h), c(5)), c(8)))
    assert t == {"h": 1} and k0 == 0


def test_products_of_variables_are_not_linear():
    with pytest.raises(NotLinear):
        linear(b("*", h, k))


def test_sign_reasoning_over_positive_sizes():
    pos = frozenset({"N"})
    assert decide(b("<=", c(0), Nn, bool_), pos) is True
    assert decide(b("<", c(0), Nn, bool_), pos) is True
    assert decide(b(">", Nn, c(1), bool_), pos) is None
    assert decide(b("<=", c(0), Nn, bool_)) is None          # N not known positive
    assert decide(b("<=", c(0), h, bool_), pos) is None       # a loop variable


def test_simplify_prints_as_people_write():
    assert expr_str(simplify(b("-", b("+", b("*", c(8), h), c(8)), b("*", c(8), h)))) == "8"
    assert expr_str(simplify(b("-", b("+", b("+", b("*", c(8), h), c(4)), b("%", h, c(2))),
                                 b("*", c(8), h)))) == "h % 2 + 4"


TERMS = st.sampled_from(["h", "k", "N"])


@st.composite
def exprs(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            return c(draw(st.integers(-20, 20)))
        return v(draw(TERMS))
    op = draw(st.sampled_from(["+", "-", "*c", "%", "/"]))
    a = draw(exprs(depth=depth - 1))
    if op == "*c":
        return b("*", c(draw(st.integers(-8, 8))), a)
    if op in ("%", "/"):
        return b(op, a, c(draw(st.sampled_from([1, 2, 4, 8, 1024]))))
    return b(op, a, draw(exprs(depth=depth - 1)))


def _eval(e, env):
    from exogpu_verify.ir.affine import const_value

    cv = const_value(e)
    if cv is not None:
        return cv
    if isinstance(e, N.Read):
        return env[e.name]
    a, y = _eval(e.lhs, env), _eval(e.rhs, env)
    return {"+": a + y, "-": a - y, "*": a * y, "%": a % y if y else 0,
            "/": a // y if y else 0, "<": a < y, "<=": a <= y, "==": a == y}[e.op]


@settings(max_examples=100, deadline=None)
@given(exprs(), exprs(), st.sampled_from(["<", "<=", "=="]))
def test_every_decision_agrees_with_evaluation(x, y, op):
    cond = b(op, x, y, bool_)
    d = decide(cond, frozenset({"N"}))
    if d is None:
        return
    for hv, kv, nv in itertools.product(range(-3, 4), range(-3, 4), (1, 17)):
        env = {"h": hv, "k": kv, "N": nv}
        assert _eval(cond, env) == d, (expr_str(cond), env)
