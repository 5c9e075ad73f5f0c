"""Pipelines whose first or last iteration is special-cased (issue 15): a TMA ring written
with its first iteration peeled before the loop, its last after it, or both, and the loop
cut by ``cut_loop`` (a one-iteration prologue loop); all proven for every size and checked
concretely at sizes where the ring wraps. Their twins (the peeled iteration without its wait,
or releasing its stage without the proxy fence) are refuted by both checkers."""

from __future__ import annotations

import pytest

from exogpu_verify import verify
from exogpu_verify.schedule import cut_loop
from rule_helpers import proven, refuted
from test_rule_proxy import PROXY

HEAD = """
def ring(K: size, A: f32[K, 64] @ CudaGmemLinear, C: f32[K, 64] @ CudaGmemLinear):
    assert K >= 2
    with CudaDeviceFunction(blockDim=96):
        for task in cuda_tasks(0, 1):
            buf: f32[2, 64] @ CudaSmemLinear
            full: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier
            empty: barrier[K @ ring_buffer_by(2)] @ CudaMbarrierPreArrive(2)
"""
TAIL = "            Fence(cuda_in_order, cuda_generic_and_async_proxy)\n"
SIZES = [{"K": 2}, {"K": 3}, {"K": 5}]


def iteration(k: str, indent: int, wait: bool = True, release: str = PROXY) -> str:
    """One iteration of the ring at index ``k``: the producer's TMA load into stage k % 2,
    the consumers' reads and their release of the stage for the load at k + 2."""
    lines = ["with CudaWarps(0, 1):",
             f"    Await(empty[{k}], cuda_temporal, 0)",
             "    for t in cuda_threads(0, 1, unit=cuda_thread):",
             f"        tma_load_ph(64, buf[({k}) % 2, 0:64], A[{k}, 0:64]) >> full[{k}]",
             f"        Arrive(cuda_temporal) >> full[{k}]",
             "with CudaWarps(1, 3):",
             f"    Await(full[{k}], cuda_in_order, 0)" if wait else "    pass",
             "    for w in cuda_threads(0, 2, unit=cuda_warp):",
             "        for t in cuda_threads(0, 32, unit=cuda_thread):",
             f"            C[{k}, 32 * w + t] = buf[({k}) % 2, 32 * w + t]",
             f"        {release}",
             f"    Arrive(cuda_in_order) >> empty[{k} + 2]"]
    return "".join(" " * indent + ln + "\n" for ln in lines)


def loop(lo: str, hi: str) -> str:
    return f"            for k in seq({lo}, {hi}):\n" + iteration("k", 16)


FORMS = {
    "first peeled": HEAD + iteration("0", 12) + loop("1", "K") + TAIL,
    "last peeled": HEAD + loop("0", "K - 1") + iteration("K - 1", 12) + TAIL,
    "both peeled": HEAD + iteration("0", 12) + loop("1", "K - 1") + iteration("K - 1", 12) + TAIL,
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_ring_with_special_cased_iterations_is_proven(form):
    proven(FORMS[form], SIZES)


@pytest.mark.parametrize("cut", ["1", "K - 1"])
def test_a_ring_cut_by_cut_loop_is_proven(cut):
    p = proven(HEAD + loop("0", "K") + TAIL, SIZES)
    q = cut_loop(p, "k", cut)
    assert verify(q, mode="symbolic").verdict == "proven"


def test_the_peeled_iteration_without_its_wait_is_a_race():
    src = HEAD + iteration("0", 12, wait=False) + loop("1", "K") + TAIL
    refuted(src, "C[0, 32 * w + t] = buf[(0) % 2", "read-after-write hazard", {"K": 2},
            earlier="tma_load_ph(64, buf[(0) % 2")


def test_the_peeled_iteration_releasing_without_the_proxy_fence_is_a_race():
    src = HEAD + iteration("0", 12, release="pass") + loop("1", "K") + TAIL
    # stage 0, read at k = 0 through the generic proxy, is overwritten by the TMA load at k = 2
    refuted(src, "tma_load_ph(64, buf[(k) % 2", "write-after-read hazard", {"K": 3},
            earlier="C[0, 32 * w + t] = buf[(0) % 2")
