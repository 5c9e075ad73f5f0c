"""The GEMM walk-through (examples/scheduling/gemm_schedule.py): the documented walk-through
matches the script, every step is bitwise equal to the spec, the kernel is proven for all
sizes with its provenance, a replay from the source re-derives it, and each injected bug is
refuted at a spec line with the step that made the statement."""

from __future__ import annotations

import re
import sys

import pytest
from testlib import ROOT, load_path

from exogpu_verify import verify
from exogpu_verify.schedule import derivation, replay, walkthrough

pytestmark = pytest.mark.slow

EX = ROOT / "examples" / "scheduling"
if str(EX) not in sys.path:  # the example scripts import their shared steps (gemm_steps.py)
    sys.path.insert(0, str(EX))


@pytest.fixture(scope="module")
def ex():
    return load_path(EX / "gemm_schedule.py")


@pytest.fixture(scope="module")
def steps(ex):
    return ex.schedule()


def _generated(md: str) -> str:
    return md.split("<!-- BEGIN GENERATED -->\n", 1)[1].split("<!-- END GENERATED -->", 1)[0]


def test_walkthrough_matches_the_script(steps):
    doc = (EX / "gemm_walkthrough.md").read_text()
    assert _generated(doc) == walkthrough(steps)


def test_every_step_bitwise_equal_to_the_spec(ex, steps):
    # one K step suffices for the tiling steps; the ring steps run two (slot reuse)
    for k, (desc, p) in enumerate(steps):
        K = 128 if k >= len(steps) - 6 else 64
        assert ex.check_equal(ex.gemm, p, sizes=(("M", 128), ("N", 256), ("K", K))), desc


def test_kernel_proven_with_provenance(ex, steps):
    final = steps[-1][1]
    assert final == ex.gemm_tma_wgmma
    assert not any(r.unsafe for r in final.provenance)
    names = {r.name for r in final.provenance}
    assert {"stage_mem", "replace", "mult_dim", "mult_loops", "insert_window", "lift_alloc",
            "insert_arrive", "insert_await", "add_if"} <= names
    calls = str(final)
    for instr in ("tma_load_2d_bf16", "wgmma_m64n256k16_f32_bf16_ss", "wgmma_zero_m64n256",
                  "tma_store_2d_f32"):
        assert instr in calls
    r = verify(final)
    assert r.verdict == "proven", [str(d) for d in r.diagnostics]
    assert re.fullmatch(r"derived from gemm \(.*gemm_schedule\.py:\d+\) by \d+ checked steps "
                        r"\(0 unsafe\)", r.extra["derivation"])
    assert r.extra["derivation"] == derivation(final)


def test_replay_from_source(ex):
    assert replay(ex.gemm_tma_wgmma, from_source=True) == ex.gemm_tma_wgmma


@pytest.mark.parametrize("bug,hazard,buf", [
    ("raw_await_first_only", "read-after-write", "sA"),
    ("no_proxy_fence", "read-after-write", "C_smem"),
    ("no_final_fence", "free without synchronization", "C_smem"),
])
def test_injected_bugs_refuted_at_spec_lines(ex, bug, hazard, buf):
    k = ex.schedule(bug=bug)[-1][1]
    r = verify(k)
    assert r.verdict == "refuted"
    d = r.diagnostics[0]
    assert d.kind == "sync" and hazard in d.message and f"on {buf}[" in d.message
    spec_lines = range(ex.gemm.srcinfo.line, ex.gemm.srcinfo.line + 12)
    assert d.file.endswith("gemm_schedule.py") and d.line in spec_lines
    assert "<generated>" not in str(d)
    assert any("made by scheduling step" in n for n in d.notes)


@pytest.mark.parametrize("i", [1, 2, 3])
def test_the_schedule_is_reusable_across_shapes(ex, i):
    shape = ex.SHAPES[i]
    steps = ex.schedule(shape)
    final = steps[-1][1]
    assert final.name == shape.name
    assert ex.check_equal(steps[0][1], final)
    assert verify(final).verdict == "proven"
