"""Sm90 ``wgmma.mma_async`` families: m64nNk{8,16}, f32 accumulators (PTX ISA 9.7.15).

Register tiles are distributed over the executing warpgroup as ``[warp, lane, ...registers]``
(``distributed=(cuda_warp, cuda_thread)``), which is the PTX fragment layout
(PTX ISA 9.7.15.5.1 "Register Fragments"); with ``g = lane / 4``, ``t = lane % 4``:

* D, 64 x N f32 in ``Sm90_RmemMatrixD``: ``[4, 32, N/8, 2, 2]``,
  ``D[w, lane, nb, h, j] = D[16w + g + 8h, 8nb + 2t + j]`` (register ``4nb + 2h + j``).
* A from registers, 64 x 16 bf16/f16 in ``Sm90_RmemMatrixA``: ``[4, 32, 2, 2, 2]``,
  ``A[w, lane, kh, mh, j] = A[16w + g + 8mh, 2t + 8kh + j]``; tf32 (64 x 8): ``[4, 32, 2, 2]``,
  ``A[w, lane, kh, mh] = A[16w + g + 8mh, t + 4kh]``.
* A and B from SMEM are logical tiles, K-major: ``A[64, K]``, ``B[N, K]`` with ``K`` the
  native depth (16 for 16-bit types, 8 for tf32), in ``Sm90_SmemSwizzled(s)`` with rows of
  exactly ``s`` bytes (``assert stride(A, 0) == s / bytes``). Each lowers to a matrix
  descriptor (``exo_wgmma_desc``): start address of the window, leading byte offset 16
  (unused for swizzled K-major), stride byte offset ``8 * s`` (one 8-row swizzle atom),
  swizzle mode 1/2/3 for 128/64/32 bytes. Larger K is a sequence of calls on K-slices
  ``A[:, 16k:16k+16]`` (the descriptor start moves by 32 bytes inside the swizzle atom).

Accumulator zeroing is lazy, as on the hardware: ``wgmma_zero_m64n{N}(D)``
(``wgmma_zero_instr``) sets the tile's scale-d flag to 0 and the next wgmma on the tile uses
``scale-d = 0`` (D = A B) and sets it back to 1. Codegen convention: for a parameter ``D`` in
``Sm90_RmemMatrixD``, ``args["D_scale_d"]`` is an lvalue ``int`` holding that flag (one per
accumulator shard and thread, initialised to 1).
"""

from __future__ import annotations

from functools import lru_cache

from ..frontend.decorators import instr
from ..ir.memories import RMEM_QUALS, Memory, Sm90_SmemSwizzled, _freeze
from ..ir.timelines import wgmma_async_instr, wgmma_zero_instr
from ..ir.types import f32
from ..ir.units import cuda_thread, cuda_warp, cuda_warpgroup
from ._ptx import HELPERS_KEY, MMA_TYPE, renamed

Sm90_RmemMatrixA = Memory("Sm90_RmemMatrixA", (), "rmem", "cuda", cuda_thread,
                          _freeze({**RMEM_QUALS, "wgmma_async_instr": ("wgA",)}),
                          symbolic_extents=False)
Sm90_RmemMatrixD = Memory("Sm90_RmemMatrixD", (), "rmem", "cuda", cuda_thread,
                          _freeze({**RMEM_QUALS, "wgmma_async_instr": ("wgD", "wg0")}),
                          symbolic_extents=False)

_WG = (cuda_warp, cuda_thread)
_SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
N_VALUES = tuple(range(8, 257, 8))


def native_k(T) -> int:
    """K of one wgmma: 32 bytes of the input type (tf32 8, f16/bf16 16)."""
    return 32 // T.nbytes


def _check(T, N, swizzles=()):
    if T.name not in MMA_TYPE:
        raise TypeError(f"wgmma inputs are f32 (tf32), bf16 or f16, not {T}")
    if N not in N_VALUES:
        raise TypeError(f"wgmma N must be a multiple of 8 in [8, 256], not {N}")
    for s in swizzles:
        if s not in _SWIZZLE_MODE:
            raise TypeError(f"wgmma SMEM operands use a 32, 64 or 128-byte swizzle, not {s}")


def _wgmma_codegen(T, N: int, a_smem: bool, swa: int, swb: int):
    kn = native_k(T)
    t = MMA_TYPE[T.name]
    nd = N // 2

    def gen(a: dict) -> str:
        D, flag = a["D"], a["D_scale_d"]
        outs = [f'"+f"(({D})[{i}])' for i in range(nd)]
        dvec = "{" + ", ".join(f"%{i}" for i in range(nd)) + "}"
        pre = ""
        if a_smem:
            pre += (f"const uint64_t exo_da = exo_wgmma_desc({a['A']}, 16, {8 * swa}, "
                    f"{_SWIZZLE_MODE[swa]}); ")
            ins = ['"l"(exo_da)']
            aop = f"%{nd}"
        elif T.name == "f32":
            ins = [f'"r"(__float_as_uint(({a["A"]})[{i}]))' for i in range(4)]
            aop = "{" + ", ".join(f"%{nd + i}" for i in range(4)) + "}"
        else:
            ins = [f'"r"(exo_pack_b16x2(({a["A"]})[{2 * i}], ({a["A"]})[{2 * i + 1}]))'
                   for i in range(4)]
            aop = "{" + ", ".join(f"%{nd + i}" for i in range(4)) + "}"
        pre += (f"const uint64_t exo_db = exo_wgmma_desc({a['B']}, 16, {8 * swb}, "
                f"{_SWIZZLE_MODE[swb]}); ")
        ib = nd + len(ins)
        ins += ['"l"(exo_db)', f'"r"(int32_t({flag}))']
        # imm-scale-a, imm-scale-b = 1; 16-bit types also take transpose flags (0 = K-major),
        # one for each operand read through a descriptor
        tail = "1, 1"
        if T.name != "f32":
            tail += ", 0, 0" if a_smem else ", 0"
        ptx = ("{\\n.reg .pred exo_p;\\n"
               f"setp.ne.b32 exo_p, %{ib + 1}, 0;\\n"
               f"wgmma.mma_async.sync.aligned.m64n{N}k{kn}.f32.{t}.{t} "
               f"{dvec}, {aop}, %{ib}, exo_p, {tail};\\n}}\\n")
        return (f'{{ {pre}asm volatile("{ptx}" : {", ".join(outs)} : {", ".join(ins)} : '
                f'"memory"); {flag} = 1; }}')
    return gen


# The bodies: m in [0, 64), n in [0, N), k in [0, K); D's index is the fragment layout above.
def _ss_16(T, N, swa, swb):
    NB, KN, SA, SB = N // 8, 16, swa // 2, swb // 2

    @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG},
           codegen=_wgmma_codegen(T, N, True, swa, swb), includes=(HELPERS_KEY,))
    def wgmma_ss(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                 A: [T][64, KN] @ Sm90_SmemSwizzled(swa), B: [T][N, KN] @ Sm90_SmemSwizzled(swb)):
        assert stride(A, 0) == SA
        assert stride(B, 0) == SB
        for m in seq(0, 64):
            for n in seq(0, N):
                for k in seq(0, KN):
                    D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                        A[m, k] * B[n, k])
    return wgmma_ss


def _ss_tf32(T, N, swa, swb):
    NB, KN, SA, SB = N // 8, 8, swa // 4, swb // 4

    @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG},
           codegen=_wgmma_codegen(T, N, True, swa, swb), includes=(HELPERS_KEY,))
    def wgmma_ss(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                 A: [f32][64, KN] @ Sm90_SmemSwizzled(swa),
                 B: [f32][N, KN] @ Sm90_SmemSwizzled(swb)):
        assert stride(A, 0) == SA
        assert stride(B, 0) == SB
        for m in seq(0, 64):
            for n in seq(0, N):
                for k in seq(0, KN):
                    D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                        A[m, k] * B[n, k])
    return wgmma_ss


def _rs_16(T, N, swb):
    NB, KN, SB = N // 8, 16, swb // 2

    @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG, "A": _WG},
           codegen=_wgmma_codegen(T, N, False, 0, swb), includes=(HELPERS_KEY,))
    def wgmma_rs(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                 A: [T][4, 32, 2, 2, 2] @ Sm90_RmemMatrixA,
                 B: [T][N, KN] @ Sm90_SmemSwizzled(swb)):
        assert stride(B, 0) == SB
        for m in seq(0, 64):
            for n in seq(0, N):
                for k in seq(0, KN):
                    D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                        A[m / 16, (m % 8) * 4 + (k % 8) / 2, k / 8, (m % 16) / 8, k % 2]
                        * B[n, k])
    return wgmma_rs


def _rs_tf32(T, N, swb):
    NB, KN, SB = N // 8, 8, swb // 4

    @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG, "A": _WG},
           codegen=_wgmma_codegen(T, N, False, 0, swb), includes=(HELPERS_KEY,))
    def wgmma_rs(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                 A: [f32][4, 32, 2, 2] @ Sm90_RmemMatrixA,
                 B: [f32][N, KN] @ Sm90_SmemSwizzled(swb)):
        assert stride(B, 0) == SB
        for m in seq(0, 64):
            for n in seq(0, N):
                for k in seq(0, KN):
                    D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                        A[m / 16, (m % 8) * 4 + k % 4, k / 4, (m % 16) / 8] * B[n, k])
    return wgmma_rs


def _suffix(swa, swb):
    return "" if (swa, swb) == (128, 128) else f"_sw{swa}_{swb}"


@lru_cache(maxsize=None)
def Sm90_wgmma_ss(T, N: int, swizzle_a: int = 128, swizzle_b: int = 128):
    """``D += A @ B.T`` with A ``[64, K]`` and B ``[N, K]`` in swizzled SMEM (K-major)."""
    _check(T, N, (swizzle_a, swizzle_b))
    make = _ss_tf32 if T.name == "f32" else _ss_16
    return renamed(make(T, N, swizzle_a, swizzle_b),
                   f"wgmma_m64n{N}k{native_k(T)}_f32_{T.name}_ss{_suffix(swizzle_a, swizzle_b)}")


@lru_cache(maxsize=None)
def Sm90_wgmma_rs(T, N: int, swizzle_b: int = 128):
    """``D += A @ B.T`` with A in registers (``Sm90_RmemMatrixA``) and B ``[N, K]`` in SMEM."""
    _check(T, N, (swizzle_b,))
    make = _rs_tf32 if T.name == "f32" else _rs_16
    sfx = "" if swizzle_b == 128 else f"_sw{swizzle_b}"
    return renamed(make(T, N, swizzle_b), f"wgmma_m64n{N}k{native_k(T)}_f32_{T.name}_rs{sfx}")


@lru_cache(maxsize=None)
def Sm90_wgmma_zero(N: int):
    """``D = 0`` for a 64 x N accumulator, lazily (the next wgmma uses scale-d = 0)."""
    _check(f32, N)
    NB = N // 8

    @instr(timeline=wgmma_zero_instr, unit=cuda_warpgroup, distributed={"D": _WG},
           codegen="{D_scale_d} = 0;")
    def wgmma_zero(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD):
        for w in seq(0, 4):
            for l in seq(0, 32):
                for nb in seq(0, NB):
                    for h in seq(0, 2):
                        for j in seq(0, 2):
                            D[w, l, nb, h, j] = 0.0
    return renamed(wgmma_zero, f"wgmma_zero_m64n{N}")
