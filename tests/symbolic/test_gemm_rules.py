"""The Hopper GEMM of ``bench/gemm_kernels.py`` under the synchronization rules of issue 11,
for all sizes: the kernel is proven, and the two injected bugs of those rules (a proxy Fence
run by the storing warp instead of the consumers that wrote ``C_smem``; no ``wgmma.fence``
before the consumers' wgmmas) are refuted symbolically, replayed at the smallest sizes, with
the kind, line and hint of the concrete checker (``tests/amir/test_gemm_bugs.py``)."""

from __future__ import annotations

import pytest

from exogpu_verify import verify
from symbolic_helpers import ROOT, load_path

SRC = ROOT / "bench" / "gemm_kernels.py"


def gk():
    return load_path(SRC)


def line_of(snippet: str) -> int:
    return [i + 1 for i, ln in enumerate(SRC.read_text().splitlines()) if snippet in ln][0]


def test_gemm_is_proven():
    r = verify(gk().gemm, mode="symbolic")
    assert r.verdict == "proven", r.summary()


@pytest.mark.slow
def test_split_k_gemm_is_proven():
    r = verify(gk().gemm_split, mode="symbolic")
    assert r.verdict == "proven", r.summary()


@pytest.mark.parametrize("bug,hazard,snippet,hint", [
    ("proxy_fence_on_storer", "read-after-write hazard", "tma_store(128, 32,",
     "cuda_generic_and_async_proxy"),
    ("missing_wgmma_fence", "write-after-write hazard", "wgmma(D[wg, :, :, :, :, :],",
     "insert Fence(wgmma_fence_1, wgmma_fence_2) before the wgmma at line"),
])
def test_rule_bugs_are_refuted_for_all_sizes(bug, hazard, snippet, hint):
    r = verify(gk().make_gemm(bug))
    assert r.verdict == "refuted", r.summary()
    assert r.sizes == {"S": 1, "M": 128, "N": 256, "K": 64}
    d = r.diagnostics[0]
    assert d.kind == "sync" and hazard in d.message
    assert d.line == line_of(snippet)
    assert hint in d.hint
