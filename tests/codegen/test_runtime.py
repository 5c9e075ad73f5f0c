"""The Python runtime without a GPU: argument checks, host-only procs run for real, and a
clear error (no traceback) where a GPU would be needed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from codegen_cases import needs_nvcc

from exogpu_verify.errors import ExoGpuError


def _has_gpu(k) -> bool:
    try:
        k.check_device()
        return True
    except ExoGpuError:
        return False


def test_import_touches_no_gpu_and_no_cupy():
    code = ("import sys, exogpu_codegen; from exogpu_codegen import compile; "
            "assert 'cupy' not in sys.modules; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


@needs_nvcc
def test_host_only_proc_runs(built):
    k = built["vec_copy_seq"]
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, dtype=np.float32)
    k(N=64, A=a, B=b)
    assert np.array_equal(a, b)
    x = np.linspace(0, 1, 100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    built["scale_host"](x=x, y=y)   # N inferred from the arrays' shapes
    assert np.allclose(y, 2 * x + 1)


@needs_nvcc
@pytest.mark.parametrize("kwargs,words", [
    (dict(N=512, A=np.zeros(256, np.float32), B=np.zeros(512, np.float32)), ["shape", "'A'"]),
    (dict(N=512, A=np.zeros(512, np.float64), B=np.zeros(512, np.float32)), ["dtype", "f32"]),
    (dict(N=100, A=np.zeros(100, np.float32), B=np.zeros(100, np.float32)),
     ["precondition", "N % 256 == 0"]),
    (dict(N=512, A=np.zeros(512, np.float32)), ["missing", "'B'"]),
    (dict(N=512, A=np.zeros(512, np.float32), B=np.zeros(512, np.float32), C=1),
     ["unexpected", "C"]),
    (dict(N=512, A=np.zeros(1024, np.float32)[::2], B=np.zeros(512, np.float32)),
     ["C-contiguous"]),
    (dict(N=512, A=[0.0] * 512, B=np.zeros(512, np.float32)), ["numpy array", "'A'"]),
])
def test_bad_arguments_are_usage_errors(built, kwargs, words):
    with pytest.raises(ExoGpuError) as e:
        built["vec_copy"](**kwargs)
    assert e.value.kind == "usage"
    for w in words:
        assert w in e.value.diagnostic.message, e.value.diagnostic.message


@needs_nvcc
def test_no_gpu_is_a_clear_error(built):
    k = built["vec_copy"]
    if _has_gpu(k):
        pytest.skip("a GPU is present: covered by the GPU tests")
    a = np.arange(512, dtype=np.float32)
    with pytest.raises(ExoGpuError) as e:
        k(N=512, A=a, B=np.zeros_like(a))
    assert e.value.kind == "usage" and "no CUDA GPU" in e.value.diagnostic.message


@needs_nvcc
def test_cuda_array_interface_is_read(built):
    """A fake device array: pointer, shape and strides come from __cuda_array_interface__."""
    class Fake:
        def __init__(self, n, typestr="<f4", ptr=0):
            self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr,
                                             "data": (ptr, False), "strides": None,
                                             "version": 3}
    k = built["vec_copy"]
    with pytest.raises(ExoGpuError) as e:
        k(N=512, A=Fake(512, "<f8"), B=Fake(512))
    assert "dtype" in e.value.diagnostic.message
    if not _has_gpu(k):
        with pytest.raises(ExoGpuError) as e:
            k(N=512, A=Fake(512), B=Fake(512, ptr=1 << 20))
        assert "no CUDA GPU" in e.value.diagnostic.message


@needs_nvcc
def test_overlapping_arguments_one_written_are_refused(built):
    """The checkers treat distinct parameters as distinct memory: passing one array as both
    the read and the written tensor (or overlapping views of one buffer) is refused before the
    launch; two read-only views may share memory."""
    x = np.zeros(1024, np.float32)
    for a, b in ((x[:512], x[:512]), (x[:512], x[256:768])):
        with pytest.raises(ExoGpuError) as e:
            built["vec_copy"](N=512, A=a, B=b)
        assert e.value.kind == "usage" and "overlap" in str(e.value)
    # disjoint halves of one buffer are fine as far as aliasing goes
    if not _has_gpu(built["vec_copy"]):
        with pytest.raises(ExoGpuError) as e:
            built["vec_copy"](N=512, A=x[:512], B=x[512:])
        assert "no CUDA GPU" in str(e.value)
    else:
        built["vec_copy"](N=512, A=x[:512], B=x[512:])


def test_window_strides_that_alias_elements_are_detected():
    from exogpu_codegen.runtime import _injective

    assert _injective((4, 8), (8, 1)) and _injective((4, 8), (1, 4))
    assert not _injective((4, 8), (4, 1))      # rows overlap
    assert not _injective((8,), (0,))          # broadcast: every index one element
    assert _injective((1, 8), (0, 1))          # extent-1 dimension: its stride is unused
