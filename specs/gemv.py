"""FP32 GEMV ``y = A @ x`` (``A: f32[M, K]`` row-major, ``x: f32[K]``, ``y: f32[M]``),
memory bound: proven for all sizes that satisfy the asserts.

``gemv(GemvConfig(...))`` builds one kernel; ``VARIANTS`` holds the shipped ones by name
(each also a module-level name, so ``exogpu-verify specs/`` proves it and ``exogpu-codegen
specs/`` builds it). A kernel streams ``A`` once (``4 M K`` bytes) and is as fast as HBM:

* a warp owns ``R`` consecutive rows; lane ``t`` reads 16 bytes (4 floats, one
  ``ld.global.cs.v4.f32``, evict-first: ``A`` is read once) of each row per 128-column chunk,
  so every load of the warp is 512 contiguous bytes of one row (fully coalesced);
* ``U`` chunks per step: each thread issues ``U (R + 1)`` independent 16-byte loads (``R``
  rows of ``A`` and the ``x`` chunk, a plain ``ld.global.v4.f32`` that hits L1/L2: every warp
  reads the same ``x``) before the first FMA needs one. With ``C`` warps per CTA and ``B``
  CTAs per SM that is ``32 C B U (R + 1) * 16`` bytes in flight per SM (R = 4, U = 2, C = 8,
  B = 4: 160 KB; H200 needs about 4.8 TB/s x ~1 us / 132 SMs = 36 KB);
* per lane, ``R x 4`` partial sums; at the end each row's 4 partials are added and the 32
  lanes reduced by a butterfly of 5 ``shfl.xor`` steps (``cuda_shfl_xor_sum_f32_m*``); lane 0
  writes ``y``;
* a task is one CTA's ``C R`` rows; the persistent grid is ``132 * B`` CTAs (``blocks_per_sm
  = B``), so ``M = 16384`` with ``R = 4`` is 512 tasks, a single wave.

Nothing is shared between threads except ``A``, ``x`` (read only) and ``y`` (each element
written by one lane), so the kernel needs no synchronization. The sequential meaning sums
each row in the order lane, chunk, vector element, then the butterfly; f32 rounding differs
from numpy's pairwise order (tests compare with a relative tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.cuda import *  # noqa: F403
from exogpu_verify.schedule import rename


class GemvConfig:
    """One GEMV variant: ``rows`` (R) rows per warp, ``unroll`` (U) 128-column chunks per step,
    ``warps`` (C) per CTA, ``blocks_per_sm`` (B) resident CTAs per SM."""

    rows: int = 4
    unroll: int = 2
    warps: int = 8
    blocks_per_sm: int = 4

    @property
    def name(self) -> str:
        return f"gemv_f32_r{self.rows}_u{self.unroll}_w{self.warps}_b{self.blocks_per_sm}"

    def check(self) -> None:
        if self.rows not in (1, 2, 4, 8) or self.unroll not in (1, 2, 4):
            raise ValueError(f"rows 1|2|4|8 and unroll 1|2|4, not {self.rows}/{self.unroll}")
        if self.warps not in (4, 8, 16) or not 1 <= self.blocks_per_sm <= 8 or \
                self.warps * self.blocks_per_sm > 64:
            raise ValueError(f"warps 4|8|16, 1..8 blocks per SM, at most 64 warps per SM, not "
                             f"{self.warps}/{self.blocks_per_sm}")


# see specs/gemm.py: annotations are strings under `from __future__ import annotations`
GemvConfig.__annotations__ = {k: int for k in GemvConfig.__annotations__}
GemvConfig = dataclass(frozen=True)(GemvConfig)


def gemv(cfg: GemvConfig):
    """The kernel for ``cfg`` (see the module docstring), named ``cfg.name``."""
    cfg.check()
    R, U, C, B = cfg.rows, cfg.unroll, cfg.warps, cfg.blocks_per_sm
    CR = C * R                      # rows per task (CTA)
    KC = 128 * U                    # columns per step

    @proc
    def gemv_f32(M: size, K: size, A: f32[M, K] @ CudaGmemLinear, x: f32[K] @ CudaGmemLinear,
                 y: f32[M] @ CudaGmemLinear):
        assert M % CR == 0
        assert K % KC == 0
        with CudaDeviceFunction(blockDim=32 * C, blocks_per_sm=B):
            for task in cuda_tasks(0, M / CR):
                acc: f32[C, 32, R, 4] @ CudaRmem
                xv: f32[C, 32, U, 4] @ CudaRmem
                av: f32[C, 32, U, R, 4] @ CudaRmem
                red: f32[C, 32] @ CudaRmem
                sm: f32[C, 32] @ CudaRmem
                for w in cuda_threads(0, C, unit=cuda_warp):
                    for t in cuda_threads(0, 32, unit=cuda_thread):
                        for r in seq(0, R):
                            for v in seq(0, 4):
                                acc[w, t, r, v] = 0.0
                        for ko in seq(0, K / KC):
                            for u in seq(0, U):
                                cuda_ld_v4_f32(xv[w, t, u, :],
                                               x[ko * KC + u * 128 + t * 4:
                                                 ko * KC + u * 128 + t * 4 + 4])
                                for r in seq(0, R):
                                    cuda_ld_v4_cs_f32(av[w, t, u, r, :],
                                                      A[task * CR + w * R + r,
                                                        ko * KC + u * 128 + t * 4:
                                                        ko * KC + u * 128 + t * 4 + 4])
                            for u in seq(0, U):
                                for r in seq(0, R):
                                    for v in seq(0, 4):
                                        acc[w, t, r, v] += av[w, t, u, r, v] * xv[w, t, u, v]
                    for r in seq(0, R):
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            red[w, t] = (acc[w, t, r, 0] + acc[w, t, r, 1]) + \
                                (acc[w, t, r, 2] + acc[w, t, r, 3])
                        cuda_shfl_xor_sum_f32_m16(sm[w, :], red[w, :])
                        cuda_shfl_xor_sum_f32_m8(red[w, :], sm[w, :])
                        cuda_shfl_xor_sum_f32_m4(sm[w, :], red[w, :])
                        cuda_shfl_xor_sum_f32_m2(red[w, :], sm[w, :])
                        cuda_shfl_xor_sum_f32_m1(sm[w, :], red[w, :])
                        for t in cuda_threads(0, 32, unit=cuda_thread):
                            if t == 0:
                                y[task * CR + w * R + r] = sm[w, t]

    return rename(gemv_f32, cfg.name)


VARIANT_CONFIGS = [
    GemvConfig(4, 2, 8, 4),
    GemvConfig(2, 4, 8, 4),
    GemvConfig(8, 1, 4, 8),
]
VARIANTS = {c.name: gemv(c) for c in VARIANT_CONFIGS}
globals().update(VARIANTS)
VERIFY_SIZES = {"M": 64, "K": 512}
