"""Orderings through chains of three and four synchronization edges (issue 15): a relay of
mbarrier hand-offs through warps that never touch the data. Warp 0 writes a tile and
arrives; each next warp waits for the previous one's barrier and arrives on its own; the
last warp reads. Two edges were the limit before (``not discharged, but the concrete replay
found no hazard``); now three and four are proven by both checkers, a relay with a hop out
of order is refuted by both, and five edges stay ``unknown`` (checked concretely), never
``proven``."""

from __future__ import annotations

import pytest

from exogpu_verify import verify
from rule_helpers import concrete_only, proven, refuted


def relay(hops: int, swap: int | None = None) -> str:
    """``hops`` mbarrier edges from warp 0 (the writer) to warp ``hops`` (the reader);
    ``swap``: that relay warp arrives before it waits (the hop orders nothing)."""
    decls = "".join(f"            m{i}: barrier @ CudaMbarrier\n" for i in range(1, hops + 1))
    body = ["            with CudaWarps(0, 1):",
            "                for t in cuda_threads(0, 32, unit=cuda_thread):",
            "                    buf[t] = A[t]",
            "                Arrive(cuda_in_order) >> m1"]
    for w in range(1, hops):
        hop = [f"                Await(m{w}, cuda_in_order, 0)",
               f"                Arrive(cuda_in_order) >> m{w + 1}"]
        if swap == w:
            hop.reverse()
        body += [f"            with CudaWarps({w}, {w + 1}):"] + hop
    body += [f"            with CudaWarps({hops}, {hops + 1}):",
             f"                Await(m{hops}, cuda_in_order, 0)",
             "                for t in cuda_threads(0, 32, unit=cuda_thread):",
             "                    C[t] = buf[t]",
             "            Fence(cuda_in_order, cuda_in_order)"]
    return (f"\ndef relay(A: f32[32] @ CudaGmemLinear, C: f32[32] @ CudaGmemLinear):\n"
            f"    with CudaDeviceFunction(blockDim={32 * (hops + 1)}):\n"
            "        for task in cuda_tasks(0, 1):\n"
            "            buf: f32[32] @ CudaSmemLinear\n" + decls + "\n".join(body) + "\n")


@pytest.mark.parametrize("hops", [3, 4])
def test_a_relay_of_three_or_four_edges_is_proven(hops):
    p = proven(relay(hops), [{}])
    r = verify(p, mode="symbolic")
    raw = next(ob for ob in r.extra["obligations"] if ob.kind == "RAW")
    # the read is ordered by the whole relay, one edge per hop
    assert any(lbl.count(" then ") == hops - 1 for lbl, _ in raw.ordered), raw.ordered


@pytest.mark.parametrize("hops, swap", [(3, 1), (3, 2), (4, 2)])
def test_a_hop_out_of_order_is_a_race(hops, swap):
    refuted(relay(hops, swap), "C[t] = buf[t]", "read-after-write hazard", {},
            earlier="buf[t] = A[t]")


def test_five_edges_are_beyond_the_symbolic_chains_and_checked_concretely():
    _p, r = concrete_only(relay(5), [{}])
    assert r.verdict == "unknown" and "not discharged" in r.reason
