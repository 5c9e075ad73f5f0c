"""GPU annotations: loop modes, launch/warp contexts, synchronization and barriers.

All of these leave the sequential meaning unchanged by construction (parallel loop modes and
synchronization statements are ignored by ``seq[...]``); each records that in provenance.
Whether the annotations are *sufficient* (``seq[p] == par[p]``) is the checkers' business
(``verify``). The result must still be well-formed (scope rules, loop shapes, barrier
mechanisms), which ``finish`` re-checks with the frontend.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ..errors import ExoGpuError
from ..ir import nodes as IR
from ..ir.memories import BarrierMechanism
from ..ir.timelines import SyncTL
from ..ir.units import CollUnit
from .base import (_ExprReader, alloc_cursor, block_cursor, check_proc, finish, gap_cursor,
                   loop_cursor, parse_expr, scope_vars)
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import splice
from .record import primitive

ANNOTATION = "annotation: sequential meaning unchanged"


def Seq(pragma_unroll: int | None = None):
    """Loop mode ``seq`` for ``set_loop_mode``."""
    return IR.Seq(pragma_unroll)


def CudaTasks():
    """Loop mode ``cuda_tasks`` for ``set_loop_mode``."""
    return IR.CudaTasks()


def CudaThreads(unit=None):
    """Loop mode ``cuda_threads(unit=...)`` for ``set_loop_mode`` (default ``cuda_thread``)."""
    if unit is None:
        from ..ir.units import cuda_thread as unit
    if not isinstance(unit, CollUnit):
        raise TypeError(f"CudaThreads(unit=...) needs a collective unit, not {unit!r}")
    return IR.CudaThreads(unit)


def _mode(m):
    if isinstance(m, (IR.Seq, IR.CudaTasks, IR.CudaThreads)):
        return m
    if m == "seq":
        return IR.Seq()
    if m == "cuda_tasks":
        return IR.CudaTasks()
    if isinstance(m, CollUnit):
        return IR.CudaThreads(m)
    raise TypeError(f"loop mode must be Seq(), CudaTasks() or CudaThreads(unit=...), not {m!r}")


@primitive
def set_loop_mode(proc, loop_cursor_, mode):
    """Change a loop's mode (seq <-> cuda_tasks / cuda_threads(unit=...))."""
    check_proc(proc)
    c = loop_cursor(proc, loop_cursor_)
    try:
        m = _mode(mode)
    except TypeError as e:
        raise SchedulingError(f"set_loop_mode: {e}", proc, [c.path()]) from None
    s, path = c.node(), c.path()
    new = replace(s, mode=m)
    if isinstance(m, IR.CudaThreads):
        from .irtools import simp

        new = replace(new, lo=simp(s.lo), hi=simp(s.hi))
    p2 = splice(proc, path[:-1], path[-1][0], path[-1][1], path[-1][1] + 1, [new])
    return finish(proc, p2, "set_loop_mode", [c, _mode_text(m)],
                  f"{ANNOTATION} (loops run in order sequentially; parallel correctness is "
                  "verify()'s obligation)")


def _mode_text(m) -> str:
    if isinstance(m, IR.CudaThreads):
        return f"CudaThreads(unit={m.unit})"
    return {"Seq": "Seq()", "CudaTasks": "CudaTasks()"}[type(m).__name__]


@primitive
def wrap_with_context(proc, block_cursor_, ctx, tasks: int = 0, mem: dict | None = None):
    """Wrap a block in ``with ctx:`` (``CudaDeviceFunction(...)`` or ``CudaWarps(...)``).

    A kernel body must be a nest of ``cuda_tasks`` loops, so a sequential nest cannot be
    wrapped in a ``CudaDeviceFunction`` first and given task loops after: ``tasks=n`` also
    makes the ``n`` outermost loops of the wrapped nest ``cuda_tasks`` loops (one rewrite).
    For the same reason host allocations inside the block move to device memories in the
    same step: ``mem={"D": Sm90_RmemMatrixD}`` (placement only, an annotation)."""
    check_proc(proc)
    b = block_cursor(proc, block_cursor_)
    if not isinstance(ctx, (IR.CudaDeviceFunction, IR.CudaWarps)):
        raise SchedulingError(f"wrap_with_context: {ctx!r} is not CudaDeviceFunction(...) or "
                              "CudaWarps(...)", proc, b.paths())
    parent, field, lo, hi = b._parent, b._field, b._lo, b._hi
    stmts = tuple(b.stmts())
    if tasks:
        if not isinstance(ctx, IR.CudaDeviceFunction) or len(stmts) != 1:
            raise SchedulingError("wrap_with_context(tasks=n) needs a CudaDeviceFunction "
                                  "around one loop nest", proc, b.paths())
        stmts = (_tasks(proc, stmts[0], tasks, b.paths()),)
    if mem:
        stmts = _place(proc, stmts, dict(mem), b.paths())
    w = IR.With(ctx, stmts)
    p2 = splice(proc, parent, field, lo, hi, [w])
    args = [b, ctx, tasks] + ([{k: str(v) for k, v in mem.items()}] if mem else [])
    return finish(proc, p2, "wrap_with_context", args, ANNOTATION,
                  fwd_splice(parent, field, lo, hi, 1,
                             lambda k, rest: parent + ((field, lo), ("body", k - lo)) + rest))


def _place(proc, stmts, mem, paths):
    """``stmts`` with the allocations named in ``mem`` placed in those memories."""
    from ..ir.memories import Memory

    seen = set()

    def go(s):
        if isinstance(s, IR.Alloc) and s.name in mem:
            seen.add(s.name)
            if not isinstance(mem[s.name], Memory):
                raise SchedulingError(f"wrap_with_context: mem[{s.name!r}] is not a memory",
                                      proc, paths)
            return replace(s, mem=mem[s.name])
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, tuple):
                s = replace(s, **{f: tuple(go(c) for c in sub)})
        return s

    out = tuple(go(s) for s in stmts)
    missing = sorted(set(mem) - seen)
    if missing:
        raise SchedulingError(f"wrap_with_context: {missing} are not allocated in the block",
                              proc, paths)
    return out


def _tasks(proc, s, n, paths):
    if n == 0:
        return s
    if not isinstance(s, IR.For):
        raise SchedulingError("wrap_with_context(tasks=n): not a nest of n loops", proc, paths)
    body = s.body
    if n > 1:
        if len(body) != 1:
            raise SchedulingError("wrap_with_context(tasks=n): not a perfect nest of n loops",
                                  proc, paths)
        body = (_tasks(proc, body[0], n - 1, paths),)
    return replace(s, mode=IR.CudaTasks(), body=body)


def _tl(proc, x, what):
    if not isinstance(x, SyncTL):
        raise SchedulingError(f"{what} must be a synchronization timeline (e.g. cuda_in_order), "
                              f"not {x!r}", proc)
    return x


def _insert(proc, gap, stmt, name, args):
    g = gap_cursor(proc, gap)
    parent, field, i = g.location()
    p2 = splice(proc, parent, field, i, i, [stmt])
    return finish(proc, p2, name, [g] + list(args), ANNOTATION,
                  fwd_splice(parent, field, i, i, 1))


@primitive
def insert_fence(proc, gap, L1, L2):
    """Insert ``Fence(L1, L2)`` at a gap."""
    check_proc(proc)
    return _insert(proc, gap, IR.Fence(_tl(proc, L1, "L1"), _tl(proc, L2, "L2")),
                   "insert_fence", [L1, L2])


@primitive
def insert_barrier_alloc(proc, gap, name: str, hi=(), mech=None, ring_dim_idx=None,
                         ring_depth=None):
    """Insert ``name: barrier[hi...] @ mech`` at a gap (``ring_dim_idx``/``ring_depth``:
    that dimension is ``e @ ring_buffer_by(ring_depth)``)."""
    check_proc(proc)
    g = gap_cursor(proc, gap)
    if not isinstance(mech, BarrierMechanism):
        raise SchedulingError(f"insert_barrier_alloc: {mech!r} is not a barrier mechanism",
                              proc)
    from .loops import _check_fresh

    _check_fresh(proc, [name])
    where = g.location()
    hi = list(hi) if isinstance(hi, (list, tuple)) else [hi]
    dims = []
    for k, e in enumerate(hi):
        depth = ring_depth if ring_dim_idx == k else None
        dims.append(IR.BarrierDim(parse_expr(proc, where, e), depth))
    return _insert(proc, g, IR.BarrierAlloc(name, tuple(dims), mech), "insert_barrier_alloc",
                   [name, hi, mech, ring_dim_idx, ring_depth])


def _barrier_ref(proc, where, text):
    if isinstance(text, IR.BarrierRef):
        return text
    vs = scope_vars(proc, *where)
    r = _ExprReader(vs, {}, text)
    try:
        return r.barrier_ref(ast.parse(text.strip(), mode="eval").body, allow_intervals=True)
    except (ExoGpuError, SyntaxError) as e:
        msg = e.diagnostic.message if isinstance(e, ExoGpuError) else str(e)
        from .base import near

        raise SchedulingError(f"bad barrier expression {text!r}: {msg}", proc,
                              near(proc, where)) from None


@primitive
def insert_arrive(proc, gap, L1, exprs):
    """Insert ``Arrive(L1) >> e0 >> e1 ...`` at a gap (``exprs``: barrier expressions as
    text, e.g. ``"z[k % 4]"``)."""
    check_proc(proc)
    g = gap_cursor(proc, gap)
    exprs = [exprs] if isinstance(exprs, str) else list(exprs)
    refs = tuple(_barrier_ref(proc, g.location(), e) for e in exprs)
    return _insert(proc, g, IR.Arrive(_tl(proc, L1, "L1"), refs), "insert_arrive", [L1, exprs])


@primitive
def insert_await(proc, gap, expr, L2, N: int = 0):
    """Insert ``Await(expr, L2, N)`` at a gap."""
    check_proc(proc)
    g = gap_cursor(proc, gap)
    ref = _barrier_ref(proc, g.location(), expr)
    return _insert(proc, g, IR.Await(ref, _tl(proc, L2, "L2"), N), "insert_await",
                   [expr, L2, N])


@primitive
def set_ring_buffer(proc, alloc_cursor_, dim: int, depth: int):
    """Mark dimension ``dim`` of a barrier allocation as ``e @ ring_buffer_by(depth)``."""
    check_proc(proc)
    c = alloc_cursor(proc, alloc_cursor_)
    a = c.node()
    if not isinstance(a, IR.BarrierAlloc) or not 0 <= dim < len(a.dims):
        raise SchedulingError("set_ring_buffer: expected a barrier allocation and a valid "
                              "dimension", proc, [c.path()])
    if not isinstance(depth, int) or depth < 1:
        raise SchedulingError("set_ring_buffer: depth must be a positive int", proc, [c.path()])
    dims = list(a.dims)
    dims[dim] = replace(dims[dim], ring_depth=depth)
    path = c.path()
    p2 = splice(proc, path[:-1], path[-1][0], path[-1][1], path[-1][1] + 1,
                [replace(a, dims=tuple(dims))])
    return finish(proc, p2, "set_ring_buffer", [c, dim, depth], ANNOTATION)


@primitive
def update_loop_mode(proc, loop_cursor_, unit=None, pragma_unroll=None):
    """Change a parameter of a loop's mode, keeping its kind: the ``unit`` of a
    ``cuda_threads`` loop, or the ``pragma_unroll`` hint of a ``seq`` loop (``0``/``None``
    to drop it). An annotation; the result must stay well-formed."""
    check_proc(proc)
    c = loop_cursor(proc, loop_cursor_)
    s, path = c.node(), c.path()
    m = s.mode
    if isinstance(m, IR.CudaThreads):
        if pragma_unroll is not None:
            raise SchedulingError("update_loop_mode: pragma_unroll applies to seq loops; this "
                                  "is a cuda_threads loop", proc, [path])
        if not isinstance(unit, CollUnit):
            raise SchedulingError(f"update_loop_mode: a cuda_threads loop needs a collective "
                                  f"unit, not {unit!r}", proc, [path])
        new_mode = IR.CudaThreads(unit)
        what = f"unit {m.unit} -> {unit}"
    elif isinstance(m, IR.Seq):
        if unit is not None:
            raise SchedulingError("update_loop_mode: a seq loop has no unit (set_loop_mode "
                                  "makes it a cuda_threads loop)", proc, [path])
        if pragma_unroll is not None and (not isinstance(pragma_unroll, int) or
                                          isinstance(pragma_unroll, bool) or
                                          pragma_unroll < 0):
            raise SchedulingError("update_loop_mode: pragma_unroll is a non-negative int",
                                  proc, [path])
        new_mode = IR.Seq(pragma_unroll or None)
        what = f"pragma_unroll {m.pragma_unroll} -> {pragma_unroll or None}"
    else:
        raise SchedulingError(f"update_loop_mode: a {m} loop has no parameters to update",
                              proc, [path])
    p2 = splice(proc, path[:-1], path[-1][0], path[-1][1], path[-1][1] + 1,
                [replace(s, mode=new_mode)])
    return finish(proc, p2, "update_loop_mode", [c, unit if unit is not None else
                                                 pragma_unroll], f"{ANNOTATION} ({what})")


@primitive
def set_trailing_barrier_expr(proc, call_cursor, barrier_expr):
    """Set the barrier(s) an instruction completes on: ``instr(...) >> z[i]`` (a list for
    several targets; ``None`` to remove them from an instruction without a mechanism)."""
    check_proc(proc)
    from .base import stmt_cursor, where_of

    c = stmt_cursor(proc, call_cursor, "call")
    s, path = c.node(), c.path()
    if not isinstance(s, IR.Call) or s.callee.instr is None:
        raise SchedulingError("set_trailing_barrier_expr: expected an instruction call", proc,
                              [path])
    mech = s.callee.instr.barrier
    if mech is None:
        raise SchedulingError(f"set_trailing_barrier_expr: {s.callee.name} does not complete "
                              "on a barrier", proc, [path])
    texts = [barrier_expr] if isinstance(barrier_expr, (str, IR.BarrierRef)) else \
        list(barrier_expr or [])
    if not texts:
        raise SchedulingError(f"set_trailing_barrier_expr: {s.callee.name} completes on a "
                              f"{mech} barrier; it needs one", proc, [path])
    refs = tuple(_barrier_ref(proc, where_of(c), t) for t in texts)
    p2 = splice(proc, path[:-1], path[-1][0], path[-1][1], path[-1][1] + 1,
                [replace(s, barriers=refs)])
    return finish(proc, p2, "set_trailing_barrier_expr", [c, texts], ANNOTATION)


__all__ = ["Seq", "CudaTasks", "CudaThreads", "set_loop_mode", "wrap_with_context",
           "insert_fence", "insert_barrier_alloc", "insert_arrive", "insert_await",
           "set_ring_buffer", "update_loop_mode", "set_trailing_barrier_expr"]
