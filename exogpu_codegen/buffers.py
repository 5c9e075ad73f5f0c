"""Data buffers as the generated code sees them: a base pointer, per-dimension strides, and
which leading dimensions are *distributed* (stripped: the executing thread's or CTA's shard).

A ``Buf`` describes one source-level tensor (parameter, allocation or window). Indexing a
distributed dimension selects a shard, which the generated code already holds, so those
indices are dropped (the distributed-memory analysis proved they name the executing thread's
own shard). Swizzled shared memory is addressed through ``exo_swz<S>`` (the hardware's XOR
swizzle on address bits, PTX ISA "Tensor Map swizzling modes"), so ordinary loads and stores
agree with TMA and wgmma on where element ``[r, c]`` lives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.memories import Memory
from exogpu_verify.ir.types import ScalarType

from .cexpr import Ctl, cpp_type
from .errors import not_supported


@dataclass(frozen=True)
class TensorMapView:
    """A tensor-map window: the ``CUtensorMap`` lvalue, the window's start coordinate in every
    dimension of the underlying tensor, and which tensor dimensions are interval dims."""

    lvalue: str
    coords: tuple[str, ...]
    dims: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: int


@dataclass(frozen=True)
class Buf:
    name: str
    scalar: ScalarType
    mem: Memory | None
    ptr: str                        # C++ pointer to element [0, ...] (or value / tmap lvalue)
    shape: tuple[str, ...]          # C++ extents, one per dimension of this view
    strides: tuple[str | None, ...]  # element strides; None = distributed (stripped) dimension
    by_value: bool = False           # a scalar passed by value (CudaGridConstant)
    swizzle: int = 0
    tmap: TensorMapView | None = None
    scale_d: tuple[str, tuple[int, ...]] | None = None  # wgmma lazy-zero flags: name, shape
    portable: bool = True            # strides are expressions over size parameters only

    @property
    def ctype(self) -> str:
        return cpp_type(self.scalar)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def offset(self, idx, ctl: Ctl) -> str:
        """C++ element offset of the point indices ``idx`` (distributed dims skipped)."""
        terms = []
        for i, s in zip(idx, self.strides):
            if s is None:
                continue
            c = ctl(i)
            if c == "0":
                continue
            terms.append(c if s == "1" else f"{c} * {s}" if _atomic(c) else f"({c}) * {s}")
        return " + ".join(terms) if terms else "0"

    def element(self, idx, ctl: Ctl, node=None) -> str:
        """C++ lvalue of one element."""
        if self.tmap is not None:
            raise not_supported(f"element access to tensor map '{self.name}' (only TMA "
                                "instructions take tensor-map windows)", node)
        if self.by_value:
            return self.ptr
        off = self.offset(idx, ctl)
        if self.swizzle:
            return f"exo_swz<{self.swizzle}>({self.ptr} + {off})"
        return f"{self.ptr}[{off}]"

    def window(self, w: N.WindowExpr, ctl: Ctl, name: str | None = None) -> "Buf":
        """The view ``self[w.idx]``: interval dimensions kept, point dimensions fixed."""
        if len(w.idx) != self.rank:
            raise not_supported(f"window of '{self.name}' with {len(w.idx)} indices on a "
                                f"{self.rank}-dimensional view", w)
        if self.tmap is not None:
            return self._tmap_window(w, ctl, name)
        starts, shape, strides = [], [], []
        for a, s, ext in zip(w.idx, self.strides, self.shape):
            lo = a.pt if isinstance(a, N.Point) else a.lo
            starts.append(lo)
            if isinstance(a, N.Interval):
                shape.append(f"({ctl(a.hi)} - {ctl(a.lo)})")
                strides.append(s)
        off = self.offset(starts, ctl)
        ptr = self.ptr if off == "0" else f"({self.ptr} + {off})"
        return replace(self, name=name or self.name, ptr=ptr, shape=tuple(shape),
                       strides=tuple(strides))

    def _tmap_window(self, w: N.WindowExpr, ctl: Ctl, name) -> "Buf":
        t = self.tmap
        coords = list(t.coords)
        dims = []
        for a, d in zip(w.idx, t.dims):
            lo = ctl(a.pt if isinstance(a, N.Point) else a.lo)
            if lo != "0":
                coords[d] = lo if coords[d] == "0" else f"{coords[d]} + {lo}"
            if isinstance(a, N.Interval):
                dims.append(d)
        return replace(self, name=name or self.name,
                       tmap=replace(t, coords=tuple(coords), dims=tuple(dims)),
                       shape=tuple("1" for _ in dims), strides=tuple("0" for _ in dims))

    def instr_args(self, pname: str, w: N.WindowExpr, ctl: Ctl) -> dict:
        """The codegen-convention entries for instruction parameter ``pname`` bound to the
        window ``w`` of this buffer (see ``exogpu_verify.platforms``)."""
        v = self.window(w, ctl)
        out: dict = {}
        if v.tmap is not None:
            out[pname] = v.tmap.lvalue
            out[f"{pname}_coords"] = list(v.tmap.coords)
            out[f"{pname}_dims"] = list(v.tmap.dims)
            return out
        if v.by_value:
            raise not_supported(f"passing the by-value scalar '{self.name}' to an instruction",
                                w)
        out[pname] = v.ptr
        for d, s in enumerate(v.strides):
            out[f"{pname}_stride{d}"] = s if s is not None else "0"
        if v.scale_d is not None:
            out[f"{pname}_scale_d"] = self._scale_flag(w, ctl)
        return out

    def _scale_flag(self, w: N.WindowExpr, ctl: Ctl) -> str:
        name, shape = self.scale_d
        if not shape:
            return name
        nd = sum(1 for s in self.strides if s is None)
        pts = [a for a in w.idx[nd:nd + len(shape)]]
        if not all(isinstance(a, N.Point) for a in pts):
            raise not_supported("a wgmma accumulator window spanning several tiles", w)
        off, mul = [], 1
        for a, ext in reversed(list(zip(pts, shape))):
            off.append(f"({ctl(a.pt)}) * {mul}")
            mul *= ext
        return f"{name}[{' + '.join(reversed(off))}]"


def _atomic(c: str) -> bool:
    return c.replace("_", "").isalnum() or (c.startswith("(") and c.endswith(")"))


def c_order_strides(shape: list[str]) -> list[str]:
    """C-order element strides (innermost 1) as simplified C++ expressions."""
    out = []
    acc = "1"
    for e in reversed(shape):
        out.append(acc)
        if acc == "1":
            acc = e
        elif e.isdigit() and acc.isdigit():
            acc = str(int(e) * int(acc))
        else:
            acc = f"{_par(e)} * {_par(acc)}"
    return list(reversed(out))


def _par(x: str) -> str:
    return x if x.replace("_", "").isalnum() else f"({x})"
