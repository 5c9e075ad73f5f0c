"""Access histories with visibility, and how synchronization widens it (paper 5.3; notes 2.6).

Model (documented in ``docs/semantics.md``): four independent visibility flags per
(thread, qualitative timeline): ``atomic``, ``temporal``, ``full``, ``issue``. A record is one
access to a *box* of an array (never one per element). Thread sets are ``{task: bitmask}``
dicts, with ``ALL`` standing for every thread (CPU code and kernel boundaries).

* A new in-order access by threads S on its first qual q0 gets all four flags for (S, q0);
  an asynchronous one only ``issue``.
* A sync by S' with first timeline L1 *synchronizes with* a record if some thread of S' has
  ``issue`` or ``full`` on a qual of L1: through L1's full set the result is ``full``,
  through only its temporal-only set it is ``temporal``.
* Its effect (Fence at once; Arrive -> matching Await later) augments the record for the
  threads S'' of the Fence/Await: ``full`` level: atomic, full, issue <- F(L2) and temporal
  <- T(L2); ``temporal`` level: temporal <- T(L2); all restricted to the memory's quals.
* Checks for an access by S with extended quals E: a read needs ``full`` on some q in E of
  every earlier overlapping mutation; a write-only mutation needs ``temporal`` of earlier
  mutations and reads; a read-write mutation ``full`` of mutations and ``temporal`` of reads;
  an atomic access ``atomic`` of non-atomic earlier accesses. For a convergent access one
  executing thread suffices, otherwise all must have it.
* Exceptions to "asynchronous = issue only": wgmma accumulator accesses (qual wgD) are
  in-order (the hardware chains wgmmas on one accumulator, PTX ISA 9.7.15.6), unless
  wgmmas of several shapes access the accumulator (``AmAccess.hw_order`` False: the
  hardware orders only same-shape ones). A ``lazy``
  access (``wgmma_zero``) is recorded but neither checked nor superseding.
* Part records: an access of a non-convergent qual by several threads (a collective
  instruction) gives its threads only their own, unknown parts: no initial flags, and a
  sync catches it through its first qual only on every thread of it (``own_level``); a
  sync on some of them first splits it (``split_off``, ``rules.split_for_sync``).
* Proxies: a record of a generic-proxy access (first qual c2 or sm80) never receives the
  async proxy's quals from ordinary grants. Its *async view* (flags on ``aret``) is made by
  a proxy Fence (second timeline with ``aret`` in its full set) that catches it at ``full``
  once every accessing thread has executed one (``prx`` holds those still to do it), and
  then travels through synchronization as far as the generic access itself does
  (``SyncTL.generic_carry``), caught only through threads that hold it.
* Barriers: an instruction's trailing barrier must be attached before the Arrive that
  completes the phase its Await waits for; at the free of an mbarrier ring every virtual
  index in ``[0, extent + pre_arrive)`` must have been arrived on (pre-arrived indices
  exactly by the pre-arrive), uniformly, or the physical ring is out of phase.
* Records that cannot matter are not kept: reads of variables that no statement mutates
  (outside SMEM), and records of freed or superseded accesses; consecutive reads by one
  statement and collective with untouched initial flags are coalesced into one box.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.timelines import ASYNC_PROXY_QUALS, ASYNC_VIEW, GENERIC_PROXY_QUALS

ALL = -1  # task key meaning "every thread"
ATOMIC, TEMPORAL, FULL, ISSUE = range(4)
FLAG_NAMES = ("atomic", "temporal", "full", "issue")
ASYNC_BITS = frozenset(q.bit for q in ASYNC_PROXY_QUALS)
GENERIC_BITS = frozenset(q.bit for q in GENERIC_PROXY_QUALS)
ARET = ASYNC_VIEW.bit


def carry_level(full_bits, temporal_bits) -> int:
    """FULL, TEMPORAL or 0: how far a timeline (as bit sets) carries a generic-proxy access
    (``SyncTL.generic_carry``)."""
    for b in GENERIC_BITS:
        if b in full_bits:
            return FULL
    for b in GENERIC_BITS:
        if b in temporal_bits:
            return TEMPORAL
    return 0


def covers(ts: dict, task: int, mask: int, convergent: bool) -> bool:
    if ALL in ts:
        return True
    if task == ALL:
        return False
    m = ts.get(task, 0)
    return bool(m & mask) if convergent else (m & mask) == mask


def touches(ts: dict, task: int, mask: int) -> bool:
    if ALL in ts or task == ALL:
        return bool(ts)
    return bool(ts.get(task, 0) & mask)


@dataclass(eq=False)
class Event:
    """One executed access or sync statement, kept for reports."""

    srcinfo: object
    what: str
    task: int
    mask: int
    quals: tuple
    env: dict


class Record:
    """Visibility of one access to a box: flags[(qual bit, flag)] -> {task: mask}."""

    __slots__ = ("box", "mutate", "atomic", "event", "flags", "qmask", "pending", "var", "key",
                 "dead", "init_flags", "prx", "pfence", "own", "part", "q0", "store",
                 "enrolled")

    def __init__(self, box, mutate, atomic, event, qmask, var, key=False):
        self.box = box
        self.key = point_key(box) if key is False else key
        self.mutate = mutate
        self.atomic = atomic
        self.event = event
        self.flags: dict = {}
        self.qmask = qmask  # bits of quals the memory allows
        self.pending: list = []
        self.var = var
        self.dead = False  # superseded or freed
        self.init_flags = None
        #: generic-proxy records only: mask of the accessing threads (of ``event.task``) that
        #: have not executed a proxy fence since the access; None for other records
        self.prx = None
        #: a Fence by the accessing threads that caught this record without the proxy
        #: timeline (named in the hint of a cross-proxy hazard)
        self.pfence = None
        #: the accessing threads (of ``event.task``) whose parts this record holds
        self.own = event.mask if event is not None else 0
        #: True for a part record: one access of a non-convergent qual by several threads
        #: (a collective instruction), whose threads each accessed an unknown part of the box.
        #: Its own threads see only their own part, so ``flags`` holds only complete
        #: visibility (initially none), and a synchronization catches the parts of the threads
        #: it runs on (``own_level``; the machine splits the record first, ``split_off``).
        self.part = False
        self.q0 = None  # first qual bit of a part record
        self.store = None  # the RecStore holding it
        #: an Arrive caught it (a barrier phase or commit group holds it) without changing
        #: its flags: it may no longer be extended by a later access (``_coalesce``)
        self.enrolled = False

    def copy_with_box(self, box) -> "Record":
        r = Record(box, self.mutate, self.atomic, self.event, self.qmask, self.var)
        r.flags = {k: dict(v) for k, v in self.flags.items()}
        r.pending = list(self.pending)
        r.prx, r.pfence = self.prx, self.pfence
        r.own, r.part, r.q0 = self.own, self.part, self.q0
        r.enrolled = self.enrolled
        return r

    def split_off(self, mask: int) -> "Record | None":
        """For a part record partly covered by a synchronization run by ``mask`` (of the
        record's task): keep the parts of ``mask``'s threads here and return a record with
        the others (same box, flags and pending entries), or None if nothing is split."""
        rest = self.own & ~mask
        if not rest or not self.own & mask:
            return None
        r = self.copy_with_box(self.box)
        r.key = self.key
        r.own = rest
        self.own &= mask
        if self.prx is not None:
            r.prx, self.prx = self.prx & rest, self.prx & mask
        return r

    def own_level(self, task: int, mask: int, full_bits, temporal_bits) -> int:
        """FULL, TEMPORAL or 0: a synchronization by (task, mask) that runs on every thread
        of this part record's parts catches them through their own first qual."""
        if task == ALL:
            covered = True
        else:
            covered = task == self.event.task and self.own and not self.own & ~mask
        if not covered:
            return 0
        if self.q0 in full_bits:
            return FULL
        return TEMPORAL if self.q0 in temporal_bits else 0

    def add(self, q: int, flag: int, task: int, mask: int) -> None:
        ts = self.flags.get((q, flag))
        if ts is None:
            ts = self.flags[(q, flag)] = {}
        if task == ALL:
            ts.clear()
            ts[ALL] = -1
        elif ALL not in ts:
            ts[task] = ts.get(task, 0) | mask

    def has(self, flag: int, quals, task: int, mask: int, convergent: bool) -> bool:
        for q in quals:
            ts = self.flags.get((q, flag))
            if ts and covers(ts, task, mask, convergent):
                return True
        return False

    def sync_level(self, task: int, mask: int, full_bits, temporal_bits) -> int | None:
        """FULL or TEMPORAL if a sync by (task, mask) with this L1 synchronizes with us.

        For a generic-proxy record the result is a code ``normal | view << 2``: ``normal``
        the level through its non-async quals, ``view`` the level at which the sync carries
        its async view (caught through threads holding ``aret``; ``carry_level`` of L1)."""
        if self.prx is not None:
            code = self._generic_level(task, mask, full_bits, temporal_bits)
        else:
            code = None
            for q in temporal_bits:
                for flag in (ISSUE, FULL):
                    ts = self.flags.get((q, flag))
                    if ts and touches(ts, task, mask):
                        if q in full_bits:
                            code = FULL
                            break
                        code = TEMPORAL
                if code == FULL:
                    break
        if self.part:
            own = self.own_level(task, mask, full_bits, temporal_bits)
            if own and (code or 0) & 3 < own:
                code = ((code or 0) & ~3) | own
        return code

    def _generic_level(self, task, mask, full_bits, temporal_bits) -> int | None:
        level = 0
        for q in temporal_bits:
            if q in ASYNC_BITS:
                continue
            for flag in (ISSUE, FULL):
                ts = self.flags.get((q, flag))
                if ts and touches(ts, task, mask):
                    level = FULL if q in full_bits else max(level, TEMPORAL)
            if level == FULL:
                break
        view = 0
        carry = carry_level(full_bits, temporal_bits)
        if carry:
            for flag in (ISSUE, FULL):
                ts = self.flags.get((ARET, flag))
                if ts and touches(ts, task, mask):
                    view = carry
                    break
        code = level | (view << 2)
        return code or None

    def augment(self, task: int, mask: int, L2_full, L2_temporal, level: int) -> None:
        qm = self.qmask
        if self.prx is not None:
            self._augment_generic(task, mask, L2_full, L2_temporal, level)
            return
        if level == FULL:
            for q in L2_full:
                if q in qm:
                    self.add(q, ATOMIC, task, mask)
                    self.add(q, FULL, task, mask)
                    self.add(q, ISSUE, task, mask)
        for q in L2_temporal:
            if q in qm:
                self.add(q, TEMPORAL, task, mask)

    def _augment_generic(self, task, mask, L2_full, L2_temporal, level: int) -> None:
        qm = self.qmask
        normal, view = level & 3, level >> 2
        if normal == FULL:
            for q in L2_full:
                if q in qm and q not in ASYNC_BITS:
                    self.add(q, ATOMIC, task, mask)
                    self.add(q, FULL, task, mask)
                    self.add(q, ISSUE, task, mask)
        if normal:
            for q in L2_temporal:
                if q in qm and q not in ASYNC_BITS:
                    self.add(q, TEMPORAL, task, mask)
        if view and ARET in qm:
            carry = carry_level(L2_full, L2_temporal)
            if view == FULL and carry == FULL:
                self.grant_view(task, mask)
            elif carry:
                self.add(ARET, TEMPORAL, task, mask)

    def grant_view(self, task: int, mask: int) -> None:
        """All flags of the async view (``aret``) for (task, mask)."""
        for flag in (ATOMIC, TEMPORAL, FULL, ISSUE):
            self.add(ARET, flag, task, mask)

    def fenced(self, task: int, mask: int, proxy: bool, srcinfo) -> None:
        """A Fence by (task, mask) caught this generic record at ``full``: with the proxy
        timeline it is its threads' proxy fence (the async view exists once every accessing
        thread ran one); without it, remember the Fence for the hint."""
        if proxy:
            if self.proxy_fenced(task, mask):
                self.grant_view(task, mask)
        elif srcinfo is not None and task == self.event.task and mask & self.event.mask:
            self.pfence = srcinfo

    def proxy_fenced(self, task: int, mask: int) -> bool:
        """A proxy Fence by (task, mask) caught this generic record at ``full``: remove its
        threads from those still to fence; True when the Fence makes the async view (it is
        run by some accessing thread and no accessing thread is left without a fence)."""
        ev = self.event
        if task == ALL:
            self.prx = 0
            return True
        if task != ev.task or not ev.mask & mask:
            return False
        self.prx &= ~mask
        return self.prx == 0

    def tasks(self):
        out = set()
        for ts in self.flags.values():
            out.update(ts)
        return out


def overlap(a, b) -> bool:
    for (alo, ahi), (blo, bhi) in zip(a, b):
        if alo >= bhi or blo >= ahi:
            return False
    return True


def contains(outer, inner) -> bool:
    return all(olo <= ilo and ihi <= ohi for (olo, ohi), (ilo, ihi) in zip(outer, inner))


def subtract(box, cut):
    """Boxes covering ``box`` minus ``cut`` (at most 2 per dimension)."""
    out = []
    rest = list(box)
    for d, ((lo, hi), (clo, chi)) in enumerate(zip(box, cut)):
        if clo > lo:
            piece = list(rest)
            piece[d] = (lo, min(hi, clo))
            out.append(tuple(piece))
        if chi < hi:
            piece = list(rest)
            piece[d] = (max(lo, chi), hi)
            out.append(tuple(piece))
        rest[d] = (max(lo, clo), min(hi, chi))
    return out


class VarState:
    """Access history of one allocation instance (or parameter)."""

    __slots__ = ("name", "mem", "shape", "mutates", "reads", "task", "untracked_reads",
                 "last_read", "fams")

    def __init__(self, name, mem, shape, task):
        self.fams = None  # batched records (``family.FamStore``), kept out of the stores
        self.untracked_reads = False  # never mutated and not SMEM: reads need no record
        self.last_read = None  # (statement, task, mask, record) of the last read record
        self.name = name
        self.mem = mem
        self.shape = shape
        self.mutates = RecStore()
        self.reads = RecStore()
        self.task = task


class BarrierState:
    """One barrier element: arrive count and the records waiting on it."""

    __slots__ = ("arrives", "pending", "kind", "pre", "awaited", "trailing", "ctas", "base")

    def __init__(self, kind: str, pre: bool):
        self.arrives = 1 if pre else 0
        self.base = self.arrives  # arrivals before this lifetime (a pre-arrived index)
        self.ctas: dict = {}  # mbarriers: arriving CTA -> the Arrive event (one-shot)
        self.pending: list = []  # (record, count, level)
        self.trailing: list = []  # (record, arrive count when the instruction was issued)
        self.kind = kind
        self.pre = pre
        self.awaited = False


def point_key(box):
    """The index of a single-element box, or None."""
    key = []
    for lo, hi in box:
        if hi != lo + 1:
            return None
        key.append(lo)
    return tuple(key)


def _volume(box) -> int:
    n = 1
    for lo, hi in box:
        n *= max(hi - lo, 0)
    return n


def _points(box):
    idx = [()]
    for lo, hi in box:
        idx = [i + (x,) for i in idx for x in range(lo, hi)]
    return idx


class RecStore:
    """Records of one kind (mutations or reads) of a variable, indexed for overlap queries.

    Single-element records (scalar code) live in a dict keyed by their index. Wider boxes
    (instruction tiles) live in buckets of ``BUCKET`` rows of their first dimension, so a
    query scans only the tiles near it (a GEMM's C tiles stay O(1) per store instead of
    O(#tasks)); boxes spanning more than ``MAX_SPAN`` buckets go to a list scanned always.
    """

    __slots__ = ("points", "buckets", "wide")
    BUCKET = 64
    MAX_SPAN = 16

    def __init__(self):
        self.points: dict = {}
        self.buckets: dict = {}
        self.wide: list = []

    def _span(self, box):
        if not box:
            return None
        lo, hi = box[0]
        a, b = lo // self.BUCKET, max(lo, hi - 1) // self.BUCKET
        return None if b - a >= self.MAX_SPAN else range(a, b + 1)

    def __iter__(self):
        for lst in self.points.values():
            yield from lst
        seen = set()
        for lst in self.buckets.values():
            for r in lst:
                if id(r) not in seen:
                    seen.add(id(r))
                    yield r
        yield from self.wide

    def add(self, rec) -> None:
        rec.store = self
        if rec.key is not None:
            lst = self.points.get(rec.key)
            if lst is None:
                self.points[rec.key] = [rec]
            else:
                lst.append(rec)
            return
        span = self._span(rec.box)
        if span is None:
            self.wide.append(rec)
            return
        for k in span:
            self.buckets.setdefault(k, []).append(rec)

    def _boxes_near(self, box) -> list:
        span = self._span(box)
        if span is not None and len(span) == 1:
            return self.buckets.get(span[0], []) + self.wide
        keys = self.buckets.keys() if span is None else span
        seen, out = set(), []
        for k in keys:
            for r in self.buckets.get(k, ()):
                if id(r) not in seen:
                    seen.add(id(r))
                    out.append(r)
        return out + self.wide

    def overlapping(self, box, key=None) -> list:
        pts = self.points
        if key is not None:
            out = list(pts.get(key, ()))
            if self.buckets or self.wide:
                for r in self._boxes_near(box):
                    if overlap(r.box, box):
                        out.append(r)
            return out
        out = []
        if pts:
            if _volume(box) <= len(pts):
                for k in _points(box):
                    lst = pts.get(k)
                    if lst:
                        out += lst
            else:
                for k, lst in pts.items():
                    if all(lo <= x < hi for x, (lo, hi) in zip(k, box)):
                        out += lst
        if self.buckets or self.wide:
            for r in self._boxes_near(box):
                if overlap(r.box, box):
                    out.append(r)
        return out

    def remove(self, rec) -> None:
        if rec.key is not None:
            lst = self.points.get(rec.key)
            if lst is not None:
                lst.remove(rec)
                if not lst:
                    del self.points[rec.key]
            return
        span = self._span(rec.box)
        if span is None:
            self.wide.remove(rec)
            return
        for b in span:
            lst = self.buckets[b]
            lst.remove(rec)
            if not lst:
                del self.buckets[b]
