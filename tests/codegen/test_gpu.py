"""GPU runs (``-m gpu``): cases of the GPU run script (``bench/gpu_run.py``) built here and
checked against float64 on random data with NaN-filled outputs (``gpu_device.check``, the
device run's own comparison) on PyTorch or CuPy; skipped cleanly without a GPU. The
sanitizer runs and timings are the device run's (docs/gpu.md)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from codegen_cases import ROOT, needs_nvcc

pytestmark = [pytest.mark.gpu, needs_nvcc]
sys.path.insert(0, str(ROOT / "bench"))

import gpu_device as D  # noqa: E402


def _backend():
    try:
        return D.backend()
    except Exception:  # noqa: BLE001 - no framework / no driver / no device
        return None


B = _backend()
NAMES = ["vec_copy", "saxpy", "transpose_smem", "matmul_smem", "gemm_tile", "cp_async_copy",
         "mbar_pingpong", "tma_store_scale", "cluster_multicast", "warp_mma",
         "gemm_bf16_f32_128x256_s4_coop_g2", "gemm_bf16_f32_128x128_s5_coop_g1_splitk4",
         "gemv_f32_r4_u2_w8_b4"]


@pytest.fixture(scope="module")
def cases():
    import gpu_plan as P
    return {c.name: c for c in P.discover(with_examples=False, with_backend=True)}


@pytest.mark.skipif(B is None, reason="needs a CUDA GPU and PyTorch or CuPy")
@pytest.mark.parametrize("name", NAMES)
def test_against_float64(cases, cache_dir, name):
    import gpu_plan as P
    e = P.build_case(cases[name])
    k = e.pop("kernel")

    def launch(args, grid):
        k.set_grid_limit(grid)
        try:
            k.launch(0, **args)
            k.synchronize(0)
        finally:
            k.set_grid_limit(0)
    for sz in e["sizes"]["correct"][:4]:   # the small ones: smallest, non-square, ring wraps,
        rec = D.check(e, sz, B, launch)    # 3 CTAs
        assert rec["ok"], rec


@pytest.mark.skipif(B is None, reason="needs a CUDA GPU and PyTorch or CuPy")
def test_numpy_arrays_are_copied_both_ways(built):
    k = built["vec_copy"]
    a = np.arange(1024, dtype=np.float32)
    b = np.zeros_like(a)
    k(N=1024, A=a, B=b)
    assert np.array_equal(a, b)
