"""The worked example: the scheduled matmul is bitwise equal to the spec at every step, is
a well-formed kernel, and verify() does not refute it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from exogpu_verify import verify

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scheduling" / "matmul_schedule.py"


@pytest.fixture(scope="module")
def ex():
    spec = importlib.util.spec_from_file_location("matmul_schedule_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def steps(ex):
    return ex.schedule()


def test_every_step_bitwise_equal(ex, steps):
    for desc, p in steps:
        assert ex.check_equal(ex.matmul, p, sizes=(("M", 64), ("N", 128), ("K", 64))), desc


def test_provenance_is_checked(steps):
    final = steps[-1][1]
    assert len(final.provenance) > 40
    assert not any(r.unsafe for r in final.provenance)
    names = {r.name for r in final.provenance}
    assert {"divide_loop", "reorder_loops", "stage_mem", "set_loop_mode", "insert_fence",
            "divide_dim", "rearrange_dim", "wrap_with_context"} <= names


def test_walkthrough_matches_the_script(steps):
    from exogpu_verify.schedule import walkthrough

    doc = (EXAMPLE.parent / "matmul_walkthrough.md").read_text()
    gen = doc.split("<!-- BEGIN GENERATED -->\n", 1)[1].split("<!-- END GENERATED -->", 1)[0]
    assert gen == walkthrough(steps)


@pytest.mark.slow
def test_verify_proven(steps):
    final = steps[-1][1]
    r = verify(final, mode="symbolic")
    assert r.verdict == "proven", r.reason
    assert r.extra["derivation"].endswith("by 73 checked steps (0 unsafe)")
