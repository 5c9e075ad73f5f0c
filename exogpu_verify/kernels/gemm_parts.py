"""Pieces of the GEMM library's schedule shared by its cooperative, ping-pong
(``gemm``) and cluster (``gemm_cluster``) variants: the warp configuration, the wgmma
fragment layout of the accumulator and its loops, the pipelined epilogue, and the
cooperative consumers' and epilogue's synchronization (``own``/``every`` index the CTA's own
barriers or every CTA's on a cluster). Each is an ordinary function over procedures built of
checked public rewrites."""

from __future__ import annotations

from ..frontend.namespace import *  # noqa: F401,F403  (the language's names)
from ..platforms.sm90 import *  # noqa: F401,F403
from ..schedule import *  # noqa: F401,F403

WARPS = [CudaWarpConfig("producer", 4, setmaxnreg_dec=40),
         CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)]


def fragment_layout(p, acc):
    """An accumulator ``acc: f32[128, N]`` indexed ``[row, col]`` becomes the wgmma
    fragment layout ``[wg, warp, lane, col / 8, row % 16 / 8, col % 2]`` with ``row = 64 wg +
    16 warp + 8 h + lane / 4`` and ``col = 8 nb + 2 (lane % 4) + j`` (PTX ISA wgmma D
    fragments): a relabeling of its elements."""
    p = divide_dim(p, acc, 0, 64)         # [wg, 64, N]
    p = divide_dim(p, acc, 1, 16)         # [wg, warp, 16, N]
    p = divide_dim(p, acc, 2, 8)          # [wg, warp, h, g, N]
    p = divide_dim(p, acc, 4, 8)          # [wg, warp, h, g, nb, 8]
    p = divide_dim(p, acc, 5, 2)          # [wg, warp, h, g, nb, t, j]
    p = rearrange_dim(p, acc, [0, 1, 3, 5, 4, 2, 6])  # [wg, warp, g, t, nb, h, j]
    p = mult_dim(p, acc, 2, 3)            # [wg, warp, lane = 4 g + t, nb, h, j]
    return simplify(p)


def fragment_loops(p, rows, cols, names):
    """A ``rows x cols`` (128 x N) nest becomes loops ``wg, warp, lane, nb, h, j`` over
    the fragment layout (the inverse map of ``fragment_layout``)."""
    wg, w, lane, nb, h, j = names
    p = divide_loop(p, rows, 64, [wg, f"{wg}_r"], perfect=True)
    p = divide_loop(p, f"{wg}_r", 16, [w, f"{w}_r"], perfect=True)
    p = divide_loop(p, f"{w}_r", 8, [h, f"{h}_g"], perfect=True)
    p = divide_loop(p, cols, 8, [nb, f"{nb}_r"], perfect=True)
    p = divide_loop(p, f"{nb}_r", 2, [f"{h}_t", j], perfect=True)
    for a, b in ((h, f"{h}_g"), (h, nb), (h, f"{h}_t"), (nb, f"{h}_t")):
        p = reorder_loops(p, f"{a} {b}")
    p = mult_loops(p, f"{h}_g {h}_t", lane)
    return simplify(p)


def span(first, last):
    """The block of statements from cursor ``first`` to cursor ``last`` (same block)."""
    return first.as_block().expand(0, last.path()[-1][1] - first.path()[-1][1])


def chunk_epilogue(p, TC, tma_out, wg: str = "we"):
    """The staged epilogue ``C_smem = D; tC = C_smem`` (or ``+=``) pipelined over column
    chunks of one 128-byte swizzle row: ``store_acc`` of each 64-row block (loop ``wg``)
    into the chunk's buffer, fused with the chunk's ``tma_out``, and ``C_smem`` folded to two
    chunk buffers (``resize_dim(fold=True)``: a chunk is read before the chunk two later
    overwrites its slot)."""
    W = 128 // TC.nbytes
    p = divide_dim(p, "C_smem : _", 1, W)
    p = simplify(rearrange_dim(p, "C_smem : _", [1, 0, 2]))
    st = p.find("C_smem[_] = D[_]").parent().parent()
    p = divide_loop(p, st.body()[0], W, ["c", "n2"], perfect=True)
    p = reorder_loops(p, p.find_loop("c").parent())
    p = divide_loop(p, p.find_loop("c").body()[0], 64, [wg, "m2"], perfect=True)
    p = simplify(p)
    p = replace(p, p.find_loop("m2"), Sm90_store_acc(TC))
    back = p.find("tC[_] = C_smem[_]", many=True) or p.find("tC[_] += C_smem[_]", many=True)
    p = divide_loop(p, back[0].parent().parent().body()[0], W, ["jb", "jc"], perfect=True)
    p = simplify(reorder_loops(p, p.find_loop("jb").parent()))
    p = replace(p, p.find_loop("jb").body()[0], tma_out)
    p = fuse(p, p.find_loop("c"), p.find_loop("jb"))
    return resize_dim(p, "C_smem : _", 0, 2, 0, fold=True)


def consumer_sync(p, cfg: Config, own: str = "", every: str = ""):
    """The cooperative consumers' part of the ring protocol: each warpgroup waits for the
    stage (``raw``), fences its accumulator (``wgmma.fence``), commits its wgmmas and keeps
    one group in flight; then the stage before is released (``war``) and, for the tile's
    last stages, handed to the next tile (``carry``). On a cluster, ``own`` (``"cta, "``)
    indexes the CTA's own barriers and ``every`` (``":, "``) releases in every CTA."""
    TK, S = cfg.shape.kb * cfg.split_k, cfg.shape.stages
    wg = p.find_loop("wg")
    p = insert_await(p, wg.body()[0].before(), f"raw[{own}kt]",
                     cuda_generic_and_async_proxy, 0)
    kk = p.find_loop("kk")
    p = insert_fence(p, kk.before(), wgmma_fence_1, wgmma_fence_2)
    p = insert_arrive(p, p.forward(kk).after(), wgmma_async, f"cg[{own}wg]")
    commit = p.forward(kk).next()
    p = insert_await(p, commit.after(), f"cg[{own}wg]", cuda_in_order, 1)
    p = add_if(p, p.forward(commit).next(), "kt >= 1")
    wg = p.find_loop("wg")
    p = insert_arrive(p, wg.after(), cuda_in_order, f"war[{every}kt + {S - 1}]")
    rel = p.forward(wg).next()
    p = insert_arrive(p, rel.after(), cuda_in_order, f"carry[{every}j, (kt - 1) % {S}]")
    p = add_if(p, p.forward(rel).next(), f"kt - 1 >= K / {TK} - {S}")
    return add_if(p, span(p.forward(rel), p.forward(rel).next()), "kt >= 1")


def epilogue_sync(p, cfg: Config, store: str, own: str = "", every: str = ""):
    """The cooperative epilogue's synchronization, after the loop ``wf`` that waits for every
    warpgroup's wgmmas: release the last stage (``war``, ``carry``); per chunk, a consumer
    named barrier with ``fence.proxy.async`` before the TMA ``store`` reads ``C_smem``, one
    bulk store in flight (``tcg``), a named barrier before the buffer is written again; the
    whole in the consumer warps. ``own``/``every`` as in ``consumer_sync``."""
    TK, S = cfg.shape.kb * cfg.split_k, cfg.shape.stages
    tcg = f"tcg[{own[:-2]}]" if own else "tcg"
    wf = p.find_loop("wf")
    p = insert_arrive(p, wf.after(), cuda_in_order, f"war[{every}K / {TK} + {S - 1}]")
    p = insert_arrive(p, p.forward(wf).next().after(), cuda_in_order,
                      f"carry[{every}j, (K / {TK} - 1) % {S}]")
    c = p.find_loop("c")
    p = insert_fence(p, c.body()[0].after(), cuda_in_order, cuda_generic_and_async_proxy)
    st = p.find(f"{store}(_)")
    p = insert_arrive(p, st.after(), tma_to_gmem_async, tcg)
    p = insert_await(p, p.forward(st).next().after(), tcg, cuda_in_order, 1)
    c = p.find_loop("c")
    p = insert_fence(p, c.body()[-1].after(), cuda_in_order, cuda_in_order)
    return wrap_with_context(p, span(p.find_loop("wf"), p.find_loop("c")),
                             CudaWarps(name="consumer"))
