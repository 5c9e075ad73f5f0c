"""Launch resources (kind ``resource``): threads per CTA, cluster size (with the non-portable
opt-in), shared memory from the static layout codegen emits, setmaxnreg values and the
register pool, named barriers; and the setmaxnreg instructions' register counts."""

from __future__ import annotations

import re

import pytest
from pre_helpers import accepted_both, parse, refuted_both

from exogpu_verify import verify
from exogpu_verify.analysis import analyze
from exogpu_verify.analysis.smem_layout import kernel_smem_layouts

LAUNCH = '''
@proc
def k(A: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction({cfg}):  # <-
        for t in cuda_tasks(0, 1):
            s: f32[{cl}, {smem}] @ CudaSmemLinear
            for c in cuda_threads(0, {cl}, unit=cuda_cta_in_cluster):
                for i in cuda_threads(0, 32, unit=cuda_thread):
                    s[c, i] = A[i]
            Fence(cuda_in_order, cuda_in_order)
'''


def launch(cfg: str, smem: int = 64) -> str:
    m = re.search(r"clusterDim=(\d+)", cfg)
    return LAUNCH.format(cfg=cfg, smem=smem, cl=int(m.group(1)) if m else 1)


def test_block_of_more_than_1024_threads():
    refuted_both(launch("blockDim=2048"), "resource", None, "blockDim 2048 exceeds the 1024")
    accepted_both(launch("blockDim=1024"), {})


def test_cluster_of_16_needs_the_non_portable_opt_in():
    d = refuted_both(launch("blockDim=128, clusterDim=16"), "resource", None,
                     "clusterDim 16 exceeds the 8 CTAs of a portable cluster")
    assert "non_portable_cluster=True" in d.hint
    accepted_both(launch("blockDim=128, clusterDim=8"), {})
    accepted_both(launch("blockDim=128, clusterDim=16, non_portable_cluster=True"), {})
    refuted_both(launch("blockDim=128, clusterDim=32, non_portable_cluster=True"), "resource",
                 None, "clusterDim 32 exceeds the 16 CTAs")


def test_shared_memory_over_227_kb():
    # 58112 f32 = 232448 bytes: exactly the limit; one more element is over
    accepted_both(launch("blockDim=128", smem=58112), {})
    d = refuted_both(launch("blockDim=128", smem=58113), "resource", None,
                     "needs 232452 bytes per CTA")
    assert "232448" in d.message


def test_shared_memory_of_several_ctas_per_sm():
    refuted_both(launch("blockDim=128, blocks_per_sm=2", smem=29000), "resource", None,
                 "2 CTAs per SM need")
    accepted_both(launch("blockDim=128, blocks_per_sm=2", smem=28000), {})


def test_threads_per_sm():
    refuted_both(launch("blockDim=1024, blocks_per_sm=4"), "resource", None,
                 "exceed the 2048 resident threads")


WS = '''
@proc
def k(A: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(warp_config=[CudaWarpConfig("producer", {np}{dec}), CudaWarpConfig("consumer", {nc}{inc})]):  # <-
        for t in cuda_tasks(0, 1):
            s: f32[64] @ CudaSmemLinear
            with CudaWarps(name="producer"):
                for i in cuda_threads(0, 32, unit=cuda_thread):
                    s[i] = A[i]
            Fence(cuda_in_order, cuda_in_order)
'''


def ws(np=4, nc=8, dec=40, inc=232) -> str:
    return WS.format(np=np, nc=nc, dec=f", setmaxnreg_dec={dec}" if dec is not None else "",
                     inc=f", setmaxnreg_inc={inc}" if inc is not None else "")


def test_setmaxnreg_budgets_of_the_gemm_fit_the_pool_exactly():
    # 384 threads: 168 registers each at launch; 128 x 40 + 256 x 232 = 64512 = 384 x 168
    accepted_both(ws(), {})


def test_setmaxnreg_over_the_register_pool():
    d = refuted_both(ws(inc=240), "resource", None, "after setmaxnreg the warp groups hold "
                     "66560 registers")
    assert "pool of 64512" in d.message


@pytest.mark.parametrize("dec,inc,msg", [
    (20, 232, "setmaxnreg_dec=20: setmaxnreg takes a register count in [24, 256]"),
    (40, 236, "setmaxnreg_inc=236: setmaxnreg takes a register count in [24, 256] that is a "
              "multiple of 8"),
    (40, 264, "setmaxnreg_inc=264"),
    (176, 232, "setmaxnreg_dec=176 is more than the 168 registers"),
    (40, 160, "setmaxnreg_inc=160 is less than the 168 registers"),
])
def test_setmaxnreg_values(dec, inc, msg):
    refuted_both(ws(dec=dec, inc=inc), "resource", None, msg)


def test_setmaxnreg_needs_whole_warpgroups():
    refuted_both(ws(np=1, nc=8), "resource", None, "warps [0, 1), but setmaxnreg is executed "
                 "by all 4 warps of a warpgroup")
    accepted_both(ws(np=1, nc=8, dec=None, inc=None), {})


SETMAXNREG_CALL = '''
@proc
def k(A: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for t in cuda_tasks(0, 1):
            for wg in cuda_threads(0, 1, unit=cuda_warpgroup):
                setmaxnreg_dec({n})  # <-
'''


def test_setmaxnreg_instruction_register_count():
    from exogpu_verify.platforms.cuda import setmaxnreg_dec

    refuted_both(SETMAXNREG_CALL.format(n=100), "resource", None, "setmaxnreg_dec(100): "
                 "setmaxnreg.dec takes a register count in [24, 256] that is a multiple of 8",
                 setmaxnreg_dec=setmaxnreg_dec)
    accepted_both(SETMAXNREG_CALL.format(n=96), {}, setmaxnreg_dec=setmaxnreg_dec)


NAMED = '''
@proc
def k(A: f32[1024] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=1024):
        for t in cuda_tasks(0, 1):
            s: f32[1024] @ CudaSmemLinear
            for w in cuda_threads(0, {n}, unit={unit}):
                Fence(cuda_in_order, cuda_in_order)  # <-
            Fence(cuda_in_order, cuda_in_order)
'''


def test_named_barriers_within_16_per_cta():
    # 16 pairs of warps fencing separately: 16 named barriers plus the CTA barrier (id 0)
    refuted_both(NAMED.format(n=16, unit="2 * cuda_warp"), "resource", None,
                 "needs a named barrier beyond the hardware's 15")
    r = accepted_both(NAMED.format(n=8, unit="4 * cuda_warp"), {})
    assert any("hardware barriers per CTA 9" in f.fact for f in r.extra["facts"])
    # single warps synchronize with __syncwarp: no named barrier
    r = accepted_both(NAMED.format(n=32, unit="cuda_warp"), {})
    assert any("hardware barriers per CTA 1" in f.fact for f in r.extra["facts"])


def test_smem_layout_is_the_one_codegen_emits():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from gemm_kernels import gemm

    info = analyze(gemm)
    [kl] = kernel_smem_layouts(gemm, info.distributed)
    # mbarriers first (2 rings of 4), then sA (4 x 128 x 64 bf16) and sB (4 x 256 x 64 bf16)
    # in the main loop; the epilogue's C_smem reuses the same bytes
    assert kl.layout.size == 1024 + 65536 + 131072
    assert kl.layout.bytes_needed == kl.layout.size + 1024
    assert verify(gemm, mode="symbolic").verdict == "proven"


@pytest.mark.parametrize("groups,msg", [
    ('CudaWarpConfig("p", 4, setmaxnreg_dec=41), CudaWarpConfig("c", 4)', "multiple of 8"),
    ('CudaWarpConfig("p", 4, setmaxnreg_dec=16), CudaWarpConfig("c", 4)', "[24, 256]"),
    ('CudaWarpConfig("p", 2, setmaxnreg_dec=40), CudaWarpConfig("c", 6, setmaxnreg_inc=232)',
     "warps [0, 2), but setmaxnreg is executed by all 4 warps of a warpgroup"),
    ('CudaWarpConfig("p", 4, setmaxnreg_dec=40), CudaWarpConfig("c", 4, setmaxnreg_inc=40)',
     "setmaxnreg_inc=40 is less than the 256 registers per thread the launch gives"),
    ('CudaWarpConfig("p", 1, setmaxnreg_dec=40), CudaWarpConfig("c", 2)',
     "warps [0, 1), but setmaxnreg"),
])
def test_warp_config_setmaxnreg_rules(groups, msg):
    # (these were collective-analysis rules; they are launch resources)
    src = WS.replace('[CudaWarpConfig("producer", {np}{dec}), CudaWarpConfig("consumer", '
                     '{nc}{inc})]', f"[{groups}]").replace('name="producer"',
                                                         f'name="{groups.split(chr(34))[1]}"')
    refuted_both(src, "resource", None, msg)
