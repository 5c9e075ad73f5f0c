"""exogpu-verify: exit codes, JSON output, located errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from exogpu_verify.cli import main, parse_sizes, UsageError

GOOD = '''
from __future__ import annotations
from exogpu_verify import *

VERIFY_SIZES = {"N": 512}

@proc
def copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
'''

BAD = '''
from __future__ import annotations
from exogpu_verify import *

@proc
def bad(N: size, A: f32[N] @ CudaGmemLinear):
    for i in cuda_tasks(0, N):
        A[i] = 0.0
'''

BROKEN_PY = "def f(:\n"

RAISES = "raise RuntimeError('boom')\n"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_well_formed_copy_is_proven_for_all_sizes(tmp_path, capsys):
    f = write(tmp_path, "good.py", GOOD)
    code, out, _ = run([f], capsys)
    assert "proven" in out and "copy" in out
    assert code == 0


def test_concrete_mode_says_checked_not_proven(tmp_path, capsys):
    f = write(tmp_path, "good.py", GOOD)
    code, out, _ = run([f, "--mode", "concrete", "--sizes", "N=512"], capsys)
    assert "checked" in out and "proven" not in out
    assert code == 0


RACY = GOOD.replace("B[task * 256 + t] = A[task * 256 + t]", "B[t] = A[task * 256 + t]")


def test_race_is_refuted_with_witness(tmp_path, capsys):
    f = write(tmp_path, "racy.py", RACY)
    code, out, _ = run([f, "--json"], capsys)
    doc = json.loads(out)
    [r] = doc["reports"]
    assert code == 1 and r["verdict"] == "refuted"
    assert r["witness"]["sizes"]["N"] == 512  # the smallest size with two tasks
    assert r["diagnostics"][0]["kind"] == "sync" and r["diagnostics"][0]["line"] == 13


def test_json_output(tmp_path, capsys):
    f = write(tmp_path, "good.py", GOOD)
    code, out, _ = run([f, "--json"], capsys)
    doc = json.loads(out)
    assert doc["exit_code"] == code
    [r] = doc["reports"]
    assert r["proc"] == "copy" and r["verdict"] in ("proven", "checked", "unknown")


def test_user_error_exit_1_with_location(tmp_path, capsys):
    f = write(tmp_path, "bad.py", BAD)
    code, out, _ = run([f], capsys)
    assert code == 1
    assert f"{f}:7:" in out and "scope error" in out and "^" in out
    assert "Traceback" not in out


def test_json_user_error(tmp_path, capsys):
    f = write(tmp_path, "bad.py", BAD)
    code, out, _ = run([f, "--json"], capsys)
    doc = json.loads(out)
    assert code == 1
    assert doc["load_errors"][0]["diagnostic"]["kind"] == "scope"
    assert doc["load_errors"][0]["diagnostic"]["line"] == 7


@pytest.mark.parametrize("text,kind", [(BROKEN_PY, "syntax"), (RAISES, "usage")])
def test_broken_modules_are_reported(tmp_path, capsys, text, kind):
    f = write(tmp_path, "m.py", text)
    code, out, _ = run([f, "--json"], capsys)
    assert code == 1
    assert json.loads(out)["load_errors"][0]["diagnostic"]["kind"] == kind


@pytest.mark.parametrize("args", [["nonexistent_dir"], ["{f}", "--sizes", "N=abc"],
                                  ["{f}", "--sizes", "N=0"], ["{f}", "--mode", "magic"],
                                  ["{f}", "--timeout", "-1"]])
def test_bad_usage_exit_2(tmp_path, capsys, args):
    f = write(tmp_path, "good.py", GOOD)
    code, _, err = run([a.format(f=f) for a in args], capsys)
    assert code == 2
    assert "Traceback" not in err


def test_parse_sizes():
    assert parse_sizes("N=4096,M=512") == {"N": 4096, "M": 512}
    assert parse_sizes(None) is None
    with pytest.raises(UsageError):
        parse_sizes("N")


def test_console_script_runs(tmp_path):
    f = write(tmp_path, "bad.py", BAD)
    r = subprocess.run([sys.executable, "-m", "exogpu_verify.cli", str(f)], capture_output=True,
                       text=True)
    assert r.returncode == 1
    assert "Traceback" not in r.stdout + r.stderr
