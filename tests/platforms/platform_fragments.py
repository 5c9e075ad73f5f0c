"""Independent numpy encodings of the PTX fragment layouts (PTX ISA 9.7.14.5 and 9.7.15.5).

Written from the ISA's row/column formulas per register index ``i`` (``g = lane >> 2``,
``t = lane % 4``), not from the instruction bodies, so tests compare two derivations.
"""

from __future__ import annotations

import numpy as np


def _gt(lane):
    return lane >> 2, lane % 4


def mma_a_k16(i, lane):  # m16n8k16 A, f16/bf16: (row, col)
    g, t = _gt(lane)
    return g + 8 * ((i // 2) % 2), 2 * t + (i % 2) + 8 * (i // 4)


def mma_b_k16(i, lane):  # m16n8k16 B: (k, n)
    g, t = _gt(lane)
    return 2 * t + (i % 2) + 8 * (i // 2), g


def mma_cd(i, lane):  # m16n8 accumulator: (row, col)
    g, t = _gt(lane)
    return g + 8 * (i // 2), 2 * t + (i % 2)


def mma_a_tf32(i, lane):  # m16n8k8 A, tf32
    g, t = _gt(lane)
    return g + 8 * (i % 2), t + 4 * (i // 2)


def mma_b_tf32(i, lane):  # m16n8k8 B, tf32: (k, n)
    g, t = _gt(lane)
    return t + 4 * i, g


def wgmma_d(i, warp, lane):  # m64nN accumulator: (row, col)
    g, t = _gt(lane)
    return 16 * warp + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * t + (i % 2)


def gather(mat, layout, nregs, warps=None):
    """Fragment array ``[32, nregs]`` (or ``[4, 32, nregs]``) of ``mat`` under ``layout``."""
    if warps is None:
        out = np.empty((32, nregs), mat.dtype)
        for lane in range(32):
            for i in range(nregs):
                out[lane, i] = mat[layout(i, lane)]
        return out
    out = np.empty((warps, 32, nregs), mat.dtype)
    for w in range(warps):
        for lane in range(32):
            for i in range(nregs):
                out[w, lane, i] = mat[layout(i, w, lane)]
    return out


def scatter(frag, layout, shape, warps=None):
    """Inverse of ``gather``: the logical matrix held by a fragment array."""
    out = np.full(shape, np.nan, np.float64)
    if warps is None:
        for lane in range(32):
            for i in range(frag.shape[1]):
                out[layout(i, lane)] = frag[lane, i]
    else:
        for w in range(warps):
            for lane in range(32):
                for i in range(frag.shape[2]):
                    out[layout(i, w, lane)] = frag[w, lane, i]
    return out


def tf32(x):
    """Round float32 values to tf32 (10 mantissa bits), so tensor-core products are exact."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32)
