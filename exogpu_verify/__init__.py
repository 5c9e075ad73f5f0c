"""exogpu_verify: the exogpu language and everything that proves things about it.

``from exogpu_verify import *`` gives the language of LANGUAGE.md: ``proc``, ``instr``,
types, memories, collective units, timelines, loop and synchronization keywords, and the
entry points ``verify`` and ``interpret``. Importing needs no GPU, CuPy or nvcc.

The package is layered (``pyproject.toml``, ``[tool.importlinter]``): ``ir`` <- ``report`` /
``errors`` <- ``frontend`` <- ``platforms`` <- ``analysis`` | ``semantics`` <- ``amir`` <-
``symbolic`` <- ``api`` | ``schedule`` <- ``output`` / ``pictures`` / ``loader`` <- ``cli`` |
``facade`` | ``exogpu_codegen``; no module imports a layer above its own.
"""

from .errors import ExoGpuError, InternalError  # noqa: F401
from .facade import interpret, parse_proc_source, proc, verify  # noqa: F401
from .frontend.decorators import instr  # noqa: F401
from .frontend.namespace import *  # noqa: F401,F403  (the language's names)
from .frontend.namespace import LANGUAGE_NAMES
from .ir.nodes import Procedure  # noqa: F401
from .report import Diagnostic  # noqa: F401

__all__ = ["Diagnostic", "ExoGpuError", "InternalError", "Procedure", "instr", "interpret",
           "parse_proc_source", "proc", "verify", *LANGUAGE_NAMES]
