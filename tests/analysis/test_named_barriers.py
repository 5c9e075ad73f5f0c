"""Named barriers (``analysis/named_barriers.py``): which Fences are executed by sets of whole
warps smaller than the CTA, the ids they get, and the rules around them (kinds
``collective`` and ``resource``, with lines)."""

from __future__ import annotations

import pytest

from analysis_helpers import assert_error, assert_ok, parse
from testlib import load_path, TESTS

from exogpu_verify.analysis import analyze

P = load_path(TESTS / "analysis" / "progs" / "named_barrier_progs.py")


def _named(p):
    info = analyze(p)
    assert info.diagnostics == (), info.diagnostics
    return info.named_barriers


def test_consumer_fence_gets_one_id_for_256_threads():
    nb = _named(P.consumer_fence)
    (f,) = nb.fences.values()
    assert (f.threads, f.ids, nb.ids_used) == (256, (1,), 1)
    assert f.affine() == (1, ())


def test_per_warpgroup_fence_gets_one_id_per_warpgroup():
    nb = _named(P.wg_fence)
    (f,) = nb.fences.values()
    assert f.threads == 128 and f.ids == (1, 2)
    assert f.affine() == (1, (("wg", 1),))


def test_cta_and_warp_fences_are_not_named_barriers():
    nb = _named(P.consumer_fence)
    cta = [s for s in analyze(P.consumer_fence).collectives.stmts
           if type(s.stmt).__name__ == "Fence" and s.path not in nb.fences]
    assert len(cta) == 1  # the CTA-wide Fence at the end of the task


HEAD = """
def k(A: f32[1024] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim={B}, clusterDim={C}):
        for task in cuda_tasks(0, 1):
"""


def prog(body: str, B: int = 256, C: int = 1) -> str:
    lines = ["            " + ln for ln in body.strip("\n").splitlines()]
    return HEAD.format(B=B, C=C) + "\n".join(lines) + "\n"


def test_fence_by_warp_pairs_allocates_ids_in_order():
    p = parse(prog("""
for pr in cuda_threads(0, 4, unit=2 * cuda_warp):
    Fence(cuda_in_order, cuda_in_order)
"""))
    nb = analyze(p).named_barriers
    (f,) = nb.fences.values()
    assert (f.threads, f.ids, nb.ids_used) == (64, (1, 2, 3, 4), 4)


def test_same_warp_set_shares_an_id_across_statements():
    p = parse(prog("""
with CudaWarps(2, 8):
    Fence(cuda_in_order, cuda_in_order)
    Fence(cuda_in_order, cuda_in_order)
with CudaWarps(0, 4):
    Fence(cuda_in_order, cuda_in_order)
"""))
    nb = analyze(p).named_barriers
    assert sorted(f.ids for f in nb.fences.values()) == [(1,), (1,), (2,)]


def test_fifteen_named_barriers_fit():
    assert_ok(prog("""
for pr in cuda_threads(0, 15, unit=2 * cuda_warp):
    Fence(cuda_in_order, cuda_in_order)
""", B=1024))


def test_sixteenth_named_barrier_is_a_resource_error():
    d = assert_error(prog("""
for pr in cuda_threads(0, 16, unit=2 * cuda_warp):
    Fence(cuda_in_order, cuda_in_order)  # <-
""", B=1024), "resource", "named barrier")
    assert "15" in d.message and d.hint


def test_ids_are_counted_per_kernel_across_statements():
    d = assert_error(prog("""
for pr in cuda_threads(0, 8, unit=2 * cuda_warp):
    Fence(cuda_in_order, cuda_in_order)
for q in cuda_threads(0, 8, unit=4 * cuda_warp):
    Fence(cuda_in_order, cuda_in_order)  # <-
""", B=1024), "resource", "named barrier")
    assert d.kind == "resource"


def test_fence_by_part_of_a_warp_is_rejected():
    assert_error(prog("""
for h in cuda_threads(0, 2, unit=16 * cuda_thread):
    Fence(cuda_in_order, cuda_in_order)  # <-
""", B=32), "collective", "matched no known case")


def test_fence_by_warps_of_several_ctas_is_rejected():
    assert_error(prog("""
with CudaWarps(0, 2):
    Fence(cuda_in_order, cuda_in_order)  # <-
""", B=128, C=2), "collective", "matched no known case")


def test_named_barrier_per_cta_of_a_cluster_shares_the_id():
    p = parse(prog("""
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    with CudaWarps(0, 2):
        Fence(cuda_in_order, cuda_in_order)
""", B=128, C=2))
    nb = analyze(p).named_barriers
    (f,) = nb.fences.values()
    assert f.ids == (1, 1) and f.threads == 64
    assert f.affine() == (1, ())


@pytest.mark.parametrize("name", ["consumer_fence", "wg_fence", "tma_epilogue"])
def test_shipped_examples_need_no_more_than_two_ids(name):
    assert _named(getattr(P, name)).ids_used <= 2
