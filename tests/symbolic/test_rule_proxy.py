"""The cross-proxy rule (docs/semantics.md, "Proxies"; LANGUAGE.md, "Synchronization"): a
generic-proxy access followed by an async-proxy access of the same element needs a proxy
Fence (``cuda_generic_and_async_proxy``) executed by the threads that made the generic
access, then synchronization that hands it on. Each family: the issue's example, variants
(read vs write, warp vs warpgroup vs CTA executors, Fence vs mbarrier paths, across loop
iterations, SMEM reuse after a free), and the correct twin, in both checkers."""

from __future__ import annotations

import pytest

from rule_helpers import concrete_only, line_of, oracle_same, proven, refuted

PROXY = "Fence(cuda_in_order, cuda_generic_and_async_proxy)"
INSERT_HINT = "insert Fence(cuda_in_order, cuda_generic_and_async_proxy) executed by the threads"

# ====================================================================== TMA ring (WAR)
# The example: consumers read a TMA-filled stage with ordinary loads and release it
# with an mbarrier Arrive; the producer's next TMA load overwrites the stage.
RING = """
def ring(K: size, A: f32[K, 64] @ CudaGmemLinear, C: f32[K, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=96):
        for task in cuda_tasks(0, 1):
            buf: f32[2, 64] @ CudaSmemLinear
            full: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier
            empty: barrier[K @ ring_buffer_by(2)] @ CudaMbarrierPreArrive(2)
            for k in seq(0, K):
                with CudaWarps(0, 1):
                    Await(empty[k], PRODUCER_L2, 0)
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        tma_load_ph(64, buf[k % 2, 0:64], A[k, 0:64]) >> full[k]
                        Arrive(cuda_temporal) >> full[k]
                with CudaWarps(1, 3):
                    Await(full[k], cuda_in_order, 0)
                    for w in cuda_threads(0, 2, unit=cuda_warp):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            C[k, 32 * w + t] = buf[k % 2, 32 * w + t]
                            WRITE
                        RELEASE
                    Arrive(cuda_in_order) >> empty[k + 2]
                    AFTER
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


def ring(release="pass", producer="cuda_temporal", write="pass", after="pass"):
    return (RING.replace("RELEASE", release).replace("PRODUCER_L2", producer)
            .replace("WRITE", write).replace("AFTER", after))


TMA_LINE = "tma_load_ph(64, buf"
RING_SIZES = [{"K": k} for k in (1, 2, 3, 5)]


def test_ring_release_without_proxy_fence_is_refuted():
    # the example: stage 0 read at k = 0, overwritten by the TMA load at k = 2
    d = refuted(ring(), TMA_LINE, "write-after-read hazard", {"K": 3}, hint=INSERT_HINT,
                earlier="C[k, 32 * w + t] = buf")
    assert "k=0" in " ".join(d.notes) and "k=2" in " ".join(d.notes)


def test_ring_release_with_per_warp_proxy_fence_is_proven():
    # the canonical form: each reading warp's proxy Fence, then the in-order mbarrier Arrive
    proven(ring(release=PROXY), RING_SIZES)


def test_ring_in_order_fence_is_named_in_the_hint():
    src = ring(release="Fence(cuda_in_order, cuda_in_order)")
    fence = line_of(src, "Fence(cuda_in_order, cuda_in_order)")
    refuted(src, TMA_LINE, "write-after-read hazard", {"K": 3},
            hint=f"add cuda_generic_and_async_proxy to the Fence at line {fence}")


def test_ring_proxy_fence_by_the_producer_does_not_count():
    # the proxy fence must be executed by the threads that made the generic access
    refuted(ring(producer="cuda_generic_and_async_proxy"), TMA_LINE, "write-after-read hazard",
            {"K": 3}, hint=INSERT_HINT)


def test_ring_proxy_fence_by_one_reading_warp_only_is_refuted():
    d = refuted(ring(release="if w == 0:\n                            " + PROXY), TMA_LINE,
                "write-after-read hazard", {"K": 3}, hint=INSERT_HINT)
    assert "read of buf by thread 64 of" in d.message  # warp 2 (w == 1) did not fence


def test_ring_proxy_fence_after_the_release_does_not_order_it():
    src = ring(after="for w in cuda_threads(0, 2, unit=cuda_warp):\n"
                     "                        " + PROXY)
    refuted(src, TMA_LINE, "write-after-read hazard", {"K": 3})


def test_ring_consumer_writes_need_the_proxy_fence_too():
    # a generic write of the stage, then the producer's TMA overwrite (WAW through proxies)
    write = "buf[k % 2, 32 * w + t] = 0.0"
    refuted(ring(write=write), TMA_LINE, "write-after-write hazard", {"K": 3},
            hint=INSERT_HINT)
    proven(ring(write=write, release=PROXY), RING_SIZES)


# ====================================================================== CTA Fence (WAR)
CTA_LOOP = """
def loop(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[64] @ CudaSmemLinear
            z: barrier[N / 64 @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, N / 64):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    tma_load_ph(64, buf[0:64], A[64 * k:64 * k + 64]) >> z[k]
                    Arrive(cuda_temporal) >> z[k]
                Await(z[k], cuda_in_order, 0)
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    C[64 * k + t] = buf[t]
                Fence(cuda_in_order, L2)
"""


def test_cta_in_order_fence_between_reads_and_the_next_load_is_refuted():
    src = CTA_LOOP.replace("L2", "cuda_in_order")
    fence = line_of(src, "Fence(cuda_in_order, cuda_in_order)")
    # N = 64: a single stage read, then freed: the free is reached by the next task's load
    refuted(src, "buf: f32[64] @ CudaSmemLinear", "free without synchronization", {"N": 64},
            hint=f"add cuda_generic_and_async_proxy to the Fence at line {fence}")


def test_cta_proxy_fence_between_reads_and_the_next_load_is_proven():
    proven(CTA_LOOP.replace("L2", "cuda_generic_and_async_proxy"),
           [{"N": n} for n in (64, 128, 320)])


# ====================================================================== epilogue (RAW)
# Generic stores into SMEM, then one warp's TMA store of the tile (an async-proxy read).
EPI = """
def epi(N: size, A: f32[N, 64] @ CudaGmemLinear, C: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            x: f32[64] @ CudaSmemLinear
            tcg: barrier @ Sm90_TmaCommitGroup
            HANDOFF_ALLOC
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    x[32 * w + t] = A[task, 32 * w + t]
                WRITER
            HANDOFF
            for w in cuda_threads(0, 1, unit=cuda_warp):
                RECEIVE
                tma_store_ph(64, C[task, 0:64], x[0:64])
                Arrive(tma_to_gmem_async) >> tcg
                Await(tcg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""


def epi(writer="pass", handoff="Fence(cuda_in_order, cuda_in_order)", receive="pass",
        alloc="pass"):
    return (EPI.replace("WRITER", writer).replace("HANDOFF_ALLOC", alloc)
            .replace("HANDOFF", handoff).replace("RECEIVE", receive))


STORE_LINE = "tma_store_ph(64, C[task"
MBAR_ALLOC = "bar: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier"
MBAR_ARRIVE = "Arrive(cuda_in_order) >> bar[0]"


def test_epilogue_per_warp_proxy_fence_then_cta_barrier_is_proven():
    # CUTLASS: fence_view_async_shared(); synchronize(); one thread's TMA store
    proven(epi(writer=PROXY), [{"N": 1}, {"N": 3}])


def test_epilogue_cta_proxy_fence_is_proven():
    proven(epi(handoff=PROXY), [{"N": 1}, {"N": 3}])


def test_epilogue_in_order_barrier_only_is_refuted():
    src = epi()
    fence = line_of(src, "Fence(cuda_in_order, cuda_in_order)")
    refuted(src, STORE_LINE, "read-after-write hazard", {"N": 1},
            hint=f"add cuda_generic_and_async_proxy to the Fence at line {fence}",
            earlier="x[32 * w + t] = A[task")


def test_epilogue_proxy_fence_by_the_storing_warp_only_is_refuted():
    # warp 0 fences after the CTA barrier: it covers its own stores, not warp 1's
    d = refuted(epi(receive=PROXY), STORE_LINE, "read-after-write hazard", {"N": 1})
    assert "x[32:64]" in d.message or "x[32" in d.message, d.message


def test_epilogue_mbarrier_handoff_after_per_warp_proxy_fences_is_proven():
    src = epi(writer=PROXY, alloc=MBAR_ALLOC, handoff=MBAR_ARRIVE,
              receive="Await(bar[0], cuda_in_order, 0)")
    proven(src, [{"N": 1}, {"N": 2}])


def test_epilogue_mbarrier_handoff_with_a_proxy_await_only_is_refuted():
    # the Await's fence.proxy.async runs on the storing warp, not on the writers
    src = epi(alloc=MBAR_ALLOC, handoff=MBAR_ARRIVE,
              receive="Await(bar[0], cuda_generic_and_async_proxy, 0)")
    refuted(src, STORE_LINE, "read-after-write hazard", {"N": 1}, hint=INSERT_HINT)


# ------------------------------------------------- a collective (warpgroup) generic store
WG_EPI = """
def wg_epi(N: size, A: f32[N, 128] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N):
            x: f32[128] @ CudaSmemLinear
            tcg: barrier @ Sm90_TmaCommitGroup
            with CudaWarps(0, 4):
                wg_store_ph(x[0:128], A[task, 0:128])
                FENCES
            Fence(cuda_in_order, cuda_in_order)
            with CudaWarps(4, 5):
                tma_store_ph(128, C[task, 0:128], x[0:128])
                Arrive(tma_to_gmem_async) >> tcg
                Await(tcg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""
PER_WARP = ("for w in cuda_threads(0, 4, unit=cuda_warp):\n"
            "                    COND" + PROXY)


def test_warpgroup_store_fenced_by_each_of_its_warps_is_proven():
    # one access record for the warpgroup's 128 threads; four warp-level proxy Fences cover
    # it together, then the CTA Fence catches every one of them
    proven(WG_EPI.replace("FENCES", PER_WARP.replace("COND", "")), [{"N": 1}, {"N": 2}])


# the hand-off is an mbarrier Arrive by HANDOFF's warps, awaited by the storing warp
WG_MBAR = """
def wg_mbar(N: size, A: f32[N, 128] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N):
            x: f32[128] @ CudaSmemLinear
            tcg: barrier @ Sm90_TmaCommitGroup
            bar: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
            with CudaWarps(0, 4):
                wg_store_ph(x[0:128], A[task, 0:128])
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
            with CudaWarps(HANDOFF):
                Arrive(cuda_in_order) >> bar[0]
            with CudaWarps(4, 5):
                Await(bar[0], cuda_in_order, 0)
                tma_store_ph(128, C[task, 0:128], x[0:128])
                Arrive(tma_to_gmem_async) >> tcg
                Await(tcg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""


def test_warpgroup_store_per_warp_fences_then_its_mbarrier_arrive_is_proven():
    proven(WG_MBAR.replace("HANDOFF", "0, 4"), [{"N": 1}, {"N": 2}])


@pytest.mark.parametrize("warps", ["3, 4", "0, 1", "1, 4"])
def test_warpgroup_store_per_warp_fences_handed_on_by_some_warps_is_refuted(warps):
    # a warp's proxy Fence reaches the storing warp only through that warp's own hand-off:
    # the Arrive of some warps orders the others' parts of the collective store not at all
    refuted(WG_MBAR.replace("HANDOFF", warps), "tma_store_ph(128, C[task",
            "read-after-write hazard", {"N": 1})


# each warp fences and arrives on the one mbarrier phase (4 Arrive instances, one Await)
WG_WARP_ARRIVES = """
def wg_warp_arrives(N: size, A: f32[N, 128] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N):
            x: f32[128] @ CudaSmemLinear
            tcg: barrier @ Sm90_TmaCommitGroup
            bar: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
            with CudaWarps(0, 4):
                wg_store_ph(x[0:128], A[task, 0:128])
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                    ARRIVE
            with CudaWarps(4, 5):
                Await(bar[0], cuda_in_order, 0)
                tma_store_ph(128, C[task, 0:128], x[0:128])
                Arrive(tma_to_gmem_async) >> tcg
                Await(tcg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""


def test_warpgroup_store_each_warp_fences_and_arrives_is_proven():
    proven(WG_WARP_ARRIVES.replace("ARRIVE", "Arrive(cuda_in_order) >> bar[0]"),
           [{"N": 1}, {"N": 2}])


def test_warpgroup_store_one_warp_not_arriving_is_refuted():
    src = WG_WARP_ARRIVES.replace("ARRIVE", "if w < 3:\n                        "
                                  "Arrive(cuda_in_order) >> bar[0]")
    refuted(src, "tma_store_ph(128, C[task", "read-after-write hazard", {"N": 1})


# a warpgroup's collective read of a TMA-filled stage, released to the next TMA load with
# per-warp proxy Fences (RELEASE) and an mbarrier Arrive by HANDOFF's warps
WG_RING = """
def wg_ring(K: size, A: f32[K, 128] @ CudaGmemLinear, C: f32[K, 128] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, 1):
            buf: f32[2, 128] @ CudaSmemLinear
            full: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier
            empty: barrier[K @ ring_buffer_by(2)] @ CudaMbarrierPreArrive(2)
            for k in seq(0, K):
                with CudaWarps(4, 5):
                    Await(empty[k], cuda_in_order, 0)
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        tma_load_ph(128, buf[k % 2, 0:128], A[k, 0:128]) >> full[k]
                        Arrive(cuda_temporal) >> full[k]
                with CudaWarps(0, 4):
                    Await(full[k], cuda_in_order, 0)
                    wg_load_ph(C[k, 0:128], buf[k % 2, 0:128])
                    for w in cuda_threads(0, 4, unit=cuda_warp):
                        RELEASE
                with CudaWarps(HANDOFF):
                    Arrive(cuda_in_order) >> empty[k + 2]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


def test_warpgroup_read_released_with_per_warp_proxy_fences_is_proven():
    proven(WG_RING.replace("RELEASE", PROXY).replace("HANDOFF", "0, 4"), RING_SIZES)


@pytest.mark.parametrize("release,warps", [(PROXY, "0, 1"), ("Fence(cuda_in_order, cuda_in_order)",
                                                            "0, 4"), ("pass", "0, 4")],
                         ids=["one-warp-hands-on", "in-order-fence", "no-fence"])
def test_warpgroup_read_released_without_every_warps_proxy_fence_is_refuted(release, warps):
    refuted(WG_RING.replace("RELEASE", release).replace("HANDOFF", warps),
            "tma_load_ph(128, buf", "write-after-read hazard", {"K": 3})


# per-warp proxy Fences placed at BEFORE (before the warpgroup's store) or AFTER (after the
# CTA barrier that hands the tile on): neither orders the store before the TMA store
WG_LATE = """
def wg_late(N: size, A: f32[N, 128] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N):
            x: f32[128] @ CudaSmemLinear
            tcg: barrier @ Sm90_TmaCommitGroup
            with CudaWarps(0, 4):
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    BEFORE
                wg_store_ph(x[0:128], A[task, 0:128])
            Fence(cuda_in_order, cuda_in_order)
            with CudaWarps(0, 4):
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    AFTER
            with CudaWarps(4, 5):
                tma_store_ph(128, C[task, 0:128], x[0:128])
                Arrive(tma_to_gmem_async) >> tcg
                Await(tcg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""


@pytest.mark.parametrize("before,after", [("pass", PROXY), (PROXY, "pass")],
                         ids=["after-the-handoff", "before-the-store"])
def test_warpgroup_store_per_warp_fences_out_of_place_are_refuted(before, after):
    # before the store, a task's Fences follow only the previous task's store (persistent)
    src = WG_LATE.replace("BEFORE", before).replace("AFTER", after)
    refuted(src, "tma_store_ph(128, C[task", "read-after-write hazard", {"N": 1})


def _cta_fence_hint(src):
    return ("add cuda_generic_and_async_proxy to the Fence at line "
            f"{line_of(src, 'Fence(cuda_in_order, cuda_in_order)')}")


def test_warpgroup_store_fenced_by_three_of_its_warps_is_refuted():
    src = WG_EPI.replace("FENCES", PER_WARP.replace(
        "COND", "if w < 3:\n                        "))
    refuted(src, "tma_store_ph(128, C[task", "read-after-write hazard", {"N": 1},
            hint=_cta_fence_hint(src))


def test_warpgroup_store_without_fence_is_refuted():
    src = WG_EPI.replace("FENCES", "pass")
    refuted(src, "tma_store_ph(128, C[task", "read-after-write hazard", {"N": 1},
            hint=_cta_fence_hint(src))


# ====================================================================== SMEM reuse
# A tile accessed with ordinary loads and stores is freed; a later allocation (sharing its
# bytes, or the next task's instance of it) is a TMA destination.
REUSE = """
def reuse(N: size, A: f32[N, 64] @ CudaGmemLinear, C: f32[N, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            OUTER
            for first in seq(0, 1):
                INNER
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    x[t] = A[task, t]
                    C[task, t] = x[t]
                Fence(cuda_in_order, L2)
            for second in seq(0, 1):
                y: f32[64] @ CudaSmemLinear
                z: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    tma_load_ph(64, y[0:64], A[task, 0:64]) >> z[0]
                    Arrive(cuda_temporal) >> z[0]
                Await(z[0], cuda_in_order, 0)
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    C[task, t] = y[t]
                Fence(cuda_in_order, LAST)
"""
X = "x: f32[64] @ CudaSmemLinear"


def reuse(l2="cuda_in_order", last="cuda_generic_and_async_proxy", coexist=False):
    return (REUSE.replace("OUTER", X if coexist else "pass")
            .replace("INNER", "pass" if coexist else X)
            .replace("LAST", last).replace("L2", l2))


def test_freed_tile_reused_as_a_tma_destination_needs_the_proxy_fence():
    src = reuse()
    fence = line_of(src, "Fence(cuda_in_order, cuda_in_order)")
    d = refuted(src, X, "free without synchronization", {"N": 1},
                hint=f"add cuda_generic_and_async_proxy to the Fence at line {fence}")
    assert "async proxy" in " ".join(d.notes)


def test_freed_tile_reused_as_a_tma_destination_with_proxy_fence_is_proven():
    proven(reuse(l2="cuda_generic_and_async_proxy"), [{"N": 1}, {"N": 3}])


def test_tile_live_beside_the_tma_destination_needs_no_proxy_fence():
    # x stays allocated while y is: the static layout never gives them the same bytes
    proven(reuse(coexist=True), [{"N": 1}, {"N": 3}])


def test_tma_destination_read_then_freed_needs_the_proxy_fence():
    # y itself: the next task's TMA load rewrites it after this task's ordinary reads
    src = reuse(l2="cuda_generic_and_async_proxy", last="cuda_in_order")
    refuted(src, "y: f32[64] @ CudaSmemLinear", "free without synchronization", {"N": 1})


@pytest.mark.parametrize("l2", ["cuda_in_order", "cuda_temporal"])
def test_in_order_and_temporal_fences_give_no_async_visibility(l2):
    # neither cuda_in_order nor cuda_temporal reaches the async proxy any more
    refuted(reuse(l2=l2), X, "free without synchronization", {"N": 1})


# ====================================================================== the oracle
@pytest.mark.parametrize("src,sizes", [
    (ring(release=PROXY), {"K": 3}),
    (epi(writer=PROXY), {"N": 2}),
    (reuse(l2="cuda_generic_and_async_proxy"), {"N": 2}),
], ids=["ring", "epilogue", "reuse"])
def test_accepted_twins_run_sequentially_in_the_oracle(src, sizes):
    oracle_same(proven(src, [sizes]), sizes)
