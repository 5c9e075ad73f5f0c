"""Schedule a naive matmul into the warp-specialized Hopper GEMM with checked rewrites.

Run: ``python examples/scheduling/gemm_schedule.py`` (prints each step as an IR diff, the
provenance, checks every step against the spec with the sequential interpreter and proves
the kernel for all sizes); ``--full`` prints the whole procedure after each step instead,
``--markdown`` only the walk-through of README.md.

The spec is ``C = A @ B.T`` written the naive way (``C[i, j] = 0; C[i, j] += A[i, k] *
B[j, k]``), bf16 inputs, f32 accumulation. The kernel (the cooperative BF16 GEMM of
``bench/gemm_kernels.py`` / ``specs/gemm.py``): one 128 x 256 tile of C per CTA task; a
producer warp that waits for a free slot of a 4-deep shared-memory ring, loads the A and B
tiles of each 64-wide K step with TMA (``tma_load_2d_bf16 >> raw[k]``) and arrives on
``raw[k]``; two consumer warpgroups that wait for ``raw[k]``, fence, issue 4 ``wgmma``
(m64n256k16) each into their accumulator in registers, commit, keep one group in flight and
release the slot they finished with (``war``); an epilogue that stores the accumulators to
swizzled shared memory, fences the generic and async proxies, and TMA-stores 8 column blocks
of C. Every step is one public primitive of ``exogpu_verify.schedule``; no instruction is
written by hand and every library instruction enters by ``replace``.
"""

from __future__ import annotations

import sys

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.platforms.sm90 import *  # noqa: F401,F403
from exogpu_verify.schedule import *  # noqa: F401,F403

from gemm_steps import (WARPS, Shape, check_equal, fragment_layout, fragment_loops,  # noqa
                        span)
from gemm_steps import spec as naive_spec

VERIFY_SIZES = {"M": 128, "N": 256, "K": 128}

DEFAULT = Shape()
#: shapes of the GEMM library's cooperative variants, here with one tile per task and the
#: producer warp's TMA-store epilogue (gemm_library_schedule.py reaches the variants
#: themselves)
SHAPES = (DEFAULT, Shape("bf16", 128, 5), Shape("tf32", 256, 3), Shape("tf32", 128, 4))


@proc
def gemm(M: size, N: size, K: size, A: bf16[M, K], B: bf16[N, K], C: f32[M, N]):
    assert M % 128 == 0
    assert N % 256 == 0
    assert K % 64 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[j, k]


def spec(shape: Shape):
    """The naive spec of ``shape`` (``gemm`` above for the default one)."""
    return gemm if shape == DEFAULT else naive_spec(shape)


# ---------------------------------------------------------------- the schedule


#: injected bugs: one synchronization step left out or weakened -> verify refutes the kernel
BUGS = {
    "raw_await_first_only": "consumers wait for raw[ko] only in the first K step (later "
                            "stages may not have landed when the wgmmas read them)",
    "no_proxy_fence": "the epilogue Fence orders cuda_in_order only (no fence.proxy.async "
                      "before the TMA store reads C_smem)",
    "no_final_fence": "no Fence after the epilogue (C_smem is freed while TMA may read it)",
}


def schedule(shape: Shape = DEFAULT, show=None, bug: str | None = None):
    """Return the list of (step description, proc) from the spec of ``shape`` to its kernel
    (with one of ``BUGS`` injected when ``bug`` is given)."""
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}; choose from {', '.join(BUGS)}")
    T, TM, TN, TK, RING = shape.T, 128, shape.tile_n, shape.kb, shape.stages
    KN = 32 // T.nbytes  # k of one wgmma
    steps = []

    def step(desc, p):
        steps.append((desc, p))
        if show:
            show(desc, p)
        return p

    p = step("the sequential specification", spec(shape))

    # --- CTA tiles and K steps
    p = divide_loop(p, "i", TM, ["m", "ii"], perfect=True)
    p = divide_loop(p, "j", TN, ["n", "ji"], perfect=True)
    p = reorder_loops(p, "ii n")
    p = fission(p, "after: C[_] = 0.0", n_lifts=2)
    p = divide_loop(p, "k", TK, ["ko", "ki"], perfect=True)
    p = reorder_loops(p, p.find_loop("ko").parent())
    p = step(f"128 x {TN} tiles of C; the zero-fill split off; K steps of {TK} outside the "
             "tile (each C element keeps its k order)",
             reorder_loops(p, p.find_loop("ko").parent()))

    # --- a kernel: one CTA task per tile, on device tensors
    for t in ("A", "B", "C"):
        p = set_memory(p, t, CudaGmemLinear)
    p = step("a kernel on device tensors with a producer warpgroup and two consumer "
             "warpgroups; one task per tile", wrap_with_context(p, "for m in _: _",
                                                                CudaDeviceFunction(
                                                                    warp_config=WARPS),
                                                                tasks=2))

    # --- the accumulator in registers, in the wgmma fragment layout
    tile = p.find_loop("ii")  # the zero-fill nest, then the K loop
    p = stage_mem(p, tile.expand(0, 1), f"C[128 * m:128 * m + 128, {TN} * n:{TN} * n + {TN}]",
                  "D", mem=Sm90_RmemMatrixD)
    p = step("accumulate the tile in registers (no load: the zero-fill writes it first)",
             simplify(p))
    p = step("the accumulator in the wgmma fragment layout", fragment_layout(p, "D : _"))

    # --- tensor maps, and the A and B tiles of each K step staged through them
    kernel = "before: with CudaDeviceFunction(_): _"
    p = insert_window(p, kernel, "tA", "A[:, :]", Sm90_tensorMap(128, TM, TK))
    p = insert_window(p, kernel, "tB", "B[:, :]", Sm90_tensorMap(128, TN, TK))
    p = insert_window(p, kernel, "tC", "C[:, :]", Sm90_tensorMap(128, TM, 32))
    body = p.find_loop("ko").body()
    p = stage_mem(p, body, f"tA[128 * m:128 * m + 128, {TK} * ko:{TK} * ko + {TK}]", "sA",
                  mem=Sm90_SmemSwizzled(128))
    compute = p.find_loop("ko").body()[-1]
    p = stage_mem(p, compute, f"tB[{TN} * n:{TN} * n + {TN}, {TK} * ko:{TK} * ko + {TK}]",
                  "sB", mem=Sm90_SmemSwizzled(128))
    p = step("tensor maps for A, B and C; each K step copies its A and B tiles to swizzled "
             "shared memory through them", simplify(p))

    # --- the consumer: two warpgroups, 4 wgmma per K step each
    compute = p.find_loop("ko").body()[-1]
    p = divide_loop(p, compute, 64, ["wg", "mi"], perfect=True)
    p = divide_loop(p, p.find_loop("ki"), KN, ["kk", "k"], perfect=True)
    p = reorder_loops(p, p.find_loop("kk").parent())
    p = reorder_loops(p, p.find_loop("kk").parent())
    p = simplify(p)
    p = replace(p, p.find_loop("mi"), Sm90_wgmma_ss(T, TN))
    p = set_loop_mode(p, "wg", CudaThreads(unit=cuda_warpgroup))
    p = step(f"consumer: warpgroup wg computes rows 64 wg.. with {TK // KN} wgmma "
             f"m64n{TN}k{KN} per K step",
             wrap_with_context(p, p.find_loop("wg"), CudaWarps(name="consumer")))

    # --- the zero-fill: one wgmma_zero per warpgroup
    p = fragment_loops(p, p.find_loop("ii"), p.find_loop("ji"),
                       ["wz", "wz_w", "wz_l", "wz_nb", "wz_h", "wz_j"])
    p = replace(p, p.find_loop("wz_w"), Sm90_wgmma_zero(TN))
    p = set_loop_mode(p, "wz", CudaThreads(unit=cuda_warpgroup))
    p = step("the zero-fill is a lazy wgmma_zero per consumer warpgroup",
             wrap_with_context(p, p.find_loop("wz"), CudaWarps(name="consumer")))

    # --- the producer: TMA loads into a 4-deep ring of shared-memory slots
    ko = p.find_loop("ko")
    p = insert_barrier_alloc(p, ko.before(), "raw", [f"K / {TK}"], CudaMbarrier,
                             ring_dim_idx=0, ring_depth=RING)
    tma = Sm90_tma_load(2, T)
    for buf, tm in (("sA", "tA"), ("sB", "tB")):
        p = expand_dim(p, f"{buf} : _", RING, f"ko % {RING}")
        p = lift_alloc(p, f"{buf} : _")
        copy = p.find(f"{buf}[_] = {tm}[_]").parent().parent()
        p = replace(p, copy, tma, barrier="raw[ko]")
    loads = p.find(f"{tma.name}(_)").expand(0, 1)
    p = step(f"producer: the A and B tiles of step ko are TMA loads into ring slot ko % {RING}, "
             "completing on raw[ko]", wrap_with_context(p, loads, CudaWarps(0, 1,
                                                                             name="producer")))

    # --- the epilogue: registers -> swizzled shared memory -> TMA stores of 128 x 32 blocks
    store = p.find("C[_] = D[_]").parent().parent()
    p = stage_mem(p, store, f"tC[128 * m:128 * m + 128, {TN} * n:{TN} * n + {TN}]",
                  "C_smem", mem=Sm90_SmemSwizzled(128))
    p = divide_dim(p, "C_smem : _", 1, 32)
    p = simplify(rearrange_dim(p, "C_smem : _", [1, 0, 2]))
    back = p.find("tC[_] = C_smem[_]").parent().parent()
    p = divide_loop(p, back.body()[0], 32, ["jb", "jc"], perfect=True)
    p = reorder_loops(p, p.find_loop("jb").parent())
    p = simplify(p)
    p = replace(p, p.find_loop("jb").body()[0], Sm90_tma_store(2, f32))
    p = wrap_with_context(p, p.find_loop("jb"), CudaWarps(0, 1, name="producer"))
    st = p.find("C_smem[_] = D[_]").parent().parent()
    p = divide_loop(p, st.body()[0], 32, ["c", "n2"], perfect=True)
    p = reorder_loops(p, p.find_loop("c").parent())
    p = divide_loop(p, p.find_loop("c").body()[0], 64, ["we", "m2"], perfect=True)
    p = simplify(p)
    p = replace(p, p.find_loop("m2"), Sm90_store_acc(f32))
    p = set_loop_mode(p, "we", CudaThreads(unit=cuda_warpgroup))
    p = step("epilogue: each consumer warpgroup stores its accumulator to swizzled shared "
             f"memory (store_acc, per 32 columns); one producer warp TMA-stores {TN // 32} "
             "blocks of 128 x 32",
             wrap_with_context(p, p.find_loop("c"), CudaWarps(name="consumer")))
    p = main_loop_sync(p, step, shape, bug)
    p = step("epilogue synchronization: fence.proxy.async before the TMA stores read C_smem, "
             "a bulk commit group waited before C_smem is freed", epilogue_sync(p, bug))
    name = "gemm_tma_wgmma" if shape == DEFAULT else shape.name
    return steps[:-1] + [(steps[-1][0], rename(p, name))]


def main_loop_sync(p, step, shape: Shape, bug=None):
    """The ring protocol: the producer waits for a free slot (``war``, pre-arrived 4 times)
    and signals full ones (``raw``, completed by the TMA bytes and one arrive); consumers
    wait for full slots, fence their registers before the wgmmas, commit them to a commit
    group per warpgroup, keep one group in flight and release the slot of the step before."""
    TK, RING = shape.kb, shape.stages
    ko = p.find_loop("ko")
    p = insert_barrier_alloc(p, ko.before(), "war", [f"K / {TK}"],
                             CudaMbarrierPreArrive(RING), ring_dim_idx=0, ring_depth=RING)
    p = insert_barrier_alloc(p, p.find_loop("ko").before(), "cg", [2], Sm90_WgmmaCommitGroup)
    # producer: wait for the slot, then one thread arrives after the two copies
    prod = p.find(f"{Sm90_tma_load(2, shape.T).name}(_)").parent()
    p = insert_await(p, prod.body()[0].before(), "war[ko]", cuda_temporal, 0)
    prod = p.forward(prod)
    p = insert_arrive(p, prod.body()[-1].after(), cuda_temporal, "raw[ko]")
    arrive = p.forward(prod).body()[-1]
    p = add_loop(p, arrive, "pt", 1)
    p = step(f"producer synchronization: wait for a free slot (war, pre-arrived {RING} "
             "times); one thread arrives on raw[ko] after the copies",
             set_loop_mode(p, "pt", CudaThreads(unit=cuda_thread)))
    # consumers: wait for the slot, fence, compute, commit, keep one group in flight
    wg = p.find_loop("wg")
    p = insert_await(p, wg.body()[0].before(), "raw[ko]", cuda_generic_and_async_proxy, 0)
    if bug == "raw_await_first_only":
        p = add_if(p, p.find_loop("wg").body()[0], "ko < 1")
    kk = p.find_loop("kk")
    p = insert_fence(p, kk.before(), wgmma_fence_1, wgmma_fence_2)
    p = insert_arrive(p, p.forward(kk).after(), wgmma_async, "cg[wg]")
    commit = p.forward(kk).next()
    p = insert_await(p, commit.after(), "cg[wg]", cuda_in_order, 1)
    p = step("consumer synchronization: wait for raw[ko], wgmma.fence, commit the wgmmas, keep "
             "one group in flight", add_if(p, p.forward(commit).next(), "ko >= 1"))
    # ... and release the slot of step ko - 1 (ring index ko - 1 + RING)
    wg = p.find_loop("wg")
    p = insert_arrive(p, wg.after(), cuda_in_order, f"war[ko + {RING - 1}]")
    rel = p.forward(wg).next()
    p = wrap_with_context(p, rel, CudaWarps(0, 8))
    p = step(f"consumers release the slot of step ko - 1 (war[ko + {RING - 1}])",
             add_if(p, p.forward(wg).next(), "ko >= 1"))
    # after the loop: wait for all groups, release the last slot, end the main loop's SMEM
    ko = p.find_loop("ko")
    p = insert_pass(p, ko.after())
    p = add_loop(p, p.forward(ko).next(), "wf", 2)
    p = insert_await(p, p.find_loop("wf").body()[0].before(), "cg[wf]", cuda_in_order, 0)
    p = delete_pass(p)
    p = set_loop_mode(p, "wf", CudaThreads(unit=cuda_warpgroup))
    wf = p.find_loop("wf")
    p = insert_arrive(p, wf.after(), cuda_in_order, f"war[K / {TK} + {RING - 1}]")
    p = wrap_with_context(p, p.forward(wf).next(), CudaWarps(0, 8))
    p = wrap_with_context(p, p.find_loop("wf").expand(0, 1), CudaWarps(name="consumer"))
    tail = p.find_loop("wf").parent()
    p = insert_fence(p, tail.after(), cuda_in_order, cuda_in_order)
    return step("after the K loop: wait for all wgmmas, release the last slot, fence; the "
                "main loop's shared memory is a scope of its own (the epilogue reuses it)",
                add_loop(p, span(p.find("raw : _"), p.forward(tail).next()), "main_loop", 1))


def epilogue_sync(p, bug=None):
    """Consumers' generic stores to C_smem reach the async proxy (fence.proxy.async) before
    the producer warp's TMA stores read it; the TMA stores complete (bulk commit group)
    before the shared memory is freed."""
    st = p.find_loop("c").parent()
    l2 = cuda_in_order if bug == "no_proxy_fence" else cuda_generic_and_async_proxy
    p = insert_fence(p, st.after(), cuda_in_order, l2)
    p = insert_barrier_alloc(p, p.find("C_smem : _").after(), "tcg", [], Sm90_TmaCommitGroup)
    jb = p.find_loop("jb")
    p = insert_arrive(p, jb.after(), tma_to_gmem_async, "tcg")
    p = insert_await(p, p.forward(jb).next().after(), "tcg", cuda_in_order, 0)
    prod = p.find_loop("jb").parent()
    last = prod
    if bug != "no_final_fence":
        p = insert_fence(p, prod.after(), cuda_in_order, cuda_in_order)
        last = p.forward(prod).next()
    return add_loop(p, span(p.find("C_smem : _"), p.forward(last)), "epilogue", 1)


# The all-size proof takes ~7 s of CPU (13.5 s wall at load average 4.6 on the project's
# 2-core machine); 600 s per stage keeps "proven" independent of the machine's load.
VERIFY_TIMEOUT = 600  # seconds per stage (exogpu-verify, verify())

#: the scheduled kernel, so `exogpu-verify examples/scheduling/` proves it and `exogpu-codegen`
#: generates it (the spec `gemm` runs on the host: nothing to synchronize, proven trivially).
gemm_tma_wgmma = schedule()[-1][1]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    steps = schedule()
    if "--markdown" in argv:
        print(walkthrough(steps), end="")
        return 0
    if "--full" in argv:
        for desc, p in steps:
            print(f"## {desc}\n\n{p}")
    else:
        print(walkthrough(steps))
    final = steps[-1][1]
    print(provenance_report(final))
    ok = all(check_equal(gemm, p) for _, p in steps)
    print(f"\nsequential interpreter: every step bitwise equal to the spec: {ok}")
    r = verify(final)
    print(f"verify: {r.summary()}")
    return 0 if ok and r.verdict == "proven" else 1


if __name__ == "__main__":
    sys.exit(main())
