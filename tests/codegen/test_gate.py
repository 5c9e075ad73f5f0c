"""The proof gate: code only for a program with a valid certificate, unless unchecked."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from certlib import ALL, forge
from codegen_cases import ROOT, get_proc

from exogpu_codegen import generate, program_hash
from exogpu_verify.errors import ExoGpuError

HAVE_CERTS = importlib.util.find_spec("exogpu_verify.symbolic.certificates") is not None
waiting = pytest.mark.skipif(not HAVE_CERTS,
                             reason="waiting for the symbolic checker's certificates")
PROOFS = ROOT / "proofs"


def vec_copy():
    return get_proc("specs/vec_copy.py", "vec_copy")


def test_refused_without_certificate(tmp_path):
    with pytest.raises(ExoGpuError) as e:
        generate(vec_copy(), proof_dir=str(tmp_path))
    assert e.value.kind == "usage"
    assert "certificate" in e.value.diagnostic.message
    assert "unchecked" in e.value.diagnostic.hint


def test_refused_without_certificates_module(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "exogpu_verify.symbolic.certificates", None)
    with pytest.raises(ExoGpuError) as e:
        generate(vec_copy())
    assert e.value.kind == "usage"
    assert "no certificate can exist yet" in e.value.diagnostic.message
    g = generate(vec_copy(), unchecked=True)
    assert "// UNCHECKED" in g.source and not g.gate.checked


def test_unchecked_skips_the_gate_and_is_stamped(tmp_path):
    g = generate(vec_copy(), unchecked=True, proof_dir=str(tmp_path))
    head = g.source.splitlines()[:8]
    assert any(ln.startswith("// UNCHECKED: generated with --unchecked") for ln in head)
    assert f"// program hash (sha256 of the printed IR): {program_hash(vec_copy())}" in head


@waiting
def test_valid_certificate_opens_the_gate():
    if not (PROOFS / "vec_copy.vec_copy.json").exists():
        pytest.skip("waiting for the symbolic checker's certificates (proofs/ has none)")
    g = generate(vec_copy(), proof_dir=str(PROOFS))
    assert g.gate.checked
    assert "// proof: checked certificate vec_copy.vec_copy.json" in g.source
    assert "UNCHECKED" not in g.source


@waiting
@pytest.mark.parametrize("name", ALL)
def test_tampered_certificate_is_refused(tmp_path, name):
    """The gate applies --recheck's validation: every forgery of the tamper suite, and every
    malformed file, is refused with what is wrong (never read as 'no certificate')."""
    src = PROOFS / "transpose_smem.transpose_smem.json"
    p = get_proc("specs/transpose_smem.py", "transpose_smem")
    words = forge(src, tmp_path / src.name, name)
    with pytest.raises(ExoGpuError) as e:
        generate(p, proof_dir=str(tmp_path))
    msg = e.value.diagnostic.message
    assert e.value.kind == "usage"
    assert msg.startswith("refusing to generate code for 'transpose_smem': its certificate ")
    assert str(tmp_path / src.name) in msg and words in msg
    shutil.copy(src, tmp_path / src.name)
    assert generate(p, proof_dir=str(tmp_path)).gate.checked


def test_certificate_of_another_program_is_stale(tmp_path):
    src = PROOFS / "vec_copy.vec_copy.json"
    shutil.copy(src, tmp_path / src.name)
    other = tmp_path / "vec_copy.py"
    other.write_text((ROOT / "specs/vec_copy.py").read_text().replace("B[task", "B[0 + task", 1))
    import testlib

    p = testlib.load_path(other).vec_copy
    with pytest.raises(ExoGpuError) as e:
        generate(p, proof_dir=str(tmp_path))
    assert "stale certificate: vec_copy changed since it was proven" in \
        e.value.diagnostic.message


@waiting
def test_gate_checks_the_derivation_of_a_scheduled_proc(tmp_path):
    """A scheduled proc's header says where it comes from; a certificate whose chain was
    tampered with (an unsafe flag flipped) is refused like --recheck refuses it."""
    from types import SimpleNamespace

    from certlib import forge_scheduled
    from testlib import load_prog

    from exogpu_verify.api import verify
    from exogpu_verify.ir.derivation import derivation
    from exogpu_verify.symbolic.certificates import write_certificate

    p = load_prog("schedule/progs/saxpy_sched.py").saxpy_kernel
    r = verify(p)
    path = write_certificate(p, SimpleNamespace(verdict="proven",
                                                obligations=r.extra["obligations"]), tmp_path)
    g = generate(p, proof_dir=str(tmp_path))
    assert g.gate.checked
    line = derivation(p)
    assert line.endswith("by 4 checked steps (0 unsafe)")
    assert f"// {line}" in g.source.splitlines()[:8]
    words = forge_scheduled(path, path, "flipped_unsafe")
    with pytest.raises(ExoGpuError) as e:
        generate(p, proof_dir=str(tmp_path))
    assert e.value.kind == "usage" and words in e.value.diagnostic.message
