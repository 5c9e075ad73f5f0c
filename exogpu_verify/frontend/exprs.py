"""Expression parsing and typing (mixin of the procedure parser).

Three contexts: ``control`` (integer, quasi-affine where it indexes or bounds), ``cond``
(boolean control) and ``data`` (arbitrary arithmetic on scalars). A control expression that
reads data, or a data array used without indices, is a located type error.
"""

from __future__ import annotations

import ast

from ..ir import nodes as N
from ..ir.affine import NotAffine, check_quasi_affine, const_value
from ..ir.types import R, ControlType, ScalarType, bool_, index, int_, promote
from .language import BUILTINS, KEYWORDS

_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "/",
          ast.Mod: "%"}


class ExprParser:
    """Methods shared by the statement parser; needs ``self.vars``, ``self.src(node)``,
    ``self.lookup_py(name, node)`` and ``self.err(kind, msg, node, hint)``."""

    # ------------------------------------------------------------ control
    def control(self, node: ast.expr, what: str = "index expression", affine: bool = True):
        e = self._control(node, what)
        if not isinstance(e.type, ControlType) or not e.type.is_int:
            raise self.err("type", f"{what} must be an integer control expression, got a "
                           f"{e.type} expression", node)
        if affine:
            try:
                check_quasi_affine(e)
            except NotAffine as na:
                raise self.err("type", f"non-affine {what}: {na.reason}", node,
                               hint="control expressions may use + and -, multiplication by a "
                                    "constant, and / or % by a positive constant")
        return e

    def cond(self, node: ast.expr, what: str = "condition"):
        e = self._control(node, what)
        if e.type != bool_:
            raise self.err("type", f"{what} must be a boolean control expression "
                           f"(a comparison), got a {e.type} expression", node)
        return e

    def _control(self, node: ast.expr, what: str):
        si = self.src(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return N.Const(node.value, bool_, si)
            if isinstance(node.value, int):
                return N.Const(node.value, int_, si)
            raise self.err("type", f"{what} must be an integer, not {node.value!r}", node)
        if isinstance(node, ast.Name):
            info = self.vars.get(node.id)
            if info is not None:
                if info.kind == "control":
                    return N.Read(node.id, (), info.type, si)
                raise self.err("type", f"{info.kind} variable '{node.id}' cannot be used in "
                               f"{what} (control expressions must not depend on data)", node,
                               hint="control flow and indices may only use sizes, indices, "
                                    "loop variables and constants")
            val = self.lookup_py(node.id, node)
            if isinstance(val, bool):
                return N.Const(val, bool_, si)
            if isinstance(val, int):
                return N.Const(val, int_, si)
            raise self.err("type", f"'{node.id}' is {_describe(val)}, not an integer usable "
                           f"in {what}", node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                a = self._control(node.operand, what)
                if isinstance(a, N.Const) and a.type == int_:
                    return N.Const(-a.val, int_, si)
                self._need_int(a, node.operand, what)
                return N.UnOp("-", a, index, si)
            if isinstance(node.op, ast.Not):
                a = self._control(node.operand, what)
                self._need_bool(a, node.operand, what)
                return N.UnOp("not", a, bool_, si)
            if isinstance(node.op, ast.UAdd):
                return self._control(node.operand, what)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            a, b = self._control(node.left, what), self._control(node.right, what)
            self._need_int(a, node.left, what)
            self._need_int(b, node.right, what)
            op = _ARITH[type(node.op)]
            if op in ("/", "%"):
                c = const_value(b)
                if c is not None and c <= 0:
                    raise self.err("type", f"'{op}' by the non-positive constant {c} in "
                                   f"{what}: control expressions divide (floor division) and "
                                   "take remainders only by positive constants", node.right,
                                   hint=f"use a positive divisor, e.g. `{ast.unparse(node.left)}"
                                        f" {'%' if op == '%' else '/'} {abs(c) or 2}`")
            return N.BinOp(op, a, b, index, si)
        if isinstance(node, ast.Compare):
            return self._compare(node, what)
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            parts = [self._control(v, what) for v in node.values]
            for p, v in zip(parts, node.values):
                self._need_bool(p, v, what)
            e = parts[0]
            for p in parts[1:]:
                e = N.BinOp(op, e, p, bool_, si)
            return e
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = self.resolve_keyword(node.func)
            if fn is KEYWORDS["stride"]:
                return self._stride(node)
        if isinstance(node, ast.Subscript):
            raise self.err("type", f"data read {ast.unparse(node)} in {what}: control "
                           "expressions must not depend on data", node,
                           hint="indices, loop bounds and conditions may only use sizes, "
                                "indices, loop variables and constants")
        raise self.err("type", f"unsupported {what}: {ast.unparse(node)}", node)

    def _compare(self, node: ast.Compare, what):
        si = self.src(node)
        terms = [self._control(node.left, what)] + [self._control(c, what)
                                                    for c in node.comparators]
        nodes_ = [node.left] + list(node.comparators)
        for t, n in zip(terms, nodes_):
            self._need_int(t, n, what)
        out = None
        for i, op in enumerate(node.ops):
            if type(op) not in _CMP:
                raise self.err("syntax", f"unsupported comparison {type(op).__name__} in {what}",
                               node)
            c = N.BinOp(_CMP[type(op)], terms[i], terms[i + 1], bool_, si)
            out = c if out is None else N.BinOp("and", out, c, bool_, si)
        return out

    def _stride(self, node: ast.Call):
        if len(node.args) != 2 or node.keywords or not isinstance(node.args[0], ast.Name):
            raise self.err("syntax", "stride takes a tensor name and a dimension: stride(A, 1)",
                           node)
        name = node.args[0].id
        info = self.vars.get(name)
        if info is None or info.kind != "data":
            raise self.err("type", f"stride() needs a tensor, '{name}' is not one", node.args[0])
        dim = node.args[1]
        if not (isinstance(dim, ast.Constant) and isinstance(dim.value, int)):
            raise self.err("type", "stride() dimension must be an integer literal", dim)
        if not 0 <= dim.value < len(info.shape):
            raise self.err("type", f"stride({name}, {dim.value}): '{name}' has "
                           f"{len(info.shape)} dimensions", dim)
        return N.StrideExpr(name, dim.value, index, self.src(node))

    def _need_int(self, e, node, what):
        if not (isinstance(e.type, ControlType) and e.type.is_int):
            raise self.err("type", f"expected an integer in {what}, got a {e.type} expression",
                           node)

    def _need_bool(self, e, node, what):
        if e.type != bool_:
            raise self.err("type", f"expected a condition in {what}, got a {e.type} expression",
                           node)

    # ------------------------------------------------------------ data
    def data(self, node: ast.expr):
        si = self.src(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return N.Const(node.value, R, si)
            raise self.err("type", f"unsupported constant {node.value!r} in a data expression",
                           node)
        if isinstance(node, ast.Name):
            info = self.vars.get(node.id)
            if info is not None:
                if info.kind == "control":
                    return N.Read(node.id, (), info.type, si)
                if info.kind == "data":
                    if info.shape:
                        raise self.err("type", f"'{node.id}' has shape "
                                       f"[{', '.join(self.show(s) for s in info.shape)}]; index "
                                       f"it to read one element", node)
                    return N.Read(node.id, (), info.type.scalar, si)
                raise self.err("type", f"barrier '{node.id}' cannot be read as data", node)
            val = self.lookup_py(node.id, node)
            if isinstance(val, (int, float)) and not isinstance(val, bool):
                return N.Const(val, R, si)
            raise self.err("type", f"'{node.id}' is {_describe(val)}, not a data value", node)
        if isinstance(node, ast.Subscript):
            name, idx = self.point_access(node)
            info = self.vars[name]
            return N.Read(name, idx, info.type.scalar, si)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = self.data(node.operand)
            if isinstance(a, N.Const) and a.type == R:
                return N.Const(-a.val, R, si)
            return N.UnOp("-", a, self._dtype(a), si)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            return self.data(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult,
                                                              ast.Div):
            a, b = self.data(node.left), self.data(node.right)
            t = promote(self._dtype(a), self._dtype(b))
            return N.BinOp(_ARITH[type(node.op)], a, b, t, si)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in BUILTINS and node.func.id not in self.vars:
            want = BUILTINS[node.func.id]
            if len(node.args) != want or node.keywords:
                raise self.err("type", f"{node.func.id}() takes {want} argument(s)", node)
            args = tuple(self.data(a) for a in node.args)
            t = R
            for a in args:
                t = promote(t, self._dtype(a))
            return N.BuiltIn(node.func.id, args, t, si)
        raise self.err("type", f"unsupported data expression: {ast.unparse(node)}", node,
                       hint="data expressions use array reads, numbers, + - * /, and the "
                            f"builtins {', '.join(sorted(BUILTINS))}")

    @staticmethod
    def _dtype(e) -> ScalarType:
        return e.type if isinstance(e.type, ScalarType) else R

    def point_access(self, node: ast.Subscript):
        """``A[i, j]`` with all-point indices -> (name, idx); checks rank and affinity."""
        if not isinstance(node.value, ast.Name):
            raise self.err("syntax", f"only named arrays can be indexed: {ast.unparse(node)}",
                           node)
        name = node.value.id
        info = self.vars.get(name)
        if info is None:
            self.lookup_py(name, node.value)  # raises 'unknown name' if undefined
            raise self.err("type", f"'{name}' is not a tensor of this procedure", node.value)
        if info.kind != "data":
            raise self.err("type", f"{info.kind} variable '{name}' cannot be indexed like "
                           "data", node)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(e, ast.Slice) for e in elts):
            raise self.err("type", f"window {ast.unparse(node)} used as a value; windows are "
                           "only allowed as call arguments and in window statements", node)
        if len(elts) != len(info.shape):
            raise self.err("type", f"'{name}' has {len(info.shape)} dimension(s) but is "
                           f"indexed with {len(elts)}", node)
        return name, tuple(self.control(e, "index expression") for e in elts)


def _describe(val) -> str:
    if callable(val) and hasattr(val, "__name__"):
        return f"the Python object {val.__name__}"
    return f"a {type(val).__name__} ({val!r})" if not isinstance(val, type) else \
        f"the class {val.__name__}"
