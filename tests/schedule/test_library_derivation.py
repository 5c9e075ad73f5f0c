"""specs/gemm.py ships every GEMM variant as scheduled from the naive matmul
(``exogpu_verify.kernels.gemm``): each variant's provenance starts at the naive spec
(sequential loops over host arrays, ``C[i, j] += A[i, k] * B[j, k]``), its unsafe steps are
exactly split-K's two reassociations, and ``derivation(cfg)`` ends at the shipped proc; the
configurations the schedule does not build (ping-pong or 2x1 cluster with bf16 C or split-K,
none shipped) are written directly and say so."""

from __future__ import annotations

import pytest
from testlib import ROOT, load_path

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.printer import expr_str
from exogpu_verify.ir.derivation import derivation, root


@pytest.fixture(scope="module")
def lib():
    return load_path(ROOT / "specs" / "gemm.py")


def _scheduled(cfg) -> bool:
    return (cfg.schedule == "cooperative" and cfg.cluster == 1) or \
        (cfg.out == "f32" and cfg.split_k == 1)


def _kinds(stmts, out):
    for s in stmts:
        out.add(type(s).__name__)
        for b in ("body", "orelse"):
            _kinds(getattr(s, b, ()) or (), out)
    return out


def test_cooperative_variants_are_scheduled_from_the_naive_matmul(lib):
    scheduled = [c for c in lib.VARIANT_CONFIGS if _scheduled(c)]
    assert scheduled == lib.VARIANT_CONFIGS and len(scheduled) == 10
    assert sum(c.schedule == "pingpong" for c in scheduled) == 1
    assert sum(c.cluster == 2 for c in scheduled) == 1
    assert sum(c.b_major == "N" for c in scheduled) == 1
    for cfg in scheduled:
        p = lib.VARIANTS[cfg.name]
        p1 = root(p)
        # p1 is the naive spec: loops, a zero-fill and the multiply-add, nothing parallel
        assert _kinds(p1.body, set()) <= {"Assert", "For", "Assign", "Reduce", "Alloc"}, \
            (cfg.name, _kinds(p1.body, set()))
        assert all(isinstance(s.mode, N.Seq) for s in _loops(p1.body)), cfg.name
        assert [q.name for q in p1.params] == ["M", "N", "K", "A", "B", "C"]
        assert [expr_str(e) for e in p1.params[4].type.shape] == \
            (["K", "N"] if cfg.b_major == "N" else ["N", "K"]), cfg.name
        line = derivation(p)
        assert line.startswith("derived from gemm") and "kernels/gemm.py" in line, line
        unsafe = [r.name for r in p.provenance if r.unsafe]
        assert unsafe == (["reorder_loops", "stage_mem"] if cfg.split_k > 1 else []), cfg.name
        assert len(p.provenance) >= 100, (cfg.name, len(p.provenance))
        assert lib.derivation(cfg)[-1][1] == p


def _loops(stmts):
    for s in stmts:
        if isinstance(s, N.For):
            yield s
        for b in ("body", "orelse"):
            yield from _loops(getattr(s, b, ()) or ())


def test_configurations_the_schedule_does_not_build(lib):
    """bf16 C and split-K ping-pong and 2x1-cluster kernels are written directly
    (``_pingpong``, ``_cooperative_cluster``): the schedule refuses them, saying why, and
    ``gemm`` still builds them."""
    from exogpu_verify.kernels.gemm import Config, Shape, schedule_library
    for out, ks in (("bf16", 1), ("f32", 2)):
        for sch, tn, cl, why in (("pingpong", 128, 1, "ping-pong schedule builds f32-output"),
                                 ("cooperative", 256, 2, "2x1-cluster schedule builds")):
            cfg = lib.GemmConfig("bf16", out, tn, 4, sch, 2, split_k=ks, cluster=cl)
            assert not lib.scheduled(cfg)
            with pytest.raises(ValueError, match="written directly"):
                lib.derivation(cfg)
            assert [r.name for r in lib.gemm(cfg).provenance] == ["rename"]
            with pytest.raises(ValueError, match=why):
                schedule_library(Config(Shape("bf16", tn, 4), 2, out, split_k=ks,
                                        consumers=sch, cluster=cl))
    with pytest.raises(ValueError, match="even number of tiles"):
        schedule_library(Config(Shape("bf16", 128, 4), 3, consumers="pingpong"))
    with pytest.raises(ValueError, match="cooperative|pingpong"):
        schedule_library(Config(consumers="pp"))
    with pytest.raises(ValueError, match="clusters of 1 or 2 CTAs"):
        schedule_library(Config(cluster=4))
