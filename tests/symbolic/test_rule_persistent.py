"""Persistent kernels (docs/semantics.md, "Persistent kernels"): the model runs each
``cuda_tasks`` iteration on a fresh cluster, the generated code runs a CTA's tasks one after
another on the same threads, registers, SMEM and mbarriers. The rules that close the gap,
each in both checkers with its correct twin: every element of an mbarrier ring in use
completes its phases in every lifetime, and the same elements are in use in every lifetime
(codegen advances the phase base of the whole ring per lifetime); freed SMEM that the async proxy may write next (the next task's TMA into the
same tile) needs its generic accesses proxy-fenced (``test_rule_proxy.py``); registers of
an asynchronous instruction are released only once it completed, and the first wgmma of a
task needs ``wgmma.fence`` (``test_rule_wgmma.py``)."""

from __future__ import annotations

from rule_helpers import proven, refuted

RING = """
def k(T: size, K: size, A: f32[T, K, 64] @ CudaGmemLinear, C: f32[T, K, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, T):
            buf: f32[2, 64] @ CudaSmemLinear
            z: barrier[E, K @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, K):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    tma_load_ph(64, buf[k % 2, 0:64], A[task, k, 0:64]) >> z[IDX, k]
                    Arrive(cuda_temporal) >> z[IDX, k]
                Await(z[IDX, k], cuda_in_order, 0)
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    C[task, k, t] = buf[k % 2, t]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""
ALLOC = "z: barrier[E, K @ ring_buffer_by(2)]"


def ring(extent: int, idx: str) -> str:
    return RING.replace("E,", f"{extent},").replace("IDX", idx)


def test_ring_element_used_in_some_tasks_only_is_a_barrier_misuse():
    # task 0 uses z[0, :], task 1 z[1, :]: on one CTA, task 1 would wait on z[1]'s parity as
    # advanced by task 0's lifetime, a phase it never completed (the wait passes at once)
    src = ring(2, "task % 2").replace(ALLOC, "z: barrier[2, K @ ring_buffer_by(2)]")
    refuted(src, "z: barrier[2, K @ ring_buffer_by(2)]",
            "z[0, :] is not used in this lifetime of z but used in an earlier one",
            {"T": 2, "K": 1}, kind="barrier-usage")


def test_ring_element_no_lifetime_uses_is_harmless():
    # z[1, :] is never used: its phases advance with the ring's and nobody waits on them
    proven(ring(2, "0").replace(ALLOC, "z: barrier[2, K @ ring_buffer_by(2)]"),
           [{"T": 1, "K": 1}, {"T": 3, "K": 2}])


def test_every_element_used_in_every_task_is_proven():
    proven(ring(1, "0").replace(ALLOC, "z: barrier[1, K @ ring_buffer_by(2)]"),
           [{"T": 1, "K": 1}, {"T": 2, "K": 3}])


SOME_TASKS = """
def k(T: size, K: size, A: f32[T, K, 64] @ CudaGmemLinear, C: f32[T, K, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, T):
            buf: f32[2, 64] @ CudaSmemLinear
            z: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier
            if task % 2 == 0:
                for k in seq(0, K):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        tma_load_ph(64, buf[k % 2, 0:64], A[task, k, 0:64]) >> z[k]
                        Arrive(cuda_temporal) >> z[k]
                    Await(z[k], cuda_in_order, 0)
                    for t in cuda_threads(0, 64, unit=cuda_thread):
                        C[task, k, t] = buf[k % 2, t]
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


def test_ring_used_only_in_some_tasks_is_a_barrier_misuse():
    # odd tasks skip the ring: its phases still advance at the end of their lifetime
    refuted(SOME_TASKS, "z: barrier[K @ ring_buffer_by(2)]",
            "z[:] is not used in this lifetime of z but used in an earlier one",
            {"T": 2, "K": 1}, kind="barrier-usage")


# ------------------------------------------------------------------ the cluster barrier
# (one CudaClusterSync barrier live at a time and no cluster-wide Fence while one is live are
# static rules, analysis/barriers.py; the order of its Arrives and Awaits is checked here)
CLUSTER = """
def cs(T: size, A: f32[T, 2, 64] @ CudaGmemLinear, C: f32[T, 2, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64, clusterDim=2):
        for task in cuda_tasks(0, T):
            cs: barrier @ CudaClusterSync
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    C[task, cta, t] = A[task, cta, t]
            BODY
"""


def cluster(*lines: str) -> str:
    return CLUSTER.replace("BODY", "\n            ".join(lines))


ARRIVE, AWAIT = "Arrive(cuda_in_order) >> cs", "Await(cs, cuda_in_order, 0)"


def test_cluster_barrier_used_in_turn_is_proven():
    proven(cluster(ARRIVE, AWAIT, ARRIVE, AWAIT), [{"T": 1}, {"T": 3}])


def test_two_cluster_arrives_before_an_await_are_a_barrier_misuse():
    # barrier.cluster: a thread may arrive once before the barrier completes
    refuted(cluster(ARRIVE, ARRIVE, AWAIT), ARRIVE, "second Arrive on a cluster barrier",
            {"T": 1}, kind="barrier-usage", nth=1)


def test_task_ending_with_a_pending_cluster_arrive_is_a_barrier_misuse():
    # the next task of the persistent loop would arrive a second time
    refuted(cluster(ARRIVE, AWAIT, ARRIVE), ARRIVE, "the task ends after an Arrive",
            {"T": 1}, kind="barrier-usage", nth=1)
