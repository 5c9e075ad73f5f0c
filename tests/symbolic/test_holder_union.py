"""Holder unions (issue 15): a B run by several threads, each ordered by its own instance of
the holder. The 2x1-cluster GEMM's B multicast is issued by both CTAs' producer warps, each
behind its own CTA's ``war`` Await; isl discharges every obligation with the two Await
instances together and Z3 and cvc5 agree (the shipped variant is proven in
tests/test_specs.py; its certificate is in proofs/). Its twins: with one CTA's holder missing, or the consumers'
release reaching only their own CTA, the union no longer covers the copy's threads, and the
checker finds the race."""

from __future__ import annotations

import pytest

from exogpu_verify import parse_proc_source, verify
from exogpu_verify.ir.printer import print_proc, roundtrip_env
from exogpu_verify.symbolic import check_sync_symbolic
from symbolic_helpers import ROOT, load_path

NAME = "gemm_bf16_f32_128x256_s4_coop_g2_c2x1"


def _twin(edits: list[tuple[str, str]]):
    """The shipped cluster variant (scheduled from the naive matmul) with ``edits`` (old,
    new) applied once each to its printed text, parsed back."""
    p = load_path(ROOT / "specs" / "gemm.py", "exogpu_union_spec").VARIANTS[NAME]
    text = print_proc(p)
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return parse_proc_source(text, roundtrip_env(p), file="<twin>", instr_info=p.instr)


RELEASE_OWN_CTA = [
    ("Arrive(cuda_in_order) >> war[0:2, kt + 3]", "Arrive(cuda_in_order) >> war[cta, kt + 3]"),
    ("Arrive(cuda_in_order) >> war[0:2, K / 64 + 3]",
     "Arrive(cuda_in_order) >> war[cta, K / 64 + 3]"),
]
ONE_CTA_WAITS = [
    ("                                    Await(war[cta, kt], cuda_temporal, 0)\n",
     "                                    if cta == 0:\n"
     "                                        Await(war[cta, kt], cuda_temporal, 0)\n"),
]


@pytest.mark.slow
@pytest.mark.parametrize("edits, what", [
    (RELEASE_OWN_CTA, "the consumers release only their own CTA's stage"),
    (ONE_CTA_WAITS, "only CTA 0's producer waits for the release"),
], ids=["release-own-cta", "one-cta-waits"])
def test_a_missing_holder_is_a_race(edits, what):
    p = _twin(edits)
    r = verify(p, timeout_s=600)
    assert r.verdict == "refuted", (what, r.reason)
    d = r.diagnostics[0]
    assert d.kind == "sync" and "write-after-read" in d.message, d.message


@pytest.mark.slow
def test_the_cluster_gemm_is_discharged_by_the_two_awaits_together():
    p = load_path(ROOT / "specs" / "gemm.py", "exogpu_union_spec").VARIANTS[NAME]
    res = check_sync_symbolic(p, timeout_s=900, solvers=("z3",))
    assert res.verdict == "proven", res.reason
    unions = [ob for ob in res.obligations
              if any(lbl.endswith("its instances together") for lbl, _ in ob.ordered)]
    assert unions, "no obligation needed the union"
    assert all(ob.extra["solvers"]["z3"] == "unsat" for ob in res.obligations if ob.empty)
