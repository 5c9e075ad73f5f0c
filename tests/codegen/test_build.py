"""nvcc builds for sm_90a (and sm_80), the build cache, and ptxas resource reports.

Every case is built once per session in parallel (``built`` fixture in conftest.py).
"""

from __future__ import annotations

import os

import pytest
from codegen_cases import CASES, SPECS, case_id, get_proc, needs_nvcc

from exogpu_codegen import compile, generate
from exogpu_codegen.build import build, parse_ptxas
from exogpu_verify.errors import ExoGpuError

pytestmark = needs_nvcc


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_builds_for_sm90a(built, case):
    k = built[case[1]]
    if isinstance(k, Exception):
        raise k
    assert k.build.library.exists()
    assert k.generated.arch == "sm_90a"
    assert len(k.resources) == len(k.generated.kernels)


@pytest.mark.parametrize("case", SPECS, ids=case_id)
def test_specs_do_not_spill(built, case):
    k = built[case[1]]
    assert not isinstance(k, Exception), k
    for r in k.resources:
        assert r.spills == 0, f"{r.kernel} spills {r.spills} bytes"
        assert 0 < r.registers <= 255


def test_cache_hit_and_bypass(built, monkeypatch):
    k = built["vec_copy"]
    again = compile(k.proc, unchecked=True)
    assert again.build.cached and again.build.key == k.build.key
    assert again.build.resources == k.build.resources
    monkeypatch.setenv("EXOGPU_NO_CACHE", "1")
    fresh = compile(k.proc, unchecked=True)
    assert not fresh.build.cached and fresh.build.library != k.build.library


def test_cache_key_depends_on_arch_and_source(built):
    from exogpu_codegen.build import cache_key, find_nvcc
    nv = find_nvcc()
    src = built["vec_copy"].generated.source
    assert cache_key(src, "sm_90a", nv) != cache_key(src, "sm_80", nv)
    assert cache_key(src, "sm_90a", nv) != cache_key(src + "\n", "sm_90a", nv)


def test_sm80_build(cache_dir):
    k = compile(get_proc("tests/codegen/progs/codegen_progs.py", "warp_mma"), arch="sm_80",
                unchecked=True)
    assert k.build.arch == "sm_80" and k.resources[0].spills == 0


def test_missing_nvcc_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.delenv("EXOGPU_NVCC", raising=False)
    g = generate(get_proc("specs/vec_copy.py", "vec_copy"), unchecked=True)
    with pytest.raises(ExoGpuError) as e:
        build(g.source, "vec_copy", cache=False)
    assert e.value.kind == "usage" and "nvcc was not found" in e.value.diagnostic.message


def test_parse_ptxas():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN2ns18exo_kernel0_matmulENS_4ArgsE' for 'sm_90a'
ptxas info    : Function properties for _ZN2ns18exo_kernel0_matmulENS_4ArgsE
    8 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 44 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]
"""
    (r,) = parse_ptxas(log)
    assert (r.registers, r.spill_stores, r.spill_loads, r.stack_bytes, r.static_smem_bytes) == \
        (44, 4, 8, 8, 2048)
    assert r.kernel == "exo_kernel0_matmul" and r.spills == 12


def test_compile_time_budget_is_parallel(built):
    """All cases built (the session fixture builds in parallel)."""
    assert all(not isinstance(v, Exception) for v in built.values()), \
        {k: v for k, v in built.items() if isinstance(v, Exception)}
    assert os.environ.get("EXOGPU_CACHE_DIR")
