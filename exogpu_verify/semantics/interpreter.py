"""``interpret``: argument checking, compiled-procedure cache, and run-time error reporting.

The meaning itself (precision rule, vectorization) is documented in the package docstring;
code generation lives in ``compile.py``, the choice of vectorized loops in ``vectorize.py``.
"""

from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np

from ..errors import ExoGpuError, user_error
from ..ir.nodes import Procedure
from ..ir.srcinfo import SrcInfo
from .compile import compile_body, compile_checks, written_params
from .runtime import BadIndex, RunError
from .show import show_expr, show_tensor_type
from .vectorize import plan_vectorization, window_roots

#: compiled procedures, keyed by ``id(proc)``; the entry keeps ``proc`` alive, so an id is
#: never reused while it is cached. Bounded so that generated programs (property tests) do
#: not accumulate.
_CACHE: OrderedDict[int, tuple[Procedure, "CompiledProc"]] = OrderedDict()
_CACHE_SIZE = 512


def compiled(proc: Procedure) -> "CompiledProc":
    """The compiled form of ``proc`` (built once, then cached)."""
    hit = _CACHE.get(id(proc))
    if hit is not None and hit[0] is proc:
        _CACHE.move_to_end(id(proc))
        return hit[1]
    cp = CompiledProc(proc)
    _CACHE[id(proc)] = (proc, cp)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return cp


class CompiledProc:
    """A procedure compiled to Python: scalar and (lazily) vectorized bodies, plus checks."""

    def __init__(self, proc: Procedure):
        self.proc = proc
        self.shapes, self.preds = compile_checks(proc)
        self.written = written_params(proc, compiled)
        self._fns: dict[bool, object] = {}
        # without a vectorizable loop the vector variant would be the scalar one
        self.has_vec = bool(plan_vectorization(proc.body, window_roots(proc.body)))
        params = proc.params
        self.data_pos = tuple(k for k, q in enumerate(params) if q.is_data)
        self.size_pos = tuple(k for k, q in enumerate(params)
                              if not q.is_data and q.type.name == "size")
        # pairs of data params whose overlap would break vectorization (one is written)
        self.alias_pairs = tuple(
            (a, b) for i, a in enumerate(self.data_pos) for b in self.data_pos[i + 1:]
            if params[a].name in self.written or params[b].name in self.written)

    def fn(self, vectorized: bool):
        if vectorized not in self._fns:
            self._fns[vectorized] = compile_body(self.proc, vectorize=vectorized,
                                                 callee=compiled)
        return self._fns[vectorized]

    def run(self, allow_vec: bool, args: tuple) -> None:
        """Run the body on checked arguments; vectorized unless arguments overlap."""
        vec = allow_vec and self.has_vec and not any(
            np.may_share_memory(args[a], args[b]) for a, b in self.alias_pairs)
        self.fn(vec)(allow_vec, *args)

    def invoke(self, allow_vec: bool, site: SrcInfo, *args) -> None:
        """A call from another procedure at ``site``: check sizes, window shapes and
        preconditions of the callee, then run it."""
        p = self.proc
        for k in self.size_pos:
            if not args[k] >= 1:
                raise user_error("usage", f"size argument {p.params[k].name} of {p.name} must "
                                 f"be positive, got {args[k]}", site)
        for k, want in zip(self.data_pos, self.shapes(*args)):
            if args[k].shape != want:
                q = p.params[k]
                raise user_error(
                    "usage", f"argument {q.name} of {p.name} ({show_tensor_type(q.type)}) "
                    f"must have shape {want}, got a window of shape {args[k].shape}", site,
                    hint="pass a window whose extents match the callee's parameter")
        self.check_preds(args, site, "at this call")
        self.run(allow_vec, args)

    def check_preds(self, args: tuple, site: SrcInfo | None, where: str) -> None:
        k = self.preds(*args)
        if k < 0:
            return
        p = self.proc
        pred = p.preds[k]
        values = ", ".join(f"{q.name} = {v}" for q, v in zip(p.params, args) if not q.is_data)
        notes = (f"the assert is at {pred.srcinfo}",) if pred.srcinfo.line else ()
        raise user_error(
            "usage", f"precondition `{show_expr(pred)}` of {p.name} does not hold {where}"
            + (f" ({values})" if values else ""), site,
            hint=f"choose arguments that satisfy the assert statements of {p.name}",
            notes=notes)


def interpret(p: Procedure, **args) -> None:
    """Run ``p`` with its sequential meaning on numpy arrays, mutating data arguments in place.

    Arguments are passed by parameter name: ints for ``size``/``index``, bools for ``bool``,
    numpy arrays of exactly the declared dtype and shape for data. Raises ``ExoGpuError``
    (kind ``usage``) for a bad argument, a failed precondition or an out-of-bounds access.
    """
    interpret_with(p, args, vectorize=True)


def interpret_with(p: Procedure, args: dict, *, vectorize: bool = True) -> None:
    """``interpret`` with options: ``vectorize=False`` runs every loop one iteration at a
    time (the results are bitwise identical; this is the slow reference)."""
    if not isinstance(p, Procedure):
        raise user_error("usage", f"interpret expects a procedure, got {type(p).__name__}",
                         None, hint="decorate the function with @proc")
    values = _check_args(p, args)
    cp = compiled(p)
    _check_data(p, cp, values)
    cp.check_preds(values, p.srcinfo, "for these arguments")
    try:
        # IEEE overflow, NaN and integer wrap-around are the meaning, not warnings
        with np.errstate(all="ignore"):
            cp.run(vectorize, values)
    except (IndexError, RunError, ZeroDivisionError) as exc:
        raise _runtime_error(p, exc) from None


def _signature(p: Procedure) -> str:
    parts = []
    for q in p.params:
        t = show_tensor_type(q.type) if q.is_data else str(q.type)
        parts.append(f"{q.name}: {t}")
    return f"{p.name}({', '.join(parts)})"


def _check_args(p: Procedure, args: dict) -> tuple:
    names = [q.name for q in p.params]
    extra = [k for k in args if k not in names]
    if extra:
        raise user_error("usage", f"unexpected argument {extra[0]!r} for {_signature(p)}",
                         p.srcinfo, hint=f"{p.name} takes {', '.join(names) or 'nothing'}")
    missing = [k for k in names if k not in args]
    if missing:
        raise user_error("usage", f"missing argument {missing[0]!r} for {_signature(p)}",
                         p.srcinfo, hint="pass every parameter by name: interpret("
                         f"{', '.join([p.name] + [f'{n}=...' for n in names])})")
    values = []
    for q in p.params:
        v = args[q.name]
        if not q.is_data:
            v = _control_value(p, q, v)
        values.append(v)
    return tuple(values)


def _control_value(p: Procedure, q, v):
    kind = q.type.name
    if kind == "bool":
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        raise user_error("usage", f"argument {q.name} of {p.name} is a bool, got "
                         f"{type(v).__name__} {v!r}", p.srcinfo,
                         hint=f"pass {q.name}=True or {q.name}=False")
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        article = "an" if kind == "index" else "a"
        raise user_error("usage", f"argument {q.name} of {p.name} is {article} {kind} and "
                         f"must be an int, got {type(v).__name__} {v!r}",
                         p.srcinfo, hint=f"pass a Python int, e.g. {q.name}=64")
    v = int(v)
    if kind == "size" and v <= 0:
        raise user_error("usage", f"argument {q.name} of {p.name} is a size and must be "
                         f"positive, got {v}", p.srcinfo,
                         hint=f"pass a positive int for {q.name}")
    return v


def _check_data(p: Procedure, cp: CompiledProc, values: tuple) -> None:
    sizes = ", ".join(f"{q.name}={v}" for q, v in zip(p.params, values) if not q.is_data)
    for k, want in zip(cp.data_pos, cp.shapes(*values)):
        q, v = p.params[k], values[k]
        dtype = q.type.scalar.np_dtype
        spelled = "ml_dtypes.bfloat16" if q.type.scalar.name == "bf16" else f"np.{dtype.name}"
        what = f"argument {q.name} of {p.name} ({show_tensor_type(q.type)})"
        if not isinstance(v, np.ndarray):
            raise user_error("usage", f"{what} must be a numpy array, got {type(v).__name__}",
                             p.srcinfo, hint=f"pass np.asarray(..., dtype={spelled})")
        if v.dtype != dtype:
            raise user_error("usage", f"{what} must have dtype {dtype.name}, got {v.dtype}",
                             p.srcinfo, hint=f"pass a numpy array of dtype {dtype.name}, "
                             f"e.g. {q.name}.astype({spelled})")
        if v.shape != want:
            raise user_error("usage", f"{what} must have shape {want}"
                             + (f" (with {sizes})" if sizes else "") + f", got {v.shape}",
                             p.srcinfo, hint=f"pass a numpy array of shape {want}")
        if q.name in cp.written and not v.flags.writeable:
            raise user_error("usage", f"{what} is written by {p.name} but the array is "
                             "read-only", p.srcinfo, hint="pass a writeable copy (np.copy)")


def _runtime_error(p: Procedure, exc: BaseException) -> ExoGpuError:
    """Locate a run-time failure at the user's statement via the generated code's line map;
    the statements of enclosing calls become notes."""
    frames = []  # generated frames, outermost first: (tb, linemap)
    tb = exc.__traceback__
    while tb is not None:
        linemap = tb.tb_frame.f_globals.get("__exo_linemap__")
        if linemap is not None:
            frames.append((tb, linemap))
        tb = tb.tb_next
    where, proc_name, message, notes = None, p.name, str(exc), []
    for k, (tb, (name, srcs, lines)) in enumerate(frames):
        line_no = tb.tb_lineno - 1
        if not 0 <= line_no < len(srcs):
            continue
        if k < len(frames) - 1:
            notes.insert(0, f"in the call at {srcs[line_no]} ({name})")
            continue
        where, proc_name = srcs[line_no], name
        if isinstance(exc, IndexError):
            # a hoisted index that was found out of bounds: report its own message
            for var, val in tb.tb_frame.f_locals.items():
                if isinstance(val, BadIndex) and re.search(rf"\b{var}\b", lines[line_no]):
                    message = val.message
    if isinstance(exc, ZeroDivisionError):
        message = "division by zero in a control expression"
    return user_error("usage", f"while interpreting {proc_name}: {message}", where,
                      hint="check the index expressions and loop bounds against the array "
                      "shapes and the allocation extents", notes=tuple(notes))


def generated_source(p: Procedure, *, vectorize: bool = True) -> str:
    """The Python source the interpreter runs for ``p`` (for debugging and tests)."""
    cp = compiled(p)
    fn = cp.fn(vectorize and cp.has_vec)
    return "\n".join(fn.__globals__["__exo_linemap__"][2])
