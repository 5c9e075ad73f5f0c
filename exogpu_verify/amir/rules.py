"""The concrete machine's checks at the end of an allocation's life and for the cluster
barrier, and the splitting of part records, kept apart from the interpreter loop
(``docs/semantics.md``, "Frees", "Barriers", "Collective accesses").

* ``check_free``: every surviving access to freed shared memory is ordered before the free
  for every thread of the cluster (its async view, when the async proxy may reuse the bytes:
  ``amir/reuse.py``); registers of asynchronous instructions are released only after every
  asynchronous access to them completed.
* ``check_ring_balance``: at the free of an mbarrier ring, every element in use completed
  the phases of all its virtual indices, and the same elements are in use in every lifetime.
* ``ClusterBarrier``: the hardware has one cluster barrier (``barrier.cluster``) for every
  ``CudaClusterSync`` barrier of the program and for cluster-wide Fences, and "each thread
  must arrive at the barrier only once before the barrier completes" (PTX ISA 9.1,
  ``barrier.cluster``): per task, Arrives alternate with Awaits, no cluster Fence comes
  between an Arrive and its Await, and a task ends with no Arrive pending (else the next
  task of the persistent loop arrives twice).
"""

from __future__ import annotations

from ..ir.memories import MbarrierPhases
from ..ir.timelines import QUAL_TLS
from . import nodes as A
from .evaluate import CheckError, Hazard
from .hints import hazard_hint
from .machine import ALL, TEMPORAL
from .threads import range_mask

_FREE_BITS = (QUAL_TLS["c2"].bit, QUAL_TLS["aret"].bit)
_VIEW_BITS = (QUAL_TLS["aret"].bit,)
_RMEM_BITS = (QUAL_TLS["c1"].bit,)
_MBAR_BITS = (QUAL_TLS["mbar"].bit,)


def check_free(m, v, s: A.AmFree) -> None:
    """The free of variable state ``v`` (machine ``m``) at statement ``s``; raises Hazard.
    A family of batched records (``family.py``) passes ``has`` only if every live member
    does, so it is checked as its members would be."""
    if m.task == ALL:
        return
    if v.mem.is_shared:
        cluster = range_mask(0, m.cfg.blockDim * m.cfg.clusterDim)
        for rec in list(v.mutates) + list(v.reads) + list(v.fams or ()):
            proxy = rec.prx is not None and s.name in m.async_reuse
            if rec.has(TEMPORAL, _VIEW_BITS if proxy else _FREE_BITS, m.task, cluster, False):
                continue
            why = ("the access is not ordered before the free for every thread of the "
                   "cluster; add a CTA/cluster Fence before the end of the block")
            if proxy:
                why = ("the generic-proxy access is not made visible to the async proxy and "
                       "ordered before the free for every thread of the cluster (the kernel "
                       "writes shared memory through the async proxy, which may reuse this "
                       "memory)")
            raise Hazard("free without sync", v.name, rec.box, rec.event,
                         m.event(s.srcinfo, f"free of {v.name} (end of its block)"), why,
                         hint=hazard_hint(rec, None, "free", proxy))
    elif v.mem is MbarrierPhases:
        # the physical mbarriers of a ring live on into the next task of the persistent
        # kernel (codegen continues their phases): every lap of this task completes and is
        # awaited before the task ends, for every thread of the cluster (``phases.py``)
        cluster = range_mask(0, m.cfg.blockDim * m.cfg.clusterDim)
        for rec in list(v.mutates) + list(v.reads) + list(v.fams or ()):
            if rec.has(TEMPORAL, _MBAR_BITS, m.task, cluster, False):
                continue
            raise Hazard("free without sync", v.name, rec.box, rec.event,
                         m.event(s.srcinfo, f"end of the lifetime of {v.name}"),
                         "the mbarrier phase is not complete and ordered before the end of "
                         "its lifetime for every thread of the cluster: the next lifetime "
                         "(the next task of the persistent kernel) continues on the same "
                         "physical mbarriers, so its arrivals could count into this phase, or "
                         "complete the next one before this lifetime's waiters waited (they "
                         "would then miss their parity and hang)",
                         hint="await every phase (the copies that complete on it included) "
                              "and end the task with a CTA/cluster Fence")
    elif v.mem.async_registers:
        cluster = range_mask(0, m.cfg.blockDim * m.cfg.clusterDim)
        for rec in list(v.mutates) + list(v.reads) + list(v.fams or ()):
            lazy = rec.event.quals and rec.event.quals[0].lazy
            if lazy or rec.has(TEMPORAL, _RMEM_BITS, m.task, cluster, True):
                continue
            raise Hazard("free without sync", v.name, rec.box, rec.event,
                         m.event(s.srcinfo, f"end of the registers of {v.name}"),
                         "the asynchronous access is not complete when the registers are "
                         "released (the next task of the persistent kernel reuses them)",
                         hint="wait for the instruction's commit group (e.g. Await(cg, "
                              "cuda_in_order, 0)) before the end of the block")


def split_for_sync(m, rec, task: int, mask: int, temp1) -> None:
    """Before a synchronization by (task, mask) that may catch part record ``rec`` through
    its threads' own parts (its first qual in L1's temporal set), split off the parts of the
    threads it does not run on: each keeps the same box, flags and barrier attachments
    (``Record.split_off``), so that each is caught exactly by the threads that made it."""
    if task != rec.event.task or rec.q0 not in temp1:
        return
    other = rec.split_off(mask)
    if other is None:
        return
    m.adopt(rec.store, other, task)


class ClusterBarrier:
    """The one hardware cluster barrier, per task: the pending Arrive statement, if any."""

    def __init__(self):
        self.open: dict[int, A.AmArrive] = {}

    def arrive(self, task: int, s: A.AmArrive) -> None:
        prev = self.open.get(task)
        if prev is not None:
            raise CheckError(
                "barrier-usage", "second Arrive on a cluster barrier before an Await (the "
                f"first at line {getattr(prev.srcinfo, 'line', '?')}): every CudaClusterSync "
                "barrier and cluster-wide Fence is the one hardware barrier.cluster, which a "
                "thread may arrive at only once before it completes", s.srcinfo,
                hint="Await the first cluster barrier before arriving again")
        self.open[task] = s

    def await_(self, task: int) -> None:
        self.open.pop(task, None)

    def fence(self, task: int, s: A.AmFence) -> None:
        """A Fence run by the whole cluster (lowered to barrier.cluster arrive + wait)."""
        prev = self.open.get(task)
        if prev is not None:
            raise CheckError(
                "barrier-usage", "cluster-wide Fence between an Arrive on a cluster barrier "
                f"(line {getattr(prev.srcinfo, 'line', '?')}) and its Await: the Fence "
                "arrives at the same hardware barrier.cluster a second time", s.srcinfo,
                hint="Await the cluster barrier before the Fence, or move the Fence")

    def end_task(self, task: int) -> None:
        prev = self.open.pop(task, None)
        if prev is not None:
            raise CheckError(
                "barrier-usage", "the task ends after an Arrive on a cluster barrier without "
                "its Await: the next task of the persistent kernel would arrive at "
                "barrier.cluster a second time before it completes", prev.srcinfo,
                hint="Await the cluster barrier before the end of the task")


def check_ring_balance(m, b: dict, s: A.AmFree) -> None:
    """At the free of an mbarrier ring, every element in use has completed one phase per
    virtual index, and the same elements are in use in every lifetime of the allocation.

    The physical mbarriers of a ring are reused by the next lifetime (the next iteration of
    an enclosing loop, the next task of a persistent kernel), which continues counting
    phases: codegen advances the phase base of every element of the ring by its extent at
    the end of each lifetime. So a virtual index in ``[0, extent + pre_arrive)`` of an element
    in use that was never arrived on (e.g. a missing final release Arrive) leaves a slot one
    phase behind, and an element (its coordinates outside the ring dimension) used in some
    lifetimes and not in others is out of phase when it is used again; an element no
    lifetime uses is harmless. Arrives on pre-arrived indices, or an uneven number of Arrive
    instances per index, over-complete phases. Awaits only poll, so they are not counted,
    but they put an element in use."""
    mech = b["mech"]
    ring = b["ring"] or ()
    if mech.kind != "mbarrier":
        return
    # an mbarrier without a ring dimension has one phase per lifetime: every element in use
    # completes it (codegen advances its phase base at the end of every lifetime as well)
    rdims = [d for d, r in enumerate(ring) if r is not None]
    pre = mech.pre_arrive if rdims else 0
    groups: dict = {}
    for key, st in b["elems"].items():
        idx = key[1]
        outer = tuple(x for d, x in enumerate(idx) if d not in rdims)
        inner = tuple(idx[d] for d in rdims)
        groups.setdefault(outer, {})[inner] = st.arrives - st.base
    name = b["display"] or s.name

    def elem(outer, inner=None) -> str:
        full = list(outer)
        for d in rdims:
            full.insert(d, ":" if inner is None else str(inner[rdims.index(d)]))
        return f"{name}[{', '.join(map(str, full))}]"

    used = frozenset(groups)
    first = m.ring_usage.setdefault(s.name, (used, m.task_desc.get(m.task, "")))
    if used != first[0]:
        o = min(used ^ first[0])
        now = "used in this lifetime" if o in used else "not used in this lifetime"
        then = "not in an earlier one" if o in used else "used in an earlier one"
        where = f" (task ({first[1]}))" if first[1] else ""
        raise CheckError(
            "barrier-usage", f"{elem(o)} is {now} of {name} but {then}{where}: codegen "
            "advances the phases of every element of an mbarrier allocation at the end of "
            "each lifetime, so "
            "an element used in some lifetimes and not in others is out of phase when it is "
            "used again", s.srcinfo,
            hint="use the same elements of the barrier in every lifetime (e.g. not under a "
                 "condition on a task iterator), or give each use its own barrier")
    counts = set()
    span = b["shape"][rdims[0]] + pre if rdims else 1
    for outer, seen in groups.items():
        inners = [()]
        for d in rdims:
            inners = [i + (x,) for i in inners for x in range(b["shape"][d] + pre)]
        for inner in inners:
            n = seen.get(inner, 0)
            is_pre = any(x < pre for x in inner)
            where = elem(outer, inner)
            if is_pre and n:
                raise CheckError("barrier-usage", f"Arrive on {where}, a virtual index that "
                                 f"CudaMbarrierPreArrive({pre}) already counts as arrived: the "
                                 "ring's phases get ahead of its Awaits", s.srcinfo,
                                 hint=f"arrive on index i + {pre} to release slot i")
            if not is_pre:
                if not n:
                    raise CheckError(
                        "barrier-usage", f"{where} is never arrived on before {name} is "
                        f"freed: every virtual index in [0, {span}) of an element in use must "
                        "complete its phase in every lifetime, or the physical mbarrier "
                        "is left a phase behind for the next task", s.srcinfo,
                        hint="add the missing Arrive (e.g. the final release of the last "
                             "slot after the loop)")
                counts.add(n)
    if len(counts) > 1:
        raise CheckError("barrier-usage", f"the virtual indices of {name} receive different "
                         f"numbers of Arrive instances ({sorted(counts)}); every phase of an "
                         "mbarrier needs the same arrival count", s.srcinfo)
