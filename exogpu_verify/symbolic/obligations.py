"""Obligations: for every conflicting pair of accesses, the unordered instance pairs must be empty.

For accesses A (first in sequential order) and B of the same allocation instance, with at
least one mutation, the *conflict set* holds the instance pairs and array elements where B
must see A (no non-atomic mutation in between, since that supersedes A as the concrete
machine does). From it we subtract the pairs that the semantics of ``docs/semantics.md``
orders:

* P0, program order: A is in-order, its first qual is one of B's, and A's threads cover B's;
* P1, one synchronization edge: a Fence, an Arrive/Await pair matched on the barrier
  element (virtual ring index; commit groups by depth N; multicast targets), or A's own
  trailing barrier completed by a later Arrive, whose first timeline catches A's qual, run
  by a thread of A, and whose second timeline grants B's needed flag to B's threads;
* P2, two such edges chained, the second caught by what the first granted;
* then, for a B of several threads, each P1/P2 pattern with its holder's instances
  together: every thread of B runs some instance of the holder for which the pattern holds
  and that is before B (the concrete machine grants visibility per thread);
* last, chains of three and four edges, each caught by what the previous one granted (a
  relay through warps that never touch the data), P2's rule applied again.

Each pattern only adds orderings the concrete machine also has, so an empty remainder for
every obligation means the concrete check passes at every size (soundness); the converse
(completeness) is not claimed: a non-empty remainder is replayed concretely before anything
is refuted.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import islpy as isl

from ..ir.timelines import QUAL_TLS
from .events import Event, Unsupported
from .relations import Encoder

FULL, TEMPORAL = "full", "temporal"
#: the most choices of Arrive statements for an Await's N newer commit groups (one disjunct
#: each): 2 statements up to N = 6, 4 up to N = 3
MAX_NEWER_CHOICES = 64
#: the longest chain of synchronization edges an ordering may take (P1 is one edge, P2 two),
#: and the most candidates of three or more edges tried for one access pair
MAX_CHAIN = 4
MAX_LONG_CHAINS = 48
NEED = {("mutate", "read"): FULL, ("mutate", "write"): TEMPORAL, ("mutate", "rw"): FULL,
        ("read", "write"): TEMPORAL, ("read", "rw"): TEMPORAL}


@dataclass
class Obligation:
    name: str
    kind: str  # RAW | WAR | WAW | free without sync | out of bounds | await progress
    first: Event | None
    second: Event
    conflict: str  # isl text
    ordered: list = field(default_factory=list)  # isl texts subtracted
    #: per ordered set, its witness on the pairs it discharged (``witness.compute``), or
    #: None; shorter than ``ordered`` when the builder computed none
    witnesses: list = field(default_factory=list)
    remainder: object = None  # isl.Set
    empty: bool | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def _bits(qs) -> frozenset:
    return frozenset(q.bit for q in qs)


def partial(e: Event) -> bool:
    """A collective's access of a non-convergent qual (several threads, one instruction
    call): each thread accessed an unknown part of the box, so only synchronization run by
    all of them orders the whole access (the concrete machine's part records)."""
    return (e.kind == "access" and not e.quals[0].convergent and e.mapping is not None
            and e.mapping.num_threads > 1)


def _mask(mem) -> frozenset:
    return frozenset(q.bit for q in mem.qual_mask())


class Builder:
    """Builds obligations for one program (``Encoder`` does the text)."""

    def __init__(self, enc: Encoder):
        self.enc = enc
        self.prog = enc.prog
        evs = self.prog.events
        self.fences = [e for e in evs if e.kind == "fence"]
        self.arrives = [e for e in evs if e.kind == "arrive"]
        self.awaits = [e for e in evs if e.kind == "await"]
        self._may_follow: dict = {}
        self._may_follow_text: dict = {}
        self._maps: dict = {}
        self._map_text: dict = {}
        #: skip candidate edges that cannot apply (``may_follow``) and candidates that meet
        #: nothing (``Candidate.quick``); off while re-checking (``check.replaying``)
        self.filtering = True

    # ------------------------------------------------------------ sets
    def space(self, A: Event, B: Event, rank: int) -> str:
        dims = self.enc.dims(A, "a") + self.enc.dims(B, "b") + [f"e{i}" for i in range(rank)]
        return f"[{', '.join(dims)}]"

    def wrap(self, A, B, rank, body: str) -> str:
        return f"{self.enc.pstr} -> {{ {self.space(A, B, rank)} : {self.enc.context} and {body} }}"

    def may_follow(self, h: Event, s: Event, shared: bool = True) -> bool:
        """Some instance of ``s`` may come after one of ``h`` (at some sizes), run by a
        thread of it when ``shared``: when not, no chain hands on from holder ``h`` through
        ``s`` (every edge text requires both). Cached."""
        if not self.filtering:
            return True
        key = (id(h), id(s), shared)
        if key not in self._may_follow:
            enc = self.enc
            dims = enc.dims(h, "h") + enc.dims(s, "q")
            share = f" and {enc.share(h, 'h', s, 'q')}" if shared else ""
            text = (f"{enc.pstr} -> {{ [{', '.join(dims)}] : {enc.context} and "
                    f"{enc.dom(h, 'h')} and {enc.dom(s, 'q')} and "
                    f"{enc.before(h, 'h', s, 'q')}{share} }}")
            # events of one block often give one text (the physical-phase accesses of an
            # Arrive, amir/phases.py): isl reads each text once
            found = self._may_follow_text.get(text)
            if found is None:
                found = self._may_follow_text[text] = not isl.Set(text).is_empty()
            self._may_follow[key] = found
        return self._may_follow[key]

    # ------------------------------------------------------------ relations (cached)
    def _map(self, key, text: str) -> isl.Map:
        m = self._maps.get(key)
        if m is None:
            m = self._map_text.get(text)  # another key of the same text: isl objects are
            if m is None:                 # immutable, so one serves both
                m = self._map_text[text] = isl.Map(text)
            self._maps[key] = m
        return m

    def edge_rel(self, src: Event, ps: str, kind: str, s1: Event, s2: Event, pre: str,
                 trailing: bool = False) -> isl.Map:
        """{ src instance -> holder instance : the edge (s1, s2) catches src }: the
        relation form of ``edge_text``."""
        key = ("edge", id(src), ps, kind, id(s1), id(s2), pre, trailing)
        if key not in self._maps:
            enc = self.enc
            t, ex, h, ph = self.edge_text(src, ps, kind, s1, s2, pre, trailing=trailing)
            inner = [(e, p) for e, p in ex if p != ph]
            body = self.exists(inner, t) if inner else f"({t})"
            text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(src, ps))}] -> "
                    f"[{', '.join(enc.dims(h, ph))}] : {enc.context} and {enc.dom(h, ph)} "
                    f"and {body} }}")
            self._map(key, text)
        return self._maps[key]

    def tail_rel(self, h: Event, ph: str, B: Event, conv2) -> isl.Map:
        """{ holder instance -> B instance : before B, and its threads cover B's };
        ``conv2`` None: before B in B's task, whatever the threads (a superset of what
        each instance of a holder union needs: ``union_text``)."""
        key = ("tail", id(h), ph, id(B), conv2)
        if key not in self._maps:
            enc = self.enc
            if conv2 is None:
                threads = enc.same_task(h, ph, B, "b") or "1 = 0"
            else:
                threads = enc.cover(h, ph, B, "b", conv2)
            text = (f"{enc.pstr} -> {{ [{', '.join(enc.dims(h, ph))}] -> "
                    f"[{', '.join(enc.dims(B, 'b'))}] : {enc.context} and "
                    f"{enc.before(h, ph, B, 'b')} and {threads} }}")
            self._map(key, text)
        return self._maps[key]

    def _quick(self, rel, h: Event, ph: str, B: Event, conv2, rank: int):
        """``Candidate.quick`` of a chain: ``rel()`` (A instance -> last holder instance)
        then the holder's tail to B, as the set [a..., b..., e...] (any elements e). For a
        holder union (``conv2`` None) a superset of its set: some caught holder instance
        before B in B's task (the union has one for B's first thread)."""
        def quick():
            s = rel().apply_range(self.tail_rel(h, ph, B, conv2)).wrap().flatten()
            return s.add_dims(isl.dim_type.set, rank) if rank else s
        return quick

    def exists(self, evs_pres, body: str) -> str:
        names = [n for e, p in evs_pres for n in self.enc.dims(e, p)]
        doms = " and ".join(self.enc.dom(e, p) for e, p in evs_pres)
        if not names:
            return f"({doms} and {body})"
        return f"exists ({', '.join(names)} : {doms} and {body})"

    # ------------------------------------------------------------ barrier matching
    def match(self, r: Event, pr: str, w: Event, pw: str, any_count: bool = False) -> str:
        """Arrive instance r is released by Await instance w (``any_count``: ignore the
        commit-group wait depth, i.e. r is merely an earlier arrive on the same group)."""
        enc = self.enc
        tgt = w.targets[0]
        decl = self.prog.vars[tgt.name]
        same = enc.same_prefix(r, pr, w, pw, decl.depth)
        elem_q = self.same_element(r, pr, w, pw)
        base = f"{same} and {elem_q} and {enc.before(r, pr, w, pw)}"
        if decl.mem.kind != "commit":
            if decl.continues:
                return f"(({base}) or {self._continued(r, pr, w, pw, decl)})"
            return f"({base})"
        # a commit group belongs to the executing collective: same threads on both sides
        base += f" and {enc.cover(r, pr, w, pw, False)} and {enc.cover(w, pw, r, pr, False)}"
        if w.N == 0 or any_count:
            return f"({base})"
        # N newer groups committed by the same collective between r and w
        arrs = [a for a in self.arrives if any(t.name == tgt.name for t in a.targets)]
        if len(arrs) == 1:
            return f"({base} and {self._newer(r, pr, w, pw, [arrs[0]] * w.N, False)})"
        # several Arrive statements commit to the group (a prologue and a main loop): the N
        # newer groups may come from any of them, one disjunct per choice of statements. Each
        # newer group is also on w's element, as the concrete machine counts them (the
        # hardware counts every group of the thread, so this orders less, never more)
        if len(arrs) ** w.N > MAX_NEWER_CHOICES:
            raise Unsupported(f"Await(..., {w.N}) on a commit group with {len(arrs)} Arrive "
                              f"statements: {len(arrs)}^{w.N} choices of the {w.N} newer "
                              f"groups (at most {MAX_NEWER_CHOICES} are encoded)", w.srcinfo)
        alts = [self._newer(r, pr, w, pw, list(seq), True)
                for seq in itertools.product(arrs, repeat=w.N)]
        return f"({base} and ({' or '.join(alts)}))"

    def _continued(self, r: Event, pr: str, w: Event, pw: str, decl) -> str:
        """Arrive instance r, in the previous lifetime of a ring that continues (the previous
        iteration of the seq loop allocating it), is on index ``E + v`` of the element whose
        pre-arrived index ``v`` Await instance w waits on: the running index goes on from
        one lifetime to the next (``amir/phases.py``, ``AmAlloc.continues``)."""
        enc = self.enc
        d = decl.depth
        if d < 1 or enc.common(r, w) < d:
            return "(1 = 0)"
        tgt = w.targets[0]
        nz = len(decl.shape)
        [k] = [i for i, x in enumerate(decl.ring) if x is not None]
        pre = decl.mem.pre_arrive
        ext = enc.ex(decl.shape[k], w, pw)
        zs = [f"z{pr}{pw}c{i}" for i in range(nz)]
        ys = [f"y{pr}{pw}c{i}" for i in range(nz)]
        shift = " and ".join(f"{ys[i]} = {zs[i]} + {ext}" if i == k else f"{ys[i]} = {zs[i]}"
                             for i in range(nz))
        rel = " or ".join(f"({enc.barrier_elems(t, r, pr, ys)})" for t in r.targets
                          if t.name == tgt.name) or "1 = 0"
        elem = (f"exists ({', '.join(zs + ys)} : {enc.barrier_elems(tgt, w, pw, zs)} and "
                f"{zs[k]} < {pre} and {zs[k]} + {ext} >= {pre} and {shift} and ({rel}))")
        step = f"{pr}{d - 1} + 1 = {pw}{d - 1}"
        return (f"({enc.same_prefix(r, pr, w, pw, d - 1)} and {step} and {elem} and "
                f"{enc.before(r, pr, w, pw)})")

    def same_element(self, r: Event, pr: str, w: Event, pw: str) -> str:
        """Arrive instance r targets the element of w's barrier that w awaits."""
        enc = self.enc
        tgt = w.targets[0]
        elem = [f"z{pr}{pw}{i}" for i in range(len(self.prog.vars[tgt.name].shape))]
        wel = enc.barrier_elems(tgt, w, pw, elem)
        rel = " or ".join(f"({enc.barrier_elems(t, r, pr, elem)})" for t in r.targets
                          if t.name == tgt.name) or "1 = 0"
        return f"exists ({', '.join(elem)} : {wel} and ({rel}))" if elem else f"({rel})"

    def _newer(self, r: Event, pr: str, w: Event, pw: str, seq: list, same_elem: bool) -> str:
        """``seq[k]`` has an instance after r and the newer ones, before w, run by w's threads
        in r's allocation instance (``same_elem``: on w's element of the group), for each k:
        the groups committed after r's, so that r's is not among w's N most recent."""
        enc = self.enc
        tgt = w.targets[0]
        decl = self.prog.vars[tgt.name]
        chain, prev, prev_p, pres = [], r, pr, []
        for k, a in enumerate(seq):
            pk = f"{pr}n{k}_"
            pres.append((a, pk))
            chain.append(enc.before(prev, prev_p, a, pk))
            chain.append(enc.cover(a, pk, w, pw, False))
            chain.append(enc.cover(w, pw, a, pk, False))
            chain.append(enc.same_prefix(a, pk, w, pw, decl.depth))
            if same_elem:
                chain.append(self.same_element(a, pk, w, pw))
            prev, prev_p = a, pk
        chain.append(enc.before(prev, prev_p, w, pw))
        return self.exists(pres, " and ".join(chain))

    # ------------------------------------------------------------ ordering edges
    def edges(self, A: Event, q_issue: frozenset, mask: frozenset, depth: int):
        """Sync edges that catch a record whose issue/full quals (for A's threads, or for
        the threads of the previous holder) are ``q_issue``. Yields
        (kind, stages, holder, level, L2) where ``stages`` builds the edge text."""
        for f in self.fences:
            lvl = self._level(q_issue, f.L1)
            if lvl:
                yield ("fence", f, f, lvl, f.L2)
        for r in self.arrives:
            lvl = self._level(q_issue, r.L1)
            if not lvl:
                continue
            for w in self.awaits:
                if any(t.name == w.targets[0].name for t in r.targets):
                    yield ("pair", r, w, lvl, w.L2)

    @staticmethod
    def _level(q_issue: frozenset, L1):
        if q_issue & _bits(L1.full):
            return FULL
        if q_issue & _bits(L1.temporal):
            return TEMPORAL
        return None

    @staticmethod
    def grants(level, L2, mask: frozenset) -> dict:
        """flag -> quals granted by an edge of this level and second timeline."""
        full = _bits(L2.full) & mask
        temp = _bits(L2.temporal) & mask
        if level == FULL:
            return {"full": full, "atomic": full, "issue": full, "temporal": temp}
        return {"full": frozenset(), "atomic": frozenset(), "issue": frozenset(),
                "temporal": temp}

    def edge_text(self, src: Event, ps: str, kind, s1: Event, s2: Event, pre: str,
                  trailing: bool = False) -> tuple[str, list, Event, str]:
        """Text of 'src instance is caught by this edge'; returns (text, existentials,
        holder event, holder prefix)."""
        enc = self.enc
        def caught(p1):  # a thread of src runs it; every one, for a part access
            if partial(src):
                return enc.cover(s1, p1, src, ps, False)
            return enc.share(src, ps, s1, p1)

        if kind == "fence":
            pf = f"{pre}f"
            t = f"{enc.before(src, ps, s1, pf)} and {caught(pf)}"
            return t, [(s1, pf)], s1, pf
        pr, pw = f"{pre}r", f"{pre}w"
        if trailing:
            tb = self.trailing_same(src, ps, s1, pr)
            t = f"{enc.before(src, ps, s1, pr)} and {tb} and {self.match(s1, pr, s2, pw)}"
        else:
            t = (f"{enc.before(src, ps, s1, pr)} and {caught(pr)} and "
                 f"{self.match(s1, pr, s2, pw)}")
        return t, [(s1, pr), (s2, pw)], s2, pw

    def trailing_same(self, a: Event, pa: str, r: Event, pr: str) -> str:
        enc = self.enc
        parts = []
        for tb in a.trailing:
            decl = self.prog.vars[tb.name]
            elem = [f"y{pa}{pr}{i}" for i in range(len(decl.shape))]
            for t in r.targets:
                if t.name != tb.name:
                    continue
                same = enc.same_prefix(a, pa, r, pr, decl.depth)
                body = f"{enc.barrier_elems(tb, a, pa, elem)} and {enc.barrier_elems(t, r, pr, elem)}"
                q = f"exists ({', '.join(elem)} : {body})" if elem else f"({body})"
                parts.append(f"({same} and {q})")
        return "(" + " or ".join(parts) + ")" if parts else "1 = 0"

    def union_text(self, B: Event, ex: list, body: str, h: Event, ph: str) -> str | None:
        """Every thread of the B instance runs some instance of holder ``h`` (with the other
        existentials ``ex`` of its pattern) for which ``body`` holds and that is before B, in
        B's task: the pattern's holders together cover B. None when one instance is all
        there can be (a holder without fewer threads than B: the single pattern says it)."""
        enc = self.enc
        if h.kernel is None or B.kernel is None or not _fewer_threads(h, B):
            return None
        st = enc.same_task(h, ph, B, "b")
        if st is None:
            return None
        t = f"v{ph}b"
        cb, xb = enc.tid(B, "b", t)
        ch, xh = enc.tid(h, ph, t)
        mine = f"exists ({', '.join(xh)} : {ch})" if xh else f"({ch})"
        inner = self.exists(ex, f"{body} and {enc.before(h, ph, B, 'b')} and {st} and {mine}")
        return f"not (exists ({', '.join([t] + xb)} : {cb} and not ({inner})))"

    # ------------------------------------------------------------ ordered patterns
    def ordered(self, A: Event, B: Event, need: str, E2: frozenset, conv2: bool, rank: int,
                mask: frozenset):
        """isl texts of instance pairs (A, B) ordered by each pattern, cheapest first."""
        enc = self.enc
        q0 = A.quals[0].bit if A.kind == "access" else None
        # P0: program order of the same threads (not for a collective's part access: a
        # thread of it may not have made the element's part)
        if A.in_order and q0 in E2 and not partial(A):
            yield "program order", self.wrap(A, B, rank, enc.cover(A, "a", B, "b", conv2))
        start = frozenset({q0})
        first_edges = list(self.edges(A, start, mask, 0))
        if A.trailing:
            for r in self.arrives:
                for w in self.awaits:
                    if any(t.name == w.targets[0].name for t in r.targets) and \
                            any(t.name == tb.name for tb in A.trailing for t in r.targets):
                        first_edges.append(("trailing", r, w, FULL, w.L2))
        firsts, unions = [], []
        for kind, s1, s2, lvl, L2 in first_edges:
            # an edge no thread of A can run after A, or whose holder cannot precede B,
            # orders nothing (the exact filter of ``may_follow``; it saves isl the texts)
            if not self.may_follow(A, s1, shared=(kind != "trailing")) or \
                    not self.may_follow(s2, B, shared=False):
                continue
            g = self.grants(lvl, L2, mask)
            t1, ex1, h1, ph1 = self.edge_text(A, "a", "fence" if kind == "fence" else "pair",
                                              s1, s2, "p", trailing=(kind == "trailing"))
            def rel1(kind=kind, s1=s1, s2=s2):
                return self.edge_rel(A, "a", "fence" if kind == "fence" else "pair", s1, s2,
                                     "p", trailing=(kind == "trailing"))
            firsts.append((kind, s1, lvl, g, t1, ex1, h1, ph1, rel1))
            if g[need] & E2:
                body = (f"{t1} and {enc.before(h1, ph1, B, 'b')} and "
                        f"{enc.cover(h1, ph1, B, 'b', conv2)}")
                label = f"{kind} at line {s1.srcinfo.line}"
                yield label, Candidate.of(self.wrap(A, B, rank, self.exists(ex1, body)),
                                          self._quick(rel1, h1, ph1, B, conv2, rank))
                unions.append((label, ex1, t1, h1, ph1, rel1))
        # P2 after every P1 (cheaper patterns first): a second edge caught by what the first
        # granted (issue/full quals)
        chains = [(f"{kind} at line {s1.srcinfo.line}", lvl, g, t1, ex1, h1, ph1, rel1)
                  for kind, s1, lvl, g, t1, ex1, h1, ph1, rel1 in firsts]
        longer = []
        for label, lvl, g, t1, ex1, h1, ph1, rel1 in chains:
            if lvl != FULL:
                continue
            for kind2, u1, u2, lvl2, L22 in self.edges(h1, g["full"], mask, 1):
                if not self.may_follow(h1, u1) or not self.may_follow(u2, B, shared=False):
                    continue
                g2 = self.grants(lvl2, L22, mask)
                t2, ex2, h2, ph2 = self.edge_text(h1, ph1, kind2, u1, u2, "s")
                label2 = f"{label} then {kind2} at line {u1.srcinfo.line}"
                longer.append((label2, lvl2, g2, f"{t1} and {t2}", ex1 + ex2, h2, ph2))
                if not g2[need] & E2:
                    continue
                body = (f"{t1} and {t2} and {enc.before(h2, ph2, B, 'b')} and "
                        f"{enc.cover(h2, ph2, B, 'b', conv2)}")

                def rel2(rel1=rel1, h1=h1, ph1=ph1, kind2=kind2, u1=u1, u2=u2):
                    return rel1().apply_range(self.edge_rel(h1, ph1, kind2, u1, u2, "s"))
                yield label2, Candidate.of(self.wrap(A, B, rank, self.exists(ex1 + ex2, body)),
                                           self._quick(rel2, h2, ph2, B, conv2, rank))
                unions.append((label2, ex1 + ex2, f"{t1} and {t2}", h2, ph2, rel2))
        # then each pattern's instances together: every thread of B is a thread of some
        # instance of the pattern's holder that is caught and before B (the union of several
        # holders, e.g. one Await per CTA before a collective both CTAs issue)
        if not conv2:
            for label, ex, body, h, ph, rel in unions:
                text = self.union_text(B, ex, body, h, ph)
                if text is not None:
                    yield f"{label}, its instances together", Candidate.of(
                        self.wrap(A, B, rank, text), self._quick(rel, h, ph, B, None, rank))
        # last, longer chains (P3 ...): each edge caught by what the one before granted, a
        # relay through threads that never touch the data (at most MAX_CHAIN edges and
        # MAX_LONG_CHAINS candidates: beyond, the pair stays for the concrete check)
        made = 0
        for depth in range(2, MAX_CHAIN):
            nxt = []
            for label, lvl, g, t, ex, h, ph in longer:
                if lvl != FULL:
                    continue
                for kind3, u1, u2, lvl3, L23 in self.edges(h, g["full"], mask, depth):
                    if not self.may_follow(h, u1):  # no thread of the holder runs it later
                        continue
                    g3 = self.grants(lvl3, L23, mask)
                    t3, ex3, h3, ph3 = self.edge_text(h, ph, kind3, u1, u2, f"s{depth}")
                    label3 = f"{label} then {kind3} at line {u1.srcinfo.line}"
                    if not self.may_follow(h3, B, shared=False):
                        continue  # the chain ends after B: it orders nothing for B
                    if len(nxt) < MAX_LONG_CHAINS * 4:  # the next depth's starts, bounded
                        nxt.append((label3, lvl3, g3, f"{t} and {t3}", ex + ex3, h3, ph3))
                    if not g3[need] & E2:
                        continue
                    made += 1
                    if made > MAX_LONG_CHAINS:
                        return
                    body = (f"{t} and {t3} and {enc.before(h3, ph3, B, 'b')} and "
                            f"{enc.cover(h3, ph3, B, 'b', conv2)}")
                    yield label3, self.wrap(A, B, rank, self.exists(ex + ex3, body))
            longer = nxt


class Candidate(str):
    """An ordered-set text with a cheap way to the same set or a superset of it:
    ``quick()`` composes cached isl relations of its edges (each read once per event pair)
    instead of reading the whole text. Used only to skip a candidate that meets nothing
    left of the conflicts (skipping one never proves more); a candidate that does is read
    from its text as any other (``check._subtract``)."""

    quick = None

    @classmethod
    def of(cls, text: str, quick) -> "Candidate":
        c = cls(text)
        c.quick = quick
        return c


def _fewer_threads(h: Event, B: Event) -> bool:
    """h's instances may each run fewer threads than B's (so only several cover B)."""
    nh = h.mapping.num_threads if h.mapping is not None else None
    nb = B.mapping.num_threads if B.mapping is not None else None
    return nh is None or nb is None or nh < nb


def is_empty(text: str) -> tuple[bool, isl.Set]:
    s = isl.Set(text)
    return s.is_empty(), s


__all__ = ["Builder", "Obligation", "NEED", "is_empty", "QUAL_TLS", "FULL", "TEMPORAL"]
