"""Procedure-level rewrites: inline, call_eqv, and replace (instruction selection by
unification of a block with an ``@instr`` body)."""

from __future__ import annotations

from dataclasses import replace as _dc_replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.types import ControlType
from . import deps as D
from .base import block_cursor, check_proc, finish, stmt_cursor
from .buffers import map_buffer
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import (add, all_names, expr_walk, rename_var, simp, splice, sub, subst,
                      window_composers,
                      subst_stmts, walk)

# ---------------------------------------------------------------- inline


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


class _NoMatch(Exception):
    pass


class _Unifier:
    """Match an instruction body (pattern side, over its parameters) against a block of the
    caller; binds control parameters to caller expressions and data parameters to windows."""

    def __init__(self, instr: N.Procedure):
        self.instr = instr
        self.ctl = {p.name for p in instr.params if not p.is_data}
        self.data = {p.name: p for p in instr.params if p.is_data}
        self.bind: dict = {}   # control param -> caller expr
        self.iters: dict = {}  # instr loop var -> caller expr (its loop var)
        self.win: dict = {}    # data param -> WindowExpr

    def ctl_eq(self, pe, ce):
        """Unify a control expression of the instruction with one of the caller."""
        if isinstance(pe, N.Read) and not pe.idx and pe.name in self.ctl:
            if pe.name in self.bind:
                if const_value(simp(sub(self.bind[pe.name], ce))) != 0:
                    raise _NoMatch(f"'{pe.name}' bound to both {expr_str(self.bind[pe.name])} "
                                   f"and {expr_str(ce)}")
                return
            self.bind[pe.name] = ce
            return
        x = self.subst(pe)
        if const_value(simp(sub(x, ce))) != 0:
            raise _NoMatch(f"{expr_str(pe)} does not match {expr_str(ce)}")

    def subst(self, e):
        env = dict(self.bind)
        env.update(self.iters)
        for n in {x.name for x in expr_walk(e) if isinstance(x, N.Read) and not x.idx
                  and x.name in self.ctl}:
            if n not in env:
                raise _NoMatch(f"size '{n}' used before it could be bound")
        return simp(subst(e, env))

    def stmts(self, ps, cs):
        if len(ps) != len(cs):
            raise _NoMatch(f"{len(ps)} statement(s) in the instruction, {len(cs)} in the block")
        for p, c in zip(ps, cs):
            self.stmt(p, c)

    def stmt(self, p, c):
        if type(p) is not type(c):
            raise _NoMatch(f"{type(p).__name__} vs {type(c).__name__}")
        if isinstance(p, N.For):
            self.ctl_eq(p.lo, c.lo)
            self.ctl_eq(p.hi, c.hi)
            self.iters[p.iter] = N.Read(c.iter, (), c.lo.type if isinstance(
                c.lo.type, ControlType) else p.lo.type)
            self.stmts(p.body, c.body)
        elif isinstance(p, N.If):
            self.cond(p.cond, c.cond)
            self.stmts(p.body, c.body)
            self.stmts(p.orelse, c.orelse)
        elif isinstance(p, (N.Assign, N.Reduce)):
            self.access(p.name, p.idx, c.name, c.idx)
            self.data_eq(p.rhs, c.rhs)
        elif isinstance(p, N.Pass):
            pass
        else:
            raise _NoMatch(f"cannot unify {type(p).__name__} statements")

    def cond(self, p, c):
        if isinstance(p, N.BinOp) and isinstance(c, N.BinOp) and p.op == c.op:
            if p.op in ("and", "or"):
                self.cond(p.lhs, c.lhs)
                self.cond(p.rhs, c.rhs)
            else:
                self.ctl_eq(p.lhs, c.lhs)
                self.ctl_eq(p.rhs, c.rhs)
            return
        if isinstance(p, N.UnOp) and isinstance(c, N.UnOp) and p.op == c.op:
            self.cond(p.arg, c.arg)
            return
        if p != c:
            raise _NoMatch(f"condition {expr_str(p)} vs {expr_str(c)}")

    def data_eq(self, p, c):
        if isinstance(p, N.Read) and isinstance(p.type, ControlType):
            self.ctl_eq(p, c)
            return
        if type(p) is not type(c):
            raise _NoMatch(f"{expr_str(p)} vs {expr_str(c)}")
        if isinstance(p, N.Const):
            if p.val != c.val:
                raise _NoMatch(f"constant {p.val} vs {c.val}")
        elif isinstance(p, N.Read):
            self.access(p.name, p.idx, c.name, c.idx)
        elif isinstance(p, N.BinOp):
            if p.op != c.op:
                raise _NoMatch(f"'{p.op}' vs '{c.op}'")
            self.data_eq(p.lhs, c.lhs)
            self.data_eq(p.rhs, c.rhs)
        elif isinstance(p, N.UnOp):
            if p.op != c.op:
                raise _NoMatch(f"'{p.op}' vs '{c.op}'")
            self.data_eq(p.arg, c.arg)
        elif isinstance(p, N.BuiltIn):
            if p.fn != c.fn or len(p.args) != len(c.args):
                raise _NoMatch(f"{p.fn} vs {c.fn}")
            for a, b in zip(p.args, c.args):
                self.data_eq(a, b)
        else:
            raise _NoMatch(f"cannot unify {expr_str(p)}")

    def access(self, pname, pidx, cname, cidx):
        if pname not in self.data:
            raise _NoMatch(f"instruction accesses '{pname}', which is not a parameter")
        prm = self.data[pname]
        q = [self.subst(e) for e in pidx]  # param index in caller variables
        iter_names = {e.name for e in self.iters.values()}

        def free(e):
            return not any(isinstance(x, N.Read) and x.name in iter_names
                           for x in expr_walk(e))

        rank = len(q)
        idx = []
        j = 0
        for ce in cidx:
            if j < rank:
                off = simp(sub(ce, q[j]))
                if free(off) and (not free(q[j]) or rank - j >= len(cidx) - len(idx)):
                    idx.append(("iv", off))
                    j += 1
                    continue
            if not free(ce):
                raise _NoMatch(f"index {expr_str(ce)} of '{cname}' does not fit the window "
                               f"of parameter '{pname}'")
            idx.append(("pt", ce))
        if j != rank:
            raise _NoMatch(f"'{cname}' cannot provide the {rank} window dimension(s) of "
                           f"'{pname}'")
        k = 0
        widx = []
        for kind, e in idx:
            if kind == "pt":
                widx.append(N.Point(e))
            else:
                ext = prm.type.shape[k]
                widx.append(("iv", e, ext))
                k += 1
        cand = (cname, tuple(widx))
        if pname in self.win:
            old = self.win[pname]
            if old[0] != cname or len(old[1]) != len(widx) or any(
                    _neq(a, b) for a, b in zip(old[1], widx)):
                raise _NoMatch(f"parameter '{pname}' is used with two different windows")
        else:
            self.win[pname] = cand

    def windows(self):
        out = {}
        for pname, (cname, widx) in self.win.items():
            idx = []
            for w in widx:
                if isinstance(w, N.Point):
                    idx.append(w)
                else:
                    _, lo, ext = w
                    hi = add(lo, self.subst(ext))
                    idx.append(N.Interval(lo, hi))
            out[pname] = (cname, tuple(idx))
        return out


def _neq(a, b):
    if isinstance(a, N.Point) and isinstance(b, N.Point):
        return const_value(simp(sub(a.pt, b.pt))) != 0
    if isinstance(a, tuple) and isinstance(b, tuple):
        return const_value(simp(sub(a[1], b[1]))) != 0
    return True


def replace(proc, block_cursor_, subproc, quiet: bool = True):
    """Replace a block by a call to ``subproc`` (an ``@instr`` or a proc) if the block is an
    instance of its body: unification binds the size arguments and the argument windows,
    then the callee's asserts are proved at the call site (isl)."""
    check_proc(proc)
    b = block_cursor(proc, block_cursor_)
    if not isinstance(subproc, N.Procedure):
        raise SchedulingError("replace: expected an @instr or @proc", proc, b.paths())
    u = _Unifier(subproc)
    try:
        u.stmts(subproc.body, b.stmts())
        wins = u.windows()
    except _NoMatch as e:
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
    parent, field, lo, hi = b._parent, b._field, b._lo, b._hi
    vs, cs = D.context(proc, parent + ((field, lo),))
    env = {p.name: a for p, a in zip(subproc.params, args) if not p.is_data}
    for pred in subproc.preds:
        if any(isinstance(x, N.StrideExpr) for x in expr_walk(pred)):
            continue  # strides of windows: checked by the frontend and the runtime
        if not D.prove(proc, vs, cs, subst(pred, env)):
            raise SchedulingError(f"replace: cannot prove {subproc.name}'s precondition "
                                  f"{expr_str(subst(pred, env))} at the call", proc, b.paths())
    # window scalar types must match the parameters
    for prm, a in zip(subproc.params, args):
        if prm.is_data:
            from .buffers import _scalar

            if _scalar(proc, a.name) != prm.type.scalar:
                raise SchedulingError(f"replace: '{a.name}' is {_scalar(proc, a.name)}, "
                                      f"{subproc.name} expects {prm.type.scalar}", proc,
                                      b.paths())
    call = N.Call(subproc, tuple(args))
    p2 = splice(proc, parent, field, lo, hi, [call])
    return finish(proc, p2, "replace", [b, subproc],
                  f"block unified with the body of {subproc.name} (sizes "
                  f"{ {k: expr_str(v) for k, v in u.bind.items()} }); preconditions proved; "
                  "argument memories and shapes re-checked by the frontend",
                  fwd_splice(parent, field, lo, hi, 1, lambda k, rest: None
                             if rest else parent + ((field, lo),)))


__all__ = ["inline", "call_eqv", "replace"]
