"""AMIR: the abstract-machine IR (paper 5.1), used only for synchronization checking.

Windows and CPU-scope proc calls are gone (inlined); every data effect is an ``AmAccess``
on a base variable with a box of indices and an access mode, carrying the instruction
timeline that fixes its qualitative timelines. ``AmCheck`` carries the conditions a
statement's instances must meet (window bounds, argument shapes, instruction preconditions). Control expressions are GPU IR expressions
over the (possibly renamed) control variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.memories import BarrierMechanism, Memory
from ..ir.nodes import CudaDeviceFunction, CudaWarps, Expr
from ..ir.srcinfo import NO_SRC, SrcInfo
from ..ir.timelines import InstrTL, SyncTL
from ..ir.units import CollUnit

SRC = field(default=NO_SRC, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmFor:
    iter: str
    lo: Expr
    hi: Expr
    kind: str  # "seq" | "task" | "threads"
    unit: CollUnit | None
    body: tuple
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)
    #: True for the innermost cuda_tasks loop: each iteration is one device task (a cluster)
    innermost_task: bool = False


@dataclass(frozen=True, slots=True)
class AmIf:
    cond: Expr
    body: tuple
    orelse: tuple
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmKernel:
    """A kernel launch: stream fence, the task nest over fresh clusters, join, stream fence."""

    cfg: CudaDeviceFunction
    body: tuple
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmWarps:
    ctx: CudaWarps
    body: tuple
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmAlloc:
    name: str
    shape: tuple  # extents (Expr); for barriers the logical extents
    mem: Memory | BarrierMechanism
    ring: tuple = ()  # barrier ring depth per dim (None = not a ring dimension)
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)
    display: str = ""
    #: an mbarrier ring whose next lifetime continues its running index (``phases.py``):
    #: it is allocated directly in a seq loop of a task, so the next iteration's Awaits on
    #: pre-arrived indices ``v`` wait on this lifetime's Arrives on ``extent + v``
    continues: bool = False


@dataclass(frozen=True, slots=True)
class AmFree:
    name: str
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmAccess:
    """A read or mutation of ``name[box]``; ``box`` per dim is ("pt", e) or ("iv", lo, hi)."""

    name: str
    box: tuple
    mode: str  # "read" | "write" | "rw" | "atomic"
    instr_tl: InstrTL
    barriers: tuple = ()  # trailing barrier targets: tuple of AmBarrierRef
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)
    what: str = ""
    #: False for a wgmma's access to an accumulator that wgmmas of another shape also
    #: access: the hardware orders accumulator accesses only between wgmmas of one shape
    #: (PTX ISA, wgmma.fence), so the access is asynchronous like the other operands
    #: (``convert.py``, ``_unorder_mixed_shapes``)
    hw_order: bool = True
    #: restricts the access to the statement's lead threads (``amir/lead.py``): the
    #: copy-issue accesses ``amir/phases.py`` adds; ``None`` for every other access
    lead: tuple | None = None


@dataclass(frozen=True, slots=True)
class AmCheck:
    """Conditions (``analysis.conditions.Condition``) that must hold at every instance of the
    statement that follows: argument shapes, instruction preconditions, window bounds. The
    concrete machine evaluates them; the symbolic checker makes each an obligation."""

    conds: tuple
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmBarrierRef:
    name: str
    idx: tuple  # per dim ("pt", e) or ("iv", lo, hi)
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class AmFence:
    L1: SyncTL
    L2: SyncTL
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmArrive:
    L1: SyncTL
    targets: tuple  # AmBarrierRef
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmAwait:
    target: AmBarrierRef
    L2: SyncTL
    N: int
    srcinfo: SrcInfo = SRC
    path: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AmProc:
    name: str
    params: tuple  # names of control params
    data_params: tuple  # (name, Memory, shape) of data params
    preds: tuple
    body: tuple
    srcinfo: SrcInfo = SRC
