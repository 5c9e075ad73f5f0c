"""``stage_mem``: stage a window of a buffer in a new buffer around a block.

The window may name the buffer itself or a window statement over it, tensor maps included
(``tA = A[:, :] @ Sm90_tensorMap(...)``): containment is checked in the coordinates of the
underlying tensor, and the copy loops read and write through the named window, so a copy
from a tensor map is the exact shape ``replace`` turns into a TMA instruction. Accesses of
the block through window aliases of the buffer are staged too.

The load before the block is left out when the block overwrites every element it reads
before reading it and writes the whole window (so the store after it writes back only values
the block made); the store is left out when the block does not write. Both are decided by
the value-flow sets of ``flow``.
"""

from __future__ import annotations

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.memories import CudaRmem, DRAM
from . import deps as D
from . import flow as F
from .base import block_cursor, check_proc, finish, parse_expr, where_of
from .bufinfo import tensor_scalar, tensor_shape
from .buffers import _in_cuda_path, map_buffer
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import (add, all_names, cmp, conj, const, names_used, splice, sub, var,
                      window_composers)
from .record import primitive


def to_base(w: N.WindowExpr, aliases: dict) -> N.WindowExpr:
    """The window ``w`` of a (chain of) window statement(s) in the coordinates of the
    underlying tensor."""
    seen = set()
    while w.name in aliases and w.name not in seen:
        seen.add(w.name)
        rhs = aliases[w.name]
        _, fw = window_composers(rhs)
        w = N.WindowExpr(rhs.name, fw(w.idx), w.type, w.srcinfo)
    return w


def inline_aliases(stmts, base: str, aliases: dict):
    """``stmts`` with every access through a window alias of ``base`` written as an access
    of ``base`` itself (the same elements)."""
    changed = True
    while changed:
        changed = False
        used = names_used(stmts)
        for al, rhs in aliases.items():
            if al in used and _base(al, aliases) == base:
                fp, fw = window_composers(rhs)
                stmts = map_buffer(stmts, al, fp, fw, new_name=rhs.name)
                changed = True
    return stmts


def _base(n, aliases):
    seen = set()
    while n in aliases and n not in seen:
        seen.add(n)
        n = aliases[n].name
    return n


@primitive
def stage_mem(proc, block_cursor_, win_expr, new_buf_name: str, accum: bool = False,
              mem=None):
    """Stage the window ``win_expr`` of a buffer (or of a window statement over one) into a
    new buffer around a block: load before (unless the block overwrites everything it
    reads and the whole window), store after (if the block writes), or with ``accum=True``
    zero-initialize, reduce, and add back (reassociation: recorded unsafe). Every access of
    the block must provably lie inside the window and the window inside the buffer (isl).
    ``mem`` defaults to DRAM at CPU scope and CudaRmem in a kernel."""
    check_proc(proc)
    b = block_cursor(proc, block_cursor_)
    from .loops import _check_fresh

    _check_fresh(proc, [new_buf_name], b.paths()[0])
    where = where_of(b)
    w = parse_expr(proc, where, win_expr, kind="window")
    if not isinstance(w, N.WindowExpr):
        raise SchedulingError(f"stage_mem: {win_expr!r} is not a window such as "
                              "'A[i, 0:64]'", proc, b.paths())
    aliases = D.window_aliases(proc)
    wb = to_base(w, aliases)
    name = wb.name
    stmts, paths = b.stmts(), b.paths()
    vs, cs = D.context(proc, paths[0])
    acc = D.collect(proc, stmts, paths)
    mine = [x for x in acc if x.buf == name]
    shape = tensor_shape(proc, name)
    _check_window_inside(proc, vs, cs, w, wb, shape, paths)
    _check_accesses_inside(proc, vs, cs, mine, wb)
    kinds = {x.kind for x in mine}
    if accum and kinds - {"RED"}:
        raise SchedulingError("stage_mem(accum=True): the block must only reduce (+=) into "
                              "the window", proc, paths)
    ivs = [x for x in wb.idx if isinstance(x, N.Interval)]
    new_shape = [sub(x.hi, x.lo) for x in ivs]
    in_cuda = _in_cuda_path(proc, paths[0])
    if mem is None:
        mem = CudaRmem if in_cuda else DRAM
    if in_cuda and any(const_value(e) is None for e in new_shape):
        raise SchedulingError("stage_mem: a device buffer needs a constant-size window", proc,
                              paths)
    new_shape = [const(const_value(e)) if const_value(e) is not None else e for e in new_shape]
    scalar = tensor_scalar(proc, name)

    def fp(idx):
        return tuple(sub(e, x.lo) for x, e in zip(wb.idx, idx) if isinstance(x, N.Interval))

    def fwin(widx):
        out = []
        for x, e in zip(wb.idx, widx):
            if isinstance(x, N.Interval):
                out.append(N.Point(sub(e.pt, x.lo)) if isinstance(e, N.Point) else
                           N.Interval(sub(e.lo, x.lo), sub(e.hi, x.lo)))
        return tuple(out)

    body = inline_aliases(tuple(stmts), name, aliases)
    body = map_buffer(body, name, fp, fwin, new_name=new_buf_name)
    iters = _fresh_iters(proc, stmts, new_buf_name, len(ivs))

    def copy_nest(make):
        src_idx, k = [], 0
        for x in w.idx:  # in the coordinates of the window as named
            if isinstance(x, N.Point):
                src_idx.append(x.pt)
            else:
                src_idx.append(add(x.lo, var(iters[k])))
                k += 1
        stmt = make(tuple(src_idx), tuple(var(n) for n in iters))
        for n, ext in reversed(list(zip(iters, new_shape))):
            stmt = N.For(n, const(0), ext, N.Seq(), (stmt,))
        return stmt

    alloc = N.Alloc(new_buf_name, N.TensorType(scalar, tuple(new_shape)), mem)
    pre, post = [alloc], []
    unsafe = False
    notes = [f"every access to '{name}' in the block lies in {expr_str(wb)}, which lies "
             f"inside '{name}' (isl)"]
    src = w.name
    if accum:
        zero = N.Const(0.0, scalar)
        pre.append(copy_nest(lambda s_, d_: N.Assign(new_buf_name, d_, zero)))
        post.append(copy_nest(lambda s_, d_: N.Reduce(src, s_, N.Read(new_buf_name, d_,
                                                                       scalar))))
        unsafe = True
        notes.append("accum: the block's reductions are summed separately and added back "
                     "(reassociation: exact in real arithmetic, floating-point rounding may "
                     "differ)")
    else:
        writes = [x for x in mine if x.kind in ("W", "RED")]
        reads = [x for x in mine if x.kind in ("R", "RED")]
        start = len(b._parent)
        no_load = bool(writes) and F.all_covered(proc, vs, cs, reads, writes, start) and \
            D.writes_all(proc, vs, cs, writes, wb, None)
        if kinds and not no_load:
            pre.append(copy_nest(lambda s_, d_: N.Assign(new_buf_name, d_,
                                                         N.Read(src, s_, scalar))))
        elif no_load:
            notes.append("no load: the block writes every element of the window and "
                         "overwrites each element before reading it (isl)")
        if kinds & {"W", "RED"}:
            post.append(copy_nest(lambda s_, d_: N.Assign(src, s_,
                                                          N.Read(new_buf_name, d_, scalar))))
        notes.append("load/store copies are exact (same precision)")
    parent, field, lo, hi = b._parent, b._field, b._lo, b._hi
    p2 = splice(proc, parent, field, lo, hi, pre + list(body) + post)
    npre = len(pre)

    def inner(k, rest):
        return parent + ((field, k + npre),) + rest

    return finish(proc, p2, "stage_mem", [b, win_expr, new_buf_name, accum], "; ".join(notes),
                  fwd_splice(parent, field, lo, hi, hi - lo + npre + len(post), inner),
                  unsafe=unsafe)


def _check_window_inside(proc, vs, cs, w, wb, shape, paths):
    for d, (x, ext) in enumerate(zip(wb.idx, shape)):
        if isinstance(x, N.Point):
            ok = D.prove(proc, vs, cs, conj(cmp("<=", const(0), x.pt), cmp("<", x.pt, ext)))
        else:
            ok = D.prove(proc, vs, cs, conj(cmp("<=", const(0), x.lo),
                                            conj(cmp("<=", x.lo, x.hi), cmp("<=", x.hi, ext))))
        if not ok:
            via = f" (through '{w.name}')" if w.name != wb.name else ""
            raise SchedulingError(f"stage_mem: cannot prove dimension {d} of the window "
                                  f"{expr_str(wb)}{via} lies inside '{wb.name}'", proc, paths)


def _check_accesses_inside(proc, vs, cs, mine, wb):
    for x in mine:
        for d, (ix, wa) in enumerate(zip(x.idx, wb.idx)):
            if isinstance(wa, N.Point):
                lo, hi = wa.pt, add(wa.pt, const(1))
            else:
                lo, hi = wa.lo, wa.hi
            if ix[0] == "pt":
                cond = conj(cmp("<=", lo, ix[1]), cmp("<", ix[1], hi))
            else:
                cond = conj(cmp("<=", lo, ix[1]), cmp("<=", ix[2], hi))
            if not D.prove(proc, vs + x.vars, cs + x.cons, cond):
                raise SchedulingError(f"stage_mem: access {x.text} may fall outside the window "
                                      f"{expr_str(wb)} (dimension {d})", proc, [x.path])


def _fresh_iters(proc, stmts, new_buf_name, n):
    taken = names_used(stmts) | {p.name for p in proc.params} | all_names(proc) | \
        {new_buf_name}
    iters = []
    for k in range(n):
        nm = f"i{k}"
        j = 0
        while nm in taken:
            nm = f"i{k}_{j}"
            j += 1
        taken.add(nm)
        iters.append(nm)
    return iters
