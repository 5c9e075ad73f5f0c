"""CUDA library bodies against numpy: stream copies, memsets, warp shuffles."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.platforms.cuda import *  # noqa: F401,F403
from exogpu_verify.platforms import cuda

rng = np.random.default_rng(7)
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i32": np.int32}
SHAPES = {1: (5,), 2: (3, 6), 3: (2, 3, 4)}


def _rand(T, shape):
    return (rng.standard_normal(shape) * 100).astype(NP[T])


@pytest.mark.parametrize("T", sorted(NP))
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("kind", ["htod", "dtoh"])
def test_memcpy_copies_windows(T, rank, kind):
    shape = SHAPES[rank]
    big = np.zeros(tuple(s + 2 for s in shape), NP[T])
    src = _rand(T, shape)
    dst = big[tuple(slice(1, 1 + s) for s in shape)]  # strided outer dims, unit inner stride
    sizes = {f"n{d}": s for d, s in enumerate(shape)}
    interpret(getattr(cuda, f"cudaMemcpyAsync_{kind}_{rank}d_{T}"), **sizes, dst=dst, src=src)
    assert np.array_equal(dst, src)
    dst[...] = 0
    assert not big.any()  # nothing outside the window was written


@pytest.mark.parametrize("T", sorted(NP))
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_memset_zeroes(T, rank):
    shape = SHAPES[rank]
    dst = _rand(T, shape) + NP[T](1)
    sizes = {f"n{d}": s for d, s in enumerate(shape)}
    interpret(getattr(cuda, f"cudaMemsetAsync0_{rank}d_{T}"), **sizes, dst=dst)
    assert not dst.any()


def test_unsuffixed_names_are_f32():
    assert cudaMemcpyAsync_htod_2d.params[2].type.scalar == f32
    assert cudaMemcpyAsync_htod_2d.instr.timeline == cpu_cuda_stream_instr


def test_memcpy_requires_unit_inner_stride():
    src = np.zeros((4, 4), np.float32)
    with pytest.raises(ExoGpuError):
        interpret(cudaMemcpyAsync_htod_2d_f32, n0=4, n1=2, dst=np.zeros((4, 2), np.float32),
                  src=src[:, ::2])


def test_broadcast():
    src = rng.standard_normal(32).astype(np.float32)
    for i in (0, 13, 31):
        dst = np.zeros(32, np.float32)
        interpret(cuda_warp_broadcast_f32, i=i, dst=dst, src=src)
        assert np.array_equal(dst, np.full(32, src[i]))


@pytest.mark.parametrize("M", [1, 2, 4, 8, 16])
def test_shfl_xor(M):
    src = rng.standard_normal(32).astype(np.float32)
    dst = np.zeros(32, np.float32)
    interpret(getattr(cuda, f"cuda_shfl_xor_f32_m{M}"), dst=dst, src=src)
    assert np.array_equal(dst, src[np.arange(32) ^ M])
    interpret(getattr(cuda, f"cuda_shfl_xor_sum_f32_m{M}"), dst=dst, src=src)
    assert np.array_equal(dst, src + src[np.arange(32) ^ M])


@proc
def warp_sum(x: f32[32] @ CudaGmemLinear, out: f32[32] @ CudaGmemLinear):
    """Butterfly reduction: after 5 xor-sum steps every lane holds the warp's sum."""
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            for w in cuda_threads(0, 1, unit=cuda_warp):
                a: f32[32] @ CudaRmem
                b: f32[32] @ CudaRmem
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    a[t] = x[t]
                cuda_shfl_xor_sum_f32_m16(b, a)
                cuda_shfl_xor_sum_f32_m8(a, b)
                cuda_shfl_xor_sum_f32_m4(b, a)
                cuda_shfl_xor_sum_f32_m2(a, b)
                cuda_shfl_xor_sum_f32_m1(b, a)
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    out[t] = b[t]


def test_warp_reduction_proc():
    x = rng.integers(-50, 50, 32).astype(np.float32)
    out = np.zeros(32, np.float32)
    interpret(warp_sum, x=x, out=out)
    assert np.array_equal(out, np.full(32, x.sum()))


@pytest.mark.parametrize("name", ["cuda_ld_v4_f32", "cuda_ld_v4_cs_f32"])
def test_vector_load_copies_four_floats(name):
    ld = getattr(cuda, name)
    src = rng.standard_normal(4).astype(np.float32)
    dst = np.full(4, np.nan, np.float32)
    interpret(ld, dst=dst, src=src)
    assert np.array_equal(dst, src)
    assert ld.instr.unit == cuda_thread
    code = ld.instr.codegen({"dst": "r", "src": "p + 8"})
    assert "float4" in code and "p + 8" in code
    assert ("__ldcs(" in code) == name.endswith("_cs_f32")   # never the .nc (__ldg) path
    assert "__ldg" not in code


def test_setmaxnreg_is_a_warpgroup_noop():
    assert setmaxnreg_inc.instr.unit == cuda_warpgroup
    interpret(setmaxnreg_dec, n=40)
    with pytest.raises(ExoGpuError):
        interpret(setmaxnreg_inc, n=20)
