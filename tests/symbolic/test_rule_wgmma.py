"""The wgmma register rules (docs/semantics.md, "wgmma registers"; LANGUAGE.md): between a
register access by a thread of a warpgroup (an accumulator or A-fragment read or write)
and a later wgmma on the same registers there must be ``Fence(wgmma_fence_1,
wgmma_fence_2)`` (``wgmma.fence``), including the registers' use before their allocation
(the first wgmma, the previous task of a persistent kernel) and across tile-loop
iterations; consecutive wgmmas on one accumulator are ordered by the hardware;
``wgmma_zero`` only marks the accumulator for the next wgmma; asynchronous register
accesses complete before the registers' end of life. Both checkers, bugs and twins."""

from __future__ import annotations

from rule_helpers import line_of, oracle_same, proven, refuted

WG_FENCE = "Fence(wgmma_fence_1, wgmma_fence_2)"
HINT = "insert Fence(wgmma_fence_1, wgmma_fence_2) before the wgmma at line"

# A warpgroup computes T output tiles in a tile loop: stage A and B with ordinary stores,
# zero the accumulator, 4 wgmmas (k-slices), wait, and read the accumulator out.
TILES = """
def tiles(T: size, A: bf16[T, 64, 64] @ CudaGmemLinear, B: bf16[T, 64, 64] @ CudaGmemLinear,
          C: f32[T, 64, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, 1):
            sA: bf16[64, 64] @ Sm90_SmemSwizzled(128)
            sB: bf16[64, 64] @ Sm90_SmemSwizzled(128)
            D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
            CG_ALLOC
            BEFORE_LOOP
            for tile in seq(0, T):
                stage_ph(sA[:, :], A[tile, :, :])
                stage_ph(sB[:, :], B[tile, :, :])
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                BEFORE_ZERO
                ZERO
                BEFORE_MMA
                for kk in seq(0, 4):
                    wgmma(D[:, :, :, :, :], sA[:, 16 * kk:16 * kk + 16],
                          sB[:, 16 * kk:16 * kk + 16])
                WAIT
                EPILOGUE
                Fence(cuda_in_order, cuda_in_order)
            Fence(cuda_in_order, cuda_in_order)
"""
READ_OUT = "acc_out_ph(C[tile, :, :], D[:, :, :, :, :])"
STORE_ZERO = "acc_zero_ph(D[:, :, :, :, :])"
CG = "cg: barrier @ Sm90_WgmmaCommitGroup"
WAIT = "Arrive(wgmma_async) >> cg\n                Await(cg, cuda_in_order, 0)"


def tiles(before_loop="pass", before_zero="pass", before_mma=WG_FENCE,
          zero="wgmma_zero(D[:, :, :, :, :])", wait=WAIT, epilogue=READ_OUT, cg=CG):
    return (TILES.replace("BEFORE_LOOP", before_loop).replace("BEFORE_ZERO", before_zero)
            .replace("BEFORE_MMA", before_mma).replace("ZERO", zero).replace("WAIT", wait)
            .replace("EPILOGUE", epilogue).replace("CG_ALLOC", cg))


_proven, _refuted = proven, refuted
MMA = "wgmma(D[:, :, :, :, :], sA"
SIZES = [{"T": 1}, {"T": 2}, {"T": 3}]


def test_fence_in_every_tile_is_proven():
    _proven(tiles(), SIZES)


def test_fence_before_zeroing_also_orders_the_wgmma():
    # wgmma_zero touches no register: a fence before it serves the wgmma after it
    _proven(tiles(before_zero=WG_FENCE, before_mma="pass"), SIZES)


def test_fence_only_before_the_tile_loop_is_refuted_across_tiles():
    # the issue's example: tile t's epilogue reads the accumulator, tile t + 1's wgmma
    # rewrites it; the CTA Fence(cuda_in_order, cuda_in_order) in between does not count
    src = tiles(before_loop=WG_FENCE, before_mma="pass")
    d = _refuted(src, MMA, "write-after-read hazard", {"T": 2},
                 hint=f"{HINT} {line_of(src, MMA)}", earlier=READ_OUT)
    assert "tile=1" in " ".join(d.notes) and "tile=0" in " ".join(d.notes)


def test_no_fence_at_all_is_refuted_at_the_first_wgmma():
    # PTX: wgmma.fence before the first wgmma (the registers' use before the allocation)
    src = tiles(before_mma="pass")
    d = _refuted(src, MMA, "write-after-write hazard", {"T": 1},
                 hint=f"{HINT} {line_of(src, MMA)}", earlier="D: f32[4, 32, 8, 2, 2]")
    assert "registers of D" in d.message


def test_ordinary_store_zeroing_needs_the_fence():
    src = tiles(zero=STORE_ZERO, before_mma="pass", before_loop=WG_FENCE)
    _refuted(src, MMA, "write-after-write hazard", {"T": 1},
             hint=f"{HINT} {line_of(src, MMA)}", earlier=STORE_ZERO)
    _proven(tiles(zero=STORE_ZERO), SIZES)


def test_consecutive_wgmmas_on_one_accumulator_need_no_fence():
    # four wgmmas per tile, one fence before the first: hardware-ordered accumulator
    src = tiles()
    p = _proven(src, [{"T": 1}])
    assert p is not None


def test_reading_between_wgmma_zero_and_the_wgmma_is_refuted():
    src = tiles(before_mma=READ_OUT + "\n                " + WG_FENCE)
    d = _refuted(src, READ_OUT, "read-after-write hazard", {"T": 1},
                 hint="wgmma_zero only marks the accumulator")
    assert "wgmma_zero" in d.hint


def test_reading_before_the_wait_is_refuted():
    src = tiles(wait="Arrive(wgmma_async) >> cg", epilogue=READ_OUT + "\n                "
                "Await(cg, cuda_in_order, 0)")
    _refuted(src, READ_OUT, "read-after-write hazard", {"T": 1}, nth=0)


INFLIGHT = """
def inflight(T: size, A: bf16[T, 64, 64] @ CudaGmemLinear, B: bf16[T, 64, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, T):
            sA: bf16[64, 64] @ Sm90_SmemSwizzled(128)
            sB: bf16[64, 64] @ Sm90_SmemSwizzled(128)
            cg: barrier @ Sm90_WgmmaCommitGroup
            stage_ph(sA[:, :], A[task, :, :])
            stage_ph(sB[:, :], B[task, :, :])
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
            for once in seq(0, 1):
                D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
                wgmma_zero(D[:, :, :, :, :])
                Fence(wgmma_fence_1, wgmma_fence_2)
                wgmma(D[:, :, :, :, :], sA[:, 0:16], sB[:, 0:16])
                Arrive(wgmma_async) >> cg
                INNER_WAIT
            Await(cg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""


def test_registers_released_with_a_wgmma_in_flight_are_refuted():
    # D's block ends while its wgmma may still write it (the wait comes after the block):
    # the registers are reused (by later code, by the next task) under the tensor cores
    src = INFLIGHT.replace("INNER_WAIT", "pass")
    d = _refuted(src, "D: f32[4, 32, 8, 2, 2]", "free without synchronization", {"T": 1},
                 hint="commit group")
    assert "end of the registers of D" in d.message
    _proven(INFLIGHT.replace("INNER_WAIT", "Await(cg, cuda_in_order, 0)"),
            [{"T": 1}, {"T": 2}])


# ------------------------------------------------------------------ register A fragments
RS = """
def rs(T: size, A: bf16[T, 64, 16] @ CudaGmemLinear, B: bf16[T, 64, 16] @ CudaGmemLinear,
       C: f32[T, 64, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, 1):
            sB: bf16[64, 16] @ Sm90_SmemSwizzled(32)
            Af: bf16[4, 32, 2, 2, 2] @ Sm90_RmemMatrixA
            D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
            cg: barrier @ Sm90_WgmmaCommitGroup
            for tile in seq(0, T):
                for r in cuda_threads(0, 64, unit=2 * cuda_thread):
                    for h in cuda_threads(0, 2, unit=cuda_thread):
                        for j in seq(0, 8):
                            sB[r, 8 * h + j] = B[tile, r, 8 * h + j]
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    for lane in cuda_threads(0, 32, unit=cuda_thread):
                        for kh in seq(0, 2):
                            for mh in seq(0, 2):
                                for j in seq(0, 2):
                                    Af[w, lane, kh, mh, j] = A[tile, 16 * w + lane / 4 + 8 * mh,
                                                               2 * (lane % 4) + 8 * kh + j]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                wgmma_zero(D[:, :, :, :, :])
                FENCE
                wgmma_rs(D[:, :, :, :, :], Af[:, :, :, :, :], sB[:, :])
                Arrive(wgmma_async) >> cg
                Await(cg, cuda_in_order, 0)
                acc_out_ph(C[tile, :, :], D[:, :, :, :, :])
                Fence(cuda_in_order, cuda_in_order)
            Fence(cuda_in_order, cuda_in_order)
"""


def test_register_a_fragment_written_then_read_by_wgmma_needs_the_fence():
    src = RS.replace("FENCE", "pass")
    line = line_of(src, "wgmma_rs(D")
    _refuted(src, "wgmma_rs(D", "read-after-write hazard", {"T": 1}, hint=f"{HINT} {line}",
             earlier="Af[w, lane, kh, mh, j] = A[tile")
    _proven(RS.replace("FENCE", WG_FENCE), [{"T": 1}, {"T": 2}])


def test_accepted_tile_loop_runs_sequentially_in_the_oracle():
    oracle_same(_proven(tiles(), [{"T": 2}]), {"T": 2}, seeds=2)


# wgmmas of different shapes on one accumulator: PTX ISA (wgmma.fence) exempts accumulator
# accesses from the fence only across wgmmas *of the same shape*. Here each tile's first
# k-slice is an m64n64k16 on all of D, then an m64n32k16 on D's first 32 columns.
MIXED = ("wgmma(D[:, :, :, :, :], sA[:, 0:16], sB[:, 0:16])\n"
         "                MID\n"
         "                wgmma32(D[:, :, 0:4, :, :], sA[:, 16:32], sB[0:32, 16:32])")


# the epilogue as plain loops over the fragment layout (PTX ISA, wgmma D fragments)
LOOP_OUT = """for w in cuda_threads(0, 4, unit=cuda_warp):
                    for l in cuda_threads(0, 32, unit=cuda_thread):
                        for nb in seq(0, 8):
                            for h in seq(0, 2):
                                for c in seq(0, 2):
                                    C[tile, 16 * w + 8 * h + l / 4, 8 * nb + 2 * (l % 4) + c] = (
                                        D[w, l, nb, h, c])"""


def mixed(mid="pass", wgmma32=None):
    from exogpu_verify.platforms.sm90 import Sm90_wgmma_ss
    from exogpu_verify.ir.types import bf16

    src = tiles(epilogue=LOOP_OUT).replace(
        "for kk in seq(0, 4):\n                    wgmma(D[:, :, :, :, :], sA[:, 16 * kk:16 * kk + 16],\n"
        "                          sB[:, 16 * kk:16 * kk + 16])", MIXED.replace("MID", mid))
    assert "wgmma32" in src
    return src, {"wgmma32": wgmma32 or Sm90_wgmma_ss(bf16, 32)}


def test_wgmmas_of_different_shapes_on_one_accumulator_need_the_fence():
    src, env = mixed()
    _refuted(src, "wgmma32(D", "write-after-write hazard", {"T": 1}, env=env,
             hint=f"{HINT} {line_of(src, 'wgmma32(D')}, or give each wgmma shape its own "
             "accumulator", earlier="wgmma(D[:, :, :, :, :], sA[:, 0:16]")


def test_a_commit_group_wait_between_different_shapes_is_not_the_fence():
    # the wait completes the first wgmma, but a later wgmma's register accesses are ordered
    # only by wgmma.fence (or the same-shape exception)
    src, env = mixed(mid=WAIT.replace("\n                ", "\n                "))
    _refuted(src, "wgmma32(D", "write-after-write hazard", {"T": 1}, env=env, hint=HINT)


def test_wgmma_fence_between_different_shapes_is_proven():
    src, env = mixed(mid=WG_FENCE)
    _proven(src, SIZES, env)


def test_different_shapes_on_different_accumulators_need_no_fence():
    # the same two wgmmas on two accumulators: nothing to order between them
    src, env = mixed()
    src = src.replace("wgmma32(D[:, :, 0:4, :, :]", "wgmma32(E[:, :, 0:4, :, :]").replace(
        "D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD",
        "D: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD\n"
        "            E: f32[4, 32, 8, 2, 2] @ Sm90_RmemMatrixD").replace(
        "wgmma_zero(D[:, :, :, :, :])",
        "wgmma_zero(D[:, :, :, :, :])\n                wgmma_zero(E[:, :, :, :, :])")
    _proven(src, SIZES, env)
