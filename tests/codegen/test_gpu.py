"""GPU runs (``-m gpu``): every buildable case against numpy, on random data; skipped cleanly
without CuPy or a GPU. The sanitizer runs and timings are in ``bench/gpu_check.py``."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from codegen_cases import ROOT, needs_nvcc

pytestmark = [pytest.mark.gpu, needs_nvcc]


def _gpu_ok() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no driver / no device
        return False


HAVE_GPU = _gpu_ok()
sys.path.insert(0, str(ROOT / "bench"))


@pytest.mark.skipif(not HAVE_GPU, reason="needs a CUDA GPU and CuPy")
@pytest.mark.parametrize("name", ["vec_copy", "saxpy", "transpose_smem", "matmul_smem",
                                  "gemm_tile", "cp_async_copy", "mbar_pingpong",
                                  "tma_store_scale", "cluster_multicast", "warp_mma"])
def test_against_numpy(built, name):
    import cupy as cp
    import gpu_check
    k = built[name]
    assert not isinstance(k, Exception), k
    rec = gpu_check.run_case(k, name, gpu_check.CASES[name][4], cp, False)
    assert rec["correct"], rec


@pytest.mark.skipif(not HAVE_GPU, reason="needs a CUDA GPU and CuPy")
def test_numpy_arrays_are_copied_both_ways(built):
    k = built["vec_copy"]
    a = np.arange(1024, dtype=np.float32)
    b = np.zeros_like(a)
    k(N=1024, A=a, B=b)
    assert np.array_equal(a, b)
