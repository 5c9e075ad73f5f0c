"""Random applications of the issue-16 primitives: a legal application keeps the sequential
meaning (bitwise, or allclose where the step records itself unsafe); an illegal one raises
SchedulingError and nothing else. The programs are small random loop nests whose reads and
writes at offsets create dependences, so both outcomes occur."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_util import P, same

from exogpu_verify.schedule import (SchedulingError, divide_loop, fuse, inline_assign,
                                    lift_alloc, lift_scope, merge_writes, mult_loops,
                                    resize_dim, reuse_buffer, sink_alloc)

PROP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def attempt(f, *a, **kw):
    try:
        return f(*a, **kw)
    except SchedulingError:
        return None


def check(p0, p1, sizes, seed=0):
    unsafe = any(r.unsafe for r in p1.provenance[len(p0.provenance):])
    same(p0, p1, sizes, seed=seed, bitwise=not unsafe)


# ---------------------------------------------------------------- circular buffers

@PROP
@given(reads=st.lists(st.integers(0, 3), min_size=1, max_size=2), slots=st.integers(1, 4),
       seed=st.integers(0, 3))
def test_fold_random_windows(reads, slots, seed):
    """t[i] is written at step i and read at steps i + d: folding to n slots is legal iff
    every d < n (a value lives d steps); reads before the first write are refused."""
    lines = "\n".join(f"            y[i] += t[i - {d}]" for d in reads)
    p = P(f"""
def f(N: size, A: f32[N], y: f32[N]):
    assert N >= 6
    t: f32[N] @ DRAM
    for i in seq(0, N):
        t[i] = A[i] * 2.0
        if i >= 3:
{lines}
""")
    p1 = attempt(resize_dim, p, "t : _", 0, slots, 0, fold=True)
    legal = max(reads) < slots
    assert (p1 is not None) == legal, (reads, slots)
    if p1 is not None:
        check(p, p1, {"N": 7}, seed)


# ---------------------------------------------------------------- merges and inlining

STMT = st.sampled_from(["A[i] * 2.0", "B[i] + 1.0", "y[i] * 0.5", "A[i] + B[i]"])


@PROP
@given(op1=st.sampled_from(["=", "+="]), op2=st.sampled_from(["=", "+="]), e1=STMT, e2=STMT,
       seed=st.integers(0, 3))
def test_merge_writes_random(op1, op2, e1, e2, seed):
    p = P(f"""
def f(N: size, A: f32[N], B: f32[N], y: f32[N]):
    for i in seq(0, N):
        y[i] {op1} {e1}
        y[i] {op2} {e2}
""")
    p1 = attempt(merge_writes, p, p.find_loop("i").body())
    if "y[i]" in e2:
        assert p1 is None  # the second statement reads what the first wrote
        return
    assert p1 is not None
    check(p, p1, {"N": 5}, seed)


@PROP
@given(e=STMT, later=st.sampled_from(["", "A[i] = 0.0", "x = 1.0", "y[i] = 3.0"]),
       use=st.sampled_from(["x * 2.0", "x", "x + A[i]"]), seed=st.integers(0, 3))
def test_inline_assign_random(e, later, use, seed):
    body = f"        x = {e}\n" + (f"        {later}\n" if later else "") + \
        f"        y[i] = {use}\n"
    p = P("def f(N: size, A: f32[N], B: f32[N], y: f32[N]):\n    for i in seq(0, N):\n"
          "        x: f32 @ DRAM\n" + body)
    p1 = attempt(inline_assign, p, "x = _ #0")
    written = {"A[i] = 0.0": "A", "x = 1.0": "x", "y[i] = 3.0": "y"}.get(later)
    reads = {n for n in ("A", "B", "y") if f"{n}[i]" in e} | {"x"}
    if written in reads or "y" in reads:  # the use writes y too (refused conservatively)
        assert p1 is None, (e, later)
        return
    assert p1 is not None, (e, later, use)
    check(p, p1, {"N": 4}, seed)


# ---------------------------------------------------------------- loops

@PROP
@given(q=st.sampled_from([2, 4]), n=st.integers(1, 3), e=st.integers(-1, 1),
       seed=st.integers(0, 3))
def test_divide_mult_fuse_random(q, n, e, seed):
    p = P(f"""
def f(N: size, X: f32[8 * N + 2], Y: f32[8 * N + 2]):
    for i in seq(0, 8 * N):
        X[i + {1 + e}] = Y[i] * 2.0
    for i in seq(0, 8 * N):
        Y[i] = X[i + 1] + 1.0
""")
    p1 = divide_loop(p, "i", q, ["io", "ii"], perfect=True)
    p2 = mult_loops(p1, "io ii", "k")
    check(p, p2, {"N": n}, seed)
    p3 = attempt(fuse, p, p.find_loop("i"), p.find_loop("i #1"))
    # the second loop reads X[i + 1], written by the first at iteration i - e: fusing is
    # legal iff that is not a later iteration
    assert (p3 is None) == (e < 0)
    if p3 is not None:
        check(p, p3, {"N": n}, seed)


@PROP
@given(cond=st.sampled_from(["M > 2", "i > 2", "M > 1 and M < 4"]), m=st.integers(1, 5),
       seed=st.integers(0, 3))
def test_lift_scope_random(cond, m, seed):
    p = P(f"""
def f(N: size, M: size, A: f32[N], y: f32[N]):
    for i in seq(0, N):
        if {cond}:
            y[i] = A[i] * 2.0
        else:
            y[i] = A[i] + 1.0
""")
    p1 = attempt(lift_scope, p, "if _: _")
    assert (p1 is None) == ("i" in cond)
    if p1 is not None:
        check(p, p1, {"N": 4, "M": m}, seed)
        p2 = lift_scope(p1, p1.find_loop("i"))
        check(p, p2, {"N": 4, "M": m}, seed)


# ---------------------------------------------------------------- buffer lifetimes

@PROP
@given(first=st.sampled_from(["t[j] = A[i, j]", "y[i] += t[j]"]),
       second=st.sampled_from(["y[i] += t[j]", "t[j] = A[i, j] * 2.0"]),
       seed=st.integers(0, 3))
def test_lift_then_sink_random(first, second, seed):
    p = P(f"""
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        t: f32[4] @ DRAM
        for j in seq(0, 4):
            {first}
        for j in seq(0, 4):
            {second}
""")
    p1 = attempt(lift_alloc, p, "t : _")
    read_first = first.startswith("y") and second.startswith("t")
    if read_first:
        assert p1 is None  # the first read would see the previous row
        return
    if p1 is None:  # only reads: nothing to carry, but also nothing written first
        assert first.startswith("y") and second.startswith("y")
        return
    check(p, p1, {"N": 3}, seed)
    check(p, sink_alloc(p1, "t : _"), {"N": 3}, seed)


@PROP
@given(use_t_late=st.booleans(), write_u=st.booleans(), seed=st.integers(0, 3))
def test_reuse_buffer_random(use_t_late, write_u, seed):
    late = "        y[j] += t[j]\n" if use_t_late else ""
    wu = "        u[j] = A[j] * 3.0\n" if write_u else ""
    p = P(f"""
def f(A: f32[4], y: f32[4]):
    t: f32[4] @ DRAM
    for j in seq(0, 4):
        t[j] = A[j]
    for j in seq(0, 4):
        y[j] = t[j]
    u: f32[4] @ DRAM
    for j in seq(0, 4):
{wu}        y[j] += u[j] * 0.0 + 1.0
{late}""")
    p1 = attempt(reuse_buffer, p, "t : _", "u : _")
    assert (p1 is not None) == (write_u and not use_t_late), (use_t_late, write_u)
    if p1 is not None:
        check(p, p1, {}, seed)
