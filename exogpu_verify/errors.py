"""The three kinds of failure exogpu keeps apart, as exceptions.

``ExoGpuError`` (the user's program is wrong; carries a ``Diagnostic``), ``InternalError`` (a
bug in exogpu) and ``Inconclusive`` (a solver or budget gave up; not the user's fault). The
diagnostic types themselves live in ``exogpu_verify.report`` and are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ir.srcinfo import SrcInfo
from .report import KINDS, Diagnostic, Span, render  # noqa: F401  (re-exported)


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
