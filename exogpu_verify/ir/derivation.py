"""Where a scheduled procedure comes from, read off its provenance (``Rewrite`` records).

``root(p)`` is ``p1``, the procedure the chain of rewrites started from; ``derivation(p)``
the one line reports and generated files carry: "derived from p1 (file:line) by k checked
steps (j unsafe)". ``provenance_record(p)`` the whole chain as JSON data, as certificates
store it. The records are made by ``exogpu_verify.schedule``; this module only reads them,
so every layer (reports, certificates, the codegen gate) can use them.
"""

from __future__ import annotations

import hashlib
import os

from . import nodes as N


def program_hash(p: N.Procedure, text: str | None = None) -> str:
    """sha256 of the printed IR (the identity certificates are bound to)."""
    if text is None:
        from .printer import print_proc

        text = print_proc(p)
    return hashlib.sha256(text.encode()).hexdigest()


def root(p: N.Procedure) -> N.Procedure:
    """``p1``: the procedure the chain of ``p`` starts from (``p`` itself if none)."""
    if not p.provenance:
        return p
    fw = p.provenance[0].forward
    src = getattr(fw, "src", None)
    return src if isinstance(src, N.Procedure) else p


def _rel(f: str | None) -> str | None:
    """``f`` relative to the current folder (as reports and certificates name files)."""
    if not f:
        return f
    try:
        return os.path.relpath(f)
    except ValueError:  # another drive
        return f


def _location(file: str | None, line: int | None) -> str:
    return f"{file}:{line}" if file and line else "(no source location)"


def where(p1: N.Procedure) -> str:
    si = p1.srcinfo
    return _location(_rel(si.file) if si else None, si.line if si else None)


def summary_line(p1_name: str, file: str | None, line: int | None, k: int, j: int) -> str:
    """"derived from p1 (file:line) by k checked steps (j unsafe)"."""
    return (f"derived from {p1_name} ({_location(file, line)}) by {k} checked "
            f"step{'s' * (k != 1)} ({j} unsafe)")


def derivation(p: N.Procedure) -> str | None:
    """One line: where ``p`` comes from, or None for a procedure written directly."""
    if not p.provenance:
        return None
    p1 = root(p)
    si = p1.srcinfo
    return summary_line(p1.name, _rel(si.file) if si else None, si.line if si else None,
                        len(p.provenance), sum(1 for r in p.provenance if r.unsafe))


def provenance_record(p: N.Procedure) -> dict | None:
    """The chain as JSON data (None for a procedure written directly): ``source`` (p1's
    name, file relative to the current folder, line and program hash), ``steps`` (per
    rewrite: ``primitive``, ``args`` as text, ``checked``: what its legality check
    established, ``unsafe``, ``call``: the call as replayable data or None, ``result_hash``:
    the program it produced), ``result_hash`` (``p``'s hash) and ``summary`` (the
    ``derivation`` line). Certificates store it under ``derivation``."""
    if not p.provenance:
        return None
    p1 = root(p)
    steps = []
    for rw in p.provenance:
        steps.append({"primitive": rw.name, "args": rw.args, "checked": rw.checked,
                      "unsafe": bool(rw.unsafe),
                      "call": rw.call.to_json() if rw.call is not None and
                      rw.call.args is not None else None,
                      "result_hash": rw.result_hash})
    si = p1.srcinfo
    f = _rel(si.file) if si else None
    line = si.line if si else None
    return {"source": {"proc": p1.name, "file": f, "line": line, "hash": program_hash(p1)},
            "steps": steps, "result_hash": program_hash(p),
            "summary": summary_line(p1.name, f, line, len(steps),
                                    sum(1 for s in steps if s["unsafe"]))}
