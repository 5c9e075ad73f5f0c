"""One consumer warpgroup or several: a generator for ``nwg`` warpgroups gives the accumulator
a leading dimension of extent ``nwg`` indexed by the iterator of
``cuda_threads(0, nwg, unit=cuda_warpgroup)``. With ``nwg = 1`` that dimension has extent 1
and the loop one tile: the same program, distributed the same way and proven the same way
(issue 15). A read of another warpgroup's shard stays a distributed-memory error."""

from __future__ import annotations

import pytest

from analysis_helpers import marked_line, parse

import exogpu_verify.platforms.sm90 as sm90
from exogpu_verify import verify
from exogpu_verify.analysis import analyze_distributed_memory

# the tutorial's step 4 (docs/tutorial.md), widened to NWG warpgroups of 64 rows each
SRC = """
def wg_tiles(M: size, N: size, K: size, A: bf16[M, K] @ CudaGmemLinear,
             B: bf16[N, K] @ CudaGmemLinear, C: f32[M, N] @ CudaGmemLinear):
    assert M % (64 * NWG) == 0
    assert N % 64 == 0
    assert K % 64 == 0
    tA = A[:, :] @ Sm90_tensorMap(128, 64, 64)
    tB = B[:, :] @ Sm90_tensorMap(128, 64, 64)
    with CudaDeviceFunction(blockDim=128 * NWG):
        for m in cuda_tasks(0, M / (64 * NWG)):
            for n in cuda_tasks(0, N / 64):
                D: f32[NWG, 4, 32, 8, 2, 2] @ Sm90_RmemMatrixD
                for wg in cuda_threads(0, NWG, unit=cuda_warpgroup):
                    wgmma_zero_m64n64(D[wg, :, :, :, :, :])
                for k in seq(0, K / 64):
                    sA: bf16[NWG, 64, 64] @ Sm90_SmemSwizzled(128)
                    sB: bf16[64, 64] @ Sm90_SmemSwizzled(128)
                    full: barrier @ CudaMbarrier
                    done: barrier[NWG] @ Sm90_WgmmaCommitGroup
                    for w in cuda_threads(0, 1, unit=cuda_warp):
                        for g in seq(0, NWG):
                            tma_load_2d_bf16(64, 64, sA[g, :, :],
                                             tA[64 * (NWG * m + g):64 * (NWG * m + g) + 64,
                                                64 * k:64 * k + 64]) >> full
                        tma_load_2d_bf16(64, 64, sB,
                                         tB[64 * n:64 * n + 64, 64 * k:64 * k + 64]) >> full
                        Arrive(cuda_temporal, 1) >> full
                    Await(full, cuda_generic_and_async_proxy, 0)
                    for wg in cuda_threads(0, NWG, unit=cuda_warpgroup):
                        Fence(wgmma_fence_1, wgmma_fence_2)
                        for kk in seq(0, 4):
                            wgmma_m64n64k16_f32_bf16_ss(D[wg, :, :, :, :, :],
                                                        sA[wg, :, 16 * kk:16 * kk + 16],
                                                        sB[:, 16 * kk:16 * kk + 16])
                        Arrive(wgmma_async) >> done[wg]
                        Await(done[wg], cuda_in_order, 0)
                    Fence(cuda_in_order, cuda_in_order)
                for wg in cuda_threads(0, NWG, unit=cuda_warpgroup):
                    for w in cuda_threads(0, 4, unit=cuda_warp):
                        for lane in cuda_threads(0, 32, unit=cuda_thread):
                            for nb in seq(0, 8):
                                for h in seq(0, 2):
                                    for j in seq(0, 2):
                                        C[64 * (NWG * m + wg) + 16 * w + lane / 4 + 8 * h,  # <-
                                          64 * n + 8 * nb + 2 * (lane % 4) + j] = \\
                                            D[READ, w, lane, nb, h, j]
"""


def build(nwg: int, read: str = "wg"):
    src = SRC.replace("NWG", str(nwg)).replace("READ", read)
    return src, parse(src, **vars(sm90))


@pytest.mark.parametrize("nwg", [1, 2])
def test_accumulator_per_warpgroup_is_distributed_over_the_warpgroup_loop(nwg):
    _, p = build(nwg)
    info = analyze_distributed_memory(p)
    assert info.diagnostics == ()
    # one shard per thread: warpgroup, warp, lane (the warpgroup dimension stripped by
    # codegen even when it has extent 1)
    assert [(d.extent, d.thread_pitch) for d in info.of("D").dims][0] == (nwg, 128)
    assert info.of("D").n_distributed == 3


@pytest.mark.parametrize("nwg", [1, 2])
def test_one_or_two_consumer_warpgroups_are_proven(nwg):
    _, p = build(nwg)
    r = verify(p, mode="symbolic")
    assert r.verdict == "proven", r.summary()
    # the concrete machine agrees at a size with two k steps and one task row
    r = verify(p, sizes={"M": 64 * nwg, "N": 64, "K": 128})
    assert r.verdict == "checked", r.summary()


def test_codegen_strips_the_warpgroup_dimension_of_extent_one_too():
    from exogpu_codegen import generate

    decls = []
    for nwg in (1, 2):
        _, p = build(nwg)
        src = generate(p, unchecked=True).source
        decls.append([ln.strip() for ln in src.splitlines() if ln.strip().startswith("float D[")])
    assert decls[0] == decls[1] == ["float D[32];  // D: per-thread registers"]


@pytest.mark.parametrize("nwg,read", [(1, "0"), (2, "0"), (1, "w"), (2, "lane")])
def test_wrong_leading_index_stays_a_distributed_memory_error(nwg, read):
    src, p = build(nwg, read)
    r = verify(p)
    assert r.verdict == "refuted"
    d = r.diagnostics[0]
    assert (d.kind, d.line) == ("distributed-memory", marked_line(src)), d
