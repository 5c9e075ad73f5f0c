"""Codegen health of the GEMM family (``exogpu_codegen/health.py``): every variant of
``specs/gemm.py`` builds for sm_90a with a 0-byte stack frame, no spills and no ptxas
performance warning, and its SASS issues the expected HGMMA shape back to back (one
scoreboard wait per commit group), waits with ``WARPGROUP.DEPBAR.LE gsb0, 1`` in the main loop,
never touches local memory (no LDL/STL), uses named barriers for the consumer epilogue and no
``MEMBAR.ALL.GPU`` (except the cluster variant's remote mbarrier arrives). Needs nvcc, cuobjdump and nvdisasm (PyPI ``nvidia-cuda-cuobjdump``,
``nvidia-cuda-nvdisasm``): in CI (``CI`` set) a missing tool fails instead of skipping."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from codegen_cases import HAVE_NVCC, ROOT, load_module

from exogpu_codegen import compile
from exogpu_codegen.cli import main
from exogpu_codegen.health import check_health, expect_wgmma_pipeline, sass_tools

G = load_module("specs/gemm.py")
ALL = {**G.VARIANTS, **G.UNPROVEN}
CONFIGS = {c.name: c for c in G.VARIANT_CONFIGS + G.UNPROVEN_CONFIGS}


def _tools_or_skip():
    if not HAVE_NVCC:
        if os.environ.get("CI"):
            pytest.fail("nvcc is not on PATH in CI: the GEMM health checks cannot run")
        pytest.skip("nvcc is not installed")
    if sass_tools() is None:
        msg = ("cuobjdump/nvdisasm not found: pip install nvidia-cuda-cuobjdump "
               "nvidia-cuda-nvdisasm (the test extra installs them)")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def builds(cache_dir):
    _tools_or_skip()

    def one(item):
        name, p = item
        k = compile(p, unchecked=True, health="warn")
        return name, (k, check_health(k.build))

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
        return dict(ex.map(one, ALL.items()))


def _expected(cfg):
    t = "BF16" if cfg.dtype == "bf16" else "TF32"
    kn = 16 if cfg.dtype == "bf16" else 8
    n = 128 if cfg.schedule == "pingpong" else cfg.tile_n
    per_kstep = (128 // (2 if cfg.dtype == "bf16" else 4)) // kn
    group = per_kstep * (2 if cfg.schedule == "pingpong" else 1)  # two m64 blocks per wg
    return f"HGMMA.64x{n}x{kn}.F32.{t}", group


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ALL))
def test_ptxas_report_is_clean(builds, name):
    k, h = builds[name]
    (r,) = k.resources
    assert (r.stack_bytes, r.spills, r.warnings) == (0, 0, ()), r
    assert h.ok, [i.message for i in h.issues]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ALL))
def test_sass_wgmma_pipeline(builds, name):
    k, h = builds[name]
    assert h.sass_checked, h.note
    (s,) = h.sass.values()
    shape, group = _expected(CONFIGS[name])
    assert expect_wgmma_pipeline(s, {shape}, group, 1) == []
    assert set(s.hgmma) == {shape}
    if CONFIGS[name].cluster == 1:
        # proxy fences restricted to shared memory; in a cluster kernel the remote mbarrier
        # arrives (mbarrier.arrive.release.cluster.shared::cluster) are MEMBAR.ALL.GPU
        assert s.membar_gpu == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ALL))
def test_sass_named_barriers(builds, name):
    k, h = builds[name]
    (s,) = h.sass.values()
    ids = {1, 2} if CONFIGS[name].schedule == "pingpong" else {1}
    assert set(s.named_barriers) == {0} | ids


# ---------------------------------------------------------------- the rules themselves

def test_local_memory_fails_the_build(tmp_path, cache_dir, capsys):
    _tools_or_skip()
    prog = str(ROOT / "tests/codegen/progs/unhealthy_progs.py")
    rc = main([prog, "-o", str(tmp_path), "--unchecked"])
    err = capsys.readouterr().err
    assert rc == 1 and "not healthy" in err and "Traceback" not in err
    assert "stack frame" in err and "--allow-unhealthy" in err
    rc = main([prog, "-o", str(tmp_path), "--unchecked", "--allow-unhealthy"])
    cap = capsys.readouterr()
    assert rc == 0 and "health warning" in cap.err
    assert "B stack" in cap.out and (tmp_path / "local_memory.so").exists()


def test_compile_raises_on_local_memory_unless_warned(cache_dir):
    _tools_or_skip()
    from exogpu_verify.errors import ExoGpuError

    p = load_module("tests/codegen/progs/unhealthy_progs.py").local_memory
    with pytest.raises(ExoGpuError) as e:
        compile(p, unchecked=True)
    assert e.value.kind == "usage" and "not healthy" in e.value.diagnostic.message
    k = compile(p, unchecked=True, health="warn")
    kinds = {i.kind for i in k.health.issues}
    assert "stack" in kinds and "local-memory" in kinds
