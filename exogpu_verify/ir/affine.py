"""Quasi-affine control expressions: recognition and exact conversion to isl and Z3.

A control expression is quasi-affine when it is built from integer constants and integer
variables with ``+``, ``-``, multiplication where one side is constant, and floor division
``/`` and ``%`` by positive constants. ``check_quasi_affine`` says why not otherwise.
``to_isl_str`` gives isl syntax (``floor((e)/c)``, ``(e) mod c``), ``to_isl_aff`` an
``islpy.PwAff`` in a given space, and ``to_z3`` a Z3 integer term (Z3's ``/`` and ``%`` on
integers are Euclidean, which equals floor division and Python's ``%`` for positive divisors).
"""

from __future__ import annotations

from .nodes import BinOp, Const, Expr, Interval, Read, StrideExpr, UnOp


class NotAffine(Exception):
    """Carries the sub-expression and the reason it is not quasi-affine."""

    def __init__(self, expr, reason: str):
        super().__init__(reason)
        self.expr = expr
        self.reason = reason


def const_value(e: Expr) -> int | None:
    """The integer value of a constant control expression, or None."""
    if isinstance(e, Const) and isinstance(e.val, (int, bool)):
        return int(e.val)
    if isinstance(e, UnOp) and e.op == "-":
        v = const_value(e.arg)
        return None if v is None else -v
    if isinstance(e, BinOp) and e.op in ("+", "-", "*", "/", "%"):
        a, b = const_value(e.lhs), const_value(e.rhs)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if b <= 0:
            return None
        return a // b if e.op == "/" else a % b
    return None


def extent(iv: Interval):
    """The length ``hi - lo`` of an interval: an int when both ends are constant, else an
    expression."""
    lo, hi = const_value(iv.lo), const_value(iv.hi)
    if lo is not None and hi is not None:
        return hi - lo
    if lo == 0:
        return iv.hi
    return BinOp("-", iv.hi, iv.lo, iv.hi.type)


def _divisor(e: BinOp) -> int:
    """The constant divisor of ``e`` (a ``/`` or ``%``); ``NotAffine`` unless positive."""
    c = const_value(e.rhs)
    if c is None:
        raise NotAffine(e, f"'{e.op}' by a non-constant")
    if c <= 0:
        raise NotAffine(e, f"'{e.op}' by a non-positive constant {c}")
    return c


def check_quasi_affine(e: Expr) -> None:
    """Raise ``NotAffine`` if the integer expression ``e`` is not quasi-affine."""
    if isinstance(e, Const):
        return
    if isinstance(e, Read):
        if e.idx:
            raise NotAffine(e, f"data read {e.name}[...] in a control expression")
        return
    if isinstance(e, StrideExpr):
        return
    if isinstance(e, UnOp) and e.op == "-":
        check_quasi_affine(e.arg)
        return
    if isinstance(e, BinOp):
        if e.op in ("+", "-"):
            check_quasi_affine(e.lhs)
            check_quasi_affine(e.rhs)
            return
        if e.op == "*":
            if const_value(e.lhs) is None and const_value(e.rhs) is None:
                raise NotAffine(e, "product of two non-constant expressions")
            check_quasi_affine(e.lhs)
            check_quasi_affine(e.rhs)
            return
        if e.op in ("/", "%"):
            _divisor(e)
            check_quasi_affine(e.lhs)
            return
    raise NotAffine(e, "not an affine integer expression")


def to_isl_str(e: Expr, rename: dict[str, str] | None = None) -> str:
    """isl syntax for a quasi-affine expression (variables renamed by ``rename``)."""
    rename = rename or {}
    c = const_value(e)
    if c is not None:
        return str(c) if c >= 0 else f"({c})"
    if isinstance(e, Read):
        return rename.get(e.name, e.name)
    if isinstance(e, StrideExpr):
        return rename.get(f"stride_{e.name}_{e.dim}", f"stride_{e.name}_{e.dim}")
    if isinstance(e, UnOp) and e.op == "-":
        return f"(-{to_isl_str(e.arg, rename)})"
    if isinstance(e, BinOp):
        a, b = to_isl_str(e.lhs, rename), to_isl_str(e.rhs, rename)
        if e.op == "*":
            # isl reads only `constant * expr`
            k = const_value(e.lhs)
            other = b
            if k is None:
                k, other = const_value(e.rhs), a
            if k is None:
                raise NotAffine(e, "product of two non-constant expressions")
            return f"({k} * ({other}))"
        if e.op in ("+", "-"):
            return f"({a} {e.op} {b})"
        if e.op in ("/", "%"):
            _divisor(e)
            return f"floor(({a})/{b})" if e.op == "/" else f"(({a}) mod {b})"
    raise NotAffine(e, "not an affine integer expression")


def to_isl_aff(e: Expr, params: list[str], dims: list[str], rename: dict[str, str] | None = None):
    """An ``islpy.PwAff`` over ``[params] -> { [dims] -> [e] }``."""
    import islpy as isl

    space = f"[{', '.join(params)}] -> {{ [{', '.join(dims)}] -> [{to_isl_str(e, rename)}] }}"
    return isl.PwAff(space)


def to_z3(e: Expr, env: dict):
    """A Z3 integer term; ``env`` maps variable names to Z3 terms (missing -> fresh Int)."""
    import z3

    def var(name):
        if name not in env:
            env[name] = z3.Int(name)
        return env[name]

    def go(e):
        c = const_value(e)
        if c is not None:
            return z3.IntVal(c)
        if isinstance(e, Read):
            return var(e.name)
        if isinstance(e, StrideExpr):
            return var(f"stride_{e.name}_{e.dim}")
        if isinstance(e, UnOp) and e.op == "-":
            return -go(e.arg)
        if isinstance(e, BinOp):
            a, b = go(e.lhs), go(e.rhs)
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                    "/": lambda: a / b, "%": lambda: a % b}[e.op]()
        raise NotAffine(e, "not an affine integer expression")

    check_quasi_affine(e)
    return go(e)


def cond_to_z3(e: Expr, env: dict):
    """A Z3 boolean for a control condition (comparisons, and/or/not)."""
    import z3

    if isinstance(e, Const) and isinstance(e.val, bool):
        return z3.BoolVal(e.val)
    if isinstance(e, Read) and not e.idx and e.type.name == "bool":
        if e.name not in env:
            env[e.name] = z3.Bool(e.name)
        return env[e.name]
    if isinstance(e, UnOp) and e.op == "not":
        return z3.Not(cond_to_z3(e.arg, env))
    if isinstance(e, BinOp):
        if e.op == "and":
            return z3.And(cond_to_z3(e.lhs, env), cond_to_z3(e.rhs, env))
        if e.op == "or":
            return z3.Or(cond_to_z3(e.lhs, env), cond_to_z3(e.rhs, env))
        if e.op in ("<", "<=", ">", ">=", "==", "!="):
            a, b = to_z3(e.lhs, env), to_z3(e.rhs, env)
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                    "!=": a != b}[e.op]
    raise NotAffine(e, "not an affine condition")


def cond_to_isl_str(e: Expr, rename: dict[str, str] | None = None) -> str:
    """isl constraint syntax for a control condition."""
    if isinstance(e, Const) and isinstance(e.val, bool):
        return "1 = 1" if e.val else "1 = 0"
    if isinstance(e, UnOp) and e.op == "not":
        return f"not ({cond_to_isl_str(e.arg, rename)})"
    if isinstance(e, BinOp):
        if e.op in ("and", "or"):
            return (f"(({cond_to_isl_str(e.lhs, rename)}) {e.op} "
                    f"({cond_to_isl_str(e.rhs, rename)}))")
        if e.op in ("<", "<=", ">", ">=", "==", "!="):
            op = {"==": "=", "!=": "!="}.get(e.op, e.op)
            a, b = to_isl_str(e.lhs, rename), to_isl_str(e.rhs, rename)
            if op == "!=":
                return f"({a} < {b} or {a} > {b})"
            return f"{a} {op} {b}"
    raise NotAffine(e, "not an affine condition")


def free_names(e) -> frozenset | None:
    """Control variables an expression reads, or None if it is not a plain control
    expression (then it is treated as depending on everything)."""
    if isinstance(e, (Const, StrideExpr)):
        return frozenset()
    if isinstance(e, Read):
        return None if e.idx else frozenset((e.name,))
    if isinstance(e, BinOp):
        a, b = free_names(e.lhs), free_names(e.rhs)
        return None if a is None or b is None else a | b
    if isinstance(e, UnOp):
        return free_names(e.arg)
    return None
