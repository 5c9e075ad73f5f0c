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
* MN-major (transposed) SMEM operands, bf16/f16 only (``imm-trans-a/b = 1``): ``[C, 16, W]``
  with ``W = s / 2`` elements (one swizzle row) and ``C = MN / W`` atom columns, element
  ``X[mn, k] = X[mn / W, k, mn % W]``; rows of exactly ``s`` bytes (``stride(X, 1) == W``),
  atom columns whole 8-row atoms apart (``stride(X, 0) % 8W == 0``). Descriptor: leading byte
  offset = atom-column stride ``2 * stride(X, 0)``, stride byte offset ``8 * s`` (the next 8 K
  rows). PTX ISA 9.7.15.5.1.2.1 (canonical layout ``((T,s/16,m),(8,k)):((1,T,LBO),(s/16*T,SBO))``,
  T = 8 for 16-bit); docs/platforms.md has the arithmetic. K-slices ``X[:, 16k:16k+16, :]``
  move the start by whole atoms (``16k * s`` bytes).

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
from ..ir.checks import WgmmaOperand


def _operands(swa: int | None, swb: int, mn_a: bool = False, mn_b: bool = False) -> tuple:
    """The declared descriptor operands (``swa`` None: A in registers)."""
    out = []
    if swa is not None:
        out.append(WgmmaOperand("A", swa, "MN" if mn_a else "K"))
    out.append(WgmmaOperand("B", swb, "MN" if mn_b else "K"))
    return tuple(out)

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


def _check(T, N, swizzles=(), major_a="K", major_b="K", swizzle_b=128):
    if T.name not in MMA_TYPE:
        raise TypeError(f"wgmma inputs are f32 (tf32), bf16 or f16, not {T}")
    if N not in N_VALUES:
        raise TypeError(f"wgmma N must be a multiple of 8 in [8, 256], not {N}")
    for s in swizzles:
        if s not in _SWIZZLE_MODE:
            raise TypeError(f"wgmma SMEM operands use a 32, 64 or 128-byte swizzle, not {s}")
    for m in (major_a, major_b):
        if m not in ("K", "MN"):
            raise TypeError(f"wgmma operand major-ness is 'K' or 'MN', not {m!r}")
    if "MN" in (major_a, major_b) and T.nbytes != 2:
        # PTX ISA 9.7.15.5 (wgmma.mma_async): transpose only for .f16/.bf16 descriptor operands
        raise TypeError(f"MN-major (transposed) wgmma operands need bf16 or f16, not {T}")
    if major_b == "MN" and N % (swizzle_b // 2):
        # the canonical MN-major layout covers MN in whole atoms of s/2 16-bit elements
        raise TypeError(f"an N-major B with the {swizzle_b}-byte swizzle needs N a multiple "
                        f"of {swizzle_b // 2}, not {N}")


def _desc(a: dict, p: str, sw: int, mn: bool) -> str:
    """The matrix descriptor of SMEM operand ``p`` (PTX ISA 9.7.15.5.1.2): start address,
    leading byte offset (K-major: unused, 16; MN-major: the atom-column stride in bytes), stride
    byte offset (8 rows of ``sw`` bytes: the next 8 M/N rows, or for MN-major the next 8 K
    rows), swizzle mode."""
    lbo = f"uint32_t({a[f'{p}_stride0']}) * 2u" if mn else "16"
    return f"exo_wgmma_desc({a[p]}, {lbo}, {8 * sw}, {_SWIZZLE_MODE[sw]})"


def _wgmma_codegen(T, N: int, a_smem: bool, swa: int, swb: int, mn_a=False, mn_b=False):
    kn = native_k(T)
    t = MMA_TYPE[T.name]
    nd = N // 2

    def gen(a: dict) -> str:
        D, flag = a["D"], a["D_scale_d"]
        outs = [f'"+f"(({D})[{i}])' for i in range(nd)]
        dvec = "{" + ", ".join(f"%{i}" for i in range(nd)) + "}"
        pre = ""
        if a_smem:
            pre += f"const uint64_t exo_da = {_desc(a, 'A', swa, mn_a)}; "
            ins = ['"l"(exo_da)']
            aop = f"%{nd}"
        elif T.name == "f32":
            ins = [f'"r"(__float_as_uint(({a["A"]})[{i}]))' for i in range(4)]
            aop = "{" + ", ".join(f"%{nd + i}" for i in range(4)) + "}"
        else:
            ins = [f'"r"(exo_pack_b16x2(({a["A"]})[{2 * i}], ({a["A"]})[{2 * i + 1}]))'
                   for i in range(4)]
            aop = "{" + ", ".join(f"%{nd + i}" for i in range(4)) + "}"
        pre += f"const uint64_t exo_db = {_desc(a, 'B', swb, mn_b)}; "
        ib = nd + len(ins)
        ins += ['"l"(exo_db)', f'"r"(int32_t({flag}))']
        # imm-scale-a, imm-scale-b = 1; 16-bit types also take transpose flags (0 = K-major,
        # 1 = MN-major), one for each operand read through a descriptor
        tail = "1, 1"
        if T.name != "f32":
            tail += f", {int(mn_a)}, {int(mn_b)}" if a_smem else f", {int(mn_b)}"
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
           codegen=_wgmma_codegen(T, N, True, swa, swb), includes=(HELPERS_KEY,),
           checks=_operands(swa, swb))
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
           codegen=_wgmma_codegen(T, N, True, swa, swb), includes=(HELPERS_KEY,),
           checks=_operands(swa, swb))
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
           codegen=_wgmma_codegen(T, N, False, 0, swb), includes=(HELPERS_KEY,),
           checks=_operands(None, swb))
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
           codegen=_wgmma_codegen(T, N, False, 0, swb), includes=(HELPERS_KEY,),
           checks=_operands(None, swb))
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


# MN-major operands (bf16/f16): X[mn, k] = X[mn / W, k, mn % W], W = swizzle / 2 elements;
# the atom-column stride (descriptor LBO) is free but whole 8-row atoms (multiple of 8W).
def _ss_16_mn(T, N, swa, swb, mn_a, mn_b):
    NB, WA, WB = N // 8, swa // 2, swb // 2
    CA, CB, GA, GB = 64 // WA, N // WB, 8 * WA, 8 * WB
    gen = _wgmma_codegen(T, N, True, swa, swb, mn_a, mn_b)
    if mn_a and mn_b:
        @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG},
               codegen=gen, includes=(HELPERS_KEY,), checks=_operands(swa, swb, mn_a, mn_b))
        def wgmma_ss(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                     A: [T][CA, 16, WA] @ Sm90_SmemSwizzled(swa),
                     B: [T][CB, 16, WB] @ Sm90_SmemSwizzled(swb)):
            assert stride(A, 1) == WA
            assert stride(A, 0) % GA == 0
            assert stride(B, 1) == WB
            assert stride(B, 0) % GB == 0
            for m in seq(0, 64):
                for n in seq(0, N):
                    for k in seq(0, 16):
                        D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                            A[m / WA, k, m % WA] * B[n / WB, k, n % WB])
    elif mn_a:
        @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG},
               codegen=gen, includes=(HELPERS_KEY,), checks=_operands(swa, swb, mn_a, mn_b))
        def wgmma_ss(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                     A: [T][CA, 16, WA] @ Sm90_SmemSwizzled(swa),
                     B: [T][N, 16] @ Sm90_SmemSwizzled(swb)):
            assert stride(A, 1) == WA
            assert stride(A, 0) % GA == 0
            assert stride(B, 0) == WB
            for m in seq(0, 64):
                for n in seq(0, N):
                    for k in seq(0, 16):
                        D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                            A[m / WA, k, m % WA] * B[n, k])
    else:
        @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG},
               codegen=gen, includes=(HELPERS_KEY,), checks=_operands(swa, swb, mn_a, mn_b))
        def wgmma_ss(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                     A: [T][64, 16] @ Sm90_SmemSwizzled(swa),
                     B: [T][CB, 16, WB] @ Sm90_SmemSwizzled(swb)):
            assert stride(A, 0) == WA
            assert stride(B, 1) == WB
            assert stride(B, 0) % GB == 0
            for m in seq(0, 64):
                for n in seq(0, N):
                    for k in seq(0, 16):
                        D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                            A[m, k] * B[n / WB, k, n % WB])
    return wgmma_ss


def _rs_16_mn(T, N, swb):
    NB, WB = N // 8, swb // 2
    CB, GB = N // WB, 8 * WB

    @instr(timeline=wgmma_async_instr, unit=cuda_warpgroup, distributed={"D": _WG, "A": _WG},
           codegen=_wgmma_codegen(T, N, False, 0, swb, False, True), includes=(HELPERS_KEY,),
           checks=_operands(None, swb, False, True))
    def wgmma_rs(D: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD,
                 A: [T][4, 32, 2, 2, 2] @ Sm90_RmemMatrixA,
                 B: [T][CB, 16, WB] @ Sm90_SmemSwizzled(swb)):
        assert stride(B, 1) == WB
        assert stride(B, 0) % GB == 0
        for m in seq(0, 64):
            for n in seq(0, N):
                for k in seq(0, 16):
                    D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2] += (
                        A[m / 16, (m % 8) * 4 + (k % 8) / 2, k / 8, (m % 16) / 8, k % 2]
                        * B[n / WB, k, n % WB])
    return wgmma_rs


def _major_suffix(major_a, major_b):
    mn = ("a" if major_a == "MN" else "") + ("b" if major_b == "MN" else "")
    return f"_mn_{mn}" if mn else ""


def _suffix(swa, swb):
    return "" if (swa, swb) == (128, 128) else f"_sw{swa}_{swb}"


def Sm90_wgmma_ss(T, N: int, swizzle_a: int = 128, swizzle_b: int = 128,
                  major_a: str = "K", major_b: str = "K"):
    """``D += A @ B.T`` with A and B in swizzled SMEM: K-major A ``[64, K]``, B ``[N, K]``, or
    (bf16/f16, ``major_* = "MN"``) MN-major A ``[64/W, K, W]``, B ``[N/W, K, W]``."""
    # one cache key per member, however the arguments are spelt
    return _wgmma_ss(T, N, swizzle_a, swizzle_b, major_a, major_b)


def Sm90_wgmma_rs(T, N: int, swizzle_b: int = 128, major_b: str = "K"):
    """``D += A @ B.T`` with A in registers (``Sm90_RmemMatrixA``) and B in SMEM: ``[N, K]``
    (K-major) or, for bf16/f16 with ``major_b = "MN"``, ``[N/W, K, W]``."""
    return _wgmma_rs(T, N, swizzle_b, major_b)


@lru_cache(maxsize=None)
def _wgmma_ss(T, N, swizzle_a, swizzle_b, major_a, major_b):
    _check(T, N, (swizzle_a, swizzle_b), major_a, major_b, swizzle_b)
    if "MN" in (major_a, major_b):
        p = _ss_16_mn(T, N, swizzle_a, swizzle_b, major_a == "MN", major_b == "MN")
    else:
        p = (_ss_tf32 if T.name == "f32" else _ss_16)(T, N, swizzle_a, swizzle_b)
    return renamed(p, f"wgmma_m64n{N}k{native_k(T)}_f32_{T.name}_ss"
                      f"{_major_suffix(major_a, major_b)}{_suffix(swizzle_a, swizzle_b)}")


@lru_cache(maxsize=None)
def _wgmma_rs(T, N, swizzle_b, major_b):
    _check(T, N, (swizzle_b,), "K", major_b, swizzle_b)
    if major_b == "MN":
        p = _rs_16_mn(T, N, swizzle_b)
    else:
        p = (_rs_tf32 if T.name == "f32" else _rs_16)(T, N, swizzle_b)
    sfx = "" if swizzle_b == 128 else f"_sw{swizzle_b}"
    return renamed(p, f"wgmma_m64n{N}k{native_k(T)}_f32_{T.name}_rs"
                      f"{_major_suffix('K', major_b)}{sfx}")


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
