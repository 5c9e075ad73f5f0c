"""Distributed memory analysis (kind "distributed-memory"): shard deduction and its export."""

from __future__ import annotations

from analysis_helpers import assert_error, assert_ok, parse

from exogpu_verify.analysis import analyze_distributed_memory
from exogpu_verify.ir.units import cuda_cta_in_cluster, cuda_thread, cuda_warpgroup

HEAD = """
def k(A: f32[1024] @ CudaGmemLinear, B: f32[1024] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim={B}, clusterDim={C}):
        for task in cuda_tasks(0, 1):
"""


def prog(body: str, B: int = 32, C: int = 1) -> str:
    lines = ["            " + ln for ln in body.strip("\n").splitlines()]
    return HEAD.format(B=B, C=C) + "\n".join(lines) + "\n"


def shardings(src: str):
    info = analyze_distributed_memory(parse(src))
    assert info.diagnostics == ()
    return info


# -------------------------------------------------------------- the paper's example

def test_paper_scalar_tmp_broadcast_rejected():
    assert_error(prog("""
tmp: f32 @ CudaRmem
for i in cuda_threads(0, 32, unit=cuda_thread):
    tmp = A[i]  # <-
for i in cuda_threads(0, 32, unit=cuda_thread):
    B[i] = tmp
"""), "distributed-memory", "Missing: i")


PAPER_OK = prog("""
tmp: f32[32] @ CudaRmem
for i in cuda_threads(0, 32, unit=cuda_thread):
    tmp[i] = A[i]
for i in cuda_threads(0, 32, unit=cuda_thread):
    B[i] = tmp[i]
""")


def test_paper_sharded_tmp_accepted_and_exported():
    assert_ok(PAPER_OK)
    sh = shardings(PAPER_OK).of("tmp")
    assert sh.native_unit == cuda_thread and sh.n_distributed == 1
    (d,) = sh.dims
    assert (d.extent, d.thread_pitch, d.unit, d.iterators) == (32, 1, cuda_thread, ("i",))


# -------------------------------------------------------------- leading indices

def test_two_level_register_shards_need_both_iterators():
    assert_error(prog("""
tmp: f32[32] @ CudaRmem
for w in cuda_threads(0, 2, unit=cuda_warp):
    for i in cuda_threads(0, 32, unit=cuda_thread):
        tmp[i] = A[i]  # <-
""", B=64), "distributed-memory", "Missing: w")
    src = prog("""
tmp: f32[2, 32] @ CudaRmem
for w in cuda_threads(0, 2, unit=cuda_warp):
    for i in cuda_threads(0, 32, unit=cuda_thread):
        tmp[w, i] = A[i]
        B[i] = tmp[w, i]
""", B=64)
    assert_ok(src)
    assert [d.thread_pitch for d in shardings(src).of("tmp").dims] == [32, 1]


def test_index_expression_instead_of_iterator_rejected():
    assert_error(prog("""
tmp: f32[32] @ CudaRmem
for i in cuda_threads(0, 32, unit=cuda_thread):
    tmp[31 - i] = A[i]  # <-
"""), "distributed-memory", "Expected single variable name")


def test_non_distributed_variable_rejected():
    assert_error(prog("""
tmp: f32[32] @ CudaRmem
for i in cuda_threads(0, 32, unit=cuda_thread):
    for j in seq(0, 32):
        tmp[j] = A[i]  # <-
"""), "distributed-memory", "Expected cuda_threads-loop iterator at idx[0], not j")


def test_tile_count_must_equal_extent():
    assert_error(prog("""
tmp: f32[64] @ CudaRmem
for i in cuda_threads(0, 32, unit=cuda_thread):
    tmp[i] = A[i]  # <-
"""), "distributed-memory", "i.tile_count = 32; must be 64")


def test_cross_shard_use_by_other_threads_rejected():
    assert_error(prog("""
tmp: f32[32] @ CudaRmem
for w in cuda_threads(0, 1, unit=cuda_warp):
    for i in cuda_threads(0, 32, unit=cuda_thread):
        tmp[i] = A[i]
with CudaWarps(1, 2):
    for i in cuda_threads(0, 32, unit=cuda_thread):
        B[i] = tmp[i]  # <-
""", B=64), "distributed-memory", "Incompatible offsets")


def test_thread_pitch_mismatch_rejected():
    assert_error(prog("""
tmp: f32[32] @ CudaRmem
for i in cuda_threads(0, 32, unit=cuda_thread):
    tmp[i] = A[i]
for q in cuda_threads(0, 32, unit=2 * cuda_thread):
    for r in cuda_threads(0, 1, unit=cuda_thread):
        B[q] = tmp[q]  # <-
""", B=64), "distributed-memory", "thread pitch")


def test_register_used_by_a_whole_warp_rejected():
    assert_error(prog("""
x: f32[32] @ CudaRmem
for w in cuda_threads(0, 1, unit=cuda_warp):
    warp_reg(x)  # <-
"""), "distributed-memory", "Missing subdivision to match cuda_thread")


def test_distributed_instr_parameter_matches_thread_loop():
    src = prog("""
acc: f32[2, 128, 8] @ CudaRmem
for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
    wg_acc(acc[wg, :, :])
    for t in cuda_threads(0, 128, unit=cuda_thread):
        for j in seq(0, 8):
            B[t * 8 + j] = acc[wg, t, j]
""", B=256)
    assert_ok(src)
    sh = shardings(src).of("acc")
    assert [(d.extent, d.thread_pitch) for d in sh.dims] == [(2, 128), (128, 1)]


def test_distributed_instr_parameter_needs_full_window():
    assert_error(prog("""
acc: f32[2, 256, 8] @ CudaRmem
for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
    wg_acc(acc[wg, 0:128, :])  # <-
""", B=256), "distributed-memory")


# -------------------------------------------------------------- shared memory and barriers

def test_smem_allocated_by_one_warp_of_multi_warp_cta_rejected():
    assert_error(prog("""
for w in cuda_threads(0, 2, unit=cuda_warp):
    s: f32[32] @ CudaSmemLinear  # <-
    for i in cuda_threads(0, 32, unit=cuda_thread):
        s[i] = A[i]
""", B=64), "distributed-memory", "Missing threads to match cuda_cta_in_cluster")


def test_smem_shared_by_warps_of_a_cta_is_not_distributed():
    src = prog("""
s: f32[64] @ CudaSmemLinear
for w in cuda_threads(0, 2, unit=cuda_warp):
    for i in cuda_threads(0, 32, unit=cuda_thread):
        s[w * 32 + i] = A[i]
""", B=64)
    assert_ok(src)
    assert shardings(src).of("s").n_distributed == 0


def test_smem_per_cta_of_cluster_and_window_alias():
    src = prog("""
s: f32[2, 64] @ CudaSmemLinear
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    v = s[cta, :]
    for i in cuda_threads(0, 64, unit=cuda_thread):
        v[i] = A[i]
        B[i] = s[cta, i]
""", B=64, C=2)
    assert_ok(src)
    sh = shardings(src).of("s")
    assert sh.native_unit == cuda_cta_in_cluster
    assert [(d.extent, d.thread_pitch) for d in sh.dims] == [(2, 64)]
    assert_error(prog("""
s: f32[2, 64] @ CudaSmemLinear
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    v = s[0, :]
    for i in cuda_threads(0, 64, unit=cuda_thread):
        v[i] = A[i]  # <-
""", B=64, C=2), "distributed-memory", "Expected single variable name")


def test_scalar_commit_group_used_by_two_warpgroups_rejected():
    assert_error(prog("""
cg: barrier @ Sm90_WgmmaCommitGroup
for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
    Arrive(wgmma_async) >> cg  # <-
    Await(cg, cuda_generic_and_async_proxy, 0)
""", B=256), "distributed-memory", "Missing: wg")


def test_commit_group_per_warpgroup_exported():
    src = prog("""
cg: barrier[2] @ Sm90_WgmmaCommitGroup
for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
    Arrive(wgmma_async) >> cg[wg]
    Await(cg[wg], cuda_generic_and_async_proxy, 0)
""", B=256)
    assert_ok(src)
    sh = shardings(src).of("cg")
    assert sh.is_barrier and sh.native_unit == cuda_warpgroup
    assert [(d.extent, d.thread_pitch) for d in sh.dims] == [(2, 128)]


def test_mbarrier_per_cta_with_multicast():
    src = prog("""
z: barrier[2, 4 @ ring_buffer_by(2)] @ CudaMbarrier
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    for k in seq(0, 4):
        for i in cuda_threads(0, 1, unit=cuda_thread):
            Arrive(cuda_in_order) >> z[cta, k] >> z[:, k]
        for w in cuda_threads(0, 2, unit=cuda_warp):
            Await(z[cta, k], cuda_in_order, 0)
""", B=64, C=2)
    assert_ok(src)
    assert shardings(src).of("z").n_distributed == 1


def test_multicast_rules():
    body = """
z: barrier[2, 4 @ ring_buffer_by(2)] @ CudaMbarrier
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    for k in seq(0, 4):
        for i in cuda_threads(0, 1, unit=cuda_thread):
            Arrive(cuda_in_order) >> z[cta, k] >> {tgt}  # <-
        for w in cuda_threads(0, 2, unit=cuda_warp):
            Await(z[cta, k], cuda_in_order, 0)
"""
    assert_error(prog(body.format(tgt="z[cta, 0:2]"), B=64, C=2), "distributed-memory",
                 "Cannot multicast on non-distributed dimension idx[1]")
    assert_error(prog(body.format(tgt="z[1:2, k]"), B=64, C=2), "distributed-memory",
                 "Expected idx[0] to be 0:2")
