"""Value objects of the IR: units, timelines, memories print as spelled and compare by value."""

from __future__ import annotations

import pytest

from exogpu_verify import (CudaGmemLinear, CudaMbarrierPreArrive, CudaRmem, CudaSmemLinear,
                           DRAM, Sm90_SmemSwizzled, Sm90_tensorMap, cuda_cluster,
                           cuda_cta_in_cluster, cuda_generic_and_async_proxy, cuda_in_order,
                           cuda_quadpair, cuda_temporal, cuda_thread, cuda_threads_strided,
                           cuda_warp, cuda_warpgroup, ring_buffer_by, wgmma_async,
                           wgmma_async_instr, Sm80_cp_async_instr, cuda_in_order_instr)
from exogpu_verify.ir.memories import CudaBasicSmem
from exogpu_verify.ir.timelines import QUAL_TLS


def test_unit_equalities():
    assert cuda_warpgroup == 4 * cuda_warp
    assert cuda_warp == 32 * cuda_thread
    assert cuda_warp * 4 == cuda_warpgroup
    assert 2 * cuda_warpgroup == 8 * cuda_warp
    assert 2 * cuda_warpgroup != cuda_warpgroup
    assert str(2 * cuda_warpgroup) == "2 * cuda_warpgroup"
    assert str(2 * (2 * cuda_warp)) == "4 * cuda_warp"


def test_unit_thread_counts():
    assert cuda_warpgroup.threads(256) == 128
    assert cuda_cta_in_cluster.threads(384, 2) == 384
    assert cuda_cluster.threads(128, 4) == 512
    assert (2 * cuda_cta_in_cluster).threads(128, 4) == 256
    assert cuda_quadpair.threads(128) == 8
    assert cuda_threads_strided(4, 8).threads(128) == 4


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_unit_scaling_rejects_non_positive_ints(bad):
    with pytest.raises(TypeError):
        cuda_warp.scaled(bad)


def test_unscalable_units():
    with pytest.raises(TypeError, match="cannot be scaled"):
        2 * cuda_quadpair
    with pytest.raises(TypeError, match="cannot be scaled"):
        2 * cuda_cluster


def test_sync_timelines_full_and_temporal():
    assert cuda_in_order.implements(cuda_temporal)
    assert not cuda_temporal.implements(cuda_in_order)
    assert QUAL_TLS["c2"] in cuda_in_order.full
    assert QUAL_TLS["aret"] in cuda_in_order.temporal
    assert QUAL_TLS["aret"] not in cuda_in_order.full
    assert QUAL_TLS["aret"] in cuda_generic_and_async_proxy.full
    assert QUAL_TLS["wgS"] in wgmma_async.full
    assert str(cuda_in_order) == "cuda_in_order"


def test_memory_quals_and_printing():
    assert str(Sm90_SmemSwizzled(128)) == "Sm90_SmemSwizzled(128)"
    assert Sm90_SmemSwizzled(128) == Sm90_SmemSwizzled(128)
    assert Sm90_SmemSwizzled(64) != Sm90_SmemSwizzled(128)
    assert str(Sm90_tensorMap(128, 64, 64)) == "Sm90_tensorMap(128, 64, 64)"
    assert [q.abbrev for q in CudaSmemLinear.qual_tls(Sm80_cp_async_instr)] == ["sm80", "c2"]
    assert [q.abbrev for q in CudaRmem.qual_tls(cuda_in_order_instr)] == ["c1"]
    assert CudaGmemLinear.qual_tls(wgmma_async_instr)[0].abbrev == "wgS"
    assert DRAM.qual_tls(cuda_in_order_instr) is None
    assert CudaBasicSmem.accepts_memory(Sm90_SmemSwizzled(32))
    assert not CudaBasicSmem.accepts_memory(CudaGmemLinear)


@pytest.mark.parametrize("bad", [lambda: Sm90_SmemSwizzled(16), lambda: Sm90_tensorMap(100, 8),
                                 lambda: Sm90_tensorMap(0), lambda: ring_buffer_by(0),
                                 lambda: CudaMbarrierPreArrive(0)])
def test_bad_memory_arguments(bad):
    with pytest.raises(TypeError):
        bad()
