"""Copy issues (docs/semantics.md, "Copy issues"; ``amir/phases.py``, ``amir/lead.py``): a
copy completing on an mbarrier arms its phase with ``mbarrier.expect_tx`` from its issuing
thread, so some arrival that can complete the phase must be ordered after the issue. Before,
both checkers matched the copy with the next Arrive in program order whatever thread made it,
and a TMA load issued by one warp with the Arrive by another warp (or another lane) was
proven: on the hardware the Arrive can complete the phase before the expect_tx, and the Await
passes before the bytes land."""

from __future__ import annotations

import pytest

from testlib import TESTS, load_path

from exogpu_verify import ExoGpuError, verify

P = load_path(TESTS / "symbolic" / "progs" / "copy_issue_progs.py")

EXPECT = {
    "other_warp": "refuted",
    "other_warp_fenced": "proven",
    "issuer": "proven",
    "issuing_warp": "proven",
    "other_lane": "refuted",
    "multicast_issuer": "proven",
    "multicast_other_warp": "refuted",
}


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_symbolic(name):
    r = verify(getattr(P, name), mode="symbolic")
    assert r.verdict == EXPECT[name], r.summary()
    if r.verdict == "refuted":
        d = r.diagnostics[0]
        assert d.kind == "sync" and "copy issues" in d.message, d.message
        assert "arrive from the thread that issues the copy" in (d.hint or ""), d.hint


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_concrete(name):
    r = verify(getattr(P, name), sizes={"M": 128}, mode="concrete")
    assert r.verdict == {"proven": "checked", "refuted": "refuted"}[EXPECT[name]], r.summary()


def test_a_phase_no_arrival_of_the_copying_cta_completes_is_refused_by_codegen():
    """The checkers order a CTA's expect_tx before that CTA's own Arrives on its element;
    a phase that only another CTA's remote arrive completes is not covered, and code
    generation refuses the Arrive (every CTA must arrive on a copied-into mbarrier)."""
    from exogpu_codegen.generate import generate

    p = P.multicast_one_cta_arrives
    with pytest.raises(ExoGpuError) as e:
        generate(p, unchecked=True)
    assert "does not arrive from every CTA" in str(e.value)
    for name in ("multicast_issuer", "issuer"):
        generate(getattr(P, name), unchecked=True)  # accepted
