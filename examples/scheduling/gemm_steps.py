"""Reusable pieces of the GEMM schedules (``gemm_schedule.py``, ``gemm_library_schedule.py``):
the shape of a kernel, its naive spec, the wgmma fragment layout of an accumulator and the
loop nest over it, and the interpreter check. Ordinary Python functions over procedures."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from exogpu_verify import *  # noqa: F401,F403
from exogpu_verify.schedule import *  # noqa: F401,F403


class Shape(NamedTuple):
    """A kernel of the family: input type ``"bf16"`` or ``"tf32"`` (f32 data on tf32 tensor
    cores), CTA tile ``128 x tile_n``, ``stages`` SMEM slots in the ring."""

    dtype: str = "bf16"
    tile_n: int = 256
    stages: int = 4

    @property
    def T(self):
        return bf16 if self.dtype == "bf16" else f32

    @property
    def kb(self) -> int:  # K step: one 128-byte swizzle row of A and B
        return 128 // self.T.nbytes

    @property
    def name(self) -> str:
        return f"gemm_{self.dtype}_128x{self.tile_n}_s{self.stages}"


WARPS = [CudaWarpConfig("producer", 4, setmaxnreg_dec=40),
         CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)]


def spec(shape: Shape, tiles: int = 1, out: str = "f32", split_k: int = 1):
    """The naive spec ``C = A @ B.T`` (f32 accumulation) for ``shape``, with size rules for
    ``tiles`` output tiles per task and ``split_k`` K slices of whole K steps. With a bf16
    ``C`` the f32 accumulator is a scalar of the spec, rounded once when stored
    (accumulating in ``C`` would round at every step)."""
    T, NM, KB = shape.T, shape.tile_n * tiles, shape.kb * split_k
    if out == "f32":
        @proc
        def gemm(M: size, N: size, K: size, A: T[M, K], B: T[N, K], C: f32[M, N]):
            assert M % 128 == 0
            assert N % NM == 0
            assert K % KB == 0
            for i in seq(0, M):
                for j in seq(0, N):
                    C[i, j] = 0.0
                    for k in seq(0, K):
                        C[i, j] += A[i, k] * B[j, k]
        return gemm

    @proc
    def gemm_bf16(M: size, N: size, K: size, A: T[M, K], B: T[N, K], C: bf16[M, N]):
        assert M % 128 == 0
        assert N % NM == 0
        assert K % KB == 0
        for i in seq(0, M):
            for j in seq(0, N):
                D: f32
                D = 0.0
                for k in seq(0, K):
                    D += A[i, k] * B[j, k]
                C[i, j] = D
    return gemm_bf16


def fragment_layout(p, acc):
    """An accumulator ``acc: f32[128, N]`` indexed ``[row, col]`` becomes the wgmma
    fragment layout ``[wg, warp, lane, col / 8, row % 16 / 8, col % 2]`` with ``row = 64 wg +
    16 warp + 8 h + lane / 4`` and ``col = 8 nb + 2 (lane % 4) + j`` (PTX ISA wgmma D
    fragments): a relabeling of its elements."""
    p = divide_dim(p, acc, 0, 64)         # [wg, 64, N]
    p = divide_dim(p, acc, 1, 16)         # [wg, warp, 16, N]
    p = divide_dim(p, acc, 2, 8)          # [wg, warp, h, g, N]
    p = divide_dim(p, acc, 4, 8)          # [wg, warp, h, g, nb, 8]
    p = divide_dim(p, acc, 5, 2)          # [wg, warp, h, g, nb, t, j]
    p = rearrange_dim(p, acc, [0, 1, 3, 5, 4, 2, 6])  # [wg, warp, g, t, nb, h, j]
    p = mult_dim(p, acc, 2, 3)            # [wg, warp, lane = 4 g + t, nb, h, j]
    return simplify(p)


def fragment_loops(p, rows, cols, names):
    """A ``rows x cols`` (128 x N) nest becomes loops ``wg, warp, lane, nb, h, j`` over
    the fragment layout (the inverse map of ``fragment_layout``)."""
    wg, w, lane, nb, h, j = names
    p = divide_loop(p, rows, 64, [wg, f"{wg}_r"], perfect=True)
    p = divide_loop(p, f"{wg}_r", 16, [w, f"{w}_r"], perfect=True)
    p = divide_loop(p, f"{w}_r", 8, [h, f"{h}_g"], perfect=True)
    p = divide_loop(p, cols, 8, [nb, f"{nb}_r"], perfect=True)
    p = divide_loop(p, f"{nb}_r", 2, [f"{h}_t", j], perfect=True)
    for a, b in ((h, f"{h}_g"), (h, nb), (h, f"{h}_t"), (nb, f"{h}_t")):
        p = reorder_loops(p, f"{a} {b}")
    p = mult_loops(p, f"{h}_g {h}_t", lane)
    return simplify(p)


def span(first, last):
    """The block of statements from cursor ``first`` to cursor ``last`` (same block)."""
    return first.as_block().expand(0, last.path()[-1][1] - first.path()[-1][1])


def _np_type(t):
    import ml_dtypes

    return ml_dtypes.bfloat16 if t.name == "bf16" else np.float32


def inputs(p, sizes, seed=0):
    """``(M, N, K, A, B)``: random inputs of ``p`` at ``sizes`` (standard normal, in the
    parameters' types)."""
    rng = np.random.default_rng(seed)
    sz = dict(sizes)
    M, N, K = sz["M"], sz["N"], sz["K"]
    A = rng.standard_normal((M, K)).astype(_np_type(p.param("A").type.scalar))
    B = rng.standard_normal((N, K)).astype(_np_type(p.param("B").type.scalar))
    return M, N, K, A, B


def run(p, sizes, seed=0):
    """``p``'s C on the random inputs of ``check_equal`` (C starts as NaN)."""
    M, N, K, A, B = inputs(p, sizes, seed)
    C = np.full((M, N), np.nan, _np_type(p.param("C").type.scalar))
    interpret(p, M=M, N=N, K=K, A=A, B=B, C=C)
    return C


def check_equal(p0, p1, sizes=(("M", 128), ("N", 256), ("K", 128)), seed=0):
    """Run both procs on the same random inputs; the outputs must be bitwise equal."""
    return run(p0, sizes, seed).tobytes() == run(p1, sizes, seed).tobytes()


def split_k_reference(p, split_k: int, kb: int, sizes, seed=0):
    """What a split-K kernel computes on ``check_equal``'s inputs (f32 C), written
    independently of the IR: slice ``s`` sums the K steps ``s, s + split_k, ...`` (``kb``
    columns each, in order) in f32 from zero, and the slices are added in order into a C
    the host zeroed. The naive spec sums ``k = 0, 1, ...`` into C instead: the same sum in
    real arithmetic, a different rounding."""
    M, N, K, A, B = inputs(p, sizes, seed)
    A, B = A.astype(np.float32), B.astype(np.float32)
    C = np.zeros((M, N), np.float32)
    for s in range(split_k):
        D = np.zeros((M, N), np.float32)
        for kt in range(K // (kb * split_k)):
            for ki in range(kb):
                k = kb * (split_k * kt + s) + ki
                D += np.outer(A[:, k], B[:, k])  # products round in f32 (exact for bf16)
        C += D
    return C
