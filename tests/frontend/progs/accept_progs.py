"""Well-formed programs that need a real file (``@proc`` reads source with ``inspect``).

Used by ``test_parse_accept.py``: decorator-level features (closure and caller-local
resolution for metaprogramming, procs calling procs) and a kernel with every construct of
LANGUAGE.md in one place.
"""

from __future__ import annotations

from exogpu_verify import *

NCTA = 2  # module global used as a unit multiplier and a loop count


@instr(timeline=tma_to_smem_async_instr, unit=cuda_warp, barrier=CudaMbarrier,
       codegen="tma_load_{n}({dst}, {src});")
def tma_load(n: size, dst: [f32][n, 32] @ CudaSmemLinear,
             src: [f32][n, 32] @ Sm90_tensorMap(0, 64, 32)):
    assert n == 64
    for i in seq(0, n):
        for j in seq(0, 32):
            dst[i, j] = src[i, j]


@instr(timeline=Sm80_cp_async_instr, unit=cuda_thread, codegen="cp_async_{n}x4({dst}, {src});")
def cp_async(n: size, dst: [f32][n] @ CudaBasicSmem, src: [f32][n] @ CudaGmemLinear):
    assert n == 1 or n == 2 or n == 4
    for i in seq(0, n):
        dst[i] = src[i]


@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup, codegen="wg_zero({d});")
def wg_zero(d: [f32][128, 8] @ CudaRmem):
    for i in seq(0, 128):
        for j in seq(0, 8):
            d[i, j] = 0.0


@proc
def vec_copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]


@proc
def cpu_scale(N: size, x: [f32][N] @ DRAM, y: f32[N], alpha: index, on: bool):
    assert N >= 1
    tmp: f32[N] @ DRAM
    s: f32 @ DRAM
    s = 0.0
    for i in seq(0, N):
        if on and not i == 0 or alpha > 2:
            tmp[i] = -x[i] * 2 + alpha
        else:
            tmp[i] = relu(x[i]) - 1.5
        s += select(tmp[i], 0.0, x[i], tmp[i])
        y[i] = tmp[i] / 3.0


@proc
def caller(N: size, x: f32[N] @ DRAM, y: f32[N] @ DRAM):
    assert N % 4 == 0
    cpu_scale(N, x[0:N], y, 3, True)
    for k in seq(0, N / 4):
        w = x[4 * k:4 * k + 4]
        out: f32[4] @ DRAM
        cpu_scale(4, w, out, k, k % 2 == 0)


@proc
def everything(M: size, K: size, A: f32[M, K] @ CudaGmemLinear, B: [f32][M, 8] @ CudaGmemLinear,
               flag: bool):
    assert M % 128 == 0
    assert K % 32 == 0
    assert stride(A, 1) == 1
    tm = A[:, :] @ Sm90_tensorMap(0, 64, 32)
    with CudaDeviceFunction(clusterDim=2,
                            warp_config=[CudaWarpConfig("producer", 1, setmaxnreg_dec=40),
                                         CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)]):
        for task in cuda_tasks(0, M / 128):
            for sub in cuda_tasks(0, 1):
                raw: barrier[2, K / 32 @ ring_buffer_by(4)] @ CudaMbarrier
                war: barrier[2, K / 32 @ ring_buffer_by(4)] @ CudaMbarrierPreArrive(2)
                cs: barrier @ CudaClusterSync
                cg: barrier[2] @ Sm90_WgmmaCommitGroup
                cpg: barrier @ Sm80_CommitGroup
                smem: f32[2, 64, 32] @ CudaSmemLinear
                sw: f32[2, 64, 32] @ Sm90_SmemSwizzled(128)
                for c in cuda_threads(0, NCTA, unit=NCTA * cuda_cta_in_cluster):
                    with CudaWarps(0, 1, name="producer"):
                        for k in seq(0, K / 32):
                            Await(war[c, k], cuda_in_order, 0)
                            tma_load(64, smem[c, :, :], tm[task * 64:task * 64 + 64,
                                                            32 * k:32 * k + 32]) >> raw[c, k]
                    with CudaWarps(0, 8, name="consumer"):
                        for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                            acc: f32[2, 128, 8] @ CudaRmem
                            wg_zero(acc[wg, :, :])
                            for k in seq(0, K / 32):
                                Await(raw[c, k], cuda_generic_and_async_proxy)
                                for t in cuda_threads(0, 128, unit=cuda_thread):
                                    if t < 64 and not flag:
                                        acc[wg, t, 0] += smem[c, t, k % 32] * 2.0
                                    else:
                                        acc[wg, t, 1] = -acc[wg, t, 1]
                                Arrive(cuda_in_order, 1) >> war[:, k + 2]
                            Arrive(wgmma_async) >> cg[wg]
                            Await(cg[wg], cuda_in_order, 1)
                            for t in cuda_threads(0, 128, unit=cuda_thread):
                                B[task * 128 + wg * 64 + t / 2, t % 8] = acc[wg, t, 0]
                    with CudaWarps(2, 4):
                        for q in cuda_threads(0, 2, unit=cuda_warp):
                            for t in cuda_threads(0, 8, unit=cuda_thread):
                                cp_async(4, sw[c, q * 8 + t, 0:4], B[t, 0:4])
                                Arrive(Sm80_cp_async) >> cpg
                                Await(cpg, cuda_in_order, 0)
                Fence(cuda_in_order, cuda_in_order)
                Arrive(cuda_in_order) >> cs
                Await(cs, cuda_in_order, 0)


def make_scale(n, mem, unit, count):
    """Metaprogramming: ``n`` and ``mem`` appear only in annotations (caller-local
    resolution); ``unit`` and ``count`` in the body (closure)."""

    @proc
    def scale(A: f32[n] @ mem, B: f32[n] @ mem):
        with CudaDeviceFunction(blockDim=256):
            for task in cuda_tasks(0, n / 256):
                for g in cuda_threads(0, count, unit=unit):
                    for t in cuda_threads(0, 256 / count, unit=cuda_thread):
                        B[task * 256 + g * (256 / count) + t] = \
                            2.0 * A[task * 256 + g * (256 / count) + t]

    return scale


def make_tile_copy(rows):
    """A generated proc that allocates SMEM of a generated shape and calls an instr."""

    @proc
    def tile_copy(A: f32[rows, 4] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=32 * ((rows + 31) // 32)):
            for task in cuda_tasks(0, 1):
                tile: f32[rows, 4] @ CudaSmemLinear
                for r in cuda_threads(0, rows, unit=cuda_thread):
                    cp_async(4, tile[r, :], A[r, 0:4])
                Fence(Sm80_generic, cuda_in_order)

    return tile_copy
