"""Holder unions (issue 15): a B run by several threads, each ordered by its own instance of
the holder. The 2x1-cluster GEMM's B multicast is issued by both CTAs' producer warps, each
behind its own CTA's ``war`` Await; the proof takes the two Await instances together (the
shipped variant is proven in tests/test_specs.py and tests/symbolic/test_agreement.py).
Here its twins: with one CTA's holder missing, or the consumers' release reaching only their
own CTA, the union no longer covers the copy's threads, and the checker finds the race."""

from __future__ import annotations

from pathlib import Path

import pytest

from exogpu_verify import verify
from symbolic_helpers import ROOT, load_path

NAME = "gemm_bf16_f32_128x256_s4_coop_g2_c2x1"


def _twin(tmp_path: Path, edits: list[tuple[str, str]]):
    """The cluster variant with ``edits`` (old, new) applied to its factory's text once each."""
    src = (ROOT / "specs" / "gemm.py").read_text()
    i = src.index("def gemm_coop_c2")
    head, tail = src[:i], src[i:]
    for old, new in edits:
        assert tail.count(old) == 1, old
        tail = tail.replace(old, new)
    f = tmp_path / f"gemm_twin_{abs(hash(tuple(edits)))}.py"
    f.write_text(head + tail)
    return load_path(f, "exogpu_union_twins").VARIANTS[NAME]


RELEASE_OWN_CTA = [
    ("Arrive(cuda_in_order) >> war[:, k + S - 1]", "Arrive(cuda_in_order) >> war[cta, k + S - 1]"),
    ("Arrive(cuda_in_order) >> war[:, K / (KB * KS) + S - 1]",
     "Arrive(cuda_in_order) >> war[cta, K / (KB * KS) + S - 1]"),
]
ONE_CTA_WAITS = [
    ("                                        Await(war[cw, k], cuda_temporal, 0)\n",
     "                                        if cw == 0:\n"
     "                                            Await(war[cw, k], cuda_temporal, 0)\n"),
]


@pytest.mark.slow
@pytest.mark.parametrize("edits, what", [
    (RELEASE_OWN_CTA, "the consumers release only their own CTA's stage"),
    (ONE_CTA_WAITS, "only CTA 0's producer waits for the release"),
], ids=["release-own-cta", "one-cta-waits"])
def test_a_missing_holder_is_a_race(tmp_path, edits, what):
    p = _twin(tmp_path, edits)
    r = verify(p, timeout_s=600)
    assert r.verdict == "refuted", (what, r.reason)
    d = r.diagnostics[0]
    assert d.kind == "sync" and "write-after-read" in d.message, d.message
