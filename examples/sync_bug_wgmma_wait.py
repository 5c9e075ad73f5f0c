"""Intra-thread race: the output of an async wgmma read without waiting for it.

Paper Section 2.2, second example. The kernel parallelizes across the 2 CTAs of a cluster
and the 2 warpgroups of each CTA; warpgroup ``wg`` of CTA ``cta`` only touches its own shard
``D[cta, wg, :, :]``, so there is no inter-thread communication at all. Each warpgroup
computes ``D[cta, wg] = A[cta, wg] @ B[cta]`` with one ``example_wgmma`` (a placeholder for
a Hopper ``wgmma.mma_async``, executed by a whole warpgroup, instruction timeline
``wgmma_async_instr``), then ``some_in_order_op`` copies ``D`` to global memory.

``wgmma_wait_bug``: the wgmma is asynchronous, and nothing waits for it before
``some_in_order_op`` reads ``D``: the same threads that issued the wgmma may read its output
before the tensor cores wrote it. The checker is expected to report ``refuted`` (kind
``sync``): a read-after-write race on ``D[cta, wg, ...]`` between ``example_wgmma`` and
``some_in_order_op``, both by the threads of one warpgroup.

``wgmma_wait_fixed``: the wgmma is committed to a per-warpgroup commit group
(``cg: barrier[2] @ Sm90_WgmmaCommitGroup`` used as ``cg[wg]``), and the warpgroup waits for
it with ``Await(cg[wg], cuda_in_order, 0)`` (``wgmma.commit_group`` +
``wgmma.wait_group 0``) before reading ``D``. Expected: accepted.

Simplification: a real wgmma accumulates into registers; this placeholder keeps ``D`` in
shared memory (per-CTA shards, indexed per warpgroup) so that only the memories of the core
language are needed. Because the wgmma reads shared memory through the async proxy, the
operands written by ordinary stores are published with a CTA
``Fence(cuda_in_order, cuda_generic_and_async_proxy)`` (``fence.proxy.async``), and the task
ends with another one: the next task's wgmma rewrites ``D`` through the async proxy, after
this task's ordinary reads of it.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"T": 2}


@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def some_in_order_op(n: size, dst: [f32][n] @ CudaDeviceVisibleLinear,
                     src: [f32][n] @ CudaDeviceVisibleLinear):
    # placeholder for ordinary (synchronous) work: a copy
    for i in seq(0, n):
        dst[i] = src[i]


@instr(timeline=wgmma_async_instr, unit=cuda_warpgroup)
def example_wgmma(D: [f32][64, 32] @ CudaSmemLinear, A: [f32][64, 8] @ CudaSmemLinear,
                  B: [f32][8, 32] @ CudaSmemLinear):
    # D += A @ B (m64 n32 k8, tf32 on the tensor cores)
    for m in seq(0, 64):
        for n in seq(0, 32):
            for k in seq(0, 8):
                D[m, n] += A[m, k] * B[k, n]


@proc
def wgmma_wait_bug(T: size, A: f32[T, 2, 2, 64, 8] @ CudaGmemLinear,
                   B: f32[T, 2, 8, 32] @ CudaGmemLinear,
                   C: f32[T, 2, 2, 64, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256, clusterDim=2):
        for task in cuda_tasks(0, T):
            A_smem: f32[2, 2, 64, 8] @ CudaSmemLinear
            B_smem: f32[2, 8, 32] @ CudaSmemLinear
            D: f32[2, 2, 64, 32] @ CudaSmemLinear
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                # stage the operands and zero the accumulators (ordinary stores)
                for r in cuda_threads(0, 8, unit=32 * cuda_thread):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        B_smem[cta, r, c] = B[task, cta, r, c]
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            for j in seq(0, 4):
                                A_smem[cta, wg, r, 4 * h + j] = A[task, cta, wg, r, 4 * h + j]
                            for j in seq(0, 16):
                                D[cta, wg, r, 16 * h + j] = 0.0
                # generic-proxy stores -> async-proxy (wgmma) reads
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    example_wgmma(D[cta, wg, :, :], A_smem[cta, wg, :, :], B_smem[cta, :, :])
                    # BUG: the wgmma may still be running; nothing waits for it here
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            some_in_order_op(16, C[task, cta, wg, r, 16 * h:16 * h + 16],
                                             D[cta, wg, r, 16 * h:16 * h + 16])
            # all accesses to the SMEM tiles before they are freed; the next task's wgmma
            # rewrites D through the async proxy, so the ordinary reads of D reach it first
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def wgmma_wait_fixed(T: size, A: f32[T, 2, 2, 64, 8] @ CudaGmemLinear,
                     B: f32[T, 2, 8, 32] @ CudaGmemLinear,
                     C: f32[T, 2, 2, 64, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256, clusterDim=2):
        for task in cuda_tasks(0, T):
            A_smem: f32[2, 2, 64, 8] @ CudaSmemLinear
            B_smem: f32[2, 8, 32] @ CudaSmemLinear
            D: f32[2, 2, 64, 32] @ CudaSmemLinear
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                cg: barrier[2] @ Sm90_WgmmaCommitGroup  # one commit group per warpgroup
                for r in cuda_threads(0, 8, unit=32 * cuda_thread):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        B_smem[cta, r, c] = B[task, cta, r, c]
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            for j in seq(0, 4):
                                A_smem[cta, wg, r, 4 * h + j] = A[task, cta, wg, r, 4 * h + j]
                            for j in seq(0, 16):
                                D[cta, wg, r, 16 * h + j] = 0.0
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    example_wgmma(D[cta, wg, :, :], A_smem[cta, wg, :, :], B_smem[cta, :, :])
                    # FIX: commit the wgmma and wait until no group is pending
                    Arrive(wgmma_async) >> cg[wg]
                    Await(cg[wg], cuda_in_order, 0)
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            some_in_order_op(16, C[task, cta, wg, r, 16 * h:16 * h + 16],
                                             D[cta, wg, r, 16 * h:16 * h + 16])
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
