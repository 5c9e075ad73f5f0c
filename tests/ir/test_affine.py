"""Quasi-affine control expressions convert exactly to isl and Z3 (checked by enumeration)."""

from __future__ import annotations

import islpy as isl
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import (NotAffine, check_quasi_affine, cond_to_isl_str, cond_to_z3,
                                     to_isl_aff, to_z3)
from exogpu_verify.ir.types import bool_, index, int_


def var(n):
    return N.Read(n, (), index)


def c(v):
    return N.Const(v, int_)


def exprs():
    leaf = st.one_of(st.sampled_from([var("i"), var("N")]), st.integers(-5, 9).map(c))

    def ext(children):
        return st.one_of(
            st.tuples(st.sampled_from("+-"), children, children).map(
                lambda t: N.BinOp(t[0], t[1], t[2], index)),
            st.tuples(children, st.integers(-3, 4)).map(
                lambda t: N.BinOp("*", t[0], c(t[1]), index)),
            st.tuples(st.sampled_from("/%"), children, st.integers(1, 7)).map(
                lambda t: N.BinOp(t[0], t[1], c(t[2]), index)),
            children.map(lambda x: N.UnOp("-", x, index)),
        )

    return st.recursive(leaf, ext, max_leaves=6)


def py_eval(e, env):
    if isinstance(e, N.Const):
        return e.val
    if isinstance(e, N.Read):
        return env[e.name]
    if isinstance(e, N.UnOp):
        return -py_eval(e.arg, env)
    a, b = py_eval(e.lhs, env), py_eval(e.rhs, env)
    return {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0,
            "%": a % b if b else 0}[e.op]


@settings(max_examples=60, deadline=None)
@given(exprs())
def test_isl_and_z3_agree_with_python(e):
    check_quasi_affine(e)
    aff = to_isl_aff(e, ["N"], ["i"])
    env = {}
    t = to_z3(e, env)
    for N_ in (1, 3, 8):
        for i in range(-6, 7):
            want = py_eval(e, {"i": i, "N": N_})
            pt = isl.Set(f"[N] -> {{ [i] : i = {i} and N = {N_} }}")
            got_z3 = z3.simplify(z3.substitute(t, *[(env[k], z3.IntVal(v)) for k, v in
                                                   (("i", i), ("N", N_)) if k in env]))
            assert got_z3.as_long() == want
            # isl: evaluate the affine expression on the point through a map image
            m = isl.Map.from_pw_aff(aff).intersect_domain(pt)
            img = m.range()
            assert img.is_equal(isl.Set(f"[N] -> {{ [{want}] : N = {N_} }}")), (e, i, N_)


def test_non_affine_rejected():
    with pytest.raises(NotAffine, match="product"):
        check_quasi_affine(N.BinOp("*", var("i"), var("N"), index))
    with pytest.raises(NotAffine, match="non-constant"):
        check_quasi_affine(N.BinOp("/", var("i"), var("N"), index))
    with pytest.raises(NotAffine, match="non-positive"):
        check_quasi_affine(N.BinOp("%", var("i"), c(0), index))


def test_conditions():
    cond = N.BinOp("and", N.BinOp("<", var("i"), var("N"), bool_),
                   N.UnOp("not", N.BinOp("==", var("i"), c(3), bool_), bool_), bool_)
    s = isl.Set(f"[N] -> {{ [i] : {cond_to_isl_str(cond)} }}")
    env = {}
    f = cond_to_z3(cond, env)
    for N_ in range(0, 6):
        for i in range(-2, 8):
            want = i < N_ and i != 3
            assert (not s.intersect(isl.Set(f"[N] -> {{ [{i}] : N = {N_} }}")).is_empty()) == want
            sol = z3.Solver()
            sol.add(f, env["i"] == i, env["N"] == N_)
            assert (sol.check() == z3.sat) == want
