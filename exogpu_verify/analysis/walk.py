"""Traversal helpers shared by the static analyses: statement paths and data accesses.

A statement is identified by its *path* from the procedure body, a tuple of
``(field, index)`` steps such as ``(("body", 0), ("body", 2), ("orelse", 0))``: IR nodes
compare by value, so two equal statements in different places need the path to be told
apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..ir import nodes as N
from ..ir.types import ScalarType

Path = tuple[tuple[str, int], ...]


def child_blocks(s) -> list[tuple[str, tuple]]:
    """The statement blocks nested in ``s``, with their field names."""
    if isinstance(s, (N.For, N.With)):
        return [("body", s.body)]
    if isinstance(s, N.If):
        return [("body", s.body), ("orelse", s.orelse)]
    return []


def iter_stmts(body, prefix: Path = (), field: str = "body") -> Iterator[tuple[Path, object]]:
    """Every statement in program order (pre-order) with its path."""
    for i, s in enumerate(body):
        path = prefix + ((field, i),)
        yield path, s
        for f, blk in child_blocks(s):
            yield from iter_stmts(blk, path, f)


def data_reads(e) -> Iterator[N.Read]:
    """Data reads (``Read`` nodes of scalar type) in a data expression."""
    if isinstance(e, N.Read):
        if isinstance(e.type, ScalarType):
            yield e
        return
    if isinstance(e, N.BinOp):
        yield from data_reads(e.lhs)
        yield from data_reads(e.rhs)
    elif isinstance(e, N.UnOp):
        yield from data_reads(e.arg)
    elif isinstance(e, N.BuiltIn):
        for a in e.args:
            yield from data_reads(a)


def param_effects(callee: N.Procedure) -> dict[str, str]:
    """For each data parameter of an instruction or proc: "r", "w" or "rw" from its body."""
    eff: dict[str, set] = {p.name: set() for p in callee.params if p.is_data}
    aliases: dict[str, str] = {}

    def base(name):
        return aliases.get(name, name)

    def go(body):
        for _, s in iter_stmts(body):
            if isinstance(s, N.WindowStmt):
                aliases[s.name] = base(s.rhs.name)
            if isinstance(s, (N.Assign, N.Reduce)):
                b = base(s.name)
                if b in eff:
                    eff[b].add("w")
                    if isinstance(s, N.Reduce):
                        eff[b].add("r")
                for r in data_reads(s.rhs):
                    if base(r.name) in eff:
                        eff[base(r.name)].add("r")
            if isinstance(s, N.Call):
                sub = param_effects(s.callee)
                for prm, a in zip(s.callee.params, s.args):
                    if prm.is_data and isinstance(a, N.WindowExpr) and base(a.name) in eff:
                        eff[base(a.name)] |= set(sub.get(prm.name, ""))

    go(callee.body)
    return {k: "".join(sorted(v, key="rw".index)) for k, v in eff.items()}


@dataclass(frozen=True, slots=True)
class Access:
    """One data access of a statement: ``mode`` is "r", "w" or "rw"; ``idx`` the indices
    (expressions for point accesses, ``Point``/``Interval`` for call windows)."""

    name: str
    idx: tuple
    mode: str
    node: object
    param: N.Param | None = None  # the callee parameter, for call arguments


def stmt_accesses(s) -> list[Access]:
    """The data accesses a statement makes itself (not those of nested blocks)."""
    out: list[Access] = []
    if isinstance(s, (N.Assign, N.Reduce)):
        for r in data_reads(s.rhs):
            out.append(Access(r.name, r.idx, "r", r))
        out.append(Access(s.name, s.idx, "rw" if isinstance(s, N.Reduce) else "w", s))
    elif isinstance(s, N.Call):
        eff = param_effects(s.callee)
        for prm, a in zip(s.callee.params, s.args):
            if prm.is_data and isinstance(a, N.WindowExpr):
                out.append(Access(a.name, a.idx, eff.get(prm.name) or "r", a, prm))
    elif isinstance(s, N.WindowStmt):
        out.append(Access(s.rhs.name, s.rhs.idx, "", s.rhs))
    return out


def visible_from(decl: Path, use: Path) -> bool:
    """A declaration at path ``decl`` is in scope at ``use`` (later in an enclosing block)."""
    pre = decl[:-1]
    if use[:len(pre)] != pre or len(use) <= len(pre):
        return False
    f, i = decl[-1]
    g, j = use[len(pre)]
    return f == g and j > i


def resolve_decl(name: str, use: Path, decls) -> object | None:
    """The innermost declaration (an item with ``.path`` and ``.stmt.name``) of ``name``
    visible at ``use``."""
    best = None
    for d in decls:
        if d.stmt.name == name and visible_from(d.path, use):
            if best is None or len(d.path) > len(best.path):
                best = d
    return best
