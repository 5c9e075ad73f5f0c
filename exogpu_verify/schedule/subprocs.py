"""Procedure-level rewrites: inline, call_eqv, and replace (instruction selection by
unification of a block with an ``@instr`` body)."""

from __future__ import annotations

from dataclasses import replace as _dc_replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from . import deps as D
from .base import block_cursor, check_proc, finish, stmt_cursor
from .buffers import map_buffer
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import (all_names, expr_walk, rename_var, splice, subst, subst_stmts, walk,
                      window_composers)
from .record import primitive

# ---------------------------------------------------------------- inline


@primitive
def inline(proc, call_cursor):
    """Replace a call of a (non-instruction) procedure by its body, with control parameters
    substituted and data parameters resolved through the argument windows."""
    check_proc(proc)
    c = stmt_cursor(proc, call_cursor, "call")
    s, path = c.node(), c.path()
    if not isinstance(s, N.Call):
        raise SchedulingError("inline: expected a call", proc, [path])
    callee = s.callee
    if callee.instr is not None:
        raise SchedulingError(f"inline: {callee.name} is an instruction; its body is its "
                              "specification, not code", proc, [path])
    body = callee.body
    taken = all_names(proc)
    # callee-local names must not clash with the caller's
    for n in sorted({x.name for x in walk(body) if isinstance(x, (N.Alloc, N.WindowStmt,
                                                                  N.BarrierAlloc))} |
                    {x.iter for x in walk(body) if isinstance(x, N.For)}):
        if n in taken:
            k = 0
            while f"{n}_{k}" in taken:
                k += 1
            body = rename_var(body, n, f"{n}_{k}")
            taken.add(f"{n}_{k}")
    env = {}
    for prm, a in zip(callee.params, s.args):
        if not prm.is_data:
            env[prm.name] = a
    body = subst_stmts(body, env)
    for prm, a in zip(callee.params, s.args):
        if prm.is_data:
            body = _resolve_param(body, prm.name, a)
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, list(body))
    n = len(body)

    def inner(k, rest):
        return None

    return finish(proc, p2, "inline", [c], f"body of {callee.name} with parameters "
                  "substituted (windows resolved to the same elements)",
                  fwd_splice(parent, field, i, i + 1, n, inner))


def _resolve_param(stmts, pname, w: N.WindowExpr):
    fp, fw = window_composers(w)

    return map_buffer(stmts, pname, fp, fw, new_name=w.name)


# ---------------------------------------------------------------- call_eqv


def _root(p):
    while p.provenance:
        fw = p.provenance[0].forward
        if fw is None:
            break
        p = fw.src
    return p


def _unsafe_steps(p):
    return [r.name for r in p.provenance if r.unsafe]


@primitive
def call_eqv(proc, call_cursor, eqv_proc):
    """Call ``eqv_proc`` instead of the current callee; both must be scheduled from the same
    original procedure (equivalent by their provenance)."""
    check_proc(proc)
    c = stmt_cursor(proc, call_cursor, "call")
    s, path = c.node(), c.path()
    if not isinstance(s, N.Call):
        raise SchedulingError("call_eqv: expected a call", proc, [path])
    old = s.callee
    if not isinstance(eqv_proc, N.Procedure):
        raise SchedulingError("call_eqv: expected a procedure", proc, [path])
    ra, rb = _root(old), _root(eqv_proc)
    if not (ra is rb or ra == rb):
        raise SchedulingError(f"call_eqv: {eqv_proc.name} is not scheduled from the same "
                              f"procedure as {old.name}", proc, [path])
    if [(p.name, p.type) for p in old.params] != [(p.name, p.type) for p in eqv_proc.params]:
        raise SchedulingError("call_eqv: the signatures differ", proc, [path])
    uns = _unsafe_steps(old) + _unsafe_steps(eqv_proc)
    p2 = splice(proc, path[:-1], path[-1][0], path[-1][1], path[-1][1] + 1,
                [_dc_replace(s, callee=eqv_proc)])
    checked = f"{old.name} and {eqv_proc.name} derive from the same procedure by checked rewrites"
    if uns:
        checked += f"; their provenance includes unsafe steps {uns}"
    return finish(proc, p2, "call_eqv", [c, eqv_proc], checked, unsafe=bool(uns))


# ---------------------------------------------------------------- replace (unification)


@primitive
def replace(proc, block_cursor_, subproc, quiet: bool = True, barrier=None):
    """Replace a block by a call to ``subproc`` (an ``@instr`` or a proc) if the block is an
    instance of its body: unification (``unify``) binds the size arguments and the argument
    windows (over tensors, allocations or window statements such as tensor maps), then the
    callee's asserts are proved at the call site (isl). An instruction that completes on a
    barrier (``@instr(barrier=...)``, e.g. a TMA load) takes it as ``barrier="raw[k]"``: the
    call becomes ``instr(...) >> raw[k]`` (sequentially meaningless; verify checks it)."""
    from .unify import NoMatch, Unifier

    check_proc(proc)
    b = block_cursor(proc, block_cursor_)
    if not isinstance(subproc, N.Procedure):
        raise SchedulingError("replace: expected an @instr or @proc", proc, b.paths())
    parent, field, lo, hi = b._parent, b._field, b._lo, b._hi
    vs, cs = D.context(proc, parent + ((field, lo),))
    u = Unifier(proc, subproc, vs, cs)
    try:
        u.stmts(subproc.body, b.stmts())
        wins = u.windows()
    except NoMatch as e:
        raise SchedulingError(f"replace: the block does not match {subproc.name}: {e}", proc,
                              b.paths()) from None
    args = []
    for prm in subproc.params:
        if prm.is_data:
            if prm.name not in wins:
                raise SchedulingError(f"replace: parameter '{prm.name}' of {subproc.name} is "
                                      "not used by its body; cannot infer it", proc, b.paths())
            cname, idx = wins[prm.name]
            args.append(N.WindowExpr(cname, idx, prm.type.scalar))
        else:
            if prm.name not in u.bind:
                raise SchedulingError(f"replace: cannot infer '{prm.name}' of {subproc.name}",
                                      proc, b.paths())
            args.append(u.bind[prm.name])
    env = {p.name: a for p, a in zip(subproc.params, args) if not p.is_data}
    for pred in subproc.preds:
        if any(isinstance(x, N.StrideExpr) for x in expr_walk(pred)):
            continue  # strides of windows: checked at the call by verify (analysis/calls.py)
        if not D.prove(proc, vs, cs, subst(pred, env)):
            raise SchedulingError(f"replace: cannot prove {subproc.name}'s precondition "
                                  f"{expr_str(subst(pred, env))} at the call", proc, b.paths())
    from .bufinfo import tensor_scalar

    for prm, a in zip(subproc.params, args):
        if prm.is_data and tensor_scalar(proc, a.name) != prm.type.scalar:
            raise SchedulingError(f"replace: '{a.name}' is {tensor_scalar(proc, a.name)}, "
                                  f"{subproc.name} expects {prm.type.scalar}", proc, b.paths())
    bars = _trailing_barriers(proc, subproc, barrier, (parent, field, lo), b.paths())
    call = N.Call(subproc, tuple(args), bars)
    p2 = splice(proc, parent, field, lo, hi, [call])
    checked = (f"block unified with the body of {subproc.name} (sizes "
               f"{ {k: expr_str(v) for k, v in u.bind.items()} }; indices compared as values: "
               "canonical forms, else isl over the loop bounds); size preconditions proved; "
               "stride preconditions and argument shapes are checked at the call by verify")
    if bars:
        checked += f"; completes on {', '.join(expr_str(x) for x in bars)} (annotation)"
    return finish(proc, p2, "replace", [b, subproc] + ([barrier] if barrier else []), checked,
                  fwd_splice(parent, field, lo, hi, 1, lambda k, rest: None
                             if rest else parent + ((field, lo),)))


def _trailing_barriers(proc, subproc, barrier, where, paths):
    mech = subproc.instr.barrier if subproc.instr is not None else None
    if barrier is None:
        if mech is not None:
            raise SchedulingError(
                f"replace: {subproc.name} completes on a barrier ({mech}): pass the barrier "
                "it arrives on, e.g. replace(p, block, instr, barrier=\"raw[k]\")", proc, paths)
        return ()
    if mech is None:
        raise SchedulingError(f"replace: {subproc.name} does not complete on a barrier; drop "
                              f"barrier={barrier!r}", proc, paths)
    from .gpu import _barrier_ref

    texts = [barrier] if isinstance(barrier, str) else list(barrier)
    return tuple(_barrier_ref(proc, where, t) for t in texts)


# ---------------------------------------------------------------- extract_subproc


@primitive
def extract_subproc(proc, block, subproc_name: str, include_asserts: bool = True):
    """Move a block (at CPU scope) into a new procedure ``subproc_name`` and call it:
    returns ``(proc, subproc)``. The subproc's parameters are the block's free variables
    (sizes, indices and loop variables, buffers and windows) under their own names, so its
    body is the block unchanged and inlining the call gives the block back."""
    check_proc(proc)
    b = block_cursor(proc, block)
    if not isinstance(subproc_name, str) or not subproc_name.isidentifier():
        raise SchedulingError(f"extract_subproc: {subproc_name!r} is not an identifier", proc,
                              b.paths())
    from .buffers import _in_cuda_path

    if _in_cuda_path(proc, b.paths()[0]):
        raise SchedulingError("extract_subproc: procs are called only at CPU scope; this "
                              "block is inside a CudaDeviceFunction", proc, b.paths())
    stmts = tuple(b.stmts())
    from .base import scope_vars

    vis = scope_vars(proc, b._parent, b._field, b._lo)
    bound = set()
    for t in walk(stmts):
        if isinstance(t, (N.Alloc, N.BarrierAlloc, N.WindowStmt)):
            bound.add(t.name)
        if isinstance(t, N.For):
            bound.add(t.iter)
    free = [n for n in _ordered_names(stmts) if n not in bound and n in vis]
    if any(vis[n].kind == "barrier" for n in free):
        raise SchedulingError("extract_subproc: the block uses barriers allocated outside it",
                              proc, b.paths())
    data = [n for n in free if vis[n].kind == "data"]
    ctl = [n for n in free if vis[n].kind == "control"]
    # sizes in the shapes of the buffers passed
    for n in data:
        for e in vis[n].type.shape:
            for x in expr_walk(e):
                if isinstance(x, N.Read) and not x.idx and x.name not in ctl:
                    ctl.append(x.name)
    params, args = [], []
    for n in sorted(ctl, key=lambda n: (proc.param(n) is None, _order(proc, n))):
        prm = proc.param(n)
        t = prm.type if prm is not None else vis[n].type
        params.append(N.Param(n, t))
        args.append(N.Read(n, (), t))
    for n in sorted(data, key=lambda n: (proc.param(n) is None, _order(proc, n))):
        info = vis[n]
        prm = proc.param(n)
        typ = prm.type if prm is not None else info.type
        params.append(N.Param(n, typ, info.mem))
        args.append(N.WindowExpr(n, tuple(N.Interval(N.Const(0, e.type), e)
                                          for e in typ.shape), typ.scalar))
    names = {q.name for q in params}
    preds = tuple(pr for pr in proc.preds if include_asserts and
                  names_used_expr(pr) <= names)
    sub = N.Procedure(subproc_name, tuple(params), preds, stmts, None, stmts[0].srcinfo,
                      module=proc.module)
    from .base import revalidate

    revalidate(sub, "extract_subproc")
    parent, field, lo, hi = b._parent, b._field, b._lo, b._hi
    call = N.Call(sub, tuple(args), (), stmts[0].srcinfo)
    p2 = splice(proc, parent, field, lo, hi, [call])
    new = finish(proc, p2, "extract_subproc", [b, subproc_name, include_asserts],
                 f"the block moved into {subproc_name} with its free variables as parameters "
                 "under their own names: inlining the call gives it back",
                 fwd_splice(parent, field, lo, hi, 1, lambda k, rest: None))
    return new, sub


def names_used_expr(e) -> set:
    return {x.name for x in expr_walk(e) if isinstance(x, (N.Read, N.StrideExpr))}


def _ordered_names(stmts):
    """Names read, written or passed in ``stmts`` in first-use order."""
    from .irtools import stmt_exprs

    out = []
    for t in walk(stmts):
        if isinstance(t, (N.Assign, N.Reduce)) and t.name not in out:
            out.append(t.name)
        for e in stmt_exprs(t):
            for x in expr_walk(e):
                if isinstance(x, (N.Read, N.WindowExpr, N.BarrierRef, N.StrideExpr)) and \
                        x.name not in out:
                    out.append(x.name)
    return out


def _order(proc, n):
    for k, prm in enumerate(proc.params):
        if prm.name == n:
            return k
    return len(proc.params)


__all__ = ["inline", "call_eqv", "replace", "extract_subproc"]
