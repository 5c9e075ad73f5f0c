"""The layered architecture (pyproject.toml, [tool.importlinter]) holds, and the contract bites.

``lint-imports`` checks every contract on the real packages; a negative control copies the
package, adds one upward import to the IR, and expects the layers contract to break there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = ("import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command(['--no-cache', '--no-logo', 'pyproject.toml']))")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", LINT], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_import_contracts_kept():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout, r.stdout


def test_contract_has_no_escape_hatches():
    """No contract excuses imports, and the layers cover every module of exogpu_verify."""
    tomllib = pytest.importorskip("tomllib")
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts = {c["id"]: c for c in cfg["contracts"]}
    assert not [c["id"] for c in contracts.values() if "ignore_imports" in c]
    assert contracts["layers"]["exhaustive"] is True


def test_upward_import_breaks_the_layers_contract(tmp_path):
    for pkg in ("exogpu_verify", "exogpu_codegen"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    types_py = tmp_path / "exogpu_verify" / "ir" / "types.py"
    types_py.write_text(types_py.read_text() + "\n\ndef _upward():\n"
                        "    from ..api import verify  # noqa: F401\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "exogpu_verify.ir is not allowed to import exogpu_verify.api" in r.stdout, r.stdout
    assert "exogpu_verify.ir.types -> exogpu_verify.api" in r.stdout, r.stdout


def test_procedure_methods_without_facade_name_the_function():
    """A procedure built by the frontend directly has no tools: a clear error, no import."""
    from exogpu_verify.frontend import parse_proc_source as low_parse

    import exogpu_verify

    src = "def p(N: size, A: f32[N]):\n    for i in seq(0, N):\n        A[i] = 0.0\n"
    low = low_parse(src)
    with pytest.raises(TypeError, match=r"exogpu_verify\.schedule\.find\(p"):
        low.find("A[_] = _")
    with pytest.raises(TypeError, match=r"exogpu_verify\.verify\(p"):
        low.verify()
    high = exogpu_verify.parse_proc_source(src)
    assert high == low
    assert high.find("A[_] = _").node().name == "A"
    assert high.verify().verdict == "proven"
