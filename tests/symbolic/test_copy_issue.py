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
    "multicast_one_cta_arrives": "refuted",
    "multicast_all_arrive_all": "proven",
    "multicast_seq_by_cta": "refuted",
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


def test_a_phase_only_a_remote_arrive_completes_is_refused_by_codegen_too():
    """CTA 1's phase is completed by CTA 0's remote arrive only: the checkers refute it (an
    Arrive's issue reads are made by the lead of every CTA it runs on, on every element it
    names; before, only by the element's own CTA, which does not arrive here, and it was
    proven), and code generation refuses the Arrive (every CTA must arrive on a copied-into
    mbarrier, so a CTA's own arrival is among those that complete its phase)."""
    from exogpu_codegen.generate import generate

    p = P.multicast_one_cta_arrives
    with pytest.raises(ExoGpuError) as e:
        generate(p, unchecked=True)
    assert "does not arrive from every CTA" in str(e.value)
    for name in ("multicast_issuer", "issuer"):
        generate(getattr(P, name), unchecked=True)  # accepted


def test_an_arrive_counts_as_every_ctas_own_only_when_every_cta_makes_it():
    """Element j's issue is ordered before CTA j's own arrivals alone only where every CTA
    arrives on the element in the same instance (amir/phases.py, ``_Threads.every_cta``):
    not under an If or a loop whose bounds read a thread iterator, not with an index reading
    one, not when the instances' threads miss a CTA. Otherwise every arriving CTA's lead must follow the issue."""
    from exogpu_verify.amir.nodes import AmBarrierRef
    from exogpu_verify.amir.phases import _Threads
    from exogpu_verify.ir import nodes as N
    from exogpu_verify.ir.types import index

    cfg = N.CudaDeviceFunction(blockDim=128, clusterDim=2)
    zero, two = N.Const(0, index), N.Const(2, index)
    ref = AmBarrierRef("z", (("iv", zero, two),))
    by_cw = AmBarrierRef("z", (("iv", zero, two), ("pt", N.Read("cw", (), index))))
    both = _Threads(cfg, (1 << 32, 1 << (128 + 32)), iters=frozenset({"cw"}))
    assert both.every_cta(ref)
    assert not both.guard().every_cta(ref)
    assert not both.every_cta(by_cw)
    cw = N.Read("cw", (), index)
    assert both.reads_thread(cw) and not both.reads_thread(zero)
    assert not _Threads(cfg, (1 << 32,), iters=frozenset({"cw"})).every_cta(ref)
    assert not _Threads(cfg, None).every_cta(ref)
