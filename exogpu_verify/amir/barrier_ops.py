"""Barrier elements of the concrete machine: Arrive, Await and the state of mbarrier rings.

``BarrierOps`` is the part of ``interp.Machine`` that resolves a barrier reference to its
elements (virtual ring indices run past the extent by the pre-arrive count), enrolls the
records an Arrive's first timeline catches, releases them at the Await whose count covers
them (``N`` phases back), rejects misuse (an Await before any Arrive, a second Arrive per CTA
and phase on one mbarrier element, a copy that completes after the last Arrive) and, for a
ring that ``continues``, hands the pre-arrived elements of one lifetime on to the next
(``_keep_tail``). The machine's records, dispatch and fences stay in ``interp.py``.
"""

from __future__ import annotations

from . import nodes as A
from . import batch as B
from .evaluate import CheckError, _ref_values, _ref_values_slow, _sync_bits, _sync_bits_full
from .machine import BarrierState
from .rules import split_for_sync


class BarrierOps:
    """Mixin of ``interp.Machine``: uses its ``barriers``, ``ring_tail``, ``env``, ``task``,
    ``mask``, ``cfg``, ``cluster_barrier`` and record index."""

    def _elem_name(self, key) -> str:
        b = self.barriers.get(key[0])
        name = b["display"] if b is not None and b["display"] else key[0]
        return f"{name}[{', '.join(map(str, key[1]))}]" if key[1] else name

    def _keep_tail(self, name: str, b: dict) -> None:
        """The next lifetime of a ring that ``continues`` (the next iteration of the seq loop
        allocating it, in this task) runs on the same physical mbarriers with the running
        index continued: its Await on a pre-arrived index ``v`` waits for this lifetime's
        Arrives on ``extent + v`` (when that index is not pre-arrived itself)."""
        pre = b["mech"].pre_arrive
        [d] = [k for k, r in enumerate(b["ring"]) if r is not None]
        ext = b["shape"][d]
        tail = {}
        for key, st in b["elems"].items():
            i = key[1][d]
            if ext <= i < ext + pre and i >= pre:
                idx = key[1][:d] + (i - ext,) + key[1][d + 1:]
                st.ctas = {}   # a new phase: its Arrives, if any, are counted anew
                st.pre = True  # (the index is pre-arrived in the new lifetime)
                st.base = st.arrives
                tail[(name, idx)] = st
        self.ring_tail[(name, self.task)] = tail

    def _elements(self, ref: A.AmBarrierRef):
        b = self.barriers.get(ref.name)
        if b is None:
            raise CheckError("barrier-usage", f"barrier {ref.name} used outside its lifetime",
                             ref.srcinfo)
        exts = b.get("exts")
        if exts is None:
            exts = []
            for d, ext in enumerate(b["shape"]):
                if b["ring"] and b["ring"][d] is not None and b["mech"].pre_arrive:
                    # a ring dimension's virtual indices run past the extent by the
                    # pre-arrive count: the consumer that frees slot i arrives on
                    # z[i + pre_arrive]
                    ext += b["mech"].pre_arrive
                exts.append(ext)
            exts = b["exts"] = tuple(exts)
        try:
            vals = _ref_values(ref, self.env)
        except Exception:  # noqa: BLE001 - redo it the slow way, for the same error
            vals = _ref_values_slow(ref, self.env, exts, b["display"])
        for vs, ext in zip(vals, exts):
            for x in vs:
                if not 0 <= x < ext:
                    raise CheckError("bounds", f"barrier index {x} out of range "
                                     f"[0, {ext}) for {b['display']}", ref.srcinfo)
        if len(vals) == 1:
            idxs = [(x,) for x in vals[0]]
        else:
            idxs = [()]
            for vs in vals:
                idxs = [i + (x,) for i in idxs for x in vs]
        mech = b["mech"]
        elems = b["elems"]
        commit = mech.kind == "commit"
        out = []
        for i in idxs:
            key = (ref.name, i)
            if commit:
                key = key + (self.task, self.mask)
            st = elems.get(key)
            if st is None:
                pre = False
                if mech.pre_arrive:
                    for d, depth in enumerate(b["ring"]):
                        if depth is not None and i[d] < mech.pre_arrive:
                            pre = True
                st = elems[key] = BarrierState(mech.kind, pre)
            out.append((key, st))
        return out

    def arrive(self, s: A.AmArrive):
        task, mask = self.task, self.mask
        elems = [e for ref in s.targets for e in self._elements(ref)]
        if elems and elems[0][1].kind == "cluster":
            self.cluster_barrier.arrive(task, s)
        full1, temp1 = _sync_bits_full(s.L1)
        if self.fam_index:
            B.prepare_sync(self, task, mask)
        for rec in self._records_for(task):
            if rec.part:
                split_for_sync(self, rec, task, mask, temp1)
            lvl = rec.sync_level(task, mask, full1, temp1)
            if lvl is None:
                continue
            rec.enrolled = True
            for key, st in elems:
                st.pending.append((rec, st.arrives, lvl))
                # on the record too: a part record split later (``split_for_sync``) hands
                # the enrollment to the split-off parts (``adopt``), which this Arrive caught
                rec.pending.append((st, st.arrives, lvl))
        if self.cfg is not None:
            # an mbarrier phase expects, from each CTA, the threads of ONE Arrive statement
            # (codegen's init count sums that statement's threads, times the CTAs it
            # multicasts to): a second statement, or the same threads twice, would complete
            # the phase early and let the Await pass before the other arrivals
            low = (mask & -mask).bit_length() - 1
            cta = low // self.cfg.blockDim if low >= 0 else 0
            for key, st in elems:
                if st.kind != "mbarrier":
                    continue
                prev = st.ctas.get(cta)
                if prev is not None and (prev[0] is not s or prev[2] & mask):
                    raise CheckError(
                        "barrier-usage", f"second Arrive on {self._elem_name(key)} from CTA "
                        f"{cta} (the first at line {getattr(prev[1], 'line', '?')}): an mbarrier "
                        "element takes, per CTA and phase, the threads of one Arrive statement "
                        "once", s.srcinfo,
                        hint="arrive once with the whole releasing collective (one Arrive "
                             "statement), or use distinct barrier elements")
                st.ctas[cta] = (s, s.srcinfo, (prev[2] if prev else 0) | mask)
        for _, st in elems:
            st.arrives += 1

    def await_(self, s: A.AmAwait):
        task, mask = self.task, self.mask
        [(key, st)] = self._elements(s.target)
        if st.kind == "cluster":
            self.cluster_barrier.await_(task)
        if st.arrives == 0:
            raise CheckError("barrier-usage", f"Await on {s.target.name} "
                             f"{list(key[1])} before any Arrive: no forward progress",
                             s.srcinfo, hint="move the Arrive before the Await in program order, "
                                             "or pre-arrive the ring with CudaMbarrierPreArrive")
        if st.trailing:
            for rec, count in st.trailing:
                if count >= st.arrives:
                    raise CheckError(
                        "barrier-usage",
                        f"{rec.event.what} completes on {self._elem_name(key)} but was issued "
                        f"after the last Arrive on it, so the Await at line "
                        f"{getattr(s.srcinfo, 'line', '?')} does not wait for it (on the "
                        "hardware its transaction count would fall into the next phase)",
                        rec.event.srcinfo,
                        hint="issue every copy that completes on a barrier before the Arrive "
                             "on that barrier")
            st.trailing = []
        limit = st.arrives - 1 - s.N
        full2, temp2 = _sync_bits(s.L2)
        keep = []
        for rec, count, lvl in st.pending:
            if rec.dead:
                continue
            if count <= limit:
                rec.augment(task, mask, full2, temp2, lvl)
                self._register(rec, task)
                if st.kind != "commit":
                    keep.append((rec, count, lvl))
            else:
                keep.append((rec, count, lvl))
        st.pending = keep
        st.awaited = True
