"""Batched records: all records one access statement leaves behind over a loop nest.

A ``Family`` stands for the point records that the per-element machine creates when one
point-access statement runs over every iteration of a loop nest (``batch.py``): one record
per executed instance, box ``{e}`` (its element), flags ``{(q0, f): {task: m}}`` for its
executing threads ``m``. It keeps them as a dense array ``ids`` over the bounding box
(``hull``) of the elements: ``ids[e]`` is the *mask id* (an index into the machine's table of
thread masks, ``masks``) of the live records on element ``e``, ``-1`` when none is live, and
``-2`` when live records with several different masks share the element (then
``inst_lin``/``inst_mid`` list every instance: its flat element index and mask id).

Proxy state. A member of a generic-proxy family (first qual ``c2``) is a single thread's
record, whose ``prx`` (the accessing threads still to run a proxy Fence) is its own thread
until a proxy Fence by that thread catches it at ``full``, then 0. Members are treated
alike, so the family keeps one ``prx``: None for a non-generic family, the union of the
members' threads while none is fenced, 0 once all are (``proxy_fenced``). ``pfence`` (the
Fence named in a cross-proxy hint) is the representative event's; hints are only read from
reports, which the per-element machine re-makes (``check.py``).

Flags. Every member started with the same flags except its own threads, and every later
operation treated all members alike (the machine keeps it so, see ``uniform_for``), so the
flags of a member with mask id ``k`` are ``flags`` (shared, the *absolute* part) plus
``{task: masks[k]}`` on every key of ``selfkeys``: ``member(k)`` builds that record, and all
per-member questions are answered by the ordinary ``Record`` methods on it. A key leaves
``selfkeys`` when the absolute part already covers every member's threads.

What the family must give, for the batched machine to be sound (``batch.py`` states the
argument): every question asked about a family is answered as for the set of its member
records, or more strictly (a check that may fail, a synchronization that grants less).
"""

from __future__ import annotations

import numpy as np

from .machine import ALL, Event, Record, overlap


class Family(Record):
    """The live point records of one statement over one execution of a loop nest."""

    __slots__ = ("task", "selfkeys", "ids", "hull", "inst_lin", "inst_mid", "mids", "union",
                 "masks", "vs")

    def __init__(self, vs, hull, ids, mutate, atomic, event, qmask, task, selfkeys, masks,
                 mids, inst_lin=None, inst_mid=None, union=None):
        super().__init__(hull, mutate, atomic, event, qmask, vs.name, None)
        self.vs = vs  # the VarState holding the family (in its ``fams`` store)
        self.hull = hull
        self.ids = ids  # np.int32 array shaped like the hull
        self.task = task
        self.selfkeys = set(selfkeys)
        self.masks = masks  # the machine's mask table (list: id -> bitmask)
        # mask ids of the members and the union of their masks: supersets of the live
        # members' suffice (uniform_for, split and normalize only need to cover them)
        self.mids = tuple(mids)
        if union is None:
            union = 0
            for k in self.mids:
                union |= masks[k]
        self.union = union
        self.inst_lin = inst_lin
        self.inst_mid = inst_mid

    # ------------------------------------------------------------ members
    def member(self, mid: int) -> Record:
        """The record of a member with mask id ``mid`` (not registered anywhere)."""
        r = Record(self.hull, self.mutate, self.atomic, self.event, self.qmask, self.var, None)
        flags = {k: dict(v) for k, v in self.flags.items()}
        m = self.masks[mid]
        for k in self.selfkeys:
            ts = flags.get(k)
            if ts is None:
                flags[k] = {self.task: m}
            elif ALL not in ts:
                ts[self.task] = ts.get(self.task, 0) | m
        r.flags = flags
        if self.prx is not None:
            r.prx = m if self.prx else 0
        r.own = m
        return r

    def region(self, box):
        """Slices of ``ids`` for the part of ``box`` inside the hull, or None if disjoint."""
        out = []
        for (lo, hi), (hlo, hhi) in zip(box, self.hull):
            a, b = max(lo, hlo), min(hi, hhi)
            if a >= b:
                return None
            out.append(slice(a - hlo, b - hlo))
        return tuple(out)

    def _select(self, region):
        sel = np.zeros(self.ids.shape, bool)
        sel[region] = True
        return sel.reshape(-1)

    def live_mids(self, region=()) -> set:
        """Mask ids of the live members on the elements of ``region`` (all by default)."""
        sub = self.ids[region]
        vals = np.unique(sub)
        out = {int(x) for x in vals if x >= 0}
        if vals.size and vals[0] == -2:
            multi = self._select(region) & (self.ids.reshape(-1) == -2)
            out |= {int(x) for x in np.unique(self.inst_mid[multi[self.inst_lin]])}
        return out

    def is_live(self) -> bool:
        return bool((self.ids != -1).any())

    def kill(self, region=(), where=None) -> None:
        """Supersede the members on ``region`` (where the boolean array ``where`` is true)."""
        if where is None:
            self.ids[region] = -1
        else:
            sub = self.ids[region]
            sub[where] = -1
            self.ids[region] = sub

    # ------------------------------------------------------------ record protocol
    def tasks(self):
        out = Record.tasks(self)
        out.add(self.task)
        return out

    def copy_with_box(self, box):  # pragma: no cover - families are never split as boxes
        raise TypeError("a Family is superseded element by element, never split as a box")

    def has(self, flag: int, quals, task: int, mask: int, convergent: bool) -> bool:
        """True if every live member has the flag for these threads."""
        if Record.has(self, flag, quals, task, mask, convergent):
            return True  # the absolute part alone grants it to every member
        if not self.selfkeys:
            return False
        return all(self.member(k).has(flag, quals, task, mask, convergent)
                   for k in self.live_mids())

    def uniform_for(self, task: int, mask: int) -> bool:
        """True if a synchronization by ``(task, mask)`` catches every member alike: the
        members differ only by their own threads on ``selfkeys`` and (generic-proxy
        families) by the thread a proxy Fence must run on (``proxy_fenced``), and those
        touch the synchronizing threads either for every member or for none."""
        if (not self.selfkeys and self.prx is None) or task == ALL or task != self.task:
            return True
        u = self.union
        if (mask & u) == u or not mask & u:
            return True
        masks = self.masks
        hit = [bool(masks[k] & mask) for k in self.mids]
        return all(hit) or not any(hit)

    def split(self, keep) -> "Family | None":
        """Keep the members whose mask id is in ``keep``; return the others as a new family
        with the same flags (None if it has no live member)."""
        keep = set(keep)
        kl = np.fromiter(keep, dtype=np.int32, count=len(keep))
        ids = self.ids
        single = ids >= 0
        mine = single & np.isin(ids, kl)
        other_ids = np.where(single & ~mine, ids, -1).astype(np.int32)
        my_ids = np.where(mine | (ids == -2), ids, -1).astype(np.int32)
        other_ids[ids == -2] = -2
        parts = []
        for pids, inside in ((my_ids, True), (other_ids, False)):
            lin = mid = None
            if self.inst_lin is not None and (pids == -2).any():
                multi = (pids == -2).reshape(-1)
                sel = multi[self.inst_lin] & (np.isin(self.inst_mid, kl) == inside)
                lin, mid = self.inst_lin[sel], self.inst_mid[sel]
                mn = np.full(multi.size, np.iinfo(np.int32).max, np.int32)
                mx = np.full(multi.size, -1, np.int32)
                np.minimum.at(mn, lin, mid)
                np.maximum.at(mx, lin, mid)
                flat = pids.reshape(-1)
                flat[multi] = np.where(mx < 0, -1, np.where(mn == mx, mn, -2))[multi]
                if not (pids == -2).any():
                    lin = mid = None
            parts.append((pids, lin, mid))
        (self.ids, self.inst_lin, self.inst_mid), (oids, olin, omid) = parts
        g = None
        if (oids != -1).any():
            g = Family(self.vs, self.hull, oids, self.mutate, self.atomic, self.event,
                       self.qmask, self.task, self.selfkeys, self.masks,
                       [k for k in self.mids if k not in keep], olin, omid)
            g.flags = {k: dict(v) for k, v in self.flags.items()}
            g.pending = list(self.pending)
            g.pfence = self.pfence
            if self.prx is not None:
                g.prx = g.union if self.prx else 0
            g.normalize()
        self.mids = tuple(k for k in self.mids if k in keep)
        self.union = 0
        for k in self.mids:
            self.union |= self.masks[k]
        if self.prx:
            self.prx = self.union
        self.normalize()
        return g

    def proxy_fenced(self, task: int, mask: int) -> bool:
        """``Record.proxy_fenced`` for every member at once: a member's accessing thread is
        its own (one thread), so a proxy Fence by threads touching it fences it and makes
        its view. The machine makes the family uniform first (``uniform_for``): the Fence
        touches every member's thread or none."""
        if task == ALL:
            self.prx = 0
            return True
        if task != self.task or not self.union & mask:
            return False
        self.prx = 0
        return True

    def sync_level(self, task, mask, full_bits, temporal_bits):
        if not self.selfkeys or not self.uniform_for(task, mask):
            # not uniform (the machine materializes such families first): the absolute part
            # alone is a lower bound of every member's level, so this only grants less
            return Record.sync_level(self, task, mask, full_bits, temporal_bits)
        return self.member(self.mids[0]).sync_level(task, mask, full_bits, temporal_bits)

    def augment(self, task, mask, L2_full, L2_temporal, level) -> None:
        # what augment adds does not depend on the record's flags: the same for every member
        Record.augment(self, task, mask, L2_full, L2_temporal, level)
        self.normalize()

    def normalize(self) -> None:
        """Drop the keys whose absolute part covers every member's threads."""
        if not self.selfkeys:
            return
        u = self.union
        for k in list(self.selfkeys):
            ts = self.flags.get(k)
            if ts and (ALL in ts or (ts.get(self.task, 0) & u) == u):
                self.selfkeys.discard(k)

    # ------------------------------------------------------------ materialization
    def members_in(self, region=()):
        """(element index tuple, mask id) of every live member on ``region``."""
        flat = self.ids.reshape(-1)
        sel = self._select(region)
        base = [h[0] for h in self.hull]
        shape = self.ids.shape

        def index(f):
            return tuple(int(x) + b for x, b in zip(np.unravel_index(int(f), shape), base))

        out = [(index(f), int(flat[f])) for f in np.nonzero(sel & (flat >= 0))[0]]
        multi = np.nonzero(sel & (flat == -2))[0]
        if multi.size:
            pick = np.isin(self.inst_lin, multi)
            pairs = np.unique(np.stack([self.inst_lin[pick], self.inst_mid[pick]]), axis=1)
            out += [(index(f), int(k)) for f, k in pairs.T]
        return out

    def materialize(self, region=()) -> list:
        """Plain point records for the live members on ``region``, which leave the family."""
        out = []
        for idx, k in self.members_in(region):
            r = self.member(k)
            r.box = tuple((x, x + 1) for x in idx)
            r.key = idx
            e = self.event  # the member's own threads (proxy_fenced reads them)
            r.event = Event(e.srcinfo, e.what, e.task, self.masks[k], e.quals, e.env)
            r.pfence = self.pfence
            out.append(r)
        self.kill(region)
        return out


class FamStore:
    """The families of one variable, indexed by the cells of a grid over the first and last
    dimensions of their hulls (families are tiles: one per task and statement)."""

    __slots__ = ("cells", "wide", "n")
    CELL = 64
    MAX_CELLS = 64

    def __init__(self):
        self.cells: dict = {}
        self.wide: list = []
        self.n = 0

    def __bool__(self) -> bool:
        return self.n > 0

    def _keys(self, box):
        if not box:
            return None
        c = self.CELL
        (a, b), (p, q) = box[0], box[-1] if len(box) > 1 else (0, 1)
        i0, i1 = a // c, max(a, b - 1) // c
        j0, j1 = p // c, max(p, q - 1) // c
        if (i1 - i0 + 1) * (j1 - j0 + 1) > self.MAX_CELLS:
            return None
        return [(i, j) for i in range(i0, i1 + 1) for j in range(j0, j1 + 1)]

    def add(self, f) -> None:
        self.n += 1
        keys = self._keys(f.hull)
        if keys is None:
            self.wide.append(f)
            return
        for k in keys:
            self.cells.setdefault(k, []).append(f)

    def remove(self, f) -> None:
        self.n -= 1
        keys = self._keys(f.hull)
        if keys is None:
            self.wide.remove(f)
            return
        for k in keys:
            lst = self.cells[k]
            lst.remove(f)
            if not lst:
                del self.cells[k]

    def __iter__(self):
        seen = set()
        for lst in self.cells.values():
            for f in lst:
                if id(f) not in seen:
                    seen.add(id(f))
                    yield f
        yield from self.wide

    def overlapping(self, box) -> list:
        keys = self._keys(box)
        if keys is None:
            cand = list(self)
        elif len(keys) == 1:
            cand = self.cells.get(keys[0], []) + self.wide
        else:
            seen, cand = set(), []
            for k in keys:
                for f in self.cells.get(k, ()):
                    if id(f) not in seen:
                        seen.add(id(f))
                        cand.append(f)
            cand += self.wide
        return [f for f in cand if overlap(f.hull, box)]
