"""``verify``: static-analysis findings become a refuted report; clean programs go on to
the synchronization checkers; nothing raises."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from analysis_helpers import parse

from exogpu_verify import verify
from exogpu_verify.errors import ExoGpuError, user_error

PROGS = Path(__file__).parent / "progs" / "paper_examples.py"


def _load():
    spec = importlib.util.spec_from_file_location("exogpu_tests__analysis__paper_examples",
                                                  PROGS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


M = _load()


def _line(marker: str, nth: int = 0) -> int:
    hits = [i + 1 for i, ln in enumerate(PROGS.read_text().splitlines()) if marker in ln]
    return hits[nth]


def test_paper_broadcast_tmp_refuted_at_its_line():
    r = verify(M.broadcast_tmp)
    assert r.verdict == "refuted" and not r.ok
    d = r.diagnostics[0]
    assert (d.kind, d.line, d.file) == ("distributed-memory", _line("REJECTED HERE"),
                                        str(PROGS))
    assert "Missing: i" in d.message
    assert "static" in r.stages


def test_paper_sharded_tmp_is_proven():
    r = verify(M.sharded_tmp)
    # well-formed and correctly synchronized: proven for all sizes by the symbolic checker
    assert r.verdict == "proven" and r.diagnostics == () and r.reason


def test_smem_in_warp_loop_refuted():
    r = verify(M.smem_in_warp)
    assert [(d.kind, d.line) for d in r.diagnostics] == [("distributed-memory",
                                                          _line("REJECTED HERE", 1))]
    assert "Missing threads" in r.diagnostics[0].message


def test_errors_in_called_procs_are_reported():
    r = verify(M.host_caller)
    assert r.verdict == "refuted"
    assert r.diagnostics[0].kind == "distributed-memory"


def test_user_error_raised_inside_analysis_becomes_a_diagnostic(monkeypatch):
    import exogpu_verify.analysis as A

    def boom(p):
        raise user_error("scope", "synthetic", None)

    monkeypatch.setattr(A, "analyze_static", boom)
    r = verify(M.sharded_tmp)
    assert r.verdict == "refuted" and r.diagnostics[0].kind == "scope"


def test_internal_crash_is_unknown_not_refuted(monkeypatch):
    import exogpu_verify.analysis as A

    def boom(p):
        raise RuntimeError("bug")

    monkeypatch.setattr(A, "analyze_static", boom)
    r = verify(M.sharded_tmp)
    assert r.verdict == "unknown" and r.diagnostics[0].kind == "internal"


@pytest.mark.parametrize("kind,src", [
    ("scope", """
def k(N: size, A: f32[N] @ CudaGmemLinear):
    A[0] = 1.0
"""),
    ("collective", """
def k(A: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for w in cuda_threads(0, 2, unit=cuda_warp):
                pass
"""),
    ("barrier-usage", """
def k(A: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            cg: barrier @ Sm80_CommitGroup
            for i in cuda_threads(0, 1, unit=cuda_thread):
                Arrive(Sm80_cp_async) >> cg
"""),
])
def test_each_kind_reaches_the_report(kind, src):
    r = verify(parse(src))
    assert r.verdict == "refuted" and r.diagnostics[0].kind == kind
    assert r.to_json()["diagnostics"][0]["kind"] == kind


def test_well_formed_kernel_is_proven_for_all_sizes():
    r = verify(parse("""
def k(N: size, A: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                A[task * 256 + t] = A[task * 256 + t] + 1.0
"""))
    assert r.verdict == "proven" and r.reason


def test_exogpu_error_type_is_exported():
    assert issubclass(ExoGpuError, Exception)
