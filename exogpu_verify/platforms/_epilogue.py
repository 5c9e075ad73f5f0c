"""Sm90 epilogue: a wgmma accumulator tile stored to swizzled shared memory (for a TMA store).

``store_acc_m64n{N}_{T}(dst, src)`` (``cuda_warpgroup``, in order): ``dst[m, n] = src``'s
element ``(m, n)`` of a 64 x N f32 accumulator in the wgmma fragment layout
(``_wgmma``: ``D[w, lane, nb, h, j] = D[16w + lane/4 + 8h, 8nb + 2(lane%4) + j]``), rounded to
``T`` (f32, bf16 or f16). ``dst`` is one swizzle row wide: ``N = swizzle / sizeof(T)`` columns
(32 f32 or 64 bf16/f16 for the 128-byte swizzle), ``Sm90_SmemSwizzled(swizzle)`` with rows
exactly ``swizzle`` bytes apart, so a 64 x N tile is eight swizzle atoms, the layout a
``tma_store`` of box ``(rows, N)`` with the same swizzle reads. A wider accumulator is stored
as a sequence of calls on column windows ``src[:, :, c*N/8:(c+1)*N/8, :, :]``.

Lowering: every thread stores its own fragment with fully unrolled ``st.shared.v2.f32``
(f32, 8 bytes: the two columns ``j`` of a pair are adjacent and never cross a 16-byte swizzle
chunk) or ``st.shared.b32`` (a packed pair of 16-bit values), at
``addr ^ (((addr >> 7) & mask) << 4)`` (the swizzle of PTX ISA "Tensor Map swizzling modes",
the same XOR ``exo_swz`` computes), so the register indices are compile-time constants and the
accumulator never leaves registers.
"""

from __future__ import annotations

from functools import lru_cache

from ..frontend.decorators import instr
from ..ir.memories import Sm90_SmemSwizzled
from ..ir.timelines import cuda_in_order_instr
from ..ir.types import f32
from ..ir.units import cuda_thread, cuda_warp, cuda_warpgroup
from ._ptx import HELPERS_KEY, renamed
from ._wgmma import Sm90_RmemMatrixD

_MASK = {128: 7, 64: 3, 32: 1}
_PACK = {"bf16": "__floats2bfloat162_rn", "f16": "__floats2half2_rn"}


def _codegen(T, N: int, swizzle: int):
    eb = T.nbytes
    mask = _MASK[swizzle]

    def gen(a: dict) -> str:
        dst, src, s0 = a["dst"], a["src"], a["dst_stride0"]
        rowb = f"uint32_t({s0}) * {eb}u"
        out = ["{ const uint32_t exo_l = threadIdx.x % 32u, exo_w = (threadIdx.x / 32u) % 4u;",
               f"  const uint32_t exo_rb = {rowb};",
               f"  const uint32_t exo_a0 = exo_smem_u32({dst}) + (16u * exo_w + exo_l / 4u) * "
               f"exo_rb + (exo_l % 4u) * {2 * eb}u;"]
        for nb in range(N // 8):
            for h in range(2):
                r = (nb * 2 + h) * 2
                off = f"{8 * h}u * exo_rb + {8 * nb * eb}u"
                addr = (f"const uint32_t exo_a = exo_a0 + {off}; const uint32_t exo_s = "
                        f"exo_a ^ (((exo_a >> 7) & {mask}u) << 4);")
                x, y = f"({src})[{r}]", f"({src})[{r + 1}]"
                if T.name == "f32":
                    st = (f'asm volatile("st.shared.v2.f32 [%0], {{%1, %2}};\\n" :: "r"(exo_s), '
                          f'"f"({x}), "f"({y}) : "memory");')
                else:
                    st = (f"const auto exo_v = {_PACK[T.name]}({x}, {y}); "
                          f'asm volatile("st.shared.b32 [%0], %1;\\n" :: "r"(exo_s), '
                          f'"r"(*reinterpret_cast<const uint32_t*>(&exo_v)) : "memory");')
                out.append(f"  {{ {addr} {st} }}")
        out.append("}")
        return "\n".join(out)
    return gen


@lru_cache(maxsize=None)
def Sm90_store_acc(T, N: int | None = None, swizzle: int = 128):
    """Store a 64 x N wgmma accumulator tile (f32) to swizzled SMEM as ``T``; ``N`` defaults
    to one swizzle row (``swizzle / sizeof(T)`` columns)."""
    if T.name not in ("f32", "bf16", "f16"):
        raise TypeError(f"store_acc writes f32, bf16 or f16, not {T}")
    if swizzle not in _MASK:
        raise TypeError(f"store_acc needs a 32, 64 or 128-byte swizzle, not {swizzle}")
    W = swizzle // T.nbytes
    N = W if N is None else N
    if N != W:
        raise TypeError(f"store_acc stores one swizzle row of {W} {T} columns per call, not "
                        f"{N} (call it per column window)")
    NB = N // 8

    @instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup,
           distributed={"src": (cuda_warp, cuda_thread)}, codegen=_codegen(T, N, swizzle),
           includes=(HELPERS_KEY,))
    def store_acc(dst: [T][64, N] @ Sm90_SmemSwizzled(swizzle),
                  src: [f32][4, 32, NB, 2, 2] @ Sm90_RmemMatrixD):
        assert stride(dst, 0) == N
        for m in seq(0, 64):
            for n in seq(0, N):
                dst[m, n] = src[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2]

    sfx = "" if swizzle == 128 else f"_sw{swizzle}"
    return renamed(store_acc, f"store_acc_m64n{N}_{T.name}{sfx}")
