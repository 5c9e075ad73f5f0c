"""Which freed shared memory the async proxy may write next (``docs/semantics.md``, "Frees").

Shared memory is laid out statically (``exogpu_codegen/smem.py``): an allocation has the same
address in every task of the persistent loop, and allocations that are live at the same time
never overlap; allocations whose lifetimes are disjoint (siblings in different blocks, an If's
two branches) may share bytes. So after the free of an SMEM allocation ``v`` (the end of its
block) the async proxy may write its bytes exactly when some statement of the kernel writes
through the async proxy (TMA load, multicast) into ``v`` itself (the next task's instance of
``v``) or into an allocation whose lifetime is disjoint from ``v``'s. For those allocations a
generic-proxy access must reach the async proxy before the free, i.e. be covered by a proxy
fence of its threads (PTX ISA, "Async proxy").

``smem_reused_by_async(am)`` computes that set of allocation names (AMIR names are unique)
for every kernel of an AMIR procedure; both checkers read it.
"""

from __future__ import annotations

from . import nodes as A

_CACHE: dict = {}


def smem_reused_by_async(am: A.AmProc) -> frozenset[str]:
    """Names of the SMEM allocations whose freed bytes an async-proxy write may reuse."""
    hit = _CACHE.get(id(am))
    if hit is not None and hit[0] is am:
        return hit[1]
    out: set[str] = set()
    for k in _kernels(am.body):
        allocs: dict[str, tuple] = {}  # name -> chain of (block id, index)
        written: set[str] = set()
        mems: dict = {}
        _walk(k.body, (), allocs, mems, written)
        smem = [n for n, m in mems.items() if getattr(m, "is_shared", False)]
        for v in smem:
            for w in written:
                if w == v or not _coexist(allocs[v], allocs[w]):
                    out.add(v)
                    break
    res = frozenset(out)
    _CACHE[id(am)] = (am, res)
    return res


def _kernels(stmts):
    for s in stmts:
        if type(s) is A.AmKernel:
            yield s
        else:
            for sub in (getattr(s, "body", None), getattr(s, "orelse", None)):
                if sub:
                    yield from _kernels(sub)


def _walk(stmts: tuple, chain: tuple, allocs, mems, written) -> None:
    for i, s in enumerate(stmts):
        here = chain + ((id(stmts), i),)
        t = type(s)
        if t is A.AmAlloc:
            allocs[s.name] = here
            mems[s.name] = s.mem
        elif t is A.AmAccess and s.mode != "read":
            mem = mems.get(s.name)
            if getattr(mem, "is_shared", False):
                q = mem.qual_tls(s.instr_tl)
                if q and q[0].proxy == "async":
                    written.add(s.name)
        for sub in (getattr(s, "body", None), getattr(s, "orelse", None)):
            if sub:
                _walk(sub, here, allocs, mems, written)


def _coexist(cv: tuple, cw: tuple) -> bool:
    """Are two allocations (given by their chains of (block, index)) live at the same time?
    One of them must be allocated directly in the innermost block they share, before the
    statement that contains (or is) the other: it then lives until that block ends."""
    d = 0
    while d < len(cv) and d < len(cw) and cv[d] == cw[d]:
        d += 1
    if d == len(cv) or d == len(cw):
        return True  # the same allocation
    (bv, iv), (bw, iw) = cv[d], cw[d]
    if bv != bw:
        return False  # the two branches of an If
    if d == len(cv) - 1 and iv < iw:
        return True
    if d == len(cw) - 1 and iw < iv:
        return True
    return False
