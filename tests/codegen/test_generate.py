"""Generated CUDA text: golden files, structure, and clear refusals.

Update the golden files with ``EXOGPU_UPDATE_GOLDEN=1 pytest tests/codegen``. The proof-gate
lines of the header are left out of the comparison (they depend on whether certificates
exist in this installation).
"""

from __future__ import annotations

import os
import re

import pytest
from codegen_cases import CASES, GOLDEN, UNSUPPORTED, case_id, get_proc

from exogpu_codegen import generate
from exogpu_verify.errors import ExoGpuError
from testlib import verify_cached

_GATE = re.compile(r"^// (UNCHECKED:|this program was NOT|\(|proof:).*\n", re.M)


def normalize(src: str) -> str:
    return _GATE.sub("", src)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_golden(case):
    rel, name = case
    src = normalize(generate(get_proc(rel, name), unchecked=True).source)
    path = GOLDEN / f"{name}.cu"
    if os.environ.get("EXOGPU_UPDATE_GOLDEN") == "1" or not path.exists():
        if not os.environ.get("EXOGPU_UPDATE_GOLDEN") == "1":
            pytest.fail(f"missing golden file {path}; run with EXOGPU_UPDATE_GOLDEN=1")
        path.write_text(src)
    assert src == path.read_text(), f"{name}: generated code differs from {path}"


@pytest.mark.parametrize("case", UNSUPPORTED, ids=lambda c: c[1])
def test_refused_with_location(case):
    rel, name, kind, word = case
    p = get_proc(rel, name)
    with pytest.raises(ExoGpuError) as e:
        generate(p, unchecked=True)
    d = e.value.diagnostic
    assert d.kind == kind
    assert word in d.message
    assert d.line is not None and d.file is not None and d.file.endswith(rel.split("/")[-1])


def test_unchecked_is_stamped():
    src = generate(get_proc("specs/vec_copy.py", "vec_copy"), unchecked=True).source
    head = src.split("\n", 8)
    assert any(ln.startswith("// UNCHECKED") for ln in head)
    assert "program hash (sha256 of the printed IR)" in src


def test_structure_of_a_warp_specialized_kernel():
    src = generate(get_proc("tests/analysis/progs/hopper_gemm.py", "gemm_tile"),
                   unchecked=True).source
    assert "__launch_bounds__(384, 1)" in src
    assert "setmaxnreg.dec.sync.aligned.u32 40" in src
    assert "setmaxnreg.inc.sync.aligned.u32 232" in src
    # mbarrier rings: init counts from the Arrive statements (1 producer thread, 2 consumers)
    assert "exo_mbar_init(exo_smem_sh + 0u + 8u * (exo_i), 1)" in src
    assert "exo_mbar_init(exo_smem_sh + 32u + 8u * (exo_i), 2)" in src
    # pre-arrived ring: the producer's first waits are skipped
    assert "if (exo_j >= 0)" in src
    assert "wgmma.commit_group.sync.aligned" in src and "wgmma.wait_group.sync.aligned 0" in src
    assert "wgmma.fence.sync.aligned" in src
    assert "exo_align_smem<1024>" in src          # 128B-swizzled tiles
    assert "CU_TENSOR_MAP_SWIZZLE_128B" in src
    assert "__grid_constant__" in src and "cudaLaunchKernelEx" in src


def test_structure_of_a_cluster_kernel():
    src = generate(get_proc("tests/codegen/progs/codegen_progs.py", "cluster_multicast"),
                   unchecked=True).source
    assert "cudaLaunchAttributeClusterDimension" in src
    assert "exo_clusters * 2" in src
    assert "fence.mbarrier_init.release.cluster" in src
    assert "exo_mbar_arrive_cluster" in src             # multicast Arrive >> raw[:, k]
    assert "exo_mbar_init(exo_smem_sh + 0u + 8u * (exo_i), 64)" in src  # 32 lanes x 2 CTAs
    assert "blockIdx.x / 2" in src and "gridDim.x / 2" in src
    assert src.count("barrier.cluster.wait.acquire.aligned") >= 3  # setup, sync, shutdown


@pytest.mark.parametrize("name,expect", [
    ("transpose_smem", ['barrier.cta.sync 0', 'const int w = exo_tid / 32',
                        'const int c = (exo_tid - (32 * w))']),
    ("matmul_smem", ['float acc[1];', 'acc[0] +=', '#pragma unroll']),
    ("saxpy", ['const float a = exo_args.a;', 'double a_val']),
])
def test_spec_lowering(name, expect):
    rel = next(r for r, n in CASES if n == name)
    src = generate(get_proc(rel, name), unchecked=True).source
    for e in expect:
        assert e in src, e


def test_sync_lowering_table():
    """Each mechanism lowers to its instruction (reference notes 2.7)."""
    g = {n: generate(get_proc("tests/codegen/progs/codegen_progs.py", n), unchecked=True).source
         for n in ("cp_async_copy", "tma_store_scale", "mbar_pingpong")}
    assert "cp.async.commit_group" in g["cp_async_copy"]
    assert "cp.async.wait_group 0" in g["cp_async_copy"]
    assert "cp.async.bulk.commit_group" in g["tma_store_scale"]
    assert "cp.async.bulk.wait_group.read 0" in g["tma_store_scale"]
    # generic stores handed to TMA: proxy fence (shared memory only) around the CTA barrier
    assert re.search(r"fence\.proxy\.async\.shared::cta;.*\n.*barrier\.cta\.sync 0;.*\n"
                     r".*fence\.proxy\.async\.shared::cta;", g["tma_store_scale"])
    assert "exo_mbar_wait" in g["mbar_pingpong"] and "exo_mbar_arrive(" in g["mbar_pingpong"]
    assert "32 arrival(s) per phase" in g["mbar_pingpong"]


def test_sm80_refuses_hopper_features():
    with pytest.raises(ExoGpuError) as e:
        generate(get_proc("tests/analysis/progs/hopper_gemm.py", "gemm_tile"), arch="sm_80",
                 unchecked=True)
    assert e.value.kind == "usage" and "sm_90a" in e.value.diagnostic.message


def test_instr_is_not_a_kernel():
    from exogpu_verify.platforms.sm80 import Sm80_mma_zero_d
    with pytest.raises(ExoGpuError) as e:
        generate(Sm80_mma_zero_d, unchecked=True)
    assert e.value.kind == "usage"


BACKEND = [c for c in CASES if c[0].startswith("tests/")]


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c[1])
def test_backend_test_kernels_are_proven(case):
    """The backend's own test kernels run on the GPU too (bench/gpu_plan.py): each is proven
    for all sizes (``cluster_multicast`` once read its shared-memory tile through the generic
    proxy and let the next multicast overwrite it, and the task free it, with no proxy
    fence: refuted, now fenced)."""
    rel, name = case
    r = verify_cached(get_proc(rel, name), mode="symbolic")
    assert r.verdict == "proven", (name, r.summary())
