"""``verify``: the one entry point that checks ``seq[p] == par[p]`` and says how sure it is.

Verdicts are honest: ``proven`` (all sizes satisfying the asserts), ``checked`` (only at the
concrete sizes named), ``refuted`` (a diagnostic says why; a witness when it is a race),
``unknown`` (with the reason). ``verify`` never raises for a problem in the user's program;
it reports it. Stages run in order and stop at the first that finds errors: static analyses
(scope, collectives, distributed memory, barrier usage), then the synchronization checkers.
"""

from __future__ import annotations

import math
import numbers
import time
from pathlib import Path

from .errors import ExoGpuError, user_error
from .ir.nodes import Procedure
from .report import VERDICTS, Diagnostic, Report, Witness  # noqa: F401  (re-exported)
from .report import sizes_text

MODES = ("auto", "symbolic", "concrete")
DEFAULT_TIMEOUT_S = 60.0


def verify(p: Procedure, sizes: dict | None = None, mode: str | None = None,
           timeout_s: float | None = None) -> Report:
    """Check that the synchronization of ``p`` is sufficient; see the module docstring.

    ``verify(p)`` proves all sizes (``auto``: symbolic, falling back to the module's
    ``VERIFY_SIZES``); ``verify(p, sizes={...})`` checks those sizes concretely (LANGUAGE.md);
    ``mode="auto"`` with sizes tries the all-size proof first and uses the sizes as fallback.
    A scheduled ``p`` also reports where it comes from (``extra["derivation"]``: "derived
    from p1 (file:line) by k checked steps (j unsafe)"). ``timeout_s``: the wall-clock limit
    of each stage; by default the module's ``VERIFY_TIMEOUT``, else 60 s (``timeout_for``).
    """
    if isinstance(p, Procedure):
        timeout_s = timeout_for(p, timeout_s)
    r = _verify(p, sizes, mode, timeout_s)
    if isinstance(p, Procedure) and p.provenance:
        from .ir.derivation import derivation

        r.extra["derivation"] = derivation(p)
    return r


def _verify(p, sizes, mode, timeout_s) -> Report:
    t0 = time.perf_counter()
    if mode is None:
        mode = "concrete" if sizes is not None else "auto"
    if not isinstance(p, Procedure):
        fix = " (decorate its def with @proc, from exogpu_verify import *)" \
            if callable(p) else ""
        raise TypeError(f"verify() expects a @proc, not {type(p).__name__}{fix}")
    if mode not in MODES:
        raise ValueError(f"verify(mode=...) must be one of {', '.join(MODES)}, not {mode!r}")
    if sizes is not None:
        problems = size_problems(p, sizes)
        if problems:
            raise user_error("usage", f"verify({p.name}, sizes={sizes!r}): "
                             + "; ".join(problems), p.srcinfo,
                             hint="give every size parameter a positive integer that "
                                  "satisfies the proc's asserts")
        sizes = _as_ints(sizes)
    stages: list[str] = []
    try:
        diags = _static_analyses(p, stages)
    except ExoGpuError as e:
        diags = [e.diagnostic]
    except Exception as e:  # a bug in exogpu: not a verdict on the user's program
        d = Diagnostic.at("internal", f"static analysis crashed: {type(e).__name__}: {e}",
                          p.srcinfo)
        return Report(p.name, "unknown", (d,), "internal error in the static analyses (this "
                      "is a bug in exogpu)", sizes, stages=tuple(stages),
                      seconds=time.perf_counter() - t0)
    if diags:
        return Report(p.name, "refuted", tuple(diags), "static analysis failed", sizes,
                      stages=tuple(stages), seconds=time.perf_counter() - t0)
    sym_reason = ""
    if mode in ("auto", "symbolic"):
        stages.append("symbolic")
        rep = _symbolic(p, sizes, mode, timeout_s, stages, t0)
        if rep is not None:
            return rep
        sym_reason = _LAST_REASON.get(p.name, "")
        if mode == "symbolic":
            return Report(p.name, "unknown", (), sym_reason, sizes, stages=tuple(stages),
                          seconds=time.perf_counter() - t0)
    conc_sizes, origin = sizes, "the sizes given"
    if conc_sizes is None:
        conc_sizes, origin = _module_sizes(p), "the module's VERIFY_SIZES"
        bad = module_sizes_problems(p, missing=True)
        if bad:
            d = Diagnostic.at("usage", f"the module's VERIFY_SIZES cannot be used to check "
                              f"{p.name}: " + "; ".join(bad),
                              module_setting_at(p, "VERIFY_SIZES"), hint=_VERIFY_SIZES_HINT)
            reason = (f"symbolic check inconclusive ({sym_reason}); " if sym_reason else "") \
                + "the module's VERIFY_SIZES is unusable for the concrete fallback"
            return Report(p.name, "unknown", (d,), reason, None, stages=tuple(stages),
                          seconds=time.perf_counter() - t0)
    if conc_sizes is None and not any(not prm.is_data for prm in p.params):
        conc_sizes, origin = {}, None  # nothing to choose: no size parameters
    if conc_sizes is None:
        reason = (f"symbolic check inconclusive ({sym_reason}) and no concrete sizes were "
                  "given (pass sizes={...} or set VERIFY_SIZES in the module)")
        if mode == "concrete":
            need = ", ".join(prm.name for prm in p.params if not prm.is_data)
            reason = (f"mode='concrete' needs a value for {need} (pass sizes={{...}} or set "
                      "VERIFY_SIZES)")
        return Report(p.name, "unknown", (), reason, None, stages=tuple(stages),
                      seconds=time.perf_counter() - t0)
    from .amir import check_sync_concrete

    stages.append("concrete")
    conc_sizes = _as_ints({k: v for k, v in conc_sizes.items() if p.param(k) is not None})
    try:
        verdict, diags, witness, reason = check_sync_concrete(
            p, conc_sizes, deadline=time.perf_counter() + timeout_s)
    except Exception as e:  # a bug in exogpu: not a verdict on the user's program
        if _out_of_memory(e):  # ... unless the sizes are too large for this machine
            return Report(p.name, "unknown", (), _too_big(conc_sizes, e), conc_sizes,
                          stages=tuple(stages), seconds=time.perf_counter() - t0)
        d = Diagnostic.at("internal", f"concrete checker crashed: {type(e).__name__}: {e}",
                          p.srcinfo)
        return Report(p.name, "unknown", (d,), "internal error in the concrete checker (this "
                      "is a bug in exogpu)", conc_sizes, stages=tuple(stages),
                      seconds=time.perf_counter() - t0)
    if verdict == "checked":
        reason = f"checked at {sizes_text(conc_sizes)}" + (f" only ({origin})" if origin
                                                            else "")
        if mode == "auto":
            reason = f"symbolic check inconclusive ({sym_reason}); {reason}"
    return Report(p.name, verdict, tuple(diags), reason, conc_sizes, witness,
                  stages=tuple(stages), seconds=time.perf_counter() - t0)


_LAST_REASON: dict = {}


def _symbolic(p, sizes, mode, timeout_s, stages, t0):
    """Run the symbolic checker; a Report when it decides, else None (reason recorded)."""
    from .amir import check_sync_concrete
    from .symbolic import check_sync_symbolic

    try:
        res = check_sync_symbolic(p, timeout_s=timeout_s)
    except Exception as e:  # a bug in exogpu: fall back, and say so
        _LAST_REASON[p.name] = f"internal error in the symbolic checker: {type(e).__name__}: {e}"
        return None
    if res.verdict == "proven":
        return Report(p.name, "proven", (), f"{len(res.obligations)} obligations discharged "
                      "for all sizes (isl, Z3, cvc5)", None, stages=tuple(stages),
                      seconds=time.perf_counter() - t0,
                      extra={"obligations": res.obligations, "facts": res.facts})
    if res.verdict == "refuted":
        # replay the smallest failing sizes concretely: a witness, or an honest 'unknown'
        stages.append("replay")
        tried = []
        seen = set()
        for sz, ob in (res.candidates or [(res.sizes, res.failing)])[:6]:
            wsizes = {k: v for k, v in (sz or {}).items() if p.param(k) is not None}
            key = tuple(sorted(wsizes.items()))
            if key in seen:
                continue
            seen.add(key)
            try:
                verdict, diags, witness, reason = check_sync_concrete(
                    p, wsizes, deadline=time.perf_counter() + timeout_s)
            except Exception as e:  # noqa: BLE001 - a bug in exogpu (or no memory): fall back
                _LAST_REASON[p.name] = (f"obligation '{ob.name}' not discharged, and its "
                                        f"concrete replay at {wsizes} failed: "
                                        f"{type(e).__name__}: {e}")
                return None
            if verdict == "refuted":
                return Report(p.name, "refuted", tuple(diags),
                              f"{reason}; smallest failing sizes found symbolically: "
                              + ", ".join(f"{k}={v}" for k, v in wsizes.items()), wsizes,
                              witness, stages=tuple(stages), seconds=time.perf_counter() - t0)
            tried.append((ob.name, wsizes))
        _LAST_REASON[p.name] = (f"obligation '{tried[0][0]}' not discharged, but the concrete "
                                f"replay at {tried[0][1]} found no hazard (the symbolic encoding "
                                "is incomplete here)")
        return None
    _LAST_REASON[p.name] = res.reason
    return None


def timeout_for(p: Procedure, timeout_s: float | None = None) -> float:
    """The per-stage limit of ``p``'s check: ``timeout_s`` when given, else the
    ``VERIFY_TIMEOUT`` (seconds) of the module that defines ``p``, else 60. A module sets it
    when its procs need more than 60 s of wall clock on a loaded machine, so that their
    verdicts do not depend on the load. A bad value is a usage error naming it."""
    if timeout_s is not None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or \
                not math.isfinite(timeout_s) or timeout_s <= 0:
            raise ValueError(f"verify(timeout_s=...) must be a positive number of seconds, "
                             f"not {timeout_s!r}")
        return float(timeout_s)
    mod = p.module
    v = mod.get("VERIFY_TIMEOUT") if isinstance(mod, dict) else None
    if v is None:
        return DEFAULT_TIMEOUT_S
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or \
            not math.isfinite(v):
        raise user_error("usage", f"VERIFY_TIMEOUT = {v!r} in the module of {p.name} must be "
                         "a positive number of seconds", p.srcinfo,
                         hint="set VERIFY_TIMEOUT = 600, say, or remove it (default 60 s)")
    return float(v)


def size_problems(p: Procedure, sizes: dict, complete: bool = True) -> list[str]:
    """What is wrong with concrete ``sizes`` for ``p``, one message per problem, each naming
    the size: a name that is no control parameter, a missing or non-integer value, a size
    that is not positive, an ``assert`` the values violate or cannot be evaluated at (a
    division by zero; stride asserts are not checked: strides are not sizes). Each assert
    is checked when every size it names is given, so a missing size hides no violation.
    Empty when the sizes are usable. ``complete=False``: sizes that may leave some out (a
    module's ``VERIFY_SIZES``): a missing value is no problem."""
    from .amir.evaluate import ev
    from .ir.printer import expr_str

    if not isinstance(sizes, dict):
        return [f"sizes must be a dict of name -> int, not {type(sizes).__name__}"]
    ctrl = {prm.name: prm for prm in p.params if not prm.is_data}
    out = []
    for k, v in sizes.items():
        prm = ctrl.get(k)
        if prm is None:
            have = ", ".join(ctrl) or "none"
            out.append(f"{k!r} is not a size parameter of {p.name} (its parameters: {have})")
        elif prm.type.name == "bool":
            if not isinstance(v, bool) and v not in (0, 1):
                out.append(f"{k} must be a bool, got {v!r}")
        elif isinstance(v, bool) or not isinstance(v, numbers.Integral):
            out.append(f"{k} must be an integer, got {v!r}")
        elif prm.type.name == "size" and v <= 0:
            out.append(f"{k} must be positive (a size), got {v}")
    unusable = bool(out)  # values that are no sizes: the asserts cannot be evaluated
    missing = [k for k in ctrl if k not in sizes]
    if missing and complete:
        out.append(f"no value for {', '.join(missing)}")
    if unusable:
        return out
    for pred in p.preds:
        if _mentions_stride(pred) or not _names(pred) <= sizes.keys():
            continue
        try:
            ok, why = ev(pred, dict(sizes)), ""
        except ZeroDivisionError:
            ok, why = False, " (it divides by zero)"
        if not ok:
            si = pred.srcinfo
            where = f" ({si.file}:{si.line})" if si is not None and si.line else ""
            vals = ", ".join(f"{k}={v}" for k, v in sizes.items())
            verb = "violates" if len(sizes) == 1 else "violate"
            out.append(f"{vals} {verb} `assert {expr_str(pred)}`{where}{why}")
    return out


def _names(e) -> set:
    """The variables (sizes) expression ``e`` reads."""
    from .ir.nodes import Read

    if isinstance(e, Read):
        return {e.name}
    out = set()
    for f in ("lhs", "rhs", "arg"):
        if hasattr(e, f):
            out |= _names(getattr(e, f))
    return out


def _mentions_stride(e) -> bool:
    from .ir.nodes import StrideExpr

    if isinstance(e, StrideExpr):
        return True
    return any(_mentions_stride(getattr(e, f)) for f in ("lhs", "rhs", "arg")
               if hasattr(e, f))


_VERIFY_SIZES_HINT = ("set VERIFY_SIZES = {\"N\": 1024, ...} in the module: a positive integer "
                      "for each size parameter, satisfying the proc's asserts (or pass sizes=)")


def module_sizes_problems(p: Procedure, missing: bool = False) -> list[str]:
    """What is wrong with the ``VERIFY_SIZES`` of ``p``'s module for ``p`` (empty when it is
    absent or usable): not a dict, a value of one of ``p``'s size parameters that is no
    positive integer, values violating an assert; with ``missing``, also a size it gives no
    value for (a module may set VERIFY_SIZES for some of its procs only)."""
    mod = p.module
    if not isinstance(mod, dict) or "VERIFY_SIZES" not in mod:
        return []
    vs = mod["VERIFY_SIZES"]
    if not isinstance(vs, dict):
        return [f"VERIFY_SIZES = {vs!r} must be a dict of size name -> int"]
    mine = {k: v for k, v in vs.items() if isinstance(k, str) and p.param(k) is not None}
    return size_problems(p, mine, complete=missing)


def module_setting_at(p: Procedure, name: str):
    """Where the module of ``p`` assigns ``name`` (``VERIFY_SIZES = ...``), else ``p``'s
    def: the place a diagnostic about that setting points at."""
    from .ir.srcinfo import SrcInfo

    si = p.srcinfo
    at = assignment_at(getattr(si, "file", None), name)
    return SrcInfo(si.file, at[0], at[1]) if at is not None else si


def assignment_at(file, name: str) -> tuple[int, int] | None:
    """(line, column) where module ``file`` assigns ``name`` at its top level, or None."""
    import ast

    try:
        tree = ast.parse(Path(file).read_text(), filename=str(file))
    except (AttributeError, TypeError, OSError, SyntaxError, ValueError):
        return None
    for st in tree.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                              for t in st.targets):
            return st.lineno, st.col_offset
    return None


def _as_ints(sizes: dict) -> dict:
    """Sizes checked by ``size_problems``, as Python ints (numpy integers accepted)."""
    return {k: (v if isinstance(v, bool) else int(v)) for k, v in sizes.items()}


def _out_of_memory(e: BaseException) -> bool:
    """numpy's way of saying the sizes need more memory than there is."""
    return isinstance(e, MemoryError) or "array is too big" in str(e)


def _too_big(sizes: dict, e: BaseException) -> str:
    return (f"the concrete check at {sizes_text(sizes)} needs more memory than this machine "
            f"has ({type(e).__name__}: {e}); check at smaller sizes (the all-size proof "
            "needs none)")


def _module_sizes(p: Procedure) -> dict | None:
    mod = p.module
    if isinstance(mod, dict):
        vs = mod.get("VERIFY_SIZES")
        if isinstance(vs, dict):
            return dict(vs)
    return None


def _static_analyses(p: Procedure, stages: list[str]) -> list[Diagnostic]:
    """Run the static analyses that exist; each returns a list of diagnostics."""
    try:
        from .analysis import analyze_static
    except ImportError:
        return []
    stages.append("static")
    return list(analyze_static(p))
