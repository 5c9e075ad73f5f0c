"""What exogpu tells a user, as data: diagnostics, witnesses and verification reports.

The lowest layer above the IR: every pass that finds something (frontend, analyses, both
checkers) builds these types, and only the top layers (``api``, ``cli``, ``output``,
``pictures``) render them. A ``Diagnostic`` is one finding with a kind, a message, a primary
location, optional secondary locations and notes, and a hint that says how to fix it; one
function, ``render``, turns it into text with the source line and a caret. A ``Witness`` is a
concrete counterexample to a synchronization obligation; a ``Report`` is ``verify``'s answer.
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
    "bounds",
    "instruction",
    "resource",
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
        if kind not in KINDS:  # a bug in exogpu, never a user's input
            raise ValueError(f"unknown diagnostic kind {kind!r}")
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
            "col": None if self.col is None else self.col + 1,  # 1-based, as rendered
            "hint": self.hint,
            "notes": list(self.notes),
            "secondary": [
                {"file": s.srcinfo.file, "line": s.srcinfo.line, "col": s.srcinfo.col + 1,
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
    if d.file:  # a file-level problem (no line) is not shown at a made-up line 0
        where = f"{d.file}:{d.line}:{(d.col or 0) + 1}: " if d.line else f"{d.file}: "
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


VERDICTS = ("proven", "checked", "refuted", "unknown")


def sizes_text(sizes: dict | None) -> str:
    """The sizes a check ran at, as a user writes them: ``N=512, M=4``; a proc without size
    parameters has one size, its own."""
    if sizes is None:
        return "no sizes"
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "its fixed shapes (no size " \
        "parameters)"


@dataclass(frozen=True)
class Witness:
    """A concrete counterexample: sizes, the two accesses, their threads and timelines."""

    sizes: dict
    first: dict
    second: dict
    missing: str = ""

    def to_json(self) -> dict:
        return {"sizes": self.sizes, "first": self.first, "second": self.second,
                "missing": self.missing}


@dataclass(frozen=True)
class Report:
    proc: str
    verdict: str
    diagnostics: tuple[Diagnostic, ...] = ()
    reason: str = ""
    sizes: dict | None = None
    witness: Witness | None = None
    stages: tuple[str, ...] = ()
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"bad verdict {self.verdict!r}")

    @property
    def ok(self) -> bool:
        return self.verdict in ("proven", "checked")

    def summary(self) -> str:
        s = f"{self.proc}: {self.verdict}"
        if self.verdict == "checked" and self.sizes is not None:
            s += " at " + ("sizes " if self.sizes else "") + sizes_text(self.sizes)
        if self.reason:
            s += f" ({self.reason})"
        return s

    def to_json(self) -> dict:
        return {
            "proc": self.proc,
            "verdict": self.verdict,
            "ok": self.ok,
            "reason": self.reason,
            "sizes": self.sizes,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "witness": self.witness.to_json() if self.witness else None,
            "stages": list(self.stages),
            "seconds": round(self.seconds, 4),
            "derivation": self.extra.get("derivation"),
        }
