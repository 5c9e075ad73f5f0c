"""The GEMM library's schedule: the naive matmul ``C = A @ B.T`` (f32 accumulation) rewritten
by checked, public scheduling primitives into the kernels of ``specs/gemm.py``.

``schedule_library(Config(...))`` returns the steps ``[(description, proc), ...]`` from the
naive spec (``naive_spec``) to the kernel: ``G`` output tiles per task sharing one
``S``-stage shared-memory ring (``carry`` barriers hand a stage from tile ``j`` to ``j + 1``,
so the producer loads the next tile while the consumers finish one), a rasterized task
order, wgmma consumers, and an epilogue pipelined over column chunks of one swizzle row
(``store_acc`` into one of two ``C_smem`` buffers, a consumer named barrier with
``fence.proxy.async``, one consumer warp TMA-storing the chunk, one store in flight). With
``split_k = KS > 1``, C's zero-fill becomes the host's ``cudaMemsetAsync0_2d_f32``, the K
steps are divided ``kq = KS kt + s`` with the slice loop at the task level, and each slice's
partial tile is added to C by a TMA reduce-add (two reassociations, recorded unsafe).
``Config(consumers="pingpong")`` gives tile ``j`` to consumer warpgroup ``j % 2``
(``add_loop(..., guard="j % 2")``); ``Config(cluster=2)`` schedules the 2x1-cluster
B-multicast kernel (``gemm_cluster``); shared pieces are in ``gemm_parts``. ``specs/gemm.py``
builds every shipped variant with it; ``examples/scheduling/gemm_library_schedule.py`` walks
through it. Every rewrite is checked when applied, and the kernel's provenance records each
one (``docs/scheduling.md``).
(``naive_spec``'s ``gemm`` is at line 67, where the certificates say each chain starts.)
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from ..facade import proc
from ..frontend.namespace import *  # noqa: F401,F403  (the language's names)
from ..platforms.cuda import *  # noqa: F401,F403
from ..platforms.sm90 import *  # noqa: F401,F403
from ..schedule import *  # noqa: F401,F403

class Shape(NamedTuple):
    """A kernel of the family: input type ``"bf16"`` or ``"tf32"`` (f32 data on tf32 tensor
    cores), CTA tile ``128 x tile_n``, ``stages`` SMEM slots in the ring."""

    dtype: str = "bf16"
    tile_n: int = 256
    stages: int = 4

    @property
    def T(self):
        return bf16 if self.dtype == "bf16" else f32

    @property
    def kb(self) -> int:  # K step: one 128-byte swizzle row of A and B
        return 128 // self.T.nbytes

    @property
    def name(self) -> str:
        return f"gemm_{self.dtype}_128x{self.tile_n}_s{self.stages}"


from .gemm_parts import (WARPS, chunk_epilogue, consumer_sync, epilogue_sync,  # noqa: E402
                         fragment_layout, fragment_loops, span)  # (gemm_cluster shares them)


def naive_spec(shape: Shape, tiles=1, out="f32", split_k=1, cluster=1):
    """The naive spec ``C = A @ B.T`` (f32 accumulation) for ``shape``, with size rules for
    ``tiles`` output tiles per task, ``split_k`` K slices of whole K steps and ``cluster``
    CTAs of 128 rows. With a bf16 ``C`` the f32 accumulator is a scalar of the spec, rounded
    once when stored (accumulating in ``C`` would round at every step)."""
    T, NM, KB, RM = shape.T, shape.tile_n * tiles, shape.kb * split_k, 128 * cluster
    if out == "f32":
        @proc
        def gemm(M: size, N: size, K: size, A: T[M, K], B: T[N, K], C: f32[M, N]):
            assert M % RM == 0
            assert N % NM == 0
            assert K % KB == 0
            for i in seq(0, M):
                for j in seq(0, N):
                    C[i, j] = 0.0
                    for k in seq(0, K):
                        C[i, j] += A[i, k] * B[j, k]
        return gemm

    @proc
    def gemm_bf16(M: size, N: size, K: size, A: T[M, K], B: T[N, K], C: bf16[M, N]):
        assert M % 128 == 0
        assert N % NM == 0
        assert K % KB == 0
        for i in seq(0, M):
            for j in seq(0, N):
                D: f32
                D = 0.0
                for k in seq(0, K):
                    D += A[i, k] * B[j, k]
                C[i, j] = D
    return gemm_bf16


def naive_spec_kn(shape: Shape, tiles=1):
    """The naive spec ``C = A @ B`` with B stored K x N (row-major, as ``torch.matmul(A,
    B)`` takes it; f32 accumulation and C): ``C[i, j] += A[i, k] * B[k, j]``."""
    T, NM, KB = shape.T, shape.tile_n * tiles, shape.kb

    @proc
    def gemm_kn(M: size, N: size, K: size, A: T[M, K], B: T[K, N], C: f32[M, N]):
        assert M % 128 == 0
        assert N % NM == 0
        assert K % KB == 0
        for i in seq(0, M):
            for j in seq(0, N):
                C[i, j] = 0.0
                for k in seq(0, K):
                    C[i, j] += A[i, k] * B[k, j]
    return gemm_kn


class Config(NamedTuple):
    """A variant: ``shape`` (input type, 128 x BN tile, stages), ``tiles`` per task, C's type
    ``out``, task-order panel height ``raster``, ``consumers``: "cooperative" (both consumer
    warpgroups on one tile, 64 rows each) or "pingpong" (tile ``j`` is warpgroup ``j % 2``'s,
    all 128 rows: f32 C, no split-K, an even number of tiles per task), ``cluster``: CTAs per
    cluster, 1 or 2 (B multicast; cooperative, f32 C, no split-K: ``gemm_cluster``),
    ``b_major``: "K" (B is N x K, ``C = A @ B.T``) or "N" (B is K x N, ``C = A @ B``: its
    tiles are staged N-major for wgmma's transposed B operand; bf16, cooperative, f32 C)."""

    shape: Shape = Shape("bf16", 256, 4)
    tiles: int = 2
    out: str = "f32"
    raster: int = 8
    #: K slices (split-K): tasks also range over ``split_k`` slices of interleaved K steps,
    #: each adding its partial tile into C (zeroed by the host) with a TMA reduce-add
    split_k: int = 1
    consumers: str = "cooperative"
    cluster: int = 1
    b_major: str = "K"

    @property
    def name(self) -> str:
        s = self.shape
        split = f"_splitk{self.split_k}" if self.split_k > 1 else ""
        sch = "pp" if self.consumers == "pingpong" else "coop"
        cl = f"_c{self.cluster}x1" if self.cluster > 1 else ""
        kn = "_kn" if self.b_major == "N" else ""
        return (f"gemm_{s.dtype}_{self.out}_128x{s.tile_n}_s{s.stages}_{sch}_g{self.tiles}"
                f"{cl}{kn}{split}")

    def check(self) -> None:
        """Refuse what the schedule does not build, saying why."""
        if self.consumers not in ("cooperative", "pingpong"):
            raise ValueError(f"consumers cooperative|pingpong, not {self.consumers!r}")
        if self.consumers == "pingpong" and (self.out != "f32" or self.split_k != 1 or
                                             self.tiles % 2):
            raise ValueError("the ping-pong schedule builds f32-output kernels without "
                             "split-K, with an even number of tiles per task (each "
                             "warpgroup takes every other tile)")
        if self.cluster not in (1, 2):
            raise ValueError(f"clusters of 1 or 2 CTAs, not {self.cluster}")
        if self.cluster > 1 and (self.consumers != "cooperative" or self.out != "f32" or
                                 self.split_k != 1):
            raise ValueError("the 2x1-cluster schedule builds cooperative f32-output kernels "
                             "without split-K")
        if self.b_major not in ("K", "N"):
            raise ValueError(f"b_major K (B is N x K) or N (B is K x N), not {self.b_major!r}")
        if self.b_major == "N" and (self.shape.dtype != "bf16" or self.out != "f32" or
                                    self.consumers != "cooperative" or self.cluster != 1 or
                                    self.split_k != 1):
            raise ValueError("B as K x N: the schedule builds bf16 (wgmma reads a transposed "
                             "B operand in 16-bit types only), cooperative, 1x1-cluster "
                             "kernels with f32 C and no split-K")


DEFAULT = Config()
#: the cooperative variants shipped in specs/gemm.py (GemmConfig(dtype, out, tile_n, stages,
#: "cooperative", tiles))
LIBRARY = (DEFAULT, Config(Shape("bf16", 256, 4), 2, "bf16"), Config(Shape("bf16", 128, 5), 1),
           Config(Shape("tf32", 256, 3), 2), Config(Shape("tf32", 128, 4), 2))
#: the split-K variants shipped in specs/gemm.py (GemmConfig(..., "cooperative", 1, split_k=KS)):
#: their derivations hold two reassociations (recorded unsafe, see ``schedule_library``)
SPLIT = (Config(Shape("bf16", 128, 5), 1, split_k=4), Config(Shape("bf16", 128, 5), 1, split_k=8))
#: the ping-pong variant shipped in specs/gemm.py (GemmConfig(..., "pingpong", 4))
PINGPONG = (Config(Shape("bf16", 128, 4), 4, consumers="pingpong"),)
#: the 2x1-cluster B-multicast variant shipped in specs/gemm.py (GemmConfig(..., cluster=2))
CLUSTER = (Config(Shape("bf16", 256, 4), 2, cluster=2),)


def spec(cfg: Config):
    """The naive spec of ``cfg``: ``naive_spec`` with the size rules of its tiles and slices."""
    if cfg.b_major == "N":
        return naive_spec_kn(cfg.shape, cfg.tiles)
    return naive_spec(cfg.shape, cfg.tiles, cfg.out, cfg.split_k, cfg.cluster)


def schedule_library(cfg: Config = DEFAULT, show=None, name: str | None = None):
    """Return ``[(step description, proc), ...]`` from the spec of ``cfg`` to its kernel,
    named ``name`` (default ``cfg.name``, the library's name of the variant). ``show(desc,
    proc)`` is called on each step in order. The steps of one ``cfg`` are built once per
    process (procedures are immutable values), so ``EXOGPU_LOG=schedule`` shows them the
    first time only."""
    cfg.check()
    steps = _steps(cfg)
    for desc, p in steps if show else ():
        show(desc, p)
    final = rename(steps[-1][1], name or cfg.name)
    return list(steps[:-1]) + [(steps[-1][0], final)]


@functools.lru_cache(maxsize=32)
def _steps(cfg: Config) -> tuple:
    """The steps of ``schedule_library`` before the final ``rename``."""
    shape = cfg.shape
    T, TN, TK, S, G = shape.T, shape.tile_n, shape.kb, shape.stages, cfg.tiles
    KS = cfg.split_k
    PP = cfg.consumers == "pingpong"  # the tile's own warpgroup, wg = j % 2
    TC = f32 if cfg.out == "f32" else bf16
    KN = 32 // T.nbytes     # k of one wgmma
    W = 128 // TC.nbytes    # epilogue chunk: one 128-byte swizzle row of C
    steps = []

    def step(desc, p):
        steps.append((desc, p))
        return p

    p = step("the sequential specification", spec(cfg))
    if cfg.cluster > 1:  # (imported here: gemm_cluster uses this module's helpers)
        from .gemm_cluster import cluster_steps
        cluster_steps(cfg, step, p)
        return tuple(steps)
    if KS > 1:  # split-K: the slices add into C, so C's zero-fill is a separate (host) step
        p = fission(p, "after: C[_] = 0.0", n_lifts=2)
        p = set_memory(p, "C", CudaGmemLinear)
        p = step("C zeroed by the host (cudaMemsetAsync) before the accumulation",
                 replace(p, "for i in _: _", cudaMemsetAsync0_2d_f32))

    # --- tiles: G tiles of 128 x BN per task, K steps outside the tile
    p = divide_loop(p, "i", 128, ["m", "ii"], perfect=True)
    p = divide_loop(p, "j", TN * G, ["ng", "jr"], perfect=True)
    p = divide_loop(p, "jr", TN, ["j", "ji"], perfect=True)
    p = reorder_loops(p, "ii ng")
    p = reorder_loops(p, "ii j")
    if KS > 1:
        pass
    elif cfg.out == "f32":
        p = fission(p, "after: C[_] = 0.0", n_lifts=2)
    else:  # the spec's f32 accumulator becomes the tile's accumulator
        p = expand_dim(p, "D : _", TN, "ji")
        p = expand_dim(p, "D : _", 128, "ii")
        p = lift_alloc(p, "D : _", n_lifts=2)
        p = fission(p, "after: D[_] = 0.0", n_lifts=2)
        p = fission(p, "before: C[_] = D[_]", n_lifts=2)
    kt = "kt" if KS == 1 else "kq"
    p = divide_loop(p, "k", TK, [kt, "ki"], perfect=True)
    p = reorder_loops(p, p.find_loop(kt).parent())
    p = step(f"tasks of {G} tiles of 128 x {TN}; K steps of {TK} outside each tile",
             reorder_loops(p, p.find_loop(kt).parent()))
    if KS > 1:  # K step kq = KS kt + s; the slice loop s moves out to the task level
        p = divide_loop(p, "kq", KS, ["kt", "s"], perfect=True)
        p = reorder_loops(p, "kt s")  # reassociation (recorded unsafe): slice-interleaved
        for outer in ("j", "ng", "m"):
            p = reorder_loops(p, f"{outer} s")
        p = step(f"{KS} K slices of interleaved K steps (kq = {KS} kt + s), the slice loop "
                 "outermost (reordering the reduction: a reassociation)", p)

    # --- the kernel (a task loop over K slices too: one slice, as the library's non-split
    # variants), on device tensors, with a rasterized task order
    for t in ("A", "B", "C") if KS == 1 else ("A", "B"):
        p = set_memory(p, t, CudaGmemLinear)
    if KS == 1:
        p = add_loop(p, "for m in _: _", "s", 1)
    p = wrap_with_context(p, "for s in _: _", CudaDeviceFunction(
        warp_config=WARPS, task_raster=cfg.raster), tasks=3,
        mem={"D": Sm90_RmemMatrixD} if cfg.out != "f32" else None)
    ctile = (f"128 * m:128 * m + 128, {TN * G} * ng + {TN} * j:{TN * G} * ng + {TN} * j + "
             f"{TN}")
    if KS > 1:  # the slice's partial tile: summed apart (accum), added to C through tC
        p = insert_window(p, "before: with CudaDeviceFunction(_): _", "tC", "C[:, :]",
                          Sm90_tensorMap(128, 128, W))
        p = stage_mem(p, p.find_loop("kt"), f"tC[{ctile}]", "C_smem", accum=True,
                      mem=Sm90_SmemSwizzled(128))
        p = stage_mem(p, p.find_loop("kt").expand(1, 0), f"C_smem[0:128, 0:{TN}]", "D",
                      mem=Sm90_RmemMatrixD)
    elif cfg.out == "f32":
        tile = p.find_loop("ii")
        p = stage_mem(p, tile.expand(0, 1), f"C[128 * m:128 * m + 128, {TN * G} * ng + "
                      f"{TN} * j:{TN * G} * ng + {TN} * j + {TN}]", "D", mem=Sm90_RmemMatrixD)
    p = step("a kernel (task_raster: panels of tile rows); the tile accumulates in registers"
             + ("; each slice's partial tile is summed apart and added to C through a tensor "
                "map and C_smem (accum: a reassociation)" if KS > 1 else ""), simplify(p))
    p = step("the accumulator in the wgmma fragment layout", fragment_layout(p, "D : _"))
    if PP:  # [mb, warp, lane, nb, h, j] -> [wg, warp, lane, mb, nb, h, j], wg = j % 2
        p = rearrange_dim(p, "D : _", [1, 2, 0, 3, 4, 5])
        p = step("ping-pong: one accumulator per consumer warpgroup, tile j in warpgroup "
                 "j % 2's (its two m64 blocks mb)", expand_dim(p, "D : _", 2, "j % 2"))

    # --- tensor maps; A and B tiles staged through them; consumers and the zero-fill
    kernel = "before: with CudaDeviceFunction(_): _"
    p = insert_window(p, kernel, "tA", "A[:, :]", Sm90_tensorMap(128, 128, TK))
    KNB = cfg.b_major == "N"  # B is K x N: N-major tiles of 64 columns (one swizzle row)
    p = insert_window(p, kernel, "tB", "B[:, :]", Sm90_tensorMap(128, TK, 64) if KNB else
                      Sm90_tensorMap(128, TN, TK))
    if KS == 1:
        p = insert_window(p, kernel, "tC", "C[:, :]", Sm90_tensorMap(128, 128, W))
    k0 = f"{TK} * kt" if KS == 1 else f"{TK * KS} * kt + {TK} * s"  # the K step's first k
    p = stage_mem(p, p.find_loop("kt").body(),
                  f"tA[128 * m:128 * m + 128, {k0}:{k0} + {TK}]", "sA",
                  mem=Sm90_SmemSwizzled(128))
    bcols = f"{TN * G} * ng + {TN} * j:{TN * G} * ng + {TN} * j + {TN}"
    p = stage_mem(p, p.find_loop("kt").body()[-1], f"tB[{k0}:{k0} + {TK}, {bcols}]" if KNB
                  else f"tB[{bcols}, {k0}:{k0} + {TK}]", "sB", mem=Sm90_SmemSwizzled(128))
    if KNB:  # sB[k, n] -> sB[n / 64, k, n % 64]: wgmma's N-major B, one TMA box per 64 columns
        p = divide_dim(p, "sB : _", 1, 64)
        p = simplify(rearrange_dim(p, "sB : _", [1, 0, 2]))
        p = divide_loop(p, p.find("sB[_] = tB[_]").parent(), 64, ["nb", "nr"], perfect=True)
        p = reorder_loops(p, p.find_loop("nb").parent())
    p = simplify(p)
    p = divide_loop(p, p.find_loop("kt").body()[-1], 64, ["mb" if PP else "wg", "mi"],
                    perfect=True)
    p = divide_loop(p, p.find_loop("ki"), KN, ["kk", "k"], perfect=True)
    p = reorder_loops(p, p.find_loop("kk").parent())
    p = simplify(reorder_loops(p, p.find_loop("kk").parent()))
    p = replace(p, p.find_loop("mi"), Sm90_wgmma_ss(T, TN, major_b="MN" if KNB else "K"))
    if PP:  # the m64 blocks run on warpgroup j % 2: D[j % 2] is D[wg] there
        p = _own_warpgroup(p, p.find_loop("mb"), "wg",
                           [(f"{Sm90_wgmma_ss(T, TN).name}(_)", 0)])
    p = set_loop_mode(p, "wg", CudaThreads(unit=cuda_warpgroup))
    p = wrap_with_context(p, p.find_loop("wg"), CudaWarps(name="consumer"))
    zero = p.find("D[_] = 0.0")
    p = fragment_loops(p, zero.parent().parent(), zero.parent(),
                       ["mz" if PP else "wz", "wz_w", "wz_l", "wz_nb", "wz_h", "wz_j"])
    p = replace(p, p.find_loop("wz_w"), Sm90_wgmma_zero(TN))
    if PP:
        p = _own_warpgroup(p, p.find_loop("mz"), "wz",
                           [(f"{Sm90_wgmma_zero(TN).name}(_)", 0)])
    p = set_loop_mode(p, "wz", CudaThreads(unit=cuda_warpgroup))
    p = step(f"tensor maps; consumers: {TK // KN} wgmma m64n{TN}k{KN} per warpgroup and K "
             "step, a wgmma_zero per tile",
             wrap_with_context(p, p.find_loop("wz"), CudaWarps(name="consumer")))

    # --- the producer: a ring of S slots shared by the tiles of a task
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "raw", [f"K / {TK * KS}"],
                             CudaMbarrier, ring_dim_idx=0, ring_depth=S)
    tma = Sm90_tma_load(2, T)
    for buf, tm in (("sA", "tA"), ("sB", "tB")):
        p = expand_dim(p, f"{buf} : _", S, f"kt % {S}")
        p = lift_alloc(p, f"{buf} : _", n_lifts=2)
        copy = p.find(f"{buf}[_] = {tm}[_]").parent().parent()
        p = replace(p, copy, tma, barrier="raw[kt]")
    p = step(f"producer: TMA loads into ring slot kt % {S}; the ring belongs to the task "
             "(its tiles share it)", wrap_with_context(p, p.find(f"{tma.name}(_)").expand(
                 0, 1), CudaWarps(0, 1, name="producer")))

    # --- the epilogue: column chunks of W, double-buffered C_smem, consumer TMA stores
    if KS == 1:  # (split-K staged C_smem with the partial tile)
        store = p.find("C[_] = D[_]").parent().parent()
        p = stage_mem(p, store, f"tC[{ctile}]", "C_smem", mem=Sm90_SmemSwizzled(128))
    tma_out = Sm90_tma_reduce_add(2, TC) if KS > 1 else Sm90_tma_store(2, TC)
    p = chunk_epilogue(p, TC, tma_out, "me" if PP else "we")
    if PP:  # each warpgroup its own pair of chunk buffers, its own TMA-storing warp
        p = expand_dim(p, "C_smem : _", 2, "j % 2")
        p = lift_alloc(simplify(p), "C_smem : _")
        sa, ts = f"{Sm90_store_acc(TC).name}(_)", f"{tma_out.name}(_)"
        p = _own_warpgroup(p, p.find_loop("c"), "we", [(sa, 0), (sa, 1), (ts, -1)])
        p = set_loop_mode(p, "we", CudaThreads(unit=cuda_warpgroup))
        p = wrap_with_context(p, p.find_loop("we"), CudaWarps(name="consumer"))
        p = add_loop(p, p.find(ts), "w", 1)
        p = step(f"epilogue: per chunk of {W} columns, the tile's warpgroup stores its "
                 "accumulator into one of its two C_smem buffers (resize_dim(fold=True)), "
                 "then one of its warps TMA-stores it",
                 set_loop_mode(p, "w", CudaThreads(unit=cuda_warp)))
        pingpong_sync(p, step, cfg, tma_out)
        return tuple(steps)
    p = lift_alloc(simplify(p), "C_smem : _")
    p = set_loop_mode(p, "we", CudaThreads(unit=cuda_warpgroup))
    p = step(f"epilogue: per chunk of {W} columns, store_acc into one of two C_smem buffers "
             "(resize_dim(fold=True)), then one TMA " + ("reduce-add" if KS > 1 else "store"),
             wrap_with_context(p, p.find(f"{tma_out.name}(_)"), CudaWarps(0, 1)))
    library_sync(p, step, cfg, tma_out)
    return tuple(steps)


def _own_warpgroup(p, block, wg: str, args):
    """Ping-pong: run ``block`` (of tile ``j``) on warpgroup ``j % 2`` only (``add_loop``
    with the guard ``wg == j % 2``; the block still runs once), and index the buffers it
    gives the warpgroup's instructions by ``wg`` instead of ``j % 2`` (equal under the
    guard, ``rewrite_expr``): ``args`` are (call pattern, argument position) pairs whose
    first index is ``j % 2``."""
    p = add_loop(p, block, wg, 2, guard="j % 2")
    for pattern, k in args:
        p = rewrite_expr(p, p.find(pattern).args()[k].idx()[0], wg)
    return p


def _producer_sync(p, cfg: Config):
    """The producer's part of the ring protocol (both consumer schedules): the previous
    tile's stage (carry), a free slot (war), one arrive on raw[kt]."""
    S = cfg.shape.stages
    prod = p.find(f"{Sm90_tma_load(2, cfg.shape.T).name}(_)").parent()
    p = insert_await(p, prod.body()[0].before(), "war[kt]", cuda_temporal, 0)
    p = insert_await(p, p.forward(prod).body()[0].before(), "carry[j - 1, kt]",
                     cuda_temporal, 0)
    p = add_if(p, p.forward(prod).body()[0], f"j >= 1 and kt < {S}")
    p = insert_arrive(p, p.forward(prod).body()[-1].after(), cuda_temporal, "raw[kt]")
    p = add_loop(p, p.forward(prod).body()[-1], "t", 1)
    return set_loop_mode(p, "t", CudaThreads(unit=cuda_thread))


def pingpong_sync(p, step, cfg: Config, tma_out):
    """The ring protocol with ping-pong consumers: the tile's warpgroup (``wg == j % 2``)
    waits for each stage, releases it (war) and hands the tile's last stages to the next
    tile (carry) alone; its epilogue uses its own commit group ``tcg[wg]`` and named
    barriers (warpgroup Fences), so it overlaps the other warpgroup's mainloop."""
    TK, S, G = cfg.shape.kb, cfg.shape.stages, cfg.tiles
    p = insert_barrier_alloc(p, p.find_loop("j").before(), "carry", [G, S], CudaMbarrier,
                             ring_dim_idx=0, ring_depth=2)
    p = insert_barrier_alloc(p, p.find_loop("j").before(), "tcg", [2], Sm90_TmaCommitGroup)
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "war", [f"K / {TK}"],
                             CudaMbarrierPreArrive(S), ring_dim_idx=0, ring_depth=S)
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "cg", [2], Sm90_WgmmaCommitGroup)
    p = step("producer synchronization: the previous tile's stage (carry), a free slot "
             "(war), one arrive on raw[kt]", _producer_sync(p, cfg))
    mb = p.find_loop("mb")
    p = insert_await(p, mb.before(), "raw[kt]", cuda_generic_and_async_proxy, 0)
    # the tile's first stages reuse the raw mbarriers of the previous tile's last stages,
    # which the other warpgroup consumes: a parity wait on raw[kt] must not start before
    # that phase completed (else it passes on the phase before). So the warpgroup starts
    # its tile once the other one's mainloop is done (its last carry release, after its
    # wgmmas completed): the ping-pong order of the two warpgroups' mainloops
    p = insert_await(p, p.forward(mb).prev().before(), f"carry[j - 1, (K / {TK} - 1) % {S}]",
                     cuda_temporal, 0)
    p = add_if(p, p.forward(mb).prev().prev(), "j >= 1 and kt == 0")
    p = insert_fence(p, p.forward(mb).before(), wgmma_fence_1, wgmma_fence_2)
    p = insert_arrive(p, p.forward(mb).after(), wgmma_async, "cg[wg]")
    commit = p.forward(mb).next()
    p = insert_await(p, commit.after(), "cg[wg]", cuda_in_order, 1)
    wait1 = p.forward(commit).next()
    p = insert_arrive(p, wait1.after(), cuda_in_order, f"war[kt + {S - 1}]")
    rel = p.forward(wait1).next()
    p = insert_arrive(p, rel.after(), cuda_in_order, f"carry[j, (kt - 1) % {S}]")
    p = add_if(p, p.forward(rel).next(), f"kt - 1 >= K / {TK} - {S}")
    p = step("consumer synchronization (the tile's warpgroup): start after the other "
             "warpgroup's mainloop (its last carry release), wait for raw[kt], "
             "wgmma.fence, commit, one group in flight; release the previous stage (war) and, "
             "for the tile's last stages, hand them to the next tile (carry)",
             add_if(p, span(p.forward(wait1), p.forward(rel).next()), "kt >= 1"))
    c = p.find_loop("c")
    p = insert_await(p, c.before(), "cg[we]", cuda_in_order, 0)
    p = insert_arrive(p, p.forward(c).before(), cuda_in_order, f"war[K / {TK} + {S - 1}]")
    p = insert_arrive(p, p.forward(c).before(), cuda_in_order,
                      f"carry[j, (K / {TK} - 1) % {S}]")
    p = insert_fence(p, p.find_loop("me").after(), cuda_in_order,
                     cuda_generic_and_async_proxy)
    st = p.find(f"{tma_out.name}(_)")
    p = insert_arrive(p, st.after(), tma_to_gmem_async, "tcg[we]")
    p = insert_await(p, p.forward(st).next().after(), "tcg[we]", cuda_in_order, 1)
    c = p.find_loop("c")
    p = insert_fence(p, c.body()[-1].after(), cuda_in_order, cuda_in_order)
    jl = p.find_loop("j")
    p = insert_pass(p, jl.after())
    p = add_loop(p, p.forward(jl).next(), "wf", 2)
    p = insert_await(p, p.find_loop("wf").body()[0].before(), "tcg[wf]", cuda_in_order, 0)
    p = add_loop(delete_pass(p), p.find_loop("wf").body()[0], "wt", 1)
    p = set_loop_mode(p, "wt", CudaThreads(unit=cuda_warp))
    p = set_loop_mode(p, "wf", CudaThreads(unit=cuda_warpgroup))
    jl = p.find_loop("j")
    p = wrap_with_context(p, p.forward(jl).next(), CudaWarps(name="consumer"))
    return step("epilogue synchronization: the warpgroup's named barriers around each chunk "
                "(with fence.proxy.async before its warp's TMA store reads it), one bulk "
                "store in flight per warpgroup, all stores read before the task ends",
                insert_fence(p, p.forward(jl).next().after(), cuda_in_order, cuda_in_order))


def library_sync(p, step, cfg: Config, tma_out):
    """The ring protocol of specs/gemm.py, inserted as annotations; ``tma_out`` is the
    epilogue's TMA store (or reduce-add)."""
    TK, S, G = cfg.shape.kb * cfg.split_k, cfg.shape.stages, cfg.tiles  # TK: K per kt
    p = insert_barrier_alloc(p, p.find_loop("j").before(), "carry", [G, S], CudaMbarrier,
                             ring_dim_idx=0, ring_depth=2)
    p = insert_barrier_alloc(p, p.find_loop("j").before(), "tcg", [], Sm90_TmaCommitGroup)
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "war", [f"K / {TK}"],
                             CudaMbarrierPreArrive(S), ring_dim_idx=0, ring_depth=S)
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "cg", [2], Sm90_WgmmaCommitGroup)
    p = step("producer synchronization: the previous tile's stage (carry), a free slot "
             "(war), one arrive on raw[kt]", _producer_sync(p, cfg))
    p = step("consumer synchronization: wait for raw[kt], wgmma.fence, commit, one group in "
             "flight; release the previous stage (war) and, for the tile's last stages, hand "
             "them to the next tile (carry)", consumer_sync(p, cfg))
    # after the K loop: wait for all wgmmas, release the last stage, then the chunks
    kt = p.find_loop("kt")
    p = insert_pass(p, kt.after())
    p = add_loop(p, p.forward(kt).next(), "wf", 2)
    p = insert_await(p, p.find_loop("wf").body()[0].before(), "cg[wf]", cuda_in_order, 0)
    p = epilogue_sync(set_loop_mode(delete_pass(p), "wf", CudaThreads(unit=cuda_warpgroup)),
                      cfg, tma_out.name)
    jl = p.find_loop("j")
    p = insert_await(p, jl.after(), "tcg", cuda_in_order, 0)
    p = wrap_with_context(p, p.forward(jl).next(), CudaWarps(0, 1))
    p = wrap_with_context(p, p.forward(jl).next(), CudaWarps(name="consumer"))
    return step("epilogue synchronization: named consumer barriers around the chunk (with "
                "fence.proxy.async before the TMA store reads it), one bulk store in flight, "
                "all stores read before the task ends",
                insert_fence(p, p.forward(jl).next().after(), cuda_in_order, cuda_in_order))
