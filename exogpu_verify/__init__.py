"""exogpu_verify: the exogpu language and everything that proves things about it.

``from exogpu_verify import *`` gives the language of LANGUAGE.md: ``proc``, ``instr``,
types, memories, collective units, timelines, loop and synchronization keywords, and the
entry points ``verify`` and ``interpret``. Importing needs no GPU, CuPy or nvcc.
"""

from .errors import Diagnostic, ExoGpuError, InternalError  # noqa: F401
from .frontend.decorators import instr, parse_proc_source, proc  # noqa: F401
from .frontend.language import (Arrive, Await, CudaDeviceFunction, CudaWarpConfig,  # noqa: F401
                                CudaWarps, Fence, cuda_tasks, cuda_threads, seq, stride)
from .ir.memories import (DRAM, CudaBasicDeviceVisible, CudaBasicSmem, CudaClusterSync,  # noqa
                          CudaDeviceVisibleLinear, CudaGmemLinear, CudaGridConstant,
                          CudaMbarrier, CudaMbarrierPreArrive, CudaRmem, CudaRmemLinear,
                          CudaSmemLinear, Memory, BarrierMechanism, Sm80_CommitGroup,
                          Sm90_SmemSwizzled, Sm90_TmaCommitGroup, Sm90_tensorMap,
                          Sm90_WgmmaCommitGroup, ring_buffer_by)
from .ir.nodes import Procedure  # noqa: F401
from .ir.timelines import (INSTR_TLS, SYNC_TLS, Sm80_cp_async, Sm80_cp_async_instr,  # noqa
                           Sm80_generic, cpu_cuda_stream_instr, cpu_in_order,
                           cpu_in_order_instr, cuda_generic_and_async_proxy, cuda_in_order,
                           cuda_in_order_instr, cuda_stream_sync, cuda_temporal,
                           tma_to_gmem_async, tma_to_gmem_async_instr, tma_to_smem_async,
                           tma_to_smem_async_instr, wgmma_async, wgmma_async_instr,
                           wgmma_async_smem, wgmma_fence_1, wgmma_fence_2, wgmma_zero_instr)
from .ir.types import (barrier, bf16, f16, f32, f64, i8, i16, i32, index, size, ui8,  # noqa
                       ui16)
from .ir.units import (CollUnit, cuda_cluster, cuda_cta_in_cluster,  # noqa: F401
                       cuda_cta_in_cluster_strided, cuda_quadpair, cuda_thread,
                       cuda_threads_strided, cuda_warp, cuda_warp_in_cluster,
                       cuda_warp_in_cluster_strided, cuda_warpgroup)


def verify(p, sizes=None, mode=None, timeout_s=60.0):
    """Check ``seq[p] == par[p]``; see ``exogpu_verify.api.verify``."""
    from .api import verify as _verify

    return _verify(p, sizes=sizes, mode=mode, timeout_s=timeout_s)


def interpret(p, **args):
    """Run ``p`` with its sequential meaning on numpy arrays (in place)."""
    from .semantics import interpret as _interpret

    return _interpret(p, **args)


__all__ = [k for k in dir() if not k.startswith("_") and k not in ("errors", "frontend", "ir")]
