"""Batched nests in task-trace replay (``Machine._replay``, argument in ``interp.py``).

A reference task that runs an access nest batched records one ``NestEntry`` instead of the
nest's statement instances: later tasks replay the nest's statements on non-task-local
variables, batched again (``batch.run_nest``) or, where that declines, element by element
(``run_elementwise``), the same instances in the same order as the per-element replay.

``prune`` drops, once per execution of an innermost task loop, the trace entries whose replay
can change nothing and raise nothing in any of the loop's remaining tasks:

* reads of variables that no statement of the program mutates (outside shared memory), as
  leaf accesses without trailing barriers or nests of only such reads: they record nothing
  and their only check is the bounds, which ``prune`` evaluates at once for every remaining
  value of the loop's task iterator (the other task iterators are fixed during the loop, and
  no task iterator occurs in a loop bound of the body, the reuse condition);
* ``AmCheck`` entries whose conditions hold for every remaining value of the task iterator
  (they are stateless: ``Machine.check`` reads only the environment);
* Fences before the first entry that can give the task a record, when no CPU-scope record
  exists, in a kernel of one-CTA clusters: a Fence acts only on the records of its task and
  the CPU-scope ones, and a task starts without records (CPU-scope records are not created
  inside a kernel). (A cluster-wide Fence is also an arrival at the cluster barrier,
  ``rules.ClusterBarrier``: such Fences are kept.)

Memory is bounded by the work, not by the sizes: the caller prunes for at most
``PRUNE_WINDOW`` tasks at a time (and prunes again for the next ones), and each condition is
evaluated on chunks of task values of at most ``MAX_ELEMENTS`` array elements (an entry
whose one task alone needs more is kept: its replay decides it). Pruning drops only what
cannot matter, so neither bound changes a verdict.
"""

from __future__ import annotations

import math

import numpy as np

from . import nodes as A
from .batch import _checks_hold, nest_info
from .evaluate import CheckError, ev, ev_vec
from .threads import CollectiveError, tile

#: the most tasks one ``prune`` covers (the caller prunes again after as many)
PRUNE_WINDOW = 1 << 16
#: the most array elements one evaluation over task values builds
MAX_ELEMENTS = 1 << 22


def _chunks(tvals, per: int):
    """``tvals`` in consecutive pieces of at most ``MAX_ELEMENTS // per`` values (at least
    one; ``per``: the elements one task value spans)."""
    step = max(1, MAX_ELEMENTS // max(per, 1))
    for k in range(0, len(tvals), step):
        yield tvals[k:k + step]


class NestEntry:
    """A trace entry of a reference task: a batched nest, of which later tasks replay the
    statements on the variables in ``only`` (the non-task-local ones)."""

    __slots__ = ("node", "only")

    def __init__(self, node, only):
        self.node, self.only = node, only


def run_elementwise(m, loop, only) -> None:
    """The per-element run of the statements of nest ``loop`` on ``only``'s variables, as
    ``Machine.loop``/``access`` run them (for a replayed ``NestEntry`` that does not batch)."""
    env = m.env
    lo, hi = ev(loop.lo, env), ev(loop.hi, env)
    saved = m.mask
    tiles = None
    if loop.kind == "threads":
        if hi - lo <= 0:
            return
        cfg = m.cfg
        try:
            tiles = tile(m.mask, loop.unit, hi - lo, cfg.blockDim, cfg.clusterDim)
        except CollectiveError as e:
            raise CheckError("collective", f"{e} (in cuda_threads loop over {loop.iter})",
                             loop.srcinfo) from None
    for i in range(lo, hi):
        env[loop.iter] = i
        if tiles is not None:
            m.mask = tiles[i - lo]
        for c in loop.body:
            if type(c) is A.AmFor:
                run_elementwise(m, c, only)
            elif type(c) is A.AmCheck:
                m.check(c)
            elif c.name in only:
                m.access(c)
    m.mask = saved
    env.pop(loop.iter, None)


def _untracked(m, name: str) -> bool:
    v = m.vars.get(name)
    if v is None:
        try:
            v = m._param_state(name)
        except CheckError:
            return False
    return v.untracked_reads


def _box_ok(m, s, E) -> bool:
    """``s``'s box is in bounds (and not reversed) for every value of the arrays in ``E``, and
    its memory has a qualitative timeline for it (``Machine.access`` checks nothing else on
    a read of a never-mutated variable)."""
    v = m.vars.get(s.name)
    if v is None or len(s.box) != len(v.shape) or m.quals_of(v, s)[0] is None:
        return False  # (no qualitative timeline: the access raises)
    try:
        for w, ext in zip(s.box, v.shape):
            lo = np.asarray(ev(w[1], E))
            hi = lo + 1 if w[0] == "pt" else np.asarray(ev(w[2], E))
            if lo.min() < 0 or hi.max() > ext or (hi < lo).any():
                return False
    except Exception:  # noqa: BLE001 - keep the entry: its replay raises in place
        return False
    return True


def _pure_ok(m, s, env, outer: dict, titer: str, tvals) -> bool:
    """Whether replaying trace entry ``s`` (recorded in ``env``) with the outer task
    iterators at ``outer`` and ``titer`` at each of ``tvals`` records nothing and raises
    nothing."""
    env = dict(env)
    env.update(outer)
    if type(s) is A.AmAccess:
        if s.mode != "read" or s.barriers or not _untracked(m, s.name):
            return False
        for part in _chunks(tvals, 1):
            env[titer] = part
            if not _box_ok(m, s, env):
                return False
        return True
    if type(s) is not NestEntry:
        return False
    info = nest_info(s.node)
    if info is None or any(not _untracked(m, x) for x in s.only):
        return False
    # trip counts: no task iterator occurs in the body's loop bounds
    nl = len(info.loops)
    lo, trips = [0] * nl, [0] * nl
    for i, L in enumerate(info.loops):
        p = info.parent[i]
        if p >= 0 and trips[p] == 0:
            continue
        try:
            a, b = ev(L.lo, env), ev(L.hi, env)
        except Exception:  # noqa: BLE001
            return False
        lo[i], trips[i] = a, max(b - a, 0)
    per = max((math.prod(trips[i] for i in path) for _, path in info.checks), default=1)
    if per > MAX_ELEMENTS:
        return False
    for part in _chunks(tvals, per):
        if not _checks_hold(info, env, lo, trips, (titer, part)):
            return False  # (the nest's AmChecks, run in every task)
    for st, path in info.stmts:
        if st.name not in s.only or st.mode != "read":
            if st.name in s.only:
                return False
            continue
        if any(trips[i] == 0 for i in path):
            continue  # never executed
        d = len(path) + 1
        per = math.prod(trips[i] for i in path)
        if per > MAX_ELEMENTS:
            return False
        E = dict(env)
        for k, li in enumerate(path):
            sh = [1] * d
            sh[k + 1] = -1
            E[info.loops[li].iter] = np.arange(lo[li], lo[li] + trips[li]).reshape(sh)
        for part in _chunks(tvals, per):
            E[titer] = part.reshape([-1] + [1] * (d - 1))
            if not _box_ok(m, st, E):
                return False
    return True


def _check_ok(s, env, outer: dict, titer: str, tvals) -> bool:
    """Every condition of ``AmCheck`` entry ``s`` holds for each of ``tvals``."""
    E = dict(env)
    E.update(outer)
    try:
        for part in _chunks(tvals, 1):
            E[titer] = part
            if not all(bool(np.all(ev_vec(c.cond, E))) for c in s.conds):
                return False
    except Exception:  # noqa: BLE001 - keep the entry: its replay raises in place
        return False
    return True


def _reads_untracked(m, s) -> bool:
    if type(s) is A.AmAccess:
        return s.mode == "read" and _untracked(m, s.name)
    return all(_untracked(m, x) for x in s.only)


def prune(m, trace, outer: dict, titer: str, first: int, stop: int) -> list:
    """The entries of ``trace`` that replaying the tasks ``first..stop-1`` of the current
    innermost task loop (iterator ``titer``; the enclosing task iterators at ``outer``) must
    run; see the module docstring. The caller keeps ``stop - first`` within
    ``PRUNE_WINDOW``."""
    tvals = np.arange(first, stop, dtype=np.int64)
    out = []
    # can the task hold a record at this point of the trace (or a Fence arrive at the
    # cluster barrier)
    records = bool(m.cpu_records) or m.cfg is None or m.cfg.clusterDim > 1
    for e in trace:
        s, _, env = e
        t = type(s)
        if t is A.AmFence and not records:
            continue
        if t is A.AmCheck and _check_ok(s, env, outer, titer, tvals):
            continue
        if t is A.AmAccess or t is NestEntry:
            if _pure_ok(m, s, env, outer, titer, tvals):
                continue
            if not _reads_untracked(m, s):
                records = True
        out.append(e)
    return out
