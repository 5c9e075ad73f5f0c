"""Bounds (kind ``bounds``): every index, window and argument stays inside what it indexes.

Each access is checked against the variable it names, at every level of windowing, at CPU
and CUDA scope alike: ``A[i]`` within ``A``'s shape, ``w[i]`` within the *window* ``w``'s
extents (not only within the tensor under it), a window statement ``w = A[lo:hi, j]`` and a
call argument ``f(A[lo:hi])`` within ``A`` (``0 <= lo <= hi <= extent``, ``0 <= j <
extent``). Barrier indices are checked the same way by the checkers (rings of a pre-arrived
barrier run ``pre_arrive`` past their extent).

``index_bounds`` builds the conditions; the AMIR lowering attaches them to the statement
wherever the access's own box (checked against the base tensor by both checkers) does not
already say it: accesses through windows, accesses to memories the synchronization check
ignores (``DRAM``, grid constants), window statements and proc-call arguments.
"""

from __future__ import annotations

from ..ir import nodes as N
from .conditions import Condition, cmp, conj


def _show(e) -> str:
    from ..ir.printer import expr_str

    return expr_str(e)


def index_bounds(name: str, idx, extents, srcinfo, what: str, show_idx=None) -> list:
    """Conditions that ``idx`` (per dimension an expression, ``Point`` or ``Interval``) lies in
    ``extents`` of ``name``. ``show_idx``: the indices as written (for the message)."""
    out = []
    show_idx = show_idx if show_idx is not None else idx
    for d, (w, ext, src) in enumerate(zip(idx, extents, show_idx)):
        if isinstance(w, N.Interval):
            c = conj(cmp("<=", 0, w.lo), cmp("<=", w.lo, w.hi), cmp("<=", w.hi, ext))
            shown = f"{_show(src.lo)}:{_show(src.hi)}" if isinstance(src, N.Interval) else ""
            text = (f"{what}: the interval {shown} of {name} (dimension {d}) is out of "
                    f"bounds; it must satisfy 0 <= lo <= hi <= {_show(ext)}")
            shows = (("lo", w.lo), ("hi", w.hi), ("extent", ext))
        else:
            e = w.pt if isinstance(w, N.Point) else w
            s = src.pt if isinstance(src, N.Point) else src
            c = conj(cmp("<=", 0, e), cmp("<", e, ext))
            text = (f"{what}: the index {_show(s)} of {name} (dimension {d}) is out of bounds; "
                    f"it must satisfy 0 <= index < {_show(ext)}")
            shows = (("index", e), ("extent", ext))
        out.append(Condition("bounds", c, text, srcinfo,
                             hint="check the index expressions and loop bounds against the "
                                  "extents of what they index", shows=shows,
                             fact=f"bounds of {name} dimension {d}"))
    return out


__all__ = ["index_bounds"]
