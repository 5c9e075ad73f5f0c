"""The GEMM library schedule (``exogpu_verify.kernels.gemm``, walked through by
examples/scheduling/gemm_library_schedule.py): from the naive spec to the cooperative and
ping-pong variants of specs/gemm.py and its 2x1-cluster variant, which are built by it. Each reached kernel is bitwise
equal to its spec, proven for all sizes, and has the statement structure of the kernel as
written directly (tests/schedule/gemm_reference.py, and ``_pingpong`` and
``_cooperative_cluster`` in specs/gemm.py: the
same instructions, synchronization and loops in the same places; iterator names and index
spelling aside); the walk-through documents match the script; the default kernel builds
healthy."""

from __future__ import annotations

import sys
import shutil

import pytest
from testlib import ROOT, load_path

from exogpu_verify import verify
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.printer import expr_str
from exogpu_verify.schedule import simplify, walkthrough

pytestmark = pytest.mark.slow

EX = ROOT / "examples" / "scheduling"
if str(EX) not in sys.path:  # the example scripts import their shared steps (gemm_steps.py)
    sys.path.insert(0, str(EX))


@pytest.fixture(scope="module")
def ex():
    return load_path(EX / "gemm_library_schedule.py")


@pytest.fixture(scope="module")
def lib():
    return load_path(ROOT / "specs" / "gemm.py")


@pytest.fixture(scope="module")
def ref():
    return load_path(ROOT / "tests" / "schedule" / "gemm_reference.py")


def written(lib, ref, cfg):
    """The kernel written directly for the schedule's ``cfg``."""
    s = cfg.shape
    return ref.cooperative(lib.GemmConfig(s.dtype, cfg.out, s.tile_n, s.stages, "cooperative",
                                          cfg.tiles, cfg.split_k, cfg.raster))


def skeleton(p):
    """Executable statements in order (kind, callee or timelines, nesting depth) and the
    allocations as a multiset: what a kernel does, without iterator names."""
    out, allocs = [], []

    def go(stmts, d):
        for s in stmts:
            if isinstance(s, N.Alloc):
                allocs.append((s.name, str(s.type.scalar),
                               tuple(expr_str(e) for e in s.type.shape), str(s.mem)))
            elif isinstance(s, N.BarrierAlloc):
                allocs.append((s.name, str(s.mech), len(s.dims)))
            elif isinstance(s, N.WindowStmt):
                allocs.append((s.name, str(s.special)))
            elif isinstance(s, N.Call):
                out.append((d, "call", s.callee.name, len(s.barriers)))
            elif isinstance(s, N.Fence):
                out.append((d, "fence", str(s.L1), str(s.L2)))
            elif isinstance(s, N.Arrive):
                out.append((d, "arrive", str(s.L1), len(s.targets)))
            elif isinstance(s, N.Await):
                out.append((d, "await", str(s.L2), s.N))
            elif isinstance(s, N.For):
                out.append((d, "for", type(s.mode).__name__, str(getattr(s.mode, "unit", ""))))
                go(s.body, d + 1)
            elif isinstance(s, N.If):
                out.append((d, "if"))
                go(s.body, d + 1)
                go(s.orelse, d + 1)
            elif isinstance(s, N.With):
                out.append((d, "with", str(s.ctx) if isinstance(s.ctx, N.CudaWarps) else
                            type(s.ctx).__name__))
                go(s.body, d + 1)
            else:
                out.append((d, type(s).__name__))

    go(p.body, 0)
    return out, sorted(allocs)


@pytest.mark.parametrize("doc, which", [
    ("gemm_library_walkthrough.md", "DEFAULT"), ("gemm_library_splitk_walkthrough.md", "SPLIT"),
    ("gemm_library_pingpong_walkthrough.md", "PINGPONG"),
    ("gemm_library_cluster_walkthrough.md", "CLUSTER")])
def test_walkthrough_matches_the_script(ex, doc, which):
    """Each walk-through document is what the script prints for its variant (``--markdown``,
    with ``--split-k 4``, ``--pingpong`` or ``--cluster``)."""
    cfg = getattr(ex, which)
    text = (EX / doc).read_text()
    gen = text.split("<!-- BEGIN GENERATED -->\n", 1)[1].split("<!-- END GENERATED -->", 1)[0]
    assert gen == walkthrough(ex.schedule_library(cfg if which == "DEFAULT" else cfg[0]))


@pytest.mark.parametrize("i", range(5))
def test_reaches_the_library_variant(ex, lib, ref, i):
    cfg = ex.LIBRARY[i]
    steps = ex.schedule_library(cfg)
    final = steps[-1][1]
    assert not any(r.unsafe for r in final.provenance)
    assert lib.VARIANTS[cfg.name] == final  # specs/gemm.py ships what the schedule reaches
    assert skeleton(simplify(final)) == skeleton(simplify(written(lib, ref, cfg)))
    n = cfg.shape.tile_n * cfg.tiles * 2
    assert ex.check_equal(steps[0][1], final, sizes=(("M", 128), ("N", n),
                                                    ("K", 2 * cfg.shape.kb)))
    r = verify(final)
    assert r.verdict == "proven", [str(d) for d in r.diagnostics]


@pytest.mark.parametrize("i", range(2))
def test_reaches_the_split_k_variant(ex, lib, ref, i):
    """Split-K (GemmConfig(..., "cooperative", 1, split_k=KS)): the same statements as the
    library variant (host memset, slice task loop, TMA reduce-add), proven for all sizes; its
    two reassociations are the only unsafe steps, and the interpreter checks each side of
    them bitwise (the spec before, the split-K summation order after)."""
    cfg = ex.SPLIT[i]
    steps = ex.schedule_library(cfg)
    final = steps[-1][1]
    unsafe = [r for r in final.provenance if r.unsafe]
    assert [r.name for r in unsafe] == ["reorder_loops", "stage_mem"]
    assert all("reassociation" in r.checked for r in unsafe)
    assert unsafe[0].args.startswith("'for kt in seq(0, K / ") and "True" in unsafe[1].args
    assert lib.VARIANTS[cfg.name] == final  # specs/gemm.py ships what the schedule reaches
    assert skeleton(simplify(final)) == skeleton(simplify(written(lib, ref, cfg)))
    assert ex.check_split_k(cfg, steps, (("M", 128), ("N", 256), ("K", 128 * cfg.split_k)))
    r = verify(final)
    assert r.verdict == "proven", [str(d) for d in r.diagnostics]


def test_reaches_the_pingpong_variant(ex, lib):
    """Ping-pong (GemmConfig(..., "pingpong", 4)): tile ``j`` is warpgroup ``j % 2``'s; the
    schedule reaches the statements of the kernel as written directly (``_pingpong``), every
    step bitwise equal to the spec, no unsafe step, proven for all sizes."""
    cfg = ex.PINGPONG[0]
    steps = ex.schedule_library(cfg)
    final = steps[-1][1]
    assert not any(r.unsafe for r in final.provenance)
    guards = [r for r in final.provenance if r.name == "add_loop" and "guard" in r.checked]
    assert len(guards) == 3 and all("j % 2" in r.checked for r in guards)  # zero, mma, epilogue
    assert lib.VARIANTS[cfg.name] == final  # specs/gemm.py ships what the schedule reaches
    s = cfg.shape
    direct = lib._pingpong(lib.GemmConfig(s.dtype, cfg.out, s.tile_n, s.stages, "pingpong",
                                          cfg.tiles, cfg.split_k, cfg.raster))
    assert skeleton(simplify(final)) == skeleton(simplify(direct))
    for desc, p in steps:
        assert ex.check_equal(steps[0][1], p, sizes=(("M", 128), ("N", 512), ("K", 128))), desc
    r = verify(final)
    assert r.verdict == "proven", [str(d) for d in r.diagnostics]


def test_reaches_the_cluster_variant(ex, lib):
    """The 2x1 cluster (GemmConfig(..., cluster=2)): B multicast by ``replace`` of its
    per-CTA staging loop; the schedule reaches the statements of the kernel as written
    directly (``_cooperative_cluster``), every step bitwise equal to the spec, no unsafe
    step, proven for all sizes."""
    cfg = ex.CLUSTER[0]
    steps = ex.schedule_library(cfg)
    final = steps[-1][1]
    assert not any(r.unsafe for r in final.provenance)
    mc = [r for r in final.provenance if r.name == "replace" and "multicast" in r.args]
    assert len(mc) == 1, [r.args for r in final.provenance if r.name == "replace"]
    assert lib.VARIANTS[cfg.name] == final  # specs/gemm.py ships what the schedule reaches
    s = cfg.shape
    direct = lib._cooperative_cluster(lib.GemmConfig(
        s.dtype, cfg.out, s.tile_n, s.stages, "cooperative", cfg.tiles, cfg.split_k,
        cfg.raster, cluster=2))
    assert skeleton(simplify(final)) == skeleton(simplify(direct))
    for desc, p in steps:
        assert ex.check_equal(steps[0][1], p, sizes=(("M", 256), ("N", 512), ("K", 128))), desc
    r = verify(final)
    assert r.verdict == "proven", [str(d) for d in r.diagnostics]


def test_reaches_the_b_kn_variant(lib):
    """B as K x N (GemmConfig(..., b_major="N"), ``C = A @ B``): the cooperative schedule
    with B's tiles staged N-major (``sB[n / 64, k, n % 64]``: ``divide_dim`` and
    ``rearrange_dim``), one TMA box of 64 columns per ``nb`` and wgmma's transposed B
    operand (``..._ss_mn_b``); every step bitwise equal to the spec ``C[i, j] += A[i, k] *
    B[k, j]``, no unsafe step, proven for all sizes; otherwise the default variant's
    statements."""
    from exogpu_verify.kernels.gemm import Config, schedule_library
    cfg = Config(b_major="N")
    steps = schedule_library(cfg)
    final = steps[-1][1]
    assert not any(r.unsafe for r in final.provenance)
    assert lib.VARIANTS[cfg.name] == final
    calls = [c[2] for c in skeleton(final)[0] if c[1] == "call"]
    assert calls.count("wgmma_m64n256k16_f32_bf16_ss_mn_b") == 1
    assert calls.count("tma_load_2d_bf16") == 2  # A's box, and B's inside the loop over nb
    default = [c[2] for c in skeleton(lib.VARIANTS["gemm_bf16_f32_128x256_s4_coop_g2"])[0]
               if c[1] == "call"]
    assert [c.replace("_mn_b", "") for c in calls] == default
    from gemm_steps import check_equal
    for desc, p in steps:
        assert check_equal(steps[0][1], p, sizes=(("M", 128), ("N", 512), ("K", 128))), desc
    r = verify(final)
    assert r.verdict == "proven", [str(d) for d in r.diagnostics]


def test_every_step_bitwise_equal(ex):
    steps = ex.schedule_library()
    for k, (desc, p) in enumerate(steps):
        K = 128 if k >= len(steps) - 4 else 64
        assert ex.check_equal(steps[0][1], p, sizes=(("M", 128), ("N", 512), ("K", K))), desc


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_default_kernel_builds_healthy(ex):
    from exogpu_codegen.build import build
    from exogpu_codegen.generate import generate

    k = ex.gemm_bf16_f32_128x256_s4_coop_g2_scheduled
    g = generate(k, unchecked=True)
    b = build(g.source, k.name, "sm_90a", dynamic_smem={x.name: x.smem_bytes for x in g.kernels})
    (res,) = b.resources
    assert (res.stack_bytes, res.spill_stores, res.spill_loads) == (0, 0, 0)
    assert not any("C7514" in w for w in res.warnings)
