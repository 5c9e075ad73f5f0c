"""Sm90 instruction bodies against numpy: wgmma (fragment layout, lazy zero), TMA families."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.platforms.sm90 import *  # noqa: F401,F403
from exogpu_verify.platforms import sm90

import platform_fragments as F

NP = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
T_OF = {"f32": f32, "bf16": bf16, "f16": f16}
rng = np.random.default_rng(90)


def _inputs(T, shape):
    x = rng.standard_normal(shape)
    return F.tf32(x) if T == "f32" else x.astype(NP[T])


def _swizzled_rows(T, tile, swizzle=128):
    """A tile stored in rows of ``swizzle`` bytes (the wgmma K-major SMEM layout)."""
    width = swizzle // np.dtype(NP[T]).itemsize
    buf = np.zeros((tile.shape[0], width), NP[T])
    buf[:, :tile.shape[1]] = tile
    return buf[:, :tile.shape[1]]


@pytest.mark.parametrize("T", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("N", [8, 64, 256])
def test_wgmma_ss(T, N):
    K = 32 // np.dtype(NP[T]).itemsize
    A, Bt = _inputs(T, (64, K)), _inputs(T, (N, K))
    C = rng.standard_normal((64, N)).astype(np.float32)
    d = F.gather(C, F.wgmma_d, N // 2, warps=4).reshape(4, 32, N // 8, 2, 2).copy()
    interpret(getattr(sm90, f"wgmma_m64n{N}k{K}_f32_{T}_ss"), D=d, A=_swizzled_rows(T, A),
              B=_swizzled_rows(T, Bt))
    got = F.scatter(d.reshape(4, 32, N // 2), F.wgmma_d, (64, N), warps=4)
    want = A.astype(np.float64) @ Bt.astype(np.float64).T + C
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("T", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("N", [16, 128])
def test_wgmma_rs_register_a(T, N):
    K = 32 // np.dtype(NP[T]).itemsize
    A, Bt = _inputs(T, (64, K)), _inputs(T, (N, K))
    if T == "f32":
        a = F.gather(A, lambda i, w, l: (16 * w + F.mma_a_tf32(i, l)[0], F.mma_a_tf32(i, l)[1]),
                     4, warps=4).reshape(4, 32, 2, 2)
    else:
        a = F.gather(A, lambda i, w, l: (16 * w + F.mma_a_k16(i, l)[0], F.mma_a_k16(i, l)[1]),
                     8, warps=4).reshape(4, 32, 2, 2, 2)
    d = np.zeros((4, 32, N // 8, 2, 2), np.float32)
    interpret(getattr(sm90, f"wgmma_zero_m64n{N}"), D=d)
    interpret(getattr(sm90, f"wgmma_m64n{N}k{K}_f32_{T}_rs"), D=d, A=a, B=_swizzled_rows(T, Bt))
    got = F.scatter(d.reshape(4, 32, N // 2), F.wgmma_d, (64, N), warps=4)
    assert np.allclose(got, A.astype(np.float64) @ Bt.astype(np.float64).T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("swizzle", [32, 64])
def test_wgmma_smaller_swizzles(swizzle):
    p = Sm90_wgmma_ss(bf16, 32, swizzle, swizzle)
    A, Bt = _inputs("bf16", (64, 16)), _inputs("bf16", (32, 16))
    d = np.zeros((4, 32, 4, 2, 2), np.float32)
    interpret(p, D=d, A=_swizzled_rows("bf16", A, swizzle), B=_swizzled_rows("bf16", Bt, swizzle))
    got = F.scatter(d.reshape(4, 32, 16), F.wgmma_d, (64, 32), warps=4)
    assert np.allclose(got, A.astype(np.float64) @ Bt.astype(np.float64).T, rtol=1e-5, atol=1e-5)
    with pytest.raises(ExoGpuError):  # rows must be exactly one swizzle span
        interpret(p, D=d, A=_swizzled_rows("bf16", A, 128), B=_swizzled_rows("bf16", Bt, swizzle))


def test_wgmma_family_bounds_and_memories():
    with pytest.raises(TypeError):
        Sm90_wgmma_ss(bf16, 12)
    with pytest.raises(TypeError):
        Sm90_wgmma_ss(bf16, 264)
    p = wgmma_m64n64k16_f32_bf16_ss
    assert p.instr.timeline == wgmma_async_instr and p.instr.unit == cuda_warpgroup
    assert p.params[0].mem == Sm90_RmemMatrixD
    assert [q.name for q in Sm90_RmemMatrixD.qual_tls(wgmma_async_instr)] == [
        "wgmma_async_rmem_d_qual", "wgmma_zero_qual"]
    assert wgmma_zero_m64n64.instr.timeline == wgmma_zero_instr


SHAPES = {1: (64,), 2: (16, 32), 3: (2, 8, 32), 4: (2, 2, 4, 16), 5: (2, 1, 2, 4, 16)}


@pytest.mark.parametrize("T", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_tma_load_store_reduce(T, rank):
    shape = SHAPES[rank]
    sizes = {f"n{d}": s for d, s in enumerate(shape)}
    g = _inputs(T, tuple(2 * s for s in shape))
    win = tuple(slice(s // 2, s // 2 + s) for s in shape)
    smem = np.zeros(shape, NP[T])
    load = getattr(sm90, f"tma_load_{rank}d_{T}")
    assert load.instr.barrier == CudaMbarrier and load.instr.unit == cuda_warp
    interpret(load, **sizes, dst=smem, src=g[win])
    assert np.array_equal(smem, g[win])
    out = np.zeros_like(g)
    interpret(getattr(sm90, f"tma_store_{rank}d_{T}"), **sizes, dst=out[win], src=smem)
    assert np.array_equal(out[win], g[win])
    acc = _inputs(T, g.shape)
    before = acc.copy()
    red = getattr(sm90, f"tma_reduce_add_{rank}d_{T}")
    assert red.instr.atomic == ("dst",)
    interpret(red, **sizes, dst=acc[win], src=smem)
    want = (before[win].astype(np.float32) + smem.astype(np.float32)).astype(NP[T])
    assert np.array_equal(acc[win], want)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("ncta", [2, 4])
def test_tma_multicast_fills_every_cta(rank, ncta):
    shape = {1: (64,), 2: (16, 32), 3: (4, 8, 32)}[rank]
    sizes = {f"n{d}": s for d, s in enumerate(shape)}
    g = _inputs("bf16", shape)
    dst = np.zeros((ncta,) + shape, NP["bf16"])
    p = getattr(sm90, f"tma_multicast_{rank}d_bf16_x{ncta}")
    assert p.instr.distributed_units("dst") == (cuda_cta_in_cluster,)
    interpret(p, **sizes, dst=dst, src=g)
    for c in range(ncta):
        assert np.array_equal(dst[c], g)


@proc
def tma_wgmma_tile(A: bf16[128, 64] @ CudaGmemLinear, B: bf16[64, 64] @ CudaGmemLinear,
                   C: f32[128, 64] @ CudaGmemLinear):
    """C = A @ B.T, one 64-row tile per warpgroup: TMA loads, 4 wgmma K-steps, fragment store."""
    A_tm = A[:, :] @ Sm90_tensorMap(128, 64, 64)
    B_tm = B[:, :] @ Sm90_tensorMap(128, 64, 64)
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, 1):
            a_s: bf16[2, 64, 64] @ Sm90_SmemSwizzled(128)
            b_s: bf16[64, 64] @ Sm90_SmemSwizzled(128)
            raw: barrier @ CudaMbarrier
            cg: barrier[2] @ Sm90_WgmmaCommitGroup
            for w in cuda_threads(0, 1, unit=cuda_warp):
                tma_load_2d_bf16(64, 64, b_s, B_tm[0:64, 0:64]) >> raw
                for m in seq(0, 2):
                    tma_load_2d_bf16(64, 64, a_s[m, :, :], A_tm[64 * m:64 * m + 64, 0:64]) >> raw
                Arrive(cuda_temporal, 1) >> raw
            Await(raw, cuda_generic_and_async_proxy, 0)
            d: f32[2, 4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
            for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                wgmma_zero_m64n64(d[wg, :, :, :, :, :])
                for k in seq(0, 4):
                    wgmma_m64n64k16_f32_bf16_ss(d[wg, :, :, :, :, :],
                                                a_s[wg, :, 16 * k:16 * k + 16],
                                                b_s[:, 16 * k:16 * k + 16])
                Arrive(wgmma_async) >> cg[wg]
                Await(cg[wg], cuda_in_order, 0)
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    for lane in cuda_threads(0, 32, unit=cuda_thread):
                        for nb in seq(0, 8):
                            for h in seq(0, 2):
                                for j in seq(0, 2):
                                    C[64 * wg + 16 * w + lane / 4 + 8 * h,
                                      8 * nb + 2 * (lane % 4) + j] = d[wg, w, lane, nb, h, j]
            Fence(cuda_in_order, cuda_in_order)


def test_tma_and_wgmma_in_a_kernel_match_numpy():
    A = rng.standard_normal((128, 64)).astype(NP["bf16"])
    B = rng.standard_normal((64, 64)).astype(NP["bf16"])
    C = np.zeros((128, 64), np.float32)
    interpret(tma_wgmma_tile, A=A, B=B, C=C)
    want = A.astype(np.float64) @ B.astype(np.float64).T
    assert np.allclose(C, want, rtol=1e-5, atol=1e-5)
