"""Kernels that pin the choice of two instruction forms (``exogpu_codegen/kernel_facts.py``):
``cp.async.bulk.wait_group`` with or without ``.read``, and ``fence.proxy.async`` restricted to
shared memory or not. Each is accepted by the static analyses (they are generated
``unchecked``: the choice is about lowering, not about whether the program is race-free)."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403

tma_store = Sm90_tma_store(2, f32)
tma_add = Sm90_tma_reduce_add(2, f32)
tma_load = Sm90_tma_load(2, f32)


def make(kind: str):
    """``kind``: "read_back" (the kernel reads the stored tensor back with ordinary loads),
    "store_twice" (one task stores the same tile twice), "reduce_twice" (two reduce-adds of
    the same tile), "load_back" (a TMA load of the stored tensor)."""
    READ_BACK = 1 if kind == "read_back" else 0
    TWICE = 1 if kind in ("store_twice", "reduce_twice") else 0
    ADD = 1 if kind == "reduce_twice" else 0
    LOAD = 1 if kind == "load_back" else 0

    @proc
    def lowering(M: size, A: f32[M, 32] @ CudaGmemLinear, B: f32[M, 32] @ CudaGmemLinear):
        assert M % 32 == 0
        tB = B[:, :] @ Sm90_tensorMap(0, 32, 32)
        with CudaDeviceFunction(blockDim=128):
            for tm in cuda_tasks(0, M / 32):
                tile: f32[32, 32] @ CudaSmemLinear
                cg: barrier @ Sm90_TmaCommitGroup
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        for i in seq(0, 8):
                            tile[8 * w + i, c] = A[32 * tm + 8 * w + i, c]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                for w in cuda_threads(0, 1, unit=cuda_warp):
                    for r in seq(0, 1 + TWICE):
                        if ADD == 1:
                            tma_add(32, 32, tB[32 * tm:32 * tm + 32, :], tile[:, :])
                        else:
                            tma_store(32, 32, tB[32 * tm:32 * tm + 32, :], tile[:, :])
                        Arrive(tma_to_gmem_async) >> cg
                        Await(cg, cuda_generic_and_async_proxy, 0)
                Fence(cuda_in_order, cuda_in_order)
                if LOAD == 1:
                    back: f32[32, 32] @ CudaSmemLinear
                    raw: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
                    for w in cuda_threads(0, 1, unit=cuda_warp):
                        tma_load(32, 32, back[:, :], tB[32 * tm:32 * tm + 32, :]) >> raw[0]
                        for t in cuda_threads(0, 1, unit=cuda_thread):
                            Arrive(cuda_temporal) >> raw[0]
                        Await(raw[0], cuda_in_order, 0)
                    Fence(cuda_in_order, cuda_in_order)
                if READ_BACK == 1:
                    for w in cuda_threads(0, 4, unit=cuda_warp):
                        for c in cuda_threads(0, 32, unit=cuda_thread):
                            for i in seq(0, 8):
                                A[32 * tm + 8 * w + i, c] = B[32 * tm + 8 * w + i, c]
                Fence(cuda_in_order, cuda_in_order)

    return lowering


store_once = make("store_once")
read_back = make("read_back")
store_twice = make("store_twice")
reduce_twice = make("reduce_twice")
load_back = make("load_back")

tma_store_row = Sm90_tma_store(1, f32)


@proc
def warp_overwrite(N: size, A: f32[N, 64] @ CudaGmemLinear, C: f32[N, 64] @ CudaGmemLinear,
                   D: f32[N, 64] @ CudaGmemLinear):
    """One warp stores ``x`` with TMA (issued by one lane), waits on the commit group, and
    every lane overwrites ``x`` right after the Await, with no Fence in between. The model
    orders the overwrites after the store's reads; on the hardware that holds only because
    the wait is followed by ``__syncwarp()`` (the bulk group is the issuing lane's)."""
    tC = C[:, :] @ Sm90_tensorMap(0, 1, 64)
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            x: f32[64] @ CudaSmemLinear
            tcg: barrier @ Sm90_TmaCommitGroup
            for t in cuda_threads(0, 32, unit=cuda_thread):
                x[t] = A[task, t]
                x[t + 32] = A[task, t + 32]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
            tma_store_row(64, tC[task, 0:64], x[0:64])
            Arrive(tma_to_gmem_async) >> tcg
            Await(tcg, cuda_in_order, 0)
            for t in cuda_threads(0, 32, unit=cuda_thread):
                x[t] = D[task, t]
                x[t + 32] = D[task, t + 32]
            Fence(cuda_in_order, cuda_in_order)
            for t in cuda_threads(0, 32, unit=cuda_thread):
                D[task, t] = x[t + 32]
                D[task, t + 32] = x[t]
            Fence(cuda_in_order, cuda_in_order)


@proc
def cluster_handoff(N: size, A: f32[N, 2, 128] @ CudaGmemLinear,
                    B: f32[N, 2, 128] @ CudaGmemLinear):
    """Each CTA of a 2-CTA cluster writes its half of ``B`` (ordinary global stores), arrives
    on both CTAs' mbarriers (``z[0:2]``), and reads the other CTA's half after its wait. The
    remote arrive is ``release.cluster``; it synchronizes only with an ``acquire.cluster``
    wait (PTX memory model: the scopes must include each other), so the wait on ``z`` must not
    be the default ``acquire.cta`` form. ``w`` is arrived on by its own CTA only."""
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, N):
            z: barrier[2] @ CudaMbarrier
            w: barrier[2] @ CudaMbarrier
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    B[task, cta, t] = A[task, cta, t]
                Arrive(cuda_in_order) >> z[0:2]
                Arrive(cuda_in_order) >> w[cta]
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                Await(z[cta], cuda_in_order, 0)
                Await(w[cta], cuda_in_order, 0)
                for t in cuda_threads(0, 128, unit=cuda_thread):
                    A[task, 1 - cta, t] = B[task, 1 - cta, t] + 1.0
            Fence(cuda_in_order, cuda_in_order)


def make_lazy_zero():
    """One warpgroup zeroes its 64 x 64 accumulator lazily (``wgmma_zero``) and runs two
    m64n32 wgmmas on the two halves of the tile. The checkers model the zero per element
    (each half's first wgmma writes its zeros), and both prove it; the generated lazy-zero
    flag is one per tile, so the second half's wgmma would run with scale-d = 1 on
    uninitialised registers: code generation refuses it."""
    wg_n = Sm90_wgmma_ss(bf16, 32, 128, 128)
    zero = Sm90_wgmma_zero(64)
    load = Sm90_tma_load(2, bf16)

    @proc
    def lazy_zero(M: size, A: bf16[M, 64] @ CudaGmemLinear, B: bf16[64, 64] @ CudaGmemLinear,
                  C: f32[M, 64] @ CudaGmemLinear):
        assert M % 64 == 0
        tA = A[:, :] @ Sm90_tensorMap(128, 64, 64)
        tB = B[:, :] @ Sm90_tensorMap(128, 64, 64)
        with CudaDeviceFunction(blockDim=128):
            for m in cuda_tasks(0, M / 64):
                sA: bf16[64, 64] @ Sm90_SmemSwizzled(128)
                sB: bf16[64, 64] @ Sm90_SmemSwizzled(128)
                raw: barrier @ CudaMbarrier
                cg: barrier @ Sm90_WgmmaCommitGroup
                D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
                for w in cuda_threads(0, 1, unit=cuda_warp):
                    load(64, 64, sA[:, :], tA[m * 64:m * 64 + 64, :]) >> raw
                    load(64, 64, sB[:, :], tB[:, :]) >> raw
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        Arrive(cuda_temporal) >> raw
                Await(raw, cuda_generic_and_async_proxy, 0)
                zero(D[:, :, :, :, :])
                Fence(wgmma_fence_1, wgmma_fence_2)
                for kk in seq(0, 4):
                    wg_n(D[:, :, 0:4, :, :], sA[:, kk * 16:kk * 16 + 16],
                         sB[0:32, kk * 16:kk * 16 + 16])
                    wg_n(D[:, :, 4:8, :, :], sA[:, kk * 16:kk * 16 + 16],
                         sB[32:64, kk * 16:kk * 16 + 16])
                Arrive(wgmma_async) >> cg
                Await(cg, cuda_in_order, 0)
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    for lane in cuda_threads(0, 32, unit=cuda_thread):
                        for nb in seq(0, 8):
                            for h in seq(0, 2):
                                for c in seq(0, 2):
                                    C[m * 64 + w * 16 + h * 8 + lane / 4,
                                      nb * 8 + (lane % 4) * 2 + c] = D[w, lane, nb, h, c]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)

    return lazy_zero


lazy_zero_split = make_lazy_zero()
