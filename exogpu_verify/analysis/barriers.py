"""Barrier usage (kind ``barrier-usage``): each barrier is used the way its mechanism allows.

``check_barrier_usage(proc)`` establishes, per barrier allocation (LANGUAGE.md
"Synchronization"; reference notes 1.7, 1.8, 2.7):

* it has at least one ``Arrive`` and at least one ``Await``;
* the timelines are accepted by the mechanism, by ``SyncTL`` inclusion
  (``L`` accepted as ``X`` iff ``X.implements(L)``): mbarriers ``Arrive`` ⊆ ``cuda_in_order``
  or ⊆ ``Sm80_cp_async`` (single CTA, no multicast), ``Await`` ⊆ ``cuda_in_order`` or ⊆
  ``cuda_generic_and_async_proxy``; commit groups ``Arrive`` ⊆ ``Sm80_cp_async`` /
  ``tma_to_gmem_async`` / ``wgmma_async``; ``CudaClusterSync`` ``Arrive`` ⊆ ``Sm80_generic``;
  their ``Await``s ⊆ ``cuda_in_order`` or ⊆ ``cuda_generic_and_async_proxy``;
* ``Await`` count ``N == 0`` for mbarriers and cluster syncs;
* ``CudaMbarrierPreArrive`` barriers have a non-distributed ``ring_buffer_by`` dimension that
  ``PreArrive(k)`` fits; an mbarrier without one is single-phase per element;
* all ``Arrive``s of a barrier share one timeline, one multicast pattern and one thread
  count; all ``Await``s share one timeline; only mbarriers multicast;
* commit groups and cluster syncs are solitary: no two live ones of the same mechanism, and
  no cluster-wide ``Fence`` while a ``CudaClusterSync`` is live;
* a trailing ``>> z`` only on instructions that declare a barrier mechanism, of that kind;
* ``Fence(L1, L2)`` timelines are ones a fence can implement.

It assumes ``analyze_collectives`` ran (thread counts come from its mappings) and, when
given, uses the distributed-memory result to know which barrier dimensions are distributed.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.memories import BarrierMechanism
from ..ir.timelines import (Sm80_cp_async, Sm80_generic, cuda_generic_and_async_proxy,
                            cuda_in_order, cuda_temporal, tma_to_gmem_async, tma_to_smem_async,
                            wgmma_async, wgmma_fence_1, wgmma_fence_2)
from ..ir.units import cuda_cluster
from .collective import analyze_collectives
from .distributed import DistributedInfo
from .mapping import CollectiveInfo
from .tiling import matches
from .walk import resolve_decl

_COMMIT_ARRIVE = {"Sm80_CommitGroup": Sm80_cp_async, "Sm90_TmaCommitGroup": tma_to_gmem_async,
                  "Sm90_WgmmaCommitGroup": wgmma_async}
_AWAIT_OK = (cuda_in_order, cuda_generic_and_async_proxy)


def _ok(L, allowed) -> bool:
    return any(a.implements(L) for a in allowed)


def check_barrier_usage(p: N.Procedure, cinfo: CollectiveInfo | None = None,
                        dinfo: DistributedInfo | None = None) -> tuple[Diagnostic, ...]:
    """Check the barrier rules of ``p``; one diagnostic per violation."""
    cinfo = cinfo or analyze_collectives(p)
    diags: list[Diagnostic] = []

    def err(msg, node, hint=None):
        diags.append(Diagnostic.at("barrier-usage", msg, node.srcinfo, hint))

    allocs = [s for s in cinfo.stmts if isinstance(s.stmt, N.BarrierAlloc)]
    arrives = {a.path: [] for a in allocs}
    awaits = {a.path: [] for a in allocs}
    for s in cinfo.stmts:
        st = s.stmt
        if isinstance(st, N.Fence):
            _fence(st, s, allocs, err)
        elif isinstance(st, N.Call):
            _trailing(st, s, allocs, err)
        elif isinstance(st, (N.Arrive, N.Await)):
            ref = st.targets[0] if isinstance(st, N.Arrive) else st.target
            a = resolve_decl(ref.name, s.path, allocs)
            if a is not None:
                (arrives if isinstance(st, N.Arrive) else awaits)[a.path].append(s)
        elif isinstance(st, N.BarrierAlloc) and st.mech.kind in ("commit", "cluster"):
            for other in allocs:
                if other.path != s.path and other.stmt.mech == st.mech and \
                        resolve_decl(other.stmt.name, s.path, [other]) is not None:
                    err(f"barrier '{st.name}' @ {st.mech} cannot be allocated due to another "
                        f"such live barrier '{other.stmt.name}' (line {other.line}) in scope; "
                        f"{st.mech} barriers are solitary", st)
                    break
    for a in allocs:
        _barrier(a, arrives[a.path], awaits[a.path], dinfo, err)
    return tuple(diags)


def _barrier(a, arrs, awts, dinfo, err) -> None:
    z: N.BarrierAlloc = a.stmt
    m: BarrierMechanism = z.mech
    if not arrs:
        err(f"barrier '{z.name}' @ {m} is never arrived on: missing Arrive(...) >> {z.name}", z)
    if not awts:
        err(f"barrier '{z.name}' @ {m} is never awaited: missing Await({z.name}, ...)", z)
    if m.kind == "mbarrier":
        nd = 0
        if dinfo is not None and dinfo.of(z.name) is not None:
            nd = dinfo.of(z.name).n_distributed
        rings = [i for i, d in enumerate(z.dims) if d.ring_depth is not None and i >= nd]
        # without a ring dimension every element is single-phase (LANGUAGE.md: one Arrive,
        # then Awaits); both checkers refute a second Arrive on an element from one CTA
        if not rings and m.pre_arrive:
            err(f"{m} '{z.name}' needs a managed ring buffer dimension (@ ring_buffer_by): "
                "pre-arrived phases are virtual ring indices", z, f"declare it e.g. "
                f"`{z.name}: barrier[K @ ring_buffer_by(4)] @ {m}`, or use CudaMbarrier for "
                "a single phase")
        elif m.pre_arrive and any(z.dims[i].ring_depth < m.pre_arrive for i in rings):
            err(f"{m}: {m.pre_arrive} pre-arrived slots exceed the ring depth of '{z.name}'", z)
    first_arr = None
    for s in arrs:
        st: N.Arrive = s.stmt
        L1 = st.L1
        multicast = len(st.targets) > 1 or any(isinstance(i, N.Interval)
                                               for r in st.targets for i in r.idx)
        if m.kind == "mbarrier":
            if L1 == tma_to_smem_async:
                err(f"mbarrier Arrive sync-tl {L1} not supported", st,
                    "use cuda_temporal, and add trailing barriers to TMA instrs")
            elif not _ok(L1, (cuda_in_order, Sm80_cp_async)):
                err(f"mbarrier Arrive sync-tl {L1} not supported (Arrive takes cuda_in_order, "
                    "cuda_temporal or Sm80_cp_async)", st)
            elif not cuda_in_order.implements(L1) and multicast:
                err(f"Sm80_cp_async mbarrier must be within 1 CTA: Arrive({L1}) cannot "
                    "multicast", st)
        else:
            want = _COMMIT_ARRIVE.get(m.name, Sm80_generic)
            if not want.implements(L1):
                err(f"{z.name} @ {m} does not support Arrive({L1}) (wrong first sync-tl; "
                    f"expected {want})", st)
            if multicast:
                err(f"{z.name} @ {m} cannot multicast; only mbarriers can", st)
        pattern = tuple(tuple(isinstance(i, N.Interval) for i in r.idx) for r in st.targets)
        count = s.mapping.num_threads if s.mapping is not None else None
        if first_arr is None:
            first_arr = (s, L1, pattern, count)
            continue
        f, fL1, fpat, fcount = first_arr
        if L1 != fL1:
            err(f"incompatible sync-tl Arrive({L1}) on '{z.name}' with previous "
                f"Arrive({fL1}) at line {f.line}", st)
        elif sorted(pattern) != sorted(fpat):
            err(f"incompatible multicasts on '{z.name}': this Arrive's targets differ in "
                f"shape from the Arrive at line {f.line}", st)
        elif count is not None and fcount is not None and count != fcount:
            err(f"inconsistent thread count for Arrive on '{z.name}': {count} here, "
                f"previously {fcount} (line {f.line})", st)
    first_awt = None
    for s in awts:
        st: N.Await = s.stmt
        if not _ok(st.L2, _AWAIT_OK):
            hint = "consider cuda_generic_and_async_proxy" if st.L2 == wgmma_async else None
            err(f"{m} Await sync-tl {st.L2} not supported (Await takes cuda_in_order or "
                "cuda_generic_and_async_proxy)", st, hint)
        if m.await_n_zero and st.N != 0:
            err(f"Await on '{z.name}' @ {m} must have N = 0 (got {st.N}); only commit groups "
                "wait for all but the newest N", st)
        if first_awt is None:
            first_awt = s
        elif st.L2 != first_awt.stmt.L2:
            err(f"incompatible sync-tl Await({st.L2}) on '{z.name}' with previous "
                f"Await({first_awt.stmt.L2}) at line {first_awt.line}", st)


def _fence(st: N.Fence, s, allocs, err) -> None:
    L1, L2 = st.L1, st.L2
    if L1 == wgmma_fence_1 or L2 == wgmma_fence_2:
        if L1 != wgmma_fence_1 or L2 != wgmma_fence_2:
            err(f"Fence({L1}, {L2}): wgmma fences are written Fence(wgmma_fence_1, "
                "wgmma_fence_2)", st)
        return
    if not _ok(L1, (cuda_in_order, Sm80_generic)):
        err(f"Fence first sync-tl {L1} not supported (we allow Sm80_generic)", st,
            "wait for async instructions with a barrier (Arrive/Await) instead")
    elif not cuda_temporal.implements(L1) and not _ok(L2, _AWAIT_OK):
        if Sm80_generic.implements(L2):
            err(f"Fence second sync-tl {L2}: Sm80_cp_async not supported as second "
                "sync-tl; use cuda_in_order", st)
        else:
            err(f"Fence second sync-tl {L2} not supported (use cuda_in_order or "
                "cuda_generic_and_async_proxy)", st)
    m = s.mapping
    if m is not None and m.cluster_dim > 1 and matches(m.collective, cuda_cluster):
        live = [a for a in allocs if a.stmt.mech.kind == "cluster"
                and resolve_decl(a.stmt.name, s.path, [a]) is not None]
        if live:
            err(f"cluster-wide Fence while CudaClusterSync '{live[0].stmt.name}' (line "
                f"{live[0].line}) is live; both use the one cluster barrier", st)


def _trailing(st: N.Call, s, allocs, err) -> None:
    mech = st.callee.instr.barrier if st.callee.instr is not None else None
    name = st.callee.name
    if st.barriers and mech is None:
        err(f"{name}() does not take a trailing barrier expression", st)
    elif mech is not None and not st.barriers:
        err(f"{name}() requires a trailing barrier expression in {mech.name}: "
            f"`{name}(...) >> z[i]`", st)
    elif mech is not None:
        a = resolve_decl(st.barriers[0].name, s.path, allocs)
        if a is not None:
            actual = a.stmt.mech
            if actual.kind != mech.kind or (mech.kind != "mbarrier" and actual != mech):
                err(f"{name}() completes on {mech.name}, but '{a.stmt.name}' is {actual}", st)
