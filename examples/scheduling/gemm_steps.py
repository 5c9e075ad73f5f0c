"""Shared pieces of the GEMM schedules (``gemm_schedule.py``, ``gemm_library_schedule.py``):
the shape of a kernel, its naive spec, the wgmma fragment layout of an accumulator and the
loop nest over it (the library's own, from ``exogpu_verify.kernels.gemm``), and the
interpreter check (random inputs, bitwise comparison, the split-K summation order)."""

from __future__ import annotations

import numpy as np

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.kernels.gemm import (WARPS, Shape, fragment_layout,  # noqa: F401
                                        fragment_loops, span)
from exogpu_verify.kernels.gemm import naive_spec as spec  # noqa: F401
from exogpu_verify.schedule import *  # noqa: F401,F403


def _np_type(t):
    import ml_dtypes

    return ml_dtypes.bfloat16 if t.name == "bf16" else np.float32


def inputs(p, sizes, seed=0):
    """``(M, N, K, A, B)``: random inputs of ``p`` at ``sizes`` (standard normal, in the
    parameters' types; B is N x K, or K x N where ``p`` takes it so)."""
    rng = np.random.default_rng(seed)
    sz = dict(sizes)
    M, N, K = sz["M"], sz["N"], sz["K"]
    A = rng.standard_normal((M, K)).astype(_np_type(p.param("A").type.scalar))
    b = tuple(sz[getattr(e, "name", "")] for e in p.param("B").type.shape)
    B = rng.standard_normal(b).astype(_np_type(p.param("B").type.scalar))
    return M, N, K, A, B


def run(p, sizes, seed=0):
    """``p``'s C on the random inputs of ``check_equal`` (C starts as NaN)."""
    M, N, K, A, B = inputs(p, sizes, seed)
    C = np.full((M, N), np.nan, _np_type(p.param("C").type.scalar))
    interpret(p, M=M, N=N, K=K, A=A, B=B, C=C)
    return C


def check_equal(p0, p1, sizes=(("M", 128), ("N", 256), ("K", 128)), seed=0):
    """Run both procs on the same random inputs; the outputs must be bitwise equal."""
    return run(p0, sizes, seed).tobytes() == run(p1, sizes, seed).tobytes()


def split_k_reference(p, split_k: int, kb: int, sizes, seed=0):
    """What a split-K kernel computes on ``check_equal``'s inputs (f32 C), written
    independently of the IR: slice ``s`` sums the K steps ``s, s + split_k, ...`` (``kb``
    columns each, in order) in f32 from zero, and the slices are added in order into a C
    the host zeroed. The naive spec sums ``k = 0, 1, ...`` into C instead: the same sum in
    real arithmetic, a different rounding."""
    M, N, K, A, B = inputs(p, sizes, seed)
    A, B = A.astype(np.float32), B.astype(np.float32)
    C = np.zeros((M, N), np.float32)
    for s in range(split_k):
        D = np.zeros((M, N), np.float32)
        for kt in range(K // (kb * split_k)):
            for ki in range(kb):
                k = kb * (split_k * kt + s) + ki
                D += np.outer(A[:, k], B[:, k])  # products round in f32 (exact for bf16)
        C += D
    return C
