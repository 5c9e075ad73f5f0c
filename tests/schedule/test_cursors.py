"""Cursors: patterns, navigation, forwarding across rewrites."""

from __future__ import annotations

import pytest
from sched_util import P

from exogpu_verify.schedule.cursors import InvalidCursorError
from exogpu_verify.schedule import (BlockCursor, ExprCursor, GapCursor, InvalidCursor,
                                    SchedulingError, StmtCursor, divide_loop, find, forward,
                                    insert_pass, reorder_loops, reorder_stmts)
from exogpu_verify.ir import nodes as N

SRC = """
def f(N: size, A: f32[N, 8], B: f32[N, 8], C: f32[N]):
    for i in seq(0, N):
        t: f32 @ DRAM
        t = 0.0
        for j in seq(0, 8):
            t += A[i, j] * B[i, j]
        C[i] = t
    for i in seq(0, N):
        C[i] += 1.0
"""


@pytest.fixture
def p():
    return P(SRC)


def test_find_patterns(p):
    assert p.find_loop("j").node().iter == "j"
    assert p.find("for i in _: _ #1").path() == (("body", 1),)
    assert isinstance(p.find("t : _").node(), N.Alloc)
    assert isinstance(p.find("C[_] += _").node(), N.Reduce)
    assert isinstance(p.find("t += _").node(), N.Reduce)
    assert len(p.find("C[_] = _", many=True)) == 1
    assert len(find(p, "for i in _: _", many=True)) == 2
    e = p.find("A[i, j] * B[i, j]")
    assert isinstance(e, ExprCursor) and e.node().op == "*"
    blk = p.find("t : _ ; t = _")
    assert isinstance(blk, BlockCursor) and len(blk) == 2
    with pytest.raises(SchedulingError):
        p.find("for q in _: _")


def test_navigation(p):
    j = p.find_loop("j")
    assert j.parent().node().iter == "i"
    assert isinstance(j.prev().node(), N.Assign)
    assert isinstance(j.next().node(), N.Assign)
    assert isinstance(j.next().next(), InvalidCursor)
    body = j.parent().body()
    assert len(body) == 4 and body[0].node().name == "t"
    assert isinstance(j.before(), GapCursor) and j.after().anchor() == j
    assert len(j.expand(1, 1)) == 3
    assert isinstance(p.find_loop("i").parent(), InvalidCursor)
    assert j.body()[0].find("A[_]").node().name == "A"


def test_forwarding_through_rewrites(p):
    red = p.find("C[_] += _")
    tj = p.find("t += _")
    p1 = insert_pass(p, p.find_loop("i").before())
    p2 = divide_loop(p1, "j", 4, ["jo", "ji"], perfect=True)
    assert isinstance(p2.forward(red).node(), N.Reduce)
    assert p2.forward(red).node().name == "C"
    assert forward(p2, tj).node() == p2.find("t += _").node()
    # a cursor from p forwarded implicitly by a primitive
    with pytest.raises(SchedulingError, match="declared by the first"):
        reorder_stmts(p2, p.find("t : _").expand(0, 1))
    p3 = reorder_stmts(p2, p1.find("pass").expand(0, 1))
    assert isinstance(p3.forward(tj), StmtCursor)
    assert p3.forward(p1.find("pass")).path() == (("body", 1),)
    assert p3.forward(p.find("t : _")).node().name == "t"


def test_forward_unrelated_raises(p):
    q = P(SRC)
    with pytest.raises(InvalidCursorError, match="not derived"):
        forward(q, divide_loop(p, "j", 2, ["a", "b"]).find_loop("a"))


def test_reorder_loops_forwarding():
    p = P("""
def g(N: size, X: f32[N, N]):
    for i in seq(0, N):
        for j in seq(0, N):
            X[i, j] = 1.0
""")
    i, j = p.find_loop("i"), p.find_loop("j")
    q = reorder_loops(p, i)
    assert q.forward(i).node().iter == "i" and q.forward(j).node().iter == "j"
    assert q.forward(j).path() == (("body", 0),)
