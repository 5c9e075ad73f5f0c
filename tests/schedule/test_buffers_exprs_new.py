"""mult_dim, resize_dim (and its fold), unroll_buffer, delete_buffer, reuse_buffer,
rewrite_expr, commute_expr, inline_assign, merge_writes, lift_reduce_constant,
extract_subproc, set_window, insert_window: differential tests and located refusals."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_util import P, last, same

from exogpu_verify.ir import nodes as N
from exogpu_verify.schedule import (SchedulingError, call_eqv, commute_expr, delete_buffer,
                                    divide_dim, divide_loop, extract_subproc, inline,
                                    inline_assign, insert_window, lift_reduce_constant,
                                    merge_writes, mult_dim, resize_dim, reuse_buffer,
                                    rewrite_expr, set_window, simplify, unroll_buffer)

FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TILE = """
def f(N: size, A: f32[N, 8], y: f32[N]):
    for i in seq(0, N):
        t: f32[8] @ DRAM
        for j in seq(0, 8):
            t[j] = A[i, j] * 2.0
        for j in seq(0, 8):
            y[i] += t[j]
"""


# ---------------------------------------------------------------- mult_dim


@FAST
@given(q=st.sampled_from([2, 4]), n=st.integers(1, 4))
def test_mult_dim_inverts_divide_dim(q, n):
    p = P(TILE)
    p1 = divide_dim(p, "t : _", 0, q)
    p2 = simplify(mult_dim(p1, "t : _", 0, 1))
    assert p2.find("t : _").node().type.shape[0] == N.Const(8, p2.find(
        "t : _").node().type.shape[0].type) or "t: f32[8]" in str(p2)
    same(p, p2, {"N": n})
    assert "bijection" in p2.provenance[-2].checked


def test_mult_dim_windows_and_refusals():
    p = P("""
def g(x: [f32][4]):
    for k in seq(0, 4):
        x[k] = 1.0

def f(A: f32[2, 4]):
    t: f32[2, 4] @ DRAM
    for a in seq(0, 2):
        g(t[a, 0:4])
    for a in seq(0, 2):
        for b in seq(0, 4):
            A[a, b] = t[a, b]
""".split("\n\ndef f")[0] + "\n")
    g = p
    q = P("""
def f(A: f32[2, 4]):
    t: f32[2, 4] @ DRAM
    for a in seq(0, 2):
        g(t[a, 0:4])
    for a in seq(0, 2):
        for b in seq(0, 4):
            A[a, b] = t[a, b]
""", {"g": g})
    q1 = mult_dim(q, "t : _", 0, 1)
    assert "g(t[4 * a:4 * a + 4])" in str(q1)
    same(q, q1, {})
    with pytest.raises(SchedulingError, match="constant extent"):
        mult_dim(P(TILE.replace("t: f32[8]", "t: f32[N, 8]").replace("t[j]", "t[i, j]")),
                 "t : _", 1, 0)
    q2 = P("""
def f(A: f32[2, 4]):
    t: f32[2, 4] @ DRAM
    for b in seq(0, 4):
        g(t[0:2, b])
""".replace("g(t[0:2, b])", "g2(t[0:2, b])"), {"g2": _g2()})
    with pytest.raises(SchedulingError, match="strided or reordered") as e:
        mult_dim(q2, "t : _", 0, 1)
    assert e.value.line == q2.find("t : _").node().srcinfo.line


def _g2():
    return P("""
def g2(x: [f32][2]):
    for k in seq(0, 2):
        x[k] = 1.0
""")


# ---------------------------------------------------------------- resize_dim


def test_resize_dim_offset():
    p = P("""
def f(A: f32[16], y: f32[4]):
    t: f32[16] @ DRAM
    for j in seq(4, 8):
        t[j] = A[j] * 2.0
    for j in seq(4, 8):
        y[j - 4] = t[j]
""")
    p1 = resize_dim(p, "t : _", 0, 4, 4)
    assert "t: f32[4]" in str(p1)
    same(p, p1, {})
    with pytest.raises(SchedulingError, match="may fall outside"):
        resize_dim(p, "t : _", 0, 3, 4)


RING = """
def f(N: size, A: f32[N], y: f32[N]):
    t: f32[N] @ DRAM
    for i in seq(0, N):
        t[i] = A[i] * 2.0
        y[i] = t[i] + 1.0
"""


@pytest.mark.parametrize("n", [1, 3, 6])
def test_resize_dim_fold_circular_buffer(n):
    p = P(RING)
    p1 = resize_dim(p, "t : _", 0, 2, 0, fold=True)
    assert "t: f32[2]" in str(p1) and "t[i % 2]" in str(p1)
    same(p, p1, {"N": n})


def test_resize_dim_fold_refuses_too_few_slots():
    p = P("""
def f(N: size, A: f32[N], y: f32[N]):
    assert N >= 3
    t: f32[N] @ DRAM
    for i in seq(0, N):
        t[i] = A[i] * 2.0
    for i in seq(0, N):
        y[i] = t[i]
""")
    with pytest.raises(SchedulingError, match="overwrite the slot"):
        resize_dim(p, "t : _", 0, 2, 0, fold=True)


# ---------------------------------------------------------------- unroll / delete / reuse


def test_unroll_buffer():
    p = P("""
def f(A: f32[8], y: f32[8]):
    t: f32[2, 4] @ DRAM
    for j in seq(0, 4):
        t[0, j] = A[j]
        t[1, j] = A[j + 4] * 2.0
    for j in seq(0, 4):
        y[j] = t[1, j] + t[0, j]
""")
    p1 = unroll_buffer(p, "t : _", 0)
    assert "t_0: f32[4]" in str(p1) and "t_1: f32[4]" in str(p1)
    same(p, p1, {})
    with pytest.raises(SchedulingError, match="not a constant"):
        unroll_buffer(p, "t : _", 1)


def test_delete_and_reuse_buffer():
    p = P("""
def f(A: f32[4], y: f32[4]):
    t: f32[4] @ DRAM
    for j in seq(0, 4):
        t[j] = A[j]
    for j in seq(0, 4):
        y[j] = t[j]
    u: f32[4] @ DRAM
    for j in seq(0, 4):
        u[j] = y[j] * 2.0
    for j in seq(0, 4):
        y[j] += u[j]
    v: f32[4] @ DRAM
""")
    p1 = delete_buffer(p, "v : _")
    assert "v:" not in str(p1)
    same(p, p1, {})
    p2 = reuse_buffer(p1, "t : _", "u : _")
    assert "u" not in str(p2).split("def f", 1)[1].replace("f32", "")
    same(p, p2, {})
    with pytest.raises(SchedulingError, match="is used in its scope"):
        delete_buffer(p, "t : _")


def test_reuse_buffer_refusals():
    p = P("""
def f(A: f32[4], y: f32[4]):
    t: f32[4] @ DRAM
    for j in seq(0, 4):
        t[j] = A[j]
    u: f32[4] @ DRAM
    for j in seq(0, 4):
        u[j] = t[j] * 2.0
    for j in seq(0, 4):
        y[j] = u[j]
""")
    with pytest.raises(SchedulingError, match="still used|used in 'u'"):
        reuse_buffer(p, "t : _", "u : _")
    q = P("""
def f(A: f32[4], y: f32[4]):
    t: f32[4] @ DRAM
    for j in seq(0, 4):
        t[j] = A[j]
    for j in seq(0, 4):
        y[j] = t[j]
    u: f32[4] @ DRAM
    for j in seq(0, 4):
        y[j] += u[j]
""")
    with pytest.raises(SchedulingError, match="stale values"):
        reuse_buffer(q, "t : _", "u : _")


# ---------------------------------------------------------------- expressions

EXPR = """
def f(N: size, A: f32[N], B: f32[N], y: f32[N]):
    assert N % 4 == 0
    for i in seq(0, N):
        y[i] = A[i] * B[i] + A[i]
"""


def test_rewrite_expr_control():
    p = P("""
def f(N: size, A: f32[N], y: f32[N]):
    assert N % 4 == 0
    for i in seq(0, N / 4):
        for j in seq(0, 4):
            y[4 * i + j] = A[(16 * i + 4 * j) / 4]
""")
    e = p.find("y[_] = _").rhs().node().idx[0]
    from exogpu_verify.schedule.cursors import ExprCursor

    path = p.find("y[_] = _").path()
    c = ExprCursor(p, path, (("rhs",), ("idx", 0)))
    assert c.node() == e
    p1 = rewrite_expr(p, c, "4 * i + j")
    same(p, p1, {"N": 8})
    with pytest.raises(SchedulingError, match="cannot prove") as err:
        rewrite_expr(p, c, "4 * i")
    assert err.value.line == p.find("y[_] = _").node().srcinfo.line
    with pytest.raises(SchedulingError, match="data expression"):
        rewrite_expr(p, p.find("y[_] = _").rhs(), "A[0]")


def test_commute_expr():
    p = P(EXPR)
    p1 = commute_expr(p, ["A[i] * B[i]", "A[i] * B[i] + A[i]"])
    assert "y[i] = A[i] + B[i] * A[i]" in str(p1)
    same(p, p1, {"N": 8})
    with pytest.raises(SchedulingError, match="not a \\+ or \\*"):
        commute_expr(p, "A[i]")


def test_inline_assign():
    p = P("""
def f(N: size, A: f32[N], y: f32[N]):
    for i in seq(0, N):
        x: f32 @ DRAM
        x = A[i]
        y[i] = x * 2.0 + x
""")
    p1 = inline_assign(p, "x = _")
    assert "y[i] = A[i] * 2.0 + A[i]" in str(p1)
    same(p, p1, {"N": 5})
    q = P("""
def f(N: size, A: f32[N], y: f32[N]):
    for i in seq(0, N):
        x: f32 @ DRAM
        x = A[i]
        A[i] = 0.0
        y[i] = x
""")
    with pytest.raises(SchedulingError, match="written after"):
        inline_assign(q, "x = _")
    r = P("""
def f(N: size, A: f32[N], y: f64[N]):
    for i in seq(0, N):
        x: f32 @ DRAM
        x = A[i] * 3.0
        y[i] = x * 2.0
""")
    with pytest.raises(SchedulingError, match="round differently"):
        inline_assign(r, "x = _")


@pytest.mark.parametrize("ops,unsafe", [(("=", "="), False), (("+=", "="), False),
                                        (("=", "+="), False), (("+=", "+="), True)])
def test_merge_writes(ops, unsafe):
    a, b = ops
    p = P(f"""
def f(N: size, A: f32[N], B: f32[N], y: f32[N]):
    for i in seq(0, N):
        y[i] {a} A[i] * 2.0
        y[i] {b} B[i]
""")
    p1 = merge_writes(p, p.find_loop("i").body())
    assert last(p1).unsafe == unsafe
    same(p, p1, {"N": 6}, bitwise=not unsafe)


def test_merge_writes_refusals():
    p = P("""
def f(N: size, A: f32[N], y: f32[N]):
    for i in seq(0, N):
        y[i] = A[i]
        y[i] = y[i] + 1.0
""")
    with pytest.raises(SchedulingError, match="reads 'y'"):
        merge_writes(p, p.find_loop("i").body())
    q = P("""
def f(N: size, A: f32[N], y: f32[N + 1]):
    for i in seq(0, N):
        y[i] = A[i]
        y[i + 1] = A[i]
""")
    with pytest.raises(SchedulingError, match="same element"):
        merge_writes(q, q.find_loop("i").body())


def test_lift_reduce_constant():
    p = P("""
def f(N: size, c: f32[1], A: f32[N], y: f32[1]):
    x: f32 @ DRAM
    x = 0.0
    for i in seq(0, N):
        x += c[0] * A[i]
    y[0] = x
""")
    p1 = lift_reduce_constant(p, p.find("x = _").expand(0, 1))
    assert "x = c[0] * x" in str(p1) and last(p1).unsafe
    same(p, p1, {"N": 7}, bitwise=False)
    q = P("""
def f(N: size, A: f32[N], y: f32[1]):
    x: f32 @ DRAM
    x = 0.0
    for i in seq(0, N):
        x += A[i] * A[i]
    y[0] = x
""")
    with pytest.raises(SchedulingError, match="changes with the loop"):
        lift_reduce_constant(q, q.find("x = _").expand(0, 1))


# ---------------------------------------------------------------- procedures and windows


def test_extract_subproc_and_back():
    p = P("""
def f(N: size, A: f32[N, 8], y: f32[N]):
    assert N % 2 == 0
    for i in seq(0, N):
        for j in seq(0, 8):
            y[i] += A[i, j]
""")
    p1, sub = extract_subproc(p, p.find_loop("j"), "row_sum")
    assert "row_sum(" in str(p1) and sub.name == "row_sum"
    assert [q.name for q in sub.params] == ["N", "i", "A", "y"]
    same(p, p1, {"N": 4})
    p2 = inline(p1, "row_sum(_)")
    same(p, p2, {"N": 4})
    sub2 = divide_loop(sub, "j", 4, ["jo", "ji"], perfect=True)
    p3 = call_eqv(p1, "row_sum(_)", sub2)
    same(p, p3, {"N": 4})


def test_set_window_and_insert_window():
    p = P("""
def f(N: size, A: f32[N], y: f32[N]):
    for i in seq(0, N):
        y[i] = A[i]
""")
    p1 = set_window(p, "A")
    assert "A: [f32][N]" in str(p1)
    same(p, p1, {"N": 3})
    p2 = insert_window(p, p.find_loop("i").before(), "w", "A[1:N]")
    assert "w = A[1:N]" in str(p2)
    same(p, p2, {"N": 3})
    with pytest.raises(SchedulingError, match="control parameter"):
        set_window(p, "N")
