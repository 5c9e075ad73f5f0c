"""The canonical quasi-affine forms used by simplify and replace: every rewrite of an
expression keeps its value (random expressions evaluated on a grid), and the identities
schedules need hold syntactically."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.types import index, int_
from exogpu_verify.schedule.normalize import build, linear, same_form

X, Y = N.Read("x", (), index), N.Read("y", (), index)


def c(v):
    return N.Const(v, int_)


def b(op, a, bb):
    return N.BinOp(op, a, bb, index)


def ev(e, env):
    if isinstance(e, N.Const):
        return e.val
    if isinstance(e, N.Read):
        return env[e.name]
    if isinstance(e, N.UnOp):
        return -ev(e.arg, env)
    a, bb = ev(e.lhs, env), ev(e.rhs, env)
    ops = {"+": lambda: a + bb, "-": lambda: a - bb, "*": lambda: a * bb,
           "/": lambda: a // bb, "%": lambda: a % bb}
    return ops[e.op]()


exprs = st.recursive(
    st.sampled_from([X, Y]) | st.integers(-5, 9).map(c),
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(["+", "-"]), sub, sub).map(lambda t: b(*t)),
        st.tuples(sub, st.integers(-3, 5)).map(lambda t: b("*", c(t[1]), t[0])),
        st.tuples(st.sampled_from(["/", "%"]), sub, st.sampled_from([1, 2, 3, 4, 8, 16]))
        .map(lambda t: b(t[0], t[1], c(t[2])))),
    max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(e=exprs)
def test_canonical_form_keeps_the_value(e):
    out = build(linear(e))
    for x, y in itertools.product(range(-9, 40, 3), range(-7, 20, 5)):
        env = {"x": x, "y": y}
        assert ev(out, env) == ev(e, env)


def test_identities():
    m = X
    assert same_form(b("%", b("%", m, c(16)), c(8)), b("%", m, c(8)))
    assert same_form(b("/", b("%", m, c(16)), c(8)), b("%", b("/", m, c(8)), c(2)))
    assert same_form(b("+", b("*", c(4), b("/", m, c(4))), b("%", m, c(4))), m)
    assert same_form(b("/", b("/", m, c(4)), c(8)), b("/", m, c(32)))
    assert same_form(b("%", b("-", m, c(1)), c(4)), b("%", b("+", m, c(3)), c(4)))
    assert same_form(b("/", b("%", m, c(8)), c(8)), c(0))
    assert same_form(b("/", b("+", b("*", c(64), Y), m), c(64)),
                     b("+", Y, b("/", m, c(64))))
    assert not same_form(b("%", m, c(8)), m)
