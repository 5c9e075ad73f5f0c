"""How a rewrite was called, kept so that a schedule can be replayed.

Every public primitive is decorated with ``@primitive``: while it runs, the call (its name
and its arguments, cursors converted to paths into the procedure it was applied to) is the
*current call*, which ``finish`` stores in the ``Rewrite`` it appends. A call spec is both
live (the argument objects, for replay in this process) and serializable (JSON: literals,
paths, and source text of language objects such as ``Sm90_SmemSwizzled(128)`` or
``CudaThreads(unit=cuda_warpgroup)``, evaluated again in the language namespace and the
defining module's globals), for replay from a certificate.
"""

from __future__ import annotations

import contextvars
import functools
from dataclasses import dataclass

from ..ir import nodes as N

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("exogpu_schedule_call",
                                                          default=None)


@dataclass(frozen=True)
class Call:
    """One primitive call: ``name``, positional ``args`` and ``kwargs`` as specs."""

    name: str
    args: tuple
    kwargs: tuple  # ((key, spec), ...)

    def to_json(self) -> dict:
        return {"primitive": self.name, "args": [spec_json(a) for a in self.args],
                "kwargs": {k: spec_json(v) for k, v in self.kwargs}}


def current_call():
    return _CURRENT.get()


def primitive(fn):
    """Record calls of a public scheduling primitive (see the module docstring)."""

    @functools.wraps(fn)
    def wrapper(proc, *args, **kwargs):
        try:
            call = Call(fn.__name__, tuple(to_spec(proc, a) for a in args),
                        tuple((k, to_spec(proc, v)) for k, v in kwargs.items()))
        except Exception:  # noqa: BLE001 - an argument we cannot describe: not replayable
            call = Call(fn.__name__, None, None)
        token = _CURRENT.set(call)
        try:
            return fn(proc, *args, **kwargs)
        finally:
            _CURRENT.reset(token)

    wrapper.__wrapped_primitive__ = fn
    return wrapper


# ---------------------------------------------------------------- specs


@dataclass(frozen=True)
class Spec:
    """``kind`` in lit | list | cursor | text | proc; ``live`` is the object itself (or,
    for a cursor, the same cursor kind rebuilt from ``data`` on any procedure)."""

    kind: str
    data: object
    live: object = None


def to_spec(proc, a) -> Spec:
    from .cursors import (ArgCursor, BlockCursor, Cursor, ExprCursor, GapCursor, StmtCursor,
                          forward)

    if a is None or isinstance(a, (bool, int, float, str)):
        return Spec("lit", a, a)
    if isinstance(a, (list, tuple)):
        return Spec("list", tuple(to_spec(proc, x) for x in a), type(a))
    if isinstance(a, Cursor):
        if isinstance(proc, N.Procedure) and a.proc() is not proc:
            a = forward(proc, a)
        if isinstance(a, StmtCursor):
            return Spec("cursor", ("stmt", _path(a.path())))
        if isinstance(a, BlockCursor):
            return Spec("cursor", ("block", _path(a._parent), a._field, a._lo, a._hi))
        if isinstance(a, GapCursor):
            return Spec("cursor", ("gap", _path(a._anchor), a._side))
        if isinstance(a, ExprCursor):
            return Spec("cursor", ("expr", _path(a._path), _path(a._epath)))
        if isinstance(a, ArgCursor):
            return Spec("cursor", ("arg", a.name()))
        raise TypeError(f"cannot record {a!r}")
    if isinstance(a, N.Procedure):
        return Spec("proc", a.name, a)
    return Spec("text", source_text(a), a)


def _path(path) -> tuple:
    return tuple(tuple(step) for step in path)


def source_text(a) -> str:
    """The language spelling of a schedule argument (it evaluates back to an equal one)."""
    if isinstance(a, N.CudaThreads):
        return f"CudaThreads(unit={a.unit})"
    if isinstance(a, N.Seq):
        return f"Seq({a.pragma_unroll})" if a.pragma_unroll is not None else "Seq()"
    if isinstance(a, N.CudaTasks):
        return "CudaTasks()"
    if isinstance(a, (N.WindowExpr, N.BarrierRef, N.Read, N.BinOp, N.UnOp, N.Const)):
        from ..ir.printer import expr_str

        return expr_str(a)
    return str(a)


def spec_json(s: Spec):
    if s.kind == "lit":
        return {"lit": s.data}
    if s.kind == "list":
        return {"list": [spec_json(x) for x in s.data]}
    if s.kind == "cursor":
        return {"cursor": [list(x) if isinstance(x, tuple) else x for x in s.data]}
    if s.kind == "proc":
        return {"proc": s.data}
    return {"text": s.data}


def spec_from_json(d) -> Spec:
    if "lit" in d:
        return Spec("lit", d["lit"], d["lit"])
    if "list" in d:
        return Spec("list", tuple(spec_from_json(x) for x in d["list"]), list)
    if "cursor" in d:
        c = d["cursor"]
        kind = c[0]
        if kind == "stmt":
            data = ("stmt", _path(c[1]))
        elif kind == "block":
            data = ("block", _path(c[1]), c[2], c[3], c[4])
        elif kind == "gap":
            data = ("gap", _path(c[1]), c[2])
        elif kind == "expr":
            data = ("expr", _path(c[1]), _path(c[2]))
        else:
            data = ("arg", c[1])
        return Spec("cursor", data)
    if "proc" in d:
        return Spec("proc", d["proc"])
    return Spec("text", d["text"])


def resolve(s: Spec, proc, namespace: dict | None, live: bool):
    """The argument value of ``s`` for a call on ``proc``: live objects, or objects
    evaluated from their text in ``namespace`` (replay from a certificate)."""
    from .cursors import ArgCursor, BlockCursor, ExprCursor, GapCursor, StmtCursor

    if s.kind == "lit":
        return s.data
    if s.kind == "list":
        vals = [resolve(x, proc, namespace, live) for x in s.data]
        return tuple(vals) if s.live is tuple else vals
    if s.kind == "cursor":
        d = s.data
        if d[0] == "stmt":
            return StmtCursor(proc, d[1])
        if d[0] == "block":
            return BlockCursor(proc, d[1], d[2], d[3], d[4])
        if d[0] == "gap":
            return GapCursor(proc, d[1], d[2])
        if d[0] == "expr":
            return ExprCursor(proc, d[1], d[2])
        return ArgCursor(proc, d[1])
    if live and s.live is not None:
        return s.live
    if s.kind == "proc":
        if namespace is None or s.data not in namespace:
            raise LookupError(f"procedure or instruction '{s.data}' is not defined in the "
                              "module or the platform libraries")
        return namespace[s.data]
    return eval(s.data, {}, namespace or {})  # noqa: S307 - the language's own spelling
