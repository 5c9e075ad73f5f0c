"""Unification of an instruction (or proc) body with a block of the caller, for ``replace``.

The body is the pattern: its loops match the caller's loops, its statements the caller's
statements; control parameters are bound to caller expressions and each data parameter to
a window of a caller buffer (a tensor, an allocation, or a window statement such as a
tensor map). Index expressions are compared as values, not text: two control expressions
unify when they have the same canonical quasi-affine form or isl proves them equal over the
caller's loop bounds and guards (``deps.equal_in_context``), so ``m % 16 % 8`` meets
``m % 8`` and ``4 * (l / 4) + l % 4`` meets ``l``. A window offset must be independent of
the matched loops: the offset at the loops' first iteration, proved equal everywhere.
"""

from __future__ import annotations

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.types import ControlType
from .irtools import add, expr_walk, simp, sub, subst
from .deps import equal_in_context
from .normalize import same_form


class NoMatch(Exception):
    pass


class Unifier:
    def __init__(self, proc: N.Procedure, instr: N.Procedure, outer_vars, outer_cons):
        self.proc = proc
        self.instr = instr
        self.ctl = {p.name for p in instr.params if not p.is_data}
        self.data = {p.name: p for p in instr.params if p.is_data}
        self.bind: dict = {}   # control param -> caller expr
        self.iters: dict = {}  # instr loop var -> caller loop var (a Read)
        self.win: dict = {}    # data param -> (caller buffer, [Point | ("iv", lo, ext)])
        self.vars = list(outer_vars)   # caller loop vars in scope, with bounds
        self.cons = list(outer_cons)
        self.local: list = []          # caller loop vars of the matched block

    # ------------------------------------------------------------ control expressions
    def equal(self, a, b) -> bool:
        if same_form(a, b):
            return True
        try:
            return equal_in_context(self.proc, self.vars, self.cons, a, b)
        except Exception:  # noqa: BLE001 - not representable: not provably equal
            return False

    def ctl_eq(self, pe, ce):
        if isinstance(pe, N.Read) and not pe.idx and pe.name in self.ctl:
            if pe.name in self.bind:
                if not self.equal(self.bind[pe.name], ce):
                    raise NoMatch(f"'{pe.name}' is bound to both "
                                  f"{expr_str(self.bind[pe.name])} and {expr_str(ce)}")
                return
            if not self.free(ce):
                raise NoMatch(f"size '{pe.name}' would be bound to {expr_str(ce)}, which "
                              "depends on a loop of the block")
            self.bind[pe.name] = ce
            return
        x = self.subst(pe)
        if not self.equal(x, ce):
            raise NoMatch(f"{expr_str(pe)} (here {expr_str(x)}) does not equal {expr_str(ce)}")

    def subst(self, e):
        env = dict(self.bind)
        env.update(self.iters)
        for n in {x.name for x in expr_walk(e) if isinstance(x, N.Read) and not x.idx
                  and x.name in self.ctl}:
            if n not in env:
                raise NoMatch(f"size '{n}' is used before it could be bound")
        return simp(subst(e, env))

    def at_first(self, e):
        """``e`` with every matched loop variable at its first value."""
        return simp(subst(e, {v: lo for v, lo, _ in self.local}))

    def free(self, e) -> bool:
        """Is ``e`` independent of the loops of the matched block?"""
        names = {v for v, _, _ in self.local}
        e = simp(e)
        if not any(isinstance(x, N.Read) and x.name in names for x in expr_walk(e)):
            return True
        return self.equal(e, self.at_first(e))

    # ------------------------------------------------------------ statements
    def stmts(self, ps, cs):
        if len(ps) != len(cs):
            raise NoMatch(f"{len(ps)} statement(s) in {self.instr.name}, {len(cs)} in the "
                          "block")
        for p, c in zip(ps, cs):
            self.stmt(p, c)

    def stmt(self, p, c):
        if type(p) is not type(c):
            raise NoMatch(f"{type(p).__name__} in {self.instr.name} vs {type(c).__name__} in "
                          "the block")
        if isinstance(p, N.For):
            self.ctl_eq(p.lo, c.lo)
            self.ctl_eq(p.hi, c.hi)
            t = c.lo.type if isinstance(c.lo.type, ControlType) else p.lo.type
            self.iters[p.iter] = N.Read(c.iter, (), t)
            entry = (c.iter, c.lo, c.hi)
            self.local.append(entry)
            self.vars.append(entry)
            self.stmts(p.body, c.body)
        elif isinstance(p, N.If):
            self.cond(p.cond, c.cond)
            self.cons.append(c.cond)
            self.stmts(p.body, c.body)
            self.cons.pop()
            self.stmts(p.orelse, c.orelse)
        elif isinstance(p, (N.Assign, N.Reduce)):
            self.access(p.name, p.idx, c.name, c.idx)
            self.data_eq(p.rhs, c.rhs)
        elif isinstance(p, N.Pass):
            pass
        else:
            raise NoMatch(f"cannot unify {type(p).__name__} statements")

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
            raise NoMatch(f"condition {expr_str(p)} vs {expr_str(c)}")

    def data_eq(self, p, c):
        if isinstance(p, N.Read) and isinstance(p.type, ControlType):
            self.ctl_eq(p, c)
            return
        if type(p) is not type(c):
            raise NoMatch(f"{expr_str(p)} vs {expr_str(c)}")
        if isinstance(p, N.Const):
            if p.val != c.val:
                raise NoMatch(f"constant {p.val} vs {c.val}")
        elif isinstance(p, N.Read):
            self.access(p.name, p.idx, c.name, c.idx)
        elif isinstance(p, N.BinOp):
            if p.op != c.op:
                raise NoMatch(f"'{p.op}' vs '{c.op}' (commute_expr can swap operands)")
            self.data_eq(p.lhs, c.lhs)
            self.data_eq(p.rhs, c.rhs)
        elif isinstance(p, N.UnOp):
            if p.op != c.op:
                raise NoMatch(f"'{p.op}' vs '{c.op}'")
            self.data_eq(p.arg, c.arg)
        elif isinstance(p, N.BuiltIn):
            if p.fn != c.fn or len(p.args) != len(c.args):
                raise NoMatch(f"{p.fn} vs {c.fn}")
            for a, b in zip(p.args, c.args):
                self.data_eq(a, b)
        else:
            raise NoMatch(f"cannot unify {expr_str(p)}")

    # ------------------------------------------------------------ data accesses
    def access(self, pname, pidx, cname, cidx):
        if pname not in self.data:
            raise NoMatch(f"{self.instr.name} accesses '{pname}', which is not a parameter")
        prm = self.data[pname]
        q = [self.subst(e) for e in pidx]  # the parameter's index in caller variables
        rank = len(q)
        widx, j = [], 0
        for k, ce in enumerate(cidx):
            left = len(cidx) - k  # caller dims left, this one included
            if j < rank:
                off = self.at_first(sub(ce, q[j]))
                fits = self.equal(ce, add(q[j], off))
                # take the dim as a window dim when it fits and either it varies with the
                # loops or every remaining caller dim is needed for the window
                if fits and (not self.free(q[j]) or rank - j >= left):
                    widx.append(("iv", off, prm.type.shape[j]))
                    j += 1
                    continue
            if not self.free(ce):
                raise NoMatch(f"index {expr_str(ce)} of '{cname}' does not fit the window "
                              f"of parameter '{pname}'")
            widx.append(N.Point(self.at_first(ce)))
        if j != rank:
            raise NoMatch(f"'{cname}' cannot provide the {rank} window dimension(s) of "
                          f"'{pname}'")
        if pname in self.win:
            old_name, old = self.win[pname]
            if old_name != cname or len(old) != len(widx) or any(
                    not self._same_w(a, b) for a, b in zip(old, widx)):
                raise NoMatch(f"parameter '{pname}' is used with two different windows")
        else:
            self.win[pname] = (cname, widx)

    def _same_w(self, a, b) -> bool:
        if isinstance(a, N.Point) and isinstance(b, N.Point):
            return self.equal(a.pt, b.pt)
        if isinstance(a, tuple) and isinstance(b, tuple):
            return self.equal(a[1], b[1])
        return False

    def windows(self) -> dict:
        out = {}
        for pname, (cname, widx) in self.win.items():
            idx = []
            for w in widx:
                if isinstance(w, N.Point):
                    idx.append(w)
                else:
                    _, lo, ext = w
                    idx.append(N.Interval(lo, add(lo, self.subst(ext))))
            out[pname] = (cname, tuple(idx))
        return out
