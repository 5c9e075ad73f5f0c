"""Exo-style patterns: ``"for k in _: _"``, ``"A_smem : _"``, ``"C[_] += _"``,
``"x = _ ; y = _"`` (a block), expression patterns such as ``"A[i, k] * B[k, j]"``, and a
trailing ``#n`` to pick the n-th match (0-based).

``_`` matches any statement, expression, or (alone inside brackets, ``C[_]``) any list of
indices. Patterns are parsed with Python's ``ast`` and matched against IR nodes.
"""

from __future__ import annotations

import ast
import re

from ..ir import nodes as N
from ..ir.affine import const_value
from ..frontend.language import BUILTINS
from .errors import SchedulingError

_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "/",
        ast.Mod: "%"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class PatternError(SchedulingError):
    """A pattern string that does not parse."""


def split_index(pattern: str) -> tuple[str, int | None]:
    m = re.match(r"^(.*?)\s*#\s*(\d+)\s*$", pattern, re.S)
    if m:
        return m.group(1), int(m.group(2))
    return pattern, None


def parse(pattern: str):
    """-> ("stmts", [ast.stmt]) or ("expr", ast.expr)."""
    text = pattern.strip()
    try:
        mod = ast.parse(text)
    except SyntaxError as e:
        raise PatternError(f"cannot parse pattern {pattern!r}: {e.msg}") from None
    body = mod.body
    if len(body) == 1 and isinstance(body[0], ast.Expr):
        v = body[0].value
        if isinstance(v, ast.Name) and v.id == "_":
            return "stmts", body
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in BUILTINS:
            return "expr", v
        if isinstance(v, ast.Call) or (isinstance(v, ast.BinOp) and isinstance(v.op, ast.RShift)):
            return "stmts", body
        return "expr", v
    return "stmts", body


def _wild(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "_"


def _wild_body(body) -> bool:
    return len(body) == 1 and isinstance(body[0], ast.Expr) and _wild(body[0].value)


def match_block(pats: list, stmts) -> bool:
    """A block pattern matches a statement list when it matches a prefix of it."""
    if _wild_body(pats):
        return True
    if len(pats) > len(stmts):
        return False
    return all(match_stmt(p, s) for p, s in zip(pats, stmts))


def match_stmt(p: ast.stmt, s) -> bool:
    if isinstance(p, ast.Expr) and _wild(p.value):
        return True
    if isinstance(p, ast.Pass):
        return isinstance(s, N.Pass)
    if isinstance(p, ast.For):
        if not isinstance(s, N.For):
            return False
        if not _wild(p.target) and not (isinstance(p.target, ast.Name) and p.target.id == s.iter):
            return False
        if not _wild(p.iter) and isinstance(p.iter, ast.Call) and isinstance(p.iter.func, ast.Name):
            want = p.iter.func.id
            if want != _mode_name(s.mode):
                return False
            args = p.iter.args
            if len(args) == 2 and not (_wild(args[0]) or match_expr(args[0], s.lo)):
                return False
            if len(args) == 2 and not (_wild(args[1]) or match_expr(args[1], s.hi)):
                return False
        return match_block(p.body, s.body)
    if isinstance(p, ast.If):
        if not isinstance(s, N.If):
            return False
        if not match_expr(p.test, s.cond):
            return False
        if not match_block(p.body, s.body):
            return False
        if p.orelse:
            return bool(s.orelse) and match_block(p.orelse, s.orelse)
        return True
    if isinstance(p, ast.With):
        if not isinstance(s, N.With):
            return False
        ctx = p.items[0].context_expr
        if not _wild(ctx):
            nm = ctx.func.id if isinstance(ctx, ast.Call) and isinstance(ctx.func, ast.Name) \
                else getattr(ctx, "id", None)
            if nm != type(s.ctx).__name__:
                return False
        return match_block(p.body, s.body)
    if isinstance(p, ast.AnnAssign):
        if not isinstance(s, (N.Alloc, N.BarrierAlloc)):
            return False
        if not isinstance(p.target, ast.Name):
            return False
        if not _wild(p.target) and p.target.id != s.name:
            return False
        ann = p.annotation
        if _wild(ann):
            return True
        base = ann.left if isinstance(ann, ast.BinOp) else ann
        base = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(base, ast.Name) and not _wild(base):
            if isinstance(s, N.BarrierAlloc):
                return base.id == "barrier"
            return base.id == str(s.type.scalar)
        return True
    if isinstance(p, ast.Assign):
        if len(p.targets) != 1:
            return False
        if isinstance(s, N.WindowStmt):
            return _match_lhs(p.targets[0], s.name, None) and (
                _wild(p.value) or match_expr(p.value, s.rhs))
        if not isinstance(s, N.Assign):
            return False
        return _match_lhs(p.targets[0], s.name, s.idx) and match_expr(p.value, s.rhs)
    if isinstance(p, ast.AugAssign):
        if not isinstance(s, N.Reduce) or not isinstance(p.op, ast.Add):
            return False
        return _match_lhs(p.target, s.name, s.idx) and match_expr(p.value, s.rhs)
    if isinstance(p, ast.Expr):
        v = p.value
        targets = []
        while isinstance(v, ast.BinOp) and isinstance(v.op, ast.RShift):
            targets.append(v.right)
            v = v.left
        if not isinstance(v, ast.Call):
            return False
        name = v.func.id if isinstance(v.func, ast.Name) else None
        if name == "Fence":
            return isinstance(s, N.Fence)
        if name == "Arrive":
            return isinstance(s, N.Arrive)
        if name == "Await":
            return isinstance(s, N.Await)
        if not isinstance(s, N.Call):
            return False
        if name != "_" and name != s.callee.name:
            return False
        if len(v.args) == 1 and _wild(v.args[0]) or not v.args:
            return True
        if len(v.args) != len(s.args):
            return False
        return all(match_expr(a, b) for a, b in zip(v.args, s.args))
    return False


def _mode_name(mode) -> str:
    return {"Seq": "seq", "CudaTasks": "cuda_tasks", "CudaThreads": "cuda_threads"}[
        type(mode).__name__]


def _match_lhs(t, name, idx) -> bool:
    if isinstance(t, ast.Name):
        return t.id == "_" or (t.id == name and not idx)
    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
        if not (_wild(t.value) or t.value.id == name):
            return False
        return _match_idx(t.slice, tuple(N.Point(i) for i in (idx or ())))
    return False


def _match_idx(sl, idx) -> bool:
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if len(elts) == 1 and _wild(elts[0]):
        return True
    if len(elts) != len(idx):
        return False
    for p, w in zip(elts, idx):
        if isinstance(p, ast.Slice):
            if not isinstance(w, N.Interval):
                return False
            if p.lower is not None and not match_expr(p.lower, w.lo):
                return False
            if p.upper is not None and not match_expr(p.upper, w.hi):
                return False
        elif _wild(p):
            continue
        elif not isinstance(w, N.Point) or not match_expr(p, w.pt):
            return False
    return True


def match_expr(p: ast.expr, e) -> bool:
    if _wild(p):
        return True
    if isinstance(p, ast.Name):
        return (isinstance(e, N.Read) and not e.idx and e.name == p.id) or (
            isinstance(e, N.WindowExpr) and e.name == p.id)
    if isinstance(p, ast.Constant):
        if isinstance(e, N.Const):
            return e.val == p.value
        c = const_value(e) if not isinstance(e, (N.WindowExpr,)) else None
        return c is not None and c == p.value
    if isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.USub):
        if isinstance(p.operand, ast.Constant) and isinstance(e, N.Const):
            return e.val == -p.operand.value
        return isinstance(e, N.UnOp) and e.op == "-" and match_expr(p.operand, e.arg)
    if isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not):
        return isinstance(e, N.UnOp) and e.op == "not" and match_expr(p.operand, e.arg)
    if isinstance(p, ast.BinOp) and type(p.op) in _BIN:
        return isinstance(e, N.BinOp) and e.op == _BIN[type(p.op)] and \
            match_expr(p.left, e.lhs) and match_expr(p.right, e.rhs)
    if isinstance(p, ast.Compare) and len(p.ops) == 1 and type(p.ops[0]) in _CMP:
        return isinstance(e, N.BinOp) and e.op == _CMP[type(p.ops[0])] and \
            match_expr(p.left, e.lhs) and match_expr(p.comparators[0], e.rhs)
    if isinstance(p, ast.BoolOp) and len(p.values) == 2:
        op = "and" if isinstance(p.op, ast.And) else "or"
        return isinstance(e, N.BinOp) and e.op == op and match_expr(p.values[0], e.lhs) and \
            match_expr(p.values[1], e.rhs)
    if isinstance(p, ast.Subscript) and isinstance(p.value, ast.Name):
        if isinstance(e, N.Read) and e.idx:
            return (e.name == p.value.id or _wild(p.value)) and \
                _match_idx(p.slice, tuple(N.Point(i) for i in e.idx))
        if isinstance(e, N.WindowExpr):
            return (e.name == p.value.id or _wild(p.value)) and _match_idx(p.slice, e.idx)
        return False
    if isinstance(p, ast.Call) and isinstance(p.func, ast.Name):
        if not isinstance(e, N.BuiltIn) or e.fn != p.func.id:
            return False
        if len(p.args) == 1 and _wild(p.args[0]):
            return True
        return len(p.args) == len(e.args) and all(match_expr(a, b) for a, b in zip(p.args, e.args))
    return False
