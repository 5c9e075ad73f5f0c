"""Buffer and statement rewrites: differential tests and refusals."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_util import P, last, same

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.memories import CudaSmemLinear, DRAM
from exogpu_verify.ir.types import f64
from exogpu_verify.schedule import (SchedulingError, bind_expr, delete_pass, divide_dim,
                                    expand_dim, inline_window, insert_pass, lift_alloc,
                                    rearrange_dim, rename, reorder_stmts, set_memory,
                                    set_precision, simplify, sink_alloc, stage_mem)

FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TMP = """
def f(N: size, A: f32[N, 8], y: f32[N]):
    assert N % 4 == 0
    for i in seq(0, N):
        t: f32[8] @ DRAM
        for j in seq(0, 8):
            t[j] = A[i, j] * 2.0
        for j in seq(0, 8):
            y[i] += t[j]
"""


def test_lift_sink_alloc():
    p = P(TMP)
    p1 = lift_alloc(p, "t : _")
    assert isinstance(p1.body[0], N.Alloc)
    same(p, p1, {"N": 4})
    p2 = sink_alloc(p1, "t : _")
    same(p, p2, {"N": 4})
    assert "sees an element written in an earlier iteration" in last(p2).checked


def test_sink_alloc_refuses_carried_value():
    p = P("""
def f(N: size, y: f32[N]):
    acc: f32 @ DRAM
    acc = 0.0
    for i in seq(0, N):
        acc = acc + 1.0
        y[i] = acc
""")
    with pytest.raises(SchedulingError):
        sink_alloc(p, "acc : _")


@FAST
@given(k=st.integers(1, 3), q=st.sampled_from([2, 4, 8]), perm=st.permutations([0, 1]))
def test_dims(k, q, perm):
    p = P(TMP)
    p1 = expand_dim(p, "t : _", k, 0)
    same(p, p1, {"N": 4})
    p2 = divide_dim(p, "t : _", 0, q)
    same(p, simplify(p2), {"N": 4})
    p3 = expand_dim(p, "t : _", "N", "i")
    same(p, rearrange_dim(p3, "t : _", list(perm)), {"N": 4})


def test_dim_refusals():
    p = P(TMP)
    with pytest.raises(SchedulingError, match="cannot prove"):
        expand_dim(p, "t : _", 4, 5)
    with pytest.raises(SchedulingError, match="cannot prove"):
        divide_dim(p, "t : _", 0, 3)
    with pytest.raises(SchedulingError, match="permutation"):
        rearrange_dim(p, "t : _", [1])


GEMM = """
def mm(M: size, N: size, K: size, A: f32[M, K], B: f32[K, N], C: f32[M, N]):
    assert M % 4 == 0
    assert N % 4 == 0
    for io in seq(0, M / 4):
        for jo in seq(0, N / 4):
            for k in seq(0, K):
                for ii in seq(0, 4):
                    for ji in seq(0, 4):
                        C[4 * io + ii, 4 * jo + ji] += A[4 * io + ii, k] * B[k, 4 * jo + ji]
"""


def test_stage_mem_exact_and_accum():
    p = P(GEMM)
    k = p.find_loop("k")
    p1 = stage_mem(p, k, "C[4 * io:4 * io + 4, 4 * jo:4 * jo + 4]", "Ct")
    assert not last(p1).unsafe
    same(p, p1, {"M": 8, "N": 4, "K": 5})
    p2 = stage_mem(p1, p1.find_loop("ii"), "A[4 * io:4 * io + 4, k]", "At")
    same(p, p2, {"M": 8, "N": 4, "K": 5})
    p3 = stage_mem(p, k, "C[4 * io:4 * io + 4, 4 * jo:4 * jo + 4]", "Ct", accum=True)
    assert last(p3).unsafe and "reassociation" in last(p3).checked
    same(p, p3, {"M": 8, "N": 4, "K": 5}, bitwise=False)


def test_stage_mem_refusals():
    p = P(GEMM)
    with pytest.raises(SchedulingError, match="outside the window"):
        stage_mem(p, p.find_loop("k"), "C[4 * io:4 * io + 2, 4 * jo:4 * jo + 4]", "Ct")
    with pytest.raises(SchedulingError, match="inside 'C'"):
        stage_mem(p, p.find_loop("k"), "C[4 * io:4 * io + 8, 4 * jo:4 * jo + 4]", "Ct")
    with pytest.raises(SchedulingError, match="only reduce"):
        stage_mem(p, p.find_loop("k"), "A[4 * io:4 * io + 4, 0:K]", "At", accum=True)


def test_memory_precision_window_bind():
    p = P(TMP)
    p1 = set_memory(p, "t : _", DRAM)
    assert "annotation" in last(p1).checked
    p2 = set_precision(p, "t : _", f64)
    assert last(p2).unsafe and "UNCHECKED" in last(p2).checked
    same(p, p2, {"N": 4}, bitwise=False)
    with pytest.raises(SchedulingError, match="ill-formed"):
        set_memory(p, "t : _", CudaSmemLinear)  # shared memory at CPU scope
    w = P("""
def g(N: size, A: f32[N, 8], y: f32[N]):
    for i in seq(0, N):
        row = A[i, 2:6]
        for j in seq(0, 4):
            y[i] += row[j]
""")
    same(w, inline_window(w, "row = _"), {"N": 3})
    b = bind_expr(p, p.find("A[i, j] * 2.0"), "u")
    same(p, b, {"N": 4})
    h = P("""
def h(N: size, a: f16[N], b: f16[N], c: f32[N]):
    for i in seq(0, N):
        c[i] = a[i] * b[i] + 1.0
""")
    same(h, bind_expr(h, h.find("a[i] * b[i]"), "ab"), {"N": 7})


def test_stmts_misc():
    p = P(TMP)
    p1 = insert_pass(p, p.find_loop("i").before())
    assert isinstance(p1.body[0], N.Pass)
    p2 = delete_pass(p1)
    assert p2 == p and rename(p2, "g").name == "g"
    q = P("""
def q(N: size, X: f32[N], Y: f32[N]):
    for i in seq(0, N):
        X[i] = 1.0
    for i in seq(0, N):
        Y[i] = 2.0
    for i in seq(0, N):
        X[i] = Y[i]
""")
    q1 = reorder_stmts(q, q.find("for i in _: _").expand(0, 1))
    same(q, q1, {"N": 3})
    with pytest.raises(SchedulingError, match="do not commute"):
        reorder_stmts(q, q.find("for i in _: _ #1").expand(0, 1))


def test_simplify_guards():
    p = P("""
def f(N: size, X: f32[N]):
    assert N % 8 == 0
    for i in seq(0, N):
        X[i] = 1.0
""")
    from exogpu_verify.schedule import divide_loop

    p1 = divide_loop(p, "i", 8, ["io", "ii"])
    p2 = simplify(p1)
    assert not any(isinstance(s, N.If) for s in _walk(p2.body))
    same(p, p2, {"N": 16})


def _walk(stmts):
    for s in stmts:
        yield s
        yield from _walk(getattr(s, "body", ()) or ())
