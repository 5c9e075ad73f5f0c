"""A small expression printer for the interpreter's messages (``N % 4 == 0``, ``f32[M, K]``).

It prints in the user's spelling with Python precedence, so a failed precondition reads as
the ``assert`` the user wrote. It is independent of the frontend's printer so that the
interpreter works on hand-built IR.
"""

from __future__ import annotations

from ..ir.nodes import (BinOp, BuiltIn, Const, Interval, Point, Read, StrideExpr, TensorType,
                        UnOp, WindowExpr)

# Python precedence, loosest first; comparisons do not chain in our IR, so they print
# parenthesized when nested.
_PREC = {"or": 1, "and": 2, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
         "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


def show_expr(e, prec: int = 0) -> str:
    """The source spelling of an expression."""
    if isinstance(e, Const):
        return repr(e.val)
    if isinstance(e, Read):
        if not e.idx:
            return e.name
        return f"{e.name}[{', '.join(show_expr(i) for i in e.idx)}]"
    if isinstance(e, StrideExpr):
        return f"stride({e.name}, {e.dim})"
    if isinstance(e, UnOp):
        if e.op == "not":
            s, p = f"not {show_expr(e.arg, 3)}", 3
        else:
            s, p = f"-{show_expr(e.arg, 7)}", 7
        return f"({s})" if p < prec else s
    if isinstance(e, BinOp):
        p = _PREC.get(e.op, 6)
        # left-associative: the right operand needs strictly tighter binding
        s = f"{show_expr(e.lhs, p)} {e.op} {show_expr(e.rhs, p + 1)}"
        return f"({s})" if p < prec or (p == 4 and prec == 4) else s
    if isinstance(e, BuiltIn):
        return f"{e.fn}({', '.join(show_expr(a) for a in e.args)})"
    if isinstance(e, WindowExpr):
        return f"{e.name}[{', '.join(show_waccess(w) for w in e.idx)}]"
    return str(e)


def show_waccess(w) -> str:
    if isinstance(w, Point):
        return show_expr(w.pt)
    assert isinstance(w, Interval)
    return f"{show_expr(w.lo)}:{show_expr(w.hi)}"


def show_tensor_type(t: TensorType) -> str:
    """``f32[M, K]`` (``[f32][M, K]`` for a window)."""
    dims = ", ".join(show_expr(d) for d in t.shape)
    base = f"[{t.scalar}]" if t.is_window else str(t.scalar)
    return f"{base}[{dims}]" if t.shape else base
