"""Cursors: paths into an immutable procedure, found by pattern, navigated, and forwarded.

A cursor names a place in one procedure (``c.proc()``): a statement (``StmtCursor``), a
block of consecutive statements (``BlockCursor``), the gap before/after a statement
(``GapCursor``), an expression inside a statement (``ExprCursor``) or a parameter
(``ArgCursor``). Navigation (``parent``, ``body``, ``next``, ``prev``, ``before``, ``after``,
``expand``) returns new cursors into the same procedure; ``InvalidCursor`` stands for a place
that does not exist.

Every rewrite records in its ``Rewrite`` (provenance) a forwarding function from statement
paths of its input to statement paths of its output; ``forward(p_new, c)`` composes them from
``c.proc()`` to ``p_new``. Forwarding and navigation do not commute (as in Exo): forward,
then navigate.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import nodes as N
from . import pattern as P
from .irtools import block_of, node_at, valid_path, walk_paths


class InvalidCursorError(Exception):
    pass


class Cursor:
    _proc: N.Procedure

    def proc(self) -> N.Procedure:
        return self._proc

    def find(self, pattern: str, many: bool = False):
        return _find(self._proc, pattern, many, within=self)

    def find_all(self, pattern: str):
        return self.find(pattern, many=True)

    def is_invalid(self) -> bool:
        return False


class InvalidCursor(Cursor):
    def __init__(self, proc=None, why: str = ""):
        self._proc = proc
        self.why = why

    def is_invalid(self) -> bool:
        return True

    def __repr__(self):
        return f"InvalidCursor({self.why})"

    def __getattr__(self, name):
        raise InvalidCursorError(f"invalid cursor ({self.why}) has no '{name}'")


# ---------------------------------------------------------------- statements


class StmtCursor(Cursor):
    def __init__(self, proc: N.Procedure, path: tuple):
        self._proc = proc
        self._path = tuple(path)

    # identity
    def __eq__(self, other):
        return type(other) is type(self) and other._proc is self._proc and \
            other._path == self._path

    def __hash__(self):
        return hash((id(self._proc), self._path))

    def __repr__(self):
        from ..ir.printer import stmt_lines

        return f"<StmtCursor {self._path}: {stmt_lines([self._node()])[0].strip()}>"

    def path(self) -> tuple:
        return self._path

    def _node(self):
        return node_at(self._proc, self._path)

    def node(self):
        """The IR statement this cursor points at."""
        return self._node()

    # navigation
    def parent(self):
        if len(self._path) <= 1:
            return InvalidCursor(self._proc, "top-level statement has no parent")
        return StmtCursor(self._proc, self._path[:-1])

    def _sib(self, k):
        field, i = self._path[-1]
        blk = block_of(node_at(self._proc, self._path[:-1]), field)
        j = i + k
        if 0 <= j < len(blk):
            return StmtCursor(self._proc, self._path[:-1] + ((field, j),))
        return InvalidCursor(self._proc, "no such sibling statement")

    def next(self, dist: int = 1):
        return self._sib(dist)

    def prev(self, dist: int = 1):
        return self._sib(-dist)

    def before(self):
        return GapCursor(self._proc, self._path, "before")

    def after(self):
        return GapCursor(self._proc, self._path, "after")

    def as_block(self):
        field, i = self._path[-1]
        return BlockCursor(self._proc, self._path[:-1], field, i, i + 1)

    def expand(self, delta_lo=None, delta_hi=None):
        return self.as_block().expand(delta_lo, delta_hi)

    def body(self):
        s = self._node()
        if not isinstance(s, (N.For, N.If, N.With)):
            raise InvalidCursorError(f"{type(s).__name__} has no body")
        return BlockCursor(self._proc, self._path, "body", 0, len(s.body))

    def orelse(self):
        s = self._node()
        if not isinstance(s, N.If) or not s.orelse:
            return InvalidCursor(self._proc, "no else branch")
        return BlockCursor(self._proc, self._path, "orelse", 0, len(s.orelse))

    # inspection
    def name(self) -> str:
        s = self._node()
        if isinstance(s, N.For):
            return s.iter
        if isinstance(s, N.Call):
            return s.callee.name
        return s.name

    def _expr(self, *step):
        return ExprCursor(self._proc, self._path, (tuple(step),))

    def lo(self):
        return self._expr("lo")

    def hi(self):
        return self._expr("hi")

    def rhs(self):
        return self._expr("rhs")

    def cond(self):
        return self._expr("cond")

    def idx(self):
        return [self._expr("idx", k) for k in range(len(self._node().idx))]

    def args(self):
        return [self._expr("args", k) for k in range(len(self._node().args))]

    def mem(self):
        return self._node().mem

    def shape(self):
        return self._node().type.shape


class BlockCursor(Cursor):
    def __init__(self, proc, parent: tuple, field: str, lo: int, hi: int):
        self._proc = proc
        self._parent = tuple(parent)
        self._field = field
        self._lo = lo
        self._hi = hi

    def __eq__(self, other):
        return isinstance(other, BlockCursor) and other._proc is self._proc and \
            (other._parent, other._field, other._lo, other._hi) == \
            (self._parent, self._field, self._lo, self._hi)

    def __hash__(self):
        return hash((id(self._proc), self._parent, self._field, self._lo, self._hi))

    def __repr__(self):
        return f"<BlockCursor {self._parent}.{self._field}[{self._lo}:{self._hi}]>"

    def _block(self):
        return block_of(node_at(self._proc, self._parent), self._field)

    def stmts(self):
        return self._block()[self._lo:self._hi]

    def paths(self):
        return [self._parent + ((self._field, i),) for i in range(self._lo, self._hi)]

    def __len__(self):
        return self._hi - self._lo

    def __iter__(self):
        return iter([StmtCursor(self._proc, p) for p in self.paths()])

    def __getitem__(self, k):
        if isinstance(k, slice):
            lo, hi, step = k.indices(len(self))
            if step != 1:
                raise InvalidCursorError("block slices must be contiguous")
            return BlockCursor(self._proc, self._parent, self._field, self._lo + lo,
                               self._lo + hi)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        return StmtCursor(self._proc, self._parent + ((self._field, self._lo + k),))

    def parent(self):
        if not self._parent:
            return InvalidCursor(self._proc, "the procedure body has no parent statement")
        return StmtCursor(self._proc, self._parent)

    def before(self):
        return self[0].before()

    def after(self):
        return self[-1].after()

    def expand(self, delta_lo=None, delta_hi=None):
        n = len(self._block())
        lo = 0 if delta_lo is None else max(0, self._lo - delta_lo)
        hi = n if delta_hi is None else min(n, self._hi + delta_hi)
        return BlockCursor(self._proc, self._parent, self._field, lo, hi)

    def as_block(self):
        return self


class GapCursor(Cursor):
    """The gap before or after an anchor statement."""

    def __init__(self, proc, anchor: tuple, side: str):
        self._proc = proc
        self._anchor = tuple(anchor)
        self._side = side

    def __repr__(self):
        return f"<GapCursor {self._side} {self._anchor}>"

    def anchor(self):
        return StmtCursor(self._proc, self._anchor)

    def parent(self):
        return StmtCursor(self._proc, self._anchor).parent()

    def location(self):
        """``(parent path, field, index)``: the gap is before statement ``index``."""
        field, i = self._anchor[-1]
        return self._anchor[:-1], field, i + (1 if self._side == "after" else 0)


class ExprCursor(Cursor):
    """An expression inside a statement: ``epath`` is a tuple of steps ``(attr,)`` or
    ``(attr, k)`` from the statement."""

    def __init__(self, proc, path: tuple, epath: tuple):
        self._proc = proc
        self._path = tuple(path)
        self._epath = tuple(epath)

    def __eq__(self, other):
        return isinstance(other, ExprCursor) and other._proc is self._proc and \
            (other._path, other._epath) == (self._path, self._epath)

    def __hash__(self):
        return hash((id(self._proc), self._path, self._epath))

    def __repr__(self):
        from ..ir.printer import expr_str

        return f"<ExprCursor {self._path}{self._epath}: {expr_str(self._node())}>"

    def _node(self):
        return get_expr(node_at(self._proc, self._path), self._epath)

    def node(self):
        return self._node()

    def stmt(self):
        return StmtCursor(self._proc, self._path)

    def idx(self):
        """Cursors to the indices of a read ``x[i, j]``, or of a window ``x[i, 0:4]`` (a
        point index's expression; None for an interval): e.g. ``call.args()[0].idx()[0]``
        is the first index of a call's first argument."""
        e = self._node()
        if isinstance(e, N.WindowExpr):
            return [ExprCursor(self._proc, self._path, self._epath + (("idx", k), ("pt",)))
                    if isinstance(w, N.Point) else None for k, w in enumerate(e.idx)]
        if isinstance(e, N.Read):
            return [ExprCursor(self._proc, self._path, self._epath + (("idx", k),))
                    for k in range(len(e.idx))]
        raise TypeError(f"idx(): {self!r} is not a read or a window")

    def parent(self):
        if len(self._epath) <= 1:
            return StmtCursor(self._proc, self._path)
        return ExprCursor(self._proc, self._path, self._epath[:-1])


class ArgCursor(Cursor):
    def __init__(self, proc, name: str):
        self._proc = proc
        self._name = name

    def __repr__(self):
        return f"<ArgCursor {self._name}>"

    def name(self) -> str:
        return self._name

    def param(self):
        return self._proc.param(self._name)

    def mem(self):
        return self.param().mem

    def shape(self):
        return self.param().type.shape


# ---------------------------------------------------------------- expression paths


def get_expr(s, epath):
    cur = s
    for step in epath:
        cur = getattr(cur, step[0])
        if len(step) == 2:
            cur = cur[step[1]]
    return cur


def set_expr(node, epath, new):
    if not epath:
        return new
    step, rest = epath[0], epath[1:]
    child = getattr(node, step[0])
    if len(step) == 2:
        seq = list(child)
        seq[step[1]] = set_expr(seq[step[1]], rest, new)
        return replace(node, **{step[0]: tuple(seq)})
    return replace(node, **{step[0]: set_expr(child, rest, new)})


def expr_roots(s):
    if isinstance(s, (N.Assign, N.Reduce)):
        for k in range(len(s.idx)):
            yield ("idx", k)
        yield ("rhs",)
    elif isinstance(s, N.For):
        yield ("lo",)
        yield ("hi",)
    elif isinstance(s, N.If):
        yield ("cond",)
    elif isinstance(s, N.Call):
        for k in range(len(s.args)):
            yield ("args", k)
    elif isinstance(s, N.WindowStmt):
        yield ("rhs",)


def expr_children(e):
    if isinstance(e, N.Read):
        for k in range(len(e.idx)):
            yield ("idx", k)
    elif isinstance(e, N.BinOp):
        yield ("lhs",)
        yield ("rhs",)
    elif isinstance(e, N.UnOp):
        yield ("arg",)
    elif isinstance(e, N.BuiltIn):
        for k in range(len(e.args)):
            yield ("args", k)


def expr_paths(s):
    """Every ``(epath, expr)`` of statement ``s`` (pre-order)."""
    def go(e, ep):
        yield ep, e
        for st in expr_children(e):
            yield from go(get_expr(e, (st,)), ep + (st,))

    for r in expr_roots(s):
        yield from go(get_expr(s, (r,)), (r,))


# ---------------------------------------------------------------- finding


def _scope_paths(proc, within):
    """Statement paths to search (pre-order) for a cursor's subtree, or the whole proc."""
    if within is None:
        return list(walk_paths(proc.body))
    if isinstance(within, StmtCursor):
        s = within._node()
        out = [(within._path, s)]
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, tuple):
                out += list(walk_paths(sub, within._path, f))
        return out
    if isinstance(within, BlockCursor):
        out = []
        for p in within.paths():
            out += _scope_paths(proc, StmtCursor(proc, p))
        return out
    raise InvalidCursorError(f"cannot search inside {within!r}")


def _find(proc, pattern: str, many: bool = False, within=None):
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a string, not {type(pattern).__name__}")
    text, nth = P.split_index(pattern)
    kind, pat = P.parse(text)
    found = []
    scope = _scope_paths(proc, within)
    if kind == "expr":
        for path, s in scope:
            for ep, e in expr_paths(s):
                if P.match_expr(pat, e):
                    found.append(ExprCursor(proc, path, ep))
    elif len(pat) == 1:
        for path, s in scope:
            if P.match_stmt(pat[0], s):
                found.append(StmtCursor(proc, path))
    else:
        seen = set()
        for path, _ in scope:
            parent, (field, i) = path[:-1], path[-1]
            key = (parent, field, i)
            if key in seen:
                continue
            seen.add(key)
            blk = block_of(node_at(proc, parent), field)
            if i + len(pat) <= len(blk) and all(P.match_stmt(q, s) for q, s in
                                                 zip(pat, blk[i:i + len(pat)])):
                found.append(BlockCursor(proc, parent, field, i, i + len(pat)))
    if many:
        return found if nth is None else found[nth:nth + 1]
    k = nth or 0
    if k >= len(found):
        from .errors import SchedulingError

        raise SchedulingError(f"pattern {pattern!r} matched {len(found)} time(s); no match "
                              f"#{k}", proc)
    return found[k]


def find(proc, pattern: str, many: bool = False):
    """Cursor(s) to what ``pattern`` matches in ``proc`` (see ``pattern`` module)."""
    return _find(proc, pattern, many)


def find_all(proc, pattern: str):
    return _find(proc, pattern, True)


def find_loop(proc, pattern: str, many: bool = False):
    """``"i"`` / ``"i #2"`` mean ``for i in _: _``; full patterns are passed through."""
    text, nth = P.split_index(pattern)
    if text.strip().isidentifier():
        text = f"for {text.strip()} in _: _"
    if nth is not None:
        text += f" #{nth}"
    return _find(proc, text, many)


def find_alloc_or_arg(proc, name: str):
    text, nth = P.split_index(name)
    if proc.param(text.strip()) is not None:
        return ArgCursor(proc, text.strip())
    return _find(proc, f"{text.strip()} : _" + (f" #{nth}" if nth is not None else ""))


def body(proc) -> BlockCursor:
    """The whole procedure body as a block cursor (Exo's ``p.body()``)."""
    return BlockCursor(proc, (), "body", 0, len(proc.body))


# ---------------------------------------------------------------- forwarding


class Forwarder:
    """One rewrite's map from statement paths of ``src`` to paths of its result."""

    __slots__ = ("src", "fn")

    def __init__(self, src, fn):
        self.src = src
        self.fn = fn

    def __call__(self, path):
        return self.fn(path)


def _chain(p_new, p_old):
    """The forwarders from ``p_old`` to ``p_new``, oldest first, or None if unrelated."""
    if p_new is p_old:
        return []
    prov = p_new.provenance
    for k in range(len(prov) - 1, -1, -1):
        fw = getattr(prov[k], "forward", None)
        if fw is not None and fw.src is p_old:
            return [getattr(r, "forward", None) for r in prov[k:]]
    return None


def _fwd_path(chain, path):
    for fw in chain:
        if path is None:
            return None
        path = fw(path) if fw is not None else path
    return path


def forward(p_new, cursor):
    """Forward ``cursor`` (into an older version of the procedure) to ``p_new``."""
    if isinstance(cursor, InvalidCursor) or cursor.proc() is p_new:
        return cursor
    chain = _chain(p_new, cursor.proc())
    if chain is None:
        raise InvalidCursorError(
            f"cannot forward a cursor from '{cursor.proc().name}' to '{p_new.name}': the "
            "procedure was not derived from the cursor's procedure by scheduling rewrites")
    if isinstance(cursor, ArgCursor):
        return ArgCursor(p_new, cursor._name) if p_new.param(cursor._name) else \
            InvalidCursor(p_new, "argument removed")
    if isinstance(cursor, StmtCursor):
        np = _fwd_path(chain, cursor._path)
        if np is None or not valid_path(p_new, np):
            return InvalidCursor(p_new, "statement removed by a rewrite")
        return StmtCursor(p_new, np)
    if isinstance(cursor, ExprCursor):
        np = _fwd_path(chain, cursor._path)
        if np is None or not valid_path(p_new, np):
            return InvalidCursor(p_new, "statement removed by a rewrite")
        try:
            get_expr(node_at(p_new, np), cursor._epath)
        except (AttributeError, IndexError, TypeError):
            return InvalidCursor(p_new, "expression removed by a rewrite")
        return ExprCursor(p_new, np, cursor._epath)
    if isinstance(cursor, GapCursor):
        np = _fwd_path(chain, cursor._anchor)
        if np is None or not valid_path(p_new, np):
            return InvalidCursor(p_new, "gap anchor removed by a rewrite")
        return GapCursor(p_new, np, cursor._side)
    if isinstance(cursor, BlockCursor):
        paths = cursor.paths()
        a, b = _fwd_path(chain, paths[0]), _fwd_path(chain, paths[-1])
        if a is None or b is None or a[:-1] != b[:-1] or a[-1][0] != b[-1][0] or \
                not valid_path(p_new, a) or not valid_path(p_new, b) or b[-1][1] < a[-1][1]:
            return InvalidCursor(p_new, "block no longer contiguous")
        return BlockCursor(p_new, a[:-1], a[-1][0], a[-1][1], b[-1][1] + 1)
    raise InvalidCursorError(f"cannot forward {cursor!r}")


# forwarding-function combinators used by the rewrites


def fwd_splice(parent, field, lo, hi, new_len, inner=None):
    """Statements ``[lo, hi)`` of ``parent.field`` replaced by ``new_len`` statements;
    ``inner(i, rest)`` maps paths inside the replaced range (default: invalid)."""
    parent = tuple(parent)
    n = len(parent)

    def f(path):
        if len(path) <= n or path[:n] != parent or path[n][0] != field:
            return path
        i = path[n][1]
        if i < lo:
            return path
        if i >= hi:
            return parent + ((field, i + new_len - (hi - lo)),) + path[n + 1:]
        return inner(i, path[n + 1:]) if inner is not None else None

    return f


def fwd_compose(*fns):
    def f(path):
        for g in fns:
            if path is None:
                return None
            path = g(path)
        return path

    return f
