"""Walk through the schedule of the GEMM library: the naive matmul rewritten into the
cooperative kernels of specs/gemm.py. The schedule itself is the library's
(``exogpu_verify.kernels.gemm``: ``schedule_library``, ``Config``, ``LIBRARY``, ``SPLIT``,
``PINGPONG``, ``CLUSTER``),
and specs/gemm.py builds its cooperative variants with it; this script shows its steps and
checks them.

Run: ``python examples/scheduling/gemm_library_schedule.py`` (the walk-through as IR diffs,
the interpreter check against the spec, the all-size proof); ``--markdown`` prints the
walk-through of ``gemm_library_walkthrough.md``.

``schedule_library(Config(...))`` gives the kernel of ``specs/gemm.py``'s cooperative
variants (``gemm(GemmConfig(..., "cooperative", G))``) from the naive spec: ``G`` output
tiles per task sharing one ``S``-stage shared-memory ring (the producer loads the next
tile's first stages while the consumers finish a tile: ``carry`` barriers hand a stage from
tile ``j`` to tile ``j + 1``), a rasterized task order, and an epilogue pipelined over column
chunks of one swizzle row (``store_acc`` into one of two ``C_smem`` buffers, a consumer named
barrier with ``fence.proxy.async``, one consumer warp TMA-storing the chunk while keeping
one store in flight). ``LIBRARY`` lists the variants shipped: the five cooperative ones
without split-K, BF16 and TF32, f32 and bf16 output.

``SPLIT`` lists the split-K variants shipped (``Config(..., split_k=KS)``, ``--split-k KS``;
walk-through ``gemm_library_splitk_walkthrough.md``): C's zero-fill is fissioned from the
accumulation and replaced by the host's ``cudaMemsetAsync0_2d_f32``, the K steps are divided
``kq = KS kt + s`` and the slice loop ``s`` moved out to the task level, each slice's partial
tile is staged (``accum``) and added to C through ``tC`` by ``tma_reduce_add``. Two steps are
reassociations, recorded unsafe (split-K rounds differently from the naive sum): the
``reorder_loops`` of ``s`` out of ``kt`` and the ``stage_mem(..., accum=True)``;
``check_split_k`` checks both sides of them bitwise.

``PINGPONG`` lists the ping-pong variant shipped (``Config(..., consumers="pingpong")``,
``--pingpong``; walk-through ``gemm_library_pingpong_walkthrough.md``): the accumulator gets
a warpgroup dimension indexed ``j % 2`` (``expand_dim``), every consumer block of tile ``j``
is wrapped in ``for wg in seq(0, 2): if wg == j % 2:`` (``add_loop(..., guard="j % 2")``: it
still runs once), its buffers indexed by ``wg`` (``rewrite_expr``: equal under the guard),
and the loop made a warpgroup loop; so the warpgroup whose tile it is runs its mainloop,
releases the stages and runs its epilogue (its own ``C_smem`` pair, commit group and named
barriers) while the other one runs the next tile's mainloop.

``CLUSTER`` lists the 2x1-cluster variant shipped (``Config(..., cluster=2)``, ``--cluster``;
walk-through ``gemm_library_cluster_walkthrough.md``; the schedule is
``exogpu_verify.kernels.gemm_cluster``): rows are divided ``i = 256 mc + 128 cta + ii``, the
``cta`` loop is split into the tile's phases and becomes a ``cuda_cta_in_cluster`` loop, each
CTA's A and B tiles are staged in its own shared memory, and B's staging loop over ``cta``
(one window copied into every CTA's ``sB``) is ``replace``d by ``tma_multicast_2d_bf16_x2``,
the instruction whose sequential body it is; releases arrive in both CTAs.
"""

from __future__ import annotations

import sys

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.platforms.cuda import *  # noqa: F401,F403
from exogpu_verify.platforms.sm90 import *  # noqa: F401,F403
from exogpu_verify.schedule import *  # noqa: F401,F403

import numpy as np

from exogpu_verify.kernels.gemm import (CLUSTER, DEFAULT, LIBRARY, PINGPONG,  # noqa: F401
                                        SPLIT, Config, library_sync, schedule_library, spec)
from gemm_steps import check_equal, inputs, run, split_k_reference  # noqa: F401

VERIFY_SIZES = {"M": 128, "N": 512, "K": 128}


# The all-size proof takes ~26 s of CPU (53 s wall at load average 5 on the project's 2-core
# machine, close to the default 60 s); 600 s per stage keeps "proven" independent of the load.
VERIFY_TIMEOUT = 600  # seconds per stage (exogpu-verify, verify())

#: the naive spec of the default variant (p1 of its derivation)
gemm = spec(DEFAULT)

#: the scheduled kernel of the default variant (exogpu-verify proves it, exogpu-codegen
#: builds it)
gemm_bf16_f32_128x256_s4_coop_g2_scheduled = schedule_library(
    name="gemm_bf16_f32_128x256_s4_coop_g2_scheduled")[-1][1]


def check_split_k(cfg: Config, steps, sizes) -> bool:
    """The interpreter check of a split-K schedule, whose two reassociations (recorded
    unsafe) change the rounding: the steps before the first are bitwise equal to the spec,
    the steps from the last on bitwise equal to ``split_k_reference`` (the slices' partial
    sums added in order), and every step lies within the summation error bound of the spec
    (two orders of one sum of K products differ by at most ``2 K u sum |a b|``, u = 2^-24)."""
    def unsafe(p):
        return sum(r.unsafe for r in p.provenance)

    total = unsafe(steps[-1][1])
    first = next(k for k, (_, p) in enumerate(steps) if unsafe(p))
    last = next(k for k, (_, p) in enumerate(steps) if unsafe(p) == total)
    spec_c = run(steps[0][1], sizes)
    ref = split_k_reference(steps[0][1], cfg.split_k, cfg.shape.kb, sizes).tobytes()
    _, _, K, A, B = inputs(steps[0][1], sizes, 0)
    bound = 2 * K * 2.0 ** -24 * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)).T)
    ok = True
    for k, (_, p) in enumerate(steps):
        c = run(p, sizes)
        if k < first:
            ok &= c.tobytes() == spec_c.tobytes()
        elif k >= last:
            ok &= c.tobytes() == ref
        ok &= bool(np.all(np.abs(c.astype(np.float64) - spec_c) <= bound))
    return ok


def main(argv=None) -> int:
    """``[--split-k KS | --pingpong | --cluster] [--markdown]``: the walk-through of the
    default variant, of the split-K variant with KS slices, of the ping-pong variant or of
    the 2x1-cluster variant."""
    argv = sys.argv[1:] if argv is None else argv
    cfg = PINGPONG[0] if "--pingpong" in argv else CLUSTER[0] if "--cluster" in argv else \
        DEFAULT
    if "--split-k" in argv:
        ks = int(argv[argv.index("--split-k") + 1])
        cfg = next(c for c in SPLIT if c.split_k == ks)
    steps = schedule_library(cfg)
    if "--markdown" in argv:
        print(walkthrough(steps), end="")
        return 0
    print(walkthrough(steps))
    final = steps[-1][1]
    print(provenance_report(final))
    if cfg.split_k > 1:
        ok = check_split_k(cfg, steps, (("M", 128), ("N", 256), ("K", 128 * cfg.split_k)))
        print("\nsequential interpreter: bitwise equal to the spec up to the first "
              "reassociation, bitwise equal to the split-K order from the last, within the "
              f"summation error bound throughout: {ok}")
    else:
        m = 128 * cfg.cluster
        ok = all(check_equal(steps[0][1], p, sizes=(("M", m), ("N", 512), ("K", 128)))
                 for _, p in steps)
        print(f"\nsequential interpreter: every step bitwise equal to the spec: {ok}")
    r = verify(final)
    print(f"verify: {r.summary()}")
    return 0 if ok and r.verdict == "proven" else 1


if __name__ == "__main__":
    sys.exit(main())
