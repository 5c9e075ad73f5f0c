"""GPU IR nodes: immutable, slotted dataclasses with a source location on every node.

Names are plain strings: the frontend rejects shadowing, so a name denotes one variable in
a procedure. ``srcinfo`` does not take part in equality, so a printed and re-parsed program
compares equal to the original.

Expressions
    ``Const``, ``Read`` (variable or array element), ``BinOp``, ``UnOp``, ``BuiltIn``,
    ``StrideExpr``, ``WindowExpr`` (a window ``A[i, 0:64]``: ``Point``/``Interval`` coords).
Statements
    ``Alloc``, ``BarrierAlloc``, ``Assign``, ``Reduce``, ``WindowStmt``, ``For``, ``If``,
    ``Call``, ``With`` (``CudaDeviceFunction`` / ``CudaWarps``), ``Fence``, ``Arrive``,
    ``Await``, ``Pass``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Union

from .memories import BarrierMechanism, Memory
from .srcinfo import NO_SRC, SrcInfo
from .timelines import InstrTL, SyncTL
from .types import ControlType, ScalarType
from .units import CollUnit

SRC = field(default=NO_SRC, compare=False, repr=False)

# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Const:
    val: int | float | bool
    type: ControlType | ScalarType
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Read:
    """A control variable (``idx == ()``) or a data read ``A[i, j]`` / scalar ``x``."""

    name: str
    idx: tuple["Expr", ...]
    type: ControlType | ScalarType
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class BinOp:
    """``op`` in ``+ - * / % < <= > >= == != and or``; ``/`` is floor division on control."""

    op: str
    lhs: "Expr"
    rhs: "Expr"
    type: ControlType | ScalarType
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class UnOp:
    """``op`` in ``-`` and ``not``."""

    op: str
    arg: "Expr"
    type: ControlType | ScalarType
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class BuiltIn:
    """A data builtin (``relu``, ``sqrt``, ``exp``, ``select``, ``fmax``, ``fmin``, ``abs``)."""

    fn: str
    args: tuple["Expr", ...]
    type: ScalarType
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class StrideExpr:
    """``stride(A, dim)``: the element stride of a tensor dimension."""

    name: str
    dim: int
    type: ControlType
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Point:
    pt: "Expr"
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Interval:
    lo: "Expr"
    hi: "Expr"
    srcinfo: SrcInfo = SRC


WAccess = Union[Point, Interval]


@dataclass(frozen=True, slots=True)
class WindowExpr:
    """``A[c0, lo:hi, ...]``; a full-tensor argument is normalized to all-interval form."""

    name: str
    idx: tuple[WAccess, ...]
    type: ScalarType
    srcinfo: SrcInfo = SRC

    @property
    def rank(self) -> int:
        return sum(isinstance(w, Interval) for w in self.idx)


Expr = Union[Const, Read, BinOp, UnOp, BuiltIn, StrideExpr, WindowExpr]

# ---------------------------------------------------------------- types of variables


@dataclass(frozen=True, slots=True)
class TensorType:
    """A data parameter or allocation type: scalar precision, shape, dense or window."""

    scalar: ScalarType
    shape: tuple[Expr, ...]
    is_window: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True, slots=True)
class BarrierDim:
    """One barrier array dimension; ``ring_depth`` for ``e @ ring_buffer_by(d)``."""

    extent: Expr
    ring_depth: int | None = None


# ---------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Alloc:
    name: str
    type: TensorType
    mem: Memory
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class BarrierAlloc:
    name: str
    dims: tuple[BarrierDim, ...]
    mech: BarrierMechanism
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Assign:
    name: str
    idx: tuple[Expr, ...]
    rhs: Expr
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Reduce:
    """``name[idx] += rhs``."""

    name: str
    idx: tuple[Expr, ...]
    rhs: Expr
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class WindowStmt:
    """``name = rhs`` (an alias); ``special`` is set for ``A[...] @ Sm90_tensorMap(...)``."""

    name: str
    rhs: WindowExpr
    special: Memory | None = None
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Seq:
    pragma_unroll: int | None = None

    def __str__(self) -> str:
        return "seq"


@dataclass(frozen=True, slots=True)
class CudaTasks:
    def __str__(self) -> str:
        return "cuda_tasks"


@dataclass(frozen=True, slots=True)
class CudaThreads:
    unit: CollUnit

    def __str__(self) -> str:
        return "cuda_threads"


LoopMode = Union[Seq, CudaTasks, CudaThreads]


@dataclass(frozen=True, slots=True)
class For:
    iter: str
    lo: Expr
    hi: Expr
    mode: LoopMode
    body: tuple["Stmt", ...]
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    body: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] = ()
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class BarrierRef:
    """``z[i, :]`` as an Arrive/Await target or trailing barrier; ``:`` is ``Interval``."""

    name: str
    idx: tuple[WAccess, ...]
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a proc or instruction; ``barriers`` are trailing ``>> z[...]`` targets."""

    callee: "Procedure"
    args: tuple[Expr, ...]
    barriers: tuple[BarrierRef, ...] = ()
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class CudaWarpConfig:
    """A named warp group of a warp-specialized kernel (``setmaxnreg`` budgets optional)."""

    name: str
    count: int
    setmaxnreg_dec: int | None = None
    setmaxnreg_inc: int | None = None

    def __str__(self) -> str:
        s = f"CudaWarpConfig({self.name!r}, {self.count}"
        if self.setmaxnreg_dec is not None:
            s += f", setmaxnreg_dec={self.setmaxnreg_dec}"
        if self.setmaxnreg_inc is not None:
            s += f", setmaxnreg_inc={self.setmaxnreg_inc}"
        return s + ")"


@dataclass(frozen=True, slots=True)
class CudaDeviceFunction:
    """Launch configuration of a kernel. ``blockDim`` is derived from ``warp_config`` if given."""

    blockDim: int
    clusterDim: int = 1
    warp_config: tuple[CudaWarpConfig, ...] = ()
    blocks_per_sm: int = 1
    #: codegen's order of the persistent task loop (docs/language.md): 0 lexicographic; R > 1
    #: rasterized in panels of R values of the second-to-last task loop. Tasks impose no
    #: order, so this changes no meaning and nothing the checkers see.
    task_raster: int = 0
    #: clusters of more than 8 CTAs (up to 16) need this explicit opt-in
    #: (cudaFuncAttributeNonPortableClusterSizeAllowed)
    non_portable_cluster: bool = False

    def __str__(self) -> str:
        parts = []
        if self.warp_config:
            parts.append(f"warp_config=[{', '.join(str(w) for w in self.warp_config)}]")
        else:
            parts.append(f"blockDim={self.blockDim}")
        if self.clusterDim != 1:
            parts.append(f"clusterDim={self.clusterDim}")
        if self.blocks_per_sm != 1:
            parts.append(f"blocks_per_sm={self.blocks_per_sm}")
        if self.task_raster:
            parts.append(f"task_raster={self.task_raster}")
        if self.non_portable_cluster:
            parts.append("non_portable_cluster=True")
        return f"CudaDeviceFunction({', '.join(parts)})"

    def warp_range(self, name: str) -> tuple[int, int] | None:
        lo = 0
        for w in self.warp_config:
            if w.name == name:
                return (lo, lo + w.count)
            lo += w.count
        return None


@dataclass(frozen=True, slots=True)
class CudaWarps:
    lo: int | None = None
    hi: int | None = None
    name: str | None = None

    def __str__(self) -> str:
        parts = []
        if self.lo is not None or self.hi is not None:
            parts += [str(self.lo), str(self.hi)]
        if self.name is not None:
            parts.append(f"name={self.name!r}")
        return f"CudaWarps({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class With:
    ctx: CudaDeviceFunction | CudaWarps
    body: tuple["Stmt", ...]
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Fence:
    L1: SyncTL
    L2: SyncTL
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Arrive:
    L1: SyncTL
    targets: tuple[BarrierRef, ...]
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Await:
    target: BarrierRef
    L2: SyncTL
    N: int = 0
    srcinfo: SrcInfo = SRC


@dataclass(frozen=True, slots=True)
class Pass:
    srcinfo: SrcInfo = SRC


Stmt = Union[Alloc, BarrierAlloc, Assign, Reduce, WindowStmt, For, If, Call, With, Fence, Arrive,
             Await, Pass]

# ---------------------------------------------------------------- procedures


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter: control (``type`` a ControlType) or data (``type`` a TensorType + mem)."""

    name: str
    type: ControlType | TensorType
    mem: Memory | None = None
    srcinfo: SrcInfo = SRC

    @property
    def is_data(self) -> bool:
        return isinstance(self.type, TensorType)


@dataclass(frozen=True, slots=True)
class InstrInfo:
    """What makes a procedure a hardware instruction (``@instr``)."""

    timeline: InstrTL
    unit: CollUnit
    barrier: BarrierMechanism | None = None
    codegen: object = field(default=None, compare=False)
    codegen_text: str | None = None
    #: param name -> tuple of collective units, one per leading (sharded) dimension
    distributed: tuple[tuple[str, tuple[CollUnit, ...]], ...] = ()
    #: names of params accessed atomically (e.g. TMA reduce-add)
    atomic: tuple[str, ...] = ()
    #: the C++/PTX include or helper snippets codegen needs
    includes: tuple[str, ...] = ()
    #: declared preconditions on the arguments (``exogpu_verify.ir.checks``); like the
    #: lowering, not part of the printed program (an instruction is printed by its name)
    checks: tuple = field(default=(), compare=False)

    def distributed_units(self, param: str) -> tuple[CollUnit, ...]:
        for k, v in self.distributed:
            if k == param:
                return v
        return ()


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One step of a procedure's provenance: the rewrite, its arguments, what was checked."""

    name: str
    args: str
    checked: str
    unsafe: bool = False
    #: statement-path forwarding from the input procedure (set by ``exogpu_verify.schedule``)
    forward: object = field(default=None, compare=False, repr=False)
    #: how the rewrite was called (``schedule.record.Call``), for replaying the schedule
    call: object = field(default=None, compare=False, repr=False)
    #: sha256 of the printed result procedure
    result_hash: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ProcedureTools:
    """The entry points behind ``Procedure``'s convenience methods.

    ``p.verify()``, ``p.interpret()`` and the Exo-style cursors (``p.find()``, ...) are
    implemented in layers above the IR (``api``, ``semantics``, ``schedule``), which the IR
    never imports. The package facade (``exogpu_verify.facade``) builds one ``ProcedureTools``
    and hands it to the frontend, which stores it on every procedure it parses; rewrites keep
    it (``dataclasses.replace`` copies fields). A procedure built without it (by
    ``exogpu_verify.frontend`` directly) still works with the functions ``verify(p)``,
    ``interpret(p, ...)`` and ``exogpu_verify.schedule.find(p, ...)``.
    """

    verify: Callable  # (p, sizes: dict | None) -> Report
    interpret: Callable  # (p, args: dict) -> None
    find: Callable  # (p, pattern, many) -> Cursor
    find_loop: Callable  # (p, pattern, many) -> Cursor
    find_alloc_or_arg: Callable  # (p, name) -> Cursor
    forward: Callable  # (p, cursor) -> Cursor


@dataclass(frozen=True, slots=True)
class Procedure:
    name: str
    params: tuple[Param, ...]
    preds: tuple[Expr, ...]
    body: tuple[Stmt, ...]
    instr: InstrInfo | None = None
    srcinfo: SrcInfo = SRC
    provenance: tuple[Rewrite, ...] = field(default=(), compare=False, repr=False)
    #: the module globals of the defining file (for VERIFY_SIZES); not part of the program
    module: object = field(default=None, compare=False, repr=False)
    #: what the convenience methods below call (set by the facade); not part of the program
    tools: ProcedureTools | None = field(default=None, compare=False, repr=False)

    @property
    def is_instr(self) -> bool:
        return self.instr is not None

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def size_params(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if not p.is_data and p.type.name == "size")

    def with_body(self, body) -> "Procedure":
        return replace(self, body=tuple(body))

    def __str__(self) -> str:
        from .printer import print_proc

        return print_proc(self)

    def __hash__(self) -> int:
        return hash((self.name, self.params, self.body))

    # verification, execution and cursor entry points live in layers above the IR; they are
    # reached through the ProcedureTools the facade attached (see ProcedureTools)
    def _tools(self, method: str, instead: str) -> ProcedureTools:
        if self.tools is None:
            raise TypeError(f"{self.name}.{method}(...) needs a procedure built by "
                            "exogpu_verify.proc or exogpu_verify.parse_proc_source (this one was "
                            f"built by exogpu_verify.frontend directly); call {instead} instead")
        return self.tools

    def verify(self, **sizes):
        """``verify(self, sizes=sizes)``: all sizes without arguments, else those sizes."""
        return self._tools("verify", "exogpu_verify.verify(p, sizes=...)").verify(
            self, sizes or None)

    def interpret(self, **args):
        """Run the sequential meaning on numpy arrays, in place (``interpret(self, **args)``)."""
        return self._tools("interpret", "exogpu_verify.interpret(p, ...)").interpret(self, args)

    def find(self, pattern: str, many: bool = False):
        return self._tools("find", "exogpu_verify.schedule.find(p, ...)").find(self, pattern, many)

    def find_loop(self, pattern: str, many: bool = False):
        return self._tools("find_loop", "exogpu_verify.schedule.find_loop(p, ...)").find_loop(
            self, pattern, many)

    def find_alloc_or_arg(self, name: str):
        return self._tools("find_alloc_or_arg", "exogpu_verify.schedule.find_alloc_or_arg(p, "
                           "...)").find_alloc_or_arg(self, name)

    def forward(self, cursor):
        return self._tools("forward", "exogpu_verify.schedule.forward(p, c)").forward(
            self, cursor)
