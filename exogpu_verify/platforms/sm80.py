"""Ampere (sm_80) instructions: ``cp.async``, ``ldmatrix``, ``mma.sync``.

Register fragments are ``CudaRmem`` arrays whose *leading dimension is the lane* (extent 32,
distributed over ``cuda_thread``) and whose remaining dimensions are the lane's registers in
PTX order, so the distributed layout is exactly the PTX fragment layout (PTX ISA 9.7.14.5,
"Matrix Fragments for mma.m16n8k16 / m16n8k8"). With ``g = lane / 4`` and ``t = lane % 4``:

=========================  ======================  ============================================
fragment                   shape                   element
=========================  ======================  ============================================
D (16x8 f32 accumulator)   ``[32, 2, 2]``          ``D[lane, h, j] = D[g + 8h, 2t + j]``
A 16x16 bf16/f16 (row)     ``[32, 2, 2, 2]``       ``A[lane, kh, mh, j] = A[g + 8mh, 2t + 8kh + j]``
B 16x8 bf16/f16 (col)      ``[32, 2, 2]``          ``B[lane, kh, j] = B[n=g, k=2t + 8kh + j]``
A 16x8 tf32 (row)          ``[32, 2, 2]``          ``A[lane, kh, mh] = A[g + 8mh, t + 4kh]``
B 8x8 tf32 (col)           ``[32, 2]``             ``B[lane, kh] = B[n=g, k=t + 4kh]``
=========================  ======================  ============================================

The per-lane registers flatten (C order) to the PTX operand order ``a0, a1, ...``. B is
given as its transpose ``[n, k]`` (the ``.col`` operand).

Instructions (unit, timeline):

* ``Sm80_cp_async_f32(n, dst, src)``, n in 1, 2, 4; ``Sm80_cp_async_bf16`` / ``_f16``, n in
  2, 4, 8: 4/8/16-byte asynchronous GMEM -> SMEM copy (the SMEM destination and the GMEM
  source aligned to the copy's bytes, PTX ISA cp.async: ``checks=(Aligned("dst",
  elems="n"), Aligned("src", elems="n"))``; ``cuda_thread``,
  ``Sm80_cp_async_instr``); completes through ``Arrive(Sm80_cp_async) >> cg`` on an
  ``Sm80_CommitGroup`` (``cp.async.commit_group`` / ``wait_group``).
* ``Sm80_ldmatrix_a_x4_{bf16,f16}(dst, src)``: 16x16 SMEM tile -> A fragment;
  ``Sm80_ldmatrix_b_x2_{bf16,f16}``: 8x16 ``[n, k]`` SMEM tile -> B fragment (``cuda_warp``,
  ``cuda_in_order_instr``).
* ``Sm80_mma_m16n8k16_f32_{bf16,f16}(D, A, B)``, ``Sm80_mma_m16n8k8_f32_tf32``:
  ``D += A @ B`` (``cuda_warp``, ``cuda_in_order_instr``).
* ``Sm80_mma_zero_d(D)``, ``Sm80_mma_store_d(dst, D)``, ``Sm80_mma_load_d(D, src)``.
"""

from __future__ import annotations

from ..frontend.decorators import instr
from ..ir.memories import CudaDeviceVisibleLinear, CudaGmemLinear, CudaRmem, CudaSmemLinear
from ..ir.timelines import Sm80_cp_async_instr, cuda_in_order_instr
from ..ir.types import bf16, f16, f32
from ..ir.units import cuda_thread, cuda_warp
from ..ir.checks import Aligned
from ._ptx import HELPERS_KEY, renamed

__all__: list[str] = []
_LANE = (cuda_thread,)


def _export(p):
    globals()[p.name] = p
    __all__.append(p.name)
    return p


# ------------------------------------------------------------------ cp.async
def _cp_async_codegen(T):
    def gen(a: dict) -> str:
        nbytes = int(a["n"]) * T.nbytes
        if nbytes not in (4, 8, 16):
            raise ValueError(f"cp.async copies 4, 8 or 16 bytes, not {nbytes}")
        cache = "cg" if nbytes == 16 else "ca"  # .cg (L2 only) exists for 16 bytes alone
        return (f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes};\\n" :: '
                f'"r"(exo_smem_u32({a["dst"]})), "l"({a["src"]}) : "memory");')
    return gen


def _cp_async_f32():
    @instr(timeline=Sm80_cp_async_instr, unit=cuda_thread, codegen=_cp_async_codegen(f32),
           includes=(HELPERS_KEY,), checks=(Aligned("dst", elems="n"), Aligned("src", elems="n")))
    def Sm80_cp_async_f32(n: size, dst: [f32][n] @ CudaSmemLinear, src: [f32][n] @ CudaGmemLinear):
        assert n == 1 or n == 2 or n == 4
        assert stride(dst, 0) == 1
        assert stride(src, 0) == 1
        for i in seq(0, n):
            dst[i] = src[i]
    return Sm80_cp_async_f32


def _cp_async_b16(T):
    @instr(timeline=Sm80_cp_async_instr, unit=cuda_thread, codegen=_cp_async_codegen(T),
           includes=(HELPERS_KEY,), checks=(Aligned("dst", elems="n"), Aligned("src", elems="n")))
    def cp_async_b16(n: size, dst: [T][n] @ CudaSmemLinear, src: [T][n] @ CudaGmemLinear):
        assert n == 2 or n == 4 or n == 8
        assert stride(dst, 0) == 1
        assert stride(src, 0) == 1
        for i in seq(0, n):
            dst[i] = src[i]
    return renamed(cp_async_b16, f"Sm80_cp_async_{T.name}")


_export(_cp_async_f32())
_export(_cp_async_b16(bf16))
_export(_cp_async_b16(f16))


# ------------------------------------------------------------------ ldmatrix
def _ldmatrix_codegen(nmat: int):
    def gen(a: dict) -> str:
        regs = ", ".join(f"%{i}" for i in range(nmat))
        outs = ", ".join(f'"=r"(exo_r[{i}])' for i in range(nmat))
        if nmat == 4:  # lane l addresses row l % 16 of column block l / 16 (A quadrant order)
            addr = f"&({a['src']})[(exo_l % 16) * ({a['src_stride0']}) + (exo_l / 16) * 8]"
        else:  # lane l (< 16) addresses row l % 8 of column block (l / 8) % 2
            addr = f"&({a['src']})[(exo_l % 8) * ({a['src_stride0']}) + ((exo_l / 8) % 2) * 8]"
        unpack = " ".join(f"exo_unpack_b16x2(exo_r[{i}], ({a['dst']})[{2 * i}], "
                          f"({a['dst']})[{2 * i + 1}]);" for i in range(nmat))
        return ("{ uint32_t exo_r[%d]; const uint32_t exo_l = exo_lane_id(); "
                'asm volatile("ldmatrix.sync.aligned.m8n8.x%d.shared.b16 {%s}, [%%%d];\\n" '
                ': %s : "r"(exo_smem_u32(%s)) : "memory"); %s }'
                % (nmat, nmat, regs, nmat, outs, addr, unpack))
    return gen


def _ldmatrix_a(T):
    @instr(timeline=cuda_in_order_instr, unit=cuda_warp, distributed={"dst": _LANE},
           codegen=_ldmatrix_codegen(4), includes=(HELPERS_KEY,),
           checks=(Aligned("src", 16, rows=True),))
    def ldmatrix_a(dst: [T][32, 2, 2, 2] @ CudaRmem, src: [T][16, 16] @ CudaSmemLinear):
        assert stride(src, 1) == 1
        for l in seq(0, 32):
            for kh in seq(0, 2):
                for mh in seq(0, 2):
                    for j in seq(0, 2):
                        dst[l, kh, mh, j] = src[l / 4 + 8 * mh, 2 * (l % 4) + 8 * kh + j]
    return renamed(ldmatrix_a, f"Sm80_ldmatrix_a_x4_{T.name}")


def _ldmatrix_b(T):
    @instr(timeline=cuda_in_order_instr, unit=cuda_warp, distributed={"dst": _LANE},
           codegen=_ldmatrix_codegen(2), includes=(HELPERS_KEY,),
           checks=(Aligned("src", 16, rows=True),))
    def ldmatrix_b(dst: [T][32, 2, 2] @ CudaRmem, src: [T][8, 16] @ CudaSmemLinear):
        assert stride(src, 1) == 1
        for l in seq(0, 32):
            for kh in seq(0, 2):
                for j in seq(0, 2):
                    dst[l, kh, j] = src[l / 4, 2 * (l % 4) + 8 * kh + j]
    return renamed(ldmatrix_b, f"Sm80_ldmatrix_b_x2_{T.name}")


for _T in (bf16, f16):
    _export(_ldmatrix_a(_T))
    _export(_ldmatrix_b(_T))


# ------------------------------------------------------------------ mma.sync
def _mma_codegen(shape: str, tname: str):
    def gen(a: dict) -> str:
        D, A, B = a["D"], a["A"], a["B"]
        outs = ", ".join(f'"+f"(({D})[{i}])' for i in range(4))
        if tname == "tf32":
            ins = [f'"r"(__float_as_uint(({A})[{i}]))' for i in range(4)]
            ins += [f'"r"(__float_as_uint(({B})[{i}]))' for i in range(2)]
        else:
            ins = [f'"r"(exo_pack_b16x2(({A})[{2 * i}], ({A})[{2 * i + 1}]))' for i in range(4)]
            ins += [f'"r"(exo_pack_b16x2(({B})[{2 * i}], ({B})[{2 * i + 1}]))' for i in range(2)]
        return (f'asm volatile("mma.sync.aligned.{shape}.row.col.f32.{tname}.{tname}.f32 '
                '{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n" '
                f": {outs} : {', '.join(ins)});")
    return gen


def _mma_k16(T):
    @instr(timeline=cuda_in_order_instr, unit=cuda_warp,
           distributed={"D": _LANE, "A": _LANE, "B": _LANE},
           codegen=_mma_codegen("m16n8k16", T.name), includes=(HELPERS_KEY,))
    def mma_k16(D: [f32][32, 2, 2] @ CudaRmem, A: [T][32, 2, 2, 2] @ CudaRmem,
                B: [T][32, 2, 2] @ CudaRmem):
        for m in seq(0, 16):
            for n in seq(0, 8):
                for k in seq(0, 16):
                    D[(m % 8) * 4 + n / 2, m / 8, n % 2] += (
                        A[(m % 8) * 4 + (k % 8) / 2, k / 8, m / 8, k % 2]
                        * B[n * 4 + (k % 8) / 2, k / 8, k % 2])
    return renamed(mma_k16, f"Sm80_mma_m16n8k16_f32_{T.name}")


@instr(timeline=cuda_in_order_instr, unit=cuda_warp,
       distributed={"D": _LANE, "A": _LANE, "B": _LANE},
       codegen=_mma_codegen("m16n8k8", "tf32"), includes=(HELPERS_KEY,))
def Sm80_mma_m16n8k8_f32_tf32(D: [f32][32, 2, 2] @ CudaRmem, A: [f32][32, 2, 2] @ CudaRmem,
                              B: [f32][32, 2] @ CudaRmem):
    for m in seq(0, 16):
        for n in seq(0, 8):
            for k in seq(0, 8):
                D[(m % 8) * 4 + n / 2, m / 8, n % 2] += (A[(m % 8) * 4 + k % 4, k / 4, m / 8]
                                                         * B[n * 4 + k % 4, k / 4])


_export(_mma_k16(bf16))
_export(_mma_k16(f16))
_export(Sm80_mma_m16n8k8_f32_tf32)


@instr(timeline=cuda_in_order_instr, unit=cuda_warp, distributed={"D": _LANE},
       codegen="for (int exo_i = 0; exo_i < 4; ++exo_i) ({D})[exo_i] = 0.0f;")
def Sm80_mma_zero_d(D: [f32][32, 2, 2] @ CudaRmem):
    for l in seq(0, 32):
        for h in seq(0, 2):
            for j in seq(0, 2):
                D[l, h, j] = 0.0


_FRAG_LOOP = ("{{ const uint32_t exo_l = exo_lane_id(); "
              "for (int exo_h = 0; exo_h < 2; ++exo_h) for (int exo_j = 0; exo_j < 2; ++exo_j) "
              "{body} }}")
_MEM_ELEM = "({m})[(exo_l / 4 + 8 * exo_h) * ({s}) + 2 * (exo_l % 4) + exo_j]"


@instr(timeline=cuda_in_order_instr, unit=cuda_warp, distributed={"D": _LANE},
       codegen=lambda a: _FRAG_LOOP.format(body=_MEM_ELEM.format(m=a["dst"], s=a["dst_stride0"])
                                           + f" = ({a['D']})[2 * exo_h + exo_j];"),
       includes=(HELPERS_KEY,))
def Sm80_mma_store_d(dst: [f32][16, 8] @ CudaDeviceVisibleLinear, D: [f32][32, 2, 2] @ CudaRmem):
    assert stride(dst, 1) == 1
    for m in seq(0, 16):
        for n in seq(0, 8):
            dst[m, n] = D[(m % 8) * 4 + n / 2, m / 8, n % 2]


@instr(timeline=cuda_in_order_instr, unit=cuda_warp, distributed={"D": _LANE},
       codegen=lambda a: _FRAG_LOOP.format(body=f"({a['D']})[2 * exo_h + exo_j] = "
                                           + _MEM_ELEM.format(m=a["src"], s=a["src_stride0"])
                                           + ";"),
       includes=(HELPERS_KEY,))
def Sm80_mma_load_d(D: [f32][32, 2, 2] @ CudaRmem, src: [f32][16, 8] @ CudaDeviceVisibleLinear):
    assert stride(src, 1) == 1
    for m in seq(0, 16):
        for n in seq(0, 8):
            D[(m % 8) * 4 + n / 2, m / 8, n % 2] = src[m, n]


_export(Sm80_mma_zero_d)
_export(Sm80_mma_store_d)
_export(Sm80_mma_load_d)

#: every instruction of this module, by name
INSTRS = {k: globals()[k] for k in __all__}
