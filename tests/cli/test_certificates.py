"""Certificates: written for proven procs, re-checkable, and stale when the program changes."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from exogpu_verify.cli import main
from exogpu_verify.symbolic.certificates import load_certificate, recheck_file

ROOT = Path(__file__).resolve().parents[2]

SPEC = '''
from __future__ import annotations
from exogpu_verify import *

@proc
def copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 128 == 0
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, N / 128):
            for t in cuda_threads(0, 128, unit=cuda_thread):
                B[task * 128 + t] = A[task * 128 + t]
'''


def _write_and_prove(tmp_path, monkeypatch, capsys, text=SPEC):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(textwrap.dedent(text))
    code = main(["--certificates", "proofs", "k.py"])
    capsys.readouterr()
    return code


def test_certificate_written_and_rechecked(tmp_path, monkeypatch, capsys):
    assert _write_and_prove(tmp_path, monkeypatch, capsys) == 0
    cert = json.loads((tmp_path / "proofs" / "k.copy.json").read_text())
    assert cert["verdict"] == "proven" and cert["obligations"]
    assert all(o["z3"] in ("unsat", "not needed (no conflicting instances)")
               for o in cert["obligations"])
    assert "(check-sat)" in "".join(o["smtlib"] or "" for o in cert["obligations"])
    assert main(["--recheck", "proofs"]) == 0


def test_stale_certificate_fails_recheck(tmp_path, monkeypatch, capsys):
    assert _write_and_prove(tmp_path, monkeypatch, capsys) == 0
    # the program changes after it was proven: the certificate no longer applies
    (tmp_path / "k.py").write_text(textwrap.dedent(SPEC).replace("B[task * 128 + t] = A",
                                                                 "B[task * 128 + t] = 2.0 * A"))
    assert main(["--recheck", "proofs"]) == 1
    assert "stale" in capsys.readouterr().out


def test_tampered_obligation_fails_recheck(tmp_path):
    path = tmp_path / "t.json"
    shutil.copy(ROOT / "proofs" / "transpose_smem.transpose_smem.json", path)
    cert = json.loads(path.read_text())
    ob = next(o for o in cert["obligations"] if o["ordered"])
    ob["ordered"] = []  # drop the justification: the remainder is no longer empty
    path.write_text(json.dumps(cert))
    r = recheck_file(path)
    assert not r.ok and "not empty" in r.problems[0]


def test_load_certificate_valid_for_exact_program(tmp_path, monkeypatch, capsys):
    assert _write_and_prove(tmp_path, monkeypatch, capsys) == 0
    import importlib.util

    spec = importlib.util.spec_from_file_location("k_cert_mod", tmp_path / "k.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cert = load_certificate(tmp_path / "proofs", mod.copy)
    assert cert is not None and cert.valid_for(mod.copy)


def test_shipped_proofs_of_the_small_specs_recheck(monkeypatch, capsys, tmp_path):
    """The proof gate on the certificates of every spec but the GEMM family (which the slow
    twin below and CI's `exogpu-verify --recheck proofs/` re-check: minutes of solver time)."""
    monkeypatch.chdir(ROOT)
    small = [c for c in (ROOT / "proofs").glob("*.json") if not c.name.startswith("gemm")]
    assert small
    for c in small:
        (tmp_path / c.name).write_text(c.read_text())
    assert main(["--recheck", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{len(small)} certificate(s): {len(small)} ok, 0 failed" in out


@pytest.mark.slow
def test_shipped_proofs_recheck_and_match_specs(monkeypatch, capsys):
    """The proof gate: committed certificates for specs/ re-check and are not stale."""
    monkeypatch.chdir(ROOT)
    assert main(["--recheck", "proofs"]) == 0
    capsys.readouterr()
    specs = {p.stem for p in (ROOT / "specs").glob("*.py")}
    certs = {p.name.split(".")[0] for p in (ROOT / "proofs").glob("*.json")}
    assert specs <= certs, f"specs without certificates: {specs - certs}"
