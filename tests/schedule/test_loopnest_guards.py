"""mult_loops, join_loops, lift_scope, specialize, eliminate_dead_code, add_if and
unsafe_remove_if: differential tests (the interpreter on random inputs before and after) and
refusals that say why and locate the statement."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_util import P, last, same

from exogpu_verify.ir import nodes as N
from exogpu_verify.schedule import (SchedulingError, add_if, cut_loop, divide_loop,
                                    eliminate_dead_code, join_loops, lift_scope, mult_loops,
                                    rewrite_expr, simplify, specialize, unsafe_remove_if)

FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ROWS = """
def f(N: size, A: f32[N, 6], y: f32[N, 6]):
    for i in seq(0, N):
        for j in seq(0, 6):
            y[i, j] = A[i, j] * 2.0 + y[i, j]
"""


# ---------------------------------------------------------------- mult_loops


@FAST
@given(q=st.sampled_from([2, 3, 6]), n=st.integers(1, 5))
def test_mult_loops_inverts_divide_loop(q, n):
    p = P(ROWS)
    p1 = divide_loop(p, "j", q, ["jo", "ji"], perfect=True)
    p2 = simplify(mult_loops(p1, "jo ji", "k"))
    same(p, p2, {"N": n})
    assert p2.find_loop("k").node().hi == N.Const(6, p2.find_loop("k").node().hi.type) or \
        "6" in str(p2)
    assert "same instances in the same order" in p2.provenance[-2].checked


def test_mult_loops_whole_nest_is_equal():
    p = P(ROWS)
    p1 = mult_loops(p, "i j", "k")
    assert "for k in seq(0, 6 * N):" in str(p1)
    same(p, p1, {"N": 4})


def test_mult_loops_refusals():
    p = P("""
def f(N: size, y: f32[N, N]):
    for i in seq(0, N):
        for j in seq(0, N):
            y[i, j] = 1.0
""")
    with pytest.raises(SchedulingError, match="constant c") as e:
        mult_loops(p, "i j", "k")
    assert e.value.line == p.find_loop("j").node().srcinfo.line
    with pytest.raises(SchedulingError, match="already used"):
        mult_loops(P(ROWS), "i j", "j")


# ---------------------------------------------------------------- join_loops


@FAST
@given(cut=st.integers(0, 6), n=st.integers(1, 4))
def test_join_loops_inverts_cut_loop(cut, n):
    p = P(ROWS)
    p1 = cut_loop(p, "j", cut)
    first = p1.find_loop("j")
    p2 = join_loops(p1, first, first.next())
    same(p, p2, {"N": n})
    assert p2.find_loop("j").node() == p.find_loop("j").node()


def test_join_loops_refusals():
    p = P("""
def f(N: size, y: f32[N]):
    assert N >= 4
    for i in seq(0, 2):
        y[i] = 1.0
    for i in seq(3, N):
        y[i] = 1.0
    for j in seq(0, 2):
        y[j] = 2.0
    for j in seq(2, 4):
        y[j] = 3.0
""")
    a = p.find_loop("i")
    with pytest.raises(SchedulingError, match="ends where the second starts"):
        join_loops(p, a, a.next())
    b = p.find_loop("j")
    with pytest.raises(SchedulingError, match="bodies differ") as e:
        join_loops(p, b, b.next())
    assert e.value.line == b.node().srcinfo.line


# ---------------------------------------------------------------- lift_scope

GUARDED = """
def f(N: size, M: size, A: f32[N], y: f32[N]):
    for i in seq(0, N):
        if M > 3:
            y[i] = A[i] * 2.0
        else:
            y[i] = A[i] + 1.0
"""


@pytest.mark.parametrize("m", [1, 5])
def test_lift_scope_if_out_of_loop(m):
    p = P(GUARDED)
    p1 = lift_scope(p, "if _: _")
    assert isinstance(p1.body[0], N.If) and isinstance(p1.body[0].body[0], N.For)
    same(p, p1, {"N": 4, "M": m})
    p2 = lift_scope(p1, p1.find_loop("i"))  # the loop in the then-branch: back inside
    assert isinstance(p2.body[0].body[0], N.For) or isinstance(p2.body[0], N.For)
    same(p, p2, {"N": 4, "M": m})


def test_lift_scope_if_in_if_swaps_conditions():
    p = P("""
def f(N: size, M: size, y: f32[4]):
    if N > 2:
        if M > 2:
            y[0] = 1.0
        else:
            y[1] = 2.0
""")
    p1 = lift_scope(p, "if M > 2: _")
    assert str(p1.body[0].cond.lhs.name) == "M"
    for n in (1, 3):
        for m in (1, 3):
            same(p, p1, {"N": n, "M": m})


def test_lift_scope_refuses_dependent_condition():
    p = P("""
def f(N: size, y: f32[N]):
    for i in seq(0, N):
        if i > 2:
            y[i] = 1.0
""")
    with pytest.raises(SchedulingError, match="depends on 'i'") as e:
        lift_scope(p, "if _: _")
    assert e.value.line == p.find("if _: _").node().srcinfo.line


# ---------------------------------------------------------------- specialize


@pytest.mark.parametrize("n", [1, 4, 7])
def test_specialize_keeps_the_block_in_every_branch(n):
    p = P(ROWS)
    p1 = specialize(p, p.find_loop("i"), ["N % 4 == 0", "N > 5"])
    assert str(p1).count("for i in seq(0, N):") == 3
    same(p, p1, {"N": n})
    assert "3 identical copies" in last(p1).checked


def test_specialize_refuses_data_condition():
    p = P(ROWS)
    with pytest.raises(SchedulingError):
        specialize(p, p.find_loop("i"), ["A[0, 0] > 1.0"])


# ---------------------------------------------------------------- eliminate_dead_code


def test_eliminate_dead_code():
    p = P("""
def f(N: size, y: f32[N]):
    assert N % 4 == 0
    for i in seq(0, N):
        if N % 2 == 0:
            y[i] = 1.0
        else:
            y[i] = 2.0
    for j in seq(N, N):
        y[j] = 3.0
""")
    p1 = eliminate_dead_code(p, "if _: _")
    p2 = eliminate_dead_code(p1, p1.find_loop("j"))
    assert "if" not in str(p2).split("def", 1)[1] and "for j" not in str(p2)
    same(p, p2, {"N": 8})
    with pytest.raises(SchedulingError, match="cannot prove") as e:
        eliminate_dead_code(P(GUARDED), "if _: _")
    assert e.value.line is not None


def test_a_branch_runs_under_its_condition():
    """A statement directly inside an ``if`` runs only where the condition holds: the
    rewrites' context includes it (it used to be dropped for the innermost ``if``, so
    ``if i < 2: if i < 3:`` could not be simplified, nor ``x[i % 2]`` be read as ``x[1]``
    under ``if i % 2 == 1:``); the ``else`` branch runs under its negation."""
    p = P("""
def f(N: size, y: f32[N], x: f32[2]):
    for i in seq(0, N):
        if i < 2:
            if i < 3:
                y[i] = 1.0
        if i % 2 == 1:
            y[i] = x[i % 2]
        else:
            y[i] = x[i % 2] + 1.0
""")
    p1 = eliminate_dead_code(p, "if i < 3: _")
    assert "if i < 3" not in str(p1)
    p2 = rewrite_expr(p1, p1.find("x[_]").idx()[0], "1")
    p3 = rewrite_expr(p2, p2.find("x[_] #1").idx()[0], "0")
    assert "y[i] = x[1]" in str(p3) and "y[i] = x[0] + 1.0" in str(p3)
    same(p, p3, {"N": 5})
    with pytest.raises(SchedulingError, match="cannot prove"):
        rewrite_expr(p1, p1.find("x[_] #1").idx()[0], "1")  # else: i % 2 == 0


# ---------------------------------------------------------------- add_if / unsafe_remove_if

SYNC = """
def f(N: size, A: f32[N] @ CudaGmemLinear, y: f32[N] @ CudaGmemLinear):
    assert N % 128 == 0
    with CudaDeviceFunction(blockDim=128):
        for b in cuda_tasks(0, N / 128):
            for t in cuda_threads(0, 128, unit=cuda_thread):
                y[128 * b + t] = A[128 * b + t]
            Fence(cuda_in_order, cuda_in_order)
"""


def test_add_if_around_synchronization_is_an_annotation():
    p = P(SYNC)
    p1 = add_if(p, "Fence(_, _)", "b >= 1")
    assert "only synchronizes" in last(p1).checked and not last(p1).unsafe
    same(p, p1, {"N": 256})
    p2 = unsafe_remove_if(p1, "if _: _")
    assert not last(p2).unsafe
    same(p, p2, {"N": 256})


def test_add_if_on_data_needs_proof_or_is_unsafe():
    p = P(ROWS)
    loop = p.find_loop("j")
    p1 = add_if(p, loop, "N >= 1")  # provably true
    assert not last(p1).unsafe
    same(p, p1, {"N": 3})
    with pytest.raises(SchedulingError, match="not provably true") as e:
        add_if(p, loop, "i >= 1")
    assert e.value.line == loop.node().srcinfo.line
    p2 = add_if(p, loop, "i >= 1", unsafe_disable_check=True)
    assert last(p2).unsafe and "UNCHECKED" in last(p2).checked


def test_unsafe_remove_if_is_recorded_unsafe_unless_proven():
    p = P("""
def f(N: size, y: f32[N]):
    assert N >= 2
    for i in seq(0, N):
        if N >= 2:
            y[i] = 1.0
        if i >= 1:
            y[i] = 2.0
""")
    p1 = unsafe_remove_if(p, "if N >= 2: _")
    assert not last(p1).unsafe
    same(p, p1, {"N": 3})
    p2 = unsafe_remove_if(p1, "if _: _")
    assert last(p2).unsafe and "UNSAFE" in last(p2).checked
