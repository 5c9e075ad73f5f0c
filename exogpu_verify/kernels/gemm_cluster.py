"""The GEMM library's schedule on a cluster of two CTAs with B multicast: the naive matmul
rewritten by checked, public primitives into ``specs/gemm.py``'s 2x1-cluster kernel.

A cluster task is a tile row pair ``mc`` (256 rows): CTA ``cta`` of the cluster computes rows
``256 mc + 128 cta ..``, so the row loop is divided ``i = 256 mc + 128 cta + ii`` and the
``cta`` loop kept inside each of the tile's phases (zero-fill, K step, epilogue; ``fission``
splits it, and it becomes a ``cuda_cta_in_cluster`` loop). Both CTAs need the same B tile:
staged inside the ``cta`` loop, each CTA's copy of it is ``sB[cta, ...] = tB[...]`` (the
same window for every ``cta``), which is exactly the sequential meaning of
``tma_multicast_2d_T_x2`` (``for c: dst[c, ...] = src[...]``), so ``replace`` introduces the
multicast (``>> raw[:, kt]``: it completes on both CTAs' barriers). A's staging loop over
``cta`` becomes a ``cuda_warp_in_cluster`` loop of plain TMA loads (each CTA's producer warp
its own rows). The ring protocol is the cooperative one with a CTA dimension on every
barrier: a stage is written by both CTAs' multicasts, so the consumers release it (``war``)
and hand it to the next tile (``carry``) in both CTAs (``Arrive >> war[:, i]``); the task
ends with a cluster-wide Fence, since a peer may multicast into this CTA's shared memory
until then.
"""

from __future__ import annotations

from ..frontend.namespace import *  # noqa: F401,F403  (the language's names)
from ..platforms.sm90 import *  # noqa: F401,F403
from ..schedule import *  # noqa: F401,F403
from .gemm_parts import (WARPS, chunk_epilogue, consumer_sync, epilogue_sync,
                         fragment_layout, fragment_loops, span)


def cluster_steps(cfg, step, p):
    """Append to ``step`` the rewrites from the naive spec ``p`` (M % 256) to the 2x1-cluster
    kernel of ``cfg`` (cooperative consumers, f32 C, no split-K); returns the last proc."""
    shape, CL = cfg.shape, cfg.cluster
    T, TN, TK, S, G = shape.T, shape.tile_n, shape.kb, shape.stages, cfg.tiles
    KN, W, RM = 32 // T.nbytes, 32, 128 * CL   # k of one wgmma; f32 chunk; cluster rows
    rows = f"{RM} * mc + 128 * cta:{RM} * mc + 128 * cta + 128"
    cols = f"{TN * G} * ng + {TN} * j:{TN * G} * ng + {TN} * j + {TN}"

    # --- tiles: a cluster task is RM rows (128 per CTA) x G tiles of BN
    p = divide_loop(p, "i", RM, ["mc", "ir"], perfect=True)
    p = divide_loop(p, "ir", 128, ["cta", "ii"], perfect=True)
    p = divide_loop(p, "j", TN * G, ["ng", "jr"], perfect=True)
    p = divide_loop(p, "jr", TN, ["j", "ji"], perfect=True)
    for a, b in (("ii", "ng"), ("cta", "ng"), ("ii", "j"), ("cta", "j")):
        p = reorder_loops(p, f"{a} {b}")
    p = fission(p, "after: C[_] = 0.0", n_lifts=2)
    p = divide_loop(p, "k", TK, ["kt", "ki"], perfect=True)
    p = reorder_loops(p, p.find_loop("kt").parent())
    p = step(f"cluster tasks of {CL} x 128 rows (CTA cta of the cluster: rows 128 cta ..) and "
             f"{G} tiles of {TN} columns; K steps of {TK} outside each CTA's tile",
             reorder_loops(p, p.find_loop("kt").parent()))

    # --- the kernel on a cluster; each CTA's tile accumulates in its registers
    for t in ("A", "B", "C"):
        p = set_memory(p, t, CudaGmemLinear)
    p = add_loop(p, "for mc in _: _", "s", 1)
    p = wrap_with_context(p, "for s in _: _", CudaDeviceFunction(
        clusterDim=CL, warp_config=WARPS, task_raster=cfg.raster), tasks=3)
    p = stage_mem(p, p.find_loop("ii").expand(0, 1), f"C[{rows}, {cols}]", "D",
                  mem=Sm90_RmemMatrixD)
    p = fragment_layout(simplify(p), "D : _")
    p = expand_dim(p, "D : _", CL, "cta")
    p = step(f"a kernel on clusters of {CL} CTAs; each CTA's tile accumulates in registers, "
             "in the wgmma fragment layout (D[cta, ...])", lift_alloc(p, "D : _"))

    # --- the CTA loop split into the tile's phases; A and B tiles staged per CTA
    p = fission(p, p.find_loop("ii").after())
    p = fission(p, p.find_loop("kt").after())
    p = reorder_loops(p, p.find_loop("kt").parent())
    kernel = "before: with CudaDeviceFunction(_): _"
    p = insert_window(p, kernel, "tA", "A[:, :]", Sm90_tensorMap(128, 128, TK))
    p = insert_window(p, kernel, "tB", "B[:, :]", Sm90_tensorMap(128, TN // CL, TK))
    p = insert_window(p, kernel, "tC", "C[:, :]", Sm90_tensorMap(128, 128, W))
    k0 = f"{TK} * kt"
    p = stage_mem(p, p.find_loop("kt").body()[0].body(), f"tA[{rows}, {k0}:{k0} + {TK}]", "sA",
                  mem=Sm90_SmemSwizzled(128))
    p = stage_mem(p, p.find_loop("kt").body()[0].body()[-1],
                  f"tB[{TN * G} * ng + {TN} * j:{TN * G} * ng + {TN} * j + {TN}, "
                  f"{k0}:{k0} + {TK}]", "sB", mem=Sm90_SmemSwizzled(128))
    p = simplify(p)
    for buf in ("sA", "sB"):  # [cta, ring slot, rows, k]
        p = expand_dim(p, f"{buf} : _", S, f"kt % {S}")
        p = expand_dim(p, f"{buf} : _", CL, "cta")
        p = lift_alloc(p, f"{buf} : _")
    p = fission(p, p.find("sA[_] = _").parent().parent().after())
    p = step(f"the CTA loop split into the tile's phases (zero-fill, K step, epilogue); tensor "
             f"maps; each CTA's A and B tiles staged in its shared memory (sA[cta], sB[cta], "
             f"{S} ring slots)", fission(p, p.find("sB[_] = _").parent().parent().after()))

    # --- consumers: wgmma per warpgroup of each CTA, a wgmma_zero per tile
    comp = p.find_loop("kt").body()[-1]
    p = divide_loop(p, p.forward(comp).body()[0], 64, ["wg", "mi"], perfect=True)
    p = divide_loop(p, p.find_loop("ki"), KN, ["kk", "k"], perfect=True)
    p = reorder_loops(p, p.find_loop("kk").parent())
    p = simplify(reorder_loops(p, p.find_loop("kk").parent()))
    p = replace(p, p.find_loop("mi"), Sm90_wgmma_ss(T, TN))
    p = set_loop_mode(p, "wg", CudaThreads(unit=cuda_warpgroup))
    p = wrap_with_context(p, p.find_loop("wg"), CudaWarps(name="consumer"))
    p = set_loop_mode(p, p.find_loop("kt").body()[-1], CudaThreads(unit=cuda_cta_in_cluster))
    zero = p.find("D[_] = 0.0")
    p = fragment_loops(p, zero.parent().parent(), zero.parent(),
                       ["wz", "wz_w", "wz_l", "wz_nb", "wz_h", "wz_j"])
    p = replace(p, p.find_loop("wz_w"), Sm90_wgmma_zero(TN))
    p = set_loop_mode(p, "wz", CudaThreads(unit=cuda_warpgroup))
    p = wrap_with_context(p, p.find_loop("wz"), CudaWarps(name="consumer"))
    p = step(f"consumers: the CTA loops become cuda_cta_in_cluster loops; {TK // KN} wgmma "
             f"m64n{TN}k{KN} per warpgroup and K step, a wgmma_zero per tile",
             set_loop_mode(p, p.find_loop("kt").prev(), CudaThreads(unit=cuda_cta_in_cluster)))

    # --- the producer: A per CTA's warp, B multicast to both CTAs
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "raw", [CL, f"K / {TK}"],
                             CudaMbarrier, ring_dim_idx=1, ring_depth=S)
    for buf in ("sA", "sB"):
        p = lift_alloc(p, f"{buf} : _", n_lifts=2)
    tma = Sm90_tma_load(2, T)
    p = replace(p, p.find("sA[_] = tA[_]").parent().parent(), tma, barrier="raw[cta, kt]")
    p = set_loop_mode(p, p.find(f"{tma.name}(_)").parent(),
                      CudaThreads(unit=cuda_warp_in_cluster))
    mc = Sm90_tma_multicast(2, T, CL)
    p = replace(p, p.find("sB[_] = tB[_]").parent().parent().parent(), mc,
                barrier="raw[:, kt]")
    p = step(f"producer: each CTA's warp TMA-loads its A tile, B is multicast to both CTAs "
             f"(tma_multicast: the staging loop over cta copies one window into every CTA's "
             f"sB); ring slot kt % {S}, the ring belongs to the task",
             wrap_with_context(p, p.find(f"{tma.name}(_)").parent().expand(0, 1),
                               CudaWarps(0, 1, name="producer")))

    # --- the epilogue: per CTA, column chunks of W, double-buffered C_smem, TMA stores
    store = p.find("C[_] = D[_]").parent().parent()
    p = stage_mem(p, store, f"tC[{rows}, {cols}]", "C_smem", mem=Sm90_SmemSwizzled(128))
    tma_out = Sm90_tma_store(2, f32)
    p = chunk_epilogue(p, f32, tma_out)
    p = expand_dim(p, "C_smem : _", CL, "cta")
    p = lift_alloc(simplify(p), "C_smem : _", n_lifts=2)
    p = set_loop_mode(p, "we", CudaThreads(unit=cuda_warpgroup))
    p = wrap_with_context(p, p.find(f"{tma_out.name}(_)"), CudaWarps(0, 1))
    p = step(f"epilogue: per CTA and chunk of {W} columns, store_acc into one of the CTA's two "
             "C_smem buffers (resize_dim(fold=True)), then one TMA store",
             set_loop_mode(p, p.find_loop("c").parent(), CudaThreads(unit=cuda_cta_in_cluster)))
    return cluster_sync(p, step, cfg, tma.name, mc.name, tma_out.name)


def cluster_sync(p, step, cfg, load: str, multicast: str, store: str):
    """The ring protocol of the 2x1-cluster kernel, inserted as annotations: the cooperative
    one (``gemm.library_sync``) with a CTA dimension on every barrier, releases arriving in
    both CTAs, and a cluster-wide Fence at the end of the task."""
    TK, S, G, CL = cfg.shape.kb, cfg.shape.stages, cfg.tiles, cfg.cluster
    p = insert_barrier_alloc(p, p.find_loop("j").before(), "carry", [CL, G, S], CudaMbarrier,
                             ring_dim_idx=1, ring_depth=2)
    p = insert_barrier_alloc(p, p.find_loop("j").before(), "tcg", [CL], Sm90_TmaCommitGroup)
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "war", [CL, f"K / {TK}"],
                             CudaMbarrierPreArrive(S), ring_dim_idx=1, ring_depth=S)
    p = insert_barrier_alloc(p, p.find_loop("kt").before(), "cg", [CL, 2],
                             Sm90_WgmmaCommitGroup)
    # producer: each CTA's warp waits for its CTA's slot; one arrive per CTA's warp
    ld = p.find(f"{load}(_)")
    p = insert_await(p, ld.before(), "war[cta, kt]", cuda_temporal, 0)
    p = insert_await(p, p.forward(ld).prev().before(), "carry[cta, j - 1, kt]",
                     cuda_temporal, 0)
    p = add_if(p, p.forward(ld).prev().prev(), f"j >= 1 and kt < {S}")
    mcs = p.find(f"{multicast}(_)")
    p = insert_pass(p, mcs.after())
    p = add_loop(p, p.forward(mcs).next(), "cw", CL)
    p = insert_arrive(p, p.find_loop("cw").body()[0].before(), cuda_temporal, "raw[cw, kt]")
    p = add_loop(delete_pass(p), p.find_loop("cw").body()[0], "t", 1)
    p = set_loop_mode(p, "t", CudaThreads(unit=cuda_thread))
    p = step("producer synchronization: each CTA's warp waits for the previous tile's stage "
             "(carry) and a free slot (war) of its CTA; one arrive per CTA on raw[cta, kt]",
             set_loop_mode(p, "cw", CudaThreads(unit=cuda_warp_in_cluster)))
    # consumers: a stage is written in both CTAs by the multicast, so it is released in both
    p = step("consumer synchronization: wait for raw[cta, kt], wgmma.fence, commit, one group "
             "in flight; release the previous stage in both CTAs (war[:, ...]) and, for the "
             "tile's last stages, hand them to the next tile in both (carry[:, ...])",
             consumer_sync(p, cfg, "cta, ", ":, "))
    # epilogue: per CTA, as the cooperative kernel's
    c = p.find_loop("c")
    p = insert_pass(p, c.before())
    p = add_loop(p, p.forward(c).prev(), "wf", 2)
    p = insert_await(p, p.find_loop("wf").body()[0].before(), "cg[cta, wf]", cuda_in_order, 0)
    p = epilogue_sync(set_loop_mode(delete_pass(p), "wf", CudaThreads(unit=cuda_warpgroup)),
                      cfg, store, "cta, ", ":, ")
    # end of the task: every CTA's stores have read C_smem; a cluster-wide Fence
    jl = p.find_loop("j")
    p = insert_pass(p, jl.after())
    p = add_loop(p, p.forward(jl).next(), "cf", CL)
    p = insert_await(p, p.find_loop("cf").body()[0].before(), "tcg[cf]", cuda_in_order, 0)
    p = delete_pass(p)
    cf = p.find_loop("cf")
    p = wrap_with_context(p, cf.body()[0], CudaWarps(0, 1))
    p = wrap_with_context(p, p.forward(cf).body()[0], CudaWarps(name="consumer"))
    p = set_loop_mode(p, "cf", CudaThreads(unit=cuda_cta_in_cluster))
    return step("epilogue synchronization: per CTA, named consumer barriers around the chunk "
                "(with fence.proxy.async before the TMA store reads it), one bulk store in "
                "flight, all stores read before the task ends; the task ends with a "
                "cluster-wide Fence (a peer may multicast into this CTA until then)",
                insert_fence(p, p.find_loop("cf").after(), cuda_in_order, cuda_in_order))
