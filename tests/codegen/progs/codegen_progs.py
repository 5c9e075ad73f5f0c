"""Kernels that exercise the backend beyond the shipped specs: clusters with TMA multicast and
a cluster split barrier, cp.async with commit groups, a TMA store with a bulk commit group,
an mbarrier ring without pre-arrive, warp-level mma.sync, and an instruction without a codegen
template inlined as plain code. Each is proven for all sizes (tests/codegen/test_generate.py)."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.cuda import *  # noqa: F403
from exogpu_verify.platforms.sm80 import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403

VERIFY_SIZES = {"T": 2, "K": 3, "N": 512, "M": 64}

tma_mc = Sm90_tma_multicast(2, f32, 2)
tma_store = Sm90_tma_store(2, f32)


@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def copy_n(n: size, dst: [f32][n] @ CudaDeviceVisibleLinear,
           src: [f32][n] @ CudaDeviceVisibleLinear):
    for i in seq(0, n):
        dst[i] = src[i]


@proc
def cluster_multicast(T: size, K: size, A: f32[T, K, 64, 16] @ CudaGmemLinear,
                      C: f32[T, K, 2, 64, 16] @ CudaGmemLinear):
    tA = A[:, :, :, :] @ Sm90_tensorMap(0, 1, 1, 32, 16)
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, T):
            B: f32[2, 64, 16] @ CudaSmemLinear
            raw: barrier[2, K @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, K):
                cs: barrier @ CudaClusterSync
                for w in cuda_threads(0, 1, unit=2 * cuda_warp_in_cluster):
                    tma_mc(64, 16, B[:, :, :], tA[task, k, :, :]) >> raw[:, k]
                    for wc in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                        Arrive(cuda_temporal) >> raw[:, k]
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Await(raw[cta, k], cuda_in_order, 0)
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            copy_n(8, C[task, k, cta, r, 8 * h:8 * h + 8],
                                   B[cta, r, 8 * h:8 * h + 8])
                    # the generic reads of B before the next multicast (async proxy) writes
                    # it: fence.proxy.async by the reading threads, then the cluster barrier
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                Arrive(cuda_in_order) >> cs
                Await(cs, cuda_in_order, 0)


@proc
def cp_async_copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 1024 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 1024):
            tile: f32[256, 4] @ CudaSmemLinear
            cg: barrier[256] @ Sm80_CommitGroup
            for t in cuda_threads(0, 256, unit=cuda_thread):
                Sm80_cp_async_f32(4, tile[t, 0:4], A[task * 1024 + 4 * t:task * 1024 + 4 * t + 4])
                Arrive(Sm80_cp_async) >> cg[t]
                Await(cg[t], cuda_in_order, 0)
                for i in seq(0, 4):
                    B[task * 1024 + 4 * t + i] = tile[t, i]
            Fence(cuda_in_order, cuda_in_order)


@proc
def tma_store_scale(M: size, N: size, a: f32 @ CudaGridConstant, A: f32[M, N] @ CudaGmemLinear,
                    B: f32[M, N] @ CudaGmemLinear):
    assert M % 32 == 0
    assert N % 32 == 0
    tB = B[:, :] @ Sm90_tensorMap(0, 32, 32)
    with CudaDeviceFunction(blockDim=128):
        for tm in cuda_tasks(0, M / 32):
            for tn in cuda_tasks(0, N / 32):
                tile: f32[32, 32] @ CudaSmemLinear
                cg: barrier @ Sm90_TmaCommitGroup
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        for i in seq(0, 8):
                            tile[8 * w + i, c] = a * A[32 * tm + 8 * w + i, 32 * tn + c]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                for w in cuda_threads(0, 1, unit=cuda_warp):
                    tma_store(32, 32, tB[32 * tm:32 * tm + 32, 32 * tn:32 * tn + 32], tile[:, :])
                    Arrive(tma_to_gmem_async) >> cg
                    Await(cg, cuda_generic_and_async_proxy, 0)
                Fence(cuda_in_order, cuda_in_order)


@proc
def mbar_pingpong(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[2, 32] @ CudaSmemLinear
            full: barrier[N / 32 @ ring_buffer_by(2)] @ CudaMbarrier
            empty: barrier[N / 32 @ ring_buffer_by(2)] @ CudaMbarrierPreArrive(2)
            # producer (warp 0) and consumer (warp 1) interleaved in one loop: in sequential
            # order every Await follows the Arrive it needs (separate loops would make the
            # producer's Await on empty[2] precede the consumer's first release)
            for i in seq(0, N / 32):
                for w in cuda_threads(0, 2, unit=cuda_warp):
                    if w == 0:
                        Await(empty[i], cuda_in_order, 0)
                        for l in cuda_threads(0, 32, unit=cuda_thread):
                            buf[i % 2, l] = A[32 * i + l]
                        Arrive(cuda_in_order) >> full[i]
                    else:
                        Await(full[i], cuda_in_order, 0)
                        for l in cuda_threads(0, 32, unit=cuda_thread):
                            B[32 * i + l] = buf[i % 2, l]
                        Arrive(cuda_in_order) >> empty[i + 2]
            Fence(cuda_in_order, cuda_in_order)


@proc
def warp_mma(M: size, A: f32[M, 8] @ CudaGmemLinear, B: f32[8, 8] @ CudaGmemLinear,
             C: f32[M, 8] @ CudaGmemLinear):
    assert M % 16 == 0
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, M / 16):
            a: f32[32, 2, 2] @ CudaRmem
            b: f32[32, 2] @ CudaRmem
            d: f32[32, 2, 2] @ CudaRmem
            for l in cuda_threads(0, 32, unit=cuda_thread):
                for kh in seq(0, 2):
                    for mh in seq(0, 2):
                        a[l, kh, mh] = A[16 * task + l / 4 + 8 * mh, l % 4 + 4 * kh]
                    b[l, kh] = B[l % 4 + 4 * kh, l / 4]
            Sm80_mma_zero_d(d[:, :, :])
            Sm80_mma_m16n8k8_f32_tf32(d[:, :, :], a[:, :, :], b[:, :])
            Sm80_mma_store_d(C[16 * task:16 * task + 16, :], d[:, :, :])


@proc
def scale_host(N: size, x: f32[N] @ DRAM, y: f32[N] @ DRAM):
    for i in seq(0, N):
        y[i] = 2.0 * x[i] + y[i]
