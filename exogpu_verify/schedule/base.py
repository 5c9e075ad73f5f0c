"""Plumbing shared by all rewrites: argument resolution (patterns, implicit forwarding), user
expression parsing in the scope of a cursor, and ``finish`` (provenance + well-formedness).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ..errors import ExoGpuError
from ..frontend.parser import Parser, VarInfo
from ..ir.printer import expr_str, print_proc, roundtrip_env
from ..frontend.decorators import parse_proc_source
from ..ir import nodes as N
from ..ir.types import index
from .cursors import (ArgCursor, BlockCursor, Cursor, ExprCursor, Forwarder, GapCursor,
                      InvalidCursor, StmtCursor, find, find_alloc_or_arg, find_loop, forward)
from .errors import SchedulingError
from .irtools import block_of, valid_path


def check_proc(p) -> None:
    if not isinstance(p, N.Procedure):
        raise TypeError(f"expected a procedure (@proc), not {type(p).__name__}")


def _fwd(p, c):
    if not isinstance(c, Cursor):
        raise SchedulingError(f"expected a cursor or a pattern string, got "
                              f"{type(c).__name__} {c!r}", p)
    if isinstance(c, InvalidCursor):
        raise SchedulingError(f"invalid cursor: {c.why}", p)
    if c.proc() is not p:
        try:
            c = forward(p, c)
        except Exception as e:  # noqa: BLE001
            raise SchedulingError(str(e), p) from None
        if isinstance(c, InvalidCursor):
            raise SchedulingError(f"cursor does not exist in this procedure: {c.why}", p)
    return c


def stmt_cursor(p, c, what="statement") -> StmtCursor:
    if isinstance(c, str):
        c = find(p, c)
    c = _fwd(p, c)
    if isinstance(c, BlockCursor) and len(c) == 1:
        c = c[0]
    if not isinstance(c, StmtCursor):
        raise SchedulingError(f"expected a cursor to a {what}, got {c!r}", p)
    return c


def loop_cursor(p, c) -> StmtCursor:
    if isinstance(c, str):
        c = find_loop(p, c)
    c = stmt_cursor(p, c, "loop")
    if not isinstance(c.node(), N.For):
        raise SchedulingError("expected a loop", p, [c.path()])
    return c


def alloc_cursor(p, c) -> StmtCursor:
    if isinstance(c, str):
        c = find(p, c) if ":" in c else find_alloc_or_arg(p, c)
    c = _fwd(p, c)
    if isinstance(c, ArgCursor):
        raise SchedulingError(f"'{c.name()}' is a parameter, not an allocation", p)
    c = stmt_cursor(p, c, "allocation")
    if not isinstance(c.node(), (N.Alloc, N.BarrierAlloc)):
        raise SchedulingError("expected an allocation", p, [c.path()])
    return c


def block_cursor(p, c) -> BlockCursor:
    if isinstance(c, str):
        c = find(p, c)
    c = _fwd(p, c)
    if isinstance(c, StmtCursor):
        c = c.as_block()
    if not isinstance(c, BlockCursor):
        raise SchedulingError(f"expected a block or statement cursor, got {c!r}", p)
    return c


def gap_cursor(p, c) -> GapCursor:
    """A gap: a ``GapCursor``, a statement cursor (the gap before it), or a pattern string
    ``"after: <stmt pattern>"`` / ``"before: <stmt pattern>"``."""
    if isinstance(c, str):
        side, sep, pat = c.partition(":")
        if not sep or side.strip() not in ("before", "after") or not pat.strip():
            raise SchedulingError(
                f"expected a gap, got the pattern {c!r}: a statement pattern does not say on "
                "which side of the statement; write 'after: <pattern>' or 'before: "
                "<pattern>', or pass p.find(pattern).after() / .before()", p)
        sc = stmt_cursor(p, pat.strip())
        return sc.after() if side.strip() == "after" else sc.before()
    if not isinstance(c, Cursor):
        raise SchedulingError(f"expected a gap cursor (c.before() / c.after()) or an "
                              f"'after: <pattern>' string, got {type(c).__name__}", p)
    c = _fwd(p, c)
    if isinstance(c, StmtCursor):
        c = c.before()
    if not isinstance(c, GapCursor):
        raise SchedulingError(f"expected a gap cursor (c.before() / c.after()), got {c!r}", p)
    return c


def expr_cursor(p, c) -> ExprCursor:
    if isinstance(c, str):
        c = find(p, c)
    c = _fwd(p, c)
    if not isinstance(c, ExprCursor):
        raise SchedulingError(f"expected an expression cursor, got {c!r}", p)
    return c


# ---------------------------------------------------------------- scopes and user text


def scope_vars(p: N.Procedure, parent: tuple, field: str, index_: int) -> dict:
    """Names visible before statement ``index_`` of block ``parent.field``."""
    vs: dict = {}
    for prm in p.params:
        if prm.is_data:
            vs[prm.name] = VarInfo("data", prm.type, prm.mem, prm.type.shape)
        else:
            vs[prm.name] = VarInfo("control", prm.type)
    cur = p
    steps = list(parent) + [(field, index_)]
    for n, (f, k) in enumerate(steps):
        blk = block_of(cur, f)
        for s in blk[:k]:
            _declare(vs, s)
        if n == len(steps) - 1:
            break
        cur = blk[k]
        if isinstance(cur, N.For):
            vs[cur.iter] = VarInfo("control", index)
    return vs


def _declare(vs, s):
    from ..frontend.sync import extent

    if isinstance(s, N.Alloc):
        vs[s.name] = VarInfo("data", s.type, s.mem, s.type.shape)
    elif isinstance(s, N.BarrierAlloc):
        vs[s.name] = VarInfo("barrier", s.mech, None, (), s.dims)
    elif isinstance(s, N.WindowStmt):
        base = vs.get(s.rhs.name)
        shape = []
        for a in s.rhs.idx:
            if isinstance(a, N.Interval):
                x = extent(a)
                shape.append(N.Const(x, index) if isinstance(x, int) else x)
        mem = s.special or (base.mem if base else None)
        vs[s.name] = VarInfo("data", N.TensorType(s.rhs.type, tuple(shape), True), mem,
                             tuple(shape))


class _ExprReader(Parser):
    def __init__(self, vars_: dict, env: dict, text: str):
        from collections import ChainMap

        from ..frontend.decorators import language_namespace

        super().__init__(None, ChainMap(dict(env or {}), language_namespace()), "<schedule>",
                         0, 0, [text], None)
        self.vars = dict(vars_)
        self.in_cuda = True


def parse_expr(p, where: tuple, text, kind: str = "control", env: dict | None = None):
    """Parse ``text`` (or pass an IR expression / int through) as a control, condition, data
    or window expression in the scope ``where = (parent, field, index)``."""
    from ..ir.types import int_

    if isinstance(text, bool):
        return N.Const(text, index)
    if isinstance(text, int):
        return N.Const(text, int_)
    if not isinstance(text, str):
        return text
    vs = scope_vars(p, *where)
    r = _ExprReader(vs, env or {}, text)
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise SchedulingError(f"cannot parse expression {text!r}: {e.msg}", p,
                              near(p, where)) from None
    try:
        if kind == "control":
            return r.control(node, "expression")
        if kind == "cond":
            return r.cond(node, "condition")
        if kind == "window":
            return r.window(node)
        return r.data(node)
    except ExoGpuError as e:
        raise SchedulingError(f"in {text!r}: {e.diagnostic.message}", p,
                              near(p, where)) from None


def near(p, where) -> list:
    """The statement at (or just before) the scope ``where = (parent, field, index)``, as
    the location of an error about an expression written there."""
    parent, field, i = where
    for k in (i, i - 1):
        path = tuple(parent) + ((field, k),)
        if k >= 0 and valid_path(p, path):
            return [path]
    return [tuple(parent)] if parent else []


def where_of(c) -> tuple:
    """``(parent, field, index)`` for a statement/block/gap cursor: the scope just before it."""
    if isinstance(c, StmtCursor):
        path = c.path()
        return path[:-1], path[-1][0], path[-1][1]
    if isinstance(c, BlockCursor):
        return c._parent, c._field, c._lo
    if isinstance(c, GapCursor):
        return c.location()
    raise TypeError(c)


# ---------------------------------------------------------------- finishing


def _arg_text(a) -> str:
    if isinstance(a, Cursor):
        try:
            if isinstance(a, StmtCursor):
                from ..ir.printer import stmt_lines

                return repr(stmt_lines([a.node()])[0].strip())
            if isinstance(a, ExprCursor):
                return repr(expr_str(a.node()))
            if isinstance(a, BlockCursor):
                from ..ir.printer import stmt_lines

                first = stmt_lines([a.stmts()[0]])[0].strip()
                return repr(first + (f" ... ({len(a)} statements)" if len(a) > 1 else ""))
            if isinstance(a, GapCursor):
                from ..ir.printer import stmt_lines

                return f"{a._side}({stmt_lines([a.anchor().node()])[0].strip()!r})"
        except Exception:  # noqa: BLE001
            pass
        return repr(a)
    if isinstance(a, N.Procedure):
        return a.name
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(_arg_text(x) for x in a) + "]"
    return repr(a) if isinstance(a, str) else str(a)


def finish(old: N.Procedure, new: N.Procedure, name: str, args, checked: str,
           fwd=None, unsafe: bool = False, validate: bool = True) -> N.Procedure:
    """Append the provenance record and re-check the result is a well-formed program.

    Statements the rewrite made get the location of the spec statement it started from
    (its first cursor argument), marked with this step (``locate``)."""
    from .locate import locate, origin_of

    from ..ir.derivation import program_hash
    from .record import current_call
    from .trace import log_step

    new = locate(new, origin_of(args), f"step {len(old.provenance) + 1}: {name}")
    text = revalidate(new, name) if validate else None
    rw = N.Rewrite(name, ", ".join(_arg_text(a) for a in args), checked, unsafe,
                   Forwarder(old, fwd if fwd is not None else (lambda path: path)),
                   current_call(), program_hash(new, text))
    out = replace(new, provenance=old.provenance + (rw,), module=old.module)
    log_step(old, out)
    return out


def revalidate(p: N.Procedure, name: str) -> str:
    """The printed result must parse back (scope, type and structural rules of the
    frontend); a failure is reported as a scheduling error on this rewrite."""
    text = print_proc(p)
    try:
        parse_proc_source(text, roundtrip_env(p), file="<schedule check>", instr_info=p.instr,
                          printed=True)
    except ExoGpuError as e:
        raise SchedulingError(f"{name} would produce an ill-formed program: "
                              f"{e.diagnostic.message} (line {e.diagnostic.line} of the "
                              f"result)", p) from None
    return text

