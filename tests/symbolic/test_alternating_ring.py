"""Ring balance when the arriving collective alternates with the iteration (``if w == i % 2``):
proven for all sizes (every index gets exactly one Arrive instance), checked concretely, and
the generated mbarrier counts one warp per phase."""

from __future__ import annotations

from testlib import TESTS, load_path

from exogpu_verify import verify

P = load_path(TESTS / "symbolic" / "progs" / "alternating_ring.py")


def test_alternating_producers_are_proven():
    r = verify(P.alternating_ring, mode="symbolic")
    assert r.verdict == "proven", r.reason


def test_alternating_producers_pass_the_concrete_check():
    r = verify(P.alternating_ring, sizes={"N": 256})
    assert r.verdict == "checked", r.reason


def test_unordered_reader_is_refuted_by_both_checkers():
    for r in (verify(P.alternating_ring_bad, mode="symbolic"),
              verify(P.alternating_ring_bad, sizes={"N": 256})):
        assert r.verdict == "refuted", r.reason
        assert r.diagnostics[0].kind == "sync"


def test_generated_mbarrier_counts_one_warp_per_phase():
    from exogpu_codegen.generate import generate

    src = generate(P.alternating_ring, unchecked=True).source
    assert "full: 2 mbarrier(s), 32 arrival(s) per phase" in src


def test_certificate_of_a_kernel_with_mbarrier_rings_rechecks(tmp_path):
    """Await-progress and ring-index obligations record what they subtract (the matching
    Arrives, pre-arrived slots, the arrived indices), so a certificate's remainder re-derives
    to empty; without that every certificate of an mbarrier kernel failed ``--recheck``."""
    from types import SimpleNamespace

    from exogpu_verify.recheck import recheck_certificate
    from exogpu_verify.symbolic.certificates import write_certificate

    r = verify(P.alternating_ring, mode="symbolic")
    path = write_certificate(P.alternating_ring, SimpleNamespace(
        verdict="proven", obligations=r.extra["obligations"]), tmp_path)
    res = recheck_certificate(path, P.alternating_ring)
    assert res.ok, res.problems
    names = [ob.name for ob in r.extra["obligations"]]
    assert any(n.startswith("await progress") for n in names)
    assert any(n.startswith("every ring index") for n in names)
