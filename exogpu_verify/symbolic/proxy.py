"""Orderings of a generic-proxy access before an async-proxy one (``docs/semantics.md``,
"Proxies"), as isl texts subtracted from a conflict set.

A generic-proxy access A (first qual c2 or sm80) is seen by the async proxy (a TMA load,
store or reduction, a wgmma SMEM operand, a free of SMEM that the async proxy may reuse)
only through its *async view*, which the concrete machine creates at a proxy Fence (second
timeline with ``aret`` in its full set) run by A's threads, and which then travels exactly
as far as a generic access does (``SyncTL.generic_carry``). The patterns here are the ones
the concrete machine also has (so they are sound), for one Fence instance that covers all
of A's threads:

* V1: a proxy Fence ``f`` after A, run by every thread of A, whose threads cover B's;
* V2: such an ``f``, then one more edge (a Fence, or an Arrive/Await pair) caught through a
  thread of ``f``, whose second timeline carries the view to B's threads.

* V2u: the instances of such an ``f`` together, then one edge: every thread of A runs an
  instance of ``f`` after A that the *same* edge instance catches (through a thread of that
  instance), and the edge's second timeline carries the view to B's threads. Per-warp proxy
  Fences after a collective store of a whole warpgroup, then a CTA Fence or the
  warpgroup's mbarrier Arrive, are this pattern. The concrete machine makes one view per
  warp there (the per-warp Fence splits the part record) and carries each through its own
  warp, so each thread's instance must be caught: a hand-off by one warp orders only that
  warp's part (refuted by both checkers).
"""

from __future__ import annotations

from ..ir.timelines import ASYNC_PROXY_QUALS, ASYNC_VIEW
from .obligations import FULL, TEMPORAL, Builder, _fewer_threads

ASYNC_BITS = frozenset(q.bit for q in ASYNC_PROXY_QUALS)


def is_generic(A) -> bool:
    return A.kind == "access" and A.quals[0].proxy == "generic"


def split_quals(A, E2: frozenset) -> tuple[frozenset, frozenset]:
    """(quals of B checked through A's ordinary visibility, quals checked through A's async
    view): a generic-proxy access reaches the async proxy's quals only through its view."""
    if not is_generic(A):
        return E2, frozenset()
    return E2 - ASYNC_BITS, E2 & ASYNC_BITS


def _carry(L) -> str | None:
    c = L.generic_carry
    return {"full": FULL, "temporal": TEMPORAL}.get(c) if c else None


def _grants(level, L2) -> frozenset:
    """Flags of the async view granted by an edge caught at ``level`` with second timeline
    ``L2`` (the concrete machine's ``Record._augment_generic``)."""
    carry = _carry(L2)
    if level == FULL and carry == FULL:
        return frozenset({"full", "atomic", "issue", "temporal"})
    if carry is not None:
        return frozenset({"temporal"})
    return frozenset()


def proxy_ordered(b: Builder, A, B, need: str, E2_async: frozenset, conv2: bool, rank: int):
    """isl texts of the instance pairs (A, B) ordered through A's async view (V1, V2)."""
    if ASYNC_VIEW.bit not in E2_async:
        return
    enc = b.enc
    q0 = A.quals[0]
    for f in b.fences:
        if not f.L2.proxy_fence or q0 not in f.L1.full:
            continue
        pf = "pf"
        made = f"{enc.before(A, 'a', f, pf)} and {enc.cover(f, pf, A, 'a', False)}"
        body = f"{made} and {enc.before(f, pf, B, 'b')} and {enc.cover(f, pf, B, 'b', conv2)}"
        yield (f"proxy fence at line {f.srcinfo.line}",
               b.wrap(A, B, rank, b.exists([(f, pf)], body)))
        for kind, s1, s2, L1, L2 in _edges(b):
            level = _carry(L1)
            if level is None or need not in _grants(level, L2):
                continue
            t2, ex2, h2, ph2 = b.edge_text(f, pf, kind, s1, s2, "s")
            body = (f"{made} and {t2} and {enc.before(h2, ph2, B, 'b')} and "
                    f"{enc.cover(h2, ph2, B, 'b', conv2)}")
            label = (f"proxy fence at line {f.srcinfo.line} then {kind} at line "
                     f"{s1.srcinfo.line}")
            yield label, b.wrap(A, B, rank, b.exists([(f, pf)] + ex2, body))
    # V2u, last (the texts quantify over A's threads): the instances of f together
    for f in b.fences:
        if not f.L2.proxy_fence or q0 not in f.L1.full or not _fewer_threads(f, A):
            continue
        for kind, s1, s2, L1, L2 in _edges(b):
            level = _carry(L1)
            if level is None or need not in _grants(level, L2):
                continue
            text = _union_text(b, A, f, kind, s1, s2, B, conv2)
            if text is not None:
                yield (f"proxy fence at line {f.srcinfo.line} (its instances together) then "
                       f"{kind} at line {s1.srcinfo.line}", b.wrap(A, B, rank, text))


def _union_text(b: Builder, A, f, kind, s1, s2, B, conv2: bool) -> str | None:
    """V2u: some instance of the edge's holder (the Fence, or the Await of a pair), before B
    and covering B's threads, such that every thread ``t`` of A runs an instance of ``f`` in
    A's task, after A, that an edge with that holder instance catches (for a pair, each
    ``t``'s Arrive instance may differ: one Arrive per warp on one mbarrier phase):
    ``exists h : tail(h) and not (exists t : t in A and not (exists pf, s : t in pf and A <
    pf and edge(pf, s, h)))``."""
    enc = b.enc
    pf = "pu"
    st = enc.same_task(A, "a", f, pf)
    if st is None:
        return None
    t2, ex2, h2, ph2 = b.edge_text(f, pf, kind, s1, s2, "s")
    inner = [(f, pf)] + [(e, p) for e, p in ex2 if p != ph2]
    t = "vua"
    ca, xa = enc.tid(A, "a", t)
    cf, xf = enc.tid(f, pf, t)
    mine = f"exists ({', '.join(xf)} : {cf})" if xf else f"({cf})"
    made = f"{st} and {enc.before(A, 'a', f, pf)} and {t2}"
    every = (f"not (exists ({', '.join([t] + xa)} : {ca} and not "
             f"({b.exists(inner, f'{mine} and {made}')})))")
    # the holder instance is caught at all (A has threads, so ``every`` implies it; stated
    # for the instance's domain and to keep isl's reading of the set simple)
    some = b.exists(inner, made)
    tail = f"{enc.before(h2, ph2, B, 'b')} and {enc.cover(h2, ph2, B, 'b', conv2)}"
    return b.exists([(h2, ph2)], f"{tail} and {some} and {every}")


def _edges(b: Builder):
    for g in b.fences:
        yield "fence", g, g, g.L1, g.L2
    for r in b.arrives:
        for w in b.awaits:
            if any(t.name == w.targets[0].name for t in r.targets):
                yield "pair", r, w, r.L1, w.L2
