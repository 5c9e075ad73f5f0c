"""Malformed programs on a real file, each inside its own ``build_*`` function so that the
error is raised when the test calls it (not at import). The offending line is marked
``# ERR``; tests find it with ``inspect`` instead of hardcoding line numbers."""

from __future__ import annotations

from exogpu_verify import *


@instr(timeline=tma_to_smem_async_instr, unit=cuda_warp, barrier=CudaMbarrier,
       codegen="tma({dst}, {src});")
def tma_tile(dst: [f32][8, 8] @ CudaSmemLinear, src: [f32][8, 8] @ Sm90_tensorMap(0, 8, 8)):
    for i in seq(0, 8):
        for j in seq(0, 8):
            dst[i, j] = src[i, j]


@proc
def fine(N: size, A: f32[N] @ DRAM):
    for i in seq(0, N):
        A[i] = 0.0


def build_unknown_name():
    @proc
    def bad(N: size, A: f32[N] @ DRAM):
        for i in seq(0, N):
            A[i] = not_defined_anywhere  # ERR

    return bad


def build_data_loop_bound():
    @proc
    def bad(N: size, A: f32[N] @ DRAM, B: i32[N] @ DRAM):
        for i in seq(0, N):
            for j in seq(0, B[i]):  # ERR
                A[j] = 0.0

    return bad


def build_cuda_threads_at_cpu():
    @proc
    def bad(N: size, A: f32[N] @ CudaGmemLinear):
        assert N % 32 == 0
        for t in cuda_threads(0, 32, unit=cuda_thread):  # ERR
            A[t] = 0.0

    return bad


def build_missing_trailing_barrier():
    @proc
    def bad(A: f32[64, 64] @ CudaGmemLinear):
        tm = A[:, :] @ Sm90_tensorMap(0, 8, 8)
        with CudaDeviceFunction(blockDim=32):
            for task in cuda_tasks(0, 8):
                sm: f32[8, 8] @ CudaSmemLinear
                for w in cuda_threads(0, 1, unit=cuda_warp):
                    tma_tile(sm, tm[8 * task:8 * task + 8, 0:8])  # ERR

    return bad


def build_bad_block_dim(threads=96 + 4):
    @proc
    def bad(N: size, A: f32[N] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=threads):  # ERR
            for task in cuda_tasks(0, N):
                pass

    return bad


def build_not_a_memory_from_caller(mem=cuda_warpgroup):
    # `mem` appears only in an annotation: resolved from this frame's locals
    @proc
    def bad(N: size,
            A: f32[N] @ mem):  # ERR
        pass

    return bad


def build_shadowed_param():
    @proc
    def bad(N: size, A: f32[N] @ DRAM):
        for i in seq(0, N):
            N: f32 @ DRAM  # ERR

    return bad


def build_generated_symbolic_smem():
    def make(extent_name):
        @proc
        def bad(M: size, N: size, A: f32[M, N] @ CudaGmemLinear):
            with CudaDeviceFunction(blockDim=128):
                for task in cuda_tasks(0, 1):
                    tile: f32[8, N] @ CudaSmemLinear  # ERR
                    pass

        return bad

    return make("N")


def build_bad_instr_decorator():
    @instr(timeline=cuda_in_order, unit=cuda_thread)  # ERR
    def bad(x: f32[4] @ CudaSmemLinear):
        x[0] = 0.0

    return bad


def build_multiline_call():
    @proc
    def bad(N: size, A: f32[N, 8] @ CudaGmemLinear):
        tm = A[:, :] @ Sm90_tensorMap(0, 8, 8)
        with CudaDeviceFunction(blockDim=32):
            for task in cuda_tasks(0, 1):
                sm: f16[8, 8] @ CudaSmemLinear
                z: barrier @ CudaMbarrier
                for w in cuda_threads(0, 1, unit=cuda_warp):
                    tma_tile(
                        sm,  # ERR
                        tm[0:8, 0:8],
                    ) >> z

    return bad
