"""Global-memory alignment of vector and asynchronous GMEM operands (kind ``instruction``):
``cuda_ld_v4_f32`` / ``cuda_ld_v4_cs_f32`` (``ld.global.v4.f32``: 16 bytes) and the ``src``
of ``Sm80_cp_async_*`` (``cp.async``: the copy's bytes), for all sizes and at concrete sizes.

Each family: the misaligned program (refuted by both checkers, at the call, naming the
argument) and its aligned twin (``proven`` and ``checked``). The tensor's base pointer is
assumed aligned (the generated entry point checks it at launch)."""

from __future__ import annotations

import pytest
import pre_helpers

from exogpu_verify import verify
from exogpu_verify.analysis.instr_checks import gmem_alignment_requirements
from exogpu_verify.platforms.cuda import cuda_ld_v4_cs_f32, cuda_ld_v4_f32
from exogpu_verify.platforms.sm80 import Sm80_cp_async_f32

V4 = {"cuda_ld_v4_f32": cuda_ld_v4_f32, "cuda_ld_v4_cs_f32": cuda_ld_v4_cs_f32,
      "Sm80_cp_async_f32": Sm80_cp_async_f32}


def parse(src):
    return pre_helpers.parse(src, **V4)


def accepted_both(src, sizes):
    return pre_helpers.accepted_both(src, sizes, **V4)


def refuted_both(src, kind, sizes, contains=None):
    return pre_helpers.refuted_both(src, kind, sizes, contains, **V4)

LD_V4 = '''
@proc
def k(N: size, K: size, A: f32[N, {pitch}] @ CudaGmemLinear, C: f32[N, 128] @ CudaGmemLinear):
    assert K >= 128
    {asserts}
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            for t in cuda_threads(0, 32, unit=cuda_thread):
                r: f32[4] @ CudaRmem
                {instr}(r[0:4], A[task, 4 * t + {lo}:4 * t + {lo} + 4])  # <-
                for i in seq(0, 4):
                    C[task, 4 * t + i] = r[i]
'''


def ld_v4(pitch="132", lo=0, asserts="pass", instr="cuda_ld_v4_f32"):
    return LD_V4.format(pitch=pitch, lo=lo, asserts=asserts, instr=instr)


SIZES = {"N": 2, "K": 129}


@pytest.mark.parametrize("instr", ["cuda_ld_v4_f32", "cuda_ld_v4_cs_f32"])
def test_ld_v4_aligned_is_proven(instr):
    accepted_both(ld_v4(instr=instr), SIZES)


@pytest.mark.parametrize("instr", ["cuda_ld_v4_f32", "cuda_ld_v4_cs_f32"])
def test_ld_v4_misaligned_inner_start(instr):
    d = refuted_both(ld_v4(lo=1, instr=instr), "instruction", SIZES,
                     f"argument 'src' of {instr}() must start 16-byte aligned in global memory")
    assert "'A'" in d.message


def test_ld_v4_constant_pitch_not_a_multiple_of_16_bytes():
    # row `task` starts at 516 * task bytes: aligned only for task % 4 == 0
    d = refuted_both(ld_v4(pitch="129"), "instruction", SIZES, "argument 'src'")
    assert "16-byte" in d.message


def test_ld_v4_constant_pitch_that_compensates_the_start_is_proven():
    # constant strides: the offset is affine and decided exactly; 258 floats per row and a
    # window start of 2 * task give 260 * task + 4 * t elements, a multiple of 4
    src = ld_v4(pitch="258", asserts="assert N <= 65").replace(
        "A[task, 4 * t + 0:4 * t + 0 + 4]", "A[task, 2 * task + 4 * t:2 * task + 4 * t + 4]")
    accepted_both(src, SIZES)


def test_ld_v4_symbolic_pitch_without_assert_is_refuted():
    d = refuted_both(ld_v4(pitch="K"), "instruction", SIZES, "argument 'src'")
    assert d.hint is not None and "assert K % 4 == 0" in d.hint


def test_ld_v4_symbolic_pitch_with_assert_is_proven():
    accepted_both(ld_v4(pitch="K", asserts="assert K % 4 == 0"), {"N": 2, "K": 132})


def test_ld_v4_symbolic_pitch_with_weaker_assert_is_refuted():
    refuted_both(ld_v4(pitch="K", asserts="assert K % 2 == 0"), "instruction",
                 {"N": 2, "K": 130}, "argument 'src'")


def test_ld_v4_product_stride_is_proven_when_a_factor_is_aligned():
    src = '''
    @proc
    def k(N: size, M: size, K: size, A: f32[N, M, K] @ CudaGmemLinear,
          C: f32[N, 4] @ CudaGmemLinear):
        assert M % 4 == 0
        with CudaDeviceFunction(blockDim=32):
            for task in cuda_tasks(0, N):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    r: f32[4] @ CudaRmem
                    cuda_ld_v4_f32(r[0:4], A[task, 0, 0:4])  # <-
                    for i in seq(0, 4):
                        C[task, i] = r[i]
    '''
    bad = src.replace("assert M % 4 == 0", "assert K >= 4")
    refuted_both(bad.replace("assert K >= 4", "assert K >= 4\n        assert M >= 1"),
                 "instruction", {"N": 2, "M": 1, "K": 5}, "argument 'src'")
    accepted_both(src.replace("assert M % 4 == 0", "assert M % 4 == 0\n        assert K >= 4"),
                  {"N": 2, "M": 4, "K": 5})


CP_ASYNC = '''
@proc
def k(N: size, A: f32[N + 8] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 1024 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 1024):
            tile: f32[256, 4] @ CudaSmemLinear
            cg: barrier[256] @ Sm80_CommitGroup
            for t in cuda_threads(0, 256, unit=cuda_thread):
                Sm80_cp_async_f32({n}, tile[t, 0:{n}], A[task * 1024 + 4 * t + {lo}:task * 1024 + 4 * t + {lo} + {n}])  # <-
                Arrive(Sm80_cp_async) >> cg[t]
                Await(cg[t], cuda_in_order, 0)
                for i in seq(0, {n}):
                    B[task * 1024 + 4 * t + i] = tile[t, i]
            Fence(cuda_in_order, cuda_in_order)
'''


def test_cp_async_aligned_source_is_proven():
    accepted_both(CP_ASYNC.format(n=4, lo=0), {"N": 1024})


@pytest.mark.parametrize("n,lo", [(4, 1), (4, 2), (2, 1)])
def test_cp_async_misaligned_source(n, lo):
    d = refuted_both(CP_ASYNC.format(n=n, lo=lo), "instruction", {"N": 1024},
                     f"argument 'src' of Sm80_cp_async_f32() must start {4 * n}-byte aligned")
    assert "global memory" in d.message


def test_cp_async_smaller_copy_needs_less_alignment():
    accepted_both(CP_ASYNC.format(n=2, lo=2), {"N": 1024})


def test_requirements_name_the_parameters_and_bytes():
    p = parse(ld_v4(pitch="K", asserts="assert K % 4 == 0"))
    assert {k: v[0] for k, v in gmem_alignment_requirements(p).items()} == {"A": 16}
    q = parse(CP_ASYNC.format(n=2, lo=0))
    assert {k: v[0] for k, v in gmem_alignment_requirements(q).items()} == {"A": 8}


def test_symbolic_verdict_is_not_proven_for_the_probe():
    p = parse(ld_v4(lo=1))
    assert verify(p, mode="symbolic").verdict == "refuted"
