"""Barrier obligations, mirroring the concrete machine's barrier-misuse checks.

* ``barrier_bounds``: every barrier index in range (ring dimensions of a pre-arrived ring run
  past the extent by the pre-arrive count, since slot i is released on index i + k);
* ``arrive_progress``: every Await has an earlier Arrive on its element (or is pre-arrived);
* ``trailing_before_arrive``: no copy completing on an element is issued after the last
  Arrive before an Await of it;
* ``cluster_alternation``: Arrives on the one hardware cluster barrier alternate with Awaits
  in every task;
* ``ring_balance``: at the free of an mbarrier ring, no Arrive on a pre-arrived index, every
  index of every element in use arrived in every lifetime, and the same number of Arrive
  instances per index.
"""

from __future__ import annotations

import time

import islpy as isl

from . import witness
from .decide import decide
from .events import Event, Unsupported
from .obligations import Builder, Obligation
from .relations import Encoder


def range_obligation(e: Event, idx, shape, enc: Encoder, ms, name: str, kind: str,
                     extra: dict | None = None, empty_intervals: bool = True) -> Obligation:
    """Instances of ``e`` whose indices ``idx`` (per dim ("pt", i) or ("iv", lo, hi)) leave
    ``[0, shape)``; ``extra`` adds a constant to some extents (pre-arrived ring dims)."""
    t = time.perf_counter()
    outs = []
    for d, (w, ext) in enumerate(zip(idx, shape)):
        X = enc.ex(ext, e, "a")
        if extra and d in extra:
            X = f"({X} + {extra[d]})"
        if w[0] == "pt":
            i = enc.ex(w[1], e, "a")
            outs.append(f"{i} < 0 or {i} >= {X}")
        else:
            lo, hi = enc.ex(w[1], e, "a"), enc.ex(w[2], e, "a")
            bad = f"{lo} >= {hi}" if empty_intervals else f"{lo} > {hi}"
            outs.append(f"{lo} < 0 or {hi} > {X} or {bad}")
    body = " or ".join(f"({o})" for o in outs) or "1 = 0"
    text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(e, 'a'))}] : {enc.context} and "
            f"{enc.dom(e, 'a')} and ({body}) }}")
    ob = Obligation(name, kind, None, e, text)
    decide(ob, isl.Set(text), ms)
    ob.seconds = time.perf_counter() - t
    return ob


def barrier_bounds(e: Event, ref, enc: Encoder, ms) -> Obligation:
    decl = enc.prog.vars[ref.name]
    pre = getattr(decl.mem, "pre_arrive", 0)
    extra = {d: pre for d, r in enumerate(decl.ring) if pre and r is not None}
    return range_obligation(e, ref.idx, decl.shape, enc, ms,
                            f"index range of barrier {decl.display} (line {e.srcinfo.line})",
                            "barrier index out of range", extra)


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


def _range_body(enc: Encoder, r: Event, tg, depth: int, zs: list, lv: str = "l") -> str:
    """isl text (over ``l0..``, or ``lv`` + index, and ``zs``) of 'some instance of ``r``
    targets element ``zs`` of the allocation instance ``l0..``'."""
    ls = " and ".join(f"{lv}{i} = a{i}" for i in range(depth)) or "1 = 1"
    body = f"{enc.dom(r, 'a')} and {ls} and {enc.barrier_elems(tg, r, 'a', zs)}"
    dims = enc.dims(r, "a")
    return f"exists ({', '.join(dims)} : {body})" if dims else f"({body})"


def ring_balance(b: Builder, enc: Encoder, name, decl, ms):
    """At the free of an mbarrier ring (mirrors the concrete machine): no Arrive on a
    pre-arrived virtual index; every index in [pre, extent + pre) of every element in use
    (touched in some lifetime) arrived in every lifetime;
    the same number of Arrive instances on every index. The last is proven by a sufficient
    condition: the Arrive statements hit disjoint indices, each statement's instances (less
    their thread iterators) hit an index at most once (two obligations each), and all
    statements run the same number of thread-iterator combinations per instance."""
    pre = getattr(decl.mem, "pre_arrive", 0)
    rdims = [d for d, r in enumerate(decl.ring) if r is not None]
    nz = len(decl.shape)
    maps = []
    for r in b.arrives:
        for tg in r.targets:
            if tg.name == name:
                m, thr = _arrive_map(enc, r, tg, decl.depth, nz)
                maps.append((r, m, thr))
    ls = [f"l{i}" for i in range(decl.depth)]
    zs = [f"z{i}" for i in range(nz)]
    ws = [f"w{i}" for i in range(nz)]
    space = f"{enc.pstr} -> {{ [{', '.join(ls + zs)}]"
    arrives = [(r, tg) for r in b.arrives for tg in r.targets if tg.name == name]
    arr_bodies = [(r, _range_body(enc, r, tg, decl.depth, zs)) for r, tg in arrives]
    arrived = " or ".join(f"({x})" for _, x in arr_bodies) or "1 = 0"
    # rings are touched by Arrives and Awaits alike (the concrete machine checks both)
    touching = arrives + [(w, tg) for w in b.awaits for tg in w.targets if tg.name == name]
    touched_w = " or ".join(f"({_range_body(enc, e, tg, decl.depth, ws)})"
                            for e, tg in touching) or "1 = 0"
    if isl.Set(f"{enc.pstr} -> {{ [{', '.join(ls + ws)}] : {enc.context} and ({touched_w}) }}"
               ).is_empty():
        return
    if not rdims:
        pre = 0  # CudaMbarrierPreArrive counts ring indices only
    if pre:
        low = (f"{space} : {enc.context} and ({arrived}) and ("
               + " or ".join(f"z{d} < {pre}" for d in rdims) + ") }")
        ob = Obligation(f"no Arrive on a pre-arrived index of {decl.display}", "barrier misuse",
                        None, maps[0][0] if maps else None, low)
        decide(ob, isl.Set(low), ms)
        yield ob
    # every index, in every lifetime, of each element in use: its coordinates outside the
    # ring dimensions touched by an Arrive or an Await in *some* lifetime (codegen advances
    # the phase base of all of a ring's physical mbarriers at the end of each lifetime;
    # mirrors amir/rules.py, check_ring_balance)
    life = Event("alloc", 0, decl.loops, decl.guards, (), decl.kernel, None, None, None)
    cons = [enc.context, enc.dom(life, "l")]
    for d in range(nz):
        lo = pre if d in rdims else 0
        cons.append(f"{lo} <= z{d} < {enc.ex(decl.shape[d], life, 'l')} + {lo}")
    mls = [f"m{i}" for i in range(decl.depth)]
    touched_any = " or ".join(f"({_range_body(enc, e, tg, decl.depth, ws, 'm')})"
                              for e, tg in touching) or "1 = 0"
    same_outer = " and ".join(f"w{d} = z{d}" for d in range(nz) if d not in rdims) or "1 = 1"
    need = (f"{space} : {' and '.join(cons)} and exists ({', '.join(mls + ws)} : "
            f"({touched_any}) and {same_outer}) }}")
    ob = Obligation(f"every ring index of {decl.display} arrived", "barrier misuse", None,
                    maps[0][0] if maps else None, need)
    missing = isl.Set(need)
    for r, body in arr_bodies:
        txt = f"{space} : {body} }}"
        ob.ordered.append((f"Arrive at line {r.srcinfo.line}", txt))
        missing = _minus(ob.witnesses, missing, txt)
    decide(ob, missing.coalesce(), ms)
    yield ob
    # the equal-count argument: each statement hits an index at most once per instance
    # (less its thread iterators), and statements hit disjoint indices. Both are set
    # emptiness, so they are obligations (certificates and solvers see them); failing one
    # is not a bug, only the end of this argument: Unsupported, as the thread counts
    counts = set()
    for k, ((r, m, thr), (_, tg)) in enumerate(zip(maps, arrives)):
        c = _thread_count(enc, r, thr)
        ob = _at_most_once(enc, r, tg, thr, decl, ms) if c is not None else None
        if c is None or (ob is not None and not ob.empty):
            # whole instances (thread iterators included) hitting every index at most once:
            # one Arrive instance per arrived index (e.g. `if wg == j % 2:` selects the one
            # warpgroup that arrives in iteration j)
            ob = _at_most_once(enc, r, tg, [], decl, ms) if thr else None
            if ob is None or not ob.empty:
                raise Unsupported(f"cannot prove that every index of the ring {decl.display} "
                                  "gets the same number of Arrive instances", r.srcinfo)
            c = 1
        counts.add(c)
        if ob is not None:
            yield ob
        for j in range(k + 1, len(maps)):
            r2 = maps[j][0]
            text = (f"{space} : {enc.context} and ({arr_bodies[k][1]}) and "
                    f"({arr_bodies[j][1]}) }}")
            ob = Obligation(f"Arrive statements at lines {r.srcinfo.line} and "
                            f"{r2.srcinfo.line} target disjoint indices of {decl.display}",
                            "barrier misuse", r, r2, text)
            decide(ob, isl.Set(text), ms)
            if not ob.empty:
                raise Unsupported(f"two Arrive statements may target the same index of "
                                  f"{decl.display}", r2.srcinfo)
            yield ob
    if len(counts) > 1:
        raise Unsupported(f"Arrive statements on {decl.display} run different thread counts",
                          maps[0][0].srcinfo)


def _at_most_once(enc: Encoder, r: Event, tg, thr: list, decl, ms) -> Obligation | None:
    """Two different instances of ``r`` (the iterators in ``thr`` aside) on one ring index:
    the set must be empty (None when every loop of ``r`` is in ``thr``)."""
    keep = [k for k in range(len(r.loops)) if k not in thr]
    if not keep:
        return None
    nz = len(decl.shape)
    ls = [f"l{i}" for i in range(decl.depth)]
    zs = [f"z{i}" for i in range(nz)]
    same = " and ".join([f"l{i} = a{i} and l{i} = b{i}" for i in range(decl.depth)] +
                        [enc.barrier_elems(tg, r, "a", zs), enc.barrier_elems(tg, r, "b", zs)])
    body = f"{enc.dom(r, 'a')} and {enc.dom(r, 'b')} and {same}"
    ex = [f"a{k}" for k in thr] + [f"b{k}" for k in thr] + ls + zs
    if ex:
        body = f"exists ({', '.join(ex)} : {body})"
    differ = " or ".join(f"a{k} != b{k}" for k in keep)
    dims = [f"a{k}" for k in keep] + [f"b{k}" for k in keep]
    text = (f"{enc.pstr} -> {{ [{', '.join(dims)}] : {enc.context} and ({differ}) and "
            f"{body} }}")
    what = "instance" if not thr else "instance (thread iterators aside)"
    ob = Obligation(f"Arrive at line {r.srcinfo.line} hits each index of {decl.display} at "
                    f"most once per {what}", "barrier misuse", r, r, text)
    decide(ob, isl.Set(text), ms)
    return ob


def trailing_before_arrive(b: Builder, enc: Encoder, w: Event, ms) -> Obligation:
    """No copy completing on the awaited element is issued after its last Arrive before the
    Await (on the hardware it would count toward the next phase); mirrors the concrete
    machine: for every Await instance and trailing copy of that element before it, some
    Arrive on the element lies between them."""
    t = time.perf_counter()
    tgt = w.targets[0]
    decl = enc.prog.vars[tgt.name]
    dims = enc.dims(w, "b")
    space = f"{enc.pstr} -> {{ [{', '.join(dims)}]"
    bodies = []
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
            bodies.append(b.exists([(a, "c")], f"{issued} and not ({cover})"))
    text = (f"{space} : {enc.context} and {enc.dom(w, 'b')} and ("
            + (" or ".join(f"({x})" for x in bodies) or "1 = 0") + ") }")
    ob = Obligation(f"copies completing on {decl.display} issued before an Arrive "
                    f"(Await at line {w.srcinfo.line})", "barrier misuse", None, w, text)
    decide(ob, isl.Set(text).coalesce(), ms)
    ob.seconds = time.perf_counter() - t
    return ob


def _minus(witnesses: list, left: isl.Set, txt: str) -> isl.Set:
    """``left`` less the set ``txt``, appending to ``witnesses`` the witness of ``txt`` on
    the part of ``left`` it covers (``witness.compute``)."""
    o = witness.ordered(txt)
    met, rest = o.split(left)
    witnesses.append(o.witness(met))
    return rest


def arrive_progress(b: Builder, enc: Encoder, w: Event, ms) -> Obligation:
    """Every Await instance has an earlier matching Arrive (or a pre-arrived slot)."""
    t = time.perf_counter()
    tgt = w.targets[0]
    decl = enc.prog.vars[tgt.name]
    base = f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {enc.context} and {enc.dom(w, 'b')} }}"
    s = isl.Set(base)
    ordered = []
    wits: list = []
    for r in b.arrives:
        if not any(x.name == tgt.name for x in r.targets):
            continue
        m = b.exists([(r, "r")], b.match(r, "r", w, "b", any_count=True))
        txt = f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {m} }}"
        ordered.append((f"Arrive at line {r.srcinfo.line}", txt))
        s = _minus(wits, s, txt)
    k = getattr(decl.mem, "pre_arrive", 0)
    if k:
        pre = []
        for d, depth in enumerate(decl.ring):
            if depth is not None:
                x = tgt.idx[d]
                pre.append(f"{enc.ex(x[1], w, 'b')} < {k}")
        if pre:
            txt = f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {' or '.join(pre)} }}"
            ordered.append((f"pre-arrived (the first {k} indices)", txt))
            s = _minus(wits, s, txt)
    ob = Obligation(f"await progress {decl.display} (line {w.srcinfo.line})", "await progress",
                    None, w, base, ordered, witnesses=wits)
    decide(ob, s.coalesce(), ms)
    ob.seconds = time.perf_counter() - t
    return ob


def one_arrive_statement(b: Builder, enc: Encoder, name: str, decl, ms):
    """Per mbarrier element, CTA and phase, the threads of one Arrive statement, once
    (mirrors the concrete machine: the generated init count is that statement's threads).
    Obligation per pair of Arrive statements: earlier/later instances on a common element
    from the same CTA, where the statements differ or the instances share a thread."""
    arrs = [r for r in b.arrives if any(t.name == name for t in r.targets)]
    nz = len(decl.shape)
    for i, r1 in enumerate(arrs):
        for r2 in arrs[i:]:
            t = time.perf_counter()
            if r1.kernel is None or r1.kernel != r2.kernel:
                continue
            bd = enc.prog.kernels[r1.kernel].blockDim
            st = enc.same_task(r1, "a", r2, "b")
            if st is None:
                continue
            c1, x1 = enc.tid(r1, "a", "ta")
            c2, x2 = enc.tid(r2, "b", "tb")
            same_cta = (f"exists ({', '.join(['ta', 'tb'] + x1 + x2)} : {c1} and {c2} and "
                        f"floor(ta / {bd}) = floor(tb / {bd}))")
            zs = [f"y{k}" for k in range(nz)]
            parts = []
            for t1 in (x for x in r1.targets if x.name == name):
                for t2 in (x for x in r2.targets if x.name == name):
                    q = f"{enc.barrier_elems(t1, r1, 'a', zs)} and {enc.barrier_elems(t2, r2, 'b', zs)}"
                    parts.append(f"exists ({', '.join(zs)} : {q})" if zs else f"({q})")
            common = " or ".join(f"({x})" for x in parts) or "1 = 0"
            again = "1 = 1" if r1 is not r2 else enc.share(r1, "a", r2, "b")
            body = (f"{enc.dom(r1, 'a')} and {enc.dom(r2, 'b')} and "
                    f"{enc.before(r1, 'a', r2, 'b')} and {st} and "
                    f"{enc.same_prefix(r1, 'a', r2, 'b', decl.depth)} and ({common}) and "
                    f"{same_cta} and {again}")
            dims = enc.dims(r1, "a") + enc.dims(r2, "b")
            text = f"{enc.pstr} -> {{ [{', '.join(dims)}] : {enc.context} and {body} }}"
            ob = Obligation(f"one Arrive statement per element of {decl.display} (lines "
                            f"{r1.srcinfo.line}, {r2.srcinfo.line})", "barrier misuse", r1, r2,
                            text)
            decide(ob, isl.Set(text).coalesce(), ms)
            ob.seconds = time.perf_counter() - t
            yield ob


def _cluster_kind(enc: Encoder, e: Event) -> bool:
    return any(getattr(enc.prog.vars[t.name].mem, "kind", "") == "cluster" for t in e.targets)


def _cluster_wide(enc: Encoder, f: Event) -> bool:
    cfg = enc.prog.kernels.get(f.kernel) if f.kernel is not None else None
    return (cfg is not None and cfg.clusterDim > 1 and f.mapping is not None
            and f.mapping.num_threads == cfg.blockDim * cfg.clusterDim)


def cluster_alternation(b: Builder, enc: Encoder, ms):
    """The one hardware cluster barrier (mirrors ``amir/rules.py``, ``ClusterBarrier``): per
    task, no second Arrive on a ``CudaClusterSync`` barrier and no cluster-wide Fence after
    an Arrive without an Await in between, and every Arrive followed by an Await in its
    task (each thread arrives at barrier.cluster once before it completes, PTX ISA 9.1)."""
    arrs = [r for r in b.arrives if r.kernel is not None and _cluster_kind(enc, r)]
    if not arrs:
        return
    awts = [w for w in b.awaits if w.kernel is not None and _cluster_kind(enc, w)]
    fences = [f for f in b.fences if _cluster_wide(enc, f)]

    def awaited(x, px, y=None, py=None) -> str:
        """Some cluster Await of x's task after the x instance (and before the y one)."""
        parts = []
        for w in awts:
            st = enc.same_task(x, px, w, "c")
            if st is None:
                continue
            cond = f"{st} and {enc.before(x, px, w, 'c')}"
            if y is not None:
                cond += f" and {enc.before(w, 'c', y, py)}"
            parts.append(b.exists([(w, "c")], cond))
        return "(" + " or ".join(parts) + ")" if parts else "1 = 0"

    for r in arrs:
        for y in arrs + fences:
            st = enc.same_task(r, "a", y, "b")
            if st is None:
                continue
            t = time.perf_counter()
            dims = enc.dims(r, "a") + enc.dims(y, "b")
            body = (f"{enc.dom(r, 'a')} and {enc.dom(y, 'b')} and {st} and "
                    f"{enc.before(r, 'a', y, 'b')} and not {awaited(r, 'a', y, 'b')}")
            text = f"{enc.pstr} -> {{ [{', '.join(dims)}] : {enc.context} and {body} }}"
            what = "Arrive" if y.kind == "arrive" else "cluster-wide Fence"
            ob = Obligation(f"cluster barrier: {what} (line {y.srcinfo.line}) after the Arrive "
                            f"at line {r.srcinfo.line} without an Await between",
                            "barrier misuse", r, y, text)
            decide(ob, isl.Set(text).coalesce(), ms)
            ob.seconds = time.perf_counter() - t
            yield ob
        t = time.perf_counter()
        text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(r, 'a'))}] : {enc.context} and "
                f"{enc.dom(r, 'a')} and not {awaited(r, 'a')} }}")
        ob = Obligation(f"cluster barrier: the Arrive at line {r.srcinfo.line} is awaited in "
                        "its task", "barrier misuse", None, r, text)
        decide(ob, isl.Set(text).coalesce(), ms)
        ob.seconds = time.perf_counter() - t
        yield ob
