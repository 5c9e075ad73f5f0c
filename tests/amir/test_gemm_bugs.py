"""The warp-specialized GEMM of ``bench/gemm_kernels.py``: the correct kernel passes the static
analyses and the concrete checker; each injected bug is refuted with the expected hazard at
the expected line (the statement that breaks the rule, or the allocation whose free or
barrier state is wrong)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from exogpu_verify import verify
from exogpu_verify.analysis import analyze_static

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "bench" / "gemm_kernels.py"
SIZES = {"S": 1, "M": 256, "N": 512, "K": 512}


@pytest.fixture(scope="module")
def gk():
    spec = importlib.util.spec_from_file_location("bench_gemm_kernels", SRC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def line_of(snippet: str, nth: int = 0) -> int:
    hits = [i + 1 for i, line in enumerate(SRC.read_text().splitlines()) if snippet in line]
    assert len(hits) > nth, snippet
    return hits[nth]


def test_gemm_passes_static_and_concrete(gk):
    assert analyze_static(gk.gemm) == []
    for sizes in (SIZES, {"S": 1, "M": 128, "N": 256, "K": 64},
                  {"S": 1, "M": 384, "N": 256, "K": 1024}):
        r = verify(gk.gemm, sizes=sizes, mode="concrete")
        assert r.verdict == "checked", r.diagnostics


def test_split_k_gemm_with_two_tasks_passes(gk):
    r = verify(gk.gemm_split, sizes={**SIZES, "S": 2}, mode="concrete")
    assert r.verdict == "checked", r.diagnostics


# bug -> (diagnostic kind, hazard named in the reason, source snippet of the reported line)
EXPECTED = {
    "wrong_wgmma_cg": ("sync", "WAR hazard", "tma_load(128, 64, sA[k % 4, :, :],"),
    "missing_fence_before_epilogue": ("sync", "free without sync hazard",
                                      "sB: bf16[4, 256, 64]"),  # freed first
    "missing_fence_after_epilogue": ("sync", "free without sync hazard",
                                     "C_smem: f32[8, 128, 32]"),
    "missing_await_raw": ("sync", "RAW hazard", "wgmma(D[wg, :, :, :, :, :],"),
    "war_arrive_one_wg": ("sync", "WAR hazard", "tma_load(128, 64, sA[k % 4, :, :],"),
    "missing_final_war_arrive": ("barrier-usage", "never arrived on",
                                 "war: barrier[K / 64 @ ring_buffer_by(4)]"),
    "epilogue_fence_no_proxy": ("sync", "RAW hazard", "tma_store(128, 32,"),
    "copy_before_war_await": ("sync", "WAR hazard", "tma_load(128, 64, sA[k % 4, :, :],"),
    "arrive_before_last_copy": ("barrier-usage", "issued after the last Arrive",
                                "tma_load(256, 64, sB[k % 4, :, :],"),
    "non_split_two_tasks": ("sync", "WAW hazard", "tma_store(128, 32,"),
    "proxy_fence_on_storer": ("sync", "RAW hazard", "tma_store(128, 32,"),
    "missing_wgmma_fence": ("sync", "WAW hazard", "wgmma(D[wg, :, :, :, :, :],"),
}


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_injected_bug_refuted(gk, bug):
    p = gk.make_gemm(bug)
    assert analyze_static(p) == [], "the bug must be invisible to the static analyses"
    sizes = {**SIZES, "S": 2} if bug == "non_split_two_tasks" else SIZES
    r = verify(p, sizes=sizes, mode="concrete")
    kind, reason, snippet = EXPECTED[bug]
    assert r.verdict == "refuted", r.summary()
    assert reason in r.reason or reason in r.diagnostics[0].message, r.reason
    [d] = r.diagnostics
    assert d.kind == kind
    assert d.line == line_of(snippet), (d.line, d.message)
    if kind == "sync":
        assert r.witness is not None and r.witness.first and r.witness.second


def test_bug_details(gk):
    # the wrong commit-group depth lets the producer overwrite slot 0 (k = 4) while the
    # wgmma of k = 0 may still read it
    r = verify(gk.make_gemm("wrong_wgmma_cg"), sizes=SIZES, mode="concrete")
    w = r.witness
    assert w.second["iterators"]["k"] == 4 and w.first["iterators"]["k"] == 0
    assert "wgmma" in w.first["what"] and "tma_load" in w.second["what"]
    # without the await, iteration 1's wgmma reads slot 1 before its TMA completed
    r = verify(gk.make_gemm("missing_await_raw"), sizes=SIZES, mode="concrete")
    assert r.witness.second["iterators"]["k"] == 1
    # the second task (s = 1) overwrites the C tile of task s = 0
    r = verify(gk.make_gemm("non_split_two_tasks"), sizes={**SIZES, "S": 2}, mode="concrete")
    assert r.witness.second["iterators"]["s"] == 1 and r.witness.first["iterators"]["s"] == 0
    assert "task (s=1, m=0, n=0)" in r.witness.second["threads"]
    # a proxy Fence on the storing warp does not make the consumers' stores visible to the
    # async proxy: the hint asks for the Fence by the writers
    r = verify(gk.make_gemm("proxy_fence_on_storer"), sizes=SIZES, mode="concrete")
    assert "store_acc" in r.witness.first["what"] and "tma_store" in r.witness.second["what"]
    assert "cuda_generic_and_async_proxy" in r.diagnostics[0].hint
    # without wgmma.fence the first wgmma of a task reuses registers other code accessed
    r = verify(gk.make_gemm("missing_wgmma_fence"), sizes=SIZES, mode="concrete")
    assert "registers of D" in r.witness.first["what"]
    assert "insert Fence(wgmma_fence_1, wgmma_fence_2) before the wgmma at line" in \
        r.diagnostics[0].hint
