"""Async work does not ride along on an in-order barrier: wgmma reads B, TMA overwrites it.

Paper Section 2.2, third example: the first two examples combined, in a loop. A cluster of
2 CTAs with 2 warpgroups each. Iteration ``k`` multicasts tile ``k`` of ``B`` into both CTAs'
``B_smem`` (``example_tma_multicast``, as in ``sync_bug_multicast.py``), then in every CTA

* ``some_in_order_op_1`` (here: a copy to ``Bout``) reads ``B_smem`` with ordinary loads;
* each warpgroup issues ``example_wgmma``: ``D[cta, wg] += A[cta, wg] @ B_smem[cta]``,
  an *asynchronous* read of ``B_smem``;
* ``some_in_order_op_2`` (a copy to ``C``) reads the warpgroup's ``D`` after waiting for the
  wgmma on the commit group ``cg[cta, wg]`` (as in ``sync_bug_wgmma_wait.py``).

A cluster sync (``cs: barrier @ CudaClusterSync``) separates iteration ``k``'s readers of
``B_smem`` from iteration ``k + 1``'s multicast, which overwrites ``B_smem`` in both CTAs.

``async_transitive_bug``: the paper's layout. ``Arrive(cuda_in_order) >> cs`` comes right
after the wgmma is issued, and the warpgroups wait on ``cg`` only afterwards. Both pairs are
right for what they were meant for: ``cs`` orders the in-order reads of ``B_smem`` before the
next multicast, and ``cg`` orders the wgmma before ``some_in_order_op_2`` reads ``D``. But
the ``cs`` Arrive's timeline ``cuda_in_order`` does not include the wgmma's async accesses,
so its completion does not wait for the wgmma to stop reading ``B_smem``; and the ``cg``
Await happens after that Arrive, so the visibility it gains cannot flow transitively into
the cluster sync. Iteration ``k + 1``'s multicast (issued by a warp of either CTA) may
overwrite ``B_smem[cta]`` while warpgroup 1 of ``cta`` (or the other CTA's wgmma) is still
reading it. The checker is expected to report ``refuted`` (kind ``sync``): a
write-after-read race on ``B_smem`` between ``example_wgmma`` (iteration k) and
``example_tma_multicast`` (iteration k + 1), needing ``K >= 2``.

``async_transitive_fixed``: each warpgroup awaits its wgmma commit group *before* the
cluster-sync Arrive, so the wgmma's reads are retired and in-order-visible to the arriving
threads, and the cluster sync carries them to every thread of the cluster. Expected:
accepted.

Shared memory written by ordinary stores and then accessed by the wgmma (async proxy) is
published with a CTA ``Fence(cuda_in_order, cuda_generic_and_async_proxy)``; it also orders
the previous iteration's ordinary reads of ``D`` before this iteration's wgmma updates it.
A CTA-scope fence does not help the race above: the overwrite comes from the other CTA's
multicast, and it precedes this fence in iteration ``k + 1``. The ordinary reads of
``B_smem`` are followed by a second proxy Fence, so that the cluster sync carries them to
the next multicast (an async-proxy write: a generic access before it needs a proxy fence by
its own threads), and the task ends with one, since the next task's wgmma rewrites ``D``.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"T": 2, "K": 2}


@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def some_in_order_op(n: size, dst: [f32][n] @ CudaDeviceVisibleLinear,
                     src: [f32][n] @ CudaDeviceVisibleLinear):
    # placeholder for ordinary (synchronous) work: a copy
    for i in seq(0, n):
        dst[i] = src[i]


@instr(timeline=tma_to_smem_async_instr, unit=2 * cuda_warp_in_cluster, barrier=CudaMbarrier,
       distributed={"dst": (cuda_cta_in_cluster,)})
def example_tma_multicast(dst: [f32][2, 8, 32] @ CudaSmemLinear,
                          src: [f32][8, 32] @ CudaGmemLinear):
    # every CTA of the pair receives the whole tile in its own shard dst[cta]
    for cta in seq(0, 2):
        for i in seq(0, 8):
            for j in seq(0, 32):
                dst[cta, i, j] = src[i, j]


@instr(timeline=wgmma_async_instr, unit=cuda_warpgroup)
def example_wgmma(D: [f32][64, 32] @ CudaSmemLinear, A: [f32][64, 8] @ CudaSmemLinear,
                  B: [f32][8, 32] @ CudaSmemLinear):
    # D += A @ B (m64 n32 k8, tf32 on the tensor cores)
    for m in seq(0, 64):
        for n in seq(0, 32):
            for k in seq(0, 8):
                D[m, n] += A[m, k] * B[k, n]


@proc
def async_transitive_bug(T: size, K: size, A: f32[T, 2, 2, 64, 8] @ CudaGmemLinear,
                         B: f32[T, K, 8, 32] @ CudaGmemLinear,
                         Bout: f32[T, K, 2, 8, 32] @ CudaGmemLinear,
                         C: f32[T, K, 2, 2, 64, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256, clusterDim=2):
        for task in cuda_tasks(0, T):
            A_smem: f32[2, 2, 64, 8] @ CudaSmemLinear
            B_smem: f32[2, 8, 32] @ CudaSmemLinear
            D: f32[2, 2, 64, 32] @ CudaSmemLinear
            raw: barrier[2, K @ ring_buffer_by(2)] @ CudaMbarrier
            cg: barrier[2, 2] @ Sm90_WgmmaCommitGroup  # one commit group per warpgroup
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            for j in seq(0, 4):
                                A_smem[cta, wg, r, 4 * h + j] = A[task, cta, wg, r, 4 * h + j]
                            for j in seq(0, 16):
                                D[cta, wg, r, 16 * h + j] = 0.0
            for k in seq(0, K):
                cs: barrier @ CudaClusterSync
                for w in cuda_threads(0, 1, unit=2 * cuda_warp_in_cluster):
                    example_tma_multicast(B_smem[:, :, :], B[task, k, :, :]) >> raw[:, k]
                    for wc in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                        Arrive(cuda_temporal) >> raw[:, k]
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Await(raw[cta, k], cuda_generic_and_async_proxy, 0)
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                    # some_in_order_op_1: ordinary reads of B_smem
                    for r in cuda_threads(0, 8, unit=32 * cuda_thread):
                        for c in cuda_threads(0, 32, unit=cuda_thread):
                            some_in_order_op(1, Bout[task, k, cta, r, c:c + 1],
                                             B_smem[cta, r, c:c + 1])
                    # the ordinary reads reach the async proxy before the next multicast
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        # async read of B_smem (the access the cluster sync below misses)
                        example_wgmma(D[cta, wg, :, :], A_smem[cta, wg, :, :], B_smem[cta, :, :])
                        Arrive(wgmma_async) >> cg[cta, wg]
                # BUG: an in-order Arrive does not wait for the wgmma above to retire, so the
                # cluster sync orders some_in_order_op_1's reads of B_smem, not the wgmma's
                Arrive(cuda_in_order) >> cs
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        # right for D, too late for B_smem: it follows the cs Arrive
                        Await(cg[cta, wg], cuda_in_order, 0)
                        # some_in_order_op_2: ordinary reads of the wgmma's output
                        for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                            for h in cuda_threads(0, 2, unit=cuda_thread):
                                some_in_order_op(16, C[task, k, cta, wg, r, 16 * h:16 * h + 16],
                                                 D[cta, wg, r, 16 * h:16 * h + 16])
                # the next iteration's multicast is issued after this
                Await(cs, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def async_transitive_fixed(T: size, K: size, A: f32[T, 2, 2, 64, 8] @ CudaGmemLinear,
                           B: f32[T, K, 8, 32] @ CudaGmemLinear,
                           Bout: f32[T, K, 2, 8, 32] @ CudaGmemLinear,
                           C: f32[T, K, 2, 2, 64, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256, clusterDim=2):
        for task in cuda_tasks(0, T):
            A_smem: f32[2, 2, 64, 8] @ CudaSmemLinear
            B_smem: f32[2, 8, 32] @ CudaSmemLinear
            D: f32[2, 2, 64, 32] @ CudaSmemLinear
            raw: barrier[2, K @ ring_buffer_by(2)] @ CudaMbarrier
            cg: barrier[2, 2] @ Sm90_WgmmaCommitGroup
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            for j in seq(0, 4):
                                A_smem[cta, wg, r, 4 * h + j] = A[task, cta, wg, r, 4 * h + j]
                            for j in seq(0, 16):
                                D[cta, wg, r, 16 * h + j] = 0.0
            for k in seq(0, K):
                cs: barrier @ CudaClusterSync
                for w in cuda_threads(0, 1, unit=2 * cuda_warp_in_cluster):
                    example_tma_multicast(B_smem[:, :, :], B[task, k, :, :]) >> raw[:, k]
                    for wc in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                        Arrive(cuda_temporal) >> raw[:, k]
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Await(raw[cta, k], cuda_generic_and_async_proxy, 0)
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                    for r in cuda_threads(0, 8, unit=32 * cuda_thread):
                        for c in cuda_threads(0, 32, unit=cuda_thread):
                            some_in_order_op(1, Bout[task, k, cta, r, c:c + 1],
                                             B_smem[cta, r, c:c + 1])
                    # the ordinary reads reach the async proxy before the next multicast
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        example_wgmma(D[cta, wg, :, :], A_smem[cta, wg, :, :], B_smem[cta, :, :])
                        Arrive(wgmma_async) >> cg[cta, wg]
                        # FIX: retire the wgmma (and its reads of B_smem) before arriving on cs;
                        # the in-order Arrive then carries them to the whole cluster
                        Await(cg[cta, wg], cuda_in_order, 0)
                Arrive(cuda_in_order) >> cs
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                            for h in cuda_threads(0, 2, unit=cuda_thread):
                                some_in_order_op(16, C[task, k, cta, wg, r, 16 * h:16 * h + 16],
                                                 D[cta, wg, r, 16 * h:16 * h + 16])
                Await(cs, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
