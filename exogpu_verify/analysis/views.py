"""What each data name denotes at a statement: a tensor or a window of one, with its layout.

``walk_views(p, shardings, smem)`` visits every statement of ``p`` in program order with the
``View`` of every data name in scope: the base tensor (parameter or allocation), the window's
indices in the base's coordinates, the element strides of the base (C order over the
non-distributed dimensions, as codegen lays memory out; ``stride(p, d)`` for window
parameters, whose strides only the caller knows), the byte offset of shared-memory
allocations in the kernel's static SMEM layout, and for tensor maps the box per base
dimension. The precondition checks read argument shapes, strides and addresses from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..ir import nodes as N
from ..ir.memories import Memory
from ..ir.types import ScalarType, index
from .conditions import C, add, mul, sub
from .walk import Path


@dataclass(frozen=True)
class Base:
    """A parameter or allocation."""

    name: str
    scalar: ScalarType
    mem: Memory | None
    shape: tuple
    strides: tuple          # element stride per dim: Expr, or None for a distributed dim
    ndist: int = 0
    smem_offset: int | None = None  # byte offset in the kernel's SMEM layout
    path: Path | None = None         # allocation path (None for parameters)


@dataclass(frozen=True)
class TensorMapInfo:
    """A tensor map made by ``name = X[...] @ Sm90_tensorMap(swizzle, *box)``."""

    name: str
    mem: Memory
    box: tuple               # box extent per base dimension (1 for a point of the window)
    srcinfo: object

    @property
    def swizzle(self) -> int:
        return self.mem.args[0]


@dataclass(frozen=True)
class View:
    name: str
    base: Base
    idx: tuple               # per base dim: ("pt", e) | ("iv", lo, hi)
    tmap: TensorMapInfo | None = None

    @property
    def mem(self) -> Memory | None:
        return self.tmap.mem if self.tmap is not None else self.base.mem

    @property
    def scalar(self) -> ScalarType:
        return self.base.scalar

    @property
    def iv_dims(self) -> list[int]:
        return [d for d, w in enumerate(self.idx) if w[0] == "iv"]

    @property
    def extents(self) -> list:
        return [sub(self.idx[d][2], self.idx[d][1]) for d in self.iv_dims]

    @property
    def strides(self) -> list:
        return [self.base.strides[d] for d in self.iv_dims]

    @property
    def is_base(self) -> bool:
        """The whole base tensor, unwindowed."""
        return self.tmap is None and all(
            w[0] == "iv" and _const(w[1]) == 0 and w[2] == ext
            for w, ext in zip(self.idx, self.base.shape))

    def start_elems(self):
        """Element offset of the view's first element from the shard's first element (None
        when a stride is unknown)."""
        off = C(0)
        for d, w in enumerate(self.idx):
            s = self.base.strides[d]
            if s is None:
                continue  # a distributed dimension selects the executing unit's own shard
            off = add(off, mul(w[1], s))
        return off

    def window(self, idx, name: str | None = None) -> "View":
        """The view ``self[idx]`` (``idx``: Point/Interval per interval dim of self)."""
        out, k = [], 0
        for w in self.idx:
            if w[0] == "pt":
                out.append(w)
                continue
            a = idx[k]
            k += 1
            if isinstance(a, N.Interval):
                out.append(("iv", add(w[1], a.lo), add(w[1], a.hi)))
            else:
                out.append(("pt", add(w[1], a.pt if isinstance(a, N.Point) else a)))
        return View(name or self.name, self.base, tuple(out), self.tmap)


def _const(e):
    from ..ir.affine import const_value

    return const_value(e)


def c_strides(shape, ndist: int = 0) -> tuple:
    """C-order element strides over the dimensions after the first ``ndist`` (None there)."""
    out, acc = [], C(1)
    for e in reversed(shape[ndist:]):
        out.append(acc)
        acc = mul(acc, e)
    return (None,) * ndist + tuple(reversed(out))


def param_view(prm: N.Param) -> View:
    t: N.TensorType = prm.type
    if t.is_window:
        strides = tuple(N.StrideExpr(prm.name, d, index) for d in range(t.rank))
    else:
        strides = c_strides(t.shape)
    base = Base(prm.name, t.scalar, prm.mem, t.shape, strides)
    return View(prm.name, base, tuple(("iv", C(0), e) for e in t.shape))


def window_stmt_view(s: N.WindowStmt, scope: dict) -> View | None:
    """The view a window statement defines (for ``@ Sm90_tensorMap(swizzle, *box)``, the
    box entries belong to the window's interval dimensions, in order; points are box 1)."""
    src = scope.get(s.rhs.name)
    if src is None:
        return None
    v = src.window(s.rhs.idx, s.name)
    if s.special is None:
        return v
    box_it = iter(s.special.args[1:])
    box = tuple(next(box_it, 1) if w[0] == "iv" else 1 for w in v.idx)
    return View(s.name, v.base, v.idx, TensorMapInfo(s.name, s.special, box, s.srcinfo))


def walk_views(p: N.Procedure, shardings: dict | None = None, smem: dict | None = None
               ) -> Iterator[tuple[Path, object, dict]]:
    """Every statement of ``p`` (pre-order) with the views in scope *before* it runs.
    ``shardings``: alloc path -> number of distributed dims; ``smem``: alloc path -> byte
    offset in its kernel's SMEM layout."""
    shardings = shardings or {}
    smem = smem or {}
    scope = {prm.name: param_view(prm) for prm in p.params if prm.is_data}

    def block(stmts, prefix: Path, fld: str, scope: dict):
        scope = dict(scope)
        for i, s in enumerate(stmts):
            path = prefix + ((fld, i),)
            yield path, s, scope
            if isinstance(s, N.Alloc):
                nd = shardings.get(path, 0)
                base = Base(s.name, s.type.scalar, s.mem, s.type.shape,
                            c_strides(s.type.shape, nd), nd, smem.get(path), path)
                scope[s.name] = View(s.name, base, tuple(("iv", C(0), e) for e in
                                                         s.type.shape))
            elif isinstance(s, N.WindowStmt):
                v = window_stmt_view(s, scope)
                if v is not None:
                    scope[s.name] = v
            elif isinstance(s, (N.For, N.With)):
                yield from block(s.body, path, "body", scope)
            elif isinstance(s, N.If):
                yield from block(s.body, path, "body", scope)
                yield from block(s.orelse, path, "orelse", scope)

    yield from block(p.body, (), "body", scope)


__all__ = ["Base", "TensorMapInfo", "View", "c_strides", "param_view", "walk_views",
           "window_stmt_view"]
