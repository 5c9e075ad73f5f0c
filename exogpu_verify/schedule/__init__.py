"""Checked scheduling rewrites (Exo-style) and cursors.

``from exogpu_verify.schedule import *`` gives every primitive. Each takes a procedure first
and returns a new one whose ``provenance`` ends with a ``Rewrite(name, args, checked,
unsafe)`` saying what was proven (dependence analysis with isl, exact index maps, proved
preconditions) or, for value-sensitive rewrites that cannot be proven (``set_precision``,
reassociation of reductions), that it is ``unsafe``. GPU annotations (loop modes, contexts,
synchronization) record ``annotation: sequential meaning unchanged``. An illegal rewrite
raises ``SchedulingError``.

Cursor arguments may be cursors (from this procedure or, forwarded implicitly, from an
earlier version of it) or Exo patterns (``"for k in _: _"``, ``"A_smem : _"``,
``"C[_] += _"``, ``"name #n"``).
"""

from .buffers import (divide_dim, expand_dim, inline_window, lift_alloc, rearrange_dim,  # noqa
                      set_memory, set_precision, sink_alloc, stage_mem)
from .cursors import (ArgCursor, BlockCursor, Cursor, ExprCursor, GapCursor,  # noqa: F401
                      InvalidCursor, InvalidCursorError, StmtCursor, body, find, find_all,
                      find_alloc_or_arg, find_loop, forward)
from .errors import SchedulingError  # noqa: F401
from .gpu import (CudaTasks, CudaThreads, Seq, insert_arrive, insert_await,  # noqa: F401
                  insert_barrier_alloc, insert_fence, set_loop_mode, set_ring_buffer,
                  wrap_with_context)
from .loops import (add_loop, cut_loop, divide_loop, fission, fuse, remove_loop,  # noqa: F401
                    reorder_loops, shift_loop, unroll_loop)
from .stmts import (bind_expr, delete_pass, insert_pass, rename, reorder_stmts,  # noqa: F401
                    simplify)
from .subprocs import call_eqv, inline, replace  # noqa: F401


def provenance_report(p) -> str:
    """One line per rewrite of ``p``: name, arguments, what was checked, and UNSAFE marks."""
    lines = []
    for k, r in enumerate(p.provenance, 1):
        flag = "UNSAFE " if r.unsafe else ""
        lines.append(f"{k:>3}. {flag}{r.name}({r.args}): {r.checked}")
    return "\n".join(lines)


PRIMITIVES = (
    "rename", "simplify", "divide_loop", "reorder_loops", "reorder_stmts", "fission", "fuse",
    "cut_loop", "shift_loop", "unroll_loop", "add_loop", "remove_loop", "insert_pass",
    "delete_pass", "lift_alloc", "sink_alloc", "expand_dim", "divide_dim", "rearrange_dim",
    "bind_expr", "stage_mem", "set_memory", "set_precision", "inline", "inline_window",
    "call_eqv", "replace", "set_loop_mode", "wrap_with_context", "insert_fence",
    "insert_barrier_alloc", "insert_arrive", "insert_await", "set_ring_buffer",
)

__all__ = list(PRIMITIVES) + [
    "Seq", "CudaTasks", "CudaThreads", "SchedulingError", "forward", "find", "find_all",
    "find_loop", "find_alloc_or_arg", "provenance_report", "Cursor", "StmtCursor",
    "BlockCursor", "GapCursor", "ExprCursor", "ArgCursor", "InvalidCursor",
    "InvalidCursorError",
]
