"""The injected instruction and resource bugs of the Hopper GEMM (``bench/
gemm_precondition_bugs.py``): each is refuted with its kind at its line, by the all-size
checker and by the concrete one; the correct twin (a 2-CTA cluster GEMM) is proven."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from gemm_precondition_bugs import BUGS, make_gemm_pre, marker_line  # noqa: E402

from exogpu_verify import verify  # noqa: E402
from exogpu_verify.errors import ExoGpuError  # noqa: E402

#: the bugs the frontend finds when the proc is defined (constant argument layouts)
AT_DEFINITION = {"short_argument_window", "wgmma_wrong_majorness"}
#: the bugs that depend on sizes or loop variables (found by a solver, replayed concretely)
SIZE_DEPENDENT = {"tma_smem_misaligned", "wgmma_misaligned_operand", "global_stride_unaligned"}
#: concrete sizes at which each bug shows (the size-dependent ones need a second ring slot or
#: a K that is not a multiple of 8)
SIZES = {"S": 1, "M": 128, "N": 512, "K": 128}
BUG_SIZES = {"global_stride_unaligned": {**SIZES, "K": 68},
             "oversized_cluster": {**SIZES, "N": 256 * 16}}  # its asserts: N % (256 * 16)


def test_at_least_twelve_instruction_and_resource_bugs():
    kinds = {k for _, k, _ in BUGS.values()}
    assert len(BUGS) >= 12 and kinds == {"instruction", "resource", "type"}


def test_correct_twin_is_proven_and_checked():
    p = make_gemm_pre(cluster=2)
    r = verify(p)
    assert r.verdict == "proven", r.reason
    assert {f.kind for f in r.extra["facts"]} >= {"instruction", "resource", "type"}
    assert verify(p, sizes=SIZES).verdict == "checked"


@pytest.mark.parametrize("bug", sorted(set(BUGS) - AT_DEFINITION))
def test_bug_is_refuted_with_its_kind_and_line(bug):
    _, kind, marker = BUGS[bug]
    line = marker_line(marker)
    p = make_gemm_pre(bug, cluster=2)
    r = verify(p)
    assert r.verdict == "refuted", r.reason
    d = r.diagnostics[0]
    assert (d.kind, d.line) == (kind, line), str(d)
    assert (r.stages[-1] == "replay") == (bug in SIZE_DEPENDENT), r.stages
    rc = verify(p, sizes=BUG_SIZES.get(bug, SIZES))
    dc = rc.diagnostics[0]
    assert rc.verdict == "refuted" and (dc.kind, dc.line) == (kind, line), str(dc)


@pytest.mark.parametrize("bug", sorted(AT_DEFINITION))
def test_bug_with_constant_layouts_is_a_definition_error(bug):
    _, kind, marker = BUGS[bug]
    with pytest.raises(ExoGpuError) as e:
        make_gemm_pre(bug, cluster=2)
    d = e.value.diagnostic
    assert (d.kind, d.line) == (kind, marker_line(marker)), str(d)


def test_sixteen_ctas_with_the_non_portable_opt_in_pass_the_resource_checks():
    from exogpu_verify.analysis import analyze

    assert analyze(make_gemm_pre(cluster=16, non_portable=True)).diagnostics == ()
    d = analyze(make_gemm_pre("oversized_cluster")).diagnostics[0]
    assert "non_portable_cluster=True" in d.hint
