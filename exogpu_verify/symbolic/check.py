"""``check_sync_symbolic``: prove a proc's synchronization for every size, or say why not.

Pipeline: static analyses (thread mappings) -> AMIR -> events -> one obligation per
(conflicting access pair, hazard), per SMEM free, per access bound, per Await, per
size-dependent condition (window bounds, argument shapes, instruction and resource
preconditions; the constant ones were decided by the static analyses and are reported as
``facts``). isl computes
each obligation's remainder (conflicts minus ordered pairs); Z3 independently decides the
remainder's emptiness; then every obligation, stated whole in SMT-LIB from its isl texts,
must be ``unsat`` in Z3 and in cvc5 (``decide.py``).
A non-empty remainder gives the smallest sizes that reach it; the concrete interpreter
replays those sizes to produce the witness, and only then is the proc refuted.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass, field

import islpy as isl

from ..amir.convert import lower_to_amir
from ..amir.reuse import smem_reused_by_async
from ..ir.memories import PHASE_MEMORIES, MbarrierPhases
from ..ir.nodes import Procedure
from .events import Event, Unsupported, collect_events
from .obligations import NEED, Builder, Obligation
from .relations import Encoder
from .barriers import (arrive_progress, barrier_bounds, cluster_alternation,
                       one_arrive_statement, range_obligation, ring_balance,
                       trailing_before_arrive)
from . import witness
from .prune import prune_text
from .proxy import ASYNC_BITS, is_generic, proxy_ordered, split_quals
from .decide import REPLAYED, decide as _decide
from .preconditions import condition_obligations
from .decide import discharge
from .solvers import SOLVERS


@dataclass
class SymbolicResult:
    verdict: str  # proven | refuted | unknown
    reason: str = ""
    obligations: list = field(default_factory=list)
    failing: Obligation | None = None
    sizes: dict | None = None
    seconds: float = 0.0
    srcinfo: object = None
    candidates: list = field(default_factory=list)  # (sizes, obligation), smallest first
    #: preconditions decided without a solver (``analysis.conditions.CheckedFact``): the
    #: constant facts a certificate records beside the obligations
    facts: list = field(default_factory=list)


def _mask(mem) -> frozenset:
    return frozenset(q.bit for q in mem.qual_mask())


class Timeout(Exception):
    pass


def _smallest_sizes(s: isl.Set, params: list[str]) -> dict:
    n = s.dim(isl.dim_type.param)
    moved = s.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n)
    pt = moved.lexmin().sample_point()
    out = {}
    sp = s.get_space()
    for i in range(n):
        name = sp.get_dim_name(isl.dim_type.param, i)
        out[name] = int(pt.get_coordinate_val(isl.dim_type.set, i).to_python())
    return out


def check_sync_symbolic(p: Procedure, timeout_s: float = 60.0, solvers=SOLVERS
                        ) -> SymbolicResult:
    """Prove ``seq[p] == par[p]`` for all sizes satisfying the asserts; see module docstring.
    ``solvers``: the SMT solvers that must each find every obligation unsat."""
    t0 = time.perf_counter()
    deadline = t0 + timeout_s
    from ..analysis import analyze

    info = analyze(p)
    if info.diagnostics:
        return SymbolicResult("unknown", "static analyses failed", seconds=0.0)
    facts = list(info.preconditions.facts) if info.preconditions is not None else []
    try:
        am = lower_to_amir(p)
        prog = collect_events(am, info)
        size_params = [prm.name for prm in p.params if not prm.is_data
                       and prm.type.name == "size"]
        for prm in p.params:
            if not prm.is_data and prm.type.name == "bool":
                raise Unsupported(f"bool parameter {prm.name}: the Presburger encoding does "
                                  "not model boolean parameters", prm.srcinfo)
        enc = Encoder(prog, size_params)
        # statements that never execute (constant-false guards from metaprogramming) are
        # not part of the program's behaviour; that they never execute is an obligation too
        # (so the solvers, and a certificate's reader, see it)
        dead = _never_executed(prog, enc)
        prog.events = [e for e in prog.events if all(e is not ob.second for ob in dead)]
        obs = dead + list(_obligations(prog, enc, deadline, smem_reused_by_async(am)))
    except Unsupported as u:
        return SymbolicResult("unknown", u.reason, seconds=time.perf_counter() - t0,
                              srcinfo=u.srcinfo)
    except Timeout:
        return SymbolicResult("unknown", f"symbolic check exceeded the timeout of {timeout_s}s",
                              seconds=time.perf_counter() - t0)
    except isl.Error as e:
        return SymbolicResult("unknown", f"isl could not build an obligation ({e}); this is "
                              "a limitation of the encoding", seconds=time.perf_counter() - t0)
    failing = [ob for ob in obs if ob.empty is False]
    if failing:
        # candidates: the smallest sizes of each failing obligation, smallest first
        # (lexicographic in parameter order); the caller replays them concretely
        cands = sorted(((_smallest_sizes(ob.remainder, enc.params), ob) for ob in failing),
                       key=lambda so: tuple(so[0].get(n, 0) for n in enc.params))
        sizes, ob = cands[0]
        res = SymbolicResult("refuted", f"{ob.kind} obligation not discharged: {ob.name}",
                             obs, ob, sizes, time.perf_counter() - t0)
        res.candidates = cands
        res.facts = facts
        return res
    try:
        # the solvers' second opinion has its own time budget (the isl stage may have used
        # most of the first)
        _recorded_witnesses(obs)
        discharge(obs, solvers, time.perf_counter() + timeout_s)
    except Unsupported as u:
        res = SymbolicResult("unknown", u.reason, obs, seconds=time.perf_counter() - t0,
                             srcinfo=u.srcinfo)
        res.facts = facts
        return res
    return SymbolicResult("proven", "", obs, None, None, time.perf_counter() - t0,
                          facts=facts)


def _never_executed(prog, enc: Encoder) -> list:
    """One obligation per event whose instances are empty at every size: its domain."""
    out = []
    for e in prog.events:
        text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(e, 'a'))}] : {enc.context} and "
                f"{enc.dom(e, 'a')} }}")
        dom = isl.Set(text)
        if dom.is_empty():
            where = f" (line {e.srcinfo.line})" if e.srcinfo else ""
            ob = Obligation(f"{e.what or e.kind}{where} never executes", "never executes",
                            None, e, text)
            _decide(ob, dom)
            out.append(ob)
    return out


def _obligations(prog, enc: Encoder, deadline: float, async_reuse=frozenset()):
    b = Builder(enc)
    # re-checking takes the certificate's orderings by label: skipping candidates that
    # cannot apply would save isl nothing there and cost the checks
    b.filtering = _REPLAY.get() is None
    ms = max(100, int((deadline - time.perf_counter()) * 1000))
    by_var: dict[str, list[Event]] = {}
    for e in prog.events:
        if e.kind == "access":
            by_var.setdefault(e.var, []).append(e)
    frees = {e.var: e for e in prog.events if e.kind == "free"}
    for var, accs in by_var.items():
        decl = prog.vars[var]
        rank = len(decl.shape)
        mask = _mask(decl.mem)
        # a lazy access (wgmma_zero) touches nothing: it neither supersedes nor is checked
        kills = [a for a in accs if a.mode in ("write", "rw") and not a.quals[0].lazy]
        if decl.mem in PHASE_MEMORIES:
            # every lap pair of a ring's physical phases is ordered by synchronization, none
            # by a later lap's write hiding the earlier one: stricter than the concrete
            # machine (which supersedes), and a fifth of the ping-pong GEMM's isl time spent
            # on candidates that almost never met anything (bench/RESULTS.md, 2026-12-06)
            kills = []
        for A in accs:
            if decl.mem not in PHASE_MEMORIES:  # in range by construction (amir/phases.py)
                yield _bounds(A, decl, enc, ms)
            if time.perf_counter() > deadline:
                raise Timeout
            for B in accs:
                kind, need = _conflict_kind(A, B)
                if kind is None or B.quals[0].lazy:
                    continue
                if decl.mem in PHASE_MEMORIES and _same_role(A, B):
                    continue
                if A.kernel != B.kernel or A.kernel is None:
                    _cross_phase(A, B)
                    continue
                ob = _pair(b, enc, A, B, kind, need, decl, rank, mask, kills, ms)
                if ob is not None:
                    yield ob
            fr = frees.get(var)
            if fr is not None and fr.kernel == A.kernel and not A.quals[0].lazy:
                ob = _pair(b, enc, A, fr, "free without sync", TEMPORAL_NEED, decl, rank, mask,
                           kills, ms, var in async_reuse)
                if ob is not None:
                    yield ob
    for w in b.awaits:
        yield arrive_progress(b, enc, w, ms)
        yield trailing_before_arrive(b, enc, w, ms)
    yield from cluster_alternation(b, enc, ms)
    for name, decl in prog.vars.items():
        if decl.barrier and decl.mem.kind == "mbarrier":
            once = list(one_arrive_statement(b, enc, name, decl, ms))
            yield from once
            # a ring whose elements already take two Arrive statements is refuted above;
            # its arrival counts need no further (and no weaker) argument
            if all(ob.empty for ob in once):  # (one phase per lifetime without a ring)
                yield from ring_balance(b, enc, name, decl, ms)

    for e in prog.events:
        refs = list(e.targets) + list(e.trailing)
        for ref in refs:
            yield barrier_bounds(e, ref, enc, ms)
        if e.kind == "check":
            yield from condition_obligations(e, enc, ms)


TEMPORAL_NEED = "temporal"


def _same_role(A: Event, B: Event) -> bool:
    """Two accesses of a ring's physical phases (``amir/phases.py``) that never share a cell
    but in the same instance: both an arriver's own lap (one arriver id, every waiter id) or
    both a waiter's or next arriver's claim on a lap (every arriver id, one waiter id)."""
    return A.box[-2][0] == B.box[-2][0]


def _conflict_kind(A: Event, B: Event):
    a_mut = A.mode != "read"
    if B.mode == "atomic":
        if A.mode == "atomic":
            return None, None
        return ("WAW" if a_mut else "WAR"), "atomic"
    if not a_mut and B.mode == "read":
        return None, None
    if a_mut:
        return {"read": "RAW", "write": "WAW", "rw": "WAW"}[B.mode], NEED[("mutate", B.mode)]
    return "WAR", NEED[("read", B.mode)]


def _cross_phase(A: Event, B: Event):
    """Accesses in different kernel launches or CPU code are ordered by the stream fences
    at kernel boundaries (cuda_stream_sync), provided their timelines are stream-ordered."""
    from ..ir.timelines import cuda_stream_sync

    stream = frozenset(q.bit for q in cuda_stream_sync.full)
    if A.kernel is None and B.kernel is None:
        if A.quals[0] in B.quals:
            return
        raise Unsupported(f"CPU accesses on different timelines: {A.what} and {B.what}",
                          B.srcinfo)
    if A.quals[0].bit not in stream and A.kernel is not None:
        raise Unsupported(f"{A.what} is not ordered by kernel boundaries", A.srcinfo)


# ------------------------------------------------------------- re-checking a certificate
#: while a certificate is re-checked (``replaying``): (kind, conflict text) -> the lists of
#: ordered-set texts the certificate recorded for obligations with that conflict set
_REPLAY: contextvars.ContextVar = contextvars.ContextVar("exogpu_replay", default=None)


@contextlib.contextmanager
def replaying(records):
    """Re-derive obligations with the orderings a certificate chose (``records``: its
    obligation entries). Each access pair's conflict set and candidate ordered sets are
    built from the program exactly as when proving, but instead of isl choosing which
    candidates discharge the pair, the candidates whose texts the certificate recorded for
    that conflict set are taken, in candidate order, and no isl set is subtracted: the two
    solvers alone decide each obligation (``decide.discharge``). Sound whatever the
    certificate says: every candidate is an ordering the program guarantees, and a choice
    that does not cover the conflicts is ``sat`` for the solvers, so no proof. A recorded
    text that is not among the program's candidates (a forged or stale certificate) makes
    that pair derived the ordinary way, with isl, and the comparison with the certificate
    then reports the difference."""
    hints: dict = {}
    wits: dict = {}
    for o in records:
        hints.setdefault((o["kind"], o["conflict"]), []).append(
            [(x["by"], x["set"], x.get("witness")) for x in o["ordered"]])
        if o["ordered"] and all("witness" in x for x in o["ordered"]):
            wits[(o["kind"], o["conflict"], tuple(x["set"] for x in o["ordered"]))] = \
                [x["witness"] for x in o["ordered"]]
    token = _REPLAY.set(hints)
    wtoken = _REPLAY_WITNESSES.set(wits)
    try:
        yield
    finally:
        _REPLAY.reset(token)
        _REPLAY_WITNESSES.reset(wtoken)


#: while re-checking: (kind, conflict text, ordered texts) -> the certificate's witnesses
_REPLAY_WITNESSES: contextvars.ContextVar = contextvars.ContextVar("exogpu_replay_witnesses",
                                                                   default=None)


def _recorded_witnesses(obs) -> None:
    """While re-checking, every obligation whose texts are a certificate's takes that
    certificate's witnesses (also those that isl re-derived, e.g. barrier progress), so the
    re-check never depends on how this isl prints its ``lexmin``; a witness is never
    trusted (``decide._witnessed``), so taking it is always safe."""
    wits = _REPLAY_WITNESSES.get()
    if not wits:
        return
    for ob in obs:
        w = wits.get((ob.kind, ob.conflict, tuple(t for _, t in ob.ordered)))
        if w is not None:
            ob.witnesses = list(w)


class _Replay:
    """The recorded (label, ordered-set text, witness) of one access pair still to meet."""

    def __init__(self, texts: list[tuple]):
        self.left = list(texts)

    @staticmethod
    def of(kind: str, conflict_text: str) -> "_Replay | None":
        hints = _REPLAY.get()
        lists = hints.get((kind, conflict_text)) if hints is not None else None
        return _Replay(lists.pop(0)) if lists else None

    def take(self, label: str, text: str) -> tuple | None:
        """(the pruned ``text``, the certificate's witness for it or None) when it is the
        next recorded ordering (a candidate with another label is not pruned at all: that
        is most of them)."""
        if not self.left or self.left[0][0] != label:
            return None
        pruned = prune_text(text)
        if pruned != self.left[0][1]:
            return None
        return pruned, self.left.pop(0)[2]

    @property
    def complete(self) -> bool:
        return not self.left


def _pair(b: Builder, enc: Encoder, A, B, kind, need, decl, rank, mask, kills, ms,
          async_reuse=False, replay=True):
    t = time.perf_counter()
    if B.kind == "free" and decl.mem.async_registers:
        # every asynchronous access completes before the registers' end of life, superseded
        # or not: no element dimensions and no supersession (stricter, and much smaller sets)
        rank, kills = 0, []
    elem = [f"e{i}" for i in range(rank)]
    same = enc.same_prefix(A, "a", B, "b", decl.depth)
    if same == "1 = 0":
        return None
    if B.kind == "free":
        if decl.mem.async_registers:
            # registers of an asynchronous instruction: its accesses complete before reuse
            E2, conv2 = frozenset({_q("c1").bit}), True
        elif decl.mem is MbarrierPhases:
            # the next task continues on the physical mbarriers (amir/phases.py)
            E2, conv2 = frozenset({_q("mbar").bit}), False
        elif async_reuse and is_generic(A):
            E2, conv2 = frozenset({_q("aret").bit}), False
        else:
            E2, conv2 = frozenset(q.bit for q in (_q("c2"), _q("aret"))), False
        bbox = " and ".join(f"0 <= e{i} < {enc.ex(x, B, 'b')}" for i, x in
                            enumerate(decl.shape) if i < rank) or "1 = 1"
    else:
        E2 = frozenset(q.bit for q in B.quals)
        conv2 = B.quals[0].convergent
        bbox = enc.box(B, "b", elem)
    body = (f"{enc.dom(A, 'a')} and {enc.dom(B, 'b')} and {enc.before(A, 'a', B, 'b')} and "
            f"{same} and {enc.box(A, 'a', elem)} and {bbox}")
    conflict_text = prune_text(b.wrap(A, B, rank, body))
    conflict = isl.Set(conflict_text)
    name = f"{kind} {decl.display}: {A.what} (line {A.srcinfo.line}) -> {B.what} (line {B.srcinfo.line})"
    ob = Obligation(name, kind, A, B, conflict_text)
    if conflict.is_empty():
        ob.empty = True
        ob.remainder = conflict
        ob.extra = {"isl": "empty (no conflicting instances)"}
        ob.seconds = time.perf_counter() - t
        return ob
    rp = _Replay.of(kind, conflict_text) if replay else None

    def left(conflict) -> bool:
        return not rp.complete if rp is not None else not conflict.is_empty()

    # supersession: a non-atomic mutation between A and B on the element hides A
    for K in kills:
        kt = b.exists([(K, "k")], f"{enc.before(A, 'a', K, 'k')} and "
                      f"{enc.before(K, 'k', B, 'b')} and {enc.box(K, 'k', elem)} and "
                      f"{enc.same_prefix(A, 'a', K, 'k', decl.depth)}")
        conflict = _subtract(conflict, ob, "superseded", b.wrap(A, B, rank, kt), rp)
        if not left(conflict):
            break
    if left(conflict):
        # a generic-proxy A reaches the async proxy's quals only through its async view
        E2n, E2a = split_quals(A, E2)
        pats = []
        if E2n:
            pats.append(b.ordered(A, B, need, E2n, conv2, rank,
                                  mask - ASYNC_BITS if is_generic(A) else mask))
        if E2a:
            pats.append(proxy_ordered(b, A, B, need, E2a, conv2, rank))
        for gen in pats:
            for label, text in gen:
                conflict = _subtract(conflict, ob, label, text, rp)
                if not left(conflict):
                    break
            if not left(conflict):
                break
    if rp is not None:
        if not rp.complete:     # a recorded ordering the program does not give: isl decides
            return _pair(b, enc, A, B, kind, need, decl, rank, mask, kills, ms, async_reuse,
                         replay=False)
        ob.empty = True
        ob.extra["isl"] = REPLAYED
        ob.seconds = time.perf_counter() - t
        return ob
    conflict = conflict.coalesce()
    _decide(ob, conflict, ms)
    ob.seconds = time.perf_counter() - t
    return ob


def _subtract(conflict: isl.Set, ob: Obligation, label: str, text: str,
              replay: _Replay | None = None) -> isl.Set:
    """Subtract an ordered set from what is left of the conflicts, and record it, only when
    it orders some pair still left: the obligation then lists the orderings that discharged
    it (and the solvers never see a set that covers nothing new); the remainder is the
    same as subtracting every candidate. The text is pruned first (``prune.py``: an
    equivalent text without dead disjuncts), and recorded as pruned. ``replay``: record it
    when it is the certificate's next ordering, without isl (``replaying``)."""
    if replay is not None:
        taken = replay.take(label, text)
        if taken is not None:
            ob.ordered.append((label, taken[0]))
            ob.witnesses.append(taken[1])
        return conflict
    quick = getattr(text, "quick", None)
    if quick is not None and conflict.intersect(quick()).is_empty():
        return conflict  # the set or a superset, from cached relations: it meets nothing
    text = prune_text(text)
    o = witness.ordered(text)
    met, rest = o.split(conflict)
    if met.is_empty():
        return conflict
    ob.ordered.append((label, text))
    ob.witnesses.append(o.witness(met))
    return rest


def _q(abbrev):
    from ..ir.timelines import QUAL_TLS

    return QUAL_TLS[abbrev]


def _bounds(A: Event, decl, enc: Encoder, ms) -> Obligation:
    return range_obligation(A, A.box, decl.shape, enc, ms,
                            f"bounds of {A.what} (line {A.srcinfo.line})", "out of bounds",
                            empty_intervals=False)
