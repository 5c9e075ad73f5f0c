"""Concrete sizes: bad --sizes are usage errors naming the size; verify(p, sizes=...) says what
is wrong; the sizes a `checked` verdict used appear in text and JSON; JSON columns 1-based."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from exogpu_verify import ExoGpuError, parse_proc_source, verify
from exogpu_verify.cli import main

COPY2D = '''
from __future__ import annotations
from exogpu_verify import *

@proc
def copy2d(M: size, N: size, A: f32[M, N] @ CudaGmemLinear, B: f32[M, N] @ CudaGmemLinear):
    assert N % 128 == 0
    with CudaDeviceFunction(blockDim=128):
        for i in cuda_tasks(0, M):
            for j in cuda_tasks(0, N / 128):
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    B[i, j * 128 + t] = A[i, j * 128 + t]
'''

SCOPE_BUG = '''
from __future__ import annotations
from exogpu_verify import *

@proc
def bad(N: size, A: f32[N] @ CudaGmemLinear):
    for i in cuda_tasks(0, N):
        A[i] = 0.0
'''


@pytest.fixture
def copy2d(tmp_path):
    f = tmp_path / "copy2d.py"
    f.write_text(textwrap.dedent(COPY2D))
    return f


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("sizes,says", [
    ("M=4", r"needs|no value for N"),
    ("M=4,N=abc", r"N must be an integer, got 'abc'"),
    ("M=4,N=100", r"M=4, N=100 violate `assert N % 128 == 0` \(.*copy2d.py:7\)"),
    ("M=0,N=128", r"M must be positive"),
    ("M=4,N=128,K=2", r"no proc checked has a size parameter 'K'"),
    ("M=4,M=8,N=128", r"M is given twice"),
    ("M4", r"expected NAME=INT"),
])
def test_bad_sizes_exit_2_naming_the_size(copy2d, capsys, sizes, says):
    for mode in ("auto", "concrete"):
        code, out, err = run([copy2d, "--sizes", sizes, "--mode", mode], capsys)
        assert code == 2, (out, err)
        assert re.search(says, err), err
        assert "Traceback" not in out + err


def test_bad_sizes_in_json_mode(copy2d, capsys):
    code, out, _ = run([copy2d, "--sizes", "M=4", "--json"], capsys)
    doc = json.loads(out)
    assert code == 2 and doc["error"] == "usage" and "no value for N" in doc["message"]


def test_checked_verdict_carries_its_sizes(copy2d, capsys):
    code, out, _ = run([copy2d, "--mode", "concrete", "--sizes", "M=2,N=256"], capsys)
    assert code == 0
    assert re.search(r"checked\s+\S*copy2d\.py::copy2d\s+at M=2, N=256", out), out
    code, out, _ = run([copy2d, "--mode", "concrete", "--sizes", "M=2,N=256", "--json"],
                       capsys)
    [r] = json.loads(out)["reports"]
    assert r["verdict"] == "checked" and r["sizes"] == {"M": 2, "N": 256}


def test_json_columns_are_one_based_like_the_text(tmp_path, capsys):
    f = tmp_path / "bad.py"
    f.write_text(textwrap.dedent(SCOPE_BUG))
    _, text, _ = run([f], capsys)
    m = re.search(re.escape(str(f)) + r":(\d+):(\d+): scope error", text)
    assert m, text
    _, out, _ = run([f, "--json"], capsys)
    d = json.loads(out)["load_errors"][0]["diagnostic"]
    assert (d["line"], d["col"]) == (int(m.group(1)), int(m.group(2))) == (7, 5)


SRC = """
def copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
"""


@pytest.mark.parametrize("sizes,says", [
    ({"N": "abc"}, "N must be an integer, got 'abc'"),
    ({"N": 2.5}, "N must be an integer, got 2.5"),
    ({"N": -256}, "N must be positive"),
    ({"M": 256}, "'M' is not a size parameter of copy"),
    ({}, "no value for N"),
    ({"N": 100}, "N=100 violates `assert N % 256 == 0`"),
])
def test_verify_with_bad_sizes_is_a_usage_error(sizes, says):
    p = parse_proc_source(SRC, file="copy.py")
    with pytest.raises(ExoGpuError) as ei:
        verify(p, sizes=sizes)
    d = ei.value.diagnostic
    assert d.kind == "usage" and says in d.message and d.line == 2


def test_verify_with_good_sizes_reports_them():
    p = parse_proc_source(SRC, file="copy.py")
    r = verify(p, sizes={"N": 512})
    assert r.verdict == "checked" and r.sizes == {"N": 512}
    assert p.verify(N=512).sizes == {"N": 512}


# ------------------------------------------------ procs without size parameters (issue 15)
FIXED = '''
from __future__ import annotations
from exogpu_verify import *

@proc
def copy512(A: f32[512] @ CudaGmemLinear, B: f32[512] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, 2):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
'''
FIXED_RACY = FIXED.replace("B[task * 256 + t] = A", "B[t] = A")
FIXED_SRC = FIXED.split("@proc\n", 1)[1]


def _symbolic_gives_up(monkeypatch):
    """Make the all-size proof inconclusive, so that ``auto`` mode takes its fallback."""
    import exogpu_verify.symbolic as S
    from exogpu_verify.symbolic.check import SymbolicResult

    monkeypatch.setattr(S, "check_sync_symbolic",
                        lambda p, timeout_s=60.0: SymbolicResult("unknown", "gave up (test)"))


def test_concrete_mode_runs_a_proc_without_sizes():
    p = parse_proc_source(FIXED_SRC, file="fixed.py")
    for r in (verify(p, mode="concrete"), verify(p, sizes={})):
        assert r.verdict == "checked" and r.sizes == {}, r.summary()
        assert r.stages[-1] == "concrete"
        assert "its fixed shapes" in r.reason and "its fixed shapes" in r.summary()
    racy = parse_proc_source(FIXED_RACY.split("@proc\n", 1)[1], file="racy.py")
    r = verify(racy, mode="concrete")
    assert r.verdict == "refuted" and r.diagnostics[0].kind == "sync"
    assert p.verify().verdict == "proven"  # p.verify() without sizes stays the all-size check


def test_auto_fallback_runs_a_proc_without_sizes(monkeypatch):
    _symbolic_gives_up(monkeypatch)
    p = parse_proc_source(FIXED_SRC, file="fixed.py")
    r = verify(p)
    assert r.verdict == "checked" and r.sizes == {}, r.summary()
    assert r.stages == ("static", "symbolic", "concrete")
    assert "gave up (test)" in r.reason and "its fixed shapes" in r.reason


def test_concrete_mode_without_sizes_names_the_missing_size():
    p = parse_proc_source(SRC, file="copy.py")
    r = verify(p, mode="concrete")
    assert r.verdict == "unknown" and "needs a value for N" in r.reason


def test_cli_concrete_mode_on_a_proc_without_sizes(tmp_path, capsys):
    f = tmp_path / "fixed.py"
    f.write_text(textwrap.dedent(FIXED))
    code, out, _ = run([f, "--mode", "concrete"], capsys)
    assert code == 0
    assert re.search(r"checked\s+\S*fixed\.py::copy512\s+at its fixed shapes", out), out
    code, out, _ = run([f, "--mode", "concrete", "--json"], capsys)
    [r] = json.loads(out)["reports"]
    assert code == 0 and r["verdict"] == "checked" and r["sizes"] == {}
    racy = tmp_path / "racy.py"
    racy.write_text(textwrap.dedent(FIXED_RACY))
    code, out, _ = run([racy, "--mode", "concrete"], capsys)
    assert code == 1 and "sync error" in out


def test_checked_fallback_names_its_sizes_and_where_they_came_from(copy2d, monkeypatch,
                                                                   capsys):
    _symbolic_gives_up(monkeypatch)
    copy2d.write_text(copy2d.read_text() + '\nVERIFY_SIZES = {"M": 3, "N": 128}\n')
    code, out, _ = run([copy2d], capsys)
    assert code == 0
    assert re.search(r"checked\s+\S*copy2d\.py::copy2d\s+at M=3, N=128\s+symbolic check "
                     r"inconclusive \(gave up \(test\)\); checked at M=3, N=128 only \(the "
                     r"module's VERIFY_SIZES\)", out), out
    code, out, _ = run([copy2d, "--json"], capsys)
    [r] = json.loads(out)["reports"]
    assert r["verdict"] == "checked" and r["sizes"] == {"M": 3, "N": 128}
    assert "checked at M=3, N=128 only" in r["reason"]
    code, out, _ = run([copy2d, "--sizes", "M=2,N=256", "--json"], capsys)
    [r] = json.loads(out)["reports"]
    assert r["sizes"] == {"M": 2, "N": 256}
    assert "checked at M=2, N=256 only (the sizes given)" in r["reason"]


# ---------------------------------------------- VERIFY_TIMEOUT: a module's own time limit
def _record_timeouts(monkeypatch) -> list:
    """Record the time limit the all-size proof is given (and make it inconclusive)."""
    import exogpu_verify.symbolic as S
    from exogpu_verify.symbolic.check import SymbolicResult

    seen: list = []

    def fake(p, timeout_s=60.0):
        seen.append(timeout_s)
        return SymbolicResult("unknown", "gave up (test)")

    monkeypatch.setattr(S, "check_sync_symbolic", fake)
    return seen


def test_module_timeout_is_the_default_and_options_override_it(copy2d, monkeypatch, capsys):
    seen = _record_timeouts(monkeypatch)
    run([copy2d, "--sizes", "M=1,N=128"], capsys)
    copy2d.write_text(copy2d.read_text() + "\nVERIFY_TIMEOUT = 600\n")
    run([copy2d, "--sizes", "M=1,N=128"], capsys)
    run([copy2d, "--sizes", "M=1,N=128", "--timeout", "7"], capsys)
    assert seen == [60.0, 600.0, 7.0]


def test_verify_takes_the_module_timeout(monkeypatch):
    seen = _record_timeouts(monkeypatch)
    import dataclasses

    p = dataclasses.replace(parse_proc_source(SRC, file="copy.py"),
                            module={"VERIFY_TIMEOUT": 321})
    verify(p)
    verify(p, timeout_s=5)
    assert seen == [321.0, 5]


@pytest.mark.parametrize("value", ["0", "-3", "'long'", "True"])
def test_bad_module_timeout_is_a_usage_error_naming_it(copy2d, capsys, value):
    copy2d.write_text(copy2d.read_text() + f"\nVERIFY_TIMEOUT = {value}\n")
    code, out, err = run([copy2d], capsys)
    assert code == 2 and "VERIFY_TIMEOUT" in err and "positive number of seconds" in err
    assert "Traceback" not in out + err


def test_a_spec_modules_verify_sizes_apply_to_the_factory_procs_it_binds(tmp_path, capsys):
    """A spec module binding procs built by a factory in another module (``specs/gemm.py``'s
    VARIANTS) sets the sizes those procs are checked at: before, the sizes were looked up in
    the factory's module only, and `--mode concrete` said "needs a value for N"."""
    from pathlib import Path

    progs = Path(__file__).resolve().parent / "progs"
    spec = tmp_path / "copy_specs.py"
    spec.write_text(textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(progs)!r})
        from copy_factory import make_copy

        copy256 = make_copy(256)
        VERIFY_SIZES = {{"N": 512}}
    '''))
    code = main([str(spec), "--mode", "concrete", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    (r,) = doc["reports"]
    assert r["verdict"] == "checked" and r["sizes"] == {"N": 512}, r
    spec.write_text(spec.read_text().replace('{"N": 512}', '{"N": 300}'))
    code = main([str(spec), "--mode", "concrete"])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"copy_specs\.py:7: VERIFY_SIZES, the sizes copy256 \(copy\) is checked",
                     err), err
    assert "N % 256 == 0" in err, err
