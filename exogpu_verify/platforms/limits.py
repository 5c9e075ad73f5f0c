"""Hardware limits the launch and the instructions must respect, stated once.

The resource checks (``exogpu_verify.analysis.resources``), the instruction checks and codegen
read these numbers; nothing else in the project spells them. Sources: CUDA C++ Programming
Guide, "Compute Capabilities" (technical specifications per compute capability), CUDA Driver
API ``cuTensorMapEncodeTiled``, PTX ISA (``setmaxnreg``, ``bar.sync``, ``cp.async.bulk.tensor``,
``wgmma`` matrix descriptors).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-architecture launch limits (CUDA C++ Programming Guide, compute capabilities)."""

    arch: str
    #: dynamic shared memory one CTA may request (cudaFuncAttributeMaxDynamicSharedMemorySize)
    smem_per_cta: int
    #: shared memory of one SM; every resident CTA also costs ``smem_reserved_per_cta``
    smem_per_sm: int
    smem_reserved_per_cta: int
    #: 32-bit registers of one SM (the register file shared by the resident CTAs)
    regs_per_sm: int
    max_regs_per_thread: int
    #: register allocation granularity per thread (registers are allocated per warp in
    #: units of 256, i.e. 8 per thread)
    reg_granule: int
    max_threads_per_cta: int
    max_threads_per_sm: int
    #: hardware named barriers per CTA (``bar.sync id``: ids 0..15; id 0 is the CTA barrier)
    named_barriers: int
    #: largest portable cluster; ``non_portable_cluster`` allows up to the second number
    max_cluster_portable: int
    max_cluster_non_portable: int


SM90 = Limits("sm_90a", smem_per_cta=232448, smem_per_sm=233472, smem_reserved_per_cta=1024,
              regs_per_sm=65536, max_regs_per_thread=255, reg_granule=8,
              max_threads_per_cta=1024, max_threads_per_sm=2048, named_barriers=16,
              max_cluster_portable=8, max_cluster_non_portable=16)
SM80 = Limits("sm_80", smem_per_cta=166912, smem_per_sm=167936, smem_reserved_per_cta=1024,
              regs_per_sm=65536, max_regs_per_thread=255, reg_granule=8,
              max_threads_per_cta=1024, max_threads_per_sm=2048, named_barriers=16,
              max_cluster_portable=1, max_cluster_non_portable=1)

LIMITS = {SM90.arch: SM90, SM80.arch: SM80}
#: the architecture the verifier's resource checks assume (the project's target)
DEFAULT_ARCH = SM90.arch

# ---------------------------------------------------------------- setmaxnreg (PTX ISA)
#: ``setmaxnreg.{inc,dec}.sync.aligned.u32 n``: n in [24, 256], a multiple of 8; executed by
#: every warp of a warpgroup (so a warp group that changes its budget is whole warpgroups)
SETMAXNREG_MIN = 24
SETMAXNREG_MAX = 256
SETMAXNREG_STEP = 8

# ---------------------------------------------------------------- TMA (cuTensorMapEncodeTiled)
#: every box extent is in [1, 256]
TMA_BOX_MAX = 256
#: global strides (bytes) and the inner box extent (bytes) are multiples of 16
TMA_GLOBAL_STRIDE_ALIGN = 16
TMA_INNER_BOX_ALIGN = 16
#: a tensor copy's shared-memory address is 128-byte aligned (PTX ISA cp.async.bulk.tensor)
TMA_SMEM_ALIGN = 128


def swizzle_atom_bytes(swizzle: int) -> int:
    """Bytes of one swizzle atom (8 rows of ``swizzle`` bytes): the period of the XOR pattern
    TMA and wgmma compute from address bits, so a swizzled tile starts on an atom boundary."""
    return 8 * swizzle if swizzle else 0


def smem_alignment(swizzle: int) -> int:
    """Alignment of an SMEM tile accessed by TMA with this swizzle (0: none): 128 bytes, and
    the whole swizzle atom (1024 bytes for the 128-byte swizzle)."""
    return max(TMA_SMEM_ALIGN, swizzle_atom_bytes(swizzle))


# ---------------------------------------------------------------- wgmma matrix descriptors
#: the descriptor encodes the start address >> 4: operands start 16-byte aligned
WGMMA_DESC_ALIGN = 16


def launch_registers(limits: Limits, block_dim: int, blocks_per_sm: int) -> int:
    """Registers per thread at launch for ``__launch_bounds__(block_dim, blocks_per_sm)``: the
    most that lets ``blocks_per_sm`` CTAs share the register file, in allocation granules
    (what the setmaxnreg pool of each CTA starts from)."""
    per_thread = limits.regs_per_sm // (block_dim * blocks_per_sm)
    per_thread = min(per_thread, limits.max_regs_per_thread + 1)
    return per_thread // limits.reg_granule * limits.reg_granule
