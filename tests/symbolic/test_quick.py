"""``Candidate.quick``: an ordered set composed from cached relations of its edges equals the
set isl reads from the candidate's text, and for a holder union ("its instances together")
contains it (it is only used to skip candidates that meet nothing left of the conflicts, so a
difference could only cost completeness, but a chain's must not differ at all and a union's
must not miss a point). Checked for every P1/P2 candidate of a TMA ring, an mbarrier relay
and, in the slow step, two shipped GEMMs (the 2x1 cluster's multicast is ordered by unions)."""

from __future__ import annotations

import islpy as isl
import pytest

import exogpu_verify.symbolic.check as check
from exogpu_verify import verify
from rule_helpers import program
from symbolic_helpers import ROOT, load_path
from test_chains import relay
from test_rule_proxy import PROXY, ring


def _compare(p, monkeypatch) -> list:
    seen = []
    orig = check._subtract

    def spy(conflict, ob, label, text, replay=None):
        quick = getattr(text, "quick", None)
        if quick is not None:
            exact, q = isl.Set(str(text)), quick()
            union = label.endswith("its instances together")
            seen.append((label, exact.is_subset(q) if union else exact.is_equal(q)))
        return orig(conflict, ob, label, text, replay)

    monkeypatch.setattr(check, "_subtract", spy)
    assert verify(p, mode="symbolic").verdict == "proven"
    assert seen and all(eq for _, eq in seen), [lbl for lbl, eq in seen if not eq]
    return [lbl for lbl, _ in seen]


@pytest.mark.parametrize("src", [ring(release=PROXY), relay(2), relay(3)],
                         ids=["tma-ring", "relay-2", "relay-3"])
def test_quick_sets_equal_the_texts(src, monkeypatch):
    _compare(program(src), monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("name, unions", [("gemm_bf16_f32_128x128_s5_coop_g1", False),
                                          ("gemm_bf16_f32_128x256_s4_coop_g2_c2x1", True)])
def test_quick_sets_equal_the_texts_on_a_shipped_gemm(name, unions, monkeypatch):
    p = load_path(ROOT / "specs" / "gemm.py", "exogpu_quick_spec").VARIANTS[name]
    labels = _compare(p, monkeypatch)
    assert len(labels) > 50
    if unions:
        assert any(lbl.endswith("its instances together") for lbl in labels)
