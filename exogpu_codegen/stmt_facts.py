"""Syntactic facts about kernel statements that the device code generator needs: names a
block uses (what the kernel captures), which register arrays a loop iterator indexes (such a
loop must be unrolled completely), warp-range conditions, task counts."""

from __future__ import annotations

from exogpu_verify.ir import nodes as N

from .cexpr import Ctl

def warp_cond(w0: int, w1: int) -> str:
    if w0 == 0:
        return f"threadIdx.x < {32 * w1}"
    return f"threadIdx.x >= {32 * w0} && threadIdx.x < {32 * w1}"


def count(ctl: Ctl, t: N.For) -> str:
    lo, hi = ctl(t.lo), ctl(t.hi)
    if lo == "0":
        return hi if ctl.is_nonneg(t.hi) else f"exo_max0({hi})"
    return f"exo_max0({hi} - {lo})"


def names(e, out: set):
    if isinstance(e, N.Read):
        out.add(e.name)
        for i in e.idx:
            names(i, out)
    elif isinstance(e, N.StrideExpr):
        out.add(e.name)
    elif isinstance(e, N.BinOp):
        names(e.lhs, out)
        names(e.rhs, out)
    elif isinstance(e, (N.UnOp,)):
        names(e.arg, out)
    elif isinstance(e, N.BuiltIn):
        for a in e.args:
            names(a, out)
    elif isinstance(e, N.WindowExpr):
        out.add(e.name)
        for a in e.idx:
            if isinstance(a, N.Point):
                names(a.pt, out)
            else:
                names(a.lo, out)
                names(a.hi, out)


def names_block(stmts, out: set):
    for s in stmts:
        if isinstance(s, (N.Assign, N.Reduce)):
            out.add(s.name)
            for i in s.idx:
                names(i, out)
            names(s.rhs, out)
        elif isinstance(s, N.WindowStmt):
            names(s.rhs, out)
        elif isinstance(s, N.For):
            names(s.lo, out)
            names(s.hi, out)
            names_block(s.body, out)
        elif isinstance(s, N.If):
            names(s.cond, out)
            names_block(s.body, out)
            names_block(s.orelse, out)
        elif isinstance(s, N.With):
            names_block(s.body, out)
        elif isinstance(s, N.Call):
            for a in s.args:
                names(a, out)
        elif isinstance(s, (N.Arrive, N.Await)):
            refs = s.targets if isinstance(s, N.Arrive) else (s.target,)
            for r in refs:
                for a in r.idx:
                    if isinstance(a, N.Point):
                        names(a.pt, out)
        elif isinstance(s, N.BarrierAlloc):
            for d in s.dims:
                names(d.extent, out)


def mentions(e, name: str) -> bool:
    if isinstance(e, N.Read):
        return (not e.idx and e.name == name) or any(mentions(i, name) for i in e.idx)
    if isinstance(e, N.BinOp):
        return mentions(e.lhs, name) or mentions(e.rhs, name)
    if isinstance(e, N.UnOp):
        return mentions(e.arg, name)
    if isinstance(e, N.BuiltIn):
        return any(mentions(a, name) for a in e.args)
    return False


def register_index(stmts, it: str, regs: set) -> str | None:
    """The first register array (in ``regs`` or allocated in ``stmts``) whose index mentions
    the loop iterator ``it``, else None."""
    from exogpu_verify.analysis.walk import iter_stmts
    regs = set(regs)
    for _, s in iter_stmts(stmts):
        if isinstance(s, N.Alloc) and s.mem.space == "rmem":
            regs.add(s.name)
    hit = []

    def read(e):
        if isinstance(e, N.Read):
            if e.idx and e.name in regs and any(mentions(i, it) for i in e.idx):
                hit.append(e.name)
            for i in e.idx:
                read(i)
        elif isinstance(e, N.BinOp):
            read(e.lhs)
            read(e.rhs)
        elif isinstance(e, N.UnOp):
            read(e.arg)
        elif isinstance(e, N.BuiltIn):
            for a in e.args:
                read(a)

    for _, s in iter_stmts(stmts):
        if isinstance(s, (N.Assign, N.Reduce)):
            if s.name in regs and any(mentions(i, it) for i in s.idx):
                return s.name
            read(s.rhs)
        elif isinstance(s, N.Call):
            for a in s.args:
                if isinstance(a, N.WindowExpr) and a.name in regs:
                    for w in a.idx:
                        es = (w.pt,) if isinstance(w, N.Point) else (w.lo, w.hi)
                        if any(mentions(e, it) for e in es):
                            return a.name
                else:
                    read(a)
        elif isinstance(s, N.WindowStmt) and s.rhs.name in regs:
            for w in s.rhs.idx:
                es = (w.pt,) if isinstance(w, N.Point) else (w.lo, w.hi)
                if any(mentions(e, it) for e in es):
                    return s.rhs.name
        if hit:
            return hit[0]
    return hit[0] if hit else None


def has_sync(stmts) -> bool:
    from exogpu_verify.analysis.walk import iter_stmts
    return any(isinstance(s, (N.Fence, N.Arrive, N.Await, N.With, N.BarrierAlloc))
               or (isinstance(s, N.For) and not isinstance(s.mode, N.Seq))
               for _, s in iter_stmts(stmts))


def portable(x: str, sizes) -> bool:
    """A C++ expression built from integer literals and size parameters only."""
    import re
    for tok in re.findall(r"[A-Za-z_]\w*", x):
        if tok not in sizes:
            return False
    return True


def tested_wide_iters(stmts, block_dim: int, cluster_dim: int) -> bool:
    """Does an ``if`` test the iterator of a ``cuda_threads`` loop over warpgroups or wider
    units (so that different warpgroups take different branches)?"""
    from exogpu_verify.analysis.walk import iter_stmts

    wide = set()
    for _, s in iter_stmts(stmts):
        if isinstance(s, N.For) and isinstance(s.mode, N.CudaThreads):
            u = s.mode.unit
            n = u.threads(block_dim, cluster_dim)
            if n is not None and n >= 128:
                wide.add(s.iter)
    if not wide:
        return False
    for _, s in iter_stmts(stmts):
        if isinstance(s, N.If):
            used: set = set()
            names(s.cond, used)
            if used & wide:
                return True
    return False
