"""The interpreter on programs written with ``@proc`` (``progs/interp_progs.py``)."""

from __future__ import annotations

from testlib import load_path

import inspect
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from exogpu_verify import ExoGpuError, interpret
from exogpu_verify.semantics import interpret_with


def _load(relpath: str):
    return load_path(Path(__file__).resolve().parent / relpath)


P = _load("progs/interp_progs.py")


def line_of(text: str) -> int:
    """The line of ``progs/interp_progs.py`` that contains ``text``."""
    for k, line in enumerate(inspect.findsource(P)[0], 1):
        if text in line:
            return k
    raise AssertionError(text)


def test_gpu_annotations_run_sequentially():
    A = np.random.default_rng(0).standard_normal(512).astype(np.float32)
    B = np.zeros(512, np.float32)
    interpret(P.vec_copy, N=512, A=A, B=B)
    assert np.array_equal(A, B)


def test_bf16_gemm_accumulates_in_f32():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((16, 8)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((8, 24)).astype(ml_dtypes.bfloat16)
    C1, C2 = np.full((16, 24), 7, np.float32), np.full((16, 24), 7, np.float32)
    P.gemm_bf16.interpret(M=16, N=24, K=8, A=A, B=B, C=C1)
    interpret_with(P.gemm_bf16, dict(M=16, N=24, K=8, A=A, B=B, C=C2), vectorize=False)
    ref = np.zeros((16, 24), np.float32)
    for k in range(8):
        ref += A[:, k:k + 1].astype(np.float32) * B[k:k + 1, :].astype(np.float32)
    assert C1.tobytes() == C2.tobytes() == ref.tobytes()


def test_calls_windows_and_scalars():
    A = np.arange(24, dtype=np.float32).reshape(3, 8) - 3
    B = np.zeros((3, 9), np.float32)
    interpret(P.swap_halves, M=3, A=A, B=B)
    assert np.array_equal(B[:, :8], np.concatenate([A[:, 4:], A[:, :4]], axis=1))
    relu = np.maximum(A[:, 0], 0)
    assert np.array_equal(B[:, 8], relu + np.where(A[:, 1] < 0, 1, -1))


def test_out_of_bounds_window_is_reported_at_the_call():
    with pytest.raises(ExoGpuError) as exc:
        interpret(P.bad_call, A=np.zeros(8, np.float32), B=np.zeros(8, np.float32))
    d = exc.value.diagnostic
    assert d.kind == "usage" and d.line == line_of("copy4(4, B[0:4], A[5:9])")
    assert "5:9" in d.message


def test_failed_assert_names_the_sizes():
    with pytest.raises(ExoGpuError) as exc:
        interpret(P.vec_copy, N=100, A=np.zeros(100, np.float32), B=np.zeros(100, np.float32))
    d = exc.value.diagnostic
    assert d.kind == "usage" and d.line == P.vec_copy.srcinfo.line
    assert "N % 256 == 0" in d.message and "N = 100" in d.message
