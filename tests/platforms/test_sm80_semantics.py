"""Sm80 instruction bodies against numpy: cp.async, ldmatrix, mma.sync with PTX layouts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.platforms.sm80 import *  # noqa: F401,F403
from exogpu_verify.platforms import sm80

import platform_fragments as F

BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng(80)


@pytest.mark.parametrize("T,np_t,ns", [("f32", np.float32, (1, 2, 4)),
                                       ("bf16", BF16, (2, 4, 8)), ("f16", np.float16, (2, 4, 8))])
def test_cp_async_copies(T, np_t, ns):
    p = getattr(sm80, f"Sm80_cp_async_{T}")
    for n in ns:
        src = rng.standard_normal(16).astype(np_t)
        dst = np.zeros(16, np_t)
        interpret(p, n=n, dst=dst[4:4 + n], src=src[8:8 + n])
        assert np.array_equal(dst[4:4 + n], src[8:8 + n])
        assert not dst[:4].any() and not dst[4 + n:].any()


def test_cp_async_rejects_other_sizes():
    with pytest.raises(ExoGpuError):
        interpret(Sm80_cp_async_f32, n=3, dst=np.zeros(3, np.float32), src=np.zeros(3, np.float32))


@pytest.mark.parametrize("name,np_t", [("bf16", BF16), ("f16", np.float16)])
def test_ldmatrix_produces_mma_fragments(name, np_t):
    tile = rng.standard_normal((16, 40)).astype(np_t)  # a strided 16x16 window
    a = np.zeros((32, 2, 2, 2), np_t)
    interpret(getattr(sm80, f"Sm80_ldmatrix_a_x4_{name}"), dst=a, src=tile[:, 8:24])
    assert np.array_equal(a.reshape(32, 8), F.gather(tile[:, 8:24], F.mma_a_k16, 8))
    bt = rng.standard_normal((8, 16)).astype(np_t)  # B transposed: [n, k]
    b = np.zeros((32, 2, 2), np_t)
    interpret(getattr(sm80, f"Sm80_ldmatrix_b_x2_{name}"), dst=b, src=bt)
    assert np.array_equal(b.reshape(32, 4), F.gather(bt.T, F.mma_b_k16, 4))


@pytest.mark.parametrize("name,np_t", [("bf16", BF16), ("f16", np.float16)])
def test_mma_m16n8k16(name, np_t):
    A = rng.standard_normal((16, 16)).astype(np_t)
    B = rng.standard_normal((16, 8)).astype(np_t)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    d = F.gather(C, F.mma_cd, 4).reshape(32, 2, 2).copy()
    interpret(getattr(sm80, f"Sm80_mma_m16n8k16_f32_{name}"), D=d,
              A=F.gather(A, F.mma_a_k16, 8).reshape(32, 2, 2, 2),
              B=F.gather(B, F.mma_b_k16, 4).reshape(32, 2, 2))
    want = A.astype(np.float64) @ B.astype(np.float64) + C
    assert np.allclose(F.scatter(d.reshape(32, 4), F.mma_cd, (16, 8)), want, rtol=1e-5, atol=1e-5)


def test_mma_m16n8k8_tf32():
    A = F.tf32(rng.standard_normal((16, 8)))
    B = F.tf32(rng.standard_normal((8, 8)))
    d = np.zeros((32, 2, 2), np.float32)
    interpret(Sm80_mma_zero_d, D=d)
    interpret(Sm80_mma_m16n8k8_f32_tf32, D=d, A=F.gather(A, F.mma_a_tf32, 4).reshape(32, 2, 2),
              B=F.gather(B, F.mma_b_tf32, 2))
    want = A.astype(np.float64) @ B.astype(np.float64)
    assert np.allclose(F.scatter(d.reshape(32, 4), F.mma_cd, (16, 8)), want, rtol=1e-5, atol=1e-5)


def test_zero_store_load_accumulator():
    d = np.full((32, 2, 2), 7.0, np.float32)
    interpret(Sm80_mma_zero_d, D=d)
    assert not d.any()
    C = rng.standard_normal((16, 8)).astype(np.float32)
    interpret(Sm80_mma_load_d, D=d, src=C)
    assert np.array_equal(d.reshape(32, 4), F.gather(C, F.mma_cd, 4))
    out = np.zeros((16, 24), np.float32)
    interpret(Sm80_mma_store_d, dst=out[:, 8:16], D=d)
    assert np.array_equal(out[:, 8:16], C)


@proc
def warp_gemm_k32(A: bf16[16, 32] @ CudaGmemLinear, Bt: bf16[8, 32] @ CudaGmemLinear,
                  C: f32[16, 8] @ CudaGmemLinear):
    """One warp: lanes gather fragments per the PTX layout, two mma.sync steps along K."""
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            for w in cuda_threads(0, 1, unit=cuda_warp):
                d: f32[32, 2, 2] @ CudaRmem
                Sm80_mma_zero_d(d)
                for ks in seq(0, 2):
                    a: bf16[32, 2, 2, 2] @ CudaRmem
                    b: bf16[32, 2, 2] @ CudaRmem
                    for lane in cuda_threads(0, 32, unit=cuda_thread):
                        for kh in seq(0, 2):
                            for j in seq(0, 2):
                                for mh in seq(0, 2):
                                    a[lane, kh, mh, j] = A[lane / 4 + 8 * mh,
                                                           16 * ks + 2 * (lane % 4) + 8 * kh + j]
                                b[lane, kh, j] = Bt[lane / 4, 16 * ks + 2 * (lane % 4) + 8 * kh + j]
                    Sm80_mma_m16n8k16_f32_bf16(d, a, b)
                Sm80_mma_store_d(C, d)


def test_warp_distributed_gemm_matches_numpy():
    A = rng.standard_normal((16, 32)).astype(BF16)
    Bt = rng.standard_normal((8, 32)).astype(BF16)
    C = np.zeros((16, 8), np.float32)
    interpret(warp_gemm_k32, A=A, Bt=Bt, C=C)
    want = A.astype(np.float64) @ Bt.astype(np.float64).T
    assert np.allclose(C, want, rtol=1e-5, atol=1e-5)
