"""Unit tests of the concrete abstract machine (``exogpu_verify/amir``): each hazard kind,
Fence scopes, mbarrier rings with pre-arrive, multicast arrives, commit-group depths, cluster
sync, SMEM frees, atomics, box records and the checker's own errors. Programs live in
``progs/machine_progs.py``; tests assert the verdict, the kind and the line."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from exogpu_verify.amir.check import check_sync_concrete
from exogpu_verify.amir.convert import lower_to_amir
from exogpu_verify.amir.interp import Machine
from exogpu_verify.ir.memories import MbarrierPhases

HERE = pathlib.Path(__file__).resolve().parent
PROGS = HERE / "progs" / "machine_progs.py"


def _load(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def mp():
    return _load(PROGS, "amir_machine_progs")


def line_of(snippet: str, nth: int = 0) -> int:
    hits = [i + 1 for i, ln in enumerate(PROGS.read_text().splitlines()) if snippet in ln]
    assert len(hits) > nth, snippet
    return hits[nth]


def check(p, **sizes):
    verdict, diags, witness, reason = check_sync_concrete(p, sizes)
    return verdict, (diags[0] if diags else None), witness, reason


def refuted(p, sizes, kind, reason, snippet, nth=0):
    verdict, d, w, r = check(p, **sizes)
    assert verdict == "refuted", (verdict, r)
    assert d.kind == kind, d
    assert reason in r, r
    assert d.line == line_of(snippet, nth), (d.line, d.message)
    return d, w


# ---------------------------------------------------------------- hazard kinds, Fence scope
@pytest.mark.parametrize("order,kind,snippet,nth", [
    ("wr", "RAW", "Y[task, t] = x[t]", 1),
    ("rw", "WAR", "x[t] = 3.0", 0),
    ("ww", "WAW", "x[t] = 3.0", 0),
])
def test_hazard_kinds_between_warps(mp, order, kind, snippet, nth):
    d, w = refuted(mp.two_warps(order, "none"), {"N": 2}, "sync", f"{kind} hazard", snippet, nth)
    assert w.first["threads"] != w.second["threads"]
    assert w.second["iterators"]["task"] == 0
    # a CTA Fence orders them; warp 0's own warp-scope Fence does not order warp 1
    assert check(mp.two_warps(order, "cta"), N=2)[0] == "checked"
    assert check(mp.two_warps(order, "warp"), N=2)[0] == "refuted"


def test_fence_at_warp_scope(mp):
    refuted(mp.in_warp(False), {"N": 2}, "sync", "RAW hazard", "Y[task, t] = x[(t + SH) % 32]")
    assert check(mp.in_warp(True), N=2)[0] == "checked"
    # the same thread reads its own write: program order suffices
    assert check(mp.in_warp(False, shift=0), N=2)[0] == "checked"


def test_smem_free_without_fence(mp):
    d, _ = refuted(mp.in_warp(True, free_fence=False), {"N": 2}, "sync",
                   "free without sync hazard", "x: f32[32] @ CudaSmemLinear", 1)
    assert "free of x" in d.message


# ---------------------------------------------------------------- mbarrier rings
def test_ring_with_pre_arrive_passes(mp):
    for K in (1, 2, 6):
        assert check(mp.ring(), K=K)[0] == "checked"


def test_ring_missing_war_await_is_war(mp):
    # slot 0 is rewritten at k = 2 while nothing orders the consumer's read at k = 0
    _, w = refuted(mp.ring(await_war=False), {"K": 6}, "sync", "WAR hazard",
                   "x[k % 2, t] = 1.0")
    assert w.second["iterators"]["k"] == 2 and w.first["iterators"]["k"] == 0


def test_ring_without_pre_arrive_awaits_before_arrive(mp):
    refuted(mp.ring(pre=0), {"K": 6}, "barrier-usage", "before any Arrive",
            "Await(war[k], cuda_in_order, 0)")


def test_ring_virtual_index_pairs_k_plus_pre(mp):
    # releasing slot k on war[k + 1] arrives on a pre-arrived index (war[1])
    refuted(mp.ring(off=1), {"K": 6}, "barrier-usage", "already counts as arrived",
            "war: barrier[K @ ring_buffer_by(2)]")


def test_ring_missing_final_release(mp):
    refuted(mp.ring(final=False), {"K": 6}, "barrier-usage", "war[7] is never arrived on",
            "war: barrier[K @ ring_buffer_by(2)]")


def test_multicast_arrive_targets(mp):
    assert check(mp.multicast("slice"), N=2)[0] == "checked"
    assert check(mp.multicast("two"), N=2)[0] == "checked"
    refuted(mp.multicast("one"), {"N": 2}, "barrier-usage", "before any Arrive",
            "Await(z[cta], cuda_in_order, 0)")


# ---------------------------------------------------------------- commit groups, clusters
def test_commit_group_wait_depth(mp):
    assert check(mp.commit_groups(0), K=5)[0] == "checked"
    assert check(mp.commit_groups(1), K=5)[0] == "checked"
    _, w = refuted(mp.commit_groups(2), {"K": 5}, "sync", "RAW hazard",
                   "Y[k - 1, t] = x[(k - 1) % 3, t, 0]")
    assert w.second["iterators"]["k"] == 1


def test_cluster_sync(mp):
    assert check(mp.cluster_pair("cluster"), N=2)[0] == "checked"
    assert check(mp.cluster_pair("fence"), N=2)[0] == "checked"
    _, w = refuted(mp.cluster_pair("cta"), {"N": 2}, "sync", "RAW hazard",
                   "Z[task, t] = Y[task, t]")
    assert w.first["threads"] != w.second["threads"]


def test_atomics(mp):
    assert check(mp.atomics("atomic"), N=2)[0] == "checked"
    refuted(mp.atomics("write"), {"N": 2}, "sync", "WAW hazard", "Y[task, 0] = 0.0")


# ---------------------------------------------------------------- checker errors
def test_out_of_bounds(mp):
    d, _ = refuted(mp.out_of_bounds, {"N": 1}, "bounds", "out-of-bounds", "Y[task, t] = x[t + 1]")
    assert "x[32:33]" in d.message


# ---------------------------------------------------------------- box records
@pytest.fixture(scope="module")
def gemm_mod():
    return _load(HERE.parents[1] / "bench" / "gemm_kernels.py", "amir_bench_gemm")


def test_box_records_stay_small(gemm_mod):
    sizes = {"S": 1, "M": 256, "N": 512, "K": 512}
    m = Machine(lower_to_amir(gemm_mod.gemm), dict(sizes))
    m.run()
    tasks = (256 // 128) * (512 // 256)
    C = m.vars["C"]
    # one record per TMA-store tile (128 x 32), not per element
    assert len(list(C.mutates)) == tasks * 8
    assert all(r.box[0][1] - r.box[0][0] == 128 for r in C.mutates)
    # A and B are never written: their reads need no record at all
    assert not list(m.vars["A"].reads) and not list(m.vars["B"].reads)
    assert m.ntasks == tasks


PHASE_QUALS = frozenset(q.bit for q in MbarrierPhases.qual_mask())


def test_records_per_task_bounded_by_ring(gemm_mod):
    """While a task runs, its index holds a few data records per ring slot: a TMA tile write
    and one coalesced wgmma operand read per warpgroup, independent of the k-step count. (The
    rings' physical-phase records, ``amir/phases.py``, are a few per running index of a
    lifetime: they are not counted here.)"""
    seen = []
    orig = Machine.arrive

    def arrive(self, s):
        seen.append(sum(1 for r in self.index.get(self.task, ())
                        if r.qmask != PHASE_QUALS))
        return orig(self, s)

    Machine.arrive = arrive
    try:
        for K in (512, 2048):
            seen.clear()
            m = Machine(lower_to_amir(gemm_mod.gemm), {"S": 1, "M": 128, "N": 256, "K": K})
            m.run()
            assert max(seen) <= 30, max(seen)
    finally:
        Machine.arrive = orig
