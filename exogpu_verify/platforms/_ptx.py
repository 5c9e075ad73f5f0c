"""Shared helpers for the platform libraries: naming, C++ spellings, inline-PTX snippets.

Nothing here touches a GPU or nvcc; everything is string building. See
``exogpu_verify.platforms`` for the codegen convention the instruction templates follow.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.types import bf16, f16, f32, i32

#: scalar type name -> C++ element type of the generated code
CPP_TYPE = {"f32": "float", "f16": "__half", "bf16": "__nv_bfloat16", "i32": "int32_t",
            "f64": "double", "i8": "int8_t", "ui8": "uint8_t"}
#: scalar type name -> PTX operand type of tensor-core instructions (f32 runs as tf32)
MMA_TYPE = {"f32": "tf32", "f16": "f16", "bf16": "bf16"}
MEMCPY_TYPES = (f32, f16, bf16, i32)

#: C++ helpers the templates call; ``InstrInfo.includes`` lists the ones an instruction needs
HELPERS = r"""
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ __forceinline__ uint32_t exo_smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t exo_pack_b16x2(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return uint32_t(__bfloat16_as_ushort(lo)) | (uint32_t(__bfloat16_as_ushort(hi)) << 16);
}
__device__ __forceinline__ uint32_t exo_pack_b16x2(__half lo, __half hi) {
  return uint32_t(__half_as_ushort(lo)) | (uint32_t(__half_as_ushort(hi)) << 16);
}
__device__ __forceinline__ void exo_unpack_b16x2(uint32_t v, __nv_bfloat16& lo, __nv_bfloat16& hi) {
  lo = __ushort_as_bfloat16(uint16_t(v & 0xffffu)); hi = __ushort_as_bfloat16(uint16_t(v >> 16));
}
__device__ __forceinline__ void exo_unpack_b16x2(uint32_t v, __half& lo, __half& hi) {
  lo = __ushort_as_half(uint16_t(v & 0xffffu)); hi = __ushort_as_half(uint16_t(v >> 16));
}
__device__ __forceinline__ uint32_t exo_lane_id() { return threadIdx.x & 31u; }
__device__ __forceinline__ uint32_t exo_cluster_ctarank() {
  uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
// wgmma shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): bits 0-13 start
// address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 swizzle
// mode (1 = 128B, 2 = 64B, 3 = 32B). Base offset 0: tiles are aligned to the swizzle pattern.
__device__ __forceinline__ uint64_t exo_wgmma_desc(const void* p, uint32_t lbo, uint32_t sbo,
                                                   uint32_t mode) {
  uint64_t d = 0;
  d |= uint64_t((exo_smem_u32(p) & 0x3FFFFu) >> 4);
  d |= uint64_t((lbo & 0x3FFFFu) >> 4) << 16;
  d |= uint64_t((sbo & 0x3FFFFu) >> 4) << 32;
  d |= uint64_t(mode) << 62;
  return d;
}
"""

#: PTX of the synchronization statements on Hopper/Ampere (what codegen emits for them)
SYNC_PTX = {
    # Fence(wgmma_fence_1, wgmma_fence_2) at warpgroup scope
    "wgmma_fence": "wgmma.fence.sync.aligned;",
    # Arrive(wgmma_async) >> cg  (cg @ Sm90_WgmmaCommitGroup)
    "wgmma_commit": "wgmma.commit_group.sync.aligned;",
    # Await(cg, L2, N) on Sm90_WgmmaCommitGroup; N is an immediate
    "wgmma_wait": "wgmma.wait_group.sync.aligned {N};",
    # Arrive(tma_to_gmem_async) >> cg (cg @ Sm90_TmaCommitGroup); issued by every lane
    "bulk_commit": "cp.async.bulk.commit_group;",
    # Await(cg, L2, N) on Sm90_TmaCommitGroup
    "bulk_wait": "cp.async.bulk.wait_group {N};",
    # Arrive(Sm80_cp_async) >> cg (cg @ Sm80_CommitGroup) / Await(cg, cuda_in_order, N)
    "cp_async_commit": "cp.async.commit_group;",
    "cp_async_wait": "cp.async.wait_group {N};",
    "cp_async_wait_all": "cp.async.wait_all;",
    # Fence/Await whose second timeline needs the async proxy (cuda_generic_and_async_proxy)
    "proxy_fence": "fence.proxy.async;",
    "mbarrier_init": "mbarrier.init.shared::cta.b64 [%0], %1;",
    "mbarrier_arrive": "mbarrier.arrive.shared::cta.b64 _, [%0];",
    "mbarrier_try_wait": "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %0, [%1], %2;",
    "cluster_arrive": "barrier.cluster.arrive.aligned;",
    "cluster_wait": "barrier.cluster.wait.aligned;",
    "cta_sync": "barrier.cta.sync 0;",
}


#: ``InstrInfo.includes`` entries are keys of this table; codegen emits each text once
HELPERS_KEY = "exogpu/platform_helpers"
INCLUDES = {HELPERS_KEY: HELPERS}


def cpp_prelude(instrs) -> str:
    """The C++ helper text every given instruction needs, each snippet once, in order."""
    seen: list[str] = []
    for p in instrs:
        for key in p.instr.includes:
            if key not in seen:
                seen.append(key)
    return "\n".join(INCLUDES.get(k, f"#include <{k}>") for k in seen)


def renamed(p, name: str):
    """An instruction procedure under a new name (families share one Python body)."""
    return replace(p, name=name)


def size_arg(args: dict, name: str) -> int:
    """A size argument as a Python int (codegen passes sizes of instructions as integers)."""
    v = args[name]
    try:
        return int(v)
    except (TypeError, ValueError):
        raise ValueError(f"instruction size argument {name}={v!r} must be a compile-time "
                         "integer for this instruction's PTX") from None


def coords_of(args: dict, name: str) -> list[str]:
    """Start coordinates of a tensor-map window, outermost first (codegen convention)."""
    c = args[f"{name}_coords"]
    if isinstance(c, str):
        c = [x.strip() for x in c.split(",")]
    return [str(x) for x in c]

