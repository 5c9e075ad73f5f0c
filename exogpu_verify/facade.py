"""The user's entry points, wired together: ``proc``, ``parse_proc_source``, ``verify``,
``interpret``, and the ``ProcedureTools`` behind ``p.verify()``, ``p.interpret()`` and the
Exo-style cursors ``p.find()``, ``p.find_loop()``, ``p.find_alloc_or_arg()``, ``p.forward()``.

This module sits above every layer it wires (``api``, ``semantics``, ``schedule``, the
frontend) and hands the tools *down* to the frontend explicitly, so the IR never imports
upward and nothing depends on import order. The layers are imported when first used, so
``from exogpu_verify import *`` stays light.
"""

from __future__ import annotations

from .frontend.decorators import parse_proc_source as _parse_proc_source
from .frontend.decorators import proc_decorator
from .ir.nodes import InstrInfo, Procedure, ProcedureTools


def verify(p: Procedure, sizes: dict | None = None, mode: str | None = None,
           timeout_s: float | None = None):
    """Check ``seq[p] == par[p]``; see ``exogpu_verify.api.verify``."""
    from .api import verify as _verify

    return _verify(p, sizes=sizes, mode=mode, timeout_s=timeout_s)


def interpret(p: Procedure, **args):
    """Run ``p`` with its sequential meaning on numpy arrays (in place)."""
    from .semantics import interpret as _interpret

    return _interpret(p, **args)


def _verify_sizes(p, sizes):
    # ``p.verify()`` without sizes is the all-size check, as ``verify(p)``
    return verify(p, sizes=sizes or None)


def _interpret_args(p, args):
    return interpret(p, **args)


def _find(p, pattern, many=False):
    from .schedule.cursors import find

    return find(p, pattern, many)


def _find_loop(p, pattern, many=False):
    from .schedule.cursors import find_loop

    return find_loop(p, pattern, many)


def _find_alloc_or_arg(p, name):
    from .schedule.cursors import find_alloc_or_arg

    return find_alloc_or_arg(p, name)


def _forward(p, cursor):
    from .schedule.cursors import forward

    return forward(p, cursor)


TOOLS = ProcedureTools(verify=_verify_sizes, interpret=_interpret_args, find=_find,
                       find_loop=_find_loop, find_alloc_or_arg=_find_alloc_or_arg,
                       forward=_forward)

#: ``@proc``: parse a decorated function into a procedure that carries ``TOOLS``
proc = proc_decorator(TOOLS)


def parse_proc_source(text: str, env: dict | None = None, file: str = "<string>",
                      instr_info: InstrInfo | None = None) -> Procedure:
    """Parse the first ``def`` in ``text`` as a procedure that carries ``TOOLS``."""
    return _parse_proc_source(text, env, file, instr_info, tools=TOOLS)
