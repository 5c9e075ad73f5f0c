"""Hints by cause for the synchronization rules of proxies and wgmma registers
(``docs/semantics.md``).

``hazard_hint(rec, later, kind)`` names the fix when the cause of a hazard is one of these
rules (a Fence that lacks the proxy timeline, a missing proxy fence, a missing
``wgmma.fence``, an access between ``wgmma_zero`` and its wgmma), else None: the generic
advice of the report stays.
"""

from __future__ import annotations

_PROXY_FENCE = "Fence(cuda_in_order, cuda_generic_and_async_proxy)"
_WGMMA_FENCE = "Fence(wgmma_fence_1, wgmma_fence_2)"


def _line(si) -> str:
    return str(getattr(si, "line", "?"))


def _q0(event):
    quals = getattr(event, "quals", ()) if event is not None else ()
    return quals[0] if quals else None


def hazard_hint(rec, later, kind: str, proxy_free: bool = False,
                phases: bool = False, issues: bool = False) -> str | None:
    """The fix for a hazard between earlier record ``rec`` and the later access event
    ``later`` (None for a free; ``proxy_free`` when the free needs the async proxy's view;
    ``phases`` when the variable is a ring's physical mbarrier phases, ``issues`` its copy
    issues, ``amir/phases.py``)."""
    q_old, q_new = _q0(rec.event), _q0(later)
    if issues:
        return (f"arrive from the thread that issues the copy at line "
                f"{_line(rec.event.srcinfo)} (the lowest thread of its warp, which the "
                "generated code elects: e.g. `for t in cuda_threads(0, 1, unit=cuda_thread): "
                "Arrive(...)` in the issuing warp, after the copy), or order the issue before "
                "the Arrive by synchronization: the copy's mbarrier.expect_tx must be done "
                "before the phase can complete, else the phase completes with its bytes not "
                "counted and the Await passes before they land (docs/semantics.md, \"Copy "
                "issues\")")
    if phases:
        return ("the ring reuses this hardware mbarrier (slot = running index mod depth) for "
                "a later lap before the earlier lap's phase has completed: make the ring at "
                "least as deep as the stages its producer runs ahead (ring_buffer_by), or "
                "order the later lap's Arrive/copy/Await after the earlier lap's Await "
                "(docs/semantics.md, \"Physical phases of an mbarrier ring\")")
    generic_then_async = rec.prx is not None and (
        proxy_free or (q_new is not None and q_new.proxy == "async"))
    if generic_then_async:
        if rec.pfence is not None:
            return (f"add cuda_generic_and_async_proxy to the Fence at line "
                    f"{_line(rec.pfence)} (its second timeline, e.g. {_PROXY_FENCE}): a "
                    "generic-proxy access reaches the async proxy only through a proxy fence "
                    "executed by the threads that made it (PTX ISA, async proxy)")
        if rec.prx:
            return (f"insert {_PROXY_FENCE} executed by the threads that made the generic "
                    f"access at line {_line(rec.event.srcinfo)} (e.g. once per warp), then the "
                    "synchronization that hands the memory on (a CTA barrier, or an mbarrier "
                    "Arrive/Await): a Fence or Await on cuda_in_order alone does not order "
                    "generic-proxy accesses before async-proxy ones (PTX ISA, async proxy)")
        return ("the threads of the generic access ran a proxy fence, but nothing after that "
                "fence orders it before this access: synchronize after the proxy Fence (a CTA "
                "barrier, or an mbarrier Arrive/Await by the fencing threads)")
    if q_new is not None and q_old is not None and q_new.hw_ordered and q_old.hw_ordered:
        # two wgmmas' accumulator accesses conflict only when their shapes differ
        # (amir/convert.py, _unorder_mixed_shapes)
        return (f"insert {_WGMMA_FENCE} before the wgmma at line {_line(later.srcinfo)}, or "
                "give each wgmma shape its own accumulator: the hardware orders accumulator "
                "accesses only between wgmmas of the same shape (m64nNkK), and the wgmma at "
                f"line {_line(rec.event.srcinfo)} has another (PTX ISA, wgmma.fence)")
    if q_new is not None and q_new.reg_async and q_old is not None and not q_old.reg_async \
            and not q_old.lazy:
        return (f"insert {_WGMMA_FENCE} before the wgmma at line {_line(later.srcinfo)} "
                "(wgmma.fence): a wgmma may not access registers that other instructions "
                "accessed since the last wgmma.fence, including the registers' earlier use "
                "before their allocation (PTX ISA, wgmma.fence)")
    if q_old is not None and q_old.lazy and (q_new is None or not q_new.reg_async):
        return ("wgmma_zero only marks the accumulator: the zeros are written by the next "
                "wgmma on it; access the accumulator after that wgmma (and its commit-group "
                "wait)")
    return None
