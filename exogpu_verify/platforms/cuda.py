"""Basic CUDA instructions: host-side stream copies, warp shuffles, register budgets.

* ``cudaMemcpyAsync_htod_{r}d_{T}`` / ``cudaMemcpyAsync_dtoh_{r}d_{T}`` (r = 1..3, T in f32,
  f16, bf16, i32): ``dst = src`` between ``DRAM`` and ``CudaGmemLinear`` on the kernel stream
  (``cpu_cuda_stream_instr``). ``cudaMemsetAsync0_{r}d_{T}``: ``dst = 0``. The unsuffixed
  names (``cudaMemcpyAsync_htod_2d``) are the f32 instances.
* ``cuda_warp_broadcast_f32(i, dst, src)``: every lane gets lane ``i``'s value.
  ``cuda_shfl_xor_f32_m{M}(dst, src)``: lane ``t`` gets lane ``t ^ M``'s value;
  ``cuda_shfl_xor_sum_f32_m{M}``: lane ``t`` gets ``src[t] + src[t ^ M]`` (one butterfly step
  of a warp reduction). Unit ``cuda_warp``; the register parameters hold one value per lane and
  are declared distributed over ``cuda_thread``. ``dst`` and ``src`` must not be the same
  registers (the sequential body reads ``src`` after writing ``dst``).
* ``setmaxnreg_inc(n)`` / ``setmaxnreg_dec(n)``: change the warpgroup's register budget (what
  ``CudaWarpConfig(setmaxnreg_inc=...)`` lowers to); no data effect.
* ``cuda_ld_v4_f32(dst, src)`` / ``cuda_ld_v4_cs_f32(dst, src)``: one thread loads 4
  contiguous f32 (16 bytes) from global memory into 4 registers with one vector load
  (``ld.global.v4.f32``; ``_cs``: ``ld.global.cs.v4.f32``, the evict-first streaming hint for
  data read once). Both are ordinary weak loads (``cuda_in_order_instr``), never the
  non-coherent ``.nc`` path, so any Fence or Await that orders a plain load orders them. The
  address must be 16-byte aligned (a misaligned vector load faults, it does not read the
  wrong data): ``checks=(Aligned("src", 16),)`` proves the window starts at an element
  offset that is a multiple of 4, and the generated entry point checks that the tensor's
  base pointer is 16-byte aligned (``cudaMalloc`` returns 256-byte aligned memory; a slice
  passed by the caller need not be).

Codegen convention: see ``exogpu_verify.platforms``. Host copies use the stream variable
``exo_cudaStream`` of the generated host code.
"""

from __future__ import annotations

from ..frontend.decorators import instr
from ..ir.memories import DRAM, CudaGmemLinear, CudaRmem
from ..ir.timelines import cpu_cuda_stream_instr, cuda_in_order_instr
from ..ir.units import cuda_thread, cuda_warp, cuda_warpgroup
from ._ptx import CPP_TYPE, MEMCPY_TYPES, renamed
from ..ir.checks import Aligned, RegisterCount

__all__: list[str] = []


def _export(p):
    globals()[p.name] = p
    __all__.append(p.name)
    return p


# ------------------------------------------------------------------ host stream copies
def _memcpy_codegen(rank: int, T, kind: str):
    ct = CPP_TYPE[T.name]

    def gen(a: dict) -> str:
        n = [a[f"n{d}"] for d in range(rank)]
        if rank == 1:
            return (f"cudaMemcpyAsync({a['dst']}, {a['src']}, size_t({n[0]}) * sizeof({ct}), "
                    f"{kind}, exo_cudaStream);")
        inner = (f"cudaMemcpy2DAsync({{d}}, size_t({a['dst_stride%d' % (rank - 2)]}) * "
                 f"sizeof({ct}), {{s}}, size_t({a['src_stride%d' % (rank - 2)]}) * sizeof({ct}), "
                 f"size_t({n[-1]}) * sizeof({ct}), size_t({n[-2]}), {kind}, exo_cudaStream);")
        if rank == 2:
            return inner.format(d=a["dst"], s=a["src"])
        return (f"for (int64_t exo_i0 = 0; exo_i0 < int64_t({n[0]}); ++exo_i0) "
                + inner.format(d=f"({a['dst']}) + exo_i0 * int64_t({a['dst_stride0']})",
                               s=f"({a['src']}) + exo_i0 * int64_t({a['src_stride0']})"))
    return gen


def _memset_codegen(rank: int, T):
    ct = CPP_TYPE[T.name]

    def gen(a: dict) -> str:
        n = [a[f"n{d}"] for d in range(rank)]
        if rank == 1:
            return (f"cudaMemsetAsync({a['dst']}, 0, size_t({n[0]}) * sizeof({ct}), "
                    "exo_cudaStream);")
        inner = (f"cudaMemset2DAsync({{d}}, size_t({a['dst_stride%d' % (rank - 2)]}) * "
                 f"sizeof({ct}), 0, size_t({n[-1]}) * sizeof({ct}), size_t({n[-2]}), "
                 "exo_cudaStream);")
        if rank == 2:
            return inner.format(d=a["dst"])
        return (f"for (int64_t exo_i0 = 0; exo_i0 < int64_t({n[0]}); ++exo_i0) "
                + inner.format(d=f"({a['dst']}) + exo_i0 * int64_t({a['dst_stride0']})"))
    return gen


def _copy_1d(T, dst_mem, src_mem, kind):
    @instr(timeline=cpu_cuda_stream_instr, codegen=_memcpy_codegen(1, T, kind))
    def copy_1d(n0: size, dst: [T][n0] @ dst_mem, src: [T][n0] @ src_mem):
        assert stride(dst, 0) == 1
        assert stride(src, 0) == 1
        for i0 in seq(0, n0):
            dst[i0] = src[i0]
    return copy_1d


def _copy_2d(T, dst_mem, src_mem, kind):
    @instr(timeline=cpu_cuda_stream_instr, codegen=_memcpy_codegen(2, T, kind))
    def copy_2d(n0: size, n1: size, dst: [T][n0, n1] @ dst_mem, src: [T][n0, n1] @ src_mem):
        assert stride(dst, 1) == 1
        assert stride(src, 1) == 1
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                dst[i0, i1] = src[i0, i1]
    return copy_2d


def _copy_3d(T, dst_mem, src_mem, kind):
    @instr(timeline=cpu_cuda_stream_instr, codegen=_memcpy_codegen(3, T, kind))
    def copy_3d(n0: size, n1: size, n2: size, dst: [T][n0, n1, n2] @ dst_mem,
                src: [T][n0, n1, n2] @ src_mem):
        assert stride(dst, 2) == 1
        assert stride(src, 2) == 1
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    dst[i0, i1, i2] = src[i0, i1, i2]
    return copy_3d


def _memset_1d(T):
    @instr(timeline=cpu_cuda_stream_instr, codegen=_memset_codegen(1, T))
    def memset_1d(n0: size, dst: [T][n0] @ CudaGmemLinear):
        assert stride(dst, 0) == 1
        for i0 in seq(0, n0):
            dst[i0] = 0.0
    return memset_1d


def _memset_2d(T):
    @instr(timeline=cpu_cuda_stream_instr, codegen=_memset_codegen(2, T))
    def memset_2d(n0: size, n1: size, dst: [T][n0, n1] @ CudaGmemLinear):
        assert stride(dst, 1) == 1
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                dst[i0, i1] = 0.0
    return memset_2d


def _memset_3d(T):
    @instr(timeline=cpu_cuda_stream_instr, codegen=_memset_codegen(3, T))
    def memset_3d(n0: size, n1: size, n2: size, dst: [T][n0, n1, n2] @ CudaGmemLinear):
        assert stride(dst, 2) == 1
        for i0 in seq(0, n0):
            for i1 in seq(0, n1):
                for i2 in seq(0, n2):
                    dst[i0, i1, i2] = 0.0
    return memset_3d


_COPIES = {1: _copy_1d, 2: _copy_2d, 3: _copy_3d}
_MEMSETS = {1: _memset_1d, 2: _memset_2d, 3: _memset_3d}

for _T in MEMCPY_TYPES:
    for _r in (1, 2, 3):
        _export(renamed(_COPIES[_r](_T, CudaGmemLinear, DRAM, "cudaMemcpyHostToDevice"),
                        f"cudaMemcpyAsync_htod_{_r}d_{_T.name}"))
        _export(renamed(_COPIES[_r](_T, DRAM, CudaGmemLinear, "cudaMemcpyDeviceToHost"),
                        f"cudaMemcpyAsync_dtoh_{_r}d_{_T.name}"))
        _export(renamed(_MEMSETS[_r](_T), f"cudaMemsetAsync0_{_r}d_{_T.name}"))
for _r in (1, 2, 3):
    for _stem in ("cudaMemcpyAsync_htod", "cudaMemcpyAsync_dtoh", "cudaMemsetAsync0"):
        _export(renamed(globals()[f"{_stem}_{_r}d_f32"], f"{_stem}_{_r}d"))


# ------------------------------------------------------------------ warp shuffles
@instr(timeline=cuda_in_order_instr, unit=cuda_warp, distributed={"dst": (cuda_thread,),
                                                                  "src": (cuda_thread,)},
       codegen="*({dst}) = __shfl_sync(0xffffffffu, *({src}), int({i}));")
def cuda_warp_broadcast_f32(i: index, dst: [f32][32] @ CudaRmem, src: [f32][32] @ CudaRmem):
    assert i >= 0 and i < 32
    for t in seq(0, 32):
        dst[t] = src[i]


_export(cuda_warp_broadcast_f32)


def _shfl_xor(M: int):
    # t ^ M for a power of two M, written quasi-affinely: t + M - 2M * bit_M(t)
    @instr(timeline=cuda_in_order_instr, unit=cuda_warp,
           distributed={"dst": (cuda_thread,), "src": (cuda_thread,)},
           codegen=f"*({{dst}}) = __shfl_xor_sync(0xffffffffu, *({{src}}), {M});")
    def shfl_xor(dst: [f32][32] @ CudaRmem, src: [f32][32] @ CudaRmem):
        for t in seq(0, 32):
            dst[t] = src[t + M - 2 * M * ((t / M) % 2)]
    return renamed(shfl_xor, f"cuda_shfl_xor_f32_m{M}")


def _shfl_xor_sum(M: int):
    @instr(timeline=cuda_in_order_instr, unit=cuda_warp,
           distributed={"dst": (cuda_thread,), "src": (cuda_thread,)},
           codegen=(f"*({{dst}}) = *({{src}}) + __shfl_xor_sync(0xffffffffu, *({{src}}), {M});"))
    def shfl_xor_sum(dst: [f32][32] @ CudaRmem, src: [f32][32] @ CudaRmem):
        for t in seq(0, 32):
            dst[t] = src[t] + src[t + M - 2 * M * ((t / M) % 2)]
    return renamed(shfl_xor_sum, f"cuda_shfl_xor_sum_f32_m{M}")


for _M in (1, 2, 4, 8, 16):
    _export(_shfl_xor(_M))
    _export(_shfl_xor_sum(_M))


# ------------------------------------------------------------------ register budget
@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup, checks=(RegisterCount("n", "inc"),),
       codegen='asm volatile("setmaxnreg.inc.sync.aligned.u32 {n};\\n" ::: "memory");')
def setmaxnreg_inc(n: size):
    assert n % 8 == 0 and n >= 24 and n <= 256
    pass


@instr(timeline=cuda_in_order_instr, unit=cuda_warpgroup, checks=(RegisterCount("n", "dec"),),
       codegen='asm volatile("setmaxnreg.dec.sync.aligned.u32 {n};\\n" ::: "memory");')
def setmaxnreg_dec(n: size):
    assert n % 8 == 0 and n >= 24 and n <= 256
    pass


_export(setmaxnreg_inc)
_export(setmaxnreg_dec)


# ------------------------------------------------------------------ 16-byte vector loads
def _ld_v4_codegen(load: str):
    def gen(a: dict) -> str:
        v = load.format(p=f"reinterpret_cast<const float4*>({a['src']})")
        regs = " ".join(f"({a['dst']})[{i}] = exo_v.{c};" for i, c in enumerate("xyzw"))
        return f"{{ const float4 exo_v = {v}; {regs} }}"
    return gen


def _ld_v4(load: str):
    # ld.global.v4.f32 faults unless the address is 16-byte aligned (PTX ISA 9.7.9.8, ld:
    # "the address must be naturally aligned to a multiple of the access size")
    @instr(timeline=cuda_in_order_instr, unit=cuda_thread, codegen=_ld_v4_codegen(load),
           checks=(Aligned("src", 16),))
    def ld_v4(dst: [f32][4] @ CudaRmem, src: [f32][4] @ CudaGmemLinear):
        assert stride(dst, 0) == 1
        assert stride(src, 0) == 1
        for i in seq(0, 4):
            dst[i] = src[i]
    return ld_v4


# a plain C++ float4 load is ld.global.v4.f32; __ldcs is CUDA's ld.global.cs.v4.f32
_export(renamed(_ld_v4("*{p}"), "cuda_ld_v4_f32"))
_export(renamed(_ld_v4("__ldcs({p})"), "cuda_ld_v4_cs_f32"))

#: every instruction of this module, by name
INSTRS = {k: globals()[k] for k in __all__}
