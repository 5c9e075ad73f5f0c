"""Statement closures for the parallel oracle: one Python function per IR statement.

``Compiler.assign(s, types)`` gives ``f(E, V)`` that performs an ``Assign``/``Reduce`` on the
current array values (``V``: name -> numpy array or view; ``E``: control values), computing
with the precision rule of ``semantics/__init__.py``: the same numpy operations, in the same
order, as the sequential interpreter's scalar code (``semantics/compile.py``), so the
values agree bitwise. ``Compiler.ctrl(e)`` evaluates a control expression.
"""

from __future__ import annotations

import numpy as np

from ..errors import InternalError
from ..ir import nodes as N
from ..ir.types import R, ControlType, ScalarType, promote
from ..semantics.runtime import NAMESPACE
from ..semantics.vectorize import data_reads, is_data_read


# ------------------------------------------------------------------ statement compiler

_CTRL_OPS = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%", "<": "<", "<=": "<=",
             ">": ">", ">=": ">=", "==": "==", "!=": "!=", "and": "and", "or": "or"}


class _Code:
    """Python source for one statement or expression, with its bound constants."""

    def __init__(self, types: dict):
        self.types = types  # data name -> ScalarType
        self.ns = dict(NAMESPACE)
        self.n = 0

    def bind(self, value) -> str:
        self.n += 1
        name = f"_k{self.n}"
        self.ns[name] = value
        return name

    def ctrl(self, e) -> str:
        if isinstance(e, N.Const):
            return repr(e.val if isinstance(e.val, bool) else int(e.val))
        if isinstance(e, N.Read) and not is_data_read(e):
            return f"E[{e.name!r}]"
        if isinstance(e, N.StrideExpr):
            return f"(V[{e.name!r}].strides[{e.dim}] // V[{e.name!r}].itemsize)"
        if isinstance(e, N.BinOp) and e.op in _CTRL_OPS:
            return f"({self.ctrl(e.lhs)} {_CTRL_OPS[e.op]} {self.ctrl(e.rhs)})"
        if isinstance(e, N.UnOp) and e.op in ("-", "not"):
            return f"({e.op} {self.ctrl(e.arg)})"
        raise InternalError(f"oracle: not a control expression: {e!r}")

    def access(self, name: str, idx) -> str:
        return f"V[{name!r}][({''.join(self.ctrl(i) + ', ' for i in idx)})]"

    def const(self, val, t: ScalarType) -> str:
        with np.errstate(all="ignore"):
            return self.bind(np.asarray(val).astype(t.np_dtype)[()])

    def precision(self, dest: ScalarType, e) -> ScalarType:
        t = dest
        for r in data_reads(e):
            t = promote(t, self.types[r.name])
        for c in _typed_consts(e):
            t = promote(t, c)
        return t

    def data(self, e, t: ScalarType) -> str:
        D = self.bind(t.np_dtype)
        if isinstance(e, N.Const):
            return self.const(e.val, t)
        if is_data_read(e):
            code = self.access(e.name, e.idx)
            return code if self.types[e.name] == t else f"{code}.astype({D})"
        if isinstance(e.type, ControlType):
            return f"_ctl({self.ctrl(e)}, {D})"
        if isinstance(e, N.UnOp) and e.op == "-":
            return f"(-{self.data(e.arg, t)})"
        if isinstance(e, N.BinOp):
            a, b = self.data(e.lhs, t), self.data(e.rhs, t)
            if e.op in ("+", "-", "*") or (e.op == "/" and t.is_float):
                return f"({a} {e.op} {b})"
            if e.op in ("/", "%"):
                return f"{'_cdiv' if e.op == '/' else '_cmod'}({a}, {b})"
        if isinstance(e, N.BuiltIn):
            codes = [self.data(a, t) for a in e.args]
            if e.fn == "relu":
                return f"_relu_s({codes[0]}, {self.const(0, t)})"
            if e.fn == "select":
                return f"_select_s({', '.join(codes)})"
            if e.fn in ("sqrt", "exp") and not t.is_float:
                return f"np.{e.fn}({codes[0]}).astype({D})"
            return f"np.{e.fn}({', '.join(codes)})"
        raise InternalError(f"oracle: unsupported data expression {e!r}")

    def function(self, body: str):
        src = f"def _f(E, V):\n    {body}\n"
        exec(compile(src, "<exogpu oracle>", "exec"), self.ns)  # noqa: S102 - from our IR
        return self.ns["_f"]


def _typed_consts(e) -> list:
    out = []
    if isinstance(e, N.Const) and isinstance(e.type, ScalarType) and e.type != R:
        out.append(e.type)
    for c in (getattr(e, "lhs", None), getattr(e, "rhs", None), getattr(e, "arg", None)):
        if c is not None:
            out += _typed_consts(c)
    for c in getattr(e, "args", ()) or ():
        out += _typed_consts(c)
    return out


class Compiler:
    """Closures for statements and control expressions, cached per IR node."""

    def __init__(self):
        self._cache: dict[int, tuple] = {}

    def _get(self, node, make):
        hit = self._cache.get(id(node))
        if hit is None or hit[0] is not node:
            hit = self._cache[id(node)] = (node, make())
        return hit[1]

    def assign(self, s, types: dict):
        """``f(E, V)`` performing ``s`` (an Assign or Reduce) on the current values."""

        def make():
            c = _Code(types)
            dest = types[s.name]
            t = c.precision(dest, s.rhs)
            rhs = c.data(s.rhs, t)
            target = c.access(s.name, s.idx)
            if isinstance(s, N.Reduce):
                cur = target if dest == t else f"{target}.astype({c.bind(t.np_dtype)})"
                rhs = f"({cur} + {rhs})"
            if dest != t:
                rhs = f"({rhs}).astype({c.bind(dest.np_dtype)})"
            return c.function(f"{target} = {rhs}")

        return self._get(s, make)

    def ctrl(self, e):
        """``f(E, V)`` evaluating a control expression."""

        def make():
            c = _Code({})
            return c.function(f"return {c.ctrl(e)}")

        return self._get(e, make)
