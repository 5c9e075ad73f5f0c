"""Deciding one obligation: isl says whether the remainder is empty, Z3 says it again."""

from __future__ import annotations

import islpy as isl

from .events import Unsupported
from .obligations import Obligation
from .z3bridge import set_to_z3, to_smtlib, z3_check


def decide(ob: Obligation, remainder: isl.Set, timeout_ms: int) -> None:
    """Set ``ob.empty`` when isl and Z3 agree; ``Unsupported`` when Z3 gives up or they
    disagree (never a verdict on the user's program)."""
    ob.remainder = remainder
    empty = remainder.is_empty()
    f, _ = set_to_z3(remainder)
    z, stats = z3_check(f, timeout_ms)
    ob.extra = {"z3": z, "z3_stats": {k: (v if isinstance(v, (int, float)) else str(v))
                                      for k, v in stats.items()},
                "smtlib": to_smtlib(f)}
    if empty and z == "unsat":
        ob.empty = True
    elif not empty and z == "sat":
        ob.empty = False
    elif z == "unknown":
        raise Unsupported(f"Z3 gave up on obligation {ob.name}")
    else:
        raise Unsupported(f"isl and Z3 disagree on obligation {ob.name} (isl empty={empty}, "
                          f"z3 {z}); this is a bug in exogpu")
