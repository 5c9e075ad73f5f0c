"""Python source -> GPU IR (``@proc``, ``@instr``) and IR -> source (the printer)."""

from .decorators import instr, parse_proc_source, proc  # noqa: F401
from ..ir.printer import print_proc, roundtrip_env  # noqa: F401
