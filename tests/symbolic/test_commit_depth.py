"""Commit groups awaited with depth N > 0 when several Arrive statements commit to the group
(issue 15): a prologue committing Stages-1 groups then a main loop waiting with
``Await(cg, ..., Stages-2)`` (CUTLASS's sm80 multistage pipeline), and the 2-stage double
buffer whose two branches each commit. The N newer groups may come from any of the
statements; each must be committed by the awaiting collective, after the released one, on
the awaited element. Every correct form is proven for all sizes and checked concretely at
several; every twin (a wait one group too shallow, the read of the group just committed, a
newer group on another element) is not proven and the concrete machine finds its hazard.
(Sm80 commit groups are per thread, so a newer group of other threads cannot be written.)"""

from __future__ import annotations

import pytest

from exogpu_verify.amir import check_sync_concrete
from exogpu_verify.analysis import analyze_static
from exogpu_verify.symbolic import check_sync_symbolic
from exogpu_verify.symbolic.obligations import MAX_NEWER_CHOICES
from symbolic_helpers import parse

SIZES = (128, 192, 320)  # from two iterations: the first read is at k = 1

# the 2-stage double buffer: each branch copies its stage and commits; the wait leaves the
# group just committed in flight and reads the previous one
TWO_BRANCHES = """
def two(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[2, 64] @ CudaSmemLinear
            cg: barrier[64] @ Sm80_CommitGroup
            for k in seq(0, N / 64):
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    if k % 2 == 0:
                        cp_async_ph(1, buf[0, t:t + 1], A[64 * k + t:64 * k + t + 1])
                        Arrive(Sm80_cp_async) >> cg[t]
                    else:
                        cp_async_ph(1, buf[1, t:t + 1], A[64 * k + t:64 * k + t + 1])
                        Arrive(Sm80_cp_async) >> cg[t]
                    if k >= 1:
                        Await(cg[t], cuda_in_order, {depth})
                        C[64 * (k - 1) + t] = buf[{stage}, t]
            for t in cuda_threads(0, 64, unit=cuda_thread):
                Await(cg[t], cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""

# CUTLASS's multistage form with 3 stages: the prologue commits groups 0 and 1; iteration k
# waits until at most 1 group is pending (group k is complete), reads stage k % 3, then
# copies group k + 2 into the stage read in iteration k - 1 and commits (an empty group
# after the last copy, as CUTLASS commits every iteration)
MULTISTAGE = """
def multistage(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    assert N / 64 >= 2
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[3, 64] @ CudaSmemLinear
            cg: barrier[64, 2] @ Sm80_CommitGroup
            for s in seq(0, 2):
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    cp_async_ph(1, buf[s, t:t + 1], A[64 * s + t:64 * s + t + 1])
                    Arrive(Sm80_cp_async) >> cg[t, {pro_elem}]
            for k in seq(0, N / 64):
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    Await(cg[t, 0], cuda_in_order, {depth}){mid}
                    C[64 * k + t] = buf[k % 3, t]
                    if k + 2 < N / 64:
                        cp_async_ph(1, buf[(k + 2) % 3, t:t + 1],
                                    A[64 * (k + 2) + t:64 * (k + 2) + t + 1])
                    Arrive(Sm80_cp_async) >> cg[t, 0]
            for t in cuda_threads(0, 64, unit=cuda_thread):
                Await(cg[t, 0], cuda_in_order, 0){epi}
            Fence(cuda_in_order, cuda_in_order)
"""


def _check(src: str):
    p = parse(src)
    assert analyze_static(p) == [], [d.message for d in analyze_static(p)]
    return p, check_sync_symbolic(p)


def _concrete(p):
    return [check_sync_concrete(p, {"N": n})[0] for n in SIZES]


CORRECT = {
    "two branches, depth 1": TWO_BRANCHES.format(depth=1, stage="(k - 1) % 2"),
    "multistage, 3 stages, depth 1": MULTISTAGE.format(depth=1, pro_elem="0", mid="", epi=""),
    "multistage, 3 stages, depth 0": MULTISTAGE.format(depth=0, pro_elem="0", mid="", epi=""),
}

TWINS = {
    # the group just committed is read: its copy may still be in flight
    "two branches, reads the group in flight": TWO_BRANCHES.format(depth=1,
                                                                   stage="k % 2"),
    # depth 2 leaves the previous group in flight too
    "two branches, depth 2": TWO_BRANCHES.format(depth=2, stage="(k - 1) % 2"),
    # at iteration 0 two groups are pending, and depth 2 waits for neither
    "multistage, 3 stages, depth 2": MULTISTAGE.format(depth=2, pro_elem="0", mid="", epi=""),
    # group s of the prologue on element s, the main loop's on element 0: group 1 is
    # awaited on its own element before iteration 1 reads it, but at iteration 0 the newer
    # group (1) is on another element than the wait, so group 0 is not released (the
    # concrete machine counts groups per element; the hardware per thread, so this is
    # stricter than the hardware, never looser)
    "multistage, the newer group on another element": MULTISTAGE.format(
        depth=1, pro_elem="s",
        mid="\n                    if k == 1:\n                        Await(cg[t, 1], cuda_in_order, 0)",
        epi=""),
}


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_several_arrive_statements_are_proven(name):
    p, res = _check(CORRECT[name])
    assert res.verdict == "proven", (name, res.reason)
    assert _concrete(p) == ["checked"] * len(SIZES)


@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_wait_that_does_not_cover_the_read_is_not_proven(name):
    p, res = _check(TWINS[name])
    assert res.verdict != "proven", name
    assert "several Arrive" not in (res.reason or ""), res.reason
    concrete = _concrete(p)
    assert "checked" not in concrete, (name, concrete)


def test_too_many_choices_of_newer_groups_is_unknown_and_says_why():
    # two statements and a depth whose choices exceed the encoded bound
    depth = next(n for n in range(1, 20) if 2 ** n > MAX_NEWER_CHOICES)
    p, res = _check(TWO_BRANCHES.format(depth=depth, stage="(k - 1) % 2"))
    assert res.verdict == "unknown"
    assert f"2^{depth} choices" in res.reason, res.reason
