"""Condition obligations: every instance of a checked statement meets its conditions.

For each ``check`` event (an ``AmCheck``: window bounds, argument shapes, instruction and
resource preconditions that depend on sizes or loop variables) and each of its conditions,
the obligation is the set of instances, for sizes satisfying the asserts, where the
condition is false: ``{ [loop vars] : context and domain and not cond }``, which isl and Z3
must find empty. The obligation's kind is the condition's diagnostic kind; a non-empty set
is replayed concretely like every other obligation (the concrete machine evaluates the same
condition at the same statement and reports it with its values).
"""

from __future__ import annotations

import time

import islpy as isl

from ..ir.affine import NotAffine, cond_to_isl_str
from .decide import decide
from .events import Event, Unsupported
from .obligations import Obligation
from .relations import Encoder


def condition_obligations(e: Event, enc: Encoder, ms: int):
    for c in e.extra["conds"]:
        t = time.perf_counter()
        try:
            cond = cond_to_isl_str(c.cond, enc.ren(e, "a"))
        except NotAffine as na:
            raise Unsupported(f"a {c.kind} condition that is not affine ({na.reason}): "
                              f"{c.what}", e.srcinfo) from None
        text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(e, 'a'))}] : {enc.context} and "
                f"{enc.dom(e, 'a')} and not ({cond}) }}")
        line = e.srcinfo.line if e.srcinfo is not None else "?"
        ob = Obligation(f"{c.kind}: {c.fact or c.what} (line {line})", c.kind, None, e, text)
        decide(ob, isl.Set(text), ms)
        ob.seconds = time.perf_counter() - t
        yield ob


__all__ = ["condition_obligations"]
