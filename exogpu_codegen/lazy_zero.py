"""The lazy-zero flag of a wgmma accumulator tile, as code generation implements it.

A ``wgmma_zero`` on an ``Sm90_RmemMatrixD`` accumulator does not write its registers: it sets
the tile's flag to 0, and the next wgmma on the tile consumes it (``scale-d = 0``: D = A*B
instead of D += A*B). One flag per shard tile (the accumulator's last three dimensions). The
checkers model the zero per element (the next wgmma on each element writes its zeros), so a
``wgmma_zero``, or a wgmma that may consume a flag, whose window covers only part of a tile
is refused: the flag would zero elements a later ``wgmma_zero`` did not name, or leave the
elements the ``wgmma_zero`` named uninitialised for a second wgmma on the tile (docs/codegen.md).
"""

from __future__ import annotations

from exogpu_verify.analysis.walk import iter_stmts
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import const_value
from exogpu_verify.ir.timelines import wgmma_async_instr, wgmma_zero_instr

from .errors import not_supported


class LazyZero:
    """The lazy-zero checks of one procedure's calls."""

    def __init__(self, p: N.Procedure):
        self.p = p
        self._names: tuple[set, set] | None = None

    def zeroed(self) -> tuple[set, set]:
        """(names some ``wgmma_zero`` of the procedure names, names of the procedure's
        allocations): a wgmma on a zeroed accumulator, or on a name that is not an allocation
        (a window statement), consumes a lazy-zero flag."""
        if self._names is None:
            z: tuple[set, set] = (set(), set())
            for _, st in iter_stmts(self.p.body, ()):
                if isinstance(st, N.Call) and st.callee.instr is not None and \
                        st.callee.instr.timeline == wgmma_zero_instr:
                    z[0].update(a.name for a in st.args if isinstance(a, N.WindowExpr))
                elif isinstance(st, N.Alloc):
                    z[1].add(st.name)
            self._names = z
        return self._names

    def check(self, buf, w: N.WindowExpr, callee, node) -> None:
        """Refuse a call on accumulator window ``w`` (of buffer ``buf``, which has flags) that
        sets or consumes a lazy-zero flag and covers only part of the flag's tile."""
        t = callee.instr.timeline
        zeroed, allocs = self.zeroed()
        if not (t == wgmma_zero_instr or
                (t == wgmma_async_instr and (w.name in zeroed or w.name not in allocs))):
            return
        for a, ext in zip(w.idx[-3:], buf.shape[-3:]):
            whole = (isinstance(a, N.Interval) and const_value(a.lo) == 0 and ext.isdigit()
                     and const_value(a.hi) == int(ext))
            if not whole:
                raise not_supported(
                    f"{callee.name}() on part of the accumulator tile '{w.name}' (its "
                    "lazy-zero flag is one per tile: a wgmma_zero and the wgmmas it prepares "
                    "must each cover the whole tile)", node,
                    hint="give each wgmma shape its own accumulator allocation, or zero and "
                         "accumulate whole tiles")
