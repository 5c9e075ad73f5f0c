"""``SchedulingError``: a rewrite that is illegal (or malformed) for this procedure.

It carries the procedure, the paths of the offending statements and a message; ``str()``
prints the procedure with the offending statements marked ``# <-- here`` followed by the
reason (for a dependence: the two accesses and an instance pair that would be reversed).
"""

from __future__ import annotations


class SchedulingError(Exception):
    def __init__(self, message: str, proc=None, stmts=(), dependence: str | None = None):
        self.message = message
        self.proc = proc
        self.stmts = tuple(stmts)  # statement paths
        self.dependence = dependence
        super().__init__(message)

    def locations(self) -> list:
        """Source locations (``SrcInfo``) of the offending statements, in order."""
        from .irtools import node_at, valid_path

        out = []
        for path in self.stmts:
            if self.proc is not None and valid_path(self.proc, path):
                si = getattr(node_at(self.proc, path), "srcinfo", None)
                if si is not None and si.line:
                    out.append(si)
        return out

    @property
    def line(self) -> int | None:
        """The source line of the first offending statement (None if it has none)."""
        locs = self.locations()
        return locs[0].line if locs else None

    def __str__(self) -> str:
        out = [f"scheduling error: {self.message}"]
        for si in self.locations():
            note = f" (made by scheduling {si.via})" if si.via else ""
            out.append(f"  at {si}{note}")
        if self.dependence:
            out.append(f"  forbidden by: {self.dependence}")
        if self.proc is not None:
            out.append("")
            out.extend(_marked(self.proc, self.stmts))
        return "\n".join(out)


def _marked(proc, paths) -> list[str]:
    """Print ``proc`` and mark the first line of each statement in ``paths``."""
    from ..ir.printer import print_proc

    lines = print_proc(proc).splitlines()
    # the printer emits the decorator, the def line, the asserts, then one header line per
    # statement in pre-order (plus `else:` lines): replay that order to find the lines
    order: list = []
    _replay(proc.body, (), "body", order)
    line_of = {}
    k = 2 + len(proc.preds)
    for item in order:
        if item != "else":
            line_of[item] = k
        k += 1
    hit = {line_of[tuple(p)] for p in paths if tuple(p) in line_of}
    return [ln + ("  # <-- here" if i in hit else "") for i, ln in enumerate(lines)]


def _replay(stmts, prefix, field, order):
    for i, s in enumerate(stmts):
        p = prefix + ((field, i),)
        order.append(p)
        body = getattr(s, "body", None)
        if isinstance(body, tuple):
            _replay(body, p, "body", order)
        orelse = getattr(s, "orelse", None)
        if orelse:
            order.append("else")
            _replay(orelse, p, "orelse", order)
