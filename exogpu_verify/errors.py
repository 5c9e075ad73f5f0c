"""Diagnostics: the one data type for everything exogpu tells a user.

A ``Diagnostic`` is a user-facing finding with a kind (``syntax``, ``type``, ``scope``,
``collective``, ``distributed-memory``, ``barrier-usage``, ``sync``), a message, a primary
location, optional secondary locations and notes, and a hint that says how to fix it. One
function, ``render``, turns it into text with the source line and a caret.

Three exception classes keep three kinds of failure apart:
``ExoGpuError`` (the user's program is wrong), ``InternalError`` (a bug in exogpu) and
``Inconclusive`` (a solver or budget gave up; not the user's fault).
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from .ir.srcinfo import SrcInfo

KINDS = (
    "syntax",
    "type",
    "scope",
    "collective",
    "distributed-memory",
    "barrier-usage",
    "sync",
    "usage",
    "internal",
)


@dataclass(frozen=True, slots=True)
class Span:
    """A secondary location with a label (``"first access"``)."""

    srcinfo: SrcInfo
    label: str = ""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    kind: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    hint: str | None = None
    notes: tuple[str, ...] = ()
    secondary: tuple[Span, ...] = ()

    @staticmethod
    def at(kind: str, message: str, srcinfo: SrcInfo | None, hint: str | None = None,
           notes: tuple[str, ...] = (), secondary: tuple[Span, ...] = ()) -> "Diagnostic":
        if kind not in KINDS:
            raise InternalError(f"unknown diagnostic kind {kind!r}")
        if srcinfo is None:
            return Diagnostic(kind, message, None, None, None, hint, notes, secondary)
        via = getattr(srcinfo, "via", None)
        if via:  # a statement made by a scheduling rewrite, located at its spec line
            notes = tuple(notes) + (f"this statement was made by scheduling {via}, from the "
                                    "statement at this line",)
        return Diagnostic(kind, message, srcinfo.file, srcinfo.line, srcinfo.col, hint,
                          notes, secondary)

    @property
    def srcinfo(self) -> SrcInfo | None:
        if self.file is None or self.line is None:
            return None
        return SrcInfo(self.file, self.line, self.col or 0)

    def render(self) -> str:
        return render(self)

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "hint": self.hint,
            "notes": list(self.notes),
            "secondary": [
                {"file": s.srcinfo.file, "line": s.srcinfo.line, "col": s.srcinfo.col,
                 "label": s.label}
                for s in self.secondary
            ],
        }

    def __str__(self) -> str:
        return render(self)


def _excerpt(srcinfo: SrcInfo | None) -> list[str]:
    if srcinfo is None or not srcinfo.file or not srcinfo.line:
        return []
    text = srcinfo.text if srcinfo.text is not None else linecache.getline(srcinfo.file,
                                                                           srcinfo.line)
    if not text:
        return []
    text = text.rstrip("\n")
    gutter = f"{srcinfo.line:>5} | "
    caret = " " * (len(gutter) + max(srcinfo.col, 0)) + "^"
    return [gutter + text, caret]


def render(d: Diagnostic) -> str:
    """Render a diagnostic as ``file:line:col: kind error: message`` plus excerpt and hint."""
    where = ""
    if d.file:
        where = f"{d.file}:{d.line or 0}:{(d.col or 0) + 1}: "
    label = "error" if d.kind != "internal" else "internal error (this is a bug in exogpu)"
    lines = [f"{where}{d.kind} {label}: {d.message}"]
    lines += _excerpt(d.srcinfo)
    for span in d.secondary:
        si = span.srcinfo
        lines.append(f"  {span.label or 'see'}: {si.file}:{si.line}:{si.col + 1}")
        lines += ["  " + x for x in _excerpt(si)]
    for note in d.notes:
        lines.append(f"  note: {note}")
    if d.hint:
        lines.append(f"  hint: {d.hint}")
    return "\n".join(lines)


class ExoGpuError(Exception):
    """The user's program (or a call into the API) is wrong; carries a ``Diagnostic``."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(render(diagnostic))
        self.diagnostic = diagnostic

    @property
    def kind(self) -> str:
        return self.diagnostic.kind


class InternalError(Exception):
    """A broken invariant inside exogpu: this is a bug in exogpu, not in the user's program."""


class Inconclusive(Exception):
    """A solver or budget gave up; the program is neither proven nor refuted."""


def user_error(kind: str, message: str, srcinfo: SrcInfo | None, hint: str | None = None,
               notes: tuple[str, ...] = ()) -> ExoGpuError:
    """Build (not raise) an ``ExoGpuError``: ``raise user_error(...)`` at the call site."""
    return ExoGpuError(Diagnostic.at(kind, message, srcinfo, hint, notes))


@dataclass
class DiagnosticSink:
    """Collects diagnostics in passes that report many findings instead of raising."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, d: Diagnostic) -> None:
        self.items.append(d)

    def __bool__(self) -> bool:
        return bool(self.items)
