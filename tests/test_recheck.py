"""``recheck_certificate``: a certificate is evidence only when the program gives exactly its
obligations; every forgery and malformed file is rejected with what differs."""

from __future__ import annotations

import json
import shutil

import pytest
from certlib import ALL, forge
from testlib import ROOT, load_path

from exogpu_verify.recheck import compare_obligations, read_certificate, recheck_certificate

SPEC = ROOT / "specs" / "transpose_smem.py"
CERT = ROOT / "proofs" / "transpose_smem.transpose_smem.json"


def proc():
    return load_path(SPEC).transpose_smem


def test_shipped_certificate_passes():
    r = recheck_certificate(CERT, proc())
    assert r.ok, r.problems
    assert r.obligations == len(json.loads(CERT.read_text())["obligations"]) > 0


@pytest.mark.parametrize("name", ALL)
def test_tampered_certificate_is_rejected(tmp_path, name):
    dst = tmp_path / CERT.name
    words = forge(CERT, dst, name)
    r = recheck_certificate(dst, proc())
    assert not r.ok
    assert any(words in prob for prob in r.problems), r.problems


@pytest.mark.parametrize("spec,name", [("transpose_smem", "transpose_smem"),
                                       ("matmul_smem", "matmul_smem")])
def test_recheck_replays_the_certificates_orderings(spec, name):
    """Re-checking takes the orderings the certificate recorded among the program's
    candidates (no isl subtraction), and the solvers decide: the obligations are the same
    as when isl chooses them, and every discharged access pair was replayed."""
    from exogpu_verify.recheck import derive_obligations
    from exogpu_verify.symbolic.check import check_sync_symbolic, replaying
    from exogpu_verify.symbolic.decide import REPLAYED

    p = getattr(load_path(ROOT / "specs" / f"{spec}.py"), name)
    cert = json.loads((ROOT / "proofs" / f"{spec}.{name}.json").read_text())["obligations"]

    def keys(records):
        return [(o["kind"], o["conflict"], [(x["by"], x["set"]) for x in o["ordered"]],
                 o["smtlib"]) for o in records]

    replayed, why = derive_obligations(p, 600, cert)
    fresh, why2 = derive_obligations(p, 600)
    assert replayed is not None and fresh is not None, (why, why2)
    assert keys(replayed) == keys(fresh) == keys(cert)
    with replaying(cert):
        r = check_sync_symbolic(p, timeout_s=600)
    assert r.verdict == "proven", r.reason
    pairs = [ob for ob in r.obligations if ob.ordered]
    assert pairs and all(ob.extra["isl"] == REPLAYED for ob in pairs)
    assert all(ob.extra["solvers"] == {"isl": "not computed", "z3": "unsat", "cvc5": "unsat"}
               for ob in pairs)


def test_replayed_orderings_that_do_not_cover_are_no_proof():
    """A certificate that picks too few orderings: the replayed obligation is satisfiable
    for the solvers, so the replay proves nothing (the re-check then derives as when proving
    and names the obligation that differs)."""
    from certlib import dropped_last_ordering

    from exogpu_verify.symbolic.check import check_sync_symbolic, replaying

    data = dropped_last_ordering(json.loads(CERT.read_text()))
    with replaying(data["obligations"]):
        r = check_sync_symbolic(proc(), timeout_s=600)
    assert r.verdict == "unknown"
    assert "the certificate's orderings do not discharge obligation" in r.reason
    assert "satisfiable" in r.reason


def test_deleted_obligation_is_named(tmp_path):
    data = json.loads(CERT.read_text())
    gone = data["obligations"].pop(3)
    (tmp_path / CERT.name).write_text(json.dumps(data))
    r = recheck_certificate(tmp_path / CERT.name, proc())
    assert r.problems == [f"obligation {gone['name']!r} (kind {gone['kind']}) is missing from "
                          "the certificate"]


def test_altered_ordered_set_says_which(tmp_path):
    data = json.loads(CERT.read_text())
    i = next(k for k, o in enumerate(data["obligations"]) if len(o["ordered"]) >= 2)
    o = data["obligations"][i]
    o["ordered"][1]["set"] = o["ordered"][1]["set"].replace(" and ", " or ", 1)
    (tmp_path / CERT.name).write_text(json.dumps(data))
    r = recheck_certificate(tmp_path / CERT.name, proc())
    assert len(r.problems) == 1
    msg = r.problems[0]
    assert msg.startswith(f"obligations[{i}] (") and "is altered" in msg
    assert "ordered[1]" in msg and "first difference at character" in msg


def test_forged_empty_certificate_lists_every_missing_obligation(tmp_path):
    data = json.loads(CERT.read_text())
    n = len(data["obligations"])
    data["obligations"] = []
    (tmp_path / CERT.name).write_text(json.dumps(data))
    r = recheck_certificate(tmp_path / CERT.name, proc())
    assert len(r.problems) == n and all("is missing" in p for p in r.problems)


def test_stale_certificate_names_the_changed_line(tmp_path):
    src = tmp_path / "transpose_smem.py"
    src.write_text(SPEC.read_text().replace("B[", "B[0 + ", 1))
    p = load_path(src).transpose_smem
    r = recheck_certificate(CERT, p)
    assert not r.ok and len(r.problems) == 1
    assert r.problems[0].startswith("stale certificate: transpose_smem changed since it was "
                                    "proven")
    assert "first changed line" in r.problems[0]


def test_source_lines_moving_is_not_a_change(tmp_path):
    """Obligation names carry line numbers; the program (printed IR) does not: a comment
    above the kernel keeps the certificate valid."""
    src = tmp_path / "transpose_smem.py"
    text = SPEC.read_text()
    src.write_text(text.replace("@proc", "# a comment\n# another\n@proc", 1))
    p = load_path(src).transpose_smem
    shutil.copy(CERT, tmp_path / CERT.name)
    r = recheck_certificate(tmp_path / CERT.name, p)
    assert r.ok, r.problems


def test_wrong_proc_is_refused():
    vec = load_path(ROOT / "specs" / "vec_copy.py").vec_copy
    r = recheck_certificate(CERT, vec)
    assert r.problems == ["proc: the certificate is for 'transpose_smem', not 'vec_copy'"]


def test_malformed_file_problems_name_the_field(tmp_path):
    data = json.loads(CERT.read_text())
    data["obligations"][2]["ordered"] = [{"by": "x"}, 7]
    data["obligations"][4]["solvers"] = None
    (tmp_path / "c.json").write_text(json.dumps(data))
    _, problems = read_certificate(tmp_path / "c.json")
    name2 = data["obligations"][2]["name"]
    assert f"obligations[2] ({name2!r}).ordered[0].set: missing (expected a string)" in problems
    assert f"obligations[2] ({name2!r}).ordered[1]: a number (expected an object with 'by' " \
           "and 'set')" in problems
    assert any(p.startswith("obligations[4] (") and p.endswith(".solvers: null (expected an "
                                                               "object)") for p in problems)


def test_compare_pairs_by_texts_not_order():
    obs = json.loads(CERT.read_text())["obligations"]
    assert compare_obligations(list(reversed(obs)), obs) == []


def test_recheck_takes_every_witness_from_the_certificate(monkeypatch):
    """Re-checking never depends on how this isl prints its lexmin: with isl's witnesses
    gone, every obligation (barrier progress included) still takes the certificate's, and
    the certificate passes; the GEMM's certificate has witnessed barrier obligations."""
    from exogpu_verify.symbolic import witness

    monkeypatch.setattr(witness.Ordered, "witness", lambda self, domain: None)
    cert = ROOT / "proofs" / "gemm.gemm_bf16_f32_128x128_s5_coop_g1.json"
    data = json.loads(cert.read_text())
    assert any(o["kind"] == "await progress" and o.get("smtlib_witnessed")
               for o in data["obligations"])
    p = load_path(ROOT / "specs" / "gemm.py", "exogpu_recheck_wit").VARIANTS[
        "gemm_bf16_f32_128x128_s5_coop_g1"]
    r = recheck_certificate(cert, p, timeout_s=600, cache=False)
    assert r.ok, r.problems
