"""Loop rewrites: differential property tests (random legal applications keep interpret
results bitwise equal) and known-illegal applications refused with SchedulingError."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_util import P, last, same

from exogpu_verify.schedule import (SchedulingError, add_loop, cut_loop, divide_loop, fission,
                                    fuse, remove_loop, reorder_loops, rewrite_expr, shift_loop,
                                    simplify, unroll_loop)

FAST = settings(max_examples=20, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

GEMV = """
def gemv(N: size, M: size, A: f32[N, M], x: f32[M], y: f32[N]):
    for i in seq(0, N):
        for j in seq(0, M):
            y[i] += A[i, j] * x[j]
"""


@FAST
@given(q=st.integers(2, 5), tail=st.sampled_from(["guard", "cut", "cut_and_guard"]),
       loop=st.sampled_from(["i", "j"]), n=st.integers(1, 9), m=st.integers(1, 9))
def test_divide_loop_tails(q, tail, loop, n, m):
    p = P(GEMV)
    p1 = divide_loop(p, loop, q, ["o", "ii"], tail=tail)
    same(p, p1, {"N": n, "M": m})
    same(p, simplify(p1), {"N": n, "M": m})
    assert "exact index map" in last(p1).checked and not last(p1).unsafe


def test_divide_loop_perfect_needs_proof():
    p = P(GEMV)
    with pytest.raises(SchedulingError, match="cannot prove"):
        divide_loop(p, "i", 4, ["io", "ii"], perfect=True)
    q = P(GEMV.replace("y: f32[N]):", "y: f32[N]):\n    assert N % 8 == 0"))
    q1 = divide_loop(q, "i", 4, ["io", "ii"], perfect=True)
    assert "proved" in last(q1).checked
    same(q, q1, {"N": 16, "M": 3})
    with pytest.raises(SchedulingError, match="already used"):
        divide_loop(q, "i", 4, ["j", "ii"])


# random two-statement loop nests over one array: offsets make dependences
def nest(draw):
    ops = draw(st.lists(st.tuples(st.sampled_from(["=", "+="]), st.integers(0, 2),
                                  st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)),
                        min_size=1, max_size=2))
    lines = []
    for op, a, b, c, d in ops:
        lines.append(f"            X[i + {a}, j + {b}] {op} X[i + {c}, j + {d}] * 0.5 + 1.0")
    return ("def f(N: size, X: f32[N + 2, N + 2]):\n    for i in seq(0, N):\n"
            "        for j in seq(0, N):\n" + "\n".join(lines) + "\n")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_reorder_loops_sound(data):
    src = nest(data.draw)
    p = P(src)
    try:
        p1 = reorder_loops(p, "i j")
    except SchedulingError:
        return  # refusal is always sound
    same(p, p1, {"N": 4}, bitwise=not last(p1).unsafe, rtol=1e-3)


def test_reorder_loops_illegal():
    p = P("""
def f(N: size, X: f32[N + 1, N + 1]):
    for i in seq(0, N):
        for j in seq(0, N):
            X[i + 1, j] = X[i, j + 1]
""")
    with pytest.raises(SchedulingError) as e:
        reorder_loops(p, "i j")
    assert "reverses a dependence" in str(e.value) and "# <-- here" in str(e.value)
    assert "forbidden by" in str(e.value)


def test_reorder_loops_reduction_flagged():
    p = P("""
def f(N: size, A: f32[N, N], s: f32[1]):
    for i in seq(0, N):
        for j in seq(0, N):
            s[0] += A[i, j]
""")
    p1 = reorder_loops(p, "i j")
    assert last(p1).unsafe and "reassociation" in last(p1).checked
    same(p, p1, {"N": 5}, bitwise=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fission_sound(data):
    a, b, c, d = (data.draw(st.integers(0, 2)) for _ in range(4))
    src = f"""
def f(N: size, X: f32[N + 2], Y: f32[N + 2]):
    for i in seq(0, N):
        X[i + {a}] = Y[i + {b}] + 1.0
        Y[i + {c}] = X[i + {d}] * 2.0
"""
    p = P(src)
    try:
        p1 = fission(p, p.find("Y[_] = _").before())
    except SchedulingError:
        # refused exactly when a value flows backwards across the gap: the second statement
        # reads X written later by the first, or writes Y the first reads later
        assert d > a or c > b
        return
    assert not (d > a or c > b)
    same(p, p1, {"N": 5})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuse_sound(data):
    a, b = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    src = f"""
def f(N: size, X: f32[N + 2], Y: f32[N + 2]):
    for i in seq(0, N):
        X[i + {a}] = 3.0
    for j in seq(0, N):
        Y[j] = X[j + {b}]
"""
    p = P(src)
    try:
        p1 = fuse(p, p.find_loop("i"), p.find_loop("j"))
    except SchedulingError:
        assert b > a
        return
    assert b <= a
    same(p, p1, {"N": 5})


def test_fission_nested_and_errors():
    p = P("""
def f(N: size, X: f32[N, 4], Y: f32[N, 4]):
    for i in seq(0, N):
        for j in seq(0, 4):
            X[i, j] = 1.0
            Y[i, j] = 2.0
""")
    p1 = fission(p, p.find("Y[_] = _").before(), n_lifts=2)
    assert len(p1.body) == 2
    same(p, p1, {"N": 3})
    with pytest.raises(SchedulingError, match="both sides"):
        fission(p, p.find("X[_] = _").before())


@FAST
@given(cut=st.integers(0, 6), shift=st.integers(0, 4))
def test_cut_shift(cut, shift):
    p = P("""
def f(N: size, X: f32[N + 6]):
    assert N >= 6
    for i in seq(0, N):
        X[i] = X[i + 1] + X[i]
""")
    p1 = cut_loop(p, "i", cut)
    same(p, p1, {"N": 7})
    p2 = shift_loop(p, "i", shift)
    same(p, p2, {"N": 7})
    with pytest.raises(SchedulingError):
        cut_loop(p, "i", "N + 1")


def test_unroll_add_remove():
    p = P("""
def f(X: f32[4], Y: f32[4]):
    for i in seq(0, 4):
        X[i] = Y[i] * 2.0
""")
    same(p, unroll_loop(p, "i"), {})
    p2 = add_loop(p, p.find_loop("i"), "r", 3)
    same(p, p2, {})
    same(p, remove_loop(p2, "r"), {})
    q = P("""
def g(X: f32[4]):
    for i in seq(0, 4):
        X[i] += 1.0
""")
    with pytest.raises(SchedulingError, match="idempotent|reduces"):
        add_loop(q, q.find_loop("i"), "r", 2)
    q2 = add_loop(q, q.find_loop("i"), "r", 2, guard=True)
    same(q, q2, {})
    with pytest.raises(SchedulingError, match="trip count"):
        unroll_loop(P(GEMV), "i")




PARITY = """
def f(N: size, X: f32[N, 2], Y: f32[N], Z: f32[2, 4]):
    for j in seq(0, N):
        X[j, j % 2] += Y[j] * Z[j % 2, 1]
"""


def test_add_loop_guard_expression():
    """``add_loop(..., guard=e)``: the block runs at iteration ``e`` only (ping-pong: tile
    ``j`` on warpgroup ``j % 2``); accepted when ``0 <= e < hi`` is proven where the block
    runs, so it still runs exactly once; inside the guard ``j % 2`` can then be rewritten as
    the new iterator (``rewrite_expr``, reaching indices by ``idx()``), outside it cannot."""
    p = P(PARITY)
    p2 = add_loop(p, p.find("X[_] += _"), "w", 2, guard="j % 2")
    assert "if w == j % 2:" in str(p2)
    assert "guard w == j % 2" in p2.provenance[-1].checked
    same(p, p2, {"N": 5})
    p3 = rewrite_expr(p2, p2.find("X[_] += _").idx()[1], "w")
    p3 = rewrite_expr(p3, p3.find("Z[_]").idx()[0], "w")
    assert "X[j, w] += Y[j] * Z[w, 1]" in str(p3)
    same(p, p3, {"N": 5})
    # guard=True runs the block at w == 0 only, where j % 2 is not w
    q = add_loop(p, p.find("X[_] += _"), "w", 2, guard=True)
    with pytest.raises(SchedulingError, match="cannot prove j % 2 == w") as e:
        rewrite_expr(q, q.find("Z[_]").idx()[0], "w")
    assert e.value.line == q.find("X[_] += _").node().srcinfo.line


@pytest.mark.parametrize("guard, hi, why", [
    ("j % 3", "2", "cannot prove 0 <= j % 3 < 2"),      # j % 3 == 2: the block would not run
    ("j - 1", "N", "cannot prove 0 <= j - 1 < N"),       # j == 0
    ("w", "2", "unknown name 'w'"),                     # the new iterator: not in scope
    ("q", "2", "unknown name 'q'"),
])
def test_add_loop_guard_refused(guard, hi, why):
    p = P(PARITY)
    with pytest.raises(SchedulingError, match=why) as e:
        add_loop(p, p.find("X[_] += _"), "w", hi, guard=guard)
    assert e.value.line == p.find("X[_] += _").node().srcinfo.line


def test_add_loop_guard_in_range_over_sizes():
    """``guard="j"`` with ``hi = N``: ``0 <= j < N`` holds where the block runs."""
    p = P(PARITY)
    p2 = add_loop(p, p.find("X[_] += _"), "w", "N", guard="j")
    assert "if w == j:" in str(p2)
    same(p, p2, {"N": 4})


def test_expr_cursor_idx():
    """``idx()`` of a read gives its indices, of a window its point indices (None for an
    interval); anything else says it is neither."""
    p = P(PARITY)
    a, b = p.find("Z[_]").idx()
    assert (str(a.node().lhs.name), a.node().rhs.val, b.node().val) == ("j", 2, 1)
    w = P("""
def g(N: size, X: f32[N, 8], Y: f32[N, 8]):
    for j in seq(0, N):
        v = X[j + 1, 0:8]
""")
    pt, iv = w.find("v = _").rhs().idx()
    assert iv is None and pt.node().op == "+"
    with pytest.raises(TypeError, match="not a read or a window"):
        p.find("j % 2").idx()
