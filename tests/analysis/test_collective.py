"""Collective analysis rules (kind "collective"): tilings, warp specialization, units."""

from __future__ import annotations

import pytest

from analysis_helpers import assert_error, assert_ok

HEAD = """
def k(N: size, A: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim={B}, clusterDim={C}):
        for task in cuda_tasks(0, 1):
"""


def prog(body: str, B: int = 256, C: int = 1) -> str:
    ind = "            "
    lines = [ind + ln for ln in body.strip("\n").splitlines()]
    return HEAD.format(B=B, C=C) + "\n".join(lines) + "\n"


# -------------------------------------------------------------- tilings

def test_nested_tiling_accepted():
    assert_ok(prog("""
for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
    for w in cuda_threads(0, 4, unit=cuda_warp):
        for i in cuda_threads(0, 32, unit=cuda_thread):
            A[i] = 0.0
"""))


def test_fewer_threads_than_available_accepted():
    assert_ok(prog("""
for i in cuda_threads(0, 1, unit=cuda_thread):
    A[0] = 0.0
for q in cuda_threads(0, 3, unit=8 * cuda_thread):
    for i in cuda_threads(0, 5, unit=cuda_thread):
        A[i] = 0.0
"""))


def test_not_enough_threads_rejected():
    d = assert_error(prog("""
for wg in cuda_threads(0, 3, unit=cuda_warpgroup):  # <-
    pass
"""), "collective", "not enough threads")
    assert "needs 384 threads" in d.message and "'wg'" in d.message


def test_not_enough_threads_inside_a_warp_rejected():
    assert_error(prog("""
for w in cuda_threads(0, 8, unit=cuda_warp):
    for i in cuda_threads(0, 33, unit=cuda_thread):  # <-
        A[i] = 0.0
"""), "collective", "needs 33 threads")


def test_misaligned_warp_rejected():
    assert_error(prog("""
for a in cuda_threads(0, 2, unit=48 * cuda_thread):
    for w in cuda_threads(0, 1, unit=cuda_warp):  # <-
        pass
""", B=96), "collective", "alignment")


def test_unit_not_dividing_block_rejected():
    assert_error(prog("""
for a in cuda_threads(0, 2, unit=3 * cuda_warp):  # <-
    pass
"""), "collective", "alignment")


def test_ambiguous_tiling_across_ctas_rejected():
    assert_error(prog("""
for w in cuda_threads(0, 4, unit=cuda_warp):  # <-
    pass
""", C=2), "collective", "ambiguous")


def test_cta_then_warps_in_cluster_accepted():
    assert_ok(prog("""
for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    for w in cuda_threads(0, 4, unit=cuda_warp):
        for i in cuda_threads(0, 1, unit=cuda_thread):
            A[i] = 0.0
""", C=2))


def test_trivial_tiling_only_with_one_tile():
    assert_ok(prog("""
for c in cuda_threads(0, 1, unit=cuda_cta_in_cluster):
    for i in cuda_threads(0, 1, unit=cuda_thread):
        A[0] = 0.0
"""))
    assert_error(prog("""
for c in cuda_threads(0, 2, unit=cuda_cta_in_cluster):  # <-
    pass
"""), "collective", "not enough threads")


# -------------------------------------------------------------- warp specialization

WS = """
def k(N: size, A: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(warp_config=[{cfg}]):
        for task in cuda_tasks(0, 1):
"""
CFG = 'CudaWarpConfig("producer", 4, setmaxnreg_dec=40), CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)'


def ws(body: str, cfg: str = CFG) -> str:
    lines = ["            " + ln for ln in body.strip("\n").splitlines()]
    return WS.format(cfg=cfg) + "\n".join(lines) + "\n"


def test_named_warps_accepted():
    assert_ok(ws("""
with CudaWarps(name="producer"):
    with CudaWarps(0, 1):
        for i in cuda_threads(0, 1, unit=cuda_thread):
            A[0] = 0.0
with CudaWarps(4, 8, name="consumer"):
    for w in cuda_threads(0, 4, unit=cuda_warp):
        pass
"""))


def test_unknown_warp_name_rejected():
    assert_error(ws("""
with CudaWarps(name="loader"):  # <-
    pass
"""), "collective", "names no warp group")


def test_top_level_unnamed_with_several_groups_rejected():
    assert_error(ws("""
with CudaWarps(0, 2):  # <-
    pass
"""), "collective", "top-level CudaWarps must provide valid warp name")


def test_warp_range_out_of_group_rejected():
    assert_error(ws("""
with CudaWarps(2, 6, name="producer"):  # <-
    pass
"""), "collective", "out-of-range")


def test_nested_warps_may_not_change_name():
    assert_error(ws("""
with CudaWarps(name="producer"):
    with CudaWarps(0, 1, name="consumer"):  # <-
        pass
"""), "collective", "may not change")


def test_named_warps_under_sub_cta_loop_rejected():
    assert_error(ws("""
for wg in cuda_threads(0, 3, unit=cuda_warpgroup):
    with CudaWarps(name="consumer"):  # <-
        pass
"""), "collective", "requires CTA not to be subdivided")


def test_unnamed_warps_at_one_warp_is_trivial():
    assert_ok(prog("""
for w in cuda_threads(0, 8, unit=cuda_warp):
    with CudaWarps(0, 1):
        pass
"""))
    assert_error(prog("""
for w in cuda_threads(0, 8, unit=cuda_warp):
    with CudaWarps(0, 2):  # <-
        pass
"""), "collective", "trivial tiling")


# -------------------------------------------------------------- instruction and sync units

def test_instr_at_its_unit_accepted():
    assert_ok(prog("""
s: f32[128] @ CudaSmemLinear
for wg in cuda_threads(0, 1, unit=cuda_warpgroup):
    wg_op(s)
for w in cuda_threads(0, 1, unit=cuda_warp):
    warp_op(s[0:32])
"""))


def test_instr_wrong_unit_message_states_both():
    d = assert_error(prog("""
s: f32[128] @ CudaSmemLinear
for w in cuda_threads(0, 1, unit=cuda_warp):
    wg_op(s)  # <-
"""), "collective")
    assert d.message == ("wrong collective unit (need cuda_warpgroup: 128 threads) for "
                         "wg_op(): scope has 32 threads")


def test_instr_of_a_unit_that_cannot_tile_the_block_says_why():
    # 160 threads: warps 0-3 have a warpgroup's size, but warpgroups do not tile the block
    d = assert_error(prog("""
s: f32[128] @ CudaSmemLinear
with CudaWarps(0, 4):
    wg_op(s)  # <-
""", B=160), "collective")
    assert d.message.startswith("wrong collective unit (need cuda_warpgroup: 128 threads) "
                                "for wg_op(): scope has 128 threads (")
    assert "box 128 does not divide domain 160" in d.message, d.message
    assert "multiple of 128" in (d.hint or ""), d.hint


def test_instr_at_cta_scope_of_warp_unit_rejected():
    assert_error(prog("""
s: f32[128] @ CudaSmemLinear
warp_op(s[0:32])  # <-
"""), "collective", "need cuda_warp: 32 threads")


@pytest.mark.parametrize("loop", [
    "for i in cuda_threads(0, 1, unit=cuda_thread):",
    "for w in cuda_threads(0, 1, unit=cuda_warp):",
    "for c in cuda_threads(0, 1, unit=cuda_cta_in_cluster):",
])
def test_fence_scopes_accepted(loop):
    assert_ok(prog(loop + "\n    Fence(cuda_in_order, cuda_in_order)\n"))


def test_fence_at_cluster_and_warpgroup_scope_accepted_and_at_half_warp_rejected():
    assert_ok(prog("Fence(cuda_in_order, cuda_in_order)", C=2))
    # a warpgroup of a larger CTA fences with a named barrier (bar.sync id, 128)
    assert_ok(prog("""
for wg in cuda_threads(0, 1, unit=cuda_warpgroup):
    Fence(cuda_in_order, cuda_in_order)
"""))
    assert_error(prog("""
for h in cuda_threads(0, 2, unit=16 * cuda_thread):
    Fence(cuda_in_order, cuda_in_order)  # <-
"""), "collective", "matched no known case")


def test_wgmma_fence_needs_warpgroup():
    assert_ok(prog("""
for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
    Fence(wgmma_fence_1, wgmma_fence_2)
"""))
    assert_error(prog("""
for w in cuda_threads(0, 2, unit=cuda_warp):
    Fence(wgmma_fence_1, wgmma_fence_2)  # <-
"""), "collective", "128")


def test_commit_group_units():
    ok = """
s: f32[2, 128] @ CudaSmemLinear
cg: barrier[2] @ Sm90_WgmmaCommitGroup
for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
    wg_op(s[wg, :])
    Arrive(wgmma_async) >> cg[wg]
    Await(cg[wg], cuda_generic_and_async_proxy, 0)
"""
    assert_ok(prog(ok))
    assert_error(prog("""
s: f32[128] @ CudaSmemLinear
cg: barrier[8] @ Sm90_WgmmaCommitGroup
for w in cuda_threads(0, 8, unit=cuda_warp):
    Arrive(wgmma_async) >> cg[w]  # <-
    Await(cg[w], cuda_generic_and_async_proxy, 0)
"""), "collective", "requires cuda_warpgroup (128 threads)")


def test_sm80_commit_group_needs_one_thread():
    assert_error(prog("""
cg: barrier[8] @ Sm80_CommitGroup
for w in cuda_threads(0, 8, unit=cuda_warp):
    Arrive(Sm80_cp_async) >> cg[w]  # <-
    Await(cg[w], cuda_in_order, 0)
"""), "collective", "requires cuda_thread")


def test_mbarrier_needs_sub_cta_and_cluster_sync_needs_cluster():
    assert_error(prog("""
z: barrier[4 @ ring_buffer_by(2)] @ CudaMbarrier
for k in seq(0, 4):
    Arrive(cuda_in_order) >> z[k]  # <-
    Await(z[k], cuda_in_order, 0)
""", C=2), "collective", "within one CTA")
    assert_error(prog("""
cs: barrier @ CudaClusterSync
for c in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
    Arrive(cuda_in_order) >> cs  # <-
    Await(cs, cuda_in_order, 0)
""", C=2), "collective", "requires cuda_cluster")
    assert_ok(prog("""
cs: barrier @ CudaClusterSync
Arrive(cuda_in_order) >> cs
Await(cs, cuda_in_order, 0)
""", C=2))


def test_assignment_needs_single_thread():
    assert_error(prog("""
s: f32[32] @ CudaSmemLinear
for w in cuda_threads(0, 1, unit=cuda_warp):
    s[0] = 1.0  # <-
"""), "collective", "single thread")
    assert_ok(prog("""
s: f32[32] @ CudaSmemLinear
for w in cuda_threads(0, 1, unit=cuda_warp):
    for i in cuda_threads(0, 32, unit=cuda_thread):
        s[i] = 1.0
"""))
