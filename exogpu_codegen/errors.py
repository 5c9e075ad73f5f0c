"""User-facing errors of the backend: everything is an ``ExoGpuError`` with a diagnostic.

``not_supported(what, node)`` names the construct and its source line; ``usage(msg)`` is for
bad calls (missing nvcc or GPU, wrong arrays, refused by the proof gate).
"""

from __future__ import annotations

from exogpu_verify.errors import Diagnostic, ExoGpuError


def not_supported(what: str, node=None, hint: str | None = None) -> ExoGpuError:
    """``exogpu-codegen`` cannot lower ``what`` yet (kind ``usage``), located at ``node``."""
    si = getattr(node, "srcinfo", None)
    if si is not None and si.line == 0:
        si = None
    return ExoGpuError(Diagnostic.at("usage", f"code generation: {what} is not supported yet",
                                     si, hint))


def usage(message: str, hint: str | None = None, node=None) -> ExoGpuError:
    si = getattr(node, "srcinfo", None)
    if si is not None and si.line == 0:
        si = None
    return ExoGpuError(Diagnostic.at("usage", message, si, hint))
