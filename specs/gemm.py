"""The Hopper GEMM family: ``C = A @ B.T`` (f32 accumulation), TF32 and BF16, proven for all
sizes that satisfy the asserts.

``gemm(cfg)`` builds one kernel from a ``GemmConfig``; ``VARIANTS`` holds the shipped ones by
name (each is also a module-level name, so ``exogpu-verify specs/`` proves it and
``exogpu-codegen specs/`` builds it). Every shipped kernel is scheduled from the naive matmul
``C[i, j] += A[i, k] * B[j, k]`` by checked rewrites (the library's schedule,
``exogpu_verify.kernels.gemm.schedule_library``; ``derivation(cfg)`` lists the steps, and the
certificates record them): the cooperative 1x1-cluster kernels, the ping-pong kernel (f32 C,
no split-K: tile ``j`` is given to warpgroup ``j % 2`` by ``add_loop(..., guard="j % 2")``)
and the 2x1-cluster kernel (f32 C, no split-K: B's per-CTA staging copies become one TMA
multicast by ``replace``). Configurations the schedule does not build (ping-pong or 2x1
cluster with bf16 C or split-K; none is shipped) are written directly below, and those texts
are also what the tests compare the scheduled kernels with. Conventions, as cuBLAS users
expect: sizes ``M, N, K``;
``A: T[M, K]`` row-major, ``B: T[N, K]`` (K-major, as TF32 wgmma needs), ``C: Tc[M, N]``;
``T`` is f32 (run as tf32 by the tensor cores) or bf16, ``Tc`` f32 or bf16. The ``_kn``
variant takes ``B: bf16[K, N]`` (row-major) and computes ``C = A @ B``.

Structure of a kernel (``docs/codegen.md`` has the reasoning; every piece is checked):

* warp specialization: a producer warp group (4 warps, ``setmaxnreg`` 40; one warp issues the
  TMA loads) and two consumer warpgroups (``setmaxnreg`` 232);
* a task is ``G`` consecutive output tiles of one tile row (``cuda_tasks`` over tile rows and
  groups of ``G`` tiles); the persistent kernel runs tasks in a rasterized order
  (``CudaDeviceFunction(task_raster=R)``: panels of ``R`` tile rows, for L2 reuse), which is
  semantically free since tasks impose no order;
* per tile, an ``S``-stage SMEM ring (``sA``, ``sB``) filled by TMA (``raw``: full, completes on
  the copies' transaction bytes; ``war``: empty, pre-arrived ``S`` times) and consumed by wgmma
  (one commit group per warpgroup, ``wgmma.wait_group 1`` before releasing the previous stage);
* tiles of one task share the ring: a stage read by the last ``S`` k-steps of tile ``j`` is
  handed to the producer's first ``S`` loads of tile ``j + 1`` by ``carry[j, stage]``, so the
  producer prefetches tile ``j + 1`` while the consumers finish tile ``j`` and run its
  epilogue (the epilogue overlaps the next tile's loads, and its TMA stores the next
  mainloop);
* epilogue through SMEM: per column chunk of one swizzle row (32 f32 or 64 bf16 columns) the
  consumers store their accumulators into one of two ``C_smem`` buffers (``store_acc``),
  ``Fence(cuda_in_order, cuda_generic_and_async_proxy)`` among the consumer warps (a named
  barrier, ``bar.sync 1, 256``, with ``fence.proxy.async.shared::cta``), one consumer warp
  issues the TMA store and waits until the store before it has read its buffer
  (``cp.async.bulk.wait_group.read 1``), and a second named barrier hands that buffer back;
* ``cooperative``: both consumer warpgroups work on one 128 x BN tile (64 rows each);
  ``pingpong``: tile ``j`` belongs to warpgroup ``j % 2`` (128 x BN, two m64 blocks), so one
  warpgroup's epilogue runs while the other's mainloop uses the tensor cores, each
  warpgroup fencing its own epilogue with its own named barrier (``bar.sync 1 + wg, 128``);
* ``split_k = S_k > 1``: tasks also range over ``S_k`` K-slices (k-steps ``s, s + S_k, ...``:
  interleaved, so slice offsets stay affine in the task iterator), C is zeroed by the host
  (``cudaMemsetAsync``) and every slice adds its partial tile with a TMA reduce-add; the
  split factor is a constant of the variant (an offset proportional to a size parameter would
  not be quasi-affine).
"""

from __future__ import annotations

from dataclasses import dataclass

from exogpu_verify import *  # noqa: F403
from exogpu_verify.kernels.gemm import Config, Shape, schedule_library
from exogpu_verify.platforms.cuda import *  # noqa: F403
from exogpu_verify.platforms.sm90 import *  # noqa: F403
from exogpu_verify.schedule import rename

_TYPES = {"tf32": f32, "bf16": bf16, "f32": f32}


class GemmConfig:
    """One GEMM variant. ``dtype``: inputs ("tf32" = f32 data on tf32 tensor cores, or
    "bf16"); ``out``: C's type ("f32" or "bf16"); ``tile_n``: BN (the tile is 128 x BN);
    ``stages``: SMEM ring depth; ``schedule``: "cooperative" or "pingpong"; ``tiles``: G,
    output tiles per task; ``split_k``: K slices reduced into C; ``raster``: task-order panel
    height (tile rows) for L2 reuse; ``cluster``: CTAs per cluster (2: B multicast);
    ``b_major``: "K" (``B: T[N, K]``, ``C = A @ B.T``) or "N" (``B: T[K, N]``, ``C = A @ B``,
    bf16)."""

    dtype: str = "bf16"
    out: str = "f32"
    tile_n: int = 256
    stages: int = 4
    schedule: str = "cooperative"
    tiles: int = 2
    split_k: int = 1
    raster: int = 8
    cluster: int = 1
    b_major: str = "K"

    @property
    def name(self) -> str:
        sch = {"cooperative": "coop", "pingpong": "pp"}[self.schedule]
        s = f"gemm_{self.dtype}_{self.out}_128x{self.tile_n}_s{self.stages}_{sch}_g{self.tiles}"
        s += f"_c{self.cluster}x1" if self.cluster > 1 else ""
        s += "_kn" if self.b_major == "N" else ""
        return s + (f"_splitk{self.split_k}" if self.split_k > 1 else "")

    def check(self) -> None:
        if self.dtype not in ("tf32", "bf16") or self.out not in ("f32", "bf16"):
            raise ValueError(f"dtype tf32|bf16 and out f32|bf16, not {self.dtype}/{self.out}")
        if self.dtype == "tf32" and self.out != "f32":
            raise ValueError("TF32 GEMMs write f32")
        if self.tile_n not in (128, 256) or not 2 <= self.stages <= 6:
            raise ValueError(f"tile_n 128|256 and 2..6 stages, not {self.tile_n}/{self.stages}")
        if self.schedule not in ("cooperative", "pingpong"):
            raise ValueError(f"schedule cooperative|pingpong, not {self.schedule!r}")
        if self.schedule == "pingpong" and (self.tile_n != 128 or self.tiles % 2):
            raise ValueError("ping-pong tiles are 128 x 128 per warpgroup, an even number "
                             "per task")
        if self.split_k > 1 and self.out != "f32":
            raise ValueError("split-K reduces in f32")
        if self.cluster not in (1, 2) or (self.cluster > 1 and self.schedule != "cooperative"):
            raise ValueError("clusters: 1x1, or 2x1 (cooperative) with B multicast")
        if self.b_major not in ("K", "N") or (self.b_major == "N" and (
                self.dtype, self.out, self.schedule, self.cluster, self.split_k) !=
                ("bf16", "f32", "cooperative", 1, 1)):
            raise ValueError("B is N x K (b_major K), or K x N (b_major N) for bf16 "
                             "cooperative 1x1-cluster kernels with f32 C and no split-K")


# `from __future__ import annotations` (needed by @proc) makes the field annotations strings,
# which @dataclass resolves through sys.modules; spec files are also imported by path without
# being registered there, so the annotations are made real types first
GemmConfig.__annotations__ = {k: {"str": str, "int": int}[v]
                              for k, v in GemmConfig.__annotations__.items()}
GemmConfig = dataclass(frozen=True)(GemmConfig)


def gemm(cfg: GemmConfig):
    """The kernel for ``cfg`` (see the module docstring), named ``cfg.name``: scheduled from
    the naive matmul (``derivation``) where the library's schedule reaches it (cooperative
    1x1-cluster kernels; ping-pong and the 2x1 cluster with f32 C and no split-K); the other
    ping-pong and 2x1-cluster configurations are written directly (the schedule stops at
    bf16 C and split-K there)."""
    cfg.check()
    if scheduled(cfg):
        return derivation(cfg)[-1][1]
    p = _pingpong(cfg) if cfg.schedule == "pingpong" else _cooperative_cluster(cfg)
    return rename(p, cfg.name)


def scheduled(cfg: GemmConfig) -> bool:
    """Whether the library's schedule builds ``cfg`` (else ``gemm`` writes it directly)."""
    return (cfg.schedule == "cooperative" and cfg.cluster == 1) or \
        (cfg.out == "f32" and cfg.split_k == 1)  # (b_major "N" is cooperative, 1x1: check)


def derivation(cfg: GemmConfig):
    """The steps ``[(description, proc), ...]`` by which the library's schedule
    (``exogpu_verify.kernels.gemm.schedule_library``) rewrites the naive matmul ``C = A @
    B.T`` into the kernel of ``cfg``; every step is checked, and the kernel's certificate
    records them (``exogpu-verify`` prints "derived from ... by k checked steps")."""
    if not scheduled(cfg):
        raise ValueError(f"{cfg.name} is written directly: the schedule builds cooperative "
                         "1x1-cluster variants, and ping-pong and 2x1-cluster ones with f32 "
                         "C, no split-K")
    shape = Shape(cfg.dtype, cfg.tile_n, cfg.stages)
    return schedule_library(Config(shape, cfg.tiles, cfg.out, cfg.raster, cfg.split_k,
                                   cfg.schedule, cfg.cluster, cfg.b_major), name=cfg.name)


def _common(cfg: GemmConfig):
    T, TC = _TYPES[cfg.dtype], _TYPES[cfg.out]
    KB = 128 // T.nbytes            # k-step: one 128-byte swizzle row of A and B
    W = 128 // TC.nbytes            # epilogue chunk: one 128-byte swizzle row of C
    return T, TC, KB, W


def _cooperative_cluster(cfg: GemmConfig):
    """Cooperative on a 2x1 cluster: CTA ``r`` of cluster task ``mc`` computes tile row
    ``2 mc + r``; both need the same B tile, so each CTA's producer loads half of it and
    multicasts it to both (``tma_multicast``, completing on both CTAs' ``raw``). A stage is
    then written by both producers, so consumers release it (``war``, ``carry``) in both CTAs
    (``Arrive >> war[:, i]``), and the end of a task is a cluster-wide Fence (a peer may still
    multicast into this CTA's shared memory until then). Written directly: for the
    configurations the schedule does not reach (bf16 C, split-K), and the independent text
    the scheduled 2x1-cluster kernel is compared with
    (tests/schedule/test_gemm_library_example.py)."""
    T, TC, KB, W = _common(cfg)
    BN, S, G, KS, R = cfg.tile_n, cfg.stages, cfg.tiles, cfg.split_k, cfg.raster
    NB, CB, NCH = BN // 8, W // 8, BN // W
    BH = BN // 2                    # rows of B each CTA loads and multicasts
    KN = 32 // T.nbytes
    NK = KB // KN
    SPLIT = 1 if KS > 1 else 0
    tma_load = Sm90_tma_load(2, T)
    tma_mc = Sm90_tma_multicast(2, T, 2)
    tma_store = Sm90_tma_reduce_add(2, TC) if SPLIT else Sm90_tma_store(2, TC)
    wgmma = Sm90_wgmma_ss(T, BN)
    wgmma_zero = Sm90_wgmma_zero(BN)
    store_acc = Sm90_store_acc(TC)
    memset = globals()[f"cudaMemsetAsync0_2d_{TC.name}"]

    @proc
    def gemm_coop_c2(M: size, N: size, K: size, A: T[M, K] @ CudaGmemLinear,
                     B: T[N, K] @ CudaGmemLinear, C: TC[M, N] @ CudaGmemLinear):
        assert M % 256 == 0
        assert N % (BN * G) == 0
        assert K % (KB * KS) == 0
        tA = A[:, :] @ Sm90_tensorMap(128, 128, KB)
        tB = B[:, :] @ Sm90_tensorMap(128, BH, KB)
        tC = C[:, :] @ Sm90_tensorMap(128, 128, W)
        if SPLIT == 1:
            memset(M, N, C[:, :])
        with CudaDeviceFunction(clusterDim=2,
                                warp_config=[CudaWarpConfig("producer", 4, setmaxnreg_dec=40),
                                             CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)],
                                task_raster=R):
            for s in cuda_tasks(0, KS):
                for mc in cuda_tasks(0, M / 256):
                    for ng in cuda_tasks(0, N / (BN * G)):
                        sA: T[2, S, 128, KB] @ Sm90_SmemSwizzled(128)
                        sB: T[2, S, BN, KB] @ Sm90_SmemSwizzled(128)
                        C_smem: TC[2, 2, 128, W] @ Sm90_SmemSwizzled(128)
                        carry: barrier[2, G @ ring_buffer_by(2), S] @ CudaMbarrier
                        tcg: barrier[2] @ Sm90_TmaCommitGroup
                        for j in seq(0, G):
                            D: f32[2, 2, 4, 32, NB, 2, 2] @ Sm90_RmemMatrixD
                            raw: barrier[2, K / (KB * KS) @ ring_buffer_by(S)] @ CudaMbarrier
                            war: barrier[2, K / (KB * KS) @ ring_buffer_by(S)] @ \
                                CudaMbarrierPreArrive(S)
                            cg: barrier[2, 2] @ Sm90_WgmmaCommitGroup
                            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                                with CudaWarps(name="consumer"):
                                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                        wgmma_zero(D[cta, wg, :, :, :, :, :])
                            for k in seq(0, K / (KB * KS)):
                                with CudaWarps(0, 1, name="producer"):
                                    for cw in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                                        if j >= 1 and k < S:
                                            Await(carry[cw, j - 1, k], cuda_temporal, 0)
                                        Await(war[cw, k], cuda_temporal, 0)
                                        tma_load(128, KB, sA[cw, k % S, :, :],
                                                 tA[(2 * mc + cw) * 128:(2 * mc + cw) * 128 + 128,
                                                    (k * KS + s) * KB:(k * KS + s) * KB + KB]
                                                 ) >> raw[cw, k]
                                    tma_mc(BN, KB, sB[:, k % S, :, :],
                                           tB[(ng * G + j) * BN:(ng * G + j) * BN + BN,
                                              (k * KS + s) * KB:(k * KS + s) * KB + KB]
                                           ) >> raw[:, k]
                                    for cw in cuda_threads(0, 2, unit=cuda_warp_in_cluster):
                                        for t in cuda_threads(0, 1, unit=cuda_thread):
                                            Arrive(cuda_temporal) >> raw[cw, k]
                                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                                    with CudaWarps(name="consumer"):
                                        for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                            Await(raw[cta, k], cuda_generic_and_async_proxy, 0)
                                            Fence(wgmma_fence_1, wgmma_fence_2)
                                            for kk in seq(0, NK):
                                                wgmma(D[cta, wg, :, :, :, :, :],
                                                      sA[cta, k % S, wg * 64:wg * 64 + 64,
                                                         kk * KN:kk * KN + KN],
                                                      sB[cta, k % S, :, kk * KN:kk * KN + KN])
                                            Arrive(wgmma_async) >> cg[cta, wg]
                                            if k >= 1:
                                                Await(cg[cta, wg], cuda_in_order, 1)
                                        if k >= 1:
                                            Arrive(cuda_in_order) >> war[:, k + S - 1]
                                            if k - 1 >= K / (KB * KS) - S:
                                                Arrive(cuda_in_order) >> \
                                                    carry[:, j, (k - 1) % S]
                            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                                with CudaWarps(name="consumer"):
                                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                        Await(cg[cta, wg], cuda_in_order, 0)
                                    Arrive(cuda_in_order) >> war[:, K / (KB * KS) + S - 1]
                                    Arrive(cuda_in_order) >> carry[:, j, (K / (KB * KS) - 1) % S]
                                    for c in seq(0, NCH):
                                        for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                            store_acc(C_smem[cta, c % 2, wg * 64:wg * 64 + 64, :],
                                                      D[cta, wg, :, :, c * CB:c * CB + CB, :, :])
                                        Fence(cuda_in_order, cuda_generic_and_async_proxy)
                                        with CudaWarps(0, 1):
                                            tma_store(128, W,
                                                      tC[(2 * mc + cta) * 128:
                                                         (2 * mc + cta) * 128 + 128,
                                                         (ng * G + j) * BN + c * W:
                                                         (ng * G + j) * BN + c * W + W],
                                                      C_smem[cta, c % 2, :, :])
                                            Arrive(tma_to_gmem_async) >> tcg[cta]
                                            Await(tcg[cta], cuda_in_order, 1)
                                        Fence(cuda_in_order, cuda_in_order)
                        for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                            with CudaWarps(name="consumer"):
                                with CudaWarps(0, 1):
                                    Await(tcg[cta], cuda_in_order, 0)
                        Fence(cuda_in_order, cuda_in_order)

    return gemm_coop_c2


def _pingpong(cfg: GemmConfig):
    """Ping-pong written directly: for the configurations the schedule does not reach (bf16
    C, split-K), and the independent text the scheduled ping-pong kernel is compared with
    (tests/schedule/test_gemm_library_example.py)."""
    T, TC, KB, W = _common(cfg)
    S, G, KS, R = cfg.stages, cfg.tiles, cfg.split_k, cfg.raster
    BN = 128                        # a 128 x 128 tile per warpgroup: two m64 blocks
    NB, CB, NCH = BN // 8, W // 8, BN // W
    KN = 32 // T.nbytes
    NK = KB // KN
    SPLIT = 1 if KS > 1 else 0
    tma_load = Sm90_tma_load(2, T)
    tma_store = Sm90_tma_reduce_add(2, TC) if SPLIT else Sm90_tma_store(2, TC)
    wgmma = Sm90_wgmma_ss(T, BN)
    wgmma_zero = Sm90_wgmma_zero(BN)
    store_acc = Sm90_store_acc(TC)
    memset = globals()[f"cudaMemsetAsync0_2d_{TC.name}"]

    @proc
    def gemm_pp(M: size, N: size, K: size, A: T[M, K] @ CudaGmemLinear,
                B: T[N, K] @ CudaGmemLinear, C: TC[M, N] @ CudaGmemLinear):
        assert M % 128 == 0
        assert N % (BN * G) == 0
        assert K % (KB * KS) == 0
        tA = A[:, :] @ Sm90_tensorMap(128, 128, KB)
        tB = B[:, :] @ Sm90_tensorMap(128, BN, KB)
        tC = C[:, :] @ Sm90_tensorMap(128, 128, W)
        if SPLIT == 1:
            memset(M, N, C[:, :])
        with CudaDeviceFunction(warp_config=[CudaWarpConfig("producer", 4, setmaxnreg_dec=40),
                                             CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)],
                                task_raster=R):
            for s in cuda_tasks(0, KS):
                for m in cuda_tasks(0, M / 128):
                    for ng in cuda_tasks(0, N / (BN * G)):
                        sA: T[S, 128, KB] @ Sm90_SmemSwizzled(128)
                        sB: T[S, BN, KB] @ Sm90_SmemSwizzled(128)
                        C_smem: TC[2, 2, 128, W] @ Sm90_SmemSwizzled(128)
                        carry: barrier[G @ ring_buffer_by(2), S] @ CudaMbarrier
                        tcg: barrier[2] @ Sm90_TmaCommitGroup
                        for j in seq(0, G):
                            D: f32[2, 4, 32, 2, NB, 2, 2] @ Sm90_RmemMatrixD
                            raw: barrier[K / (KB * KS) @ ring_buffer_by(S)] @ CudaMbarrier
                            war: barrier[K / (KB * KS) @ ring_buffer_by(S)] @ \
                                CudaMbarrierPreArrive(S)
                            cg: barrier[2] @ Sm90_WgmmaCommitGroup
                            with CudaWarps(name="consumer"):
                                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                    if wg == j % 2:
                                        for mb in seq(0, 2):
                                            wgmma_zero(D[wg, :, :, mb, :, :, :])
                            for k in seq(0, K / (KB * KS)):
                                with CudaWarps(0, 1, name="producer"):
                                    if j >= 1 and k < S:
                                        Await(carry[j - 1, k], cuda_temporal, 0)
                                    Await(war[k], cuda_temporal, 0)
                                    tma_load(128, KB, sA[k % S, :, :],
                                             tA[m * 128:m * 128 + 128,
                                                (k * KS + s) * KB:(k * KS + s) * KB + KB]
                                             ) >> raw[k]
                                    tma_load(BN, KB, sB[k % S, :, :],
                                             tB[(ng * G + j) * BN:(ng * G + j) * BN + BN,
                                                (k * KS + s) * KB:(k * KS + s) * KB + KB]
                                             ) >> raw[k]
                                    for t in cuda_threads(0, 1, unit=cuda_thread):
                                        Arrive(cuda_temporal) >> raw[k]
                                with CudaWarps(name="consumer"):
                                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                        if wg == j % 2:
                                            if j >= 1 and k == 0:
                                                # the other warpgroup's mainloop is done
                                                # (its raw phases complete: see the
                                                # scheduled kernel, pingpong_sync)
                                                Await(carry[j - 1, (K / (KB * KS) - 1) % S],
                                                      cuda_temporal, 0)
                                            Await(raw[k], cuda_generic_and_async_proxy, 0)
                                            Fence(wgmma_fence_1, wgmma_fence_2)
                                            for mb in seq(0, 2):
                                                for kk in seq(0, NK):
                                                    wgmma(D[wg, :, :, mb, :, :, :],
                                                          sA[k % S, mb * 64:mb * 64 + 64,
                                                             kk * KN:kk * KN + KN],
                                                          sB[k % S, :, kk * KN:kk * KN + KN])
                                            Arrive(wgmma_async) >> cg[wg]
                                            if k >= 1:
                                                Await(cg[wg], cuda_in_order, 1)
                                                Arrive(cuda_in_order) >> war[k + S - 1]
                                                if k - 1 >= K / (KB * KS) - S:
                                                    Arrive(cuda_in_order) >> \
                                                        carry[j, (k - 1) % S]
                            with CudaWarps(name="consumer"):
                                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                    if wg == j % 2:
                                        Await(cg[wg], cuda_in_order, 0)
                                        Arrive(cuda_in_order) >> war[K / (KB * KS) + S - 1]
                                        Arrive(cuda_in_order) >> \
                                            carry[j, (K / (KB * KS) - 1) % S]
                                        for c in seq(0, NCH):
                                            for mb in seq(0, 2):
                                                store_acc(C_smem[wg, c % 2, mb * 64:mb * 64 + 64,
                                                                 :],
                                                          D[wg, :, :, mb, c * CB:c * CB + CB, :,
                                                            :])
                                            Fence(cuda_in_order, cuda_generic_and_async_proxy)
                                            for w in cuda_threads(0, 1, unit=cuda_warp):
                                                tma_store(128, W,
                                                          tC[m * 128:m * 128 + 128,
                                                             (ng * G + j) * BN + c * W:
                                                             (ng * G + j) * BN + c * W + W],
                                                          C_smem[wg, c % 2, :, :])
                                                Arrive(tma_to_gmem_async) >> tcg[wg]
                                                Await(tcg[wg], cuda_in_order, 1)
                                            Fence(cuda_in_order, cuda_in_order)
                        with CudaWarps(name="consumer"):
                            for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                                for w in cuda_threads(0, 1, unit=cuda_warp):
                                    Await(tcg[wg], cuda_in_order, 0)
                        Fence(cuda_in_order, cuda_in_order)

    return gemm_pp


VARIANT_CONFIGS = [
    GemmConfig("bf16", "f32", 256, 4, "cooperative", 2),
    GemmConfig("bf16", "bf16", 256, 4, "cooperative", 2),
    GemmConfig("bf16", "f32", 128, 5, "cooperative", 1),
    GemmConfig("tf32", "f32", 256, 3, "cooperative", 2),
    GemmConfig("tf32", "f32", 128, 4, "cooperative", 2),
    GemmConfig("bf16", "f32", 128, 5, "cooperative", 1, split_k=4),
    GemmConfig("bf16", "f32", 128, 5, "cooperative", 1, split_k=8),
    GemmConfig("bf16", "f32", 128, 4, "pingpong", 4),
    # 2x1 cluster, B multicast: each CTA's producer warp issues half of B to both CTAs, each
    # ordered by its own CTA's ``war`` Await (the proof takes the two Await instances
    # together: holder unions, docs/semantics.md)
    GemmConfig("bf16", "f32", 256, 4, "cooperative", 2, cluster=2),
    # B as K x N (row-major, as torch.matmul(A, B) takes it): N-major B tiles for wgmma's
    # transposed B operand, one TMA box per 64 columns
    GemmConfig("bf16", "f32", 256, 4, "cooperative", 2, b_major="N"),
]
VARIANTS = {c.name: gemm(c) for c in VARIANT_CONFIGS}

#: variants generated and checked but not shipped as proven (none today; bench/gpu_plan.py
#: builds them unchecked). Not module-level names, so ``specs/`` stays all-proven.
UNPROVEN_CONFIGS: list = []
UNPROVEN = {c.name: gemm(c) for c in UNPROVEN_CONFIGS}
globals().update(VARIANTS)
VERIFY_SIZES = {"M": 256, "N": 512, "K": 512}  # M: the 2x1-cluster variant's M % 256
#: seconds per stage (exogpu-verify, verify()): the GEMM proofs take seconds of CPU, but
#: cvc5's time on an obligation is heavy-tailed in its seed (docs/certificates.md) and this
#: machine may be loaded, so the default 60 s would make a verdict depend on the load
VERIFY_TIMEOUT = 600
