"""Expressions to C++: control (quasi-affine integer) and data (scalar arithmetic).

Control values are 32-bit ``int`` in device code and ``int64_t`` on the host. Floor division
and modulo by positive constants keep their meaning for negative operands through the
``exo_fdiv``/``exo_fmod`` helpers; they are only used when a simple sign analysis cannot show
the operand non-negative (loop iterators from non-negative bounds, sizes, products and sums of
those), so the common case compiles to plain ``/`` and ``%`` by a constant.
"""

from __future__ import annotations

from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.types import ControlType, ScalarType
from exogpu_verify.platforms._ptx import CPP_TYPE

from .errors import not_supported

_CPP_WORDS = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch
char char16_t char32_t class compl const constexpr const_cast continue decltype default delete do
double dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast return short signed sizeof static static_assert static_cast struct switch
template this thread_local throw true try typedef typeid typename union unsigned using virtual void
volatile wchar_t while xor xor_eq threadIdx blockIdx blockDim gridDim warpSize main""".split())


def cname(name: str) -> str:
    """A C++ identifier for a source name (keywords and the ``exo_`` prefix are escaped)."""
    if name in _CPP_WORDS or name.startswith("exo_") or name.startswith("_"):
        return f"u_{name}"
    return name


def cpp_type(t: ScalarType) -> str:
    try:
        return CPP_TYPE[t.name]
    except KeyError:
        raise not_supported(f"scalar type {t}") from None


def literal(v, t: ScalarType | None) -> str:
    """A C++ literal of value ``v`` in precision ``t``."""
    if t is None or not t.is_float:
        return str(int(v))
    if t.name == "f32":
        return f"{float(v)!r}f"
    if t.name == "f64":
        return f"{float(v)!r}"
    return f"{cpp_type(t)}({float(v)!r}f)"


class Ctl:
    """Control expressions to C++. ``env`` maps source names to C++ expressions; ``nonneg``
    holds the names known to be non-negative (sizes and iterators of non-negative loops)."""

    def __init__(self, env: dict[str, str], nonneg: set[str], strides=None):
        self.env = env
        self.nonneg = nonneg
        self.strides = strides  # callable (name, dim) -> C++ stride expression

    def bind(self, name: str, expr: str, nonneg: bool) -> "Ctl":
        env = dict(self.env)
        env[name] = expr
        nn = set(self.nonneg)
        (nn.add if nonneg else nn.discard)(name)
        return Ctl(env, nn, self.strides)

    def is_nonneg(self, e) -> bool:
        if isinstance(e, N.Const):
            return not isinstance(e.val, bool) and e.val >= 0
        if isinstance(e, N.Read):
            return e.name in self.nonneg
        if isinstance(e, N.StrideExpr):
            return True
        if isinstance(e, N.BinOp) and e.op in ("+", "*", "/", "%"):
            return self.is_nonneg(e.lhs) and self.is_nonneg(e.rhs)
        return False

    def __call__(self, e) -> str:
        if isinstance(e, N.Const):
            if isinstance(e.val, bool):
                return "true" if e.val else "false"
            return str(int(e.val))
        if isinstance(e, N.Read):
            if e.idx or isinstance(e.type, ScalarType):
                raise not_supported("a data value in a control expression", e)
            try:
                return self.env[e.name]
            except KeyError:
                raise not_supported(f"use of '{e.name}' here (not visible to this code)",
                                    e) from None
        if isinstance(e, N.StrideExpr):
            if self.strides is None:
                raise not_supported("stride() here", e)
            return self.strides(e.name, e.dim)
        if isinstance(e, N.UnOp):
            a = self(e.arg)
            return f"(!{a})" if e.op == "not" else f"(-{a})"
        if isinstance(e, N.BinOp):
            a, b = self(e.lhs), self(e.rhs)
            op = e.op
            if op in ("/", "%"):
                if self.is_nonneg(e.lhs):
                    return f"({a} {op} {b})"
                return f"exo_f{'div' if op == '/' else 'mod'}({a}, {b})"
            if op == "and":
                return f"({a} && {b})"
            if op == "or":
                return f"({a} || {b})"
            return f"({a} {op} {b})"
        raise not_supported(f"control expression {type(e).__name__}", e)


def eval_ctl(e, env: dict) -> int | bool:
    """Evaluate a control expression in Python (floor semantics), for runtime asserts."""
    if isinstance(e, N.Const):
        return e.val
    if isinstance(e, N.Read):
        return env[e.name]
    if isinstance(e, N.StrideExpr):
        return env[("stride", e.name, e.dim)]
    if isinstance(e, N.UnOp):
        v = eval_ctl(e.arg, env)
        return (not v) if e.op == "not" else -v
    if isinstance(e, N.BinOp):
        if e.op == "and":
            return bool(eval_ctl(e.lhs, env)) and bool(eval_ctl(e.rhs, env))
        if e.op == "or":
            return bool(eval_ctl(e.lhs, env)) or bool(eval_ctl(e.rhs, env))
        a, b = eval_ctl(e.lhs, env), eval_ctl(e.rhs, env)
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "/": lambda: a // b, "%": lambda: a % b, "<": lambda: a < b,
                "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
                "==": lambda: a == b, "!=": lambda: a != b}[e.op]()
    raise TypeError(f"cannot evaluate {e!r}")


_BUILTIN_F32 = {"sqrt": "sqrtf", "exp": "expf", "abs": "fabsf", "fmax": "fmaxf", "fmin": "fminf"}
_BUILTIN_F64 = {"sqrt": "sqrt", "exp": "exp", "abs": "fabs", "fmax": "fmax", "fmin": "fmin"}


def data_expr(e, ctl: Ctl, read, want: ScalarType | None = None) -> str:
    """A data expression in C++; ``read(Read) -> str`` gives the lvalue of an array element.
    Operations are computed in the node's precision (16-bit types through float)."""
    return _data(e, ctl, read, want)[0]


def data_expr_t(e, ctl: Ctl, read, want: ScalarType | None = None) -> tuple[str, str | None]:
    """``data_expr`` with the C++ type of the result (None: a literal that adapts)."""
    return _data(e, ctl, read, want)


def _work(t: ScalarType | None) -> str:
    if t is None or t.name in ("f16", "bf16", "R"):
        return "float"
    return cpp_type(t)


def _data(e, ctl: Ctl, read, want) -> tuple[str, str | None]:
    """(code, C++ type or None for literals that adapt to their context)."""
    if isinstance(e, N.Const):
        t = e.type if isinstance(e.type, ScalarType) and e.type.name != "R" else want
        if t is None or t.name in ("f16", "bf16"):
            return f"{float(e.val)!r}f", None
        return literal(e.val, t), cpp_type(t)
    if isinstance(e, N.Read):
        if isinstance(e.type, ControlType):
            return ctl(e), "int"
        return read(e), cpp_type(e.type)
    t = e.type if isinstance(e.type, ScalarType) and e.type.name != "R" else want
    ct = _work(t)
    if isinstance(e, N.UnOp):
        return f"(-{_cast(_data(e.arg, ctl, read, t), ct)})", ct
    if isinstance(e, N.BinOp):
        if e.op not in ("+", "-", "*", "/"):
            raise not_supported(f"data operator '{e.op}'", e)
        a = _cast(_data(e.lhs, ctl, read, t), ct)
        b = _cast(_data(e.rhs, ctl, read, t), ct)
        return f"({a} {e.op} {b})", ct
    if isinstance(e, N.BuiltIn):
        args = [_cast(_data(x, ctl, read, t), ct) for x in e.args]
        if e.fn == "relu":
            return f"({args[0]} > {ct}(0) ? {args[0]} : {ct}(0))", ct
        if e.fn == "select":
            return f"({args[0]} < {args[1]} ? {args[2]} : {args[3]})", ct
        table = _BUILTIN_F64 if ct == "double" else _BUILTIN_F32
        if e.fn not in table or ct not in ("float", "double"):
            raise not_supported(f"builtin {e.fn}() on {t}", e)
        return f"{table[e.fn]}({', '.join(args)})", ct
    raise not_supported(f"data expression {type(e).__name__}", e)


def _cast(x: tuple[str, str | None], ct: str) -> str:
    code, t = x
    if t is None or t == ct:
        return code
    return f"static_cast<{ct}>({code})"


def convert(code: str, src: str | None, dst: str) -> str:
    """``code`` of C++ type ``src`` as a value of type ``dst``."""
    return _cast((code, src), dst)
