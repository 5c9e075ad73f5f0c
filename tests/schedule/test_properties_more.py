"""Differential property tests for the primitives test_properties.py / test_loops.py do not
already exercise with random applications: random legal applications keep the sequential
meaning (``interpret`` bitwise equal, or allclose where the step records itself unsafe);
random illegal applications raise ``SchedulingError`` and nothing else."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_util import P, last, same

from exogpu_verify import (CudaDeviceFunction, CudaMbarrier, CudaWarps, cpu_in_order,
                           cuda_in_order, cuda_thread, cuda_warp)
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.memories import CudaRmem, CudaSmemLinear, DRAM
from exogpu_verify.ir.types import bf16, f16, f32, f64
from exogpu_verify.schedule import (CudaTasks, CudaThreads, SchedulingError, Seq, add_loop,
                                    bind_expr, call_eqv, delete_pass, divide_dim, divide_loop,
                                    expand_dim, inline, inline_window, insert_arrive,
                                    insert_await, insert_barrier_alloc, insert_fence,
                                    insert_pass, lift_alloc, rearrange_dim, remove_loop,
                                    rename, replace, set_loop_mode, set_memory, set_precision,
                                    set_ring_buffer, simplify, sink_alloc, unroll_loop,
                                    wrap_with_context)
from exogpu_verify.schedule.cursors import GapCursor, StmtCursor
from exogpu_verify.schedule.irtools import walk_paths

PROP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def attempt(f, *a, **kw):
    """``f(*a, **kw)``, or None when refused with SchedulingError (any other exception
    propagates and fails the test)."""
    try:
        return f(*a, **kw)
    except SchedulingError:
        return None


def refused(f, *a, **kw):
    try:
        f(*a, **kw)
    except SchedulingError:
        return True
    return False


def stmt_cursors(p):
    return [StmtCursor(p, path) for path, _ in walk_paths(p.body)]


def gaps(p):
    out = []
    for c in stmt_cursors(p):
        out += [c.before(), c.after()]
    return out


def check(p0, p1, sizes, seed=0):
    same(p0, p1, sizes, seed=seed, bitwise=not any(r.unsafe for r in p1.provenance))


# ---------------------------------------------------------------- rename / simplify

SIMPLE = """
def f(N: size, X: f32[N], Y: f32[N]):
    for i in seq(0, N):
        Y[i] = X[i] * 2.0 + 1.0
"""


@PROP
@given(name=st.text(alphabet="ab_1 9-.", min_size=0, max_size=5), seed=st.integers(0, 5))
def test_rename(name, seed):
    p = P(SIMPLE)
    p1 = attempt(rename, p, name)
    if not name.isidentifier():
        assert p1 is None
        return
    assert p1 is not None and p1.name == name and p1.body == p.body
    same(p, p1, {"N": 5}, seed=seed)


@PROP
@given(c=st.integers(1, 5), d=st.integers(0, 4), a=st.integers(-3, 3), b=st.integers(1, 3),
       seed=st.integers(0, 5))
def test_simplify_random_index_exprs(c, d, a, b, seed):
    d = d % c
    # (c*i + d) / c == i, (c*i + d) % c == d, b*i - (b-1)*i + a - a == i
    p = P(f"""
def f(X: f32[8], Y: f32[8], Z: f32[8]):
    for i in seq(0, 8):
        Y[({c} * i + {d}) / {c}] = X[{b} * i - {b - 1} * i + ({a}) - ({a})] + \
X[({c} * i + {d}) % {c}]
        Z[i + 0] += X[(i + {c}) - {c}] * 2.0
""")
    p1 = simplify(p)
    same(p, p1, {}, seed=seed)
    assert simplify(p1).body == p1.body  # idempotent


# ---------------------------------------------------------------- unroll / add / remove loop

@PROP
@given(lo=st.integers(0, 4), n=st.integers(0, 4),
       body=st.sampled_from(["X[i] = Y[i] * 2.0", "X[i + 1] += X[i] * 0.5",
                             "Y[0] = Y[0] + X[i]", "t: f32 @ DRAM\n        t = X[i]\n"
                                                     "        Y[i] = t * t"]),
       symbolic=st.booleans())
def test_unroll_loop(lo, n, body, symbolic):
    hi = "N" if symbolic else str(lo + n)
    p = P(f"""
def f(N: size, X: f32[10], Y: f32[10]):
    assert N <= 8
    for i in seq({lo}, {hi}):
        {body}
""")
    p1 = attempt(unroll_loop, p, "i")
    if symbolic or (body.startswith("t:") and n > 1):
        assert p1 is None
        return
    assert p1 is not None
    assert not any(isinstance(s, N.For) for _, s in walk_paths(p1.body))
    same(p, p1, {"N": 3})


ADD_BODIES = ["X[j] = Y[j] * 2.0", "X[j] += Y[j]", "X[j] = X[j] * 2.0", "X[j + 1] = X[j]",
              "Y[j] = X[j] + 1.0", "X[0] = Y[j]"]


@PROP
@given(body=st.sampled_from(ADD_BODIES), hi=st.sampled_from(["0", "1", "3", "N", "N - 3"]),
       guard=st.booleans(), seed=st.integers(0, 3))
def test_add_loop(body, hi, guard, seed):
    p = P(f"""
def f(N: size, X: f32[N + 1], Y: f32[N + 1]):
    assert N >= 2
    for j in seq(0, N):
        {body}
""")
    p1 = attempt(add_loop, p, p.find_loop("j"), "r", hi, guard=guard)
    if hi in ("0", "N - 3"):  # cannot prove the block still runs
        assert p1 is None
        return
    if not guard and hi != "1" and (
            "+=" in body or body in ("X[j] = X[j] * 2.0", "X[j + 1] = X[j]")):
        assert p1 is None  # not idempotent (a loop of one iteration is only a scope)
        return
    if guard:
        assert p1 is not None
    if p1 is not None:
        check(p, p1, {"N": 4}, seed)
        p2 = attempt(remove_loop, p1, "r")
        if not guard:
            assert p2 is not None and p2.body == p.body
            check(p, p2, {"N": 4}, seed)


@PROP
@given(body=st.sampled_from(ADD_BODIES + ["X[0] = Y[r]", "Y[1] = X[0] + 1.0"]),
       lo=st.integers(0, 3), hi=st.sampled_from(["0", "2", "N", "N - 2", "1"]),
       seed=st.integers(0, 3))
def test_remove_loop(body, lo, hi, seed):
    p = P(f"""
def f(N: size, X: f32[N + 1], Y: f32[N + 1]):
    assert N >= 2
    for j in seq(0, N):
        for r in seq({lo}, {hi}):
            {body}
""")
    p1 = attempt(remove_loop, p, "r")
    runs = {"0": False, "2": lo < 2, "1": lo < 1, "N": lo < 2, "N - 2": False}[hi]
    # idempotent for a fixed j (X[j + 1] = X[j] writes and reads different elements)
    idem = "+=" not in body and body != "X[j] = X[j] * 2.0"
    once = {"2": lo == 1, "1": lo == 0}.get(hi, False)  # exactly one iteration: a scope
    if not runs or "[r]" in body or not (idem or once):
        assert p1 is None
        return
    assert p1 is not None
    check(p, p1, {"N": 4}, seed)


# ---------------------------------------------------------------- pass

NEST = """
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        y[i] = 0.0
        for j in seq(0, 4):
            y[i] += A[i, j]
        if i > 1:
            y[i] = y[i] * 2.0
"""


@PROP
@given(picks=st.lists(st.integers(0, 100), min_size=1, max_size=4), seed=st.integers(0, 3))
def test_insert_delete_pass(picks, seed):
    p0 = P(NEST)
    p = p0
    for k in picks:
        g = gaps(p)
        p = insert_pass(p, g[k % len(g)])
        assert sum(isinstance(s, N.Pass) for _, s in walk_paths(p.body)) >= 1
        same(p0, p, {"N": 4}, seed=seed)
    p2 = delete_pass(p)
    assert p2.body == p0.body
    same(p0, p2, {"N": 4}, seed=seed)


# ---------------------------------------------------------------- lift / sink alloc

LIFT = """
def f(N: size, A: f32[N, 4], y: f32[N]):
    for i in seq(0, N):
        for j in seq(0, 4):
            t: f32 @ DRAM
            t = A[i, j] * 2.0
            y[i] += t
"""


@PROP
@given(n_lifts=st.integers(0, 3), seed=st.integers(0, 3))
def test_lift_sink_alloc(n_lifts, seed):
    p = P(LIFT)
    p1 = attempt(lift_alloc, p, "t : _", n_lifts)
    if n_lifts > 2:  # only two enclosing loops
        assert p1 is None
        return
    assert p1 is not None
    if n_lifts:
        assert isinstance(p1.body[0] if n_lifts == 2 else p1.body[0].body[0], N.Alloc)
    same(p, p1, {"N": 3}, seed=seed)
    p2 = p1
    for _ in range(n_lifts):
        # every read of t is covered by the write just before it: sinking back is legal
        p2 = sink_alloc(p2, "t : _")
        same(p, p2, {"N": 3}, seed=seed)
    assert p2.body == p.body
    assert refused(sink_alloc, p2, "t : _")  # nothing to sink into


def test_sink_alloc_nested_write():
    p = P("""
def f(N: size, A: f32[N, 4], y: f32[N]):
    t: f32 @ DRAM
    for i in seq(0, N):
        for j in seq(0, 4):
            t = A[i, j]
            y[i] = t
""")
    same(p, sink_alloc(p, "t : _"), {"N": 3})


@PROP
@given(uses=st.lists(st.sampled_from(["t = A[i]", "y[i] = t", "t = t + 1.0",
                                      "y[i] = A[i]"]), min_size=1, max_size=3),
       seed=st.integers(0, 3))
def test_sink_alloc_random_bodies(uses, seed):
    src = ("def f(N: size, A: f32[N], y: f32[N]):\n    t: f32 @ DRAM\n"
           "    for i in seq(0, N):\n" + "".join(f"        {u}\n" for u in uses))
    p = P(src)
    writes = [k for k, u in enumerate(uses) if u.startswith("t =")]
    reads = [k for k, u in enumerate(uses) if u in ("y[i] = t", "t = t + 1.0")]
    if not writes:
        return  # reads only uninitialized memory: nothing defined to compare
    carried = bool(reads) and reads[0] <= writes[0]
    p1 = attempt(sink_alloc, p, "t : _")
    if carried:
        assert p1 is None, uses
        return
    assert p1 is not None, uses
    same(p, p1, {"N": 3}, seed=seed)


# ---------------------------------------------------------------- dims

TMP = """
def f(N: size, A: f32[N, 8], y: f32[N]):
    for i in seq(0, N):
        t: f32[8] @ DRAM
        for j in seq(0, 8):
            t[j] = A[i, j] * 2.0
        for j in seq(0, 8):
            y[i] += t[j]
"""


@PROP
@given(size=st.sampled_from(["1", "3", "N", "i + 1", "0"]),
       idx=st.sampled_from(["0", "2", "i", "N - 1 - i", "i + 1", "N"]),
       q=st.integers(1, 9), seed=st.integers(0, 3))
def test_expand_divide_dim(size, idx, q, seed):
    p = P(TMP)
    p1 = attempt(expand_dim, p, "t : _", size, idx)
    legal = {"1": {"0"}, "3": {"0", "2"}, "N": {"0", "i", "N - 1 - i"}, "i + 1": {"0", "i"},
             "0": set()}[size]
    assert (p1 is not None) == (idx in legal), (size, idx)
    if p1 is not None:
        same(p, p1, {"N": 4}, seed=seed)
    p2 = attempt(divide_dim, p, "t : _", 0, q)
    if 8 % q:
        assert p2 is None
    else:
        assert p2 is not None
        same(p, p2, {"N": 4}, seed=seed)
        same(p, simplify(p2), {"N": 4}, seed=seed)


@PROP
@given(perm=st.one_of(st.permutations([0, 1, 2]),
                      st.lists(st.integers(0, 3), min_size=0, max_size=4)),
       seed=st.integers(0, 3))
def test_rearrange_dim(perm, seed):
    p = P("""
def f(A: f32[2, 3, 4], y: f32[2, 3, 4]):
    t: f32[2, 3, 4] @ DRAM
    for a in seq(0, 2):
        for b in seq(0, 3):
            for c in seq(0, 4):
                t[a, b, c] = A[a, b, c] * 3.0
    for c in seq(0, 4):
        for a in seq(0, 2):
            for b in seq(0, 3):
                y[a, b, c] = t[a, b, c] + t[1 - a, b, 3 - c]
""")
    p1 = attempt(rearrange_dim, p, "t : _", perm)
    if sorted(perm) != [0, 1, 2]:
        assert p1 is None
        return
    assert p1 is not None
    shape = [2, 3, 4]
    assert [e.val for e in p1.find("t : _").node().type.shape] == [shape[k] for k in perm]
    same(p, p1, {}, seed=seed)


# ---------------------------------------------------------------- bind_expr

@PROP
@given(which=st.sampled_from(["A[i] * B[i]", "A[i]", "B[i] + 1.0", "A[i] * B[i] + (B[i] + 1.0)",
                              "C[i]", "i"]),
       typ=st.sampled_from(["f32", "f16", "f64"]), op=st.sampled_from(["=", "+="]),
       seed=st.integers(0, 3))
def test_bind_expr(which, typ, op, seed):
    p = P(f"""
def f(N: size, A: {typ}[N], B: {typ}[N], C: f32[N]):
    for i in seq(0, N):
        C[i] {op} A[i] * B[i] + (B[i] + 1.0)
""")
    try:
        c = p.find(which, many=True)
    except Exception:
        c = []
    if not c:
        return
    p1 = attempt(bind_expr, p, c, "u")
    if which == "i" or which == "C[i]":
        assert p1 is None
        return
    assert p1 is not None, which
    same(p, p1, {"N": 5}, seed=seed)
    assert attempt(bind_expr, p1, p1.find(which, many=True)[-1:], "u") is None  # name taken


# ---------------------------------------------------------------- set_memory / set_precision

@PROP
@given(mem=st.sampled_from([DRAM, CudaRmem, CudaSmemLinear]), seed=st.integers(0, 3))
def test_set_memory(mem, seed):
    p = P(TMP)
    p1 = attempt(set_memory, p, "t : _", mem)
    if mem is DRAM:
        assert p1 is not None
    if p1 is not None:
        assert p1.find("t : _").node().mem is mem and not last(p1).unsafe
        same(p, p1, {"N": 4}, seed=seed)


@PROP
@given(typ=st.sampled_from([f16, f32, f64, bf16]), seed=st.integers(0, 3))
def test_set_precision(typ, seed):
    p = P(TMP)
    p1 = set_precision(p, "t : _", typ)
    assert last(p1).unsafe and "UNCHECKED" in last(p1).checked
    tol = {f16: 2e-2, bf16: 1e-1, f32: 1e-6, f64: 1e-5}[typ]
    same(p, p1, {"N": 4}, seed=seed, bitwise=False, rtol=tol, atol=tol * 8)


# ---------------------------------------------------------------- inline / inline_window

SCAL = """
def scal(n: size, x: [f32][n], a: f32[1]):
    for i in seq(0, n):
        x[i] = x[i] * a[0] + 1.0
"""


@PROP
@given(n=st.integers(1, 8), off=st.integers(0, 8), seed=st.integers(0, 3))
def test_inline(n, off, seed):
    off = off % (9 - n)  # keep the caller's window in bounds
    scal = P(SCAL)
    src = f"""
def f(N: size, X: f32[N, 8], a: f32[1]):
    for r in seq(0, N):
        scal({n}, X[r, {off}:{off + n}], a)
"""
    caller = P(src, {"scal": scal})
    p1 = inline(caller, "scal(_)")
    assert not any(isinstance(s, N.Call) for _, s in walk_paths(p1.body))
    same(caller, p1, {"N": 3}, seed=seed)


@PROP
@given(lo=st.integers(0, 4), w=st.integers(1, 4), k=st.integers(1, 4), seed=st.integers(0, 3))
def test_inline_window(lo, w, k, seed):
    k = min(k, w)
    p = P(f"""
def g(N: size, A: f32[N, 8], y: f32[N]):
    for i in seq(0, N):
        row = A[i, {lo}:{lo + w}]
        for j in seq(0, {k}):
            y[i] += row[j] * 2.0
            row[{k - 1} - j] = y[i]
""")
    p1 = inline_window(p, "row = _")
    same(p, p1, {"N": 3}, seed=seed)


# ---------------------------------------------------------------- call_eqv

@PROP
@given(q=st.integers(2, 5), tail=st.sampled_from(["guard", "cut", "cut_and_guard"]),
       change=st.booleans(), seed=st.integers(0, 3))
def test_call_eqv(q, tail, change, seed):
    scal = P(SCAL)
    caller = P("""
def f(N: size, X: f32[N, 8], a: f32[1]):
    for r in seq(0, N):
        scal(7, X[r, 0:7], a)
""", {"scal": scal})
    fast = simplify(divide_loop(scal, "i", q, ["io", "ii"], tail=tail))
    if change:
        fast = P(SCAL.replace("+ 1.0", "+ 2.0"))
        assert refused(call_eqv, caller, "scal(_)", fast)
        return
    p1 = call_eqv(caller, "scal(_)", fast)
    same(caller, p1, {"N": 3}, seed=seed)
    same(caller, inline(p1, "scal(_)"), {"N": 3}, seed=seed)


# ---------------------------------------------------------------- replace

AXPY = """
@instr(timeline=cpu_in_order_instr, codegen="axpy4({y}, {x});")
def axpy4(y: [f32][4] @ DRAM, x: [f32][4] @ DRAM):
    for i in seq(0, 4):
        y[i] += x[i] * 2.0
"""


@PROP
@given(sx=st.integers(0, 4), sy=st.integers(0, 4), stride=st.sampled_from([1, 1, 2]),
       op=st.sampled_from(["+=", "+=", "="]), k=st.sampled_from([4, 4, 3]),
       seed=st.integers(0, 3))
def test_replace(sx, sy, stride, op, k, seed):
    from exogpu_verify.ir.timelines import cpu_in_order_instr  # noqa: F401

    axpy = P(AXPY)
    p = P(f"""
def f(X: f32[16], Y: f32[16]):
    for io in seq(0, 2):
        for ii in seq(0, {k}):
            Y[4 * io + ii + {sy}] {op} X[4 * io + {stride} * ii + {sx}] * 2.0
""")
    p1 = attempt(replace, p, p.find_loop("ii"), axpy)
    if op == "=" or stride == 2 or k != 4:
        assert p1 is None
        return
    assert p1 is not None
    assert isinstance(p1.find("axpy4(_)").node(), N.Call)
    same(p, p1, {}, seed=seed)


# ---------------------------------------------------------------- GPU annotations

KERNEL = """
def k(N: size, X: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for t in cuda_tasks(0, N / 64):
            s: f32[64] @ CudaSmemLinear
            for i in seq(0, 64):
                s[i] = X[64 * t + i] * 3.0
            for j in seq(0, 64):
                X[64 * t + j] = s[63 - j] + 1.0
"""

MODES = [Seq(), CudaTasks(), CudaThreads(unit=cuda_thread), CudaThreads(unit=cuda_warp),
         "bogus"]


def _annotation_ok(p0, p1, sizes, seed):
    for r in p1.provenance:
        assert not r.unsafe and "annotation: sequential meaning unchanged" in r.checked
    same(p0, p1, sizes, seed=seed)


@PROP
@given(ops=st.lists(st.tuples(st.sampled_from(["i", "j", "t"]), st.integers(0, 4)),
                    min_size=1, max_size=3), seed=st.integers(0, 3))
def test_set_loop_mode(ops, seed):
    p0 = P(KERNEL)
    p = p0
    for loop, m in ops:
        p1 = attempt(set_loop_mode, p, loop, MODES[m])
        if MODES[m] == "bogus":
            assert p1 is None
        if p1 is not None:
            p = p1
    _annotation_ok(p0, p, {"N": 128}, seed)


@PROP
@given(k=st.integers(0, 100), ctx=st.sampled_from(["dev", "warps1", "warps2", "bad"]),
       seed=st.integers(0, 3))
def test_wrap_with_context(k, ctx, seed):
    p = P(KERNEL)
    p = set_loop_mode(set_loop_mode(p, "i", CudaThreads(unit=cuda_thread)), "j",
                      CudaThreads(unit=cuda_thread))
    cs = stmt_cursors(p)
    c = cs[k % len(cs)]
    obj = {"dev": CudaDeviceFunction(blockDim=64), "warps1": CudaWarps(0, 1),
           "warps2": CudaWarps(0, 2), "bad": "CudaWarps(0, 2)"}[ctx]
    p1 = attempt(wrap_with_context, p, c, obj)
    if ctx == "bad":
        assert p1 is None
        return
    if p1 is not None:
        _annotation_ok(P(KERNEL), p1, {"N": 128}, seed)


@PROP
@given(steps=st.lists(st.tuples(st.sampled_from(["fence", "arrive", "await", "bad_fence"]),
                                st.integers(0, 100), st.integers(0, 3)),
                      min_size=1, max_size=4),
       ring=st.tuples(st.integers(-1, 2), st.integers(-1, 4)), seed=st.integers(0, 3))
def test_sync_annotations(steps, ring, seed):
    p0 = P(KERNEL)
    p = set_loop_mode(set_loop_mode(p0, "i", CudaThreads(unit=cuda_thread)), "j",
                      CudaThreads(unit=cuda_thread))
    p = insert_barrier_alloc(p, p.find("s : _").after(), "z", [2], CudaMbarrier,
                             ring_dim_idx=0, ring_depth=2)
    assert refused(insert_barrier_alloc, p, p.find("s : _").after(), "z", [2], CudaMbarrier)
    assert refused(insert_barrier_alloc, p, p.find("s : _").after(), "w", [2], "mbarrier")
    for kind, g, n in steps:
        gs = [x for x in gaps(p) if isinstance(x, GapCursor)]
        gap = gs[g % len(gs)]
        if kind == "fence":
            p1 = attempt(insert_fence, p, gap, cuda_in_order, cuda_in_order)
        elif kind == "bad_fence":
            assert refused(insert_fence, p, gap, "cuda_in_order", cuda_in_order)
            p1 = attempt(insert_fence, p, gap, cpu_in_order, cuda_in_order)
        elif kind == "arrive":
            p1 = attempt(insert_arrive, p, gap, cuda_in_order, [f"z[{n % 2}]"])
            assert refused(insert_arrive, p, gap, cuda_in_order, ["nope[0]"])
        else:
            p1 = attempt(insert_await, p, gap, f"z[{n % 2}]", cuda_in_order, n % 2)
            assert refused(insert_await, p, gap, "q[0]", cuda_in_order, 0)
        if p1 is not None:
            p = p1
    dim, depth = ring
    p2 = attempt(set_ring_buffer, p, "z : _", dim, depth)
    if dim != 0 or depth < 1:
        assert p2 is None
    else:
        assert p2 is not None and p2.find("z : _").node().dims[0].ring_depth == depth
        p = p2
    assert refused(set_ring_buffer, p, "s : _", 0, 2)  # not a barrier
    _annotation_ok(p0, p, {"N": 128}, seed)
