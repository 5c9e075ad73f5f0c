"""``verify``: the one entry point that checks ``seq[p] == par[p]`` and says how sure it is.

Verdicts are honest: ``proven`` (all sizes satisfying the asserts), ``checked`` (only at the
concrete sizes named), ``refuted`` (a diagnostic says why; a witness when it is a race),
``unknown`` (with the reason). ``verify`` never raises for a problem in the user's program;
it reports it. Stages run in order and stop at the first that finds errors: static analyses
(scope, collectives, distributed memory, barrier usage), then the synchronization checkers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .errors import Diagnostic, ExoGpuError
from .ir.nodes import Procedure

VERDICTS = ("proven", "checked", "refuted", "unknown")
MODES = ("auto", "symbolic", "concrete")


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
        if self.verdict == "checked" and self.sizes:
            s += " at sizes " + ", ".join(f"{k}={v}" for k, v in self.sizes.items())
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
        }


def verify(p: Procedure, sizes: dict | None = None, mode: str = "auto",
           timeout_s: float = 60.0) -> Report:
    """Check that the synchronization of ``p`` is sufficient; see the module docstring."""
    t0 = time.perf_counter()
    if not isinstance(p, Procedure):
        raise TypeError(f"verify() expects a @proc, not {type(p).__name__}")
    if mode not in MODES:
        raise ValueError(f"verify(mode=...) must be one of {', '.join(MODES)}, not {mode!r}")
    stages: list[str] = []
    try:
        diags = _static_analyses(p, stages)
    except ExoGpuError as e:
        diags = [e.diagnostic]
    if diags:
        return Report(p.name, "refuted", tuple(diags), "static analysis failed", sizes,
                      stages=tuple(stages), seconds=time.perf_counter() - t0)
    reason = ("no synchronization checker is available yet (symbolic and concrete checkers "
              "are not implemented); the program is well-formed as far as the static "
              "analyses go")
    return Report(p.name, "unknown", (), reason, sizes, stages=tuple(stages),
                  seconds=time.perf_counter() - t0)


def _static_analyses(p: Procedure, stages: list[str]) -> list[Diagnostic]:
    """Run the static analyses that exist; each returns a list of diagnostics."""
    try:
        from .analysis import analyze_static
    except ImportError:
        return []
    stages.append("static")
    return list(analyze_static(p))
