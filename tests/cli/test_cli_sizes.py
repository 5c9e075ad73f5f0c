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
