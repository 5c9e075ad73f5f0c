"""Barrier obligations, mirroring the concrete machine's barrier-misuse checks.

* ``barrier_bounds``: every barrier index in range (ring dimensions of a pre-arrived ring run
  past the extent by the pre-arrive count, since slot i is released on index i + k);
* ``arrive_progress``: every Await has an earlier Arrive on its element (or is pre-arrived);
* ``trailing_before_arrive``: no copy completing on an element is issued after the last
  Arrive before an Await of it;
* ``ring_balance``: at the free of an mbarrier ring, no Arrive on a pre-arrived index, every
  index arrived, and the same number of Arrive instances per index.
"""

from __future__ import annotations

import time

import islpy as isl

from ..ir.affine import to_isl_str
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


def _arrive_map(enc: Encoder, r: Event, tg, depth: int, nz: int, with_threads: bool = False):
    """isl map: Arrive instance less its thread iterators (all of it when ``with_threads``)
    -> [alloc loops, element]."""
    thr = [k for k, lp in enumerate(r.loops) if lp.kind == "threads" and not with_threads]
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


def ring_balance(b: Builder, enc: Encoder, name, decl, ms):
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
    ls = [f"l{i}" for i in range(decl.depth)]
    zs = [f"z{i}" for i in range(nz)]
    arrived = isl.Set(f"{enc.pstr} -> {{ [{', '.join(ls + zs)}] : 1 = 0 }}")
    for _, m, _ in maps:
        arrived = arrived.union(m.range())
    # rings are touched by Arrives and Awaits alike (the concrete machine checks both)
    touched = arrived
    for w in b.awaits:
        for tg in w.targets:
            if tg.name == name:
                touched = touched.union(_arrive_map(enc, w, tg, decl.depth, nz)[0].range())
    if touched.is_empty():
        return
    if pre:
        low = arrived.intersect(isl.Set(
            f"{enc.pstr} -> {{ [{', '.join([f'l{i}' for i in range(decl.depth)] + [f'z{i}' for i in range(nz)])}] : "
            + " or ".join(f"z{d} < {pre}" for d in rdims) + " }"))
        ob = Obligation(f"no Arrive on a pre-arrived index of {decl.display}", "barrier misuse",
                        None, maps[0][0] if maps else None, str(low))
        decide(ob, low, ms)
        yield ob
    # every index of a touched ring (same alloc instance and non-ring coordinates) arrived
    sp = [f"l{i}" for i in range(decl.depth)] + [f"z{i}" for i in range(nz)]
    sp2 = [f"l{i}" for i in range(decl.depth)] + [f"w{i}" for i in range(nz)]
    same_outer = " and ".join(f"w{d} = z{d}" for d in range(nz) if d not in rdims) or "1 = 1"
    rng = " and ".join(f"{pre} <= z{d} < {to_isl_str(decl.shape[d], enc._pren())} + {pre}"
                       for d in rdims)
    spread = isl.Map(f"{enc.pstr} -> {{ [{', '.join(sp2)}] -> [{', '.join(sp)}] : "
                     f"{same_outer} and {rng} }}")
    need = touched.apply(spread.align_params(touched.get_space()))
    missing = need.subtract(arrived).coalesce()
    ob = Obligation(f"every ring index of {decl.display} arrived", "barrier misuse", None,
                    maps[0][0] if maps else None, str(need), [("arrived", str(arrived))])
    decide(ob, missing, ms)
    yield ob
    counts = set()
    for k, (r, m, thr) in enumerate(maps):
        c = _thread_count(enc, r, thr)
        if c is None or not m.is_injective():
            # whole instances (thread iterators included) hitting every index at most once:
            # one Arrive instance per arrived index (e.g. `if wg == j % 2:` selects the one
            # warpgroup that arrives in iteration j)
            tg = next(t for t in r.targets if t.name == name)
            if thr and _arrive_map(enc, r, tg, decl.depth, nz, True)[0].is_injective():
                c = 1
            else:
                raise Unsupported(f"cannot prove that every index of the ring {decl.display} "
                                  "gets the same number of Arrive instances", r.srcinfo)
        counts.add(c)
        for r2, m2, _ in maps[k + 1:]:
            if not m.range().intersect(m2.range()).is_empty():
                raise Unsupported(f"two Arrive statements may target the same index of "
                                  f"{decl.display}", r2.srcinfo)
    if len(counts) > 1:
        raise Unsupported(f"Arrive statements on {decl.display} run different thread counts",
                          maps[0][0].srcinfo)


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
    decide(ob, bad.coalesce(), ms)
    ob.seconds = time.perf_counter() - t
    return ob


def arrive_progress(b: Builder, enc: Encoder, w: Event, ms) -> Obligation:
    """Every Await instance has an earlier matching Arrive (or a pre-arrived slot)."""
    t = time.perf_counter()
    tgt = w.targets[0]
    decl = enc.prog.vars[tgt.name]
    base = f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {enc.context} and {enc.dom(w, 'b')} }}"
    s = isl.Set(base)
    ordered = []  # what is subtracted, recorded so the certificate re-derives the remainder
    for r in b.arrives:
        if not any(x.name == tgt.name for x in r.targets):
            continue
        m = b.exists([(r, "r")], b.match(r, "r", w, "b", any_count=True))
        text = f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {m} }}"
        ordered.append((f"Arrive at line {r.srcinfo.line}", text))
        s = s.subtract(isl.Set(text))
    k = getattr(decl.mem, "pre_arrive", 0)
    if k and not s.is_empty():
        pre = []
        for d, depth in enumerate(decl.ring):
            if depth is not None:
                x = tgt.idx[d]
                pre.append(f"{enc.ex(x[1], w, 'b')} < {k}")
        if pre:
            text = f"{enc.pstr} -> {{ [{', '.join(enc.dims(w, 'b'))}] : {' or '.join(pre)} }}"
            ordered.append(("pre-arrived", text))
            s = s.subtract(isl.Set(text))
    ob = Obligation(f"await progress {decl.display} (line {w.srcinfo.line})", "await progress",
                    None, w, base, ordered)
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
