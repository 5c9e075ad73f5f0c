"""Call preconditions: argument shapes (kind ``type``) and the callee's asserts.

``call_conditions(s, scope, ...)`` adds, for one call statement, the conditions every
instance of it must meet, in the order a failing instance reports them:

1. every data argument's window has the parameter's declared shape, dimension by dimension,
   with the callee's size parameters bound to the call's arguments (``copy_n(16,
   B[8*h:8*h+8], ...)`` against ``dst: [f32][n]`` is an 8 vs 16 mismatch). The frontend
   rejects the mismatches it can see with constants; this covers symbolic extents and IR
   built by rewrites (``replace``). Precision, memory and rank are re-checked too;
2. the callee's declared checks (``@instr(checks=...)``, see ``instr_checks``);
3. every ``assert`` of the callee, with its size parameters bound and ``stride(param, d)``
   replaced by the stride of the argument window (C-order strides of the base tensor over
   its non-distributed dimensions, as codegen lays it out). For an instruction a failure is
   kind ``instruction``; for a proc, ``type``. A stride the caller does not know (a window
   parameter of the caller) must be fixed by one of the caller's own asserts.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.affine import const_value
from .conditions import Condition, ConditionSet, cmp, conj, has_stride, subst
from .views import View


def show(e) -> str:
    """Source text of an expression, its linear part collected (``8*h + 8 - 8*h``: ``8``)."""
    from ..ir.printer import expr_str
    from ..ir.linear import simplify

    if isinstance(e, N.WindowExpr):
        return expr_str(e)
    return expr_str(simplify(e))


def arg_views(s: N.Call, scope: dict) -> dict:
    """Parameter name -> the View of its argument window (data parameters in scope)."""
    out = {}
    for prm, a in zip(s.callee.params, s.args):
        if prm.is_data and isinstance(a, N.WindowExpr) and a.name in scope:
            out[prm.name] = scope[a.name].window(a.idx)
    return out


def binding(s: N.Call) -> dict:
    return {prm.name: a for prm, a in zip(s.callee.params, s.args) if not prm.is_data}


def shape_conditions(path, s: N.Call, scope: dict, cs: ConditionSet, diags: list) -> bool:
    """Argument precision, memory, rank (static) and shape (conditions). False when a static
    mismatch makes the later checks meaningless."""
    callee, bind = s.callee, binding(s)
    ok = True
    for prm, a in zip(callee.params, s.args):
        if not prm.is_data or not isinstance(a, N.WindowExpr) or a.name not in scope:
            continue
        v = scope[a.name].window(a.idx)
        where = f"argument '{prm.name}' of {callee.name}()"
        pt: N.TensorType = prm.type
        if v.scalar != pt.scalar:
            diags.append(Diagnostic.at("type", f"{where} must be {pt.scalar}, got {v.scalar} "
                                       f"('{a.name}')", s.srcinfo))
            ok = False
            continue
        if prm.mem is not None and v.mem is not None and not prm.mem.accepts_memory(v.mem):
            diags.append(Diagnostic.at("type", f"{where} must be in {prm.mem}, but "
                                       f"'{a.name}' is in {v.mem}", s.srcinfo))
            ok = False
            continue
        if len(v.iv_dims) != pt.rank:
            diags.append(Diagnostic.at("type", f"{where} has {pt.rank} dimension(s); the "
                                       f"window {show(a)} has {len(v.iv_dims)}", s.srcinfo))
            ok = False
            continue
        got = v.extents
        want = [subst(e, bind) for e in pt.shape]
        ptype = f"[{pt.scalar}][{', '.join(show(e) for e in pt.shape)}]"
        wstr = ", ".join(show(e) for e in want)
        cs.add(path, Condition(
            "type", conj(*(cmp("==", g, w) for g, w in zip(got, want))),
            f"{where}: the window {show(a)} has shape [{', '.join(show(g) for g in got)}] but "
            f"the parameter is {ptype}, i.e. [{wstr}] at this call",
            s.srcinfo, hint=f"pass a window of shape [{wstr}] (an instruction accesses its "
                            "whole parameter shape, not the window you pass)",
            shows=tuple((f"extent {d}", g) for d, g in enumerate(got)),
            fact=f"shape of argument '{prm.name}' of {callee.name}()"))
    return ok


def stride_env(s: N.Call, views: dict, caller_strides: dict) -> tuple[dict, list[str]]:
    """``("stride", param, d)`` -> the argument's stride expression; also the names of
    strides that have no meaning (distributed dimensions)."""
    env, bad = {}, []
    for pname, v in views.items():
        for d, st in enumerate(v.strides):
            if st is None:
                bad.append(f"stride({pname}, {d})")
                continue
            env[("stride", pname, d)] = subst(st, caller_strides)
    return env, bad


def assert_conditions(path, s: N.Call, views: dict, caller_strides: dict, cs: ConditionSet,
                      diags: list) -> None:
    callee = s.callee
    kind = "instruction" if callee.is_instr else "type"
    env = dict(binding(s))
    senv, bad = stride_env(s, views, caller_strides)
    env.update(senv)
    for pred in callee.preds:
        c = subst(pred, env)
        text = show(pred)
        used = [b for b in bad if b in text]
        if used:
            diags.append(Diagnostic.at(kind, f"precondition `assert {text}` of "
                                       f"{callee.name}() uses {used[0]}, the stride of a "
                                       "distributed dimension (one shard per thread or CTA), "
                                       "which has no meaning", s.srcinfo))
            continue
        if has_stride(c):
            unknown = sorted({show(x) for x in _strides_in(c)})
            diags.append(Diagnostic.at(
                kind, f"precondition `assert {text}` of {callee.name}() cannot be "
                f"established at this call: it depends on {', '.join(unknown)}, a stride of "
                "a window parameter that only the caller of this procedure knows", s.srcinfo,
                hint=f"state it with an assert, e.g. `assert {unknown[0]} == 1`"))
            continue
        cs.add(path, Condition(
            kind, c, f"precondition `assert {text}` of {callee.name}() does not hold at "
            "this call", s.srcinfo,
            hint="change the arguments (sizes, window, layout) to satisfy it",
            shows=_shows(pred, env), fact=f"assert {text} of {callee.name}()"))


def _strides_in(e):
    if isinstance(e, N.StrideExpr):
        yield e
    for a in ("lhs", "rhs", "arg"):
        if hasattr(e, a):
            yield from _strides_in(getattr(e, a))


def _shows(pred, env: dict) -> tuple:
    """The values of the callee's sizes and strides that ``pred`` mentions."""
    out, seen = [], set()

    def go(e):
        if isinstance(e, N.Read) and not e.idx and e.name in env and e.name not in seen:
            seen.add(e.name)
            out.append((e.name, env[e.name]))
        elif isinstance(e, N.StrideExpr):
            k = ("stride", e.name, e.dim)
            if k in env and k not in seen:
                seen.add(k)
                out.append((f"stride({e.name}, {e.dim})", env[k]))
        for a in ("lhs", "rhs", "arg"):
            if hasattr(e, a):
                go(getattr(e, a))

    go(pred)
    return tuple(out)


def caller_known_strides(p: N.Procedure) -> dict:
    """``stride(X, d) == c`` asserts of ``p`` itself: what a window parameter's stride is."""
    out = {}

    def go(e):
        if isinstance(e, N.BinOp) and e.op == "and":
            go(e.lhs)
            go(e.rhs)
        elif isinstance(e, N.BinOp) and e.op == "==":
            for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                if isinstance(a, N.StrideExpr) and const_value(b) is not None:
                    out[("stride", a.name, a.dim)] = b

    for pred in p.preds:
        go(pred)
    return out


__all__ = ["arg_views", "assert_conditions", "binding", "caller_known_strides",
           "shape_conditions", "show", "View"]
