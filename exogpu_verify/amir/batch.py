"""Batched execution of access nests: the per-thread scalar statements of a loop nest checked
and recorded at once, with numpy, instead of one statement instance at a time.

An *access nest* is a ``seq``/``cuda_threads`` loop whose whole body is such loops, accesses
without trailing barriers (scalar assignments and reductions, instruction calls on small
windows) and ``AmCheck`` statements, with loop bounds that do not depend on the nest's
iterators, inside a task of a kernel or at CPU scope. The per-element machine runs it
instance by instance in program order (lexicographic in the iteration vector, then body
order); ``run_nest`` evaluates every
instance's elements, executing threads and program-order position as arrays, and either
proves that the per-element run of the nest raises nothing and computes the state it leaves,
or returns None, and the caller runs the nest element by element (from the unchanged state).
A record of a window behaves as the point records of its elements with its flags (checks,
synchronization, supersede and frees all act element by element), so windows are expanded.

The argument (why a batched run that raises nothing implies a per-element run that raises
nothing, which is all the batched machine claims; its reports are re-made element by
element, see ``check.py``). Call a state *at least as strict* as another when, element by
element, it holds every record the other holds, with a subset of its flags (extra records
are allowed). Every operation of the machine is monotone for this order: checks pass on a
record only with flags (fewer flags, more records: more failures), ``sync_level`` only grows
with flags and ``augment`` grants less at a lower level, supersede removes the same elements
from both, and barrier counts, bounds and collectives do not depend on records. So a run from
a stricter state fails whenever the run from the other state fails. ``run_nest`` keeps the
invariant *the batched state is at least as strict as the per-element state* (it is equal
whenever no approximation was needed), because:

* bounds, qualitative timelines, collectives: every instance's element is checked against the
  shape, every reached ``cuda_threads`` loop is tiled for every mask it is entered with, and
  an unknown qualitative timeline falls back; these are the per-element checks.
* intra-nest checks: a record made by an earlier instance ``j0`` of the nest is fresh when a
  later instance ``j`` checks it (no synchronization inside a nest): all four flags for
  ``(q0(j0), threads(j0))``. If every statement on the variable is in-order, ``q0`` of each is
  among the extended quals of each, and every element some instance mutates is touched by
  instances of one thread mask only, then every such check passes (``covers`` of a mask by
  itself, for convergent quals too).
* checks against the records that existed before the nest: each instance of a statement is
  checked against every earlier record overlapping its element, by the mode's rule, whether or
  not an earlier instance of the nest already superseded that record on the element (the
  per-element machine then checks fewer records: passing more checks is sound).
* the state after: per element, the last non-atomic mutation of the nest supersedes every
  earlier record (pre-existing records lose exactly the mutated elements, split into boxes as
  ``_supersede`` does, or element by element); the instances at or after it stay live. Each
  statement's live instances become one ``Family`` (``family.py``): exactly their records.
* the nest never touches barriers, and the families are registered for their task as the
  records would be. ``steps`` grows by the number of statement instances of the nest.

Families answer every later question as their member records would, or more strictly
(``family.py``): ``touch_families`` checks a per-element access against the members on its
box (and supersedes them), ``prepare_sync`` splits a family before a synchronization that
would not treat all its members alike, and frees check every live member.

What is batched, and the rules of ``rules.py``/``machine.py`` (docs/semantics.md). A nest
contains no synchronization, barrier, allocation or free, so the cluster-barrier rule, ring
balance and usage, trailing barriers, the wgmma.fence rules (``wgA``/``wgD`` quals) and the
lazy ``wgmma_zero`` never apply inside one. A statement is batched only if its first qual is
``c1`` (registers), ``c2`` (SMEM/GMEM through the generic proxy) or ``cpu`` and its
instruction timeline is in order (``BATCH_QUALS``): a fresh record of it has all four flags
for its threads, as the intra-nest argument assumes; anything else (cp.async, TMA, wgmma,
``wgmma_zero``) runs element by element. For each remaining rule:

* part records: an access of a non-convergent qual (``c2``) by several threads is one part
  record per instance, whose threads see only their own parts; such instances (a warp's
  scalar store to SMEM) are not batched, so every member of a ``c2`` family is one thread's
  record, which is not a part record. Earlier part records are checked by ``Record.has``
  like any record and superseded as ``Machine._supersede`` does (same pieces, same flags,
  ``own``, barrier entries, registered for their task even without flags).
* proxies: a ``c2`` record starts with ``prx`` = its thread. A family keeps one ``prx``
  for all members (``Family.proxy_fenced``), and ``prepare_sync`` splits a family before a
  Fence, Arrive or kernel boundary that touches some members' threads and not others'
  (``Family.uniform_for``), so each member is fenced exactly when its record would be; the
  async view then lives in the shared flags, granted as ``Record.augment`` grants it.
  ``pfence`` only names a Fence in a hint, and hints come from the per-element re-run.
* frees: ``rules.check_free`` checks every live member of the variable's families as its
  records (SMEM and async-proxy reuse through ``prx``; registers of asynchronous
  instructions), since ``Family.has`` holds only if it holds for every live member.
* AmChecks are stateless (``Machine.check`` reads only the environment): a nest whose checks
  all hold at every instance (``_checks_hold``, numpy over the iteration space) runs
  batched, otherwise element by element, which raises the first failing one in place.
* bounds: each statement's elements are checked against the shape; a violation runs the
  nest element by element, which raises it in place.
"""

from __future__ import annotations

import numpy as np

from . import nestbox as NB
from . import nodes as A
from ..ir.timelines import QUAL_TLS
from .evaluate import CheckError, _free_names, ev, ev_vec
from .family import Family, FamStore
from .machine import ALL, ATOMIC, FULL, GENERIC_BITS, TEMPORAL, Event, Record, subtract
from .threads import CollectiveError, tile

#: nest executions with more statement instances than this run element by element
MAX_INSTANCES = 1 << 22
#: and so do variables whose touched bounding box is much larger than the instances
MAX_HULL = 1 << 24
#: pre-existing records split into pieces element by element up to this many elements
MAX_SPLIT = 1 << 16
#: statements whose instances access boxes of more elements run element by element: one
#: record per box is cheaper than expanding it (instruction tiles: wgmma, TMA, ldmatrix)
MAX_BOX = 64

#: first qualitative timelines of the statements that are batched: ordinary (in-order)
#: accesses to registers and to SMEM/GMEM through the generic proxy
BATCH_QUALS = frozenset((QUAL_TLS["c1"].bit, QUAL_TLS["c2"].bit, QUAL_TLS["cpu"].bit))

_INFO: dict = {}


class NestInfo:
    """Static shape of an access nest (computed once per root loop node)."""

    __slots__ = ("root", "loops", "parent", "children", "stmts", "iters", "checks")

    def __init__(self, root):
        self.root = root
        self.loops: list = []      # AmFor nodes, pre-order
        self.parent: list = []     # index of the enclosing loop, -1 for the root
        self.children: list = []   # per loop: ("loop", i) / ("stmt", j) in body order
        self.stmts: list = []      # (AmAccess, path: loop indices from the root)
        self.checks: list = []     # (AmCheck, path)
        self.iters: set = set()


def nest_info(root) -> NestInfo | None:
    """The nest rooted at ``root``, or None if it is not an access nest."""
    hit = _INFO.get(id(root))
    if hit is not None and hit[0] is root:
        return hit[1]
    info = NestInfo(root)
    ok = _collect(info, root, -1, ())
    if ok:
        # loop bounds are the same in every iteration of the nest (and name no iterator of it)
        for L in info.loops:
            for e in (L.lo, L.hi):
                names = _free_names(e)
                if names is None or names & info.iters:
                    ok = False
    out = info if ok else None
    _INFO[id(root)] = (root, out)
    return out


def _collect(info: NestInfo, loop, parent: int, path: tuple) -> bool:
    if loop.kind not in ("seq", "threads") or \
            any(info.loops[i].iter == loop.iter for i in path):
        return False  # (sibling loops may share an iterator name, nested ones not)
    li = len(info.loops)
    info.loops.append(loop)
    info.parent.append(parent)
    info.children.append([])
    info.iters.add(loop.iter)
    path = path + (li,)
    for c in loop.body:
        if type(c) is A.AmFor:
            info.children[li].append(("loop", len(info.loops)))
            if not _collect(info, c, li, path):
                return False
        elif type(c) is A.AmAccess:
            if c.barriers:
                return False
            for w in c.box:
                if any(_free_names(e) is None for e in w[1:]):
                    return False
            info.children[li].append(("stmt", len(info.stmts)))
            info.stmts.append((c, path))
        elif type(c) is A.AmCheck:
            info.children[li].append(("check", len(info.checks)))
            info.checks.append((c, path))
        else:
            return False
    return True


class _Inst:
    """The instances of one statement in one nest execution (flat arrays in program order)."""

    __slots__ = ("s", "v", "n", "bv", "shape", "path", "idx", "mid", "pos", "mids", "umask",
                 "hull", "lin", "quals", "qbits", "qmask", "conv", "in_order")


def _evaluate(m, info: NestInfo, only):
    """Every instance of the nest at the machine's environment, threads and mask: (list of
    ``_Inst``, statement instances of the nest below the root, lower bounds of the loops), or
    None where only the per-element run can say what happens."""
    env = m.env
    if info.iters & env.keys():
        return None  # an iterator shadows an outer name: leave it to the per-element run
    nl = len(info.loops)
    lo = [0] * nl
    trips = [0] * nl
    for i, L in enumerate(info.loops):
        p = info.parent[i]
        if p >= 0 and trips[p] == 0:
            continue  # not reached (trips[p] is 0 as well when p is not reached)
        try:
            a, b = ev(L.lo, env), ev(L.hi, env)
        except Exception:  # noqa: BLE001 - raised again, in place, by the per-element run
            return None
        if type(a) is not int or type(b) is not int:
            return None
        lo[i], trips[i] = a, max(b - a, 0)
    count = 0
    for _, path in info.stmts + info.checks:
        n = 1
        for li in path:
            n *= trips[li]
        count += n
    if count > MAX_INSTANCES:
        return None  # too large at once: the loop runs and its inner nests batch
    if m.cfg is None and any(L.kind == "threads" for L in info.loops):
        return None  # (the per-element run rejects a thread loop outside a kernel)
    key = (id(info.root), m.mask, tuple(trips))
    hit = m._nest_shapes.get(key)
    if hit is None or hit[0] is not info.root:
        hit = m._nest_shapes[key] = (info.root, _shape(m, info, trips))
    shp = hit[1]
    if shp is None:
        return None  # a collective the per-element run rejects
    per_stmt, steps = shp
    if not _checks_hold(info, env, lo, trips):
        return None  # the per-element run raises the first failing check in place
    total = 0
    insts = []
    for j, (s, path) in enumerate(info.stmts):
        st = per_stmt[j]
        if st is None or (only is not None and s.name not in only):
            continue
        shape, n = st[0], st[1]
        d = len(path)
        E = dict(env)
        for k, li in enumerate(path):
            sh = [1] * d
            sh[k] = -1
            E[info.loops[li].iter] = np.arange(lo[li], lo[li] + trips[li],
                                               dtype=np.int64).reshape(sh)
        it = _Inst()
        it.s, it.shape, it.path = s, shape, path
        # per dimension, the first index and the width (1 for a point) of each instance
        try:
            firsts, widths = [], []
            for w in s.box:
                a = np.broadcast_to(np.asarray(ev(w[1], E), dtype=np.int64), shape).reshape(-1)
                firsts.append(a)
                if w[0] == "pt":
                    widths.append(1)
                    continue
                wd = np.broadcast_to(np.asarray(ev(w[2], E), dtype=np.int64), shape)
                wd = wd.reshape(-1) - a
                if wd.min() <= 0 or wd.max() != wd.min():
                    return None  # empty, reversed or varying windows: element by element
                widths.append(int(wd[0]))
        except Exception:  # noqa: BLE001 - raised again, in place, by the per-element run
            return None
        bv = 1
        for x in widths:
            bv *= x
        if bv > MAX_BOX:
            return None
        it.bv, it.n = bv, n * bv
        total += it.n
        if total > MAX_INSTANCES:
            return None
        if bv == 1:
            it.idx = firsts
        else:
            # one entry per element of each instance's box (instance-major, C order)
            k = len(widths)
            it.idx = []
            for dd, (a, wdt) in enumerate(zip(firsts, widths)):
                sh = [1] * k
                sh[dd] = wdt
                off = np.arange(wdt, dtype=np.int64).reshape([1] + sh)
                it.idx.append(np.broadcast_to(a.reshape([-1] + [1] * k) + off,
                                              (n, *widths)).reshape(-1))
        rep = st[5]
        got = rep.get(bv)
        if got is None:
            got = rep[bv] = (np.repeat(st[2], bv), np.repeat(st[3], bv))
        it.pos, it.mid = got
        it.mids, it.umask = st[4], st[6]
        insts.append(it)
    return insts, steps, lo


def _iter_env(info: NestInfo, env: dict, path, lo, trips, lead=None) -> dict:
    """``env`` with the iterators on ``path`` as broadcastable arrays of their values; with
    ``lead = (name, values)``, after a leading axis of ``name``'s values."""
    E = dict(env)
    d = len(path)
    if lead is not None:
        d += 1
        E[lead[0]] = np.asarray(lead[1]).reshape([-1] + [1] * (d - 1))
    for k, li in enumerate(path):
        sh = [1] * d
        sh[k + (lead is not None)] = -1
        E[info.loops[li].iter] = np.arange(lo[li], lo[li] + trips[li],
                                           dtype=np.int64).reshape(sh)
    return E


def _checks_hold(info: NestInfo, env: dict, lo, trips, lead=None) -> bool:
    """Every condition of every ``AmCheck`` of the nest holds at each of its instances (the
    checks are stateless: ``Machine.check`` reads only the environment)."""
    for c, path in info.checks:
        if any(trips[i] == 0 for i in path):
            continue  # never executed
        E = _iter_env(info, env, path, lo, trips, lead)
        try:
            for cond in c.conds:
                if not np.all(ev_vec(cond.cond, E)):
                    return False
        except Exception:  # noqa: BLE001 - raised again, in place, by the per-element run
            return False
    return True


def _shape(m, info: NestInfo, trips):
    """What depends only on the trip counts and the executing threads: per statement (or
    None without instances) its iteration shape, instance count, program-order positions and
    thread mask ids (flat), distinct mask ids, a cache for box expansions and the union of
    its threads; and the statement instances of the nest below the root. None if a
    ``cuda_threads`` loop cannot be tiled."""
    nl = len(info.loops)
    # statement instances of one iteration of each loop body (children follow parents)
    size = [0] * nl
    for i in range(nl - 1, -1, -1):
        t = 0
        for kind, j in info.children[i]:
            t += 1 if kind != "loop" else 1 + trips[j] * size[j]
        size[i] = t
    # thread masks of every combination of the thread iterators on each loop's path, in
    # C order; every reached cuda_threads loop is tiled for every mask it is entered with
    cfg = m.cfg
    tmasks: list = [None] * nl
    for i, L in enumerate(info.loops):
        p = info.parent[i]
        reached = p < 0 or trips[p] > 0
        parent = [m.mask] if p < 0 else tmasks[p]
        if L.kind == "threads" and reached and trips[i] > 0:
            out = []
            try:
                for pm in parent:
                    out.extend(tile(pm, L.unit, trips[i], cfg.blockDim, cfg.clusterDim))
            except CollectiveError:
                return None
            tmasks[i] = out
        else:
            tmasks[i] = parent
    per_stmt = []
    for j, (s, path) in enumerate(info.stmts):
        shape = tuple(trips[i] for i in path)
        n = 1
        for x in shape:
            n *= x
        if n == 0:
            per_stmt.append(None)
            continue
        d = len(path)
        # program-order position: the nest's statement instances before this one
        pos = 0
        for k, li in enumerate(path):
            sh = [1] * d
            sh[k] = -1
            pos = pos + np.arange(trips[li], dtype=np.int64).reshape(sh) * size[li]
            nxt = path[k + 1] if k + 1 < d else None
            before = 0
            for kind, c in info.children[li]:
                if (kind == "loop" and c == nxt) or (kind == "stmt" and c == j):
                    break
                before += 1 if kind != "loop" else 1 + trips[c] * size[c]
            pos = pos + before + (1 if nxt is not None else 0)
        pos = np.broadcast_to(np.asarray(pos, dtype=np.int64), shape).reshape(-1)
        # thread mask ids: a function of the thread iterators on the path
        tm = tmasks[path[-1]]
        ids = np.fromiter((m.mask_id(x) for x in tm), dtype=np.int32, count=len(tm))
        sh = [trips[li] if info.loops[li].kind == "threads" else 1 for li in path]
        mid = np.broadcast_to(ids.reshape(sh), shape).reshape(-1)
        mids = tuple(int(x) for x in np.unique(ids))
        u = 0
        for k in mids:
            u |= m.masks[k]
        per_stmt.append((shape, n, pos, mid, mids, {1: (pos, mid)}, u))
    return per_stmt, trips[0] * size[0]


def _need(mode: str, rec) -> int | None:
    """The flag an access of ``mode`` needs from an earlier record (``Machine.access``)."""
    if not rec.mutate:
        if mode == "read":
            return None
        return ATOMIC if mode == "atomic" else TEMPORAL
    if mode == "atomic":
        return None if rec.atomic else ATOMIC
    return FULL if mode in ("read", "rw") else TEMPORAL


def _check_plain(m, rec, it: _Inst, flag: int, task: int) -> bool:
    """Every instance of ``it`` on an element of ``rec`` passes its check against it."""
    if rec.has(flag, it.qbits, task, it.umask, False):
        return True  # covers the union of the threads: covers each instance's threads
    sel = NB.inside(it.idx, rec.box, it.n)
    for k in np.unique(it.mid[sel]):
        if not rec.has(flag, it.qbits, task, m.masks[int(k)], it.conv):
            return False
    return True


def _check_family(m, f: Family, it: _Inst, flag: int, task: int) -> bool:
    """Every instance of ``it`` passes its check against every live member of ``f`` on its
    element."""
    if Record.has(f, flag, it.qbits, task, it.umask, False):
        return True  # the absolute part covers every instance's threads, for every member
    box = NB.intersect(f.hull, it.hull)
    if box is None:
        return True
    sel = NB.inside(it.idx, box, it.n)
    if not sel.any():
        return True
    b = f.ids.reshape(-1)[NB.flat([a[sel] for a in it.idx], f.hull, int(sel.sum()))]
    a = it.mid[sel]
    checks = set()
    single = b >= 0
    if single.any():
        checks |= {(int(x), int(y)) for x, y in np.unique(np.stack([a[single], b[single]]),
                                                          axis=1).T}
    if (b == -2).any():
        live = f.live_mids()
        for x in np.unique(a[b == -2]):
            checks |= {(int(x), y) for y in live}
    for x, y in checks:
        if not _pair_ok(f, y, flag, it.qbits, task, m.masks[x], it.conv):
            return False
    return True


def _pair_ok(f: Family, k: int, flag: int, qbits, task: int, amask: int, conv: bool) -> bool:
    """A member of ``f`` with mask id ``k`` has ``flag`` for the accessing threads."""
    if task == f.task and f.selfkeys and any((q, flag) in f.selfkeys for q in qbits):
        own = f.masks[k]
        if amask & own == amask or (conv and amask & own):
            return True  # the member's own threads cover the accessing ones
    return f.member(k).has(flag, qbits, task, amask, conv)


def _event(m, info: NestInfo, it: _Inst, j: int, lo) -> Event:
    """The event of instance ``j`` (what its record would carry in a report)."""
    env = dict(m.env)
    for li, x in zip(it.path, np.unravel_index(j // it.bv, it.shape)):
        env[info.loops[li].iter] = lo[li] + int(x)
    return Event(it.s.srcinfo, it.s.what, m.task, m.masks[int(it.mid[j])], it.quals, env)


_BIG = np.iinfo(np.int32).max


def _plan_var(m, info, v, its, lo):
    """Check the instances of ``its`` (all on variable ``v``) against each other and against
    the records before the nest; the state changes to make, or None to run element by
    element. Changes nothing."""
    task = m.task
    hull = tuple((min(it.hull[d][0] for it in its), max(it.hull[d][1] for it in its))
                 for d in range(len(v.shape)))
    vol = NB.vol(hull)
    ninst = sum(it.n for it in its)
    if vol > MAX_HULL or vol > 8 * ninst + 65536:
        return None
    for it in its:
        it.lin = NB.flat(it.idx, hull, it.n)
    muts = [it for it in its if it.s.mode != "read"]
    nonatomic = [it for it in muts if it.s.mode != "atomic"]
    owner = None  # one statement whose instances touch distinct elements: their mask ids
    if len(its) == 1:
        owner = np.full(vol, -1, np.int32)
        owner[its[0].lin] = its[0].mid
        if int(np.count_nonzero(owner >= 0)) != its[0].n:
            owner = None
    if muts and owner is None:
        # intra-nest checks: in-order accesses whose first quals are accepted by each other,
        # and one thread mask on every element an instance mutates
        if not all(it.in_order for it in its):
            return None
        if any(a.qbits[0] not in b.qbits for a in its for b in its):
            return None
        lin = np.concatenate([it.lin for it in its])
        mid = np.concatenate([it.mid for it in its])
        mn = np.full(vol, _BIG, np.int32)
        mx = np.full(vol, -1, np.int32)
        np.minimum.at(mn, lin, mid)
        np.maximum.at(mx, lin, mid)
        mutated = np.zeros(vol, bool)
        for it in muts:
            mutated[it.lin] = True
        if (mutated & (mn != mx)).any():
            return None
    # checks against the records from before the nest
    pre = [(v.mutates, r) for r in v.mutates.overlapping(hull)]
    if muts:
        pre += [(v.reads, r) for r in v.reads.overlapping(hull)]
    for _, rec in pre:
        for it in its:
            flag = _need(it.s.mode, rec)
            if flag is not None and NB.intersect(rec.box, it.hull) is not None and \
                    not _check_plain(m, rec, it, flag, task):
                return None
    fams = v.fams.overlapping(hull) if v.fams else []
    for f in fams:
        if not f.mutate and not muts:
            continue
        for it in its:
            flag = _need(it.s.mode, f)
            if flag is not None and not _check_family(m, f, it, flag, task):
                return None
    # the state after the nest: the last non-atomic mutation of each element supersedes
    # what came before it
    splits, kills, new = [], [], []
    last = None
    if nonatomic:
        if owner is not None:
            M = owner >= 0
        else:
            M = np.zeros(vol, bool)
            last = np.full(vol, -1, np.int64)
            for it in nonatomic:
                M[it.lin] = True
                np.maximum.at(last, it.lin, it.pos)
        Mnd = M.reshape(NB.extents(hull))
        for store, rec in pre:
            cut = NB.intersect(rec.box, hull)
            if cut is None:
                continue
            sub = Mnd[NB.slices(cut, hull)]
            cnt = int(sub.sum())
            if cnt == 0:
                continue
            if cnt == NB.vol(rec.box):
                splits.append((store, rec, ()))
                continue
            nz = np.nonzero(sub)
            bb = tuple((int(a.min()) + cut[d][0], int(a.max()) + 1 + cut[d][0])
                       for d, a in enumerate(nz))
            if cnt == NB.vol(bb):
                splits.append((store, rec, tuple(subtract(rec.box, bb))))
            elif NB.vol(cut) <= MAX_SPLIT:
                splits.append((store, rec, tuple(subtract(rec.box, cut)) +
                               tuple(NB.runs(~sub, cut))))
            else:
                return None
        for f in fams:
            cut = NB.intersect(f.hull, hull)
            kills.append((f, NB.slices(cut, f.hull), Mnd[NB.slices(cut, hull)]))
    for it in its:
        ext = NB.extents(it.hull)
        olin = omid = None
        if owner is not None:  # the hull is the statement's: every instance is live
            ids = owner.reshape(ext)
            j = 0
        else:
            live = np.ones(it.n, bool) if last is None else it.pos >= last[it.lin]
            nlive = int(live.sum())
            if not nlive:
                continue
            vol_s = NB.vol(it.hull)
            own = NB.flat([a[live] for a in it.idx], it.hull, nlive)
            mids = it.mid[live]
            mn = np.full(vol_s, _BIG, np.int32)
            mx = np.full(vol_s, -1, np.int32)
            np.minimum.at(mn, own, mids)
            np.maximum.at(mx, own, mids)
            ids = np.where(mx < 0, -1, np.where(mn == mx, mn, -2)).astype(np.int32)
            ids = ids.reshape(ext)
            if (ids == -2).any():
                olin, omid = own, mids
            j = int(np.argmax(live))
        q0 = it.qbits[0]
        selfkeys = [(q0, f) for f in range(4)]  # (in-order: every flag, BATCH_QUALS)
        # (mask ids and their union: of all the statement's instances, a superset of the
        # live ones, which is all the family needs, see family.py)
        f = Family(v, it.hull, ids, it.s.mode != "read", it.s.mode == "atomic",
                   _event(m, info, it, j, lo), it.qmask, task, selfkeys, m.masks,
                   it.mids, olin, omid, it.umask)
        if q0 in GENERIC_BITS:
            f.prx = f.union  # each member's own thread, not yet proxy-fenced
        if task == ALL:
            # CPU scope: every member's flags are for every thread, so all are absolute
            f.flags = {k: {ALL: -1} for k in selfkeys}
            f.selfkeys = set()
        new.append(f)
    return v, splits, kills, new


def _apply(m, plan) -> None:
    v, splits, kills, new = plan
    for store, rec, pieces in splits:
        store.remove(rec)
        m._unregister(rec)
        rec.dead = True
        for piece in pieces:  # as Machine._supersede does
            m._add_piece(store, rec, piece)
    for f, region, where in kills:
        f.kill(region, where)
        if not f.is_live():
            drop_family(m, f)
    if new and v.fams is None:
        v.fams = FamStore()
    for f in new:
        v.fams.add(f)
        m._register(f, m.task)
        m.fam_index.setdefault(m.task, set()).add(f)
    v.last_read = None


def run_nest(m, root, only=None) -> int | None:
    """Run the access nest ``root`` batched (only the statements on ``only``'s variables, if
    given). Returns the number of statement instances of the nest below ``root``, or None
    when nothing was done and the nest must run element by element."""
    info = nest_info(root)
    if info is None:
        return None
    got = _evaluate(m, info, only)
    if got is None:
        return None
    insts, steps, lo = got
    byvar: dict = {}
    for it in insts:
        v = m.vars.get(it.s.name)
        if v is None:
            try:
                v = m._param_state(it.s.name)
            except CheckError:
                return None
        if len(it.idx) != len(v.shape):
            return None
        it.v = v
        it.hull = tuple((int(a.min()), int(a.max()) + 1) for a in it.idx)
        for (a, b), ext in zip(it.hull, v.shape):
            if a < 0 or b > ext:
                return None  # out of bounds: the per-element run reports it
        quals, qbits, qmask = m.quals_of(v, it.s)
        if quals is None:
            return None
        it.quals, it.qbits, it.qmask = quals, qbits, qmask
        it.conv = quals[0].convergent
        it.in_order = it.s.instr_tl.in_order
        if qbits[0] not in BATCH_QUALS or not it.in_order:
            return None  # not a plain scalar access (see "What is batched")
        if not it.conv and any(m.masks[k] & (m.masks[k] - 1) for k in it.mids):
            return None  # a collective's part record (several threads, one access)
        if it.s.mode == "read" and v.untracked_reads:
            continue  # never mutated anywhere: no record, nothing to check
        byvar.setdefault(id(v), (v, []))[1].append(it)
    plans = []
    for v, its in byvar.values():
        plan = _plan_var(m, info, v, its, lo)
        if plan is None:
            return None
        plans.append(plan)
    for plan in plans:
        _apply(m, plan)
    return steps


# ---------------------------------------------------------------- families in the machine
def drop_family(m, f: Family) -> None:
    if not f.dead:
        f.vs.fams.remove(f)
    m._unregister(f)
    f.dead = True
    s = m.fam_index.get(f.task)
    if s is not None:
        s.discard(f)


def _add_records(m, f: Family, recs) -> None:
    store = f.vs.mutates if f.mutate else f.vs.reads
    for r in recs:
        store.add(r)
        for t in r.tasks():
            m._register(r, t)
    # the records wait on every barrier element the family waits on (caught by an Arrive)
    for b in m.barriers.values():
        for st in b["elems"].values():
            add = [(r, c, lvl) for x, c, lvl in st.pending if x is f for r in recs]
            if add:
                st.pending.extend(add)


def touch_families(m, v, box, mode: str, task: int, mask: int, qbits, conv: bool) -> None:
    """Before a per-element access of ``box`` by ``(task, mask)``: check it against the live
    family members on the box as ``Machine.access`` checks records, and supersede them when
    it is a non-atomic mutation. Members failing a check become plain records first, so that
    the access itself reports the failure as it would."""
    for f in v.fams.overlapping(box):
        reg = f.region(box)
        if reg is None or not (f.ids[reg] != -1).any():
            continue
        flag = _need(mode, f)
        ok = flag is None or Record.has(f, flag, qbits, task, mask, False) or \
            all(_pair_ok(f, k, flag, qbits, task, mask, conv) for k in f.live_mids(reg))
        if not ok:
            _add_records(m, f, f.materialize(reg))
        elif mode in ("write", "rw"):
            f.kill(reg)
        if not f.is_live():
            drop_family(m, f)


def prepare_sync(m, task: int, mask: int) -> None:
    """Split the families of ``task`` that a synchronization by ``(task, mask)`` would not
    treat alike (some members' threads touch ``mask``, others' not) into families that it
    does: the members touching it and the others, each with the same flags and pending
    barrier entries as before."""
    fams = m.fam_index.get(task)
    if not fams:
        return
    masks = m.masks
    for f in list(fams):
        if f.dead:
            fams.discard(f)
        elif not f.uniform_for(task, mask):
            g = f.split({k for k in f.mids if masks[k] & mask})
            if g is not None:
                _add_family_like(m, f, g)
            if not f.is_live():
                drop_family(m, f)


def _add_family_like(m, f: Family, g: Family) -> None:
    """Register ``g`` wherever ``f`` is: the variable's store, the index, barrier entries."""
    f.vs.fams.add(g)
    for t in g.tasks():
        m._register(g, t)
    m.fam_index.setdefault(g.task, set()).add(g)
    for b in m.barriers.values():
        for st in b["elems"].values():
            add = [(g, c, lvl) for x, c, lvl in st.pending if x is f]
            if add:
                st.pending.extend(add)
