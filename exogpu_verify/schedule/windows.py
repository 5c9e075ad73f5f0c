"""Window rewrites: ``insert_window`` (bind a window statement, e.g. a tensor map) and
``set_window`` (Exo's: a parameter becomes a window parameter or a dense one).

A window statement is an alias: binding one changes no value. A tensor map is a window with
a special memory (``Sm90_tensorMap(swizzle, *box)``) that the host encodes; the frontend
checks it is made from a dense ``CudaGmemLinear`` tensor at CPU scope and that its box
matches the window's rank. Accesses are moved onto a new window by ``stage_mem`` (whose
copies then read or write through it) or by ``replace``.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.memories import Memory
from .base import check_proc, finish, gap_cursor, parse_expr
from .cursors import ArgCursor, fwd_splice
from .errors import SchedulingError
from .irtools import splice
from .record import primitive


@primitive
def insert_window(proc, gap, name: str, win_expr, mem=None):
    """Insert the window statement ``name = win_expr`` (``@ mem`` for a special window
    memory such as ``Sm90_tensorMap(128, 128, 64)``) at a gap."""
    check_proc(proc)
    g = gap_cursor(proc, gap)
    from .loops import _check_fresh

    _check_fresh(proc, [name])
    parent, field, i = g.location()
    w = parse_expr(proc, (parent, field, i), win_expr, kind="window")
    if not isinstance(w, N.WindowExpr):
        raise SchedulingError(f"insert_window: {win_expr!r} is not a window such as "
                              "'A[:, 0:64]'", proc, [g.anchor().path()])
    if mem is not None and (not isinstance(mem, Memory) or mem.space != "tensormap"):
        raise SchedulingError(f"insert_window: {mem!r} is not a special window memory (e.g. "
                              "Sm90_tensorMap(swizzle, *box))", proc, [g.anchor().path()])
    p2 = splice(proc, parent, field, i, i, [N.WindowStmt(name, w, mem)])
    what = f"{name} = {expr_str(w)}" + (f" @ {mem}" if mem is not None else "")
    return finish(proc, p2, "insert_window", [g, name, win_expr] + ([mem] if mem else []),
                  f"alias {what}: no value changes (shape and memory rules re-checked by the "
                  "frontend)", fwd_splice(parent, field, i, i, 1))


@primitive
def set_window(proc, cursor, is_window: bool = True):
    """Make a data parameter a window parameter (``A: [f32][N]``) or a dense one."""
    check_proc(proc)
    if isinstance(cursor, str):
        prm = proc.param(cursor.strip())
        if prm is None:
            raise SchedulingError(f"set_window: '{cursor}' is not a parameter of {proc.name}",
                                  proc)
        name = prm.name
    elif isinstance(cursor, ArgCursor):
        name = cursor.name()
    else:
        raise SchedulingError("set_window: expected a parameter name or argument cursor",
                              proc)
    prm = proc.param(name)
    if not prm.is_data:
        raise SchedulingError(f"set_window: '{name}' is a control parameter, not a buffer",
                              proc)
    params = tuple(replace(q, type=replace(q.type, is_window=bool(is_window)))
                   if q.name == name else q for q in proc.params)
    p2 = replace(proc, params=params)
    return finish(proc, p2, "set_window", [name, is_window],
                  "annotation: the elements and their values are unchanged (callers pass "
                  "windows or dense tensors; re-checked by the frontend)")


__all__ = ["insert_window", "set_window"]
