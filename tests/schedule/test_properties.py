"""Random schedules: any sequence of accepted rewrites keeps the sequential meaning
(bitwise unless a step records itself unsafe); refusals are always allowed."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_util import P, same

from exogpu_verify.schedule import (SchedulingError, divide_loop, fission, lift_alloc,
                                    reorder_loops, reorder_stmts, simplify, stage_mem)

SLOW_OK = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW_OK
@given(st.data())
def test_reorder_stmts_sound(data):
    arrays = ["X", "Y"]
    stmts = []
    for _ in range(2):
        w, r = data.draw(st.sampled_from(arrays)), data.draw(st.sampled_from(arrays))
        a, b = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
        op = data.draw(st.sampled_from(["=", "+="]))
        stmts.append(f"        {w}[i + {a}] {op} {r}[i + {b}] * 2.0")
    src = ("def f(N: size, X: f32[N + 2], Y: f32[N + 2]):\n    for i in seq(0, N):\n" +
           "\n".join(stmts) + "\n")
    p = P(src)
    try:
        p1 = reorder_stmts(p, p.find_loop("i").body())
    except SchedulingError:
        return
    same(p, p1, {"N": 4}, bitwise=not p1.provenance[-1].unsafe, rtol=1e-5)


GEMM = """
def mm(M: size, N: size, K: size, A: f32[M, K], B: f32[K, N], C: f32[M, N]):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]
"""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["divide", "reorder", "simplify"]),
                          st.integers(0, 10), st.integers(2, 3),
                          st.sampled_from(["guard", "cut", "cut_and_guard"])),
                min_size=1, max_size=6))
def test_random_schedules_of_gemm(ops):
    p0 = P(GEMM)
    p = p0
    fresh = iter(range(100))
    unsafe = False
    for op, k, q, tail in ops:
        loops = p.find("for _ in _: _", many=True)
        try:
            if op == "divide":
                c = loops[k % len(loops)]
                n = next(fresh)
                p = divide_loop(p, c, q, [f"o{n}", f"n{n}"], tail=tail)
            elif op == "reorder":
                c = loops[k % len(loops)]
                p = reorder_loops(p, c)
            else:
                p = simplify(p)
        except SchedulingError:
            continue
        unsafe |= p.provenance[-1].unsafe
    same(p0, p, {"M": 5, "N": 4, "K": 7}, bitwise=not unsafe)
    # every statement a rewrite made is located at a spec line (never <generated>:0)
    from exogpu_verify.schedule.irtools import walk

    assert all(s.srcinfo.line > 0 and s.srcinfo.file != "<generated>" for s in walk(p.body))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lo=st.integers(0, 3), width=st.integers(1, 6))
def test_stage_mem_random_windows(lo, width):
    p = P("""
def f(X: f32[8], Y: f32[8]):
    for i in seq(1, 5):
        Y[i] = X[i - 1] + X[i + 1]
""")
    try:
        p1 = stage_mem(p, p.find_loop("i"), f"X[{lo}:{lo + width}]", "Xs")
    except SchedulingError:
        assert lo > 0 or lo + width < 6 or lo + width > 8
        return
    assert lo == 0 and 6 <= lo + width <= 8
    same(p, p1, {})


def test_fission_then_lift():
    p = P("""
def f(N: size, A: f32[N], B: f32[N]):
    for i in seq(0, N):
        t: f32 @ DRAM
        t = A[i] * 2.0
        B[i] = t + 1.0
        A[i] = 0.0
""")
    try:
        fission(p, p.find("B[_] = _").before())
    except SchedulingError as e:
        assert "lift_alloc" in str(e)
    p1 = lift_alloc(p, "t : _")
    p2 = fission(p1, p1.find("A[_] = 0.0").before())
    same(p, p2, {"N": 6})
