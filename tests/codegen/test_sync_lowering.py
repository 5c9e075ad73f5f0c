"""Synchronization lowering choices: named barriers (``bar.sync id, n``), ``.read`` waits of
TMA commit groups, and the state space of proxy fences (``exogpu_codegen/kernel_facts.py``)."""

from __future__ import annotations

import re

import pytest

from testlib import TESTS, load_path

from exogpu_codegen.generate import generate

NB = load_path(TESTS / "analysis" / "progs" / "named_barrier_progs.py")
LP = load_path(TESTS / "codegen" / "progs" / "lowering_progs.py")


def src(p) -> str:
    return generate(p, unchecked=True).source


def test_consumer_fence_is_a_named_barrier_of_256_threads():
    s = src(NB.consumer_fence)
    assert 'bar.sync 1, 256;' in s
    assert s.count("barrier.cta.sync 0") == 2  # setup + the CTA Fence ending each task


def test_per_warpgroup_fence_selects_its_id_from_the_iterator():
    s = src(NB.wg_fence)
    assert re.search(r'bar\.sync %0, 128;.*"r"\(uint32_t\(1 \+ wg\w*\)\)', s)


def test_named_barrier_proxy_fence_brackets_the_barrier():
    s = src(NB.tma_epilogue)
    assert re.search(r"fence\.proxy\.async\.shared::cta;.*\n.*bar\.sync 1, 256;.*\n"
                     r".*fence\.proxy\.async\.shared::cta;", s)


@pytest.mark.parametrize("name,read", [("store_once", True), ("reduce_twice", True),
                                       ("read_back", False), ("store_twice", False),
                                       ("load_back", False)])
def test_bulk_wait_read_only_when_nothing_needs_the_global_writes(name, read):
    s = src(getattr(LP, name))
    waits = re.findall(r"cp\.async\.bulk\.wait_group(\.read)? 0", s)
    assert waits and all((w == ".read") == read for w in waits), waits


@pytest.mark.parametrize("name,space", [("store_once", ".shared::cta"),
                                        ("load_back", ".shared::cta"), ("read_back", "")])
def test_proxy_fence_is_restricted_to_shared_memory_unless_global_meets_both_proxies(name,
                                                                                    space):
    """``read_back`` reads the TMA-stored tensor with ordinary loads: global memory is then
    accessed through both proxies and the Fences' proxy fence covers every state space;
    ``load_back`` reads it back with TMA (one proxy), which needs no global proxy fence."""
    s = src(getattr(LP, name))
    # the Fence(cuda_in_order, cuda_generic_and_async_proxy): proxy fence, barrier, proxy fence
    m = re.search(r"fence\.proxy\.async([.:\w]*);.*\n.*barrier\.cta\.sync 0;.*\n"
                  r".*fence\.proxy\.async([.:\w]*);", s)
    assert m and m.group(1) == m.group(2) == space, m


@pytest.mark.parametrize("name", ["store_once", "reduce_twice", "read_back", "store_twice",
                                  "load_back", "warp_overwrite"])
def test_warp_wait_on_a_tma_store_group_is_followed_by_a_warp_barrier(name):
    """PTX commits a bulk copy to the issuing lane's group only; the warp barrier after each
    lane's ``wait_group`` keeps the other lanes until the issuing lane's wait returned."""
    lines = [ln.strip() for ln in src(getattr(LP, name)).splitlines()]
    waits = [k for k, ln in enumerate(lines) if "cp.async.bulk.wait_group" in ln]
    assert waits
    assert all(lines[k + 1] == "__syncwarp();" for k in waits), [lines[k:k + 2] for k in waits]


def test_warp_overwrite_after_its_wait_is_proven_in_both_modes():
    """The program that needs the barrier: the lanes overwrite the stored SMEM right after
    the Await."""
    from exogpu_verify import verify

    assert verify(LP.warp_overwrite, mode="symbolic").verdict == "proven"
    assert verify(LP.warp_overwrite, sizes={"N": 3}, mode="concrete").verdict == "checked"


def test_wait_on_an_mbarrier_other_ctas_arrive_on_is_acquire_cluster():
    """A remote (multicast) Arrive is ``mbarrier.arrive.release.cluster``: the wait that pairs
    with it must be ``try_wait.parity.acquire.cluster`` (the default scope is ``.cta``, whose
    acquire does not synchronize with another CTA's release). A barrier only its own CTA
    arrives on keeps the ``.cta`` wait."""
    from exogpu_verify import verify

    assert verify(LP.cluster_handoff, mode="symbolic").verdict == "proven"
    lines = src(LP.cluster_handoff).splitlines()
    body = lines[next(k for k, ln in enumerate(lines) if "exo_kernel0_" in ln
                      and "__grid_constant__" in ln):]
    waits = [ln.strip() for ln in body if "exo_mbar_wait" in ln]
    assert len(waits) == 2, waits
    assert waits[0].startswith("exo_mbar_wait_cluster(exo_smem_sh + 0u"), waits   # z
    assert waits[1].startswith("exo_mbar_wait(exo_smem_sh + 8u"), waits           # w
    assert "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64" in "\n".join(lines)


def test_wgmmas_on_parts_of_a_lazily_zeroed_tile_are_refused():
    """``wgmma_zero`` sets the tile's one scale-d flag and the next wgmma on the tile consumes
    it: a second wgmma on the other half of the tile would accumulate onto uninitialised
    registers, while the checkers (zero per element) prove the program. Codegen refuses it
    with the statement's location instead of generating wrong arithmetic."""
    from exogpu_verify import ExoGpuError, verify

    assert verify(LP.lazy_zero_split, mode="symbolic").verdict == "proven"
    with pytest.raises(ExoGpuError) as e:
        src(LP.lazy_zero_split)
    assert "part of the accumulator tile 'D'" in str(e.value)
    assert e.value.diagnostic.line is not None


def test_wgmma_accumulators_are_fenced_operands_at_each_wait_and_wgmma_fence():
    """Every ``wgmma.wait_group`` is followed, and every ``wgmma.fence`` preceded, by an
    operand fence of each accumulator in scope, so the compiler cannot move an accumulator
    access across them (their asm clobbers memory only; docs/codegen.md)."""
    from exogpu_verify.kernels.gemm import schedule_library

    s = src(schedule_library()[-1][1])
    lines = [ln.strip() for ln in s.splitlines()]
    waits = [i for i, ln in enumerate(lines) if 'asm volatile("wgmma.wait_group' in ln]
    fences = [i for i, ln in enumerate(lines) if 'asm volatile("wgmma.fence.sync' in ln]
    assert waits and fences
    for i in waits:
        assert lines[i + 1].startswith("exo_fence_acc("), lines[i:i + 2]
    for i in fences:
        assert lines[i - 1].startswith("exo_fence_acc("), lines[i - 1:i + 1]
