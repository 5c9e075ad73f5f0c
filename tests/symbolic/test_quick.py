"""``Candidate.quick``: an ordered set composed from cached relations of its edges equals the
set isl reads from the candidate's text (it is only used to skip candidates that meet nothing
left of the conflicts, so a difference could only cost completeness, but it must not differ
at all). Checked for every P1/P2 candidate of a TMA ring, an mbarrier relay and, in the slow
step, a shipped GEMM."""

from __future__ import annotations

import islpy as isl
import pytest

import exogpu_verify.symbolic.check as check
from exogpu_verify import verify
from rule_helpers import program
from symbolic_helpers import ROOT, load_path
from test_chains import relay
from test_rule_proxy import PROXY, ring


def _compare(p, monkeypatch) -> int:
    seen = []
    orig = check._subtract

    def spy(conflict, ob, label, text, replay=None):
        quick = getattr(text, "quick", None)
        if quick is not None:
            seen.append((label, quick().is_equal(isl.Set(str(text)))))
        return orig(conflict, ob, label, text, replay)

    monkeypatch.setattr(check, "_subtract", spy)
    assert verify(p, mode="symbolic").verdict == "proven"
    assert seen and all(eq for _, eq in seen), [lbl for lbl, eq in seen if not eq]
    return len(seen)


@pytest.mark.parametrize("src", [ring(release=PROXY), relay(2), relay(3)],
                         ids=["tma-ring", "relay-2", "relay-3"])
def test_quick_sets_equal_the_texts(src, monkeypatch):
    _compare(program(src), monkeypatch)


@pytest.mark.slow
def test_quick_sets_equal_the_texts_on_a_shipped_gemm(monkeypatch):
    p = load_path(ROOT / "specs" / "gemm.py", "exogpu_quick_spec").VARIANTS[
        "gemm_bf16_f32_128x128_s5_coop_g1"]
    assert _compare(p, monkeypatch) > 50
