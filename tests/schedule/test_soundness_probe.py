"""Regression tests from the soundness probe of the scheduling rewrites: each is an
illegal application that was accepted as checked (and changed what the program computes)
before its fix."""

from __future__ import annotations

import pytest
from sched_util import P, same

from exogpu_verify.schedule import (SchedulingError, divide_loop, inline_assign, lift_alloc,
                                    merge_writes, sink_alloc, stage_mem)

# ---------------------------------------------------------------- divide_loop: cut tails

MAYBE_EMPTY = """
def f(N: size, y: f32[N + 4]):
    for i in seq(2, N):
        y[i + 2] = 1.0
"""


@pytest.mark.parametrize("tail", ["cut", "cut_and_guard"])
def test_divide_loop_cut_of_possibly_empty_loop_is_refused(tail):
    # N = 1: the loop runs nothing, but (N - 2) % 4 == 3, so the cut tail wrote y[0:3]
    p = P(MAYBE_EMPTY)
    with pytest.raises(SchedulingError, match="cannot prove 2 <= N") as e:
        divide_loop(p, "i", 4, ["io", "ii"], tail=tail)
    assert e.value.line == p.find_loop("i").node().srcinfo.line
    p1 = divide_loop(p, "i", 4, ["io", "ii"], tail="guard")
    for n in (1, 2, 3, 6, 9):
        same(p, p1, {"N": n})


@pytest.mark.parametrize("tail", ["cut", "cut_and_guard"])
def test_divide_loop_cut_of_non_empty_loop_is_accepted(tail):
    p = P(MAYBE_EMPTY.replace("y: f32[N + 4]):", "y: f32[N + 4]):\n    assert N >= 2"))
    p1 = divide_loop(p, "i", 4, ["io", "ii"], tail=tail)
    for n in (2, 3, 6, 9):
        same(p, p1, {"N": n})


# ------------------------------------- value flow: guards isl cannot read never cover

BOOL_GUARD_LIFT = """
def f(N: size, b: bool, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        if b and i == 0:
            for j in seq(0, 4):
                t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j]
"""


def test_lift_alloc_write_under_boolean_guard_does_not_cover():
    # the guard was dropped from the write's instances, so t[j] looked written in every
    # iteration; lifted, iteration 1 would read row 0 instead of a fresh (NaN) buffer
    p = P(BOOL_GUARD_LIFT)
    with pytest.raises(SchedulingError, match="carry values between iterations of 'i'"):
        lift_alloc(p, "t : _")


def test_sink_alloc_write_under_boolean_guard_does_not_cover():
    p = P("""
def f(N: size, b: bool, A: f32[N, 4], y: f32[N]):
    t: f32[4] @ DRAM
    for i in seq(0, N):
        if b and i == 0:
            for j in seq(0, 4):
                t[j] = A[i, j]
        for j in seq(0, 4):
            y[i] += t[j]
""")
    with pytest.raises(SchedulingError, match="carry values between iterations of 'i'"):
        sink_alloc(p, "t : _")


def test_stage_mem_keeps_the_load_under_a_boolean_guard():
    # the writes cover A[0:4] only when b holds; with the load omitted, the write-back
    # stored uninitialized values into A[4:8] (and into A[0:4] when b is false)
    p = P("""
def f(b: bool, A: f32[8], y: f32[8]):
    for j in seq(0, 8):
        if b and j < 4:
            A[j] = y[j]
""")
    p1 = stage_mem(p, p.find_loop("j"), "A[0:8]", "As")
    for b in (True, False):
        same(p, p1, {"b": b})


# ------------------------------------- inline_assign / merge_writes: window aliases


def test_inline_assign_sees_a_write_through_a_window_alias():
    # w[0] = 5.0 writes A[0]: inlined, B[0] would get 5.0 instead of the old A[0]
    p = P("""
def f(A: f32[4], B: f32[4]):
    x: f32 @ DRAM
    x = A[0]
    w = A[0:4]
    w[0] = 5.0
    B[0] = x
""")
    with pytest.raises(SchedulingError, match="'w' is written after the assignment"):
        inline_assign(p, "x = _")


def test_inline_assign_sees_a_read_through_a_window_alias():
    p = P("""
def f(A: f32[4], B: f32[4]):
    x: f32 @ DRAM
    w = A[0:4]
    x = w[0]
    A[0] = 5.0
    B[0] = x
""")
    with pytest.raises(SchedulingError, match="'A' is written after the assignment"):
        inline_assign(p, "x = _")


def test_merge_writes_sees_a_read_through_a_window_alias():
    # w[1] reads what the first write stored; merged, it would read the old A[1]
    p = P("""
def f(A: f32[4], B: f32[4]):
    w = A[0:4]
    A[1] = B[0]
    A[1] = w[1] + 1.0
""")
    with pytest.raises(SchedulingError, match="the second statement reads 'A'"):
        merge_writes(p, p.find("A[1] = _").expand(0, 1))


def test_inline_assign_without_alias_writes_is_accepted():
    p = P("""
def f(A: f32[4], B: f32[4]):
    x: f32 @ DRAM
    x = A[0] * 2.0
    w = B[0:4]
    w[1] = 3.0
    B[0] = x
""")
    same(p, inline_assign(p, "x = _"), {})
