"""The launch-time check of global-memory base pointers: the proofs establish that the window
offsets of ``ld.global.v4`` and ``cp.async`` operands are aligned, assuming the tensor's base
pointer is; the generated entry checks that pointer (``host.py``) for exactly the parameters
such instructions access, and returns ``launch.ALIGN_BASE + index``, which the runtime turns
into a message naming the argument. Generated-source tests run everywhere; the build needs
nvcc, the launch a GPU (skipped cleanly without)."""

from __future__ import annotations

import textwrap

import pytest
from codegen_cases import needs_nvcc

from exogpu_codegen import generate
from exogpu_codegen.launch import ALIGN_BASE, error_string
from exogpu_verify import parse_proc_source
from exogpu_verify.platforms.cuda import cuda_ld_v4_f32
from exogpu_verify.platforms.sm80 import Sm80_cp_async_f32

LD_V4 = '''
@proc
def ld4(N: size, K: size, A: f32[N, K] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    assert K >= 128
    assert K % 4 == 0
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            for t in cuda_threads(0, 32, unit=cuda_thread):
                r: f32[4] @ CudaRmem
                cuda_ld_v4_f32(r[0:4], A[task, 4 * t:4 * t + 4])
                for i in seq(0, 4):
                    C[task, 4 * t + i] = r[i]
'''

CP_ASYNC = '''
@proc
def cp2(N: size, B: f32[N] @ CudaGmemLinear, A: f32[N] @ CudaGmemLinear):
    assert N % 512 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 512):
            tile: f32[256, 2] @ CudaSmemLinear
            cg: barrier[256] @ Sm80_CommitGroup
            for t in cuda_threads(0, 256, unit=cuda_thread):
                Sm80_cp_async_f32(2, tile[t, 0:2], A[task * 512 + 2 * t:task * 512 + 2 * t + 2])
                Arrive(Sm80_cp_async) >> cg[t]
                Await(cg[t], cuda_in_order, 0)
                for i in seq(0, 2):
                    B[task * 512 + 2 * t + i] = tile[t, i]
            Fence(cuda_in_order, cuda_in_order)
'''

PLAIN = '''
@proc
def plain(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            for t in cuda_threads(0, 1, unit=cuda_thread):
                B[task] = A[task]
'''


def _proc(src):
    import exogpu_verify as ev

    env = {k: getattr(ev, k) for k in dir(ev) if not k.startswith("_")}
    env.update(cuda_ld_v4_f32=cuda_ld_v4_f32, Sm80_cp_async_f32=Sm80_cp_async_f32)
    return parse_proc_source(textwrap.dedent(src).strip("\n"), env)


def _entry(g) -> str:
    return g.source[g.source.index(f'extern "C" int exo_'):]


def test_entry_checks_the_base_of_a_vector_loaded_tensor():
    g = generate(_proc(LD_V4), unchecked=True)
    entry = _entry(g)
    assert "if (reinterpret_cast<uintptr_t>(A_ptr) % 16 != 0) return exo_err_align + 2;" in entry
    assert f"constexpr int exo_err_align = {ALIGN_BASE};" in entry
    assert "C_ptr) %" not in entry  # plain stores need no check


def test_entry_checks_the_cp_async_source_with_the_copy_size():
    g = generate(_proc(CP_ASYNC), unchecked=True, arch="sm_80")
    entry = _entry(g)
    assert "if (reinterpret_cast<uintptr_t>(A_ptr) % 8 != 0) return exo_err_align + 2;" in entry
    assert "B_ptr) %" not in entry


def test_no_check_without_aligned_accesses():
    g = generate(_proc(PLAIN), unchecked=True)
    assert "exo_err_align" not in g.source


class _Lib:
    @staticmethod
    def exo_rt_error_string(code):
        return b"cuda error"


def test_error_string_names_the_argument():
    msg = error_string(_Lib(), ALIGN_BASE + 2, ["N", "K", "A", "C"])
    assert msg.startswith("argument 'A':") and "aligned" in msg
    assert error_string(_Lib(), 2, ["N"]) == "cuda error"


@needs_nvcc
def test_entry_with_the_check_builds(tmp_path):
    from exogpu_codegen import compile

    k = compile(_proc(LD_V4), unchecked=True, out_dir=tmp_path)
    assert k.build.library.exists()


def _cupy():
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # noqa: BLE001 - no CuPy / no driver / no device
        return None


@pytest.mark.gpu
@needs_nvcc
@pytest.mark.skipif(_cupy() is None, reason="needs a CUDA GPU and CuPy")
def test_misaligned_slice_is_refused_at_launch(tmp_path):
    from exogpu_codegen import compile
    from exogpu_verify.errors import ExoGpuError

    cp = _cupy()
    k = compile(_proc(LD_V4), unchecked=True, out_dir=tmp_path)
    buf = cp.zeros(4 * 132 + 1, dtype=cp.float32)
    c = cp.zeros((4, 128), dtype=cp.float32)
    k.launch(N=4, K=132, A=buf[:4 * 132].reshape(4, 132), C=c)  # aligned: runs
    with pytest.raises(ExoGpuError) as e:
        k.launch(N=4, K=132, A=buf[1:].reshape(4, 132), C=c)
    assert "argument 'A'" in str(e.value)
