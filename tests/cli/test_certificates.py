"""Certificates: written for proven procs, re-checkable, and stale when the program changes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import pytest

from exogpu_verify.cli import main
from exogpu_verify.recheck import recheck_certificate
from exogpu_verify.symbolic.certificates import load_certificate

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
    assert all(o["solvers"]["z3"] == o["solvers"]["cvc5"] == "unsat"
               for o in cert["obligations"])
    assert all("(check-sat)" in o["smtlib"] for o in cert["obligations"])
    assert main(["--recheck", "proofs"]) == 0


def test_stale_certificate_fails_recheck(tmp_path, monkeypatch, capsys):
    assert _write_and_prove(tmp_path, monkeypatch, capsys) == 0
    # the program changes after it was proven: the certificate no longer applies
    (tmp_path / "k.py").write_text(textwrap.dedent(SPEC).replace("B[task * 128 + t] = A",
                                                                 "B[task * 128 + t] = 2.0 * A"))
    assert main(["--recheck", "proofs"]) == 1
    assert "stale" in capsys.readouterr().out


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
def test_shipped_proofs_recheck_and_match_specs(tmp_path, monkeypatch, capsys):
    """The proof gate: every proc of specs/ has a committed certificate bound to its current
    program (not stale), whose derivation line is the program's (p1's file and line, the
    steps: a certificate made before the spec moved would name the wrong line), and the
    certificates re-check in fresh solvers: here every one but
    the GEMM and GEMV families' other variants (one factory's structure at other tiles; CI's
    ``exogpu-verify --recheck proofs/`` step and the GPU dry run re-check all of them)."""
    import shutil

    from exogpu_verify.ir.derivation import derivation
    from exogpu_verify.loader import load_module, module_procs
    from exogpu_verify.symbolic.certificates import cert_name, program_hash

    monkeypatch.chdir(ROOT)
    chosen, families = tmp_path / "proofs", set()
    chosen.mkdir()
    for f in sorted((ROOT / "specs").glob("*.py")):
        mod, problem = load_module(f)
        assert mod is not None, problem
        for p in module_procs(mod):
            path = ROOT / "proofs" / cert_name(p)
            assert path.exists(), f"{p.name} ({f.name}) has no certificate in proofs/"
            cert = json.loads(path.read_text())
            assert cert["program_hash"] == program_hash(p), \
                f"{path.name} is stale: {p.name} changed since it was proven"
            assert (cert.get("derivation") or {}).get("summary") == derivation(p), path.name
            if f.stem in ("gemm", "gemv"):
                if f.stem in families:
                    continue
                families.add(f.stem)
            shutil.copy(path, chosen / path.name)
    assert families == {"gemm", "gemv"}
    assert main(["--recheck", str(chosen)]) == 0, capsys.readouterr().out
    capsys.readouterr()


FACTORY = '''
from __future__ import annotations
from exogpu_verify import *

def make(n):
    @proc
    def scale(N: size, A: f32[N] @ CudaGmemLinear):
        assert N % 128 == 0
        with CudaDeviceFunction(blockDim=128):
            for task in cuda_tasks(0, N / 128):
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    A[task * 128 + t] = n * A[task * 128 + t]
    return scale

double = make(2.0)
triple = make(3.0)
'''


def _tampered_dir(tmp_path, name):
    """A folder with one tampered copy of a shipped certificate (its source is found from
    the repository root, the current folder)."""
    from certlib import forge

    d = tmp_path / "proofs"
    d.mkdir()
    src = ROOT / "proofs" / "transpose_smem.transpose_smem.json"
    return d, d / src.name, forge(src, d / src.name, name)


@pytest.mark.parametrize("name", ["forged_empty", "changed_verdict", "deleted_obligation",
                                  "emptied_conflict", "satisfiable_formula", "stale_hash",
                                  "truncated", "empty_file", "wrong_json_type", "bad_isl_text",
                                  "missing_key", "null_field", "unparsable_smtlib"])
def test_recheck_rejects_tampered_certificate(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(ROOT)
    d, path, words = _tampered_dir(tmp_path, name)
    assert main(["--recheck", str(d)]) == 1
    out = capsys.readouterr().out
    assert f"FAILED  {path}" in out and words in out
    assert "Traceback" not in out
    assert "0 ok, 1 failed" in out


def test_recheck_json_lists_problems(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    d, path, words = _tampered_dir(tmp_path, "deleted_obligation")
    assert main(["--recheck", str(d), "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["exit_code"] == 1
    [c] = res["certificates"]
    assert c["file"] == str(path) and c["proc"] == "transpose_smem" and not c["ok"]
    assert any(words in p for p in c["problems"])


def test_recheck_missing_source(tmp_path, monkeypatch, capsys):
    assert _write_and_prove(tmp_path, monkeypatch, capsys) == 0
    (tmp_path / "k.py").unlink()
    assert main(["--recheck", "proofs"]) == 1
    assert "source: 'k.py' not found" in capsys.readouterr().out


def test_recheck_renamed_proc(tmp_path, monkeypatch, capsys):
    assert _write_and_prove(tmp_path, monkeypatch, capsys) == 0
    (tmp_path / "k.py").write_text(textwrap.dedent(SPEC).replace("def copy(", "def copy2("))
    assert main(["--recheck", "proofs"]) == 1
    assert "defines no module-level proc named 'copy' (it defines: copy2)" in \
        capsys.readouterr().out


def test_procs_of_one_factory_must_be_named_apart(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.py").write_text(FACTORY)
    assert main(["--certificates", "proofs", "f.py"]) == 1
    out = capsys.readouterr().out
    assert "f.py:7:5: usage error: 2 different procs are named 'scale' (module-level names " \
           "double, triple)" in out
    assert "rename" in out and not (tmp_path / "proofs").exists()
    # named from the factory's parameter: both proven, two certificates
    (tmp_path / "f.py").write_text(FACTORY.replace(
        "    return scale\n", "    from exogpu_verify.schedule import rename\n"
        "    return rename(scale, f\"scale_{int(n)}\")\n"))
    assert main(["--certificates", "proofs", "f.py"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "proofs").iterdir()) == \
        ["f.scale_2.json", "f.scale_3.json"]
    assert main(["--recheck", "proofs"]) == 0


@pytest.mark.parametrize("name", ["cp_async_copy", "tma_store_scale"])
def test_barrier_program_certificates_recheck(tmp_path, name):
    """Programs with Arrive/Await (cp.async commit groups; a TMA store with its bulk commit
    group): their certificates record the orderings that discharged each pair and re-check."""
    from testlib import load_path

    from exogpu_verify.api import verify
    from exogpu_verify.symbolic.certificates import write_certificate

    p = getattr(load_path(ROOT / "tests/codegen/progs/codegen_progs.py"), name)
    r = verify(p)
    assert r.verdict == "proven"
    path = write_certificate(p, SimpleNamespace(verdict="proven",
                                                obligations=r.extra["obligations"]), tmp_path)
    data = json.loads(path.read_text())
    assert any(o["ordered"] and o["kind"] in ("RAW", "WAR", "WAW", "free without sync")
               for o in data["obligations"])
    res = recheck_certificate(path, p, cache=False)
    assert res.ok, res.problems


@pytest.mark.slow
def test_hopper_gemm_and_pipeline_certificates_recheck(tmp_path, monkeypatch, capsys):
    """The warp-specialized GEMM (TMA ring, wgmma commit groups, proxy-fenced TMA-store
    epilogue), its split variant and the examples' fixed pipelines."""
    monkeypatch.chdir(ROOT)
    d = tmp_path / "proofs"
    files = ["bench/gemm_kernels.py", "examples/sync_bug_multicast.py",
             "examples/sync_bug_wgmma_wait.py", "examples/sync_bug_async_transitive.py"]
    main(["--certificates", str(d)] + files)
    capsys.readouterr()
    names = sorted(p.name for p in d.iterdir())
    assert {"gemm_kernels.gemm_sm90.json", "gemm_kernels.gemm_sm90_split.json",
            "sync_bug_multicast.multicast_fixed.json",
            "sync_bug_wgmma_wait.wgmma_wait_fixed.json",
            "sync_bug_async_transitive.async_transitive_fixed.json"} <= set(names)
    assert main(["--recheck", str(d)]) == 0
    assert f"{len(names)} ok, 0 failed" in capsys.readouterr().out


def test_scheduled_proc_certificate_records_and_rechecks_its_derivation(tmp_path, monkeypatch,
                                                                        capsys):
    """`--certificates` on a schedule: the scheduled proc's certificate holds its chain,
    `--recheck` re-runs the module (every step re-checked), compares the chains, replays the
    record and prints the derivation; a deleted step is named."""
    from certlib import forge_scheduled

    sched = (ROOT / "tests" / "schedule" / "progs" / "saxpy_sched.py").read_text()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(sched)  # saxpy runs on the host: only the kernel is proven
    assert main(["--certificates", "proofs", "--proc", "saxpy_kernel", "k.py"]) == 0
    assert "derived from saxpy (k.py:10)" in capsys.readouterr().out
    cert = tmp_path / "proofs" / "k.saxpy_kernel.json"
    d = json.loads(cert.read_text())["derivation"]
    line = "derived from saxpy (k.py:10) by 4 checked steps (0 unsafe)"
    assert d["summary"] == line and d["source"]["file"] == "k.py"
    assert main(["--recheck", "proofs"]) == 0
    out = capsys.readouterr().out
    assert "ok  proofs/k.saxpy_kernel.json" in out and f"          {line}\n" in out
    assert main(["--recheck", "proofs", "--json"]) == 0
    [c] = json.loads(capsys.readouterr().out)["certificates"]
    assert c["derivation"] == line
    words = forge_scheduled(cert, cert, "deleted_step")
    assert main(["--recheck", "proofs"]) == 1
    out = capsys.readouterr().out
    assert "FAILED  proofs/k.saxpy_kernel.json" in out and words in out
    assert "0 ok, 1 failed" in out and "Traceback" not in out


@pytest.mark.slow
def test_scheduled_hopper_gemm_certificate_rechecks(tmp_path, monkeypatch, capsys):
    """The 104-step schedule of examples/scheduling: its certificate records the chain from
    the naive spec, `--recheck` re-runs the schedule, compares and replays it; flipping one
    step to unsafe is refused."""
    from certlib import _consistent

    monkeypatch.chdir(ROOT)
    d = tmp_path / "proofs"
    assert main(["--certificates", str(d), "--proc", "gemm_tma_wgmma",
                 "examples/scheduling/gemm_schedule.py"]) == 0
    capsys.readouterr()
    cert = d / "gemm_schedule.gemm_tma_wgmma.json"
    data = json.loads(cert.read_text())
    dv = data["derivation"]
    assert dv["source"]["proc"] == "gemm" and len(dv["steps"]) == 104
    assert dv["summary"].endswith("by 104 checked steps (0 unsafe)")
    assert {"replace", "stage_mem", "lift_alloc"} <= {s["primitive"] for s in dv["steps"]}
    assert main(["--recheck", str(d)]) == 0
    assert dv["summary"] in capsys.readouterr().out
    k = next(i for i, s in enumerate(dv["steps"]) if s["primitive"] == "lift_alloc")
    dv["steps"][k]["unsafe"] = True
    cert.write_text(json.dumps(_consistent(data)))
    assert main(["--recheck", str(d)]) == 1
    assert f"derivation.steps[{k}] (step {k + 1}, lift_alloc): unsafe is true in the " \
           "certificate, false in the schedule" in capsys.readouterr().out
