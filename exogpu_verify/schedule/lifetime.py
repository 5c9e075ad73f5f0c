"""Buffer lifetime rewrites: ``delete_buffer`` (an unused allocation goes) and
``reuse_buffer`` (a later allocation is replaced by an earlier, dead buffer of the same
type). Reusing is exact when the earlier buffer is never used again from the later
allocation on, and every read of the later buffer is covered by an earlier write of it (a
fresh buffer would read uninitialized data where the reused one has stale values)."""

from __future__ import annotations

from ..ir import nodes as N
from . import deps as D
from . import flow as F
from .base import alloc_cursor, check_proc, finish
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import block_of, names_used, node_at, rename_var, splice
from .record import primitive


@primitive
def delete_buffer(proc, buf_cursor):
    """Remove an allocation (data or barrier) that nothing in its scope uses."""
    check_proc(proc)
    c = alloc_cursor(proc, buf_cursor)
    a, path = c.node(), c.path()
    parent, (field, i) = path[:-1], path[-1]
    blk = block_of(node_at(proc, parent), field)
    if a.name in names_used(blk[i + 1:]):
        raise SchedulingError(f"delete_buffer: '{a.name}' is used in its scope", proc, [path])
    keep = [] if len(blk) > 1 else [N.Pass(a.srcinfo)]
    p2 = splice(proc, parent, field, i, i + 1, keep)
    return finish(proc, p2, "delete_buffer", [c], f"'{a.name}' is never used",
                  fwd_splice(parent, field, i, i + 1, len(keep)))


@primitive
def reuse_buffer(proc, buf_cursor, replace_cursor):
    """``x: T ; ... ; y: T ; s`` -> ``x: T ; ... ; s[y -> x]`` when ``x`` is dead from
    ``y``'s allocation on and ``s`` writes every element of ``y`` before reading it."""
    check_proc(proc)
    cx, cy = alloc_cursor(proc, buf_cursor), alloc_cursor(proc, replace_cursor)
    x, y = cx.node(), cy.node()
    px, py = cx.path(), cy.path()
    if not isinstance(x, N.Alloc) or not isinstance(y, N.Alloc):
        raise SchedulingError("reuse_buffer: expected two data allocations", proc, [px, py])
    if (x.type, x.mem) != (y.type, y.mem):
        raise SchedulingError(f"reuse_buffer: '{x.name}' is {x.type.scalar}"
                              f"{list(x.type.shape)} @ {x.mem} but '{y.name}' is "
                              f"{y.type.scalar}{list(y.type.shape)} @ {y.mem}", proc, [px, py])
    xp, (xf, xi) = px[:-1], px[-1]
    if py[:len(xp)] != xp or len(py) <= len(xp) or py[len(xp)][0] != xf or \
            py[len(xp)][1] <= xi:
        raise SchedulingError(f"reuse_buffer: '{y.name}' must be allocated after '{x.name}' "
                              f"inside its scope", proc, [px, py])
    yp, (yf, yi) = py[:-1], py[-1]
    yblk = block_of(node_at(proc, yp), yf)
    # x is dead from y's allocation on: unused in y's scope and after it, up to x's scope end
    later = list(yblk[yi + 1:])
    for k in range(len(py) - 1, len(xp), -1):
        anc, (f, j) = py[:k - 1], py[k - 1]
        later += list(block_of(node_at(proc, anc), f)[j + 1:])
    if x.name in names_used(later):
        raise SchedulingError(f"reuse_buffer: '{x.name}' is still used after '{y.name}' is "
                              "allocated", proc, [px, py])
    for k in range(len(xp) + 1, len(py)):  # loops around y repeat what precedes it
        loop = node_at(proc, py[:k])
        if isinstance(loop, N.For) and x.name in names_used(loop.body):
            raise SchedulingError(f"reuse_buffer: '{x.name}' is used in the loop over "
                                  f"'{loop.iter}' around '{y.name}': its next iteration would "
                                  f"see '{y.name}'s values", proc, [px, py[:k]])
    vs, cs = D.context(proc, py)
    stmts = yblk[yi + 1:]
    acc = [a for a in D.collect(proc, stmts, [yp + ((yf, k),) for k in range(
        yi + 1, len(yblk))]) if a.buf == y.name]
    reads = [a for a in acc if a.kind in ("R", "RED")]
    writes = [a for a in acc if a.kind in ("W", "RED")]
    if not F.all_covered(proc, vs, cs, reads, writes, len(yp)):
        raise SchedulingError(f"reuse_buffer: some read of '{y.name}' is not preceded by a "
                              f"write of its element; reusing '{x.name}' would give it "
                              "stale values instead of uninitialized ones", proc, [py])
    if x.name in names_used(stmts):
        raise SchedulingError(f"reuse_buffer: '{x.name}' is used in '{y.name}'s scope", proc,
                              [px, py])
    rest = rename_var(stmts, y.name, x.name)
    p2 = splice(proc, yp, yf, yi, len(yblk), list(rest))
    return finish(proc, p2, "reuse_buffer", [cx, cy],
                  f"'{x.name}' is dead from '{y.name}'s allocation on and every read of "
                  f"'{y.name}' follows a write of its element (isl)",
                  fwd_splice(yp, yf, yi, yi + 1, 0))


__all__ = ["delete_buffer", "reuse_buffer"]
