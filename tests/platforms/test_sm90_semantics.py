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


def _mn_major(T, X, k_tile=16, swizzle=128):
    """``X[mn, k]`` in the MN-major SMEM layout ``[MN/W, k_tile, W]``, W = swizzle/2 elements
    per row: atom column c holds rows k of ``X[c*W:(c+1)*W, k]`` (the first K rows used)."""
    W = swizzle // 2
    buf = np.zeros((X.shape[0] // W, k_tile, W), NP[T])
    for c in range(buf.shape[0]):
        for k in range(X.shape[1]):
            buf[c, k, :] = X[c * W:(c + 1) * W, k]
    return buf


def _run_k_steps(p, d, A, Bt, major_a, major_b, swa=128, swb=128, a_regs=None):
    """Call ``p`` once per 16-deep K-slice of A [64, K] and Bt [N, K] (K-major or MN-major
    SMEM, K tile = K: the MN-major atom-column stride is K * W, not 16 * W)."""
    K = A.shape[1]
    a_s = _mn_major(p_t(p), A, K, swa) if major_a == "MN" else None
    b_s = _mn_major(p_t(p), Bt, K, swb) if major_b == "MN" else None
    for k in range(K // 16):
        ks = slice(16 * k, 16 * k + 16)
        b = b_s[:, ks, :] if b_s is not None else _swizzled_rows(p_t(p), Bt[:, ks], swb)
        if a_regs is not None:
            interpret(p, D=d, A=a_regs[k], B=b)
        else:
            a = a_s[:, ks, :] if a_s is not None else _swizzled_rows(p_t(p), A[:, ks], swa)
            interpret(p, D=d, A=a, B=b)


def p_t(p):
    return "bf16" if "_bf16_" in p.name else "f16"


@pytest.mark.parametrize("T,majors,N", [("bf16", ("MN", "K"), 8), ("f16", ("MN", "K"), 64),
                                         ("bf16", ("MN", "K"), 256), ("f16", ("K", "MN"), 64),
                                         ("bf16", ("K", "MN"), 192), ("f16", ("MN", "MN"), 128),
                                         ("bf16", ("MN", "MN"), 256)])
def test_wgmma_ss_mn_major(T, majors, N):
    sfx = "_mn_" + ("a" if majors[0] == "MN" else "") + ("b" if majors[1] == "MN" else "")
    p = getattr(sm90, f"wgmma_m64n{N}k16_f32_{T}_ss{sfx}")
    assert p is Sm90_wgmma_ss(T_OF[T], N, 128, 128, *majors)
    A, Bt = _inputs(T, (64, 32)), _inputs(T, (N, 32))
    C = rng.standard_normal((64, N)).astype(np.float32)
    d = F.gather(C, F.wgmma_d, N // 2, warps=4).reshape(4, 32, N // 8, 2, 2).copy()
    _run_k_steps(p, d, A, Bt, *majors)
    got = F.scatter(d.reshape(4, 32, N // 2), F.wgmma_d, (64, N), warps=4)
    want = A.astype(np.float64) @ Bt.astype(np.float64).T + C
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("T", ["bf16", "f16"])
def test_wgmma_rs_n_major_b(T):
    N = 128
    p = getattr(sm90, f"wgmma_m64n{N}k16_f32_{T}_rs_mn_b")
    A, Bt = _inputs(T, (64, 32)), _inputs(T, (N, 32))
    regs = [F.gather(A[:, 16 * k:16 * k + 16],
                     lambda i, w, l: (16 * w + F.mma_a_k16(i, l)[0], F.mma_a_k16(i, l)[1]),
                     8, warps=4).reshape(4, 32, 2, 2, 2) for k in range(2)]
    d = np.zeros((4, 32, N // 8, 2, 2), np.float32)
    interpret(getattr(sm90, f"wgmma_zero_m64n{N}"), D=d)
    _run_k_steps(p, d, A, Bt, "K", "MN", a_regs=regs)
    got = F.scatter(d.reshape(4, 32, N // 2), F.wgmma_d, (64, N), warps=4)
    assert np.allclose(got, A.astype(np.float64) @ Bt.astype(np.float64).T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("T,N,swa,swb,majors", [("bf16", 64, 64, 32, ("MN", "MN")),
                                                 ("f16", 96, 32, 64, ("MN", "MN")),
                                                 ("bf16", 32, 128, 64, ("K", "MN")),
                                                 ("f16", 48, 32, 128, ("MN", "K"))])
def test_wgmma_mn_major_smaller_swizzles(T, N, swa, swb, majors):
    p = Sm90_wgmma_ss(T_OF[T], N, swa, swb, *majors)
    A, Bt = _inputs(T, (64, 32)), _inputs(T, (N, 32))
    d = np.zeros((4, 32, N // 8, 2, 2), np.float32)
    _run_k_steps(p, d, A, Bt, *majors, swa=swa, swb=swb)
    got = F.scatter(d.reshape(4, 32, N // 2), F.wgmma_d, (64, N), warps=4)
    assert np.allclose(got, A.astype(np.float64) @ Bt.astype(np.float64).T, rtol=1e-5, atol=1e-5)
    if majors[1] == "MN":
        r = Sm90_wgmma_rs(T_OF[T], N, swb, "MN")
        assert r.name.endswith("_rs_mn_b" + ("" if swb == 128 else f"_sw{swb}"))


def test_wgmma_mn_major_preconditions():
    p = sm90.wgmma_m64n64k16_f32_bf16_ss_mn_ab
    A, Bt = _inputs("bf16", (64, 16)), _inputs("bf16", (64, 16))
    d = np.zeros((4, 32, 8, 2, 2), np.float32)
    wide = np.zeros((1, 16, 128), NP["bf16"])  # rows of 256 bytes, not one 128-byte row
    with pytest.raises(ExoGpuError) as e:
        interpret(p, D=d, A=wide[:, :, :64], B=_mn_major("bf16", Bt))
    assert e.value.kind == "usage" and "stride(A, 1)" in str(e.value)
    ragged = _mn_major("bf16", A, k_tile=20)  # atom columns 20 rows apart: not whole atoms
    with pytest.raises(ExoGpuError) as e:
        interpret(p, D=d, A=ragged[:, :16, :], B=_mn_major("bf16", Bt))
    assert e.value.kind == "usage" and "stride(A, 0)" in str(e.value)
    with pytest.raises(TypeError):  # transposes are for 16-bit types only (PTX ISA)
        Sm90_wgmma_ss(f32, 64, major_b="MN")
    with pytest.raises(TypeError):  # an N-major B covers N in whole 64-element atoms
        Sm90_wgmma_ss(bf16, 32, major_b="MN")
    with pytest.raises(TypeError):
        Sm90_wgmma_rs(bf16, 64, major_b="T")


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


@proc
def tma_wgmma_mn_major_tile(At: bf16[64, 64] @ CudaGmemLinear, B: bf16[64, 128] @ CudaGmemLinear,
                            C: f32[64, 128] @ CudaGmemLinear):
    """C = At.T @ B with both operands stored K-outer in GMEM (A M-major, B N-major): each TMA
    box [64 K rows, 64] lands as one atom column of the MN-major SMEM layout."""
    At_tm = At[:, :] @ Sm90_tensorMap(128, 64, 64)
    B_tm = B[:, :] @ Sm90_tensorMap(128, 64, 64)
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, 1):
            a_s: bf16[1, 64, 64] @ Sm90_SmemSwizzled(128)
            b_s: bf16[2, 64, 64] @ Sm90_SmemSwizzled(128)
            raw: barrier @ CudaMbarrier
            cg: barrier @ Sm90_WgmmaCommitGroup
            for w in cuda_threads(0, 1, unit=cuda_warp):
                tma_load_2d_bf16(64, 64, a_s[0, :, :], At_tm[0:64, 0:64]) >> raw
                for c in seq(0, 2):
                    tma_load_2d_bf16(64, 64, b_s[c, :, :], B_tm[0:64, 64 * c:64 * c + 64]) >> raw
                Arrive(cuda_temporal, 1) >> raw
            Await(raw, cuda_generic_and_async_proxy, 0)
            d: f32[4, 32, 16, 2, 2] @ Sm90_RmemMatrixD
            for wg in cuda_threads(0, 1, unit=cuda_warpgroup):
                wgmma_zero_m64n128(d[:, :, :, :, :])
                for k in seq(0, 4):
                    wgmma_m64n128k16_f32_bf16_ss_mn_ab(d[:, :, :, :, :],
                                                       a_s[:, 16 * k:16 * k + 16, :],
                                                       b_s[:, 16 * k:16 * k + 16, :])
                Arrive(wgmma_async) >> cg
                Await(cg, cuda_in_order, 0)
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    for lane in cuda_threads(0, 32, unit=cuda_thread):
                        for nb in seq(0, 16):
                            for h in seq(0, 2):
                                for j in seq(0, 2):
                                    C[16 * w + lane / 4 + 8 * h,
                                      8 * nb + 2 * (lane % 4) + j] = d[w, lane, nb, h, j]
            Fence(cuda_in_order, cuda_in_order)


def test_tma_and_mn_major_wgmma_in_a_kernel_match_numpy():
    At = rng.standard_normal((64, 64)).astype(NP["bf16"])
    B = rng.standard_normal((64, 128)).astype(NP["bf16"])
    C = np.zeros((64, 128), np.float32)
    interpret(tma_wgmma_mn_major_tile, At=At, B=B, C=C)
    want = At.astype(np.float64).T @ B.astype(np.float64)
    assert np.allclose(C, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("T", ["f32", "bf16", "f16"])
def test_store_acc_writes_the_accumulator_tile_rounded(T):
    """``store_acc_m64n{W}_{T}``: the 64 x W column window of a wgmma accumulator (fragment
    layout) lands in ``dst[m, n]``, rounded to T (W = one 128-byte swizzle row)."""
    W = 128 // np.dtype(NP[T]).itemsize
    C = rng.standard_normal((64, W)).astype(np.float32)
    d = F.gather(C, F.wgmma_d, W // 2, warps=4).reshape(4, 32, W // 8, 2, 2).copy()
    dst = np.zeros((64, W), NP[T])
    interpret(getattr(sm90, f"store_acc_m64n{W}_{T}"), dst=dst, src=d)
    assert np.array_equal(dst, C.astype(NP[T]))


def test_store_acc_family_shapes():
    assert sm90.Sm90_store_acc(f32) is sm90.store_acc_m64n32_f32
    with pytest.raises(TypeError):
        sm90.Sm90_store_acc(f32, 64)
    assert sm90.Sm90_store_acc(bf16, swizzle=64).name == "store_acc_m64n32_bf16_sw64"
