"""Compiling a procedure to Python source that runs its sequential meaning on numpy arrays.

``compile_body`` emits one Python function per procedure and per mode: the *scalar* mode runs
every loop as ``for v in range(lo, hi)`` on numpy scalars; the *vector* mode additionally runs
the loops chosen by ``plan_vectorization`` with the loop variable bound to an index vector
(basic slices where the index is ``a * L + b`` with ``a > 0``, fancy indexing otherwise).
Index vectors that do not depend on inner loops are hoisted to the loop entry.

Data arithmetic follows the precision rule of ``semantics/__init__.py``: each statement
computes in one numpy dtype (the ``promote`` of its destination and of every leaf read), each
operation rounds to it, and the store converts to the destination dtype with ``astype``.
Scalar and vector code call the same numpy ufuncs and casts, hence agree bitwise.

Each generated line is mapped back to the statement it came from, so that run-time errors
(out-of-bounds accesses) are reported at the user's line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import InternalError, user_error
from ..ir.nodes import (Alloc, Assign, BinOp, BuiltIn, Call, Const, For, If, Interval, Point,
                        Procedure, Read, Reduce, StrideExpr, UnOp, WindowExpr, WindowStmt, With)
from ..ir.srcinfo import SrcInfo
from ..ir.types import R, ControlType, ScalarType, promote
from .runtime import NAMESPACE
from .vectorize import (NOOPS, affine_coefficient, control_vars, data_reads, int_range,
                        is_data_read, plan_vectorization, window_roots)

_CTRL_OPS = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%", "<": "<", "<=": "<=",
             ">": ">", ">=": ">=", "==": "==", "!=": "!=", "and": "and", "or": "or"}


def pyname(name: str) -> str:
    """The Python identifier of an IR variable (prefixed, so it never meets a helper)."""
    return "v_" + "".join(c if c.isalnum() or c == "_" else f"_{ord(c):x}_" for c in name)


@dataclass
class _Vec:
    """State while emitting the body of a vectorized loop."""

    var: str
    lo: str  # Python name of the first index
    n: str  # Python name of the trip count
    inner: set[str] = field(default_factory=set)  # loop variables bound inside the body
    hoists: list[str] = field(default_factory=list)
    keys: dict = field(default_factory=dict)


class _Gen:
    """Emits Python source for one procedure (body, shape and precondition functions)."""

    def __init__(self, proc: Procedure, ns: dict):
        self.proc = proc
        self.ns = ns
        self.lines: list[str] = []
        self.srcs: list[SrcInfo] = []
        self.dtypes: dict[str, ScalarType] = {}
        self.ranges: dict[str, tuple] = {}
        self.vec: _Vec | None = None
        self.plan: frozenset[int] = frozenset()
        self.callee = None
        self._count = 0
        self._dtype_names: dict[str, str] = {}
        for q in proc.params:
            if q.is_data:
                self.dtypes[q.name] = q.type.scalar
            elif q.type.name == "size":
                self.ranges[q.name] = (1, None)

    # ------------------------------------------------------------ plumbing

    def fresh(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def bind(self, prefix: str, value) -> str:
        name = self.fresh(prefix)
        self.ns[name] = value
        return name

    def emit(self, level: int, text: str, src: SrcInfo) -> None:
        self.lines.append("    " * level + text)
        self.srcs.append(src)

    def header(self, fname: str, lead: tuple[str, ...] = ()) -> None:
        args = ", ".join(lead + tuple(pyname(q.name) for q in self.proc.params))
        self.emit(0, f"def {fname}({args}):", self.proc.srcinfo)

    # ------------------------------------------------------------ control expressions

    def ctrl(self, e, subst: dict | None = None) -> str:
        """Python code for a control expression (ints, floor division, bools)."""
        if isinstance(e, Const):
            return repr(e.val if isinstance(e.val, bool) else int(e.val))
        if isinstance(e, Read) and not is_data_read(e):
            if subst and e.name in subst:
                return subst[e.name]
            return pyname(e.name)
        if isinstance(e, StrideExpr):
            a = pyname(e.name)
            return f"({a}.strides[{e.dim}] // {a}.itemsize)"
        if isinstance(e, BinOp) and e.op in _CTRL_OPS:
            return f"({self.ctrl(e.lhs, subst)} {_CTRL_OPS[e.op]} {self.ctrl(e.rhs, subst)})"
        if isinstance(e, UnOp) and e.op in ("-", "not"):
            return f"({e.op} {self.ctrl(e.arg, subst)})"
        raise InternalError(f"not a control expression: {e!r}")

    def varies(self, e) -> bool:
        return self.vec is not None and self.vec.var in control_vars(e)

    def scalar_index(self, e) -> str:
        code = self.ctrl(e)
        lo = int_range(e, self.ranges)[0]
        # numpy wraps negative indices around; only indices not provably >= 0 pay a check
        return code if lo is not None and lo >= 0 else f"_nonneg({code})"

    def hoisted(self, key, call: str, inner_free: bool) -> str:
        vec = self.vec
        if not inner_free:
            return f"_checked({call})"
        if key not in vec.keys:
            name = self.fresh("_h")
            vec.keys[key] = name
            vec.hoists.append(f"{name} = {call}")
        return vec.keys[key]

    def access(self, name: str, idx: tuple) -> tuple[str, bool]:
        """Code for ``name[idx]`` (read or store target) and whether it is a vector."""
        arr = pyname(name)
        if not idx:
            return f"{arr}[()]", False
        varying = [d for d, e in enumerate(idx) if self.varies(e)]
        if not varying:
            return f"{arr}[{', '.join(self.scalar_index(e) for e in idx)}]", False
        vec = self.vec
        coeff = affine_coefficient(idx[varying[0]], vec.var) if len(varying) == 1 else None
        parts = []
        for d, e in enumerate(idx):
            if d not in varying:
                parts.append(self.scalar_index(e))
                continue
            inner_free = not (control_vars(e) & vec.inner)
            if coeff is not None and coeff > 0:
                start = self.ctrl(e, {vec.var: vec.lo})
                call = f"_vslice({start}, {coeff}, {vec.n}, {arr}.shape[{d}])"
                parts.append(self.hoisted((arr, d, "slice", e), call, inner_free))
            else:
                call = f"_vindex({self.ctrl(e)}, {arr}.shape[{d}])"
                parts.append(self.hoisted((arr, d, "fancy", e), call, inner_free))
        return f"{arr}[{', '.join(parts)}]", True

    # ------------------------------------------------------------ data expressions

    def dt(self, t: ScalarType) -> str:
        if t.name not in self._dtype_names:
            self._dtype_names[t.name] = self.bind("_D", t.np_dtype)
        return self._dtype_names[t.name]

    def const(self, val, t: ScalarType) -> str:
        with np.errstate(all="ignore"):  # a literal may overflow the precision: inf, wrap
            return self.bind("_c", np.asarray(val).astype(t.np_dtype)[()])

    def precision(self, dest: ScalarType, e) -> ScalarType:
        """The statement's computation precision: promote over destination and leaves."""
        t = dest
        for r in data_reads(e):
            t = promote(t, self.dtypes[r.name])
        for c in _typed_consts(e):
            t = promote(t, c)
        return t

    def data(self, e, t: ScalarType) -> tuple[str, bool]:
        """Code for a data expression computed in precision ``t``, and whether it varies."""
        D = self.dt(t)
        if isinstance(e, Const):
            return self.const(e.val, t), False
        if is_data_read(e):
            code, v = self.access(e.name, e.idx)
            return (code if self.dtypes[e.name] == t else f"{code}.astype({D})"), v
        if isinstance(e.type, ControlType):
            return f"_ctl({self.ctrl(e)}, {D})", self.varies(e)
        if isinstance(e, UnOp) and e.op == "-":
            a, v = self.data(e.arg, t)
            return f"(-{a})", v
        if isinstance(e, BinOp):
            (a, va), (b, vb) = self.data(e.lhs, t), self.data(e.rhs, t)
            if e.op in ("+", "-", "*") or (e.op == "/" and t.is_float):
                return f"({a} {e.op} {b})", va or vb
            if e.op in ("/", "%"):
                return f"{'_cdiv' if e.op == '/' else '_cmod'}({a}, {b})", va or vb
        if isinstance(e, BuiltIn):
            return self.builtin(e, t, D)
        raise InternalError(f"interpret: unsupported data expression {e!r}")

    def builtin(self, e: BuiltIn, t: ScalarType, D: str) -> tuple[str, bool]:
        args = [self.data(a, t) for a in e.args]
        codes = [c for c, _ in args]
        v = any(x for _, x in args)
        arity = {"relu": 1, "sqrt": 1, "exp": 1, "abs": 1, "fmax": 2, "fmin": 2, "select": 4}
        if arity.get(e.fn) != len(codes):
            raise InternalError(f"interpret: unsupported builtin {e.fn}/{len(codes)}")
        sfx = "v" if v else "s"
        if e.fn == "relu":
            return f"_relu_{sfx}({codes[0]}, {self.const(0, t)})", v
        if e.fn == "select":
            return f"_select_{sfx}({', '.join(codes)})", v
        if e.fn in ("sqrt", "exp") and not t.is_float:
            # integer precision: numpy computes in a float type; truncate back like C would
            return f"np.{e.fn}({codes[0]}).astype({D})", v
        return f"np.{e.fn}({', '.join(codes)})", v

    # ------------------------------------------------------------ statements

    def block(self, stmts, level: int) -> None:
        start = len(self.lines)
        for s in stmts:
            self.stmt(s, level)
        if len(self.lines) == start:
            self.emit(level, "pass", self.proc.srcinfo)

    def stmt(self, s, level: int) -> None:
        src = s.srcinfo
        if isinstance(s, (Assign, Reduce)):
            dest = self.dtypes[s.name]
            t = self.precision(dest, s.rhs)
            rhs, _ = self.data(s.rhs, t)
            target, _ = self.access(s.name, s.idx)
            if isinstance(s, Reduce):
                cur = target if dest == t else f"{target}.astype({self.dt(t)})"
                rhs = f"({cur} + {rhs})"
            if dest != t:
                rhs = f"({rhs}).astype({self.dt(dest)})"
            self.emit(level, f"{target} = {rhs}", src)
        elif isinstance(s, For):
            self.loop(s, level)
        elif isinstance(s, If):
            self.emit(level, f"if {self.ctrl(s.cond)}:", src)
            self.block(s.body, level + 1)
            if s.orelse:
                self.emit(level, "else:", src)
                self.block(s.orelse, level + 1)
        elif isinstance(s, With):
            self.block(s.body, level)
        elif isinstance(s, Alloc):
            self.dtypes[s.name] = s.type.scalar
            shape = "".join(f"{self.ctrl(e)}, " for e in s.type.shape)
            self.emit(level, f"{pyname(s.name)} = _alloc({s.name!r}, ({shape}), "
                             f"{self.dt(s.type.scalar)})", src)
        elif isinstance(s, WindowStmt):
            self.dtypes[s.name] = self.dtypes[s.rhs.name]
            self.emit(level, f"{pyname(s.name)} = {self.window(s.rhs)}", src)
        elif isinstance(s, Call):
            self.call(s, level)
        elif isinstance(s, NOOPS):
            pass
        else:
            raise InternalError(f"interpret: unknown statement {type(s).__name__}")

    def window(self, w: WindowExpr) -> str:
        spec = []
        for a in w.idx:
            if isinstance(a, Point):
                spec.append(self.ctrl(a.pt))
            else:
                assert isinstance(a, Interval)
                spec.append(f"({self.ctrl(a.lo)}, {self.ctrl(a.hi)})")
        return f"_window({pyname(w.name)}, ({''.join(x + ', ' for x in spec)}))"

    def call(self, s: Call, level: int) -> None:
        callee = s.callee
        if len(s.args) != len(callee.params):
            raise user_error("usage", f"call of {callee.name} passes {len(s.args)} arguments, "
                             f"but {callee.name} has {len(callee.params)} parameters",
                             s.srcinfo)
        args = []
        for q, a in zip(callee.params, s.args):
            if not q.is_data:
                args.append(self.ctrl(a))
            elif isinstance(a, WindowExpr):
                args.append(self.window(a))
            elif isinstance(a, Read) and not a.idx:
                args.append(pyname(a.name))
            else:
                raise InternalError(f"interpret: data argument {a!r} is not a window")
        K = self.bind("_K", self.callee(callee).invoke)
        S = self.bind("_S", s.srcinfo)
        self.emit(level, f"{K}(_V, {S}, {', '.join(args)})", s.srcinfo)

    def loop(self, s: For, level: int) -> None:
        src = s.srcinfo
        var = pyname(s.iter)
        lo, hi = self.ctrl(s.lo), self.ctrl(s.hi)
        saved = self.ranges.get(s.iter)
        hi_hi = int_range(s.hi, self.ranges)[1]
        self.ranges[s.iter] = (int_range(s.lo, self.ranges)[0],
                               None if hi_hi is None else hi_hi - 1)
        if self.vec is None and id(s) in self.plan:
            L0, n = self.fresh("_lo"), self.fresh("_n")
            self.emit(level, f"{L0} = {lo}", src)
            self.emit(level, f"{n} = {hi} - {L0}", src)
            self.emit(level, f"if {n} > 0:", src)
            self.vec = _Vec(s.iter, L0, n)
            outer_lines, outer_srcs = self.lines, self.srcs
            self.lines, self.srcs = [], []
            self.block(s.body, level + 1)
            body_lines, body_srcs = self.lines, self.srcs
            self.lines, self.srcs = outer_lines, outer_srcs
            # the index vector itself is only needed where slices do not replace it
            if re.search(rf"\b{var}\b", "\n".join(body_lines + self.vec.hoists)):
                self.emit(level + 1, f"{var} = _arange({L0}, {L0} + {n})", src)
            for h in self.vec.hoists:
                self.emit(level + 1, h, src)
            self.lines += body_lines
            self.srcs += body_srcs
            self.vec = None
        else:
            if self.vec is not None:
                self.vec.inner.add(s.iter)
            self.emit(level, f"for {var} in range({lo}, {hi}):", src)
            self.block(s.body, level + 1)
        if saved is None:
            self.ranges.pop(s.iter, None)
        else:
            self.ranges[s.iter] = saved

    def finish(self, fname: str):
        """Compile the emitted source; return the function and attach the line map."""
        source = "\n".join(self.lines) + "\n"
        self.ns["__exo_linemap__"] = (self.proc.name, tuple(self.srcs), tuple(self.lines))
        code = compile(source, f"<exogpu interpret {self.proc.name}>", "exec")
        exec(code, self.ns)  # noqa: S102 - source generated from the IR above
        return self.ns[fname]


def _typed_consts(e) -> list[ScalarType]:
    """Precisions of typed (non-literal) data constants in ``e``."""
    out = []
    if isinstance(e, Const) and isinstance(e.type, ScalarType) and e.type != R:
        out.append(e.type)
    for child in _children(e):
        out += _typed_consts(child)
    return out


def _children(e):
    if isinstance(e, BinOp):
        return (e.lhs, e.rhs)
    if isinstance(e, UnOp):
        return (e.arg,)
    if isinstance(e, BuiltIn):
        return e.args
    return ()


def compile_body(proc: Procedure, *, vectorize: bool, callee):
    """A Python function ``f(_V, *args)`` running ``proc``'s body on bound arguments.

    ``vectorize`` selects vector mode (loops chosen by ``plan_vectorization``); ``callee``
    maps a called procedure to its compiled form (with ``invoke(allow_vec, site, *args)``);
    ``_V`` is passed on to callees as their ``allow_vec``.
    """
    g = _Gen(proc, dict(NAMESPACE))
    g.callee = callee
    if vectorize:
        g.plan = plan_vectorization(proc.body, window_roots(proc.body))
    g.header("_run", ("_V",))
    g.block(proc.body, 1)
    return g.finish("_run")


def compile_checks(proc: Procedure):
    """``(shapes, preds)``: ``shapes(*args)`` gives the declared shape of every data param
    (in order), ``preds(*args)`` the index of the first failing ``assert`` or -1."""
    g = _Gen(proc, dict(NAMESPACE))
    g.header("_shapes")
    shapes = [q.type.shape for q in proc.params if q.is_data]
    tup = ", ".join("(" + "".join(g.ctrl(e) + ", " for e in sh) + ")" for sh in shapes)
    g.emit(1, f"return ({tup}{',' if len(shapes) == 1 else ''})", proc.srcinfo)
    g.header("_preds")
    for k, pred in enumerate(proc.preds):
        g.emit(1, f"if not {g.ctrl(pred)}:", pred.srcinfo)
        g.emit(2, f"return {k}", pred.srcinfo)
    g.emit(1, "return -1", proc.srcinfo)
    g.finish("_shapes")
    return g.ns["_shapes"], g.ns["_preds"]


def written_params(proc: Procedure, callee) -> frozenset[str]:
    """Data params ``proc`` may write: assigned, reduced, or passed to a callee param that the
    callee (``callee(p).written``) may write, directly or through a window."""
    roots = window_roots(proc.body)
    out: set[str] = set()

    def walk(stmts):
        for s in stmts:
            if isinstance(s, (Assign, Reduce)):
                out.add(roots.get(s.name, s.name))
            elif isinstance(s, Call):
                w = callee(s.callee).written
                for q, a in zip(s.callee.params, s.args):
                    if q.name in w and isinstance(a, (WindowExpr, Read)):
                        out.add(roots.get(a.name, a.name))
            for attr in ("body", "orelse"):
                if hasattr(s, attr):
                    walk(getattr(s, attr))

    walk(proc.body)
    return frozenset(q.name for q in proc.params if q.is_data and q.name in out)
