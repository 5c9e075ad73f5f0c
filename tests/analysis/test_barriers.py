"""Barrier usage (kind "barrier-usage"): mechanisms, timelines, consistency, solitude."""

from __future__ import annotations

from dataclasses import replace

import pytest

from analysis_helpers import assert_error, assert_ok, marked_line, parse

from exogpu_verify.analysis import analyze_static

HEAD = """
def k(A: f32[1024] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim={B}, clusterDim={C}):
        for task in cuda_tasks(0, 1):
"""


def prog(body: str, B: int = 64, C: int = 1) -> str:
    lines = ["            " + ln for ln in body.strip("\n").splitlines()]
    return HEAD.format(B=B, C=C) + "\n".join(lines) + "\n"


MBAR = """
z: barrier[4 @ ring_buffer_by(2)] @ {mech}
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Arrive({L1}) >> z[k]  # {m1}
    for w in cuda_threads(0, 2, unit=cuda_warp):
        Await(z[k], {L2}, {N})  # {m2}
"""


def mbar(L1="cuda_in_order", L2="cuda_in_order", N=0, mark=1, mech="CudaMbarrier"):
    return prog(MBAR.format(L1=L1, L2=L2, N=N, mech=mech, m1="<-" if mark == 1 else "",
                            m2="<-" if mark == 2 else ""))


@pytest.mark.parametrize("L1", ["cuda_in_order", "cuda_temporal", "Sm80_cp_async"])
@pytest.mark.parametrize("L2", ["cuda_in_order", "cuda_generic_and_async_proxy"])
def test_mbarrier_accepted_timelines(L1, L2):
    assert_ok(mbar(L1, L2))


def test_mbarrier_pre_arrive_accepted():
    assert_ok(mbar(mech="CudaMbarrierPreArrive(2)"))


@pytest.mark.parametrize("L1,msg", [("tma_to_smem_async", "not supported"),
                                    ("wgmma_async", "not supported"),
                                    ("Sm80_generic", "not supported")])
def test_mbarrier_rejected_arrive_timelines(L1, msg):
    d = assert_error(mbar(L1=L1, mark=1), "barrier-usage", msg)
    if L1 == "tma_to_smem_async":
        assert "trailing barriers" in d.hint


@pytest.mark.parametrize("L2", ["wgmma_async", "Sm80_cp_async", "cuda_stream_sync"])
def test_mbarrier_rejected_await_timelines(L2):
    assert_error(mbar(L2=L2, mark=2), "barrier-usage", "not supported")


def test_mbarrier_await_count_must_be_zero():
    assert_error(mbar(N=1, mark=2), "barrier-usage", "N = 0")


def test_mbarrier_without_ring_is_single_phase_per_element():
    # each of the 4 elements is arrived on once and then awaited: accepted statically
    # (a second phase on an element is refuted by the checkers: test_oneshot_mbarrier.py)
    assert_ok(prog("""
z: barrier[4] @ CudaMbarrier
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Arrive(cuda_in_order) >> z[k]
        Await(z[k], cuda_in_order, 0)
"""))


def test_pre_arrive_needs_ring_dimension():
    assert_error(prog("""
z: barrier[4] @ CudaMbarrierPreArrive(1)  # <-
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Arrive(cuda_in_order) >> z[k]
        Await(z[k], cuda_in_order, 0)
"""), "barrier-usage", "ring_buffer_by")


def test_pre_arrive_larger_than_ring_rejected():
    lines = [ln.replace("  # <-", "") for ln in
             mbar(mech="CudaMbarrierPreArrive(3)").splitlines()]
    lines[4] += "  # <-"  # the allocation
    assert_error("\n".join(lines), "barrier-usage", "exceed the ring depth")


def test_missing_arrive_and_missing_await():
    d = assert_error(prog("""
z: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier  # <-
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Await(z[k], cuda_in_order, 0)
"""), "barrier-usage", "missing Arrive")
    assert "never arrived" in d.message
    assert_error(prog("""
z: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier  # <-
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Arrive(cuda_in_order) >> z[k]
"""), "barrier-usage", "missing Await")


def test_cp_async_mbarrier_cannot_multicast():
    assert_error(prog("""
z: barrier[2, 4 @ ring_buffer_by(2)] @ CudaMbarrier
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    for k in seq(0, 4):
        for i in cuda_threads(0, 1, unit=cuda_thread):
            Arrive(Sm80_cp_async) >> z[cta, k] >> z[:, k]  # <-
        for w in cuda_threads(0, 2, unit=cuda_warp):
            Await(z[cta, k], cuda_in_order, 0)
""", C=2), "barrier-usage", "within 1 CTA")


# -------------------------------------------------------------- commit groups, cluster sync

@pytest.mark.parametrize("mech,unit,L1", [
    ("Sm80_CommitGroup", "cuda_thread", "Sm80_cp_async"),
    ("Sm90_TmaCommitGroup", "cuda_warp", "tma_to_gmem_async"),
    ("Sm90_WgmmaCommitGroup", "cuda_warpgroup", "wgmma_async"),
])
@pytest.mark.parametrize("good", [True, False])
def test_commit_group_arrive_timeline(mech, unit, L1, good):
    src = prog(f"""
cg: barrier @ {mech}
for x in cuda_threads(0, 1, unit={unit}):
    Arrive({L1 if good else "cuda_in_order"}) >> cg  # <-
    Await(cg, cuda_generic_and_async_proxy, 1)
""", B=128)
    if good:
        assert_ok(src)
    else:
        assert_error(src, "barrier-usage", "wrong first sync-tl")


def test_commit_group_await_timeline_rejected():
    assert_error(prog("""
cg: barrier @ Sm80_CommitGroup
for x in cuda_threads(0, 1, unit=cuda_thread):
    Arrive(Sm80_cp_async) >> cg
    Await(cg, Sm80_cp_async, 0)  # <-
"""), "barrier-usage", "not supported")


def test_cluster_sync_rules():
    assert_ok(prog("""
cs: barrier @ CudaClusterSync
Arrive(Sm80_generic) >> cs
Await(cs, cuda_generic_and_async_proxy, 0)
""", C=2))
    assert_error(prog("""
cs: barrier @ CudaClusterSync
Arrive(wgmma_async) >> cs  # <-
Await(cs, cuda_in_order, 0)
""", C=2), "barrier-usage", "wrong first sync-tl")
    assert_error(prog("""
cs: barrier @ CudaClusterSync
Arrive(cuda_in_order) >> cs
Await(cs, cuda_in_order, 1)  # <-
""", C=2), "barrier-usage", "N = 0")


def test_solitary_commit_groups():
    assert_error(prog("""
a: barrier @ Sm80_CommitGroup
b: barrier @ Sm80_CommitGroup  # <-
for x in cuda_threads(0, 1, unit=cuda_thread):
    Arrive(Sm80_cp_async) >> a
    Await(a, cuda_in_order, 0)
    Arrive(Sm80_cp_async) >> b
    Await(b, cuda_in_order, 0)
"""), "barrier-usage", "another such live barrier 'a'")
    assert_ok(prog("""
for x in cuda_threads(0, 1, unit=cuda_thread):
    a: barrier @ Sm80_CommitGroup
    Arrive(Sm80_cp_async) >> a
    Await(a, cuda_in_order, 0)
for y in cuda_threads(0, 1, unit=cuda_thread):
    b: barrier @ Sm80_CommitGroup
    Arrive(Sm80_cp_async) >> b
    Await(b, cuda_in_order, 0)
"""))


def test_cluster_fence_while_cluster_sync_live_rejected():
    assert_error(prog("""
cs: barrier @ CudaClusterSync
Arrive(cuda_in_order) >> cs
Fence(cuda_in_order, cuda_in_order)  # <-
Await(cs, cuda_in_order, 0)
""", C=2), "barrier-usage", "cluster-wide Fence")


# -------------------------------------------------------------- consistency per barrier

def test_arrives_must_share_timeline_and_thread_count():
    assert_error(prog("""
z: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Arrive(cuda_in_order) >> z[k]
    for w in cuda_threads(0, 1, unit=cuda_warp):
        Arrive(cuda_temporal) >> z[k]  # <-
    Await(z[k], cuda_in_order, 0)
"""), "barrier-usage", "incompatible sync-tl")
    assert_error(prog("""
z: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Arrive(cuda_in_order) >> z[k]
    for w in cuda_threads(0, 1, unit=cuda_warp):
        Arrive(cuda_in_order) >> z[k]  # <-
    Await(z[k], cuda_in_order, 0)
"""), "barrier-usage", "inconsistent thread count")


def test_awaits_must_share_timeline():
    assert_error(prog("""
z: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        Arrive(cuda_in_order) >> z[k]
    for w in cuda_threads(0, 1, unit=cuda_warp):
        Await(z[k], cuda_in_order, 0)
        Await(z[k], cuda_generic_and_async_proxy, 0)  # <-
"""), "barrier-usage", "incompatible sync-tl Await")


def test_multicast_patterns_must_agree():
    assert_error(prog("""
z: barrier[2, 4 @ ring_buffer_by(2)] @ CudaMbarrier
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    for k in seq(0, 4):
        for i in cuda_threads(0, 1, unit=cuda_thread):
            Arrive(cuda_in_order) >> z[cta, k] >> z[:, k]
        for i2 in cuda_threads(0, 1, unit=cuda_thread):
            Arrive(cuda_in_order) >> z[cta, k]  # <-
        for w in cuda_threads(0, 2, unit=cuda_warp):
            Await(z[cta, k], cuda_in_order, 0)
""", C=2), "barrier-usage", "incompatible multicasts")


# -------------------------------------------------------------- trailing barriers, fences

TMA = """
s: f32[64] @ CudaSmemLinear
raw: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier
for k in seq(0, 4):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        tma_load(s, A[0:64]) >> raw[k]
        Arrive(cuda_temporal) >> raw[k]
    for w in cuda_threads(0, 2, unit=cuda_warp):
        Await(raw[k], cuda_generic_and_async_proxy, 0)
"""


def test_trailing_barrier_accepted():
    assert_ok(prog(TMA))


def test_trailing_barrier_presence_rechecked_on_built_ir():
    p = parse(prog(TMA))
    line = marked_line(prog(TMA.replace(">> raw[k]\n", ">> raw[k]  # <-\n", 1)))

    def edit(s, f):
        from exogpu_verify.ir import nodes as N
        if isinstance(s, N.Call):
            return f(s)
        if isinstance(s, (N.For, N.With, N.If)):
            return replace(s, body=tuple(edit(c, f) for c in s.body))
        return s

    q = p.with_body([edit(s, lambda c: replace(c, barriers=())) for s in p.body])
    ds = analyze_static(q)
    assert (ds[0].kind, ds[0].line) == ("barrier-usage", line)
    assert "requires a trailing barrier" in ds[0].message


@pytest.mark.parametrize("L1,L2,msg", [
    ("tma_to_smem_async", "cuda_in_order", "first sync-tl"),
    ("cuda_in_order", "Sm80_cp_async", "use cuda_in_order"),
    ("wgmma_fence_1", "cuda_in_order", "wgmma_fence_2"),
    ("cuda_in_order", "wgmma_fence_2", "wgmma_fence_1"),
])
def test_fence_timelines_rejected(L1, L2, msg):
    assert_error(prog(f"""
for wg in cuda_threads(0, 1, unit=cuda_warpgroup):
    Fence({L1}, {L2})  # <-
""", B=128), "barrier-usage", msg)


@pytest.mark.parametrize("L1,L2", [("Sm80_generic", "cuda_generic_and_async_proxy"),
                                   ("cuda_in_order", "cuda_in_order"),
                                   ("cuda_temporal", "tma_to_gmem_async")])
def test_fence_timelines_accepted(L1, L2):
    assert_ok(prog(f"Fence({L1}, {L2})"))


def test_trailing_barrier_on_instr_without_mechanism_rejected_on_built_ir():
    from exogpu_verify.ir import nodes as N

    src = prog("""
s: f32[32] @ CudaSmemLinear
raw: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier
for k in seq(0, 4):
    for w in cuda_threads(0, 1, unit=cuda_warp):
        warp_op(s)  # <-
        for i in cuda_threads(0, 1, unit=cuda_thread):
            Arrive(cuda_in_order) >> raw[k]
        Await(raw[k], cuda_in_order, 0)
""")
    p = parse(src)
    ref = N.BarrierRef("raw", (N.Point(N.Read("k", (), None)),))

    def edit(s):
        if isinstance(s, N.Call):
            return replace(s, barriers=(ref,))
        if isinstance(s, (N.For, N.With, N.If)):
            return replace(s, body=tuple(edit(c) for c in s.body))
        return s

    ds = analyze_static(p.with_body([edit(s) for s in p.body]))
    assert (ds[0].kind, ds[0].line) == ("barrier-usage", marked_line(src))
    assert "does not take a trailing barrier" in ds[0].message
