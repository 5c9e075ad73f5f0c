"""Memories (data placement) and barrier mechanisms, as value objects.

A ``Memory`` says where data lives (``space``), where it may be allocated, which collective
unit owns one shard (``native_unit``; paper 3.4, notes 1.6), and which qualitative timeline
an access gets under each instruction timeline (``qual_tls``; notes 2.3). Memories print as
the user spells them (``Sm90_SmemSwizzled(128)``); platform libraries build more of them
(register fragments, accumulator tiles) with the same class.

Abstract memories (``abstract=True``) are only parameter types of instructions: an argument
matches when its memory is the same or belongs to one of the listed ``accepts`` families.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .timelines import QUAL_TLS as Q
from .timelines import QualTL
from .units import CollUnit, cuda_cluster, cuda_cta_in_cluster, cuda_thread, cuda_warp, cuda_warpgroup

# qual-tl tables (notes 2.3): instr-tl name -> tuple of QualTL; first is the recorded one
RMEM_QUALS = {
    "cuda_in_order_instr": ("c1",),
    "Sm80_cp_async_instr": ("c1",),
    "tma_to_smem_async_instr": ("c1",),
    "tma_to_gmem_async_instr": ("c1",),
    "wgmma_zero_instr": ("wg0", "wgD"),
}
RAM_QUALS = {
    "cuda_in_order_instr": ("c2",),
    "Sm80_cp_async_instr": ("sm80", "c2"),
    "tma_to_smem_async_instr": ("g2s", "aret"),
    "tma_to_gmem_async_instr": ("s2g", "aret"),
    "wgmma_async_instr": ("wgS", "aret"),
    "cpu_in_order_instr": ("cpu",),
    "cpu_cuda_stream_instr": ("strm",),
}
HOST_QUALS = {"cpu_in_order_instr": ("cpu",), "cpu_cuda_stream_instr": ("strm",)}
MBARRIER_QUALS = {
    "cuda_in_order_instr": ("mbar",),
    "Sm80_cp_async_instr": ("mbar",),
    "tma_to_smem_async_instr": ("mbar",),
}


def _freeze(table: dict) -> tuple:
    return tuple(sorted((k, tuple(v)) for k, v in table.items()))


@dataclass(frozen=True, slots=True)
class Memory:
    """A data memory. ``space`` in host | gmem | gridconst | rmem | smem | tensormap | abstract."""

    name: str
    args: tuple = ()
    space: str = "host"
    alloc_scope: str = "cpu"  # "cpu" | "cuda" | "none"
    native_unit: CollUnit | None = field(default=None, compare=False)
    quals: tuple = field(default=(), compare=False)
    sync_exempt: bool = field(default=False, compare=False)
    symbolic_extents: bool = field(default=True, compare=False)
    accepts: frozenset[str] = field(default=frozenset(), compare=False)
    abstract: bool = field(default=False, compare=False)
    #: how the memory shows up in the printed program when it needs more than the name
    spelling: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if self.spelling is not None:
            return self.spelling
        if not self.args:
            return self.name
        return f"{self.name}({', '.join(repr(a) for a in self.args)})"

    def __repr__(self) -> str:
        return str(self)

    @property
    def family(self) -> str:
        return self.name

    @property
    def is_device(self) -> bool:
        return self.space in ("rmem", "smem")

    @property
    def is_shared(self) -> bool:
        return self.space == "smem"

    def qual_tls(self, instr_tl) -> tuple[QualTL, ...] | None:
        """Qualitative timelines of an access under ``instr_tl`` (first = recorded), or None."""
        name = getattr(instr_tl, "name", instr_tl)
        for k, v in self.quals:
            if k == name:
                return tuple(Q[a] for a in v)
        return None

    def qual_mask(self) -> frozenset[QualTL]:
        return frozenset(Q[a] for _, v in self.quals for a in v)

    @property
    def async_registers(self) -> bool:
        """Registers that an asynchronous instruction reads or writes in place (a qual with
        ``reg_async``: wgmma accumulators and A fragments). The checkers treat their
        allocation as an access of every element by the allocating threads (the physical
        registers held earlier values, e.g. of the previous task of a persistent kernel), so
        the first wgmma needs ``wgmma.fence`` (PTX ISA, wgmma.fence: "before the first
        wgmma.mma_async"), and their end of life needs every asynchronous access completed."""
        return self.space == "rmem" and any(q.reg_async for q in self.qual_mask())

    def accepts_memory(self, actual: "Memory") -> bool:
        """Can an argument in ``actual`` be passed to a parameter declared in ``self``?"""
        if actual == self:
            return True
        return actual.family in self.accepts or actual.space in self.accepts


def _mem(name, space, alloc_scope, native, quals, **kw) -> Memory:
    return Memory(name, (), space, alloc_scope, native, _freeze(quals), **kw)


DRAM = _mem("DRAM", "host", "cpu", None, HOST_QUALS, sync_exempt=True)
CudaGmemLinear = _mem("CudaGmemLinear", "gmem", "cpu", None, RAM_QUALS)
CudaGridConstant = _mem("CudaGridConstant", "gridconst", "cpu", None, RAM_QUALS,
                        sync_exempt=True, symbolic_extents=False)
CudaRmem = _mem("CudaRmem", "rmem", "cuda", cuda_thread, RMEM_QUALS, symbolic_extents=False)
CudaRmemLinear = CudaRmem
CudaSmemLinear = _mem("CudaSmemLinear", "smem", "cuda", cuda_cta_in_cluster, RAM_QUALS,
                      symbolic_extents=False)

_SWIZZLES = (32, 64, 128)


def Sm90_SmemSwizzled(swizzle: int) -> Memory:
    """Shared memory with the ``swizzle``-byte XOR swizzle used by TMA and wgmma."""
    if swizzle not in _SWIZZLES:
        raise TypeError(f"Sm90_SmemSwizzled swizzle must be one of {_SWIZZLES}, not {swizzle!r}")
    return Memory("Sm90_SmemSwizzled", (swizzle,), "smem", "cuda", cuda_cta_in_cluster,
                  _freeze(RAM_QUALS), symbolic_extents=False)


def Sm90_tensorMap(swizzle: int, *box: int) -> Memory:
    """A CUtensorMap window over a ``CudaGmemLinear`` tensor, for TMA (box = SMEM tile shape)."""
    if swizzle not in (0,) + _SWIZZLES:
        raise TypeError(f"Sm90_tensorMap swizzle must be 0, 32, 64 or 128, not {swizzle!r}")
    if not 1 <= len(box) <= 5 or not all(isinstance(b, int) and b > 0 for b in box):
        raise TypeError("Sm90_tensorMap needs 1 to 5 positive box extents, e.g. "
                        "Sm90_tensorMap(128, 64, 64)")
    return Memory("Sm90_tensorMap", (swizzle,) + tuple(box), "tensormap", "none", None,
                  _freeze(RAM_QUALS))


#: the physical mbarriers of a ring as the checkers see them (``amir/phases.py``): accesses on
#: the one qual ``mbar``, which every synchronization timeline orders in full. Never a user
#: memory: the checkers add one such variable per mbarrier (its arrivals: each lap's before
#: the next lap's, and all of a task's before its end) and one ``MbarrierWaits`` (each lap's
#: arrivals before the next lap's parity waits).
MbarrierPhases = _mem("MbarrierPhases", "mbar", "cuda", cuda_cta_in_cluster, MBARRIER_QUALS)
MbarrierWaits = _mem("MbarrierWaits", "mbar", "cuda", cuda_cta_in_cluster, MBARRIER_QUALS)
#: the memories of the variables ``amir/phases.py`` adds
PHASE_MEMORIES = (MbarrierPhases, MbarrierWaits)
#: the copy issues of an mbarrier (``amir/phases.py``): each copy's ``expect_tx`` on a phase
#: before an arrival that can complete that phase. Ordinary accesses (supersession, bounds)
#: on ``mbar``, unlike ``PHASE_MEMORIES``
MbarrierIssues = _mem("MbarrierIssues", "mbar", "cuda", cuda_cta_in_cluster, MBARRIER_QUALS)

# abstract parameter memories for instruction libraries
CudaBasicSmem = Memory("CudaBasicSmem", (), "abstract", "none", None, _freeze(RAM_QUALS),
                       accepts=frozenset({"smem"}), abstract=True)
CudaBasicDeviceVisible = Memory("CudaBasicDeviceVisible", (), "abstract", "none", None,
                                _freeze(RAM_QUALS), accepts=frozenset({"smem", "gmem"}),
                                abstract=True)
CudaDeviceVisibleLinear = Memory("CudaDeviceVisibleLinear", (), "abstract", "none", None,
                                 _freeze(RAM_QUALS),
                                 accepts=frozenset({"CudaSmemLinear", "CudaGmemLinear"}),
                                 abstract=True)

MEMORIES = {m.name: m for m in (DRAM, CudaGmemLinear, CudaGridConstant, CudaRmem, CudaSmemLinear,
                                CudaBasicSmem, CudaBasicDeviceVisible, CudaDeviceVisibleLinear)}


@dataclass(frozen=True, slots=True)
class BarrierMechanism:
    """How an Arrive/Await pair completes (notes 1.7). ``kind``: mbarrier | commit | cluster."""

    name: str
    args: tuple = ()
    kind: str = "mbarrier"
    native_unit: CollUnit | None = field(default=None, compare=False)
    await_n_zero: bool = field(default=True, compare=False)
    pre_arrive: int = 0

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}({', '.join(repr(a) for a in self.args)})"

    def __repr__(self) -> str:
        return str(self)

    @property
    def sync_checked(self) -> bool:
        return self.kind == "mbarrier"


CudaMbarrier = BarrierMechanism("CudaMbarrier", (), "mbarrier", cuda_cta_in_cluster, True)


def CudaMbarrierPreArrive(k: int) -> BarrierMechanism:
    """An mbarrier ring whose first ``k`` virtual indices count as arrived at kernel start."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise TypeError(f"CudaMbarrierPreArrive expects a positive int, not {k!r}")
    return BarrierMechanism("CudaMbarrierPreArrive", (k,), "mbarrier", cuda_cta_in_cluster, True, k)


Sm80_CommitGroup = BarrierMechanism("Sm80_CommitGroup", (), "commit", cuda_thread, False)
Sm90_TmaCommitGroup = BarrierMechanism("Sm90_TmaCommitGroup", (), "commit", cuda_warp, False)
Sm90_WgmmaCommitGroup = BarrierMechanism("Sm90_WgmmaCommitGroup", (), "commit",
                                         cuda_warpgroup, False)
CudaClusterSync = BarrierMechanism("CudaClusterSync", (), "cluster", cuda_cluster, True)

BARRIER_MECHANISMS = {m.name: m for m in (CudaMbarrier, Sm80_CommitGroup, Sm90_TmaCommitGroup,
                                          Sm90_WgmmaCommitGroup, CudaClusterSync)}


@dataclass(frozen=True, slots=True)
class RingBufferBy:
    """``e @ ring_buffer_by(d)``: a logical extent ``e`` backed by ``d`` physical slots."""

    depth: int

    def __str__(self) -> str:
        return f"ring_buffer_by({self.depth})"


def ring_buffer_by(depth: int) -> RingBufferBy:
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise TypeError(f"ring_buffer_by expects a positive int depth, not {depth!r}")
    return RingBufferBy(depth)
