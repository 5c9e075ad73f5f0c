"""exogpu-verify: which procs a PATH holds, --proc, --print-ir, --version, python -m."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from exogpu_verify.cli import build_parser, main

PROGS = Path(__file__).resolve().parent / "progs"
VARIANTS = PROGS / "copy_variants.py"


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_procs_built_by_an_imported_factory_count(capsys):
    code, out, _ = run([VARIANTS, "--json"], capsys)
    doc = json.loads(out)
    assert code == 0
    assert [(r["name"], r["proc"], r["verdict"]) for r in doc["reports"]] == [
        ("copy256", "copy", "proven"), ("copy128", "copy", "proven")]


def test_text_names_the_binding_and_the_def(capsys):
    code, out, _ = run([VARIANTS], capsys)
    assert code == 0
    assert "copy_variants.py::copy256 (copy)" in out
    assert "copy_variants.py::copy128 (copy)" in out


def test_imported_procs_are_not_checked_again(capsys):
    code, _, err = run([PROGS / "reexport.py"], capsys)
    assert code == 2
    assert "reexport.py: no @proc in this file" in err
    assert "copy256 only imported" in err


def test_a_folder_counts_each_proc_once(capsys):
    code, out, _ = run([PROGS, "--json"], capsys)
    names = sorted(r["name"] for r in json.loads(out)["reports"])
    assert code == 0 and names == ["copy128", "copy256"]


def test_a_file_named_twice_is_checked_once(capsys):
    code, out, _ = run([VARIANTS, PROGS, "--json"], capsys)
    assert code == 0 and sorted(r["name"] for r in json.loads(out)["reports"]) == \
        ["copy128", "copy256"]


def test_file_without_proc_is_usage_error(tmp_path, capsys):
    f = tmp_path / "kernels.py"
    f.write_text("from exogpu_verify import *\n\ndef forgot_the_decorator(N: size):\n"
                 "    pass\n")
    code, out, err = run([f], capsys)
    assert code == 2
    assert f"{f}: no @proc in this file" in err and "@proc" in err
    assert "0 proc(s)" not in out


def test_folder_without_proc_is_usage_error(tmp_path, capsys):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    code, _, err = run([tmp_path], capsys)
    assert code == 2 and "no @proc in this folder (2 .py files)" in err


def test_no_proc_in_json_mode(tmp_path, capsys):
    f = tmp_path / "empty.py"
    f.write_text("\n")
    code, out, _ = run([f, "--json"], capsys)
    doc = json.loads(out)
    assert code == 2 and doc["error"] == "usage" and "no @proc" in doc["message"]


def test_proc_option_selects_by_binding_or_def_name(capsys):
    code, out, _ = run([VARIANTS, "--proc", "copy128", "--json"], capsys)
    assert code == 0
    assert [r["name"] for r in json.loads(out)["reports"]] == ["copy128"]
    code, out, _ = run([VARIANTS, "--proc", "copy", "--json"], capsys)
    assert [r["name"] for r in json.loads(out)["reports"]] == ["copy256", "copy128"]
    code, out, _ = run([VARIANTS, "--proc", "copy128,copy256", "--json"], capsys)
    assert len(json.loads(out)["reports"]) == 2


def test_unknown_proc_is_usage_error_listing_procs(capsys):
    code, _, err = run([VARIANTS, "--proc", "copy64"], capsys)
    assert code == 2
    assert "--proc copy64: no such proc" in err and "copy128, copy256" in err


def test_print_ir(capsys):
    code, out, _ = run([VARIANTS, "--proc", "copy128", "--print-ir"], capsys)
    assert code == 0
    assert "# IR of" in out and "def copy(N: size" in out and "assert N % 128 == 0" in out
    assert out.index("def copy(") < out.index("proven")
    code, out, _ = run([VARIANTS, "--proc", "copy128", "--print-ir", "--json"], capsys)
    [r] = json.loads(out)["reports"]
    assert r["ir"].startswith("@proc\ndef copy(") and "cuda_threads(0, 128" in r["ir"]


def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("exogpu-verify ")


def test_timeout_is_documented_as_wall_clock():
    [action] = [a for a in build_parser()._actions if "--timeout" in a.option_strings]
    assert "wall-clock" in action.help and "seconds" in action.help


def test_python_dash_m_exogpu_verify():
    r = subprocess.run([sys.executable, "-m", "exogpu_verify", str(VARIANTS), "--proc",
                        "copy256"], capture_output=True, text=True, cwd=PROGS, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "proven" in r.stdout and "copy256" in r.stdout
    r = subprocess.run([sys.executable, "-m", "exogpu_verify", "--version"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("exogpu-verify ")


def test_codegen_counts_factory_procs(tmp_path, capsys):
    from exogpu_codegen.cli import main as codegen_main

    code = codegen_main([str(VARIANTS), "-o", str(tmp_path), "--no-build", "--unchecked",
                         "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(r["name"], r["proc"]) for r in doc] == [("copy256", "copy"), ("copy128", "copy")]
    assert all(r["ok"] for r in doc)
    # one source per binding: the two variants do not overwrite each other
    assert sorted(f.name for f in tmp_path.glob("*.cu")) == ["copy128.cu", "copy256.cu"]
    assert (tmp_path / "copy128.cu").read_text() != (tmp_path / "copy256.cu").read_text()
