"""Bad input gets a located, actionable error, never a traceback: modules that exit or are
interrupted while imported, unusable settings and output folders, corrupt certificates,
sizes too large to check, a missing or broken nvcc (``exogpu-verify``,
``exogpu-codegen``, ``verify``)."""

from __future__ import annotations

import json
import math
import shutil
import textwrap

import numpy as np
import pytest

from exogpu_codegen.build import find_nvcc, nvcc_version
from exogpu_codegen.cli import main as codegen_main
from exogpu_verify import verify
from exogpu_verify.cli import main
from exogpu_verify.errors import ExoGpuError
from exogpu_verify.loader import load_module
from exogpu_verify.recheck import read_certificate
from testlib import ROOT

COPY = '''
from __future__ import annotations
from exogpu_verify import *

VERIFY_SIZES = {sizes}


@proc
def copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
'''


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def run(args, capsys, cli=main):
    code = cli([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def copy_proc(tmp_path, sizes='{"N": 512}', name="k.py"):
    mod, diag = load_module(write(tmp_path, name, COPY.format(sizes=sizes)))
    assert diag is None, diag
    return mod.copy


# ------------------------------------------------------------------ loading user modules


@pytest.mark.parametrize("cli", [main, codegen_main], ids=["verify", "codegen"])
def test_module_calling_sys_exit_is_a_load_error(tmp_path, capsys, cli):
    f = write(tmp_path, "exits.py", "import sys\n\nsys.exit(0)\n")
    code, out, err = run([f, "-o", tmp_path / "o"] if cli is codegen_main else [f], capsys,
                         cli)
    assert code == 1
    assert "exits.py:3:1: usage error: importing" in out + err
    assert "called sys.exit(0)" in out + err and "__main__" in out + err


@pytest.mark.parametrize("cli", [main, codegen_main], ids=["verify", "codegen"])
def test_ctrl_c_while_importing_exits_130(tmp_path, capsys, cli):
    f = write(tmp_path, "slow.py", "raise KeyboardInterrupt\n")
    code, out, err = run([f, "-o", tmp_path / "o"] if cli is codegen_main else [f], capsys,
                         cli)
    assert code == 130
    assert "interrupted (Ctrl-C)" in out + err


def test_decoration_error_without_a_location_is_placed_at_its_line(tmp_path, capsys):
    f = write(tmp_path, "lam.py", "from __future__ import annotations\n"
                                  "from exogpu_verify import *\n"
                                  "p = proc(lambda N: None)\n")
    code, out, _ = run([f], capsys)
    assert code == 1
    assert "lam.py:3:1: syntax error: @proc must decorate a plain `def`" in out


def test_file_that_is_not_python_is_named_without_a_made_up_line(tmp_path, capsys):
    f = write(tmp_path, "notes.txt", "hello\n")
    code, out, _ = run([f], capsys)
    assert code == 1
    assert "notes.txt: usage error: cannot import" in out and "not a Python module" in out
    assert ":0:" not in out


# ------------------------------------------------------------------ exogpu-verify options


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_timeout_that_is_not_a_finite_number_is_usage_error(tmp_path, capsys, value):
    f = write(tmp_path, "k.py", COPY.format(sizes='{"N": 512}'))
    code, _, err = run([f, "--timeout", value], capsys)
    assert code == 2
    assert f"--timeout must be a positive number of seconds, got {value}" in err


@pytest.mark.parametrize("opt", ["--certificates", "--report"])
def test_output_folder_that_is_a_file_is_usage_error(tmp_path, capsys, opt):
    f = write(tmp_path, "k.py", COPY.format(sizes='{"N": 512}'))
    code, out, err = run([f, opt, f], capsys)
    assert code == 2
    assert f"{opt} {f}: cannot write there (it is a file, not a folder)" in err
    assert "proven" not in out  # refused before anything was checked


def test_bad_verify_sizes_is_usage_error_naming_its_line(tmp_path, capsys):
    f = write(tmp_path, "k.py", COPY.format(sizes='{"N": -5}'))
    code, _, err = run([f], capsys)
    assert code == 2
    assert f"{f}:5: VERIFY_SIZES" in err and "N must be positive (a size), got -5" in err
    # not used by an all-size-only check, and replaced by --sizes
    assert run([f, "--mode", "symbolic"], capsys)[0] == 0
    assert run([f, "--sizes", "N=256"], capsys)[0] == 0


TWO = '''
from __future__ import annotations
from exogpu_verify import *

VERIFY_SIZES = {sizes}


@proc
def copy2(N: size, M: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    assert N % (M - 1) == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
'''


@pytest.mark.parametrize("sizes, says", [
    # an assert on the sizes given is checked though another size is missing (was exit 3:
    # 'no value for M' from the fallback, the violation unsaid)
    ('{"N": 100}', "N=100 violates `assert N % 256 == 0` ({f}:10)"),
    # an assert that cannot be evaluated at the sizes (was a ZeroDivisionError traceback)
    ('{"N": 256, "M": 1}', "N=256, M=1 violate `assert N % (M - 1) == 0` ({f}:11) (it divides "
                          "by zero)"),
], ids=["partial", "divides-by-zero"])
def test_verify_sizes_violating_an_assert_is_usage_error_naming_it(tmp_path, capsys, sizes,
                                                                   says):
    f = write(tmp_path, "k2.py", TWO.format(sizes=sizes))
    for mode in ("auto", "concrete"):
        code, out, err = run([f, "--mode", mode], capsys)
        assert code == 2, (out, err)  # bad usage, as --sizes violating an assert is
        assert f"{f}:5: VERIFY_SIZES, the sizes copy2 is checked at" in err
        assert says.format(f=f) in err
        assert "(give each size parameter a positive integer satisfying copy2's asserts, or " \
               "pass --sizes)" in err
        assert "Traceback" not in out + err
    code, _, err = run([f, "--mode", "symbolic"], capsys)  # not used by the all-size check
    assert code != 2 and "VERIFY_SIZES" not in err


def test_sizes_violating_an_assert_are_named_with_a_size_missing(tmp_path, capsys):
    f = write(tmp_path, "k2.py", TWO.format(sizes='{"N": 100}'))
    code, _, err = run([f, "--sizes", "N=100", "--mode", "concrete"], capsys)
    assert code == 2
    assert "no value for M; N=100 violates `assert N % 256 == 0`" in err
    mod, diag = load_module(f)
    r = verify(mod.copy2, mode="concrete")
    assert r.verdict == "unknown"
    [d] = r.diagnostics
    assert d.kind == "usage" and d.line == 5
    assert "no value for M; N=100 violates `assert N % 256 == 0`" in d.message


# ------------------------------------------------------------------ verify()


def test_unusable_verify_sizes_in_the_fallback_is_located_not_internal(tmp_path):
    p = copy_proc(tmp_path, sizes='{"N": "x"}')
    r = verify(p, mode="concrete")
    assert r.verdict == "unknown"
    [d] = r.diagnostics
    assert d.kind == "usage" and d.line == 5 and "N must be an integer, got 'x'" in d.message


def test_sizes_too_large_to_check_are_unknown_at_once_naming_the_task_loop(tmp_path):
    p = copy_proc(tmp_path)
    r = verify(p, sizes={"N": 2 ** 70}, mode="concrete")
    assert r.verdict == "unknown" and not r.diagnostics
    assert "would run at least 4.61e+18 tasks (the cuda_tasks loop over `task` at " \
           f"{p.srcinfo.file}:12), more than it can run within the timeout; check at " \
           "smaller sizes" in r.reason


def test_huge_sizes_need_no_memory_proportional_to_them(tmp_path, monkeypatch):
    # without the up-front estimate the machine runs tasks until the timeout: its memory is
    # the records of the accesses made, not arrays as large as the task range or the arrays
    from exogpu_verify.amir import check

    monkeypatch.setattr(check, "_MAX_TASK_RATE", 10 ** 30, raising=False)
    p = copy_proc(tmp_path)
    r = verify(p, sizes={"N": 2 ** 70}, mode="concrete", timeout_s=1)
    assert r.verdict == "unknown" and not r.diagnostics
    assert "the concrete check did not finish within the timeout" in r.reason


@pytest.mark.parametrize("timeout", [-1, 0, math.nan, math.inf, "5"])
def test_bad_timeout_is_refused(tmp_path, timeout):
    p = copy_proc(tmp_path)
    with pytest.raises(ValueError, match=r"timeout_s=\.\.\.\) must be a positive number"):
        verify(p, timeout_s=timeout)


def test_verify_of_an_undecorated_function_says_to_decorate_it():
    def kernel(N):
        pass

    with pytest.raises(TypeError, match=r"not function \(decorate its def with @proc"):
        verify(kernel)


def test_numpy_integer_sizes_are_integers(tmp_path):
    p = copy_proc(tmp_path)
    r = verify(p, sizes={"N": np.int64(256)})
    assert r.verdict == "checked" and r.sizes == {"N": 256}
    assert type(r.sizes["N"]) is int


# ------------------------------------------------------------------ loops that do not fit

THREADS = '''
from __future__ import annotations
from exogpu_verify import *


@proc
def k(A: f32[1024] @ CudaGmemLinear):
    with CudaDeviceFunction({launch}):
        for task in cuda_tasks(0, 1):
{body}
'''


@pytest.mark.parametrize("launch, body, hint", [
    # too many tiles of the scope's unit: as many as fit, smaller tiles, a larger launch
    ("blockDim=256", "for wg in cuda_threads(0, 3, unit=cuda_warpgroup):  # <-\n    pass",
     "this scope has 256 threads, room for 2 x cuda_warpgroup (128 threads each), not 3: use "
     "cuda_threads(0, 2, unit=cuda_warpgroup), or cuda_threads(0, 3, unit=2 * cuda_warp) for "
     "3 smaller tiles, or launch blockDim=384"),
    ("blockDim=256", "for w in cuda_threads(0, 8, unit=cuda_warp):\n"
     "    for i in cuda_threads(0, 33, unit=cuda_thread):  # <-\n        A[i] = 0.0",
     "this scope has 32 threads, room for 32 x cuda_thread (1 thread each), not 33: use "
     "cuda_threads(0, 32, unit=cuda_thread)"),
    ("blockDim=256", "for c in cuda_threads(0, 2, unit=cuda_cta_in_cluster):  # <-\n    pass",
     "this scope has 256 threads, room for 1 x cuda_cta_in_cluster (256 threads each), not "
     "2: use cuda_threads(0, 1, "
     "unit=cuda_cta_in_cluster), or cuda_threads(0, 2, unit=cuda_warpgroup) for 2 smaller "
     "tiles, or launch clusterDim=2"),
    # a unit larger than the scope
    ("blockDim=256", "for w in cuda_threads(0, 8, unit=cuda_warp):\n"
     "    for g in cuda_threads(0, 1, unit=cuda_warpgroup):  # <-\n        pass",
     "a cuda_warpgroup (128 threads) does not fit in this scope (32 threads): use "
     "cuda_threads(0, 1, unit=cuda_warp) for a smaller tile, or put the loop outside the "
     "enclosing cuda_threads/CudaWarps, where a whole cuda_warpgroup runs"),
    # a unit not aligned with the scope
    ("blockDim=96", "for a in cuda_threads(0, 2, unit=48 * cuda_thread):\n"
     "    for w in cuda_threads(0, 1, unit=cuda_warp):  # <-\n        pass",
     "instances of cuda_warp (32 threads) are not aligned with this scope (48 threads): use "
     "cuda_threads(0, 1, unit=16 * cuda_thread) for a smaller tile, or make the enclosing "
     "tiles a multiple of 32 threads"),
    # warp ranges
    ("blockDim=128", "with CudaWarps(2, 6):  # <-\n    pass",
     "use CudaWarps(lo, hi) with 0 <= lo < hi <= 4"),
    ('warp_config=[CudaWarpConfig("producer", 1), CudaWarpConfig("consumer", 4)]',
     'with CudaWarps(0, 2, name="producer"):  # <-\n    pass',
     "use hi <= 1, or give the group 2 warps (CudaWarpConfig('producer', 2, ...))"),
], ids=["tiles", "tiles-in-warp", "ctas", "unit-too-large", "misaligned", "warps",
        "named-warps"])
def test_a_loop_that_does_not_fit_its_scope_says_what_fits(tmp_path, launch, body, hint):
    text = THREADS.format(launch=launch, body=textwrap.indent(body, " " * 12))
    f = tmp_path / "fit.py"
    f.write_text(text)
    mod, diag = load_module(f)
    assert diag is None, diag
    r = verify(mod.k, mode="symbolic")
    assert r.verdict == "refuted"
    [d] = r.diagnostics
    line = next(i + 1 for i, ln in enumerate(text.splitlines()) if "# <-" in ln)
    assert (d.kind, d.line) == ("collective", line)
    assert d.hint == hint


# ------------------------------------------------------------------ --recheck


def test_deeply_nested_json_is_a_certificate_problem(tmp_path, capsys):
    d = tmp_path / "proofs"
    d.mkdir()
    (d / "k.copy.json").write_text("[" * 100_000)
    data, problems = read_certificate(d / "k.copy.json")
    assert data is None and "nests lists or objects too deeply" in problems[0]
    code, out, _ = run(["--recheck", d], capsys)
    assert code == 1 and "FAILED" in out


def test_recheck_of_a_file_says_to_give_its_folder(tmp_path, capsys):
    f = tmp_path / "k.copy.json"
    f.write_text("{}")
    code, _, err = run(["--recheck", f], capsys)
    assert code == 2
    assert "this is a file; --recheck takes the folder of certificates" in err


def test_certificate_filed_under_another_procs_name_fails(tmp_path, monkeypatch, capsys):
    """saxpy's certificate saved as vec_copy's: valid for saxpy, but the gate never finds it."""
    monkeypatch.chdir(ROOT)
    d = tmp_path / "proofs"
    d.mkdir()
    shutil.copy(ROOT / "proofs" / "saxpy.saxpy.json", d / "vec_copy.vec_copy.json")
    code, out, _ = run(["--recheck", d, "-j", "1"], capsys)
    assert code == 1
    assert "file name: this is the certificate of saxpy of specs/saxpy.py, which is named " \
           "saxpy.saxpy.json" in out


# ------------------------------------------------------------------ exogpu-codegen


def test_codegen_output_folder_that_is_a_file_is_usage_error(tmp_path, capsys):
    f = write(tmp_path, "k.py", COPY.format(sizes='{"N": 512}'))
    code, _, err = run([f, "--no-build", "--unchecked", "-o", f], capsys, codegen_main)
    assert code == 2
    assert f"-o/--output {f}: cannot write there (it is a file, not a folder)" in err
    assert "Traceback" not in err


def test_codegen_output_file_blocked_is_a_user_error_not_internal(tmp_path, capsys):
    f = write(tmp_path, "k.py", COPY.format(sizes='{"N": 512}'))
    (tmp_path / "o" / "copy.cu").mkdir(parents=True)
    code, _, err = run([f, "--no-build", "--unchecked", "-o", tmp_path / "o"], capsys,
                       codegen_main)
    assert code == 1
    assert "usage error: cannot write" in err and "a folder is in the way" in err
    assert "internal error" not in err


def test_codegen_paths_without_procs_are_usage_error(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    write(tmp_path / "src", "a.py", "x = 1\n")
    code, out, err = run([tmp_path / "src", "--no-build", "-o", tmp_path / "o", "--json"],
                         capsys, codegen_main)
    assert code == 2
    assert "usage error: no @proc in" in err and out == ""


def test_missing_nvcc_is_reported_once_before_any_build(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("EXOGPU_NVCC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nocuda"))
    f = write(tmp_path, "k.py", COPY.format(sizes='{"N": 512}'))
    g = write(tmp_path, "k2.py", COPY.format(sizes='{"N": 512}'))
    code, _, err = run([f, g, "--unchecked", "-o", tmp_path / "o"], capsys, codegen_main)
    assert code == 1
    assert err.count("nvcc was not found") == 1 and "--no-build" in err


@pytest.mark.parametrize("value, why", [("/no/such/nvcc", "does not exist"),
                                        ("/tmp", "is a folder")])
def test_bad_exogpu_nvcc_is_named(monkeypatch, value, why):
    monkeypatch.setenv("EXOGPU_NVCC", value)
    with pytest.raises(ExoGpuError) as e:
        find_nvcc()
    assert e.value.kind == "usage"
    assert f"EXOGPU_NVCC={value} {why}" in e.value.diagnostic.message


def test_a_program_that_is_not_nvcc_is_refused(tmp_path):
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    nvcc_version.cache_clear()
    with pytest.raises(ExoGpuError) as e:
        nvcc_version(str(fake))
    assert e.value.kind == "usage"
    assert "does not work as nvcc" in e.value.diagnostic.message and "status 1" in \
        e.value.diagnostic.message


def test_json_mode_usage_error_is_json(tmp_path, capsys):
    f = write(tmp_path, "k.py", COPY.format(sizes='{"N": 512}'))
    code, out, _ = run([f, "--json", "--timeout", "nan"], capsys)
    assert code == 2 and json.loads(out)["error"] == "usage"


# ------------------------------------------------------------------ non-affine asserts

NON_AFFINE = '''
from __future__ import annotations
from exogpu_verify import *

@proc
def copy2(M: size, N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % ({rhs}) == 0
    assert N % 128 == 0
    with CudaDeviceFunction(blockDim=128):
        for i in cuda_tasks(0, N / 128):
            for t in cuda_threads(0, 128, unit=cuda_thread):
                B[i * 128 + t] = A[i * 128 + t]
'''


@pytest.mark.parametrize("rhs", ["M - 1", "M * M", "M / 2"])
def test_an_assert_that_is_not_quasi_affine_is_left_out_of_the_proof(tmp_path, capsys, rhs):
    """A size assert with a modulus that is not a positive constant cannot be stated to isl:
    the proof is made without it (for more sizes, so still sound) instead of the run ending
    with isl's syntax error ("isl could not build an obligation")."""
    from exogpu_verify.ir.affine import NotAffine, cond_to_isl_str

    f = write(tmp_path, "na.py", NON_AFFINE.format(rhs=rhs))
    mod, diag = load_module(f)
    assert diag is None, diag
    with pytest.raises(NotAffine):
        cond_to_isl_str(mod.copy2.preds[0])
    code, out, _ = run([f, "--mode", "symbolic"], capsys)
    assert code == 0 and "proven" in out and "isl" not in out.split("discharged")[0], out
