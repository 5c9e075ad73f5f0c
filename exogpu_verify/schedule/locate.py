"""Source locations for statements made by rewrites.

A rewrite that builds new statements (a staging copy loop, a guard, an unrolled copy) gives
them no location of their own. ``locate`` fills every unlocated statement with the location
of the spec statement the rewrite started from (its cursor argument), marked ``via`` the
step that made it (``"step 18: stage_mem"``), and every unlocated expression with the
location of its statement. A diagnostic about such a statement then points at a real source
line and says which step made it (``Diagnostic.at`` adds the note), never ``<generated>:0``.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..ir import nodes as N
from ..ir.srcinfo import SrcInfo

_STMTS = (N.Alloc, N.BarrierAlloc, N.Assign, N.Reduce, N.WindowStmt, N.For, N.If, N.Call,
          N.With, N.Fence, N.Arrive, N.Await, N.Pass)
_EXPRS = (N.Const, N.Read, N.BinOp, N.UnOp, N.BuiltIn, N.StrideExpr, N.WindowExpr, N.Point,
          N.Interval, N.BarrierRef)
#: fields that hold no located IR (types, memories, modes, the callee's own procedure)
_SKIP = {"srcinfo", "callee", "type", "mem", "mode", "ctx", "L1", "L2", "special", "mech",
         "name", "iter", "op", "fn", "val", "N", "dim"}


def unlocated(si) -> bool:
    return si is None or (si.line == 0 and si.file == "<generated>")


def locate(proc: N.Procedure, origin: SrcInfo | None, via: str) -> N.Procedure:
    """``proc`` with every unlocated statement at ``origin`` (marked ``via``) and every
    unlocated expression at its statement's location. Located subtrees are shared."""
    if origin is None or unlocated(origin):
        origin = proc.srcinfo if not unlocated(proc.srcinfo) else None
    if origin is None:
        return proc
    if origin.via is not None:
        via = f"{via} (from a statement made by {origin.via})"
    made = replace(origin, via=via)
    body = _block(proc.body, made)
    return proc if body is proc.body else replace(proc, body=body)


def _block(stmts, made):
    out = tuple(_stmt(s, made) for s in stmts)
    return stmts if all(a is b for a, b in zip(out, stmts)) else out


def _stmt(s, made):
    si = s.srcinfo
    here = made if unlocated(si) else si
    changes = {}
    if here is not si:
        changes["srcinfo"] = here
    for f in fields(s):
        if f.name in _SKIP:
            continue
        v = getattr(s, f.name)
        nv = _value(v, here, made)
        if nv is not v:
            changes[f.name] = nv
    return replace(s, **changes) if changes else s


def _value(v, here, made):
    if isinstance(v, tuple):
        out = tuple(_value(x, here, made) for x in v)
        return v if all(a is b for a, b in zip(out, v)) else out
    if isinstance(v, _STMTS):
        return _stmt(v, made)
    if isinstance(v, _EXPRS):
        return _expr(v, here)
    if isinstance(v, N.BarrierDim):
        e = _expr(v.extent, here)
        return v if e is v.extent else replace(v, extent=e)
    return v


def _expr(e, here):
    changes = {}
    if unlocated(e.srcinfo):
        changes["srcinfo"] = here
    for f in fields(e):
        if f.name in _SKIP:
            continue
        v = getattr(e, f.name)
        nv = _value(v, here, here)
        if nv is not v:
            changes[f.name] = nv
    return replace(e, **changes) if changes else e


def origin_of(args) -> SrcInfo | None:
    """The location of the first cursor among a rewrite's arguments (its spec statement)."""
    from .cursors import BlockCursor, ExprCursor, GapCursor, StmtCursor

    for a in args:
        if isinstance(a, (list, tuple)):
            r = origin_of(a)
            if r is not None:
                return r
            continue
        try:
            if isinstance(a, StmtCursor):
                return a.node().srcinfo
            if isinstance(a, BlockCursor) and len(a):
                return a.stmts()[0].srcinfo
            if isinstance(a, GapCursor):
                return a.anchor().node().srcinfo
            if isinstance(a, ExprCursor):
                return a.stmt().node().srcinfo
        except Exception:  # noqa: BLE001 - a cursor that no longer resolves has no location
            continue
    return None
