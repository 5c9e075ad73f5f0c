"""Small kernels for the abstract machine's unit tests. Each factory returns a ``@proc``
whose synchronization is chosen by its arguments (closure constants), so that the correct
and the broken variant are the same source."""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm80 import *  # noqa: F403


@instr(timeline=cuda_in_order_instr, unit=cuda_thread, atomic=("dst",))
def atomic_add(dst: [f32][1] @ CudaGmemLinear, src: [f32][1] @ CudaGmemLinear):
    dst[0] += src[0]


def two_warps(order: str, fence: str):
    """Warp 0 and warp 1 access ``x[t]``; ``order`` is "wr" (warp 0 writes, warp 1 reads),
    "rw" (warp 1 reads first, then warp 0 writes) or "ww"; ``fence`` between them is
    "cta", "warp" (warp 0's own warp-scope fence) or "none"."""
    WR = 1 if order == "wr" else 0
    RW = 1 if order == "rw" else 0
    WW = 1 if order == "ww" else 0
    CTA = 1 if fence == "cta" else 0
    WARP = 1 if fence == "warp" else 0

    @proc
    def two_warps_k(N: size, Y: f32[N, 32] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=64):
            for task in cuda_tasks(0, N):
                x: f32[32] @ CudaSmemLinear
                if RW == 1:
                    with CudaWarps(0, 1):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            x[t] = 1.0
                    Fence(cuda_in_order, cuda_in_order)
                    with CudaWarps(1, 2):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            Y[task, t] = x[t]
                else:
                    with CudaWarps(0, 1):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            x[t] = 2.0
                if CTA == 1:
                    Fence(cuda_in_order, cuda_in_order)
                if WARP == 1:
                    with CudaWarps(0, 1):
                        Fence(cuda_in_order, cuda_in_order)
                if WR == 1:
                    with CudaWarps(1, 2):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            Y[task, t] = x[t]
                else:
                    with CudaWarps(1 - RW, 2 - RW):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            x[t] = 3.0
                Fence(cuda_in_order, cuda_in_order)

    return two_warps_k


def in_warp(fence: bool, shift: int = 1, free_fence: bool = True):
    """Thread t writes x[t], then reads x[(t + shift) % 32]: needs a warp-scope Fence unless
    shift == 0; ``free_fence``: the Fence before x is freed."""
    F = 1 if fence else 0
    SH = shift
    FF = 1 if free_fence else 0

    @proc
    def in_warp_k(N: size, Y: f32[N, 32] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=32):
            for task in cuda_tasks(0, N):
                x: f32[32] @ CudaSmemLinear
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    x[t] = 1.0
                if F == 1:
                    Fence(cuda_in_order, cuda_in_order)
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    Y[task, t] = x[(t + SH) % 32]
                if FF == 1:
                    Fence(cuda_in_order, cuda_in_order)

    return in_warp_k


def ring(pre: int = 2, off: int = 2, await_war: bool = True, final: bool = True):
    """Producer warp 0 fills slot k % 2 of x, consumer warp 1 reads it: mbarrier rings raw
    (plain) and war (``CudaMbarrierPreArrive(pre)``; the consumer releases slot k by arriving
    on war[k + off])."""
    WAR_MECH = CudaMbarrierPreArrive(pre) if pre else CudaMbarrier
    OFF = off
    AW = 1 if await_war else 0
    FIN = 1 if final else 0

    @proc
    def ring_k(K: size, Y: f32[K, 32] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=64):
            for task in cuda_tasks(0, 1):
                x: f32[2, 32] @ CudaSmemLinear
                raw: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier
                war: barrier[K @ ring_buffer_by(2)] @ WAR_MECH
                for k in seq(0, K):
                    with CudaWarps(0, 1):
                        if AW == 1:
                            Await(war[k], cuda_in_order, 0)
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            x[k % 2, t] = 1.0
                        Arrive(cuda_in_order) >> raw[k]
                    with CudaWarps(1, 2):
                        Await(raw[k], cuda_in_order, 0)
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            Y[k, t] = x[k % 2, t]
                        if FIN == 1 or k < K - 1:
                            Arrive(cuda_in_order) >> war[k + OFF]
                Fence(cuda_in_order, cuda_in_order)

    return ring_k


def commit_groups(depth: int):
    """Each thread of a warp cp.asyncs slot k % 3 per iteration, commits, waits with
    ``Await(cg, cuda_in_order, depth)`` and reads slot k - 1 (correct for depth <= 1)."""
    D = depth

    @proc
    def commit_k(K: size, A: f32[K, 32] @ CudaGmemLinear, Y: f32[K, 32] @ CudaGmemLinear):
        assert K >= 2
        with CudaDeviceFunction(blockDim=32):
            for task in cuda_tasks(0, 1):
                x: f32[3, 32, 1] @ CudaSmemLinear
                cg: barrier[32] @ Sm80_CommitGroup
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    for k in seq(0, K):
                        Sm80_cp_async_f32(1, x[k % 3, t, 0:1], A[k, t:t + 1])
                        Arrive(Sm80_cp_async) >> cg[t]
                        if k >= 1:
                            Await(cg[t], cuda_in_order, D)
                            Y[k - 1, t] = x[(k - 1) % 3, t, 0]
                    Await(cg[t], cuda_in_order, 0)
                    Y[K - 1, t] = x[(K - 1) % 3, t, 0]
                Fence(cuda_in_order, cuda_in_order)

    return commit_k


def cluster_pair(sync: str):
    """CTA 0 writes Y[task, :], CTA 1 reads it after ``sync``: "cluster" (CudaClusterSync
    Arrive/Await), "fence" (cluster-wide Fence), "cta" (a Fence inside the CTA loop only)."""
    CS = 1 if sync == "cluster" else 0
    CF = 1 if sync == "fence" else 0
    CT = 1 if sync == "cta" else 0

    @proc
    def cluster_k(N: size, Y: f32[N, 32] @ CudaGmemLinear, Z: f32[N, 32] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=32, clusterDim=2):
            for task in cuda_tasks(0, N):
                cs: barrier @ CudaClusterSync
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    if cta == 0:
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            Y[task, t] = 1.0
                    if CT == 1:
                        Fence(cuda_in_order, cuda_in_order)
                if CS == 1:
                    Arrive(cuda_in_order) >> cs
                    Await(cs, cuda_in_order, 0)
                if CF == 1:
                    Fence(cuda_in_order, cuda_in_order)
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    if cta == 1:
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            Z[task, t] = Y[task, t]

    return cluster_k


def multicast(targets: str):
    """Thread 0 of CTA 0 writes Y[task, 0]; it arrives on z[0] and z[1] ("slice": ``>> z[:]``,
    "two": ``>> z[0] >> z[1]``) or only on z[0] ("one"); each CTA awaits its own z[cta] and
    reads Y[task, 0]."""
    SL = 1 if targets == "slice" else 0
    TWO = 1 if targets == "two" else 0

    @proc
    def multicast_k(N: size, Y: f32[N, 1] @ CudaGmemLinear, Z: f32[N, 2] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=32, clusterDim=2):
            for task in cuda_tasks(0, N):
                z: barrier[2] @ CudaMbarrier
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        if cta == 0:
                            Y[task, 0] = 1.0
                            if SL == 1:
                                Arrive(cuda_in_order) >> z[:]
                            elif TWO == 1:
                                Arrive(cuda_in_order) >> z[0] >> z[1]
                            else:
                                Arrive(cuda_in_order) >> z[0]
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Await(z[cta], cuda_in_order, 0)
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        Z[task, cta] = Y[task, 0]

    return multicast_k


def atomics(second: str):
    """Warp 0 then warp 1 update Y[task, 0]: warp 0 atomically, warp 1 atomically ("atomic")
    or with a plain write ("write")."""
    AT = 1 if second == "atomic" else 0

    @proc
    def atomics_k(N: size, Y: f32[N, 1] @ CudaGmemLinear, V: f32[1] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=64):
            for task in cuda_tasks(0, N):
                with CudaWarps(0, 1):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        atomic_add(Y[task, 0:1], V[0:1])
                with CudaWarps(1, 2):
                    for t in cuda_threads(0, 1, unit=cuda_thread):
                        if AT == 1:
                            atomic_add(Y[task, 0:1], V[0:1])
                        else:
                            Y[task, 0] = 0.0

    return atomics_k


@proc
def out_of_bounds(N: size, Y: f32[N, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            x: f32[32] @ CudaSmemLinear
            for t in cuda_threads(0, 32, unit=cuda_thread):
                x[t] = 1.0
            Fence(cuda_in_order, cuda_in_order)
            for t in cuda_threads(0, 32, unit=cuda_thread):
                Y[task, t] = x[t + 1]
            Fence(cuda_in_order, cuda_in_order)
