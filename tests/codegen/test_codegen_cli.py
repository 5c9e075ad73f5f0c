"""``exogpu-codegen``: outputs, the gate, exit statuses."""

from __future__ import annotations

import pytest
from codegen_cases import ROOT, needs_nvcc

from exogpu_codegen.cli import main


def test_no_build_unchecked(tmp_path, capsys):
    rc = main([str(ROOT / "specs/vec_copy.py"), "-o", str(tmp_path), "--no-build",
               "--unchecked"])
    assert rc == 0
    src = (tmp_path / "vec_copy.cu").read_text()
    assert "// UNCHECKED" in src
    assert "UNCHECKED" in capsys.readouterr().out


def test_gate_refusal_exits_1(tmp_path, capsys):
    rc = main([str(ROOT / "tests/codegen/progs/codegen_progs.py"), "-o", str(tmp_path),
               "--no-build", "--certificates", str(tmp_path)])
    assert rc == 1
    err = capsys.readouterr().err
    assert "refusing to generate code" in err and "Traceback" not in err


def test_unsupported_exits_1_without_traceback(tmp_path, capsys):
    rc = main([str(ROOT / "examples/sync_bug_wgmma_wait.py"), "-o", str(tmp_path),
               "--no-build", "--unchecked"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "not supported yet" in err and "sync_bug_wgmma_wait.py:" in err
    assert "Traceback" not in err


def test_procs_sharing_a_name_are_refused(tmp_path, capsys):
    """Two procs of one factory with one name would share one certificate at the gate."""
    (tmp_path / "f.py").write_text(
        "from __future__ import annotations\nfrom exogpu_verify import *\n\n"
        "def make(n):\n"
        "    @proc\n"
        "    def scale(N: size, A: f32[N] @ CudaGmemLinear):\n"
        "        assert N % 128 == 0\n"
        "        with CudaDeviceFunction(blockDim=128):\n"
        "            for task in cuda_tasks(0, N / 128):\n"
        "                for t in cuda_threads(0, 128, unit=cuda_thread):\n"
        "                    A[task * 128 + t] = n * A[task * 128 + t]\n"
        "    return scale\n\n"
        "double = make(2.0)\ntriple = make(3.0)\n")
    # through the proof gate, which finds certificates by the proc's name: refused
    rc = main([str(tmp_path / "f.py"), "-o", str(tmp_path / "out"), "--no-build"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "f.py:6:5: usage error: 2 different procs are named 'scale'" in err
    assert not list((tmp_path / "out").glob("*.cu"))
    # unchecked, the sources are named by binding and nothing clashes
    rc = main([str(tmp_path / "f.py"), "-o", str(tmp_path / "out"), "--no-build", "--unchecked"])
    assert rc == 0
    capsys.readouterr()
    assert sorted(f.name for f in (tmp_path / "out").glob("*.cu")) == ["double.cu", "triple.cu"]


@pytest.mark.parametrize("argv", [[], ["--arch", "sm_70", "x.py"], ["/nonexistent.py"]])
def test_usage_exits_2(argv, capsys):
    assert main(argv) == 2


@pytest.mark.slow
@needs_nvcc
def test_build_with_certificates(tmp_path, cache_dir, capsys):
    proofs = ROOT / "proofs"
    if not (proofs / "saxpy.saxpy.json").exists():
        pytest.skip("waiting for the symbolic checker's certificates")
    rc = main([str(ROOT / "specs/saxpy.py"), "-o", str(tmp_path), "--certificates",
               str(proofs)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert (tmp_path / "saxpy.so").exists() and "0 B spilled" in out
    assert "// proof: checked certificate" in (tmp_path / "saxpy.cu").read_text()
