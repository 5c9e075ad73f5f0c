"""Loop rewrites: divide, reorder, fission, fuse, cut, shift, unroll, add, remove.

Index arithmetic is generated exactly (no tails are dropped); reorderings are legal iff no
dependence is reversed, decided with isl over the statements' iteration domains.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.printer import expr_str
from ..ir import nodes as N
from ..ir.affine import const_value
from . import deps as D
from .base import (block_cursor, check_proc, finish, gap_cursor, loop_cursor, parse_expr,
                   where_of)
from .cursors import fwd_splice
from .errors import SchedulingError
from .irtools import (add, all_names, block_of, bound_here, cmp, conj, const, div, mod, mul,
                      names_used, node_at, rename_var, splice, sub, subst_stmts, var)
from .record import primitive


def _split_modes(proc, s, q, path):
    """Loop modes of the outer and inner loop when ``s`` is divided by ``q``: a sequential
    loop gives two sequential loops, a task loop two task loops, and a thread loop over
    tiles of unit ``U`` an outer thread loop over tiles of ``q * U`` and an inner one over
    tiles of ``U`` (iteration ``q * io + ii`` keeps its threads)."""
    m = s.mode
    if isinstance(m, N.Seq):
        return N.Seq(), N.Seq(m.pragma_unroll)
    if isinstance(m, N.CudaTasks):
        return m, m
    try:
        outer = m.unit.scaled(q)
    except TypeError as e:
        raise SchedulingError(f"divide_loop: cannot divide a cuda_threads loop over "
                              f"{m.unit} tiles: {e}", proc, [path],
                              dependence="set_loop_mode(..., Seq()) first, divide, then set "
                              "the modes of the two loops") from None
    return N.CudaThreads(outer), m


def _check_fresh(p, names, path=()):
    taken = all_names(p)
    for n in names:
        if not isinstance(n, str) or not n.isidentifier():
            raise SchedulingError(f"{n!r} is not a valid variable name", p)
        if n in taken:
            raise SchedulingError(f"name '{n}' is already used in {p.name}; pick a fresh one",
                                  p, [path] if path else [])


def _reduction_note(reds) -> str:
    return ("; reassociation: reductions " + ", ".join(
        sorted({f"{c.first.text} += / {c.second.text} +=" for c in reds})) +
        " change order (exact in real arithmetic; floating-point rounding may differ)")


# ---------------------------------------------------------------- divide_loop


@primitive
def divide_loop(proc, loop_cursor_, div_const: int, new_iters, tail: str = "guard",
                perfect: bool = False):
    """Split ``for i in seq(lo, hi)`` into ``for io: for ii in seq(0, div_const)`` with
    ``i = lo + div_const * io + ii``; ``tail`` in guard | cut | cut_and_guard | perfect."""
    check_proc(proc)
    c = loop_cursor(proc, loop_cursor_)
    s = c.node()
    path = c.path()
    if not isinstance(div_const, int) or isinstance(div_const, bool) or div_const < 2:
        raise SchedulingError(f"divide_loop: div_const must be an int > 1, not {div_const!r}",
                              proc, [path])
    if tail not in ("guard", "cut", "cut_and_guard", "perfect"):
        raise SchedulingError(f"divide_loop: unknown tail strategy {tail!r} (guard, cut, "
                              "cut_and_guard, perfect)", proc, [path])
    if tail == "perfect":
        perfect = True
    if len(new_iters) != 2:
        raise SchedulingError("divide_loop: new_iters is a pair of names [outer, inner]", proc)
    io, ii = new_iters
    _check_fresh(proc, [io, ii], path)
    if io == ii:
        raise SchedulingError("divide_loop: the two new iterators need distinct names", proc)
    q = div_const
    n = sub(s.hi, s.lo)
    vs, cs = D.context(proc, path)
    mode, imode = _split_modes(proc, s, q, path)
    idx = add(s.lo, add(mul(q, var(io)), var(ii)))
    main_body = subst_stmts(s.body, {s.iter: idx})
    checked = f"exact index map {s.iter} = {expr_str(idx)}"
    if not isinstance(s.mode, N.Seq):
        checked += f"; loop mode {s.mode} kept on both loops (annotation)"
    fwd_inner_depth = 0
    if perfect:
        if not D.prove(proc, vs, cs, cmp("==", mod(n, q), const(0))):
            raise SchedulingError(
                f"divide_loop(perfect): cannot prove ({expr_str(n)}) % {q} == 0 from the "
                f"asserts", proc, [path],
                dependence="add an assert such as `assert N % 64 == 0`, or use tail='guard'")
        outer = N.For(io, const(0), div(n, q), mode,
                      (N.For(ii, const(0), const(q), imode, main_body, s.srcinfo),), s.srcinfo)
        new = [outer]
        checked += f"; proved ({expr_str(n)}) % {q} == 0 for all sizes satisfying the asserts"
    elif tail == "guard":
        guard = N.If(cmp("<", add(mul(q, var(io)), var(ii)), n), main_body, (), s.srcinfo)
        outer = N.For(io, const(0), div(add(n, const(q - 1)), q), mode,
                      (N.For(ii, const(0), const(q), imode, (guard,), s.srcinfo),), s.srcinfo)
        new = [outer]
        fwd_inner_depth = 1
        checked += f"; guard {q}*{io} + {ii} < {expr_str(n)} covers exactly the old range"
    else:
        # With hi < lo the loop runs nothing, but floor division and modulo make the cut
        # tail run (hi - lo) % q > 0 iterations below lo: the tails need lo <= hi.
        if not D.prove(proc, vs, cs, cmp("<=", s.lo, s.hi)):
            raise SchedulingError(
                f"divide_loop(tail={tail!r}): cannot prove {expr_str(s.lo)} <= "
                f"{expr_str(s.hi)}; when the loop is empty the tail loop would still run "
                f"({expr_str(n)}) % {q} iterations", proc, [path],
                dependence="use tail='guard', or add an assert that keeps the loop's range "
                "non-negative")
        outer = N.For(io, const(0), div(n, q), mode,
                      (N.For(ii, const(0), const(q), imode, main_body, s.srcinfo),), s.srcinfo)
        rem = mod(n, q)
        tail_idx = add(s.lo, add(mul(q, div(n, q)), var(ii)))
        tail_body = subst_stmts(s.body, {s.iter: tail_idx})
        if tail == "cut":
            tail_stmt = N.For(ii, const(0), rem, imode, tail_body, s.srcinfo)
        else:
            tail_stmt = N.If(cmp(">", rem, const(0)), (N.For(
                ii, const(0), const(q), imode,
                (N.If(cmp("<", var(ii), rem), tail_body, (), s.srcinfo),), s.srcinfo),), (),
                s.srcinfo)
        new = [outer, tail_stmt]
        checked += f"; main loop covers {q}*({expr_str(n)} / {q}) iterations, the tail the " \
                   f"remaining {expr_str(rem)}"
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, new)

    def inner(k, rest):
        base = parent + ((field, k),)
        if not rest:
            return base
        return base + (("body", 0),) + (("body", 0),) * fwd_inner_depth + rest

    fwd = fwd_splice(parent, field, i, i + 1, len(new), inner)
    return finish(proc, p2, "divide_loop",
                  [c, q, list(new_iters), "perfect" if perfect else tail], checked, fwd)


# ---------------------------------------------------------------- reorder_loops


@primitive
def reorder_loops(proc, nested_loops):
    """Swap a loop with the single loop directly inside it; legal iff no dependence
    between instances ``(i, j)`` and ``(i', j')`` with ``i < i'`` and ``j > j'``."""
    check_proc(proc)
    if isinstance(nested_loops, str) and len(nested_loops.split("#")[0].split()) == 2:
        names = nested_loops.split("#")[0].split()
        nth = nested_loops.split("#")[1].strip() if "#" in nested_loops else None
        c = loop_cursor(proc, names[0] + (f" #{nth}" if nth else ""))
        inner_s = c.node().body[0] if len(c.node().body) == 1 else None
        if not isinstance(inner_s, N.For) or inner_s.iter != names[1]:
            raise SchedulingError(f"reorder_loops: loop '{names[1]}' is not directly nested in "
                                  f"'{names[0]}'", proc, [c.path()])
    else:
        c = loop_cursor(proc, nested_loops)
    outer = c.node()
    path = c.path()
    if len(outer.body) != 1 or not isinstance(outer.body[0], N.For):
        raise SchedulingError("reorder_loops: the loop body must be exactly one loop (use "
                              "fission first)", proc, [path])
    inner = outer.body[0]
    used = set()
    for e in (inner.lo, inner.hi):
        used |= {x.name for x in _reads(e)}
    if outer.iter in used:
        raise SchedulingError(f"reorder_loops: the bounds of '{inner.iter}' depend on "
                              f"'{outer.iter}' (not a rectangular nest)", proc,
                              [path, path + (("body", 0),)])
    vs, cs = D.context(proc, path)
    acc = D.collect(proc, inner.body, [path + (("body", 0), ("body", k))
                                       for k in range(len(inner.body))],
                    extra_vars=[(outer.iter, outer.lo, outer.hi), (inner.iter, inner.lo,
                                                                   inner.hi)])
    acc = D.private(acc, inner.body)
    i, j = outer.iter, inner.iter

    def order(ra, rb):
        return [f"{ra[i]} < {rb[i]}", f"{ra[j]} > {rb[j]}"]

    hard, reds = D.find_conflicts(proc, vs, cs, acc, acc, order)
    if hard:
        x = hard[0]
        raise SchedulingError(f"reorder_loops: swapping '{i}' and '{j}' reverses a dependence",
                              proc, sorted({x.first.path, x.second.path}),
                              dependence=x.describe())
    new_inner = replace(outer, body=inner.body)
    new_outer = replace(inner, body=(new_inner,))
    note = ""
    if isinstance(outer.mode, N.CudaThreads) and isinstance(inner.mode, N.CudaThreads):
        mo, mi, note = _swapped_thread_units(proc, outer, inner, path)
        new_outer, new_inner = replace(new_outer, mode=mo), replace(new_inner, mode=mi)
        new_outer = replace(new_outer, body=(new_inner,))
    parent, (field, k) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, k, k + 1, [new_outer])

    def fwd(pth):
        n = len(path)
        if pth[:n] != path:
            return pth
        if len(pth) == n:
            return path + (("body", 0),)
        if len(pth) == n + 1:
            return path
        return pth

    checked = (f"dependence analysis (isl): no conflicting accesses between instances "
               f"({i}, {j}) and ({i}', {j}') with {i} < {i}' and {j} > {j}'")
    unsafe = bool(reds)
    if reds:
        checked += _reduction_note(reds)
    return finish(proc, p2, "reorder_loops", [c], checked + note, fwd, unsafe=unsafe)


def _swapped_thread_units(proc, outer, inner, path):
    """Units for two swapped ``cuda_threads`` loops such that every iteration keeps its
    thread: ``for i in cuda_threads(0, n1, unit=n2 * cuda_thread): for j in
    cuda_threads(0, n2, unit=cuda_thread)`` runs ``(i, j)`` on thread ``n2 * i + j``; swapped,
    ``j`` runs on ``cuda_threads_strided(n1, n2)`` and ``i`` on ``cuda_thread``."""
    from ..ir.units import cuda_thread, cuda_threads_strided

    n1, n2 = const_value(sub(outer.hi, outer.lo)), const_value(sub(inner.hi, inner.lo))
    u1, u2 = outer.mode.unit, inner.mode.unit
    if n1 is not None and n2 is not None and u2 == cuda_thread and \
            u1 == cuda_thread.scaled(n2):
        note = (f"; thread loops: '{inner.iter}' now over cuda_threads_strided({n1}, {n2}) "
                f"and '{outer.iter}' over cuda_thread, so every iteration keeps its thread")
        return N.CudaThreads(cuda_threads_strided(n1, n2)), N.CudaThreads(cuda_thread), note
    raise SchedulingError(
        f"reorder_loops: swapping the cuda_threads loops '{outer.iter}' (unit {u1}) and "
        f"'{inner.iter}' (unit {u2}) would change which threads run which iterations, and no "
        "pair of units keeps the mapping (only a loop over n2 * cuda_thread around one over "
        "n2 cuda_thread tiles can be swapped)", proc, [path, path + (("body", 0),)],
        dependence="make both loops seq (set_loop_mode(..., Seq())), reorder, then give the "
        "swapped loops the units you want")


def _reads(e):
    from .irtools import expr_walk

    return [x for x in expr_walk(e) if isinstance(x, N.Read) and not x.idx]


# ---------------------------------------------------------------- fission / fuse


@primitive
def fission(proc, gap_cursor_, n_lifts: int = 1):
    """Split the loop (or if / CudaWarps block) around a gap into two; legal iff no
    statement after the gap conflicts with a statement before it at a later iteration."""
    check_proc(proc)
    g = gap_cursor(proc, gap_cursor_)
    parent, field, idx = g.location()
    p = proc
    notes = []
    fwds = []
    unsafe = False
    for _ in range(n_lifts):
        if not parent:
            raise SchedulingError("fission: the gap is not inside a loop or if", p)
        s = node_at(p, parent)
        blk = block_of(s, field)
        if idx <= 0 or idx >= len(blk):
            raise SchedulingError("fission: the gap must have statements on both sides", p,
                                  [parent])
        first, second = blk[:idx], blk[idx:]
        leak = bound_here(first) & names_used(second)
        if leak:
            raise SchedulingError(f"fission: {sorted(leak)} allocated before the gap and used "
                                  f"after it; lift_alloc first", p, [parent])
        if isinstance(s, N.For):
            vs, cs = D.context(p, parent)
            ev = [(s.iter, s.lo, s.hi)]
            A = D.private(D.collect(p, second, [parent + ((field, idx + k),)
                                                for k in range(len(second))], extra_vars=ev),
                          second)
            B = D.private(D.collect(p, first, [parent + ((field, k),)
                                               for k in range(len(first))], extra_vars=ev),
                          first)
            it = s.iter
            hard, reds = D.find_conflicts(p, vs, cs, A, B,
                                          lambda ra, rb: [f"{ra[it]} < {rb[it]}"])
            if hard:
                x = hard[0]
                raise SchedulingError(
                    f"fission of loop '{it}' reverses a dependence: a statement after the "
                    f"gap at an earlier iteration conflicts with one before it at a later "
                    f"iteration", p, sorted({x.first.path, x.second.path}),
                    dependence=x.describe())
            notes.append(f"loop '{it}': no access after the gap at iteration {it} conflicts "
                         f"with an access before it at an iteration > {it} (isl)")
            if reds:
                unsafe = True
                notes.append(_reduction_note(reds).lstrip("; "))
            a, b = replace(s, body=first), replace(s, body=second)
        elif isinstance(s, N.If):
            if s.orelse:
                raise SchedulingError("fission: cannot split an if with an else branch", p,
                                      [parent])
            a, b = replace(s, body=first), replace(s, body=second)
            notes.append("if: control conditions cannot be changed by data writes")
        elif isinstance(s, N.With) and isinstance(s.ctx, N.CudaWarps):
            a, b = replace(s, body=first), replace(s, body=second)
            notes.append("CudaWarps: annotation, sequential meaning unchanged")
        else:
            raise SchedulingError(f"fission: cannot split a {type(s).__name__}", p, [parent])
        gp, (gf, gi) = parent[:-1], parent[-1]
        p = splice(p, gp, gf, gi, gi + 1, [a, b])
        cut, par = idx, parent

        def inner(k, rest, cut=cut, par=par, gp=gp, gf=gf):
            if not rest:
                return par
            (f2, j), tail = rest[0], rest[1:]
            if j < cut:
                return par + rest
            return gp + ((gf, par[-1][1] + 1),) + ((f2, j - cut),) + tail

        fwds.append(fwd_splice(gp, gf, gi, gi + 1, 2, inner))
        parent, field, idx = gp, gf, gi + 1
    from .cursors import fwd_compose

    return finish(proc, p, "fission", [g, n_lifts], "; ".join(notes), fwd_compose(*fwds),
                  unsafe=unsafe)


@primitive
def fuse(proc, stmt1, stmt2, unsafe_disable_check: bool = False):
    """Fuse two consecutive loops with equal bounds (or ifs with equal conditions)."""
    check_proc(proc)
    from .base import stmt_cursor

    c1, c2 = stmt_cursor(proc, stmt1), stmt_cursor(proc, stmt2)
    p1, p2_ = c1.path(), c2.path()
    if p1[:-1] != p2_[:-1] or p1[-1][0] != p2_[-1][0] or p2_[-1][1] != p1[-1][1] + 1:
        raise SchedulingError("fuse: the two statements must be consecutive in one block",
                              proc, [p1, p2_])
    s1, s2 = c1.node(), c2.node()
    parent, (field, i) = p1[:-1], p1[-1]
    unsafe = False
    if isinstance(s1, N.For) and isinstance(s2, N.For):
        vs, cs = D.context(proc, p1)
        same = D.prove(proc, vs, cs, D_and(cmp("==", s1.lo, s2.lo), cmp("==", s1.hi, s2.hi)))
        if not same:
            raise SchedulingError(f"fuse: cannot prove the loops have equal bounds "
                                  f"({expr_str(s1.lo)}..{expr_str(s1.hi)} vs "
                                  f"{expr_str(s2.lo)}..{expr_str(s2.hi)})", proc, [p1, p2_])
        body2 = s2.body
        if s2.iter != s1.iter:
            if s1.iter in names_used(s2.body):
                raise SchedulingError(f"fuse: '{s1.iter}' is already used inside the second "
                                      "loop", proc, [p2_])
            body2 = rename_var(s2.body, s2.iter, s1.iter)
        clash = bound_here(s1.body) & bound_here(body2)
        if clash:
            raise SchedulingError(f"fuse: both loops allocate {sorted(clash)}", proc, [p1, p2_])
        it = s1.iter
        A = D.private(D.collect(proc, s1.body, [p1 + (("body", k),)
                                                for k in range(len(s1.body))],
                                extra_vars=[(it, s1.lo, s1.hi)]), s1.body)
        B = D.private(D.collect(proc, body2, [p2_ + (("body", k),) for k in range(len(body2))],
                                extra_vars=[(it, s1.lo, s1.hi)]), body2)
        checked = "proved equal bounds"
        if not unsafe_disable_check:
            hard, reds = D.find_conflicts(proc, vs, cs, A, B,
                                          lambda ra, rb: [f"{rb[it]} < {ra[it]}"])
            if hard:
                x = hard[0]
                raise SchedulingError("fuse reverses a dependence: the second loop at an "
                                      "earlier iteration conflicts with the first loop at a "
                                      "later one", proc, sorted({x.first.path, x.second.path}),
                                      dependence=x.describe())
            checked += ("; no access of the second loop at iteration j conflicts with the "
                        "first loop at an iteration > j (isl)")
            if reds:
                unsafe = True
                checked += _reduction_note(reds)
        else:
            unsafe = True
            checked += "; UNCHECKED: dependence check disabled by the user"
        new = replace(s1, body=s1.body + body2)
    elif isinstance(s1, N.If) and isinstance(s2, N.If):
        if s1.cond != s2.cond or s1.orelse or s2.orelse:
            raise SchedulingError("fuse: the ifs need identical conditions and no else", proc,
                                  [p1, p2_])
        new = replace(s1, body=s1.body + s2.body)
        checked = "identical control conditions (control values are never written)"
    else:
        raise SchedulingError("fuse: expected two loops or two ifs", proc, [p1, p2_])
    p2 = splice(proc, parent, field, i, i + 2, [new])
    n1 = len(s1.body)

    def inner(k, rest):
        base = parent + ((field, i),)
        if k == i:
            return base + rest
        if not rest:
            return None
        (f2, j), tail = rest[0], rest[1:]
        return base + ((f2, j + n1),) + tail

    return finish(proc, p2, "fuse", [c1, c2], checked,
                  fwd_splice(parent, field, i, i + 2, 1, inner), unsafe=unsafe)


def D_and(a, b):
    from .irtools import conj

    return conj(a, b)


# ---------------------------------------------------------------- cut, shift, unroll


@primitive
def cut_loop(proc, loop_cursor_, cut_point):
    """``for i in seq(lo, hi)`` -> ``for i in seq(lo, cut)`` ; ``for i in seq(cut, hi)``."""
    check_proc(proc)
    c = loop_cursor(proc, loop_cursor_)
    s, path = c.node(), c.path()
    cut = parse_expr(proc, where_of(c), cut_point)
    vs, cs = D.context(proc, path)
    if not D.prove(proc, vs, cs, D_and(cmp("<=", s.lo, cut), cmp("<=", cut, s.hi))):
        raise SchedulingError(f"cut_loop: cannot prove {expr_str(s.lo)} <= {expr_str(cut)} <= "
                              f"{expr_str(s.hi)}", proc, [path])
    a, b = replace(s, hi=cut), replace(s, lo=cut)
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, [a, b])
    return finish(proc, p2, "cut_loop", [c, cut_point],
                  f"proved {expr_str(s.lo)} <= {expr_str(cut)} <= {expr_str(s.hi)}; iteration "
                  "order unchanged",
                  fwd_splice(parent, field, i, i + 1, 2, lambda k, rest: parent + ((field, k),)
                             + rest))


@primitive
def shift_loop(proc, loop_cursor_, new_lo):
    """``for i in seq(lo, hi): s`` -> ``for i in seq(new_lo, new_lo + hi - lo): s[i -> i + lo
    - new_lo]``; ``new_lo`` must be provably non-negative (as in Exo)."""
    check_proc(proc)
    c = loop_cursor(proc, loop_cursor_)
    s, path = c.node(), c.path()
    nl = parse_expr(proc, where_of(c), new_lo)
    vs, cs = D.context(proc, path)
    if not D.prove(proc, vs, cs, cmp(">=", nl, const(0))):
        raise SchedulingError(f"shift_loop: cannot prove {expr_str(nl)} >= 0", proc, [path])
    body = subst_stmts(s.body, {s.iter: add(var(s.iter), sub(s.lo, nl))})
    new = replace(s, lo=nl, hi=add(nl, sub(s.hi, s.lo)), body=body)
    p2 = splice(proc, path[:-1], path[-1][0], path[-1][1], path[-1][1] + 1, [new])
    return finish(proc, p2, "shift_loop", [c, new_lo],
                  f"exact index map {s.iter} -> {s.iter} + ({expr_str(sub(s.lo, nl))})")


@primitive
def unroll_loop(proc, loop_cursor_):
    """Replace a loop with a constant trip count by copies of its body."""
    check_proc(proc)
    c = loop_cursor(proc, loop_cursor_)
    s, path = c.node(), c.path()
    n = const_value(sub(s.hi, s.lo))
    lo = s.lo
    if n is None:
        raise SchedulingError("unroll_loop: the trip count must be a constant", proc, [path])
    if bound_here(s.body) and n > 1:
        raise SchedulingError(f"unroll_loop: the body allocates {sorted(bound_here(s.body))}; "
                              "lift_alloc first", proc, [path])
    new = []
    for k in range(n):
        new += list(subst_stmts(s.body, {s.iter: add(lo, const(k))}))
    if not new:
        new = [N.Pass(s.srcinfo)]
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, new)
    m = len(s.body)

    def inner(k, rest):
        if not rest:
            return None
        return parent + ((field, i + rest[0][1]),) + rest[1:]

    return finish(proc, p2, "unroll_loop", [c], f"{n} copies with {s.iter} = "
                  f"{expr_str(lo)} + 0..{n - 1}, in order",
                  fwd_splice(parent, field, i, i + 1, max(len(new), 1), inner if m else None))


@primitive
def add_loop(proc, block_cursor_, iter_name: str, hi_expr, guard: bool = False,
             unsafe_disable_check: bool = False):
    """Wrap a block in ``for iter_name in seq(0, hi_expr)``; the block must be idempotent
    (nothing it writes is read or reduced by it), or ``guard=True`` runs it at iteration 0
    (``if iter_name == 0:``), or ``guard=e`` (an expression of the block's scope, provably in
    ``[0, hi_expr)`` there) at iteration ``e`` (``if iter_name == e:``; ping-pong consumers:
    ``add_loop(p, tile, "wg", 2, guard="j % 2")`` gives tile ``j`` to warpgroup ``j % 2``);
    a loop of one iteration (``hi_expr`` 1: a scope for allocations) needs neither."""
    check_proc(proc)
    b = block_cursor(proc, block_cursor_)
    _check_fresh(proc, [iter_name])
    hi = parse_expr(proc, where_of(b), hi_expr)
    parent, field, lo_i, hi_i = b._parent, b._field, b._lo, b._hi
    stmts = b.stmts()
    vs, cs = D.context(proc, parent + ((field, lo_i),))
    if not D.prove(proc, vs, cs, cmp(">=", hi, const(1))):
        raise SchedulingError(f"add_loop: cannot prove {expr_str(hi)} >= 1 (the block must "
                              "still run)", proc, b.paths())
    unsafe = False
    if guard is not False and guard is not True and guard is not None:
        at = parse_expr(proc, where_of(b), guard)  # iter_name is fresh: not in the guard
        inside = conj(cmp(">=", at, const(0)), cmp("<", at, hi))
        if not D.prove(proc, vs, cs, inside):
            raise SchedulingError(f"add_loop: cannot prove 0 <= {expr_str(at)} < "
                                  f"{expr_str(hi)} where the block runs (the guarded block "
                                  "must run exactly once)", proc, b.paths())
        body = (N.If(cmp("==", var(iter_name), at), tuple(stmts)),)
        checked = (f"guard {iter_name} == {expr_str(at)}, 0 <= {expr_str(at)} < "
                   f"{expr_str(hi)} (isl): the block runs exactly once")
    elif guard:
        body = (N.If(cmp("==", var(iter_name), const(0)), tuple(stmts)),)
        checked = f"guard {iter_name} == 0: the block runs exactly once"
    elif D.prove(proc, vs, cs, cmp("==", hi, const(1))):
        body = tuple(stmts)
        checked = f"{expr_str(hi)} == 1: the block runs exactly once (a scope)"
    else:
        body = tuple(stmts)
        acc = D.collect(proc, stmts, b.paths())
        writes = [a for a in acc if a.kind in ("W", "RED")]
        if any(a.kind == "RED" for a in acc) and not unsafe_disable_check:
            raise SchedulingError("add_loop: the block reduces (+=), which is not idempotent; "
                                  "use guard=True", proc, b.paths())
        reads = [a for a in acc if a.kind == "R"]
        if not unsafe_disable_check:
            hard, _ = D.find_conflicts(proc, vs, cs, writes, reads, lambda ra, rb: [])
            if hard:
                x = hard[0]
                raise SchedulingError("add_loop: the block is not idempotent (it reads what it "
                                      "writes); use guard=True", proc, b.paths(),
                                      dependence=x.describe())
            checked = "idempotent block: no element it writes is read by it (isl)"
        else:
            unsafe = True
            checked = "UNCHECKED: idempotence check disabled by the user"
    loop = N.For(iter_name, const(0), hi, N.Seq(), body)
    p2 = splice(proc, parent, field, lo_i, hi_i, [loop])
    depth = 1 if guard is not False and guard is not None else 0

    def inner(k, rest):
        return parent + ((field, lo_i),) + (("body", 0),) * depth + (("body", k - lo_i),) + rest

    return finish(proc, p2, "add_loop", [b, iter_name, hi_expr, guard], checked,
                  fwd_splice(parent, field, lo_i, hi_i, 1, inner), unsafe=unsafe)


@primitive
def remove_loop(proc, loop_cursor_):
    """Remove a loop whose body is idempotent and does not use the iterator, if it provably
    runs at least once."""
    check_proc(proc)
    c = loop_cursor(proc, loop_cursor_)
    s, path = c.node(), c.path()
    if s.iter in names_used(s.body):
        raise SchedulingError(f"remove_loop: the body uses '{s.iter}'", proc, [path])
    vs, cs = D.context(proc, path)
    if not D.prove(proc, vs, cs, cmp("<", s.lo, s.hi)):
        raise SchedulingError("remove_loop: cannot prove the loop runs at least once", proc,
                              [path])
    if D.prove(proc, vs, cs, cmp("==", sub(s.hi, s.lo), const(1))):
        parent, (field, i) = path[:-1], path[-1]
        p2 = splice(proc, parent, field, i, i + 1, s.body)
        return finish(proc, p2, "remove_loop", [c], "the loop runs exactly once (isl)",
                      fwd_splice(parent, field, i, i + 1, len(s.body),
                                 lambda k, rest: parent + ((field, i + rest[0][1]),) +
                                 rest[1:] if rest else None))
    acc = D.collect(proc, s.body, [path + (("body", k),) for k in range(len(s.body))])
    if any(a.kind == "RED" for a in acc):
        raise SchedulingError("remove_loop: the body reduces (+=); not idempotent", proc, [path])
    hard, _ = D.find_conflicts(proc, vs, cs, [a for a in acc if a.kind == "W"],
                               [a for a in acc if a.kind == "R"], lambda ra, rb: [])
    if hard:
        raise SchedulingError("remove_loop: the body reads what it writes; not idempotent",
                              proc, [path], dependence=hard[0].describe())
    parent, (field, i) = path[:-1], path[-1]
    p2 = splice(proc, parent, field, i, i + 1, s.body)

    def inner(k, rest):
        if not rest:
            return None
        return parent + ((field, i + rest[0][1]),) + rest[1:]

    return finish(proc, p2, "remove_loop", [c], "idempotent body independent of the iterator; "
                  "loop provably runs at least once (isl)",
                  fwd_splice(parent, field, i, i + 1, len(s.body), inner))


__all__ = ["divide_loop", "reorder_loops", "fission", "fuse", "cut_loop", "shift_loop",
           "unroll_loop", "add_loop", "remove_loop"]
