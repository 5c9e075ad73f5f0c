"""A TMA copy moves its box to or from one dense run of shared memory starting at the SMEM
window's first element (``cp.async.bulk.tensor``: the box is laid out innermost dimension
first, without gaps). Every rank's load, store and reduce-add therefore asserts every stride
of its SMEM window, not only the innermost ones: a window with a gap in an outer dimension
(``x[0:2, 0:1, ..., 0:4]`` of ``f32[2, 2, ..., 4]``) is an ``instruction`` error, since the
hardware would touch the rows in the gap (another warp's) and miss the ones after it."""

from __future__ import annotations

import pytest
from pre_helpers import parse

import exogpu_verify.platforms.sm90 as sm90
from exogpu_verify import verify


def _program(op: str, rank: int, gap: bool) -> str:
    ones = [1] * (rank - 3)
    smem = [2, 2 if gap else 1] + ones + [4]
    box = [2, 1] + ones + [4]
    gmem = ", ".join(str(n) for n in box)
    win = ", ".join(f"0:{n}" for n in box)
    sizes = ", ".join(str(n) for n in box)
    smem_t = ", ".join(str(n) for n in smem)
    full = ", ".join(":" for _ in box)
    name = f"tma_{op}_{rank}d_f32"
    if op == "load":
        body = f"""
            z: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
            with CudaWarps(0, 1):
                {name}({sizes}, x[{win}], tG[{win}]) >> z[0]
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    Arrive(cuda_temporal) >> z[0]
                Await(z[0], cuda_in_order, 0)
                for t in cuda_threads(0, 4, unit=cuda_thread):
                    D[t] = x[{', '.join(['0'] * (rank - 1))}, t]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)"""
    else:
        body = f"""
            tcg: barrier @ Sm90_TmaCommitGroup
            with CudaWarps(0, 1):
                for t in cuda_threads(0, 4, unit=cuda_thread):
                    x[{', '.join(['0'] * (rank - 1))}, t] = D[t]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
                {name}({sizes}, tG[{win}], x[{win}])
                Arrive(tma_to_gmem_async) >> tcg
                Await(tcg, cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)"""
    return f"""
@proc
def tma_box(G: f32[{gmem}] @ CudaGmemLinear, D: f32[4] @ CudaGmemLinear):
    tG = G[{full}] @ Sm90_tensorMap(0, {sizes})
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            x: f32[{smem_t}] @ CudaSmemLinear{body}
"""


CASES = [(op, rank) for op in ("load", "store", "reduce_add") for rank in (3, 4, 5)]


@pytest.mark.parametrize("op,rank", CASES)
def test_a_smem_window_with_an_outer_gap_is_refused(op, rank):
    name = f"tma_{op}_{rank}d_f32"
    p = parse(_program(op, rank, gap=True), **{name: getattr(sm90, name)})
    r = verify(p)
    assert r.verdict == "refuted", (r.verdict, r.reason)
    d = r.diagnostics[0]
    side = "dst" if op == "load" else "src"
    assert d.kind == "instruction" and f"stride({side}, 0)" in d.message, str(d)


@pytest.mark.parametrize("op,rank", CASES)
def test_the_dense_twin_is_proven(op, rank):
    name = f"tma_{op}_{rank}d_f32"
    p = parse(_program(op, rank, gap=False), **{name: getattr(sm90, name)})
    r = verify(p)
    assert r.verdict == "proven", (r.verdict, r.reason, [str(d) for d in r.diagnostics])
