"""Declared instruction preconditions: what an instruction requires of its arguments.

An ``@instr(..., checks=(...))`` lists these beside the instruction's own ``assert``s (which
are preconditions too: every ``assert`` of an instruction, ``stride()`` asserts included, is
checked at each call). They are part of the instruction's definition (``InstrInfo.checks``),
so they live with the IR; the platform libraries declare them (``platforms/_tma.py``,
``_wgmma.py``, ``cuda.py``) and the hardware numbers they are checked against are in
``platforms/limits.py``. The checker (``exogpu_verify.analysis.instr_checks``) turns each into
conditions on the call's arguments (kind ``instruction`` or ``resource``), for all sizes;
codegen reads the same objects (the mbarrier transaction count of a TMA load comes from
``TensorMapCopy.expect_tx_bytes``), so the checked fact and the generated code agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod


@dataclass(frozen=True, slots=True)
class TensorMapCopy:
    """A TMA tensor copy between the tensor-map window ``tmap`` and the SMEM tile ``smem``
    (PTX ISA cp.async.bulk.tensor; CUDA Driver API cuTensorMapEncodeTiled).

    At each call: the tensor map's box equals the tile the instruction copies (a point of the
    window is box extent 1; with ``slices > 1``, a multicast, each CTA copies the ``1/slices``
    part of the tile's first dimension and the box is that slice); the element type and the
    swizzle of the tensor map equal the SMEM memory's (``Sm90_SmemSwizzled(s)`` for swizzle
    ``s``, ``CudaSmemLinear`` for 0); the SMEM tile starts 128-byte aligned, on a swizzle
    atom for a swizzled map; a copy that completes on an mbarrier delivers to each receiving
    CTA exactly the bytes the instruction expects (``expect_tx_bytes``). The encoding facts
    of the map (box extents at most 256, inner box a multiple of 16 bytes and at most the
    swizzle span, global strides multiples of 16 bytes) are checked where the map is made.
    """

    tmap: str
    smem: str
    slices: int = 1
    #: cluster ranks between the CTAs of a multicast group
    cta_stride: int = 1

    def expect_tx_bytes(self, tile: list[int], elem_bytes: int) -> int:
        """Bytes the issuing CTA's mbarrier expects per copy (``mbarrier.expect_tx``): the
        whole tile (for a multicast, every slice of it arrives in every CTA)."""
        return prod(tile) * elem_bytes


@dataclass(frozen=True, slots=True)
class WgmmaOperand:
    """An SMEM operand of ``wgmma.mma_async`` read through a matrix descriptor (PTX ISA
    9.7.15.5.1.2): the descriptor the instruction builds says swizzle ``swizzle`` and
    ``major`` ("K": rows of the tile are K-contiguous, ``[rows, K]``; "MN": ``[C, K, W]``
    atoms with the M/N index contiguous). At each call the argument's memory is
    ``Sm90_SmemSwizzled(swizzle)``, its last dimension is contiguous (stride 1: the majorness
    the descriptor assumes), and its start address is 16-byte aligned and sits where the
    descriptor's base offset 0 says: in the first row of a swizzle atom, with the K slice
    (``k_bytes``) inside that row for K-major, at an atom boundary for MN-major."""

    param: str
    swizzle: int
    major: str
    k_bytes: int = 32


@dataclass(frozen=True, slots=True)
class RegisterCount:
    """``setmaxnreg.{action}`` with per-thread register count ``param`` (PTX ISA setmaxnreg):
    a constant in [24, 256] and a multiple of 8 (kind ``resource``)."""

    param: str
    action: str  # "inc" | "dec"


@dataclass(frozen=True, slots=True)
class Aligned:
    """The start address of the argument ``param`` is a multiple of ``bytes``, or of the
    bytes of ``elems`` elements when ``elems`` names a size parameter (``cp.async`` of ``n``
    elements); with ``rows=True`` also every row start (the leading stride in bytes is a
    multiple of it: ``ldmatrix`` reads 16-byte rows; shared memory only).

    In shared memory the address is the window's place in the static SMEM layout. In global
    memory it is the tensor's base pointer plus the window's element offset: the offset is
    checked (a sufficient condition, see ``analysis.instr_checks``) and the base pointer is
    checked at launch (``exogpu_codegen.host``), since the caller may pass any pointer."""

    param: str
    bytes: int = 0
    rows: bool = False
    elems: str | None = None


CHECK_TYPES = (TensorMapCopy, WgmmaOperand, RegisterCount, Aligned)

__all__ = ["Aligned", "CHECK_TYPES", "RegisterCount", "TensorMapCopy", "WgmmaOperand"]
