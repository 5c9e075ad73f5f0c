"""Results of the collective analysis, as data: thread mappings per statement.

``ThreadMapping`` is the paper's ``f_omega``: from the enclosing ``cuda_tasks`` and
``cuda_threads`` iterators to the set of natural thread ids that execute a statement. Task
iterators spread work over clusters, not threads: they are inputs of the mapping that never
change the thread id. ``threads(env)`` evaluates it concretely; ``to_isl()`` gives the same
relation as an ``islpy.Map`` ``[params] -> { [loop vars] -> [tid] }`` for the symbolic
checker. Codegen reads the inverse per iterator from ``ThreadIter`` (``tiling.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.affine import to_isl_str
from .derive import ThreadIter, WarpRange
from .tiling import Collective
from .walk import Path

_ISL_WORDS = {"mod", "floor", "ceil", "min", "max", "exists", "and", "or", "not", "implies",
              "infty", "NaN", "true", "false", "rat", "tid"}


def isl_name(name: str) -> str:
    """An identifier safe to use in isl syntax."""
    return name + "_" if name in _ISL_WORDS else name


@dataclass(frozen=True, slots=True)
class TaskLoop:
    """An enclosing ``cuda_tasks`` loop: ``lo <= name < hi``."""

    name: str
    lo: N.Expr
    hi: N.Expr


def _expr_names(e, out: set) -> None:
    if isinstance(e, N.Read) and not e.idx:
        out.add(e.name)
    elif isinstance(e, N.StrideExpr):
        out.add(f"stride_{e.name}_{e.dim}")
    elif isinstance(e, N.BinOp):
        _expr_names(e.lhs, out)
        _expr_names(e.rhs, out)
    elif isinstance(e, N.UnOp):
        _expr_names(e.arg, out)


def _start_text(d, rename: dict) -> str:
    """isl text of a grid dimension's start over the renamed loop variables."""
    parts = [f"{c}*{rename.get(n, isl_name(n))}" for n, c in d.start.terms]
    if d.start.const or not parts:
        parts.append(str(d.start.const))
    return " + ".join(parts)


@dataclass(frozen=True, slots=True)
class ThreadMapping:
    """Which threads run a statement, as a function of its enclosing loop variables."""

    collective: Collective
    tasks: tuple[TaskLoop, ...]
    thread_iters: tuple[ThreadIter, ...]
    loop_vars: tuple[str, ...]  # tasks and thread iterators, outermost first

    @property
    def num_threads(self) -> int:
        return self.collective.size

    @property
    def block_dim(self) -> int:
        return self.collective.block_dim

    @property
    def cluster_dim(self) -> int:
        return self.collective.cluster_dim

    def iter(self, name: str) -> ThreadIter | None:
        for t in self.thread_iters:
            if t.name == name:
                return t
        return None

    def threads(self, env: dict) -> range | frozenset:
        """Natural thread ids for concrete values of the thread iterators (tasks ignored)."""
        for t in self.thread_iters:
            if not 0 <= int(env.get(t.name, 0)) < t.count:
                return frozenset()
        return self.collective.threads(env)

    def to_isl_str(self) -> str:
        params: set = set()
        cons = []
        for t in self.tasks:
            _expr_names(t.lo, params)
            _expr_names(t.hi, params)
            ren = {v: isl_name(v) for v in self.loop_vars}
            cons.append(f"{to_isl_str(t.lo, ren)} <= {isl_name(t.name)} < "
                        f"{to_isl_str(t.hi, ren)}")
        for t in self.thread_iters:
            cons.append(f"0 <= {isl_name(t.name)} < {t.count}")
        params = sorted(isl_name(p) for p in params if p not in self.loop_vars)
        ren = {v: isl_name(v) for v in self.loop_vars}
        rel, exist = self.tid_constraint(ren, "tid", "x")
        if exist:
            rel = f"exists ({', '.join(exist)} : {rel})"
        cons.append(rel)
        ins = ", ".join(isl_name(v) for v in self.loop_vars)
        return f"[{', '.join(params)}] -> {{ [{ins}] -> [tid] : {' and '.join(cons)} }}"

    def tid_constraint(self, rename: dict, tid: str, xprefix: str) -> tuple[str, list[str]]:
        """isl text "``tid`` is one of the statement's threads" over the loop variables as
        renamed by ``rename``; returns (text, names of the existential variables it uses)."""
        terms, exist, cons = [], [], []
        for k, d in enumerate(self.collective.dims):
            start = _start_text(d, rename)
            if d.length > 1:
                x = f"{xprefix}{k}_"
                exist.append(x)
                cons.append(f"0 <= {x} < {d.length}")
                start = f"({start}) + {x}"
            terms.append(f"{d.pitch} * ({start})")
        cons.append(f"{tid} = {' + '.join(terms) if terms else '0'}")
        return " and ".join(cons), exist

    def progression(self, rename: dict) -> tuple[str, int, int] | None:
        """The thread set as an arithmetic progression ``{base + pitch*x : 0 <= x < length}``
        (``base`` isl text over the loop variables renamed by ``rename``), or None when it is
        not one (several dimensions with more than one coordinate that do not tile each
        other). Exactly the set ``tid_constraint`` states, without its existentials."""
        base, live = [], []
        for d in self.collective.dims:
            if d.pitch < 1:
                return None
            base.append(f"{d.pitch} * ({_start_text(d, rename)})")
            if d.length > 1:
                live.append(d)
        text = " + ".join(base) if base else "0"
        if not live:
            return text, 1, 1
        live.sort(key=lambda d: d.pitch)
        pitch, length = live[0].pitch, live[0].length
        for outer in live[1:]:
            # starts are in ``base``: the coordinates add p*x + P*y (0 <= x < length,
            # 0 <= y < outer.length), one progression exactly when P = p * length
            if outer.pitch != pitch * length:
                return None
            length *= outer.length
        return text, pitch, length

    def to_isl(self):
        """``islpy.Map`` ``[params] -> { [loop vars] -> [tid] }``."""
        import islpy as isl

        return isl.Map(self.to_isl_str())


@dataclass(frozen=True, slots=True)
class StmtInfo:
    """What the collective analysis knows of one statement."""

    path: Path
    stmt: object
    scope: str  # "cpu" | "cuda"
    mapping: ThreadMapping | None
    warp_role: str | None = None
    warps: WarpRange | None = None  # for CudaWarps blocks: the warps of the body

    @property
    def line(self) -> int | None:
        si = getattr(self.stmt, "srcinfo", None)
        return si.line if si is not None else None


@dataclass(frozen=True, slots=True)
class KernelInfo:
    """One ``CudaDeviceFunction``: its path and launch configuration."""

    path: Path
    config: N.CudaDeviceFunction


@dataclass(frozen=True)
class CollectiveInfo:
    """Result of ``analyze_collectives``: per-statement scope and thread mapping."""

    proc: str
    stmts: tuple[StmtInfo, ...]
    kernels: tuple[KernelInfo, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    _by_path: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_path", MappingProxyType({s.path: s for s in self.stmts}))

    def at(self, path: Path) -> StmtInfo | None:
        return self._by_path.get(path)

    def mapping(self, path: Path) -> ThreadMapping | None:
        s = self._by_path.get(path)
        return s.mapping if s is not None else None

    def at_line(self, line: int) -> list[StmtInfo]:
        return [s for s in self.stmts if s.line == line]

    def thread_iters(self) -> dict[str, ThreadIter]:
        """Every ``cuda_threads`` iterator of the procedure, by name (codegen's inverse map)."""
        out = {}
        for s in self.stmts:
            if s.mapping is not None:
                for t in s.mapping.thread_iters:
                    out[t.name] = t
        return out
