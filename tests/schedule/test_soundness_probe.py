"""Regression tests from the soundness probe of the scheduling rewrites: each is an
illegal application that was accepted as checked (and changed what the program computes)
before its fix."""

from __future__ import annotations

import pytest
from sched_util import P, same

from exogpu_verify.schedule import SchedulingError, divide_loop

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
