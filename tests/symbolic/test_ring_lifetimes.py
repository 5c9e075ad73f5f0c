"""Physical mbarrier phases across lifetimes (docs/semantics.md, "Physical phases of an
mbarrier ring"; ``exogpu_verify/amir/phases.py``). The code generator continues the running
index of an mbarrier from one lifetime of its allocation to the next (the next iteration of
the seq loop allocating it, the next task of the persistent loop), so laps that span two
lifetimes share hardware mbarriers too:

* the next lifetime's Awaits on pre-arrived indices are real waits on the previous
  lifetime's last releases (modelled: they order what those releases caught);
* a lap in the next lifetime is checked against the lap before it in this one;
* every arrival of a task completes and is ordered before the end of the task (the next
  task continues on the same mbarriers).
"""

from __future__ import annotations

import pytest

from exogpu_verify import verify
from exogpu_verify.amir import check_sync_concrete
from exogpu_verify.amir.oracle import OracleDeadlock
from rule_helpers import oracle_same, program, proven, refuted

#: a 4-stage TMA ring allocated once per iteration of ``j``: the producer of lifetime j + 1
#: refills stage k < 4 after its Await on ``empty[k]``, which waits on lifetime j's release
#: ``empty[K + k]`` (the running index continues; ``K % 4 == 0`` keeps stage k % 4 in step)
LIFETIMES = """
def rings(K: size, A: f32[4, K, 64] @ CudaGmemLinear, C: f32[4, K, 64] @ CudaGmemLinear):
    assert K % 4 == 0
    with CudaDeviceFunction(blockDim=96):
        for task in cuda_tasks(0, 1):
            buf: f32[4, 64] @ CudaSmemLinear
            for j in seq(0, 4):
                full: barrier[K @ ring_buffer_by(4)] @ CudaMbarrier
                empty: barrier[K @ ring_buffer_by(4)] @ CudaMbarrierPreArrive(4)
                for k in seq(0, K):
                    with CudaWarps(0, 1):
                        Await(empty[k], cuda_temporal, 0)
                        for t in cuda_threads(0, 1, unit=cuda_thread):
                            tma_load_ph(64, buf[k % 4, 0:64], A[j, k, 0:64]) >> full[k]
                            Arrive(cuda_temporal) >> full[k]
                    with CudaWarps(1, 3):
                        Await(full[k], cuda_in_order, 0)
                        for w in cuda_threads(0, 2, unit=cuda_warp):
                            for t in cuda_threads(0, 32, unit=cuda_thread):
                                C[j, k, 32 * w + t] = buf[k % 4, 32 * w + t]
                            Fence(cuda_in_order, cuda_generic_and_async_proxy)
                        Arrive(cuda_in_order) >> empty[k + 4]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


def test_the_next_lifetime_waits_on_the_last_releases():
    # the refill of stage k in lifetime j + 1 is ordered after lifetime j's last reads of it
    # only by the continued ring (its Awaits on empty[0..3] are pre-arrived in a fresh ring)
    p = proven(LIFETIMES, [{"K": 4}, {"K": 8}])
    oracle_same(p, {"K": 8})


def test_without_the_continued_running_index_the_refill_races():
    # K % 4 != 0: lifetime j's release of empty[K + k] frees stage (K + k) % 4, not stage k,
    # which lifetime j + 1 refills: a real race the continued ring exposes
    src = LIFETIMES.replace("    assert K % 4 == 0\n", "")
    r = verify(program(src))
    assert r.verdict == "refuted", r.summary()
    assert r.sizes["K"] % 4 != 0, r.sizes
    v, diags, _w, _ = check_sync_concrete(program(src), r.sizes)
    assert v == "refuted" and "buf" in diags[0].message, diags[0].message


#: ring ``full`` of extent 2 and depth 2 (one lap per lifetime) in a loop of 4 lifetimes: the
#: laps are in consecutive lifetimes. Every (j, k) has its own SMEM tile, so the data is
#: race-free; only the mbarriers are shared. SYNC is the end of each lifetime.
NEXT_LIFETIME = """
def laps(A: f32[4, 2, 64] @ CudaGmemLinear, C: f32[4, 2, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[4, 2, 64] @ CudaSmemLinear
            for j in seq(0, 4):
                full: barrier[2 @ ring_buffer_by(2)] @ CudaMbarrier
                for k in seq(0, 2):
                    with CudaWarps(0, 1):
                        for t in cuda_threads(0, 1, unit=cuda_thread):
                            tma_load_ph(64, buf[j, k, 0:64], A[j, k, 0:64]) >> full[k]
                            Arrive(cuda_temporal) >> full[k]
                    with CudaWarps(1, 2):
                        Await(full[k], cuda_in_order, 0)
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            C[j, k, t] = buf[j, k, t]
                            C[j, k, 32 + t] = buf[j, k, 32 + t]
SYNC
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


def _extent(src: str, e: int) -> str:
    return src.replace("barrier[2 @ ring_buffer_by(2)]", f"barrier[{e} @ ring_buffer_by(2)]"
                       ).replace("for k in seq(0, 2):", f"for k in seq(0, {e}):")


@pytest.mark.parametrize("extent", [2, 1], ids=["next-lifetime", "two-lifetimes-on"])
def test_a_lap_in_a_later_lifetime_is_checked(extent):
    # the producer never waits: a later lifetime's load re-arms the mbarrier of (j, k) while
    # (j, k)'s copy may be in flight (before, proven: one lap per lifetime). With extent 1
    # the next lap of (j, 0) is (j + 2, 0)
    src = _extent(NEXT_LIFETIME.replace("SYNC\n", ""), extent)
    d = refuted(src, "Arrive(cuda_temporal) >> full[k]", "hazard", {},
                earlier="tma_load_ph(64, buf[j, k")
    assert "full (physical mbarriers of ring_buffer_by(2))" in d.message, d.message
    assert f"[{3 - extent}, 0, " in d.message, d.message  # the lifetime of the later lap


@pytest.mark.parametrize("extent", [2, 1], ids=["next-lifetime", "two-lifetimes-on"])
def test_a_lifetime_ended_by_a_cta_fence_is_proven(extent):
    # the consumers awaited every phase of lifetime j before the Fence, so every arrival of
    # a later lifetime comes after
    src = NEXT_LIFETIME.replace("SYNC\n", " " * 16 + "Fence(cuda_in_order, cuda_in_order)\n")
    p = proven(_extent(src, extent), [{}])
    oracle_same(p, {})


def test_a_single_phase_mbarrier_in_a_loop_is_checked_across_iterations():
    # `barrier @ CudaMbarrier` has one phase per lifetime; iteration j + 1 reuses it
    src = NEXT_LIFETIME.replace("SYNC\n", "").replace(
        "full: barrier[2 @ ring_buffer_by(2)] @ CudaMbarrier",
        "full: barrier @ CudaMbarrier").replace(">> full[k]", ">> full").replace(
        "Await(full[k],", "Await(full,").replace("for k in seq(0, 2):", "for k in seq(0, 1):")
    d = refuted(src, "Arrive(cuda_temporal) >> full", "hazard", {},
                earlier="tma_load_ph(64, buf[j, k")
    assert "full (its physical mbarrier, one phase per lifetime)" in d.message, d.message


#: N tasks, each a producer thread releasing a consumer warp through a single-phase
#: mbarrier; END is the end of the task
TASKS = """
def tasks(N: size, A: f32[N, 32] @ CudaGmemLinear, C: f32[N, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[32] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            with CudaWarps(0, 1):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    tma_load_ph(32, buf[0:32], A[task, 0:32]) >> z
                    Arrive(cuda_temporal) >> z
            with CudaWarps(1, 2):
                Await(z, cuda_in_order, 0)
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    C[task, t] = buf[t]
END
"""


def test_a_task_ends_with_its_phases_complete():
    p = proven(TASKS.replace("END\n", " " * 12 + "Fence(cuda_in_order, "
                             "cuda_generic_and_async_proxy)\n"), [{"N": 1}, {"N": 3}])
    oracle_same(p, {"N": 3})


#: a producer thread hands GMEM data to a consumer warp through a single-phase mbarrier (no
#: shared memory, so only the mbarrier can leak into the next task)
HANDOFF = """
def handoff(N: size, A: f32[N, 32] @ CudaGmemLinear, S: f32[N, 32] @ CudaGmemLinear,
            C: f32[N, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            z: barrier @ CudaMbarrier
            with CudaWarps(0, 1):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    S[task, t] = A[task, t]
                Arrive(cuda_in_order) >> z
            with CudaWarps(1, 2):
                Await(z, cuda_in_order, 0)
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    C[task, t] = S[task, t]
END
"""


def test_a_task_whose_arrival_may_lap_the_next_task_is_refuted():
    # without a Fence at the end, the producer warp runs into the next task of the
    # persistent loop and arrives on the same hardware mbarrier before the consumer warp
    # of this task waited: the consumer's parity wait then misses its phase
    src = HANDOFF.replace("END\n", "")
    r = verify(program(src))
    assert r.verdict == "refuted", r.summary()
    d = r.diagnostics[0]
    assert "end of the lifetime of z" in d.message, d.message
    assert "next task" in " ".join(d.notes) + (d.hint or ""), (d.notes, d.hint)
    v, diags, _w, _ = check_sync_concrete(program(src), r.sizes)
    assert v == "refuted" and diags[0].message == d.message
    proven(HANDOFF.replace("END\n", " " * 12 + "Fence(cuda_in_order, cuda_in_order)\n"),
           [{"N": 1}, {"N": 2}])


#: a single-phase mbarrier used only in even tasks (TASK) or in lifetimes j < 3 (LOOP)
PARTIAL_TASK = """
def partial(N: size, A: f32[N, 32] @ CudaGmemLinear, C: f32[N, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            buf: f32[32] @ CudaSmemLinear
            z: barrier @ CudaMbarrier
            if task % 2 == 0:
                with CudaWarps(0, 1):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        tma_load_ph(32, buf[0:32], A[task, 0:32]) >> z
                        Arrive(cuda_temporal) >> z
                with CudaWarps(1, 2):
                    Await(z, cuda_in_order, 0)
                    for t in cuda_threads(0, 32, unit=cuda_thread):
                        C[task, t] = buf[t]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""

PARTIAL_LOOP = """
def partial(A: f32[4, 32] @ CudaGmemLinear, C: f32[4, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[4, 32] @ CudaSmemLinear
            for j in seq(0, 4):
                z: barrier @ CudaMbarrier
                if j < 3:
                    with CudaWarps(0, 1):
                        for t in cuda_threads(0, 1, unit=cuda_thread):
                            tma_load_ph(32, buf[j, 0:32], A[j, 0:32]) >> z
                            Arrive(cuda_temporal) >> z
                    with CudaWarps(1, 2):
                        Await(z, cuda_in_order, 0)
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            C[j, t] = buf[j, t]
                Fence(cuda_in_order, cuda_in_order)
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


@pytest.mark.parametrize("src,sizes", [(PARTIAL_TASK, {"N": 2}), (PARTIAL_LOOP, {})],
                         ids=["task", "loop"])
def test_a_single_phase_mbarrier_used_in_some_lifetimes_only_is_refuted(src, sizes):
    """Codegen advances the phase of a single-phase mbarrier at the end of every lifetime:
    a lifetime that does not arrive leaves it a phase behind, and the next use's parity
    wait passes at once (the ring-balance rule, now for single-phase mbarriers too)."""
    p = program(src)
    v, diags, _w, reason = check_sync_concrete(p, sizes)
    assert v == "refuted", reason
    assert diags[0].kind == "barrier-usage", diags[0].message
    assert "out of phase" in diags[0].message, diags[0].message
    assert verify(p).verdict != "proven"


@pytest.mark.parametrize("sync", [False, True], ids=["unsynchronized", "fenced"])
def test_a_ring_in_nested_loops_orders_each_lifetime_before_the_next(sync):
    """Lifetimes of a ring allocated inside two loops of a task are not modelled lap by lap
    across the outer loop: each lifetime's arrivals must instead be complete and ordered
    before its end for every thread (the rule at the end of a task, applied to every
    lifetime): strict, and sound."""
    src = NEXT_LIFETIME.replace(
        "            for j in seq(0, 4):\n",
        "            for i in seq(0, 2):\n             for j in seq(0, 2):\n").replace(
        "buf[j, k", "buf[2 * i + j, k").replace("A[j, k", "A[2 * i + j, k").replace(
        "C[j, k", "C[2 * i + j, k")
    src = src.replace("SYNC\n", " " * 16 + "Fence(cuda_in_order, cuda_in_order)\n" if sync
                      else "")
    p = program(src)
    r = verify(p)
    if sync:
        assert r.verdict == "proven", r.summary()
        assert check_sync_concrete(p, {})[0] == "checked"
    else:
        assert r.verdict == "refuted", r.summary()
        assert "full (physical mbarriers" in r.diagnostics[0].message


#: two consumer warps take turns (lifetime j is warp j % 2's, like the ping-pong GEMM's
#: warpgroups); ``done[j]`` tells the producer, and with WAIT the next consumer, that
#: lifetime j is consumed
LATE_WAITER = """
def late(A: f32[4, 2, 64] @ CudaGmemLinear, C: f32[4, 2, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=96):
        for task in cuda_tasks(0, 1):
            buf: f32[4, 2, 64] @ CudaSmemLinear
            done: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier
            for j in seq(0, 4):
                full: barrier[2 @ ring_buffer_by(2)] @ CudaMbarrier
                for k in seq(0, 2):
                    with CudaWarps(0, 1):
                        if j >= 1 and k == 0:
                            Await(done[j - 1], cuda_temporal, 0)
                        for t in cuda_threads(0, 1, unit=cuda_thread):
                            tma_load_ph(64, buf[j, k, 0:64], A[j, k, 0:64]) >> full[k]
                            Arrive(cuda_temporal) >> full[k]
                    with CudaWarps(1, 3):
                        for w in cuda_threads(0, 2, unit=cuda_warp):
                            if w == j % 2:
WAIT
                                Await(full[k], cuda_in_order, 0)
                                for t in cuda_threads(0, 32, unit=cuda_thread):
                                    C[j, k, t] = buf[j, k, t]
                                    C[j, k, 32 + t] = buf[j, k, 32 + t]
                                if k == 1:
                                    Arrive(cuda_in_order) >> done[j]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""

_ORDERED = (" " * 32 + "if j >= 1 and k == 0:\n" + " " * 36 + "Await(done[j - 1], cuda_temporal, 0)\n")


def test_a_waiter_that_starts_a_lifetime_late_is_refuted():
    """The warp of lifetime j + 1 idles through lifetime j and then waits on full(j + 1, 0):
    the same hardware mbarrier as full(j, 0), whose phase may not have completed. Its parity
    wait then passes on the phase before, and it reads the tile before the copy lands (the
    shipped ping-pong GEMM had this bug: tests/amir/test_oracle.py caught it once the oracle
    continued phases across lifetimes). The phase obligation is checked where the wait is
    issued, before the Await: its own virtual match orders nothing."""
    src = LATE_WAITER.replace("WAIT\n", "")
    d = refuted(src, "Await(full[k], cuda_in_order, 0)", "hazard", {},
                earlier="tma_load_ph(64, buf[j, k")
    assert "full (parity waits on the physical mbarriers of ring_buffer_by(2))" in d.message, \
        d.message
    with pytest.raises((AssertionError, OracleDeadlock)):  # the hardware model sees it too
        oracle_same(program(src), {}, seeds=5)


def test_a_waiter_ordered_after_the_previous_lifetime_is_proven():
    p = proven(LATE_WAITER.replace("WAIT\n", _ORDERED), [{}])
    oracle_same(p, {})
