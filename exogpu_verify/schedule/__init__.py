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
                      set_memory, set_precision, sink_alloc)
from .cursors import (ArgCursor, BlockCursor, Cursor, ExprCursor, GapCursor,  # noqa: F401
                      InvalidCursor, InvalidCursorError, StmtCursor, body, find, find_all,
                      find_alloc_or_arg, find_loop, forward)
from .dims import mult_dim, resize_dim, unroll_buffer  # noqa: F401
from .errors import SchedulingError  # noqa: F401
from .exprs import (commute_expr, inline_assign, lift_reduce_constant, merge_writes,  # noqa
                    rewrite_expr)
from .gpu import (CudaTasks, CudaThreads, Seq, insert_arrive, insert_await,  # noqa: F401
                  insert_barrier_alloc, insert_fence, set_loop_mode, set_ring_buffer,
                  set_trailing_barrier_expr, update_loop_mode, wrap_with_context)
from .guards import (add_if, eliminate_dead_code, lift_scope, specialize,  # noqa: F401
                     unsafe_remove_if)
from .lifetime import delete_buffer, reuse_buffer  # noqa: F401
from .loopnest import join_loops, mult_loops  # noqa: F401
from .loops import (add_loop, cut_loop, divide_loop, fission, fuse, remove_loop,  # noqa: F401
                    reorder_loops, shift_loop, unroll_loop)
from .stage import stage_mem  # noqa: F401
from .stmts import (bind_expr, delete_pass, insert_pass, rename, reorder_stmts,  # noqa: F401
                    simplify)
from .subprocs import call_eqv, extract_subproc, inline, replace  # noqa: F401
from .windows import insert_window, set_window  # noqa: F401
from .provenance import (ReplayError, derivation, program_hash, provenance_record,  # noqa
                         recheck_provenance, replay, replay_record)
from .trace import step_diffs, walkthrough  # noqa: F401


def provenance_report(p) -> str:
    """One line per rewrite of ``p``: name, arguments, what was checked, and UNSAFE marks."""
    lines = []
    for k, r in enumerate(p.provenance, 1):
        flag = "UNSAFE " if r.unsafe else ""
        lines.append(f"{k:>3}. {flag}{r.name}({r.args}): {r.checked}")
    return "\n".join(lines)


PRIMITIVES = (
    # loops
    "divide_loop", "mult_loops", "reorder_loops", "fission", "fuse", "join_loops", "cut_loop",
    "shift_loop", "unroll_loop", "add_loop", "remove_loop",
    # scopes and guards
    "lift_scope", "specialize", "eliminate_dead_code", "add_if", "unsafe_remove_if",
    # statements and expressions
    "rename", "simplify", "reorder_stmts", "insert_pass", "delete_pass", "bind_expr",
    "rewrite_expr", "commute_expr", "inline_assign", "merge_writes", "lift_reduce_constant",
    # buffers
    "lift_alloc", "sink_alloc", "expand_dim", "divide_dim", "mult_dim", "rearrange_dim",
    "resize_dim", "unroll_buffer", "delete_buffer", "reuse_buffer", "stage_mem",
    "set_memory", "set_precision", "inline_window", "insert_window", "set_window",
    # procedures
    "inline", "call_eqv", "replace", "extract_subproc",
    # GPU annotations and synchronization
    "set_loop_mode", "update_loop_mode", "wrap_with_context", "insert_fence",
    "insert_barrier_alloc", "insert_arrive", "insert_await", "set_ring_buffer",
    "set_trailing_barrier_expr",
)

__all__ = list(PRIMITIVES) + [
    "ReplayError", "derivation", "program_hash", "provenance_record", "recheck_provenance",
    "replay",
    "replay_record", "step_diffs", "walkthrough",
    "Seq", "CudaTasks", "CudaThreads", "SchedulingError", "forward", "find", "find_all",
    "find_loop", "find_alloc_or_arg", "provenance_report", "Cursor", "StmtCursor",
    "BlockCursor", "GapCursor", "ExprCursor", "ArgCursor", "InvalidCursor",
    "InvalidCursorError",
]
