"""Provenance: the derivation line, the JSON record, replays (live, from the source file,
from the record alone) that re-derive every step, tampering detected with the step named,
and the IR diffs of EXOGPU_LOG=schedule."""

from __future__ import annotations

import json

import pytest
from testlib import load_prog

from exogpu_verify import verify
from exogpu_verify.schedule import (ReplayError, derivation, program_hash, provenance_record,
                                    replay, replay_record, step_diffs)

M = load_prog("schedule/progs/saxpy_sched.py")


def test_derivation_line():
    d = derivation(M.saxpy_kernel)
    assert d.startswith("derived from saxpy (") and "saxpy_sched.py:10)" in d
    assert d.endswith("by 4 checked steps (0 unsafe)")
    assert derivation(M.schedule(unsafe=True)).endswith("by 5 checked steps (1 unsafe)")
    assert derivation(M.saxpy) is None


def test_verify_reports_the_derivation():
    r = verify(M.saxpy_kernel)
    assert r.verdict == "proven"
    assert r.extra["derivation"] == derivation(M.saxpy_kernel)
    assert r.to_json()["derivation"] == derivation(M.saxpy_kernel)


def test_record_is_json_and_names_p1():
    rec = json.loads(json.dumps(provenance_record(M.saxpy_kernel)))
    assert rec["source"]["proc"] == "saxpy" and rec["source"]["line"] == 10
    assert rec["source"]["hash"] == program_hash(M.saxpy)
    assert [s["primitive"] for s in rec["steps"]] == ["divide_loop", "wrap_with_context",
                                                      "set_loop_mode", "rename"]
    assert rec["steps"][0]["call"]["args"][:2] == [{"lit": "i"}, {"lit": 256}]
    assert rec["steps"][1]["call"]["args"][1] == {
        "text": "CudaDeviceFunction(blockDim=256)"}
    assert rec["result_hash"] == program_hash(M.saxpy_kernel)


@pytest.mark.parametrize("from_source", [False, True])
def test_replay_rederives_the_chain(from_source):
    assert replay(M.saxpy_kernel, from_source=from_source) == M.saxpy_kernel


def test_replay_from_the_record_alone_and_tampering():
    rec = json.loads(json.dumps(provenance_record(M.saxpy_kernel)))
    assert replay_record(rec, M.saxpy) == M.saxpy_kernel
    bad = json.loads(json.dumps(rec))
    bad["steps"][0]["call"]["args"][1] = {"lit": 128}  # divide by 128, not 256
    with pytest.raises(ReplayError, match="step 1 \\(divide_loop\\) replayed to a different"):
        replay_record(bad, M.saxpy)
    bad = json.loads(json.dumps(rec))
    bad["steps"][2]["call"]["args"][1] = {"text": "CudaThreads(unit=cuda_warp)"}
    with pytest.raises(ReplayError, match="step 3"):
        replay_record(bad, M.saxpy)
    bad = json.loads(json.dumps(rec))
    bad["source"]["hash"] = "0" * 64
    with pytest.raises(ReplayError, match="not the program the schedule started from"):
        replay_record(bad, M.saxpy)


def test_step_diffs_and_log(monkeypatch, capsys):
    diffs = step_diffs(M.saxpy_kernel)
    assert len(diffs) == 4 and "## step 3: set_loop_mode" in diffs[2]
    assert "+            for t in cuda_threads(0, 256, unit=cuda_thread):" in diffs[2]
    monkeypatch.setenv("EXOGPU_LOG", "schedule")
    M.schedule()
    err = capsys.readouterr().err
    assert err.count("## step ") == 4 and "-    for i in seq(0, N):" in err


def test_cursor_arguments_are_recorded_as_paths():
    p = M.schedule(unsafe=True)
    rec = provenance_record(p)
    add_if = next(s for s in rec["steps"] if s["primitive"] == "add_if")
    assert add_if["unsafe"] and add_if["call"]["args"][0]["cursor"][0] == "stmt"
    assert replay_record(json.loads(json.dumps(rec)), M.saxpy) == p


def test_recheck_provenance():
    from exogpu_verify.schedule import recheck_provenance

    rec = json.loads(json.dumps(provenance_record(M.saxpy_kernel)))
    assert recheck_provenance(M.saxpy_kernel, rec) == []
    assert recheck_provenance(M.saxpy, None) == []
    assert "the certificate does not record its schedule" in \
        recheck_provenance(M.saxpy_kernel, None)[0]
    assert "but saxpy is written directly" in recheck_provenance(M.saxpy, rec)[0]
    bad = json.loads(json.dumps(rec))
    bad["steps"][1]["unsafe"] = True
    assert recheck_provenance(M.saxpy_kernel, bad) == [
        "derivation.steps[1] (step 2, wrap_with_context): unsafe is true in the certificate, "
        "false in the schedule"]
    bad = json.loads(json.dumps(rec))
    del bad["steps"][-1]
    assert recheck_provenance(M.saxpy_kernel, bad) == [
        "derivation.steps: the certificate records 3 step(s), the schedule has 4: step 4 of "
        "the schedule, rename('saxpy_kernel'), is missing from the certificate"]
    bad = json.loads(json.dumps(rec))
    bad["steps"][0], bad["steps"][1] = bad["steps"][1], bad["steps"][0]
    probs = recheck_provenance(M.saxpy_kernel, bad)
    assert len(probs) == 2 and probs[0].startswith(
        "derivation.steps[0] (step 1, divide_loop): primitive: the certificate records "
        "'wrap_with_context', the schedule 'divide_loop'; args: ")


def test_recheck_provenance_unsafe_step_hidden():
    from exogpu_verify.schedule import recheck_provenance

    p = M.schedule(unsafe=True)
    rec = json.loads(json.dumps(provenance_record(p)))
    assert recheck_provenance(p, rec) == []
    k = next(i for i, s in enumerate(rec["steps"]) if s["unsafe"])
    rec["steps"][k]["unsafe"] = False
    assert recheck_provenance(p, rec) == [
        f"derivation.steps[{k}] (step {k + 1}, add_if): unsafe is false in the certificate, "
        "true in the schedule (the certificate hides an unsafe step)"]


def test_exogpu_verify_prints_the_derivation():
    import subprocess
    import sys

    from testlib import TESTS

    text = subprocess.run([sys.executable, "-m", "exogpu_verify.cli",
                           str(TESTS / "schedule" / "progs" / "saxpy_sched.py")],
                          capture_output=True, text=True, timeout=600).stdout
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if "::saxpy_kernel" in ln)
    assert "proven" in lines[k]
    assert "derived from saxpy (" in lines[k + 1]
    assert lines[k + 1].endswith("by 4 checked steps (0 unsafe)")
