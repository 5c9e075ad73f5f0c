"""Inter-CTA race: a CTA-scope Fence cannot order another CTA's TMA multicast.

Paper Section 2.2, first example. A cluster of 2 CTAs shares a tile that a TMA multicast
writes into *both* CTAs' shared memory: ``B: f32[2, 64, 16] @ CudaSmemLinear`` has one shard
per CTA (``B[cta]``, deduced from the ``cuda_cta_in_cluster`` iterator), and the multicast
instruction is issued cooperatively by one warp in each CTA (unit ``2 *
cuda_warp_in_cluster``), each filling the other's shard too. Every iteration ``k`` loads tile
``k`` of ``A`` into ``B`` and then every thread of each CTA reads its CTA's copy with an
ordinary in-order operation (``some_in_order_op``, here: copy to ``C``).

``multicast_bug``: the iteration ends with a ``Fence`` *inside*
the CTA loop, i.e. at CTA scope (``__syncthreads``). It orders CTA 0's reads of ``B[0]``
before CTA 0's warp issues the next multicast, but the next multicast also writes ``B[1]``,
and nothing orders that write after CTA 1's threads finish reading ``B[1]``: CTA 0 may race
ahead into iteration ``k + 1`` while CTA 1 is still in iteration ``k``. The TMA being
asynchronous is irrelevant; the missing edge is between CTAs. The checker is expected to
report ``refuted`` (kind ``sync``): a write-after-read race on ``B[1, ...]`` between
``some_in_order_op`` (iteration k, CTA 1 threads) and ``example_tma_multicast`` (iteration
k + 1, CTA 0's warp), needing ``K >= 2``.

``multicast_fixed``: a cluster-wide split barrier (``CudaClusterSync``): every thread of the
cluster arrives after its reads and waits before the next multicast is issued.
``multicast_fixed_fence``: the same fix as a ``Fence`` at cluster scope (``barrier.cluster``).
Both are expected to be accepted (``checked`` at ``VERIFY_SIZES``, or ``proven``).

Every variant makes the ordinary reads of ``B`` visible to the async proxy before the
next multicast overwrites them: a generic-proxy access followed by an async-proxy write of
the same element needs ``Fence(..., cuda_generic_and_async_proxy)`` executed by the reading
threads (``fence.proxy.async``; LANGUAGE.md, "Proxies"). That Fence is not the bug: at CTA
scope it is run by the right threads but still orders nothing across CTAs.

The instructions are the paper's placeholders: their bodies give the sequential meaning
(copies); they have no ``codegen`` and are not meant to be compiled.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"T": 2, "K": 3}


@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def some_in_order_op(n: size, dst: [f32][n] @ CudaDeviceVisibleLinear,
                     src: [f32][n] @ CudaDeviceVisibleLinear):
    # placeholder for ordinary (synchronous) work that reads `src`
    for i in seq(0, n):
        dst[i] = src[i]


@instr(timeline=tma_to_smem_async_instr, unit=2 * cuda_warp_in_cluster, barrier=CudaMbarrier,
       distributed={"dst": (cuda_cta_in_cluster,)})
def example_tma_multicast(dst: [f32][2, 64, 16] @ CudaSmemLinear,
                          src: [f32][64, 16] @ CudaGmemLinear):
    # every CTA of the pair receives the whole tile in its own shard dst[cta]
    for cta in seq(0, 2):
        for i in seq(0, 64):
            for j in seq(0, 16):
                dst[cta, i, j] = src[i, j]


@proc
def multicast_bug(T: size, K: size, A: f32[T, K, 64, 16] @ CudaGmemLinear,
                  C: f32[T, K, 2, 64, 16] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, T):
            B: f32[2, 64, 16] @ CudaSmemLinear
            raw: barrier[2, K @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, K):
                # one warp per CTA issues the multicast; it completes on both CTAs' mbarriers
                for w in cuda_threads(0, 1, unit=2 * cuda_warp_in_cluster):
                    example_tma_multicast(B[:, :, :], A[task, k, :, :]) >> raw[:, k]
                    for wc in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                        Arrive(cuda_temporal) >> raw[:, k]
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Await(raw[cta, k], cuda_in_order, 0)
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            some_in_order_op(8, C[task, k, cta, r, 8 * h:8 * h + 8],
                                             B[cta, r, 8 * h:8 * h + 8])
                    # BUG: CTA scope. Orders this CTA's reads of B[cta] before its *own* warp's
                    # next multicast, but the other CTA's warp also writes B[cta] in iteration
                    # k + 1, and nothing makes it wait for these reads.
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
            # all accesses to B before its free (SMEM may be reused by either CTA)
            Fence(cuda_in_order, cuda_generic_and_async_proxy)


@proc
def multicast_fixed(T: size, K: size, A: f32[T, K, 64, 16] @ CudaGmemLinear,
                    C: f32[T, K, 2, 64, 16] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, T):
            B: f32[2, 64, 16] @ CudaSmemLinear
            raw: barrier[2, K @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, K):
                cs: barrier @ CudaClusterSync
                for w in cuda_threads(0, 1, unit=2 * cuda_warp_in_cluster):
                    example_tma_multicast(B[:, :, :], A[task, k, :, :]) >> raw[:, k]
                    for wc in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                        Arrive(cuda_temporal) >> raw[:, k]
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Await(raw[cta, k], cuda_in_order, 0)
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            some_in_order_op(8, C[task, k, cta, r, 8 * h:8 * h + 8],
                                             B[cta, r, 8 * h:8 * h + 8])
                # FIX: every thread of *both* CTAs arrives after its reads of B (made visible
                # to the async proxy first), and every thread waits for the whole cluster
                # before the next multicast is issued
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Fence(cuda_in_order, cuda_generic_and_async_proxy)
                Arrive(cuda_in_order) >> cs
                Await(cs, cuda_in_order, 0)
            # no Fence needed before B's free: the last iteration's cluster sync orders it


@proc
def multicast_fixed_fence(T: size, K: size, A: f32[T, K, 64, 16] @ CudaGmemLinear,
                          C: f32[T, K, 2, 64, 16] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128, clusterDim=2):
        for task in cuda_tasks(0, T):
            B: f32[2, 64, 16] @ CudaSmemLinear
            raw: barrier[2, K @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, K):
                for w in cuda_threads(0, 1, unit=2 * cuda_warp_in_cluster):
                    example_tma_multicast(B[:, :, :], A[task, k, :, :]) >> raw[:, k]
                    for wc in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                        Arrive(cuda_temporal) >> raw[:, k]
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Await(raw[cta, k], cuda_in_order, 0)
                    for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                        for h in cuda_threads(0, 2, unit=cuda_thread):
                            some_in_order_op(8, C[task, k, cta, r, 8 * h:8 * h + 8],
                                             B[cta, r, 8 * h:8 * h + 8])
                # FIX (blocking form): the same Fence, moved out of the CTA loop, is executed by
                # the whole cluster (barrier.cluster.arrive + wait); the last one also orders
                # every access to B before its free
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
