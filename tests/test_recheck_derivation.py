"""Certificates of scheduled procs record their derivation (p1's hash and location, every
step with its arguments, what it checked and whether it is unsafe), and ``--recheck``'s
check compares it with the chain of the proc rebuilt from its source and replays it: a
deleted step, a flipped unsafe flag, another p1 or a malformed field is rejected, naming
the field and what differs."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from certlib import SCHEDULED, forge_scheduled
from testlib import ROOT, TESTS, load_path, load_prog

from exogpu_verify.api import verify
from exogpu_verify.ir.derivation import derivation, program_hash
from exogpu_verify.recheck import read_certificate, recheck_certificate
from exogpu_verify.symbolic.certificates import write_certificate

SCHED = TESTS / "schedule" / "progs" / "saxpy_sched.py"
M = load_prog("schedule/progs/saxpy_sched.py")


def certify(p, folder):
    r = verify(p)
    assert r.verdict == "proven", r.reason
    return write_certificate(p, SimpleNamespace(verdict="proven",
                                                obligations=r.extra["obligations"]), folder)


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return certify(M.saxpy_kernel, tmp_path_factory.mktemp("proofs"))


def test_certificate_records_the_chain(cert):
    d = json.loads(cert.read_text())["derivation"]
    assert d["source"]["proc"] == "saxpy" and d["source"]["line"] == 10
    assert d["source"]["file"].endswith("saxpy_sched.py")
    assert d["source"]["hash"] == program_hash(M.saxpy)
    assert [(s["primitive"], s["unsafe"]) for s in d["steps"]] == [
        ("divide_loop", False), ("wrap_with_context", False), ("set_loop_mode", False),
        ("rename", False)]
    div = d["steps"][0]
    assert div["args"] == "'for i in seq(0, N):', 256, ['b', 't'], 'perfect'"
    assert div["checked"].startswith("exact index map i = 256 * b + t; proved (N) % 256 == 0")
    assert d["result_hash"] == d["steps"][-1]["result_hash"] == program_hash(M.saxpy_kernel)
    assert d["summary"] == derivation(M.saxpy_kernel)
    r = recheck_certificate(cert, M.saxpy_kernel)
    assert r.ok, r.problems
    assert r.derivation == derivation(M.saxpy_kernel)


def test_unscheduled_proc_records_none(tmp_path):
    vec = load_path(ROOT / "specs" / "vec_copy.py").vec_copy
    path = certify(vec, tmp_path)
    assert json.loads(path.read_text())["derivation"] is None
    r = recheck_certificate(path, vec)
    assert r.ok and r.derivation is None, r.problems


@pytest.mark.parametrize("name", sorted(SCHEDULED))
def test_tampered_derivation_is_rejected(tmp_path, cert, name):
    dst = tmp_path / cert.name
    words = forge_scheduled(cert, dst, name)
    r = recheck_certificate(dst, M.saxpy_kernel)
    assert not r.ok
    assert any(words in prob for prob in r.problems), r.problems


def test_malformed_derivation_names_every_field(tmp_path, cert):
    data = json.loads(cert.read_text())
    st = data["derivation"]["steps"]
    del st[0]["checked"]
    st[1]["result_hash"] = 7
    st[3]["call"] = []
    data["derivation"]["source"]["line"] = "ten"
    (tmp_path / "c.json").write_text(json.dumps(data))
    _, problems = read_certificate(tmp_path / "c.json")
    assert problems == [
        "derivation.source.line: a string (expected a number or null)",
        "derivation.steps[0] (divide_loop).checked: missing (expected a string)",
        "derivation.steps[1] (wrap_with_context).result_hash: a number (expected a string "
        "or null)",
        "derivation.steps[3] (rename).call: a list (expected an object or null)"]


def test_unsafe_step_is_recorded_and_cannot_be_hidden(tmp_path):
    p = M.schedule(unsafe=True)
    path = certify(p, tmp_path)
    d = json.loads(path.read_text())["derivation"]
    add_if = next(s for s in d["steps"] if s["primitive"] == "add_if")
    assert add_if["unsafe"] and add_if["checked"].startswith("UNCHECKED")
    assert d["summary"].endswith("by 5 checked steps (1 unsafe)")
    assert recheck_certificate(path, p).ok
    data = json.loads(path.read_text())
    add_if = next(s for s in data["derivation"]["steps"] if s["primitive"] == "add_if")
    add_if["unsafe"] = False
    data["derivation"]["summary"] = data["derivation"]["summary"].replace("(1 unsafe)",
                                                                          "(0 unsafe)")
    path.write_text(json.dumps(data))
    r = recheck_certificate(path, p)
    assert r.problems == ["derivation.steps[3] (step 4, add_if): unsafe is false in the "
                          "certificate, true in the schedule (the certificate hides an "
                          "unsafe step)"]


def _variant(tmp_path, old, new, name="saxpy_sched.py", tag="a"):
    """saxpy_sched.py with ``old`` replaced by ``new``, written to ``tmp_path / name`` and
    imported (as its own module: ``tag`` tells two versions of one file apart)."""
    text = SCHED.read_text()
    assert old in text
    f = tmp_path / name
    f.write_text(text.replace(old, new, 1))
    return load_path(f, prefix=f"variant_{tmp_path.name}_{tag}")


def test_changed_schedule_with_the_same_program_is_rejected(tmp_path):
    """The program hash is the same, but the schedule that reaches it is not the recorded
    one: the chain is part of what the certificate claims."""
    orig = _variant(tmp_path, "", "")
    path = certify(orig.saxpy_kernel, tmp_path)
    v = _variant(tmp_path, 'return rename(p, "saxpy_kernel")',
                 'return rename(rename(p, "tmp"), "saxpy_kernel")', tag="renamed twice")
    assert program_hash(v.saxpy_kernel) == program_hash(orig.saxpy_kernel)
    r = recheck_certificate(path, v.saxpy_kernel)
    assert r.problems == [
        "derivation.steps: the certificate records 4 step(s), the schedule has 5: step 4 of "
        "the schedule, rename('tmp'), is missing from the certificate"]


def test_p1_moving_down_its_file_keeps_the_certificate(tmp_path):
    """Like obligation names, the recorded line is where p1 was: the hash binds it."""
    orig = _variant(tmp_path, "", "")
    path = certify(orig.saxpy_kernel, tmp_path)
    moved = _variant(tmp_path, "@proc\n", "# a comment\n@proc\n", tag="moved")
    assert moved.saxpy.srcinfo.line == 11
    r = recheck_certificate(path, moved.saxpy_kernel)
    assert r.ok, r.problems


def test_record_that_does_not_replay_is_rejected(tmp_path):
    """The recorded calls are replayed on p1 from their JSON alone: a module that rebinds a
    name the record's text uses (``cuda_thread``) after scheduling no longer replays."""
    v = _variant(tmp_path, "saxpy_kernel = schedule()\n",
                 "saxpy_kernel = schedule()\ncuda_thread = cuda_warp\n")
    path = certify(v.saxpy_kernel, tmp_path)
    r = recheck_certificate(path, v.saxpy_kernel)
    assert len(r.problems) == 1
    assert r.problems[0].startswith("derivation: replaying the recorded steps on saxpy: "
                                    "step 3 (set_loop_mode)"), r.problems
