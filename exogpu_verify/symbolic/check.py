"""``check_sync_symbolic``: prove a proc's synchronization for every size, or say why not.

Pipeline: static analyses (thread mappings) -> AMIR -> events -> one obligation per
(conflicting access pair, hazard), per SMEM free, per access bound, per Await. isl computes
each obligation's remainder (conflicts minus ordered pairs); Z3 independently decides the
remainder's emptiness as a quantifier-free linear-integer formula (both must say empty).
A non-empty remainder gives the smallest sizes that reach it; the concrete interpreter
replays those sizes to produce the witness, and only then is the proc refuted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import islpy as isl

from ..amir import lower_to_amir
from ..ir.nodes import Procedure
from .events import Event, Unsupported, collect_events
from .obligations import NEED, Builder, Obligation
from .relations import Encoder
from ..ir.affine import to_isl_str
from .z3bridge import set_to_z3, to_smtlib, z3_check


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


def _decide(ob: Obligation, remainder: isl.Set, timeout_ms: int) -> None:
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


def check_sync_symbolic(p: Procedure, timeout_s: float = 60.0) -> SymbolicResult:
    """Prove ``seq[p] == par[p]`` for all sizes satisfying the asserts; see module docstring."""
    t0 = time.perf_counter()
    deadline = t0 + timeout_s
    from ..analysis import analyze

    info = analyze(p)
    if info.diagnostics:
        return SymbolicResult("unknown", "static analyses failed", seconds=0.0)
    try:
        am = lower_to_amir(p)
        prog = collect_events(am, info)
        size_params = [prm.name for prm in p.params if not prm.is_data
                       and prm.type.name == "size"]
        for prm in p.params:
            if not prm.is_data and prm.type.name == "bool":
                raise Unsupported(f"bool parameter {prm.name}: control flow depends on a "
                                  "boolean parameter")
        enc = Encoder(prog, size_params)
        # statements that never execute (constant-false guards from metaprogramming) are
        # not part of the program's behaviour
        prog.events = [e for e in prog.events if not isl.Set(
            f"{enc.pstr} -> {{ [{', '.join(enc.dims(e, 'a'))}] : {enc.context} and "
            f"{enc.dom(e, 'a')} }}").is_empty()]
        obs = list(_obligations(prog, enc, deadline))
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
        return res
    return SymbolicResult("proven", "", obs, None, None, time.perf_counter() - t0)


def _obligations(prog, enc: Encoder, deadline: float):
    b = Builder(enc)
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
        kills = [a for a in accs if a.mode in ("write", "rw")]
        for A in accs:
            yield _bounds(A, decl, enc, ms)
            if time.perf_counter() > deadline:
                raise Timeout
            for B in accs:
                kind, need = _conflict_kind(A, B)
                if kind is None:
                    continue
                if A.kernel != B.kernel or A.kernel is None:
                    _cross_phase(A, B)
                    continue
                ob = _pair(b, enc, A, B, kind, need, decl, rank, mask, kills, ms)
                if ob is not None:
                    yield ob
            fr = frees.get(var)
            if fr is not None and fr.kernel == A.kernel:
                ob = _pair(b, enc, A, fr, "free without sync", TEMPORAL_NEED, decl, rank, mask,
                           kills, ms)
                if ob is not None:
                    yield ob
    for w in b.awaits:
        yield _progress(b, enc, w, ms)
        yield _trailing_before_arrive(b, enc, w, ms)
    for name, decl in prog.vars.items():
        if decl.barrier and decl.mem.kind == "mbarrier" and any(
                r is not None for r in decl.ring):
            yield from _ring_balance(b, enc, name, decl, ms)


def _plain(enc: Encoder, e) -> str:
    return to_isl_str(e, enc._pren())
    for e in prog.events:
        refs = list(e.targets) + list(e.trailing)
        for ref in refs:
            yield _barrier_bounds(e, ref, enc, ms)


TEMPORAL_NEED = "temporal"


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


def _pair(b: Builder, enc: Encoder, A, B, kind, need, decl, rank, mask, kills, ms):
    t = time.perf_counter()
    elem = [f"e{i}" for i in range(rank)]
    same = enc.same_prefix(A, "a", B, "b", decl.depth)
    if same == "1 = 0":
        return None
    if B.kind == "free":
        E2 = frozenset(q.bit for q in (_q("c2"), _q("aret")))
        conv2 = False
        bbox = " and ".join(f"0 <= e{i} < {enc.ex(x, B, 'b')}" for i, x in
                            enumerate(decl.shape)) or "1 = 1"
    else:
        E2 = frozenset(q.bit for q in B.quals)
        conv2 = B.quals[0].convergent
        bbox = enc.box(B, "b", elem)
    body = (f"{enc.dom(A, 'a')} and {enc.dom(B, 'b')} and {enc.before(A, 'a', B, 'b')} and "
            f"{same} and {enc.box(A, 'a', elem)} and {bbox}")
    conflict_text = b.wrap(A, B, rank, body)
    conflict = isl.Set(conflict_text)
    name = f"{kind} {decl.display}: {A.what} (line {A.srcinfo.line}) -> {B.what} (line {B.srcinfo.line})"
    ob = Obligation(name, kind, A, B, conflict_text)
    if conflict.is_empty():
        ob.empty = True
        ob.remainder = conflict
        ob.extra = {"z3": "not needed (no conflicting instances)"}
        ob.seconds = time.perf_counter() - t
        return ob
    # supersession: a non-atomic mutation between A and B on the element hides A
    for K in kills:
        kt = b.exists([(K, "k")], f"{enc.before(A, 'a', K, 'k')} and "
                      f"{enc.before(K, 'k', B, 'b')} and {enc.box(K, 'k', elem)} and "
                      f"{enc.same_prefix(A, 'a', K, 'k', decl.depth)}")
        conflict = conflict.subtract(isl.Set(b.wrap(A, B, rank, kt)))
        ob.ordered.append(("superseded", b.wrap(A, B, rank, kt)))
        if conflict.is_empty():
            break
    if not conflict.is_empty():
        for label, text in b.ordered(A, B, need, E2, conv2, rank, mask):
            conflict = conflict.subtract(isl.Set(text))
            ob.ordered.append((label, text))
            if conflict.is_empty():
                break
        conflict = conflict.coalesce()
    _decide(ob, conflict, ms)
    ob.seconds = time.perf_counter() - t
    return ob


def _q(abbrev):
    from ..ir.timelines import QUAL_TLS

    return QUAL_TLS[abbrev]


def _bounds(A: Event, decl, enc: Encoder, ms) -> Obligation:
    t = time.perf_counter()
    outs = []
    for w, ext in zip(A.box, decl.shape):
        X = enc.ex(ext, A, "a") if decl.depth == 0 or True else None
        if w[0] == "pt":
            i = enc.ex(w[1], A, "a")
            outs.append(f"{i} < 0 or {i} >= {X}")
        else:
            lo, hi = enc.ex(w[1], A, "a"), enc.ex(w[2], A, "a")
            outs.append(f"{lo} < 0 or {hi} > {X} or {lo} > {hi}")
    body = " or ".join(f"({o})" for o in outs) or "1 = 0"
    text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(A, 'a'))}] : {enc.context} and "
            f"{enc.dom(A, 'a')} and ({body}) }}")
    ob = Obligation(f"bounds of {A.what} (line {A.srcinfo.line})", "out of bounds", None, A,
                    text)
    _decide(ob, isl.Set(text), ms)
    ob.seconds = time.perf_counter() - t
    return ob


def _barrier_bounds(e: Event, ref, enc: Encoder, ms) -> Obligation:
    t = time.perf_counter()
    decl = enc.prog.vars[ref.name]
    pre = getattr(decl.mem, "pre_arrive", 0)
    outs = []
    for d, (w, ext) in enumerate(zip(ref.idx, decl.shape)):
        X = enc.ex(ext, e, "a")
        if pre and decl.ring and decl.ring[d] is not None:
            X = f"({X} + {pre})"
        if w[0] == "pt":
            i = enc.ex(w[1], e, "a")
            outs.append(f"{i} < 0 or {i} >= {X}")
        else:
            lo, hi = enc.ex(w[1], e, "a"), enc.ex(w[2], e, "a")
            outs.append(f"{lo} < 0 or {hi} > {X} or {lo} >= {hi}")
    body = " or ".join(f"({o})" for o in outs) or "1 = 0"
    text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(e, 'a'))}] : {enc.context} and "
            f"{enc.dom(e, 'a')} and ({body}) }}")
    ob = Obligation(f"index range of barrier {decl.display} (line {e.srcinfo.line})",
                    "barrier index out of range", None, e, text)
    _decide(ob, isl.Set(text), ms)
    ob.seconds = time.perf_counter() - t
    return ob


def _arrive_map(enc: Encoder, r: Event, tg, depth: int, nz: int):
    """isl map: Arrive instance less its thread iterators -> [alloc loops, element]."""
    thr = [k for k, lp in enumerate(r.loops) if lp.kind == "threads"]
    keep = [f"a{k}" for k in range(len(r.loops)) if k not in thr]
    ls = [f"l{i}" for i in range(depth)]
    zs = [f"z{i}" for i in range(nz)]
    eq = " and ".join(f"l{i} = a{i}" for i in range(depth)) or "1 = 1"
    body = f"{enc.dom(r, 'a')} and {eq} and {enc.barrier_elems(tg, r, 'a', zs)}"
    if thr:
        body = f"exists ({', '.join(f'a{k}' for k in thr)} : {body})"
    return isl.Map(f"{enc.pstr} -> {{ [{', '.join(keep)}] -> [{', '.join(ls + zs)}] : "
                   f"{enc.context} and {body} }}"), thr


def _thread_count(enc: Encoder, r: Event, thr: list) -> int | None:
    """Thread-iterator combinations per instance when they do not depend on other loop
    variables or sizes (the domain is a product); None otherwise."""
    if not thr:
        return 1
    dims = enc.dims(r, "a")
    dom = isl.Set(f"{enc.pstr} -> {{ [{', '.join(dims)}] : {enc.context} and "
                  f"{enc.dom(r, 'a')} }}")
    keep = [k for k in range(len(dims)) if k not in thr]
    outer, inner = dom, dom
    for k in sorted(thr, reverse=True):
        outer = outer.project_out(isl.dim_type.set, k, 1)
    for k in sorted(keep, reverse=True):
        inner = inner.project_out(isl.dim_type.set, k, 1)
    inner = inner.project_out(isl.dim_type.param, 0, inner.dim(isl.dim_type.param))
    if not inner.is_bounded():
        return None
    # dom must equal outer x inner with the thread iterators in their original positions
    prod = outer.insert_dims(isl.dim_type.set, len(keep), len(thr)).intersect(
        inner.insert_dims(isl.dim_type.set, 0, len(keep)).align_params(outer.get_space()))
    order = keep + thr
    perm = isl.Map(f"{{ [{', '.join(f'x{i}' for i in range(len(dims)))}] -> "
                   f"[{', '.join(f'y{j}' for j in range(len(dims)))}] : "
                   + " and ".join(f"y{j} = x{order[j]}" for j in range(len(dims))) + " }")
    moved = dom.apply(perm.align_params(dom.get_space()))
    if not moved.is_equal(prod.align_params(moved.get_space())):
        return None
    pts = []
    inner.foreach_point(lambda pt: pts.append(1))
    return len(pts)


def _ring_balance(b: Builder, enc: Encoder, name, decl, ms):
    """At the free of an mbarrier ring (mirrors the concrete machine): no Arrive on a
    pre-arrived virtual index; every index in [pre, extent + pre) of a touched ring arrived;
    the same number of Arrive instances on every index. The last is proven by a sufficient
    condition: the Arrive statements hit disjoint indices, each statement's instances (less
    their thread iterators) hit an index at most once, and all statements run the same
    number of thread-iterator combinations per instance."""
    pre = getattr(decl.mem, "pre_arrive", 0)
    rdims = [d for d, r in enumerate(decl.ring) if r is not None]
    nz = len(decl.shape)
    maps = []
    for r in b.arrives:
        for tg in r.targets:
            if tg.name == name:
                m, thr = _arrive_map(enc, r, tg, decl.depth, nz)
                maps.append((r, m, thr))
    if not maps:
        return
    arrived = maps[0][1].range()
    for _, m, _ in maps[1:]:
        arrived = arrived.union(m.range())
    if pre:
        low = arrived.intersect(isl.Set(
            f"{enc.pstr} -> {{ [{', '.join([f'l{i}' for i in range(decl.depth)] + [f'z{i}' for i in range(nz)])}] : "
            + " or ".join(f"z{d} < {pre}" for d in rdims) + " }"))
        ob = Obligation(f"no Arrive on a pre-arrived index of {decl.display}", "barrier misuse",
                        None, maps[0][0], str(low))
        _decide(ob, low, ms)
        yield ob
    # every index of a touched ring (same alloc instance and non-ring coordinates) arrived
    sp = [f"l{i}" for i in range(decl.depth)] + [f"z{i}" for i in range(nz)]
    sp2 = [f"l{i}" for i in range(decl.depth)] + [f"w{i}" for i in range(nz)]
    same_outer = " and ".join(f"w{d} = z{d}" for d in range(nz) if d not in rdims) or "1 = 1"
    rng = " and ".join(f"{pre} <= z{d} < {to_isl_str(decl.shape[d], enc._pren())} + {pre}"
                       for d in rdims)
    spread = isl.Map(f"{enc.pstr} -> {{ [{', '.join(sp2)}] -> [{', '.join(sp)}] : "
                     f"{same_outer} and {rng} }}")
    need = arrived.apply(spread.align_params(arrived.get_space()))
    missing = need.subtract(arrived).coalesce()
    ob = Obligation(f"every ring index of {decl.display} arrived", "barrier misuse", None,
                    maps[0][0], str(need))
    _decide(ob, missing, ms)
    yield ob
    counts = set()
    for k, (r, m, thr) in enumerate(maps):
        c = _thread_count(enc, r, thr)
        if c is None or not m.is_injective():
            raise Unsupported(f"cannot prove that every index of the ring {decl.display} gets "
                              "the same number of Arrive instances", r.srcinfo)
        counts.add(c)
        for r2, m2, _ in maps[k + 1:]:
            if not m.range().intersect(m2.range()).is_empty():
                raise Unsupported(f"two Arrive statements may target the same index of "
                                  f"{decl.display}", r2.srcinfo)
    if len(counts) > 1:
        raise Unsupported(f"Arrive statements on {decl.display} run different thread counts",
                          maps[0][0].srcinfo)


def _trailing_before_arrive(b: Builder, enc: Encoder, w: Event, ms) -> Obligation:
    """No copy completing on the awaited element is issued after its last Arrive before the
    Await (on the hardware it would count toward the next phase); mirrors the concrete
    machine: for every Await instance and trailing copy of that element before it, some
    Arrive on the element lies between them."""
    t = time.perf_counter()
    tgt = w.targets[0]
    decl = enc.prog.vars[tgt.name]
    dims = enc.dims(w, "b")
    space = f"{enc.pstr} -> {{ [{', '.join(dims)}]"
    bad = isl.Set(f"{space} : 1 = 0 }}")
    nz = len(decl.shape)
    for a in enc.prog.events:
        for tb in (x for x in a.trailing if x.name == tgt.name):
            zs = [f"q{i}" for i in range(nz)]
            elem = (f"exists ({', '.join(zs)} : {enc.barrier_elems(tgt, w, 'b', zs)} and "
                    f"{enc.barrier_elems(tb, a, 'c', zs)})") if nz else "1 = 1"
            issued = (f"{enc.same_prefix(a, 'c', w, 'b', decl.depth)} and "
                      f"{enc.before(a, 'c', w, 'b')} and {elem}")
            between = []
            for r in b.arrives:
                for rt in (x for x in r.targets if x.name == tgt.name):
                    ss = [f"s{i}" for i in range(nz)]
                    relem = (f"exists ({', '.join(ss)} : {enc.barrier_elems(tgt, w, 'b', ss)} "
                             f"and {enc.barrier_elems(rt, r, 'r', ss)})") if nz else "1 = 1"
                    between.append(b.exists([(r, "r")], (
                        f"{enc.before(a, 'c', r, 'r')} and {enc.before(r, 'r', w, 'b')} and "
                        f"{enc.same_prefix(r, 'r', w, 'b', decl.depth)} and {relem}")))
            cover = " or ".join(f"({x})" for x in between) or "1 = 0"
            body = b.exists([(a, "c")], f"{issued} and not ({cover})")
            bad = bad.union(isl.Set(f"{space} : {enc.context} and {enc.dom(w, 'b')} and "
                                    f"{body} }}"))
    ob = Obligation(f"copies completing on {decl.display} issued before an Arrive "
                    f"(Await at line {w.srcinfo.line})", "barrier misuse", None, w, str(bad))
    _decide(ob, bad.coalesce(), ms)
    ob.seconds = time.perf_counter() - t
    return ob


def _progress(b: Builder, enc: Encoder, w: Event, ms) -> Obligation:
    """Every Await instance has an earlier matching Arrive (or a pre-arrived slot)."""
    t = time.perf_counter()
    tgt = w.targets[0]
    decl = enc.prog.vars[tgt.name]
    base = f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {enc.context} and {enc.dom(w, 'b')} }}"
    s = isl.Set(base)
    for r in b.arrives:
        if not any(x.name == tgt.name for x in r.targets):
            continue
        m = b.exists([(r, "r")], b.match(r, "r", w, "b", any_count=True))
        s = s.subtract(isl.Set(f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {m} }}"))
    k = getattr(decl.mem, "pre_arrive", 0)
    if k and not s.is_empty():
        pre = []
        for d, depth in enumerate(decl.ring):
            if depth is not None:
                x = tgt.idx[d]
                pre.append(f"{enc.ex(x[1], w, 'b')} < {k}")
        if pre:
            s = s.subtract(isl.Set(f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : "
                                   f"{' or '.join(pre)} }}"))
    ob = Obligation(f"await progress {decl.display} (line {w.srcinfo.line})", "await progress",
                    None, w, base)
    _decide(ob, s.coalesce(), ms)
    ob.seconds = time.perf_counter() - t
    return ob
