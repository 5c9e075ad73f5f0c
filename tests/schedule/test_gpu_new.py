"""update_loop_mode and set_trailing_barrier_expr: annotations (the sequential meaning is
unchanged, checked by the interpreter) with located refusals."""

from __future__ import annotations

import pytest
from sched_util import P, last, same

from exogpu_verify.ir.units import cuda_thread, cuda_warp
from exogpu_verify.schedule import (SchedulingError, divide_loop, set_trailing_barrier_expr,
                                    update_loop_mode)
from test_defects import TMA_SRC, THREADS, _tma_env


def test_update_loop_mode_unit_and_unroll():
    from exogpu_verify import verify

    p = divide_loop(P(THREADS), "t", 32, ["w", "l"], perfect=True)
    p1 = update_loop_mode(p, "w", unit=cuda_warp)
    assert "cuda_threads(0, 8, unit=cuda_warp)" in str(p1)
    same(p, p1, {"N": 512})
    assert verify(p1).verdict == "proven"
    q = P("""
def f(A: f32[8], y: f32[8]):
    for i in seq(0, 8):
        y[i] = A[i]
""")
    q1 = update_loop_mode(q, "i", pragma_unroll=4)
    assert "seq(0, 8, pragma_unroll=4)" in str(q1) and "annotation" in last(q1).checked
    same(q, q1, {})
    with pytest.raises(SchedulingError, match="has no unit") as e:
        update_loop_mode(q, "i", unit=cuda_thread)
    assert e.value.line == q.find_loop("i").node().srcinfo.line
    with pytest.raises(SchedulingError, match="pragma_unroll applies to seq"):
        update_loop_mode(p, "w", pragma_unroll=2)


def test_set_trailing_barrier_expr():
    from exogpu_verify.ir.memories import CudaMbarrier, Sm90_SmemSwizzled
    from exogpu_verify.ir.types import bf16
    from exogpu_verify.platforms.sm90 import Sm90_tma_load
    from exogpu_verify.schedule import insert_barrier_alloc, replace, stage_mem

    p = P(TMA_SRC, _tma_env())
    p = stage_mem(p, p.find_loop("i"), "tA[128 * io:128 * io + 128, 64 * ko:64 * ko + 64]",
                  "sA", mem=Sm90_SmemSwizzled(128))
    p = insert_barrier_alloc(p, p.find("sA : _").after(), "bar", [], CudaMbarrier)
    p = insert_barrier_alloc(p, p.find("bar : _").after(), "bar2", [2], CudaMbarrier)
    p = replace(p, p.find("bar2 : _").next(), Sm90_tma_load(2, bf16), barrier="bar")
    p1 = set_trailing_barrier_expr(p, "tma_load_2d_bf16(_)", "bar2[1]")
    assert ">> bar2[1]" in str(p1)
    same(p, p1, {"M": 128, "K": 64})
    with pytest.raises(SchedulingError, match="needs one"):
        set_trailing_barrier_expr(p, "tma_load_2d_bf16(_)", [])
    with pytest.raises(SchedulingError, match="bad barrier expression"):
        set_trailing_barrier_expr(p, "tma_load_2d_bf16(_)", "sA[0]")
