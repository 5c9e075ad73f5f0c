"""Print IR back as source in the language; the output parses back to an equal procedure.

``print_proc(p)`` gives the whole decorated definition; ``expr_str`` and ``stmt_lines`` are
used by diagnostics and by the scheduling layer to show code. Parentheses follow Python
precedence and keep the tree's shape, so printing then parsing is the identity on IR.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass

from . import nodes as N
from .affine import const_value, extent
from .memories import BarrierMechanism, Memory
from .timelines import InstrTL
from .units import CollUnit

_PREC = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
         "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
_ATOM = 9


def _prec(e) -> int:
    if isinstance(e, N.BinOp):
        return _PREC[e.op]
    if isinstance(e, N.UnOp):
        return 3 if e.op == "not" else 7
    if isinstance(e, N.Const) and not isinstance(e.val, bool) and e.val < 0:
        return 7
    return _ATOM


def expr_str(e, shapes: dict | None = None) -> str:
    """Source text of an expression (or window / barrier reference)."""
    if isinstance(e, N.Const):
        return repr(e.val) if isinstance(e.val, float) else str(e.val)
    if isinstance(e, N.Read):
        if not e.idx:
            return e.name
        return f"{e.name}[{', '.join(expr_str(i) for i in e.idx)}]"
    if isinstance(e, N.BinOp):
        p = _PREC[e.op]
        a, b = expr_str(e.lhs, shapes), expr_str(e.rhs, shapes)
        if _prec(e.lhs) < p or (p == 4 and _prec(e.lhs) == 4):
            a = f"({a})"
        if _prec(e.rhs) <= p:
            b = f"({b})"
        return f"{a} {e.op} {b}"
    if isinstance(e, N.UnOp):
        a = expr_str(e.arg, shapes)
        if e.op == "not":
            return f"not {a}" if _prec(e.arg) >= 3 else f"not ({a})"
        return f"-{a}" if _prec(e.arg) >= 7 and not (
            isinstance(e.arg, N.Const) and e.arg.val < 0) else f"-({a})"
    if isinstance(e, N.BuiltIn):
        return f"{e.fn}({', '.join(expr_str(a, shapes) for a in e.args)})"
    if isinstance(e, N.StrideExpr):
        return f"stride({e.name}, {e.dim})"
    if isinstance(e, N.WindowExpr):
        if shapes is not None and e.name in shapes and _is_full(e, shapes[e.name]):
            return e.name
        return f"{e.name}[{', '.join(_waccess(w) for w in e.idx)}]"
    if isinstance(e, N.BarrierRef):
        if not e.idx:
            return e.name
        return f"{e.name}[{', '.join(_waccess(w) for w in e.idx)}]"
    raise TypeError(f"cannot print {type(e).__name__}")


def _waccess(w) -> str:
    if isinstance(w, N.Point):
        return expr_str(w.pt)
    return f"{expr_str(w.lo)}:{expr_str(w.hi)}"


def _is_full(w: N.WindowExpr, shape) -> bool:
    return len(w.idx) == len(shape) and all(
        isinstance(a, N.Interval) and const_value(a.lo) == 0 and isinstance(a.lo, N.Const)
        and a.hi == ext for a, ext in zip(w.idx, shape))


def _ring_extent(x: N.BarrierDim) -> str:
    """``e @ ring_buffer_by(d)``; ``@`` binds like ``*``, so ``K + 1`` needs parentheses."""
    if x.ring_depth is None:
        return expr_str(x.extent)
    e = expr_str(x.extent)
    if _prec(x.extent) < _PREC["*"]:
        e = f"({e})"
    return f"{e} @ ring_buffer_by({x.ring_depth})"


def _shape_str(shape) -> str:
    return f"[{', '.join(expr_str(s) for s in shape)}]" if shape else ""


def _ttype(t: N.TensorType) -> str:
    base = f"[{t.scalar}]" if t.is_window else str(t.scalar)
    return base + _shape_str(t.shape)


def _window_shape(w: N.WindowExpr):
    out = []
    for a in w.idx:
        if isinstance(a, N.Interval):
            x = extent(a)
            out.append(N.Const(x, a.hi.type) if isinstance(x, int) else x)
    return tuple(out)


class _Printer:
    def __init__(self):
        self.shapes: dict = {}
        self.lines: list[str] = []

    def emit(self, depth: int, text: str):
        self.lines.append("    " * depth + text)

    def block(self, stmts, depth):
        for s in stmts:
            self.stmt(s, depth)

    def e(self, x) -> str:
        return expr_str(x, self.shapes)

    def stmt(self, s, d):
        if isinstance(s, N.Pass):
            self.emit(d, "pass")
        elif isinstance(s, N.Alloc):
            self.shapes[s.name] = s.type.shape
            self.emit(d, f"{s.name}: {_ttype(s.type)} @ {s.mem}")
        elif isinstance(s, N.BarrierAlloc):
            dims = [_ring_extent(x) for x in s.dims]
            shape = f"[{', '.join(dims)}]" if dims else ""
            self.emit(d, f"{s.name}: barrier{shape} @ {s.mech}")
        elif isinstance(s, N.Assign):
            self.emit(d, f"{self._lhs(s)} = {self.e(s.rhs)}")
        elif isinstance(s, N.Reduce):
            self.emit(d, f"{self._lhs(s)} += {self.e(s.rhs)}")
        elif isinstance(s, N.WindowStmt):
            rhs = f"{s.rhs.name}[{', '.join(_waccess(w) for w in s.rhs.idx)}]"
            self.shapes[s.name] = _window_shape(s.rhs)
            self.emit(d, f"{s.name} = {rhs}" + (f" @ {s.special}" if s.special else ""))
        elif isinstance(s, N.For):
            self.emit(d, f"for {s.iter} in {self._loop(s)}:")
            self.block(s.body, d + 1)
        elif isinstance(s, N.If):
            self.emit(d, f"if {self.e(s.cond)}:")
            self.block(s.body, d + 1)
            if s.orelse:
                self.emit(d, "else:")
                self.block(s.orelse, d + 1)
        elif isinstance(s, N.With):
            self.emit(d, f"with {s.ctx}:")
            self.block(s.body, d + 1)
        elif isinstance(s, N.Call):
            args = ", ".join(self.e(a) for a in s.args)
            tail = "".join(f" >> {expr_str(b)}" for b in s.barriers)
            self.emit(d, f"{s.callee.name}({args}){tail}")
        elif isinstance(s, N.Fence):
            self.emit(d, f"Fence({s.L1}, {s.L2})")
        elif isinstance(s, N.Arrive):
            tail = "".join(f" >> {expr_str(b)}" for b in s.targets)
            self.emit(d, f"Arrive({s.L1}){tail}")
        elif isinstance(s, N.Await):
            self.emit(d, f"Await({expr_str(s.target)}, {s.L2}, {s.N})")
        else:
            raise TypeError(f"cannot print {type(s).__name__}")

    def _lhs(self, s) -> str:
        return s.name if not s.idx else f"{s.name}[{', '.join(self.e(i) for i in s.idx)}]"

    def _loop(self, s: N.For) -> str:
        lo, hi = self.e(s.lo), self.e(s.hi)
        if isinstance(s.mode, N.Seq):
            extra = f", pragma_unroll={s.mode.pragma_unroll}" if s.mode.pragma_unroll is not None \
                else ""
            return f"seq({lo}, {hi}{extra})"
        if isinstance(s.mode, N.CudaTasks):
            return f"cuda_tasks({lo}, {hi})"
        return f"cuda_threads({lo}, {hi}, unit={s.mode.unit})"


def _decorator(p: N.Procedure) -> str:
    if p.instr is None:
        return "@proc"
    i = p.instr
    parts = [f"timeline={i.timeline}"]
    if not (i.timeline.device == "cpu" and i.unit.name == "standalone_thread"):
        # the host-thread unit is the CPU default and has no name in the language
        parts.append(f"unit={i.unit}")
    if i.barrier is not None:
        parts.append(f"barrier={i.barrier}")
    if i.codegen_text is not None:
        parts.append(f"codegen={i.codegen_text!r}")
    if i.distributed:
        inner = ", ".join(f"{k!r}: ({', '.join(str(u) for u in v)},)" for k, v in i.distributed)
        parts.append(f"distributed={{{inner}}}")
    if i.atomic:
        parts.append(f"atomic={tuple(i.atomic)!r}")
    if i.includes:
        parts.append(f"includes={tuple(i.includes)!r}")
    return f"@instr({', '.join(parts)})"


def print_proc(p: N.Procedure) -> str:
    pr = _Printer()
    params = []
    for prm in p.params:
        if prm.is_data:
            pr.shapes[prm.name] = prm.type.shape
            params.append(f"{prm.name}: {_ttype(prm.type)} @ {prm.mem}")
        else:
            params.append(f"{prm.name}: {prm.type}")
    pr.emit(0, _decorator(p))
    pr.emit(0, f"def {p.name}({', '.join(params)}):")
    for pred in p.preds:
        pr.emit(1, f"assert {expr_str(pred)}")
    pr.block(p.body, 1)
    return "\n".join(pr.lines) + "\n"


def stmt_lines(stmts, depth: int = 0) -> list[str]:
    pr = _Printer()
    pr.block(stmts, depth)
    return pr.lines


def callees(p: N.Procedure) -> dict:
    """Names of the procedures and instructions ``p`` calls (for re-parsing printed source)."""
    out: dict = {}

    def walk(stmts):
        for s in stmts:
            if isinstance(s, N.Call):
                out[s.callee.name] = s.callee
            for attr in ("body", "orelse"):
                walk(getattr(s, attr, ()) or ())

    walk(p.body)
    return out


_NAMED = (Memory, BarrierMechanism, CollUnit, InstrTL)
#: expressions name only variables, tensors and the language's types: nothing to collect
_EXPRS = (N.Const, N.Read, N.BinOp, N.UnOp, N.BuiltIn, N.StrideExpr, N.WindowExpr, N.Point,
          N.Interval)


def roundtrip_env(p: N.Procedure) -> dict:
    """An environment in which ``print_proc(p)`` parses back to ``p``.

    The printed text names the procedures and instructions ``p`` calls and the memories,
    barrier mechanisms, units and timelines it uses (some defined by the platform libraries,
    not by the language): all of them are collected from the IR itself. A callee is named by
    ``callees``; its own body is not printed, so it is not walked (the platform's
    instructions' bodies were most of the walk).
    """
    env: dict = {}
    seen: set[int] = set()

    def visit(x):
        if id(x) in seen or x is None or isinstance(x, (str, int, float, bool)):
            return
        seen.add(id(x))
        if isinstance(x, _EXPRS) or (isinstance(x, N.Procedure) and x is not p):
            return
        if isinstance(x, _NAMED):
            name = str(x)
            if name.isidentifier():
                env.setdefault(name, x)
            return
        if isinstance(x, (tuple, list)):
            for y in x:
                visit(y)
        elif is_dataclass(x) and not isinstance(x, type):
            for f in fields(x):
                if f.name not in ("srcinfo", "module", "provenance", "tools"):
                    visit(getattr(x, f.name))

    visit(p)
    env.update(callees(p))
    return env
