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
