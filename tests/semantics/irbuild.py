"""Tiny constructors for hand-built IR in the interpreter tests (independent of the frontend).

Imported by path by the test modules (``tests/`` has no packages); every node gets a source
location ``prog.py:<line>`` so that tests can assert where an error is reported.
"""

from __future__ import annotations

from exogpu_verify.ir.nodes import (Assign, BinOp, BuiltIn, Call, Const, For, If, Interval, Param,
                                    Point, Procedure, Read, Reduce, Seq, StrideExpr,
                                    TensorType, UnOp, WindowExpr)
from exogpu_verify.ir.srcinfo import SrcInfo
from exogpu_verify.ir.types import R, ScalarType, bool_, index, int_, size

FILE = "prog.py"


def at(line: int) -> SrcInfo:
    return SrcInfo(FILE, line, 4)


def e(x):
    """An int is a constant, a str a control variable (``index``), an Expr itself."""
    if isinstance(x, bool):
        return Const(x, bool_)
    if isinstance(x, int):
        return Const(x, int_)
    if isinstance(x, str):
        return Read(x, (), index)
    return x


def sz(name: str) -> Read:
    return Read(name, (), size)


def lit(x: float) -> Const:
    return Const(x, R)


def cop(op: str, a, b):
    """A control binary operation (``/`` floors)."""
    return BinOp(op, e(a), e(b), bool_ if op in ("<", "<=", ">", ">=", "==", "!=", "and", "or")
                 else index)


def rd(arr: str, t: ScalarType, *idx) -> Read:
    return Read(arr, tuple(e(i) for i in idx), t)


def dop(op: str, a, b, t: ScalarType) -> BinOp:
    return BinOp(op, a, b, t)


def neg(a, t) -> UnOp:
    return UnOp("-", a, t)


def fn(name: str, t: ScalarType, *args) -> BuiltIn:
    return BuiltIn(name, tuple(args), t)


def stride(arr: str, dim: int) -> StrideExpr:
    return StrideExpr(arr, dim, index)


def assign(arr: str, idx, rhs, line: int = 0) -> Assign:
    return Assign(arr, tuple(e(i) for i in idx), rhs, at(line))


def reduce(arr: str, idx, rhs, line: int = 0) -> Reduce:
    return Reduce(arr, tuple(e(i) for i in idx), rhs, at(line))


def loop(i: str, lo, hi, *body, line: int = 0) -> For:
    return For(i, e(lo), e(hi), Seq(), tuple(body), at(line))


def if_(cond, body, orelse=(), line: int = 0) -> If:
    return If(cond, tuple(body), tuple(orelse), at(line))


def tensor(t: ScalarType, *shape, window: bool = False) -> TensorType:
    return TensorType(t, tuple(e(s) if not isinstance(s, str) else sz(s) for s in shape),
                      window)


def data(name: str, t: ScalarType, *shape, window: bool = False) -> Param:
    return Param(name, tensor(t, *shape, window=window))


def ctrl(name: str, kind=size) -> Param:
    return Param(name, kind)


def window(arr: str, t: ScalarType, *coords) -> WindowExpr:
    """``coords``: an int/str/Expr is a point, a pair ``(lo, hi)`` an interval."""
    idx = tuple(Interval(e(c[0]), e(c[1])) if isinstance(c, tuple) else Point(e(c))
                for c in coords)
    return WindowExpr(arr, idx, t)


def call(callee: Procedure, *args, line: int = 0) -> Call:
    return Call(callee, tuple(e(a) for a in args), (), at(line))


def proc(name: str, params, body, preds=(), line: int = 1) -> Procedure:
    return Procedure(name, tuple(params), tuple(preds), tuple(body), None, at(line))
