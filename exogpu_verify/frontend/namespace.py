"""The names of the language (LANGUAGE.md): types, memories, collective units, timelines,
loop and synchronization keywords.

``from exogpu_verify import *`` re-exports them, and the frontend resolves a kernel's free
names against them after the user's own globals, so this module, not the package facade, is
where the language's vocabulary is listed (the frontend never imports the layers above it).
"""

from __future__ import annotations

from ..ir.memories import (DRAM, BarrierMechanism, CudaBasicDeviceVisible,  # noqa: F401
                           CudaBasicSmem, CudaClusterSync, CudaDeviceVisibleLinear,
                           CudaGmemLinear, CudaGridConstant, CudaMbarrier, CudaMbarrierPreArrive,
                           CudaRmem, CudaRmemLinear, CudaSmemLinear, Memory, Sm80_CommitGroup,
                           Sm90_SmemSwizzled, Sm90_TmaCommitGroup, Sm90_tensorMap,
                           Sm90_WgmmaCommitGroup, ring_buffer_by)
from ..ir.timelines import (INSTR_TLS, SYNC_TLS, Sm80_cp_async, Sm80_cp_async_instr,  # noqa
                            Sm80_generic, cpu_cuda_stream_instr, cpu_in_order,
                            cpu_in_order_instr, cuda_generic_and_async_proxy, cuda_in_order,
                            cuda_in_order_instr, cuda_stream_sync, cuda_temporal,
                            tma_to_gmem_async, tma_to_gmem_async_instr, tma_to_smem_async,
                            tma_to_smem_async_instr, wgmma_async, wgmma_async_instr,
                            wgmma_async_smem, wgmma_fence_1, wgmma_fence_2, wgmma_zero_instr)
from ..ir.types import (barrier, bf16, f16, f32, f64, i8, i16, i32, index, size, ui8,  # noqa
                        ui16)
from ..ir.units import (CollUnit, cuda_cluster, cuda_cta_in_cluster,  # noqa: F401
                        cuda_cta_in_cluster_strided, cuda_quadpair, cuda_thread,
                        cuda_threads_strided, cuda_warp, cuda_warp_in_cluster,
                        cuda_warp_in_cluster_strided, cuda_warpgroup)
from .language import (Arrive, Await, CudaDeviceFunction, CudaWarpConfig,  # noqa: F401
                       CudaWarps, Fence, cuda_tasks, cuda_threads, seq, stride)

LANGUAGE_NAMES = tuple(sorted(k for k in dir() if not k.startswith("_")
                              and k not in ("annotations", "LANGUAGE_NAMES")))


def language_namespace() -> dict:
    """A fresh ``{name: object}`` of the language's names (callers may extend it)."""
    g = globals()
    return {k: g[k] for k in LANGUAGE_NAMES}
