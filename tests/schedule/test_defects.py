"""Regression tests for the scheduling defects of issue 16: each failed before its fix."""

from __future__ import annotations

import pytest
from sched_util import P, same

from exogpu_verify.ir import nodes as N
from exogpu_verify.schedule import (SchedulingError, divide_dim, lift_alloc, simplify,
                                    sink_alloc)
from exogpu_verify.schedule.irtools import walk

# ---------------------------------------------------------------- lift_alloc soundness

READ_FIRST = """
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        for j in seq(0, 4):
            y[i] += t[j]
        for j in seq(0, 4):
            t[j] = A[i, j]
"""


def test_lift_alloc_of_buffer_read_before_written_is_refused():
    # fresh each iteration, t[j] is NaN when read; lifted, it would be the previous row
    p = P(READ_FIRST)
    with pytest.raises(SchedulingError) as e:
        lift_alloc(p, "t : _")
    assert "carry values between iterations of 'i'" in e.value.message
    assert "y[i] += t[j]" in str(e.value) or "t[j]" in e.value.message
    assert e.value.line == p.find("t : _").node().srcinfo.line  # the allocation


def test_lift_alloc_partially_covered_read_refused():
    p = P("""
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        for j in seq(0, 2):
            t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j]
        for j in seq(2, 4):
            t[j] = A[i, j]
""")
    with pytest.raises(SchedulingError, match="carry values"):
        lift_alloc(p, "t : _")


def test_lift_alloc_written_first_is_accepted_and_equal():
    p = P("""
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        for j in seq(0, 4):
            t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j]
""")
    p1 = lift_alloc(p, "t : _")
    assert isinstance(p1.body[0], N.Alloc)
    same(p, p1, {"N": 3})
    p2 = sink_alloc(p1, "t : _")
    same(p, p2, {"N": 3})


def test_lift_alloc_never_written_before_is_accepted():
    # reads of elements no iteration writes see NaN either way
    p = P("""
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[8] @ DRAM
        for j in seq(0, 4):
            t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j] + t[j + 4]
""")
    same(p, lift_alloc(p, "t : _"), {"N": 3})


# ---------------------------------------------------------------- simplify: one call


def test_simplify_reaches_fixed_point_in_one_call():
    p = P("""
def f(A: f32[64]):
    t: f32[64] @ DRAM
    for wr in seq(0, 4):
        for lr in seq(0, 4):
            for r in seq(0, 4):
                t[16 * wr + 4 * lr + r] = A[16 * wr + 4 * lr + r]
    for i in seq(0, 64):
        A[i] = t[i]
""")
    q = divide_dim(divide_dim(p, "t : _", 0, 16), "t : _", 1, 4)
    a = simplify(q)
    assert simplify(a).body == a.body
    assert "t[wr, lr, r] = " in str(a)
    same(p, a, {})


# ---------------------------------------------------------------- located statements


def test_statements_made_by_rewrites_are_located():
    from exogpu_verify.schedule import stage_mem

    p = P("""
def f(N: size, A: f32[N], y: f32[N]):
    assert N % 4 == 0
    for i in seq(0, N / 4):
        for j in seq(0, 4):
            y[4 * i + j] = A[4 * i + j] * 2.0
""")
    loop = p.find_loop("j")
    p1 = stage_mem(p, loop, "A[4 * i:4 * i + 4]", "As")
    for s in walk(p1.body):
        assert s.srcinfo.line > 0 and s.srcinfo.file != "<generated>", s
    made = [s for s in walk(p1.body) if s.srcinfo.via]
    line = loop.node().srcinfo.line
    assert made and all(s.srcinfo.line == line for s in made)  # the staged loop's line
    assert all("step 1: stage_mem" in s.srcinfo.via for s in made)
