"""Choosing the loop of a nest that the interpreter runs as one numpy vector.

``plan_vectorization(body, roots)`` picks at most one loop per nest whose iterations provably
touch disjoint elements of every array they write, so that running the body once with the
loop variable bound to ``np.arange(lo, hi)`` performs, for each element, exactly the scalar
operations of the sequential program in the same order (bitwise-identical results).

A loop ``L`` is vectorizable when (``loop_vectorization_blocker`` returns ``None``):

* its body holds only ``For`` loops whose bounds mention neither ``L`` nor array data,
  ``Assign``/``Reduce``, ``With`` blocks and no-op synchronization (no ``If``, ``Call``,
  ``Alloc``, ``WindowStmt``), and no index expression reads array data;
* every array written in the body is accessed under one name only (no window aliases) and
  has rank >= 1, and all of its accesses in the body share a dimension ``d`` whose index
  expression is syntactically identical everywhere, is affine in ``L`` with a nonzero
  constant coefficient (``L`` not under ``/`` or ``%``, so the map is injective), and
  mentions no loop variable bound inside the body. Distinct iterations then use distinct
  values of coordinate ``d`` of every written array: they are independent. When no single
  dimension does, several agreed dimensions whose joint index isl proves injective in ``L``
  do (fragment layouts with ``/`` and ``%``, as in the wgmma bodies).

Aliasing between *parameters* (two arguments sharing memory) is not visible here; the
interpreter checks it at run time and falls back to scalar execution.

Among the legal loops of a nest the planner minimizes a simple cost, the number of
Python-level statement executions (trip counts estimated from constant bounds, symbolic ones
guessed); near-ties go to the inner loop, whose accesses are usually the contiguous ones
(matmul ``i, j, k``: ``j``).
"""

from __future__ import annotations

from ..ir.nodes import (Arrive, Assign, Await, BarrierAlloc, BinOp, BuiltIn, Const, Fence, For,
                        If, Pass, Read, Reduce, StrideExpr, UnOp, WindowExpr, WindowStmt, With)
from ..ir.types import ScalarType

#: trip count assumed for a loop whose extent is not a constant
SYMBOLIC_TRIPS = 64

#: how much cheaper (estimated) vectorizing an outer loop must be to beat the inner choice
PREFER_INNER = 1.25

NOOPS = (BarrierAlloc, Fence, Arrive, Await, Pass)


# ------------------------------------------------------------------ expression facts


def is_data_read(e) -> bool:
    return isinstance(e, Read) and (bool(e.idx) or isinstance(e.type, ScalarType))


def control_vars(e) -> set[str]:
    """Names of control variables an expression mentions (not array names)."""
    out: set[str] = set()

    def go(e):
        if isinstance(e, Read):
            if not is_data_read(e):
                out.add(e.name)
            for i in e.idx:
                go(i)
        elif isinstance(e, BinOp):
            go(e.lhs)
            go(e.rhs)
        elif isinstance(e, UnOp):
            go(e.arg)
        elif isinstance(e, BuiltIn):
            for a in e.args:
                go(a)

    go(e)
    return out


def reads_data(e) -> bool:
    """Whether an expression reads array data anywhere."""
    if is_data_read(e):
        return True
    if isinstance(e, Read):
        return any(reads_data(i) for i in e.idx)
    if isinstance(e, BinOp):
        return reads_data(e.lhs) or reads_data(e.rhs)
    if isinstance(e, UnOp):
        return reads_data(e.arg)
    if isinstance(e, BuiltIn):
        return any(reads_data(a) for a in e.args)
    return False


def data_reads(e) -> list[Read]:
    """Every array read in a data expression, left to right."""
    out: list[Read] = []

    def go(e):
        if is_data_read(e):
            out.append(e)
        elif isinstance(e, BinOp):
            go(e.lhs)
            go(e.rhs)
        elif isinstance(e, UnOp):
            go(e.arg)
        elif isinstance(e, BuiltIn):
            for a in e.args:
                go(a)

    go(e)
    return out


def linear_form(e) -> dict | None:
    """``e`` as ``{var_or_atom: coeff, None: const}``, or None when it is not affine.

    Floor divisions, modulos and strides are opaque atoms (keyed by the node itself; node
    equality ignores source locations).
    """
    if isinstance(e, Const) and isinstance(e.val, (int, bool)):
        return {None: int(e.val)}
    if isinstance(e, Read) and not is_data_read(e):
        return {e.name: 1}
    if isinstance(e, StrideExpr):
        return {e: 1}
    if isinstance(e, UnOp) and e.op == "-":
        f = linear_form(e.arg)
        return None if f is None else {k: -v for k, v in f.items()}
    if isinstance(e, BinOp):
        if e.op in ("/", "%"):
            return {e: 1} if not reads_data(e) else None
        a, b = linear_form(e.lhs), linear_form(e.rhs)
        if a is None or b is None:
            return None
        if e.op in ("+", "-"):
            sign = 1 if e.op == "+" else -1
            out = dict(a)
            for k, v in b.items():
                out[k] = out.get(k, 0) + sign * v
            return out
        if e.op == "*":
            if set(a) == {None}:
                a, b = b, a
            if set(b) != {None}:
                return None
            return {k: v * b[None] for k, v in a.items()}
    return None


def affine_coefficient(e, var: str) -> int | None:
    """The constant coefficient of ``var`` in ``e`` when ``e`` is affine in it, else None.

    None also when ``var`` occurs inside an opaque atom (``(var + 1) / 2`` is not injective).
    """
    f = linear_form(e)
    if f is None:
        return None
    for k in f:
        if k is not None and not isinstance(k, str) and var in control_vars(k):
            return None
    return f.get(var, 0)


def int_range(e, env: dict) -> tuple[int | None, int | None]:
    """Sound integer bounds ``(lo, hi)`` of a control expression (None = unbounded).

    ``env`` maps variables to their bounds; unknown variables are unbounded. Used only to
    skip run-time negativity checks on indices that cannot be negative.
    """
    if isinstance(e, Const) and isinstance(e.val, (int, bool)):
        return int(e.val), int(e.val)
    if isinstance(e, Read) and not is_data_read(e):
        return env.get(e.name, (None, None))
    if isinstance(e, UnOp) and e.op == "-":
        lo, hi = int_range(e.arg, env)
        return (None if hi is None else -hi), (None if lo is None else -lo)
    if isinstance(e, BinOp) and e.op in ("+", "-", "*", "/", "%"):
        a, b = int_range(e.lhs, env), int_range(e.rhs, env)
        if e.op == "+":
            return _add(a[0], b[0]), _add(a[1], b[1])
        if e.op == "-":
            return _sub(a[0], b[1]), _sub(a[1], b[0])
        c = b[0] if b[0] is not None and b[0] == b[1] else None
        if e.op == "*":
            if c is None and a[0] is not None and a[0] == a[1]:
                a, c = b, a[0]
            if c is None:
                return None, None
            lo, hi = _mul(a[0], c), _mul(a[1], c)
            return (lo, hi) if c >= 0 else (hi, lo)
        if c is None or c <= 0:
            return None, None
        if e.op == "/":
            return (None if a[0] is None else a[0] // c), (None if a[1] is None else a[1] // c)
        return 0, c - 1  # floor modulo by a positive constant
    return None, None


def _add(x, y):
    return None if x is None or y is None else x + y


def _sub(x, y):
    return None if x is None or y is None else x - y


def _mul(x, c):
    return None if x is None else x * c


# ------------------------------------------------------------------ legality


def loop_vectorization_blocker(loop: For, roots: dict[str, str]) -> str | None:
    """Why ``loop`` cannot run as one vector (None when it can); ``roots`` maps window names
    to the array they view."""
    var = loop.iter
    inner: set[str] = set()
    accesses: list[tuple[str, tuple, bool]] = []  # (name, idx, is_write)

    def walk(stmts) -> str | None:
        for s in stmts:
            if isinstance(s, For):
                for b in (s.lo, s.hi):
                    if var in control_vars(b) or reads_data(b):
                        return f"the bounds of loop {s.iter} depend on {var} or on data"
                inner.add(s.iter)
                why = walk(s.body)
                if why:
                    return why
            elif isinstance(s, With):
                why = walk(s.body)
                if why:
                    return why
            elif isinstance(s, (Assign, Reduce)):
                accesses.append((s.name, s.idx, True))
                for r in data_reads(s.rhs):
                    accesses.append((r.name, r.idx, False))
            elif isinstance(s, NOOPS):
                pass
            else:
                return f"{type(s).__name__} statements in its body are not vectorized"
        return None

    why = walk(loop.body)
    if why:
        return why
    for _, idx, _ in accesses:
        if any(reads_data(i) for i in idx):
            return "an index expression reads array data"
    written = {roots.get(n, n) for n, _, w in accesses if w}
    for root in sorted(written):
        accs = [(n, idx) for n, idx, _ in accesses if roots.get(n, n) == root]
        if len({n for n, _ in accs}) > 1:
            return f"{root} is accessed through more than one name"
        rank = len(accs[0][1])
        if rank == 0:
            return f"it writes the scalar {accs[0][0]}"
        if not any(_separating_dim(accs, d, var, inner) for d in range(rank)) and \
                not _separating_dims(accs, rank, loop, inner):
            return f"its iterations may touch the same element of {accs[0][0]}"
    return None


def _agreed(accs, d: int, inner: set[str]):
    """The index expression of dimension ``d`` if every access spells it the same way and it
    mentions no loop variable bound inside the loop, else None."""
    e = accs[0][1][d]
    if any(idx[d] != e for _, idx in accs) or control_vars(e) & inner:
        return None
    return e


def _separating_dim(accs, d: int, var: str, inner: set[str]) -> bool:
    e = _agreed(accs, d, inner)
    if e is None:
        return False
    coeff = affine_coefficient(e, var)
    return coeff is not None and coeff != 0


def _separating_dims(accs, rank: int, loop: For, inner: set[str]) -> bool:
    """Several dimensions that together separate the iterations: every access agrees on each
    of them, and isl proves the map ``iter -> (their indices)`` injective over the loop's range
    (other variables are parameters). This covers fragment layouts such as
    ``D[m / 16, (m % 8) * 4 + (n % 8) / 2, n / 8, (m % 16) / 8, n % 2]``, where no single
    dimension is affine in ``n`` but three of them determine it."""
    from ..ir.affine import NotAffine, to_isl_str

    var = loop.iter
    es = []
    for d in range(rank):
        e = _agreed(accs, d, inner)
        if e is not None and var in control_vars(e):
            es.append(e)
    if not es:
        return False
    try:
        import islpy as isl

        params = set()
        for e in es + [loop.lo, loop.hi]:
            params |= control_vars(e)
        params.discard(var)
        r1, r2 = {var: "v1_"}, {var: "v2_"}
        cons = [f"{to_isl_str(loop.lo)} <= v1_ < v2_ < {to_isl_str(loop.hi)}"]
        cons += [f"{to_isl_str(e, r1)} = {to_isl_str(e, r2)}" for e in es]
        text = f"[{', '.join(sorted(params))}] -> {{ [v1_, v2_] : {' and '.join(cons)} }}"
        return isl.Set(text).is_empty()
    except (NotAffine, Exception):  # noqa: BLE001 - anything isl cannot read: not proven
        return False


# ------------------------------------------------------------------ planning


def trip_estimate(loop: For) -> int:
    """Constant trip count of a loop when its extent is constant, else a guess."""
    lo, hi = linear_form(loop.lo), linear_form(loop.hi)
    if lo is not None and hi is not None:
        diff = dict(hi)
        for k, v in lo.items():
            diff[k] = diff.get(k, 0) - v
        if all(v == 0 for k, v in diff.items() if k is not None):
            return max(diff.get(None, 0), 0)
    return SYMBOLIC_TRIPS


def plan_vectorization(body, roots: dict[str, str]) -> frozenset[int]:
    """The ``id``s of the ``For`` nodes of ``body`` to run vectorized (at most one per nest)."""

    def scalar_cost(stmts) -> float:
        total = 0.0
        for s in stmts:
            if isinstance(s, For):
                total += trip_estimate(s) * scalar_cost(s.body)
            elif isinstance(s, If):
                total += 1 + scalar_cost(s.body) + scalar_cost(s.orelse)
            elif isinstance(s, With):
                total += scalar_cost(s.body)
            elif not isinstance(s, NOOPS):
                total += 1
        return total

    def best(stmts) -> tuple[float, list[int]]:
        total, chosen = 0.0, []
        for s in stmts:
            if isinstance(s, For):
                c, ch = best(s.body)
                cost = trip_estimate(s) * c
                if cost > 0 and loop_vectorization_blocker(s, roots) is None:
                    vcost = 1 + scalar_cost(s.body)
                    # an outer loop must be clearly cheaper to win: inner loops usually give
                    # contiguous slices (matmul i, j, k: j rather than i)
                    if vcost * PREFER_INNER < cost:
                        cost, ch = vcost, [id(s)]
                total += cost
                chosen += ch
            elif isinstance(s, (If, With)):
                parts = [s.body] + ([s.orelse] if isinstance(s, If) else [])
                for part in parts:
                    c, ch = best(part)
                    total += c
                    chosen += ch
                if isinstance(s, If):
                    total += 1
            elif not isinstance(s, NOOPS):
                total += 1
        return total, chosen

    return frozenset(best(body)[1])


def window_roots(body) -> dict[str, str]:
    """Map each window name bound by a ``WindowStmt`` to the array (param/alloc) it views."""
    roots: dict[str, str] = {}

    def walk(stmts):
        for s in stmts:
            if isinstance(s, WindowStmt):
                src = s.rhs.name if isinstance(s.rhs, WindowExpr) else s.name
                roots[s.name] = roots.get(src, src)
            for attr in ("body", "orelse"):
                if hasattr(s, attr):
                    walk(getattr(s, attr))

    walk(body)
    return roots


__all__ = ["plan_vectorization", "loop_vectorization_blocker", "window_roots",
           "affine_coefficient", "linear_form", "int_range", "control_vars", "data_reads",
           "reads_data", "is_data_read", "trip_estimate"]
