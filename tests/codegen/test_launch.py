"""The runtime fit for benchmarking, without a GPU: the raw launch path checks nothing and
imports nothing but the standard library, the checked path checks once per argument
signature, and the generated host code encodes tensor maps once per distinct arguments
(a host-only C++ harness over the prelude, built by nvcc and run on the CPU)."""

from __future__ import annotations

import ast
import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from codegen_cases import ROOT, get_proc, needs_nvcc

from exogpu_codegen import generate, launch
from exogpu_codegen.build import find_nvcc
from exogpu_codegen.prelude import prelude
from exogpu_verify.errors import ExoGpuError

LAUNCH = ROOT / "exogpu_codegen" / "launch.py"


# ---------------------------------------------------------------- a fake library
class _Entry:
    """Stands in for a ctypes function: records its calls, returns ``rc``."""

    def __init__(self, rc=0):
        self.calls, self.rc = [], rc
        self.argtypes = self.restype = None

    def __call__(self, *args):
        self.calls.append(args)
        return self.rc


class _Lib:
    def __init__(self, rc=0):
        self.exo_gemv = _Entry(rc)

    @staticmethod
    def exo_rt_error_string(code):
        return f"fake error {code}".encode()


class _Torchish:                      # data_ptr() and stride(), like a PyTorch tensor
    def __init__(self, ptr, strides=(1,)):
        self.ptr_, self.strides_ = ptr, strides

    def data_ptr(self):
        return self.ptr_

    def stride(self):
        return self.strides_


class _Cupyish:                       # x.data.ptr, like a CuPy array
    def __init__(self, ptr):
        self.data = type("M", (), {"ptr": ptr})()


class _CAI:                           # only __cuda_array_interface__
    def __init__(self, ptr, shape, strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": "<f4", "strides": strides, "version": 3}


PARAMS = (("int64_t M", "int64", "M"), ("int64_t K", "int64", "K"),
          ("void* A_ptr", "ptr", "A"), ("int64_t A_s0", "stride", "A"),
          ("int64_t A_s1", "stride", "A"), ("void* x_ptr", "ptr", "x"),
          ("double a_val", "double", "a"), ("void* y_ptr", "ptr", "y"))


def test_raw_launch_passes_arguments_as_given():
    lib = _Lib()
    raw = launch.RawLaunch(lib, "exo_gemv", PARAMS, "gemv")
    # sizes that break any assert, shapes that match nothing: nothing is checked
    raw(stream=7, M=3, K=5, A=_Torchish(4096, (640, 1)), x=_Cupyish(8192), a=2,
        y=_CAI(12288, (10,)))
    assert lib.exo_gemv.calls == [(7, 3, 5, 4096, 640, 1, 8192, 2.0, 12288)]
    assert lib.exo_gemv.argtypes[0] is ctypes.c_void_p and len(lib.exo_gemv.argtypes) == 9
    bound = raw.bind(M=1, K=2, A=_CAI(16, (2, 4), (64, 4)), x=32, a=0.5, y=48)
    bound()
    bound(type("S", (), {"cuda_stream": 99})())          # a PyTorch stream
    assert lib.exo_gemv.calls[1:] == [(0, 1, 2, 16, 16, 1, 32, 0.5, 48),
                                      (99, 1, 2, 16, 16, 1, 32, 0.5, 48)]


def test_raw_launch_reports_the_entrys_error_code():
    raw = launch.RawLaunch(_Lib(rc=700), "exo_gemv", PARAMS, "gemv")
    A = _Torchish(0, (1, 1))
    with pytest.raises(launch.LaunchError) as e:
        raw(M=1, K=1, A=A, x=0, a=0.0, y=0)
    assert e.value.code == 700 and "fake error 700" in str(e.value)
    with pytest.raises(TypeError, match="missing the argument 'K'"):
        raw(M=1, A=A, x=0, a=0.0, y=0)


def test_launch_module_imports_the_standard_library_only():
    tree = ast.parse(LAUNCH.read_text())
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
            for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert mods <= {"__future__", "ctypes"}, mods
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))
    # loaded by path where the checker, numpy and the frameworks cannot be imported
    code = f"""
import importlib.abc, importlib.util, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('exogpu_verify', 'exogpu_codegen', 'islpy', 'z3', 'numpy',
                                  'cupy', 'torch'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
spec = importlib.util.spec_from_file_location('exo_launch', {str(LAUNCH)!r})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print(m.device_ptr(5), m.stream_ptr(None))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["5", "0"], r.stderr


# ---------------------------------------------------------------- built kernels
@needs_nvcc
def test_kernel_launch_skips_every_check(built, monkeypatch):
    k = built["vec_copy"]
    try:
        k.check_device()
        pytest.skip("a GPU is present: null pointers would be launched")
    except ExoGpuError:
        pass

    def no(*_a, **_k):
        raise AssertionError("the raw path ran a check")
    for name in ("_sizes", "_check_arrays", "_check_asserts", "check_device", "_stage"):
        monkeypatch.setattr(type(k), name, no)
    with pytest.raises(ExoGpuError) as e:        # N breaks `N % 256 == 0`: not looked at
        k.launch(N=300, A=0, B=0)
    # the entry itself ran and failed in the CUDA runtime (no device here)
    assert e.value.kind == "usage" and "the launch failed" in e.value.diagnostic.message


@needs_nvcc
def test_checked_call_checks_once_per_argument_signature(built, monkeypatch):
    k = built["scale_host"]                  # host-only: runs for real without a GPU
    calls = []
    real = type(k)._check_arrays

    def counting(self, arrays, env):
        calls.append(dict(env))
        return real(self, arrays, env)
    monkeypatch.setattr(type(k), "_check_arrays", counting)
    def run(x, y):                           # scale_host: y += 2 x
        want = 2 * x + y
        k(x=x, y=y)
        assert np.allclose(y, want)
    x = np.linspace(0, 1, 64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    run(x, y)
    run(x, y)                                # same pointers, shapes, sizes: no new check
    x[:] = 3.0
    run(x, y)                                # new contents, same signature: still cached
    assert len(calls) == 1
    run(x.copy(), y)                         # another pointer
    run(np.ones(32, np.float32), np.zeros(32, np.float32))   # another size (from shapes)
    assert [c["N"] for c in calls] == [64, 64, 32]
    x3 = np.ones(32, np.float32)
    with pytest.raises(ExoGpuError):         # a bad call is still checked
        k(x=x3, y=np.zeros(31, np.float32))


@needs_nvcc
def test_grid_limit_is_exported(built):
    k = built["vec_copy"]
    k.set_grid_limit(3)
    k.set_grid_limit(0)
    assert hasattr(k._load(), "exo_rt_set_grid_limit")


def test_generated_host_code_encodes_once_and_sets_attributes_once():
    src = generate(get_proc("tests/analysis/progs/hopper_gemm.py", "gemm_tile"),
                   unchecked=True).source
    entry = src[src.index('extern "C" int exo_gemm_tile('):]
    assert entry.count("static thread_local exo_TmapCache exo_tmc_") == 2
    assert "CUtensorMap tA;" not in entry and "const CUtensorMap& tA = exo_tmc_tA.map;" in entry
    assert "exo_encode_tmap(&" not in entry          # only inside the cache's encode lambda
    assert "exo_smem_set & (uint64_t(1) << exo_dev)" in src
    assert "exo_num_sms(&exo_dev)" in src
    assert "exo_rt_set_grid_limit" in src and "exo_grid_limit / 1" in src


HARNESS = r"""
#include <cstdio>
int main() {
  exo_TmapCache c{};
  int encodes = 0, fail = 0;
  char a[64], b[64];
  int64_t dims[2] = {128, 256}, strides[2] = {256, 1};
  auto enc = [&](CUtensorMap* m) { ++encodes; std::memset(m, encodes, 16); return fail; };
  int rc = 0;
  rc |= exo_tmap_cached(&c, 2, a, dims, strides, enc);   // 1: first use
  rc |= exo_tmap_cached(&c, 2, a, dims, strides, enc);   // same arguments: cached
  rc |= exo_tmap_cached(&c, 2, b, dims, strides, enc);   // 2: another pointer
  dims[0] = 64;
  rc |= exo_tmap_cached(&c, 2, b, dims, strides, enc);   // 3: another extent
  rc |= exo_tmap_cached(&c, 2, b, dims, strides, enc);   // cached
  strides[0] = 512;
  fail = 7;
  const int bad = exo_tmap_cached(&c, 2, b, dims, strides, enc);   // 4: fails, not cached
  fail = 0;
  rc |= exo_tmap_cached(&c, 2, b, dims, strides, enc);   // 5: encoded again
  rc |= exo_tmap_cached(&c, 2, b, dims, strides, enc);   // cached
  std::printf("%d %d %d %d\n", encodes, rc, bad, int(reinterpret_cast<unsigned char*>(&c.map)[0]));
  return 0;
}
"""


@needs_nvcc
def test_tensor_map_cache_encodes_once_per_distinct_arguments(tmp_path: Path):
    src = tmp_path / "tmap_cache.cu"
    src.write_text(prelude() + HARNESS)
    exe = tmp_path / "tmap_cache"
    r = subprocess.run([find_nvcc(), "-gencode", "arch=compute_90a,code=sm_90a", "-std=c++17",
                        "-o", str(exe), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.split()
    assert out == ["5", "0", "7", "5"], out
