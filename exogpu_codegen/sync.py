"""Synchronization lowered to the cheapest instruction for its scope and timelines
(reference notes 2.7; the table is in docs/codegen.md).

* ``Fence``: the collective that executes it picks the barrier (nothing for one thread,
  ``__syncwarp()`` for a warp, ``bar.sync id, n`` for a set of whole warps of one CTA (a
  named barrier, id from ``analysis/named_barriers.py``), ``barrier.cta.sync 0`` for a CTA,
  ``barrier.cluster`` arrive+wait for a cluster, ``wgmma.fence`` for ``wgmma_fence_1``); the
  first timeline adds ``cp.async.wait_all`` when it covers ``Sm80_cp_async``; a second
  timeline that reaches the async proxy adds ``fence.proxy.async`` (restricted to shared
  memory when ``kernel_facts.proxy_space`` allows).
* mbarriers (``CudaMbarrier``/``CudaMbarrierPreArrive``): one physical array per CTA in
  shared memory, initialized once per kernel with the number of threads that arrive on one
  element per phase. A ring dimension ``e @ ring_buffer_by(d)`` maps virtual index ``v`` to
  the running index ``j = v - pre_arrive + base`` (``base`` counts the virtual indices of
  earlier lifetimes of the allocation, e.g. earlier tasks, so phases carry across tasks):
  slot ``j % d``, parity ``(j / d) & 1``. An Await with ``j < 0`` is on a pre-arrived index
  and does not wait.
* commit groups: ``cp.async.commit_group``/``wait_group``, ``cp.async.bulk.commit_group``/
  ``wait_group``, ``wgmma.commit_group``/``wait_group``; ``CudaClusterSync``:
  ``barrier.cluster.arrive.release``/``wait.acquire``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from exogpu_verify.analysis.tiling import matches
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import const_value
from exogpu_verify.ir.timelines import (Sm80_cp_async, Sm80_generic,
                                        cuda_generic_and_async_proxy, cuda_in_order,
                                        cuda_temporal, wgmma_async, wgmma_fence_1,
                                        wgmma_fence_2, tma_to_gmem_async)
from exogpu_verify.ir.units import cuda_cluster, cuda_cta_in_cluster, cuda_warp, cuda_warpgroup

from .cexpr import Ctl, eval_ctl
from .errors import not_supported


@dataclass
class BarInfo:
    """A barrier allocation as the generated code sees it."""

    name: str
    path: tuple
    mech: object
    kind: str                 # mbarrier | commit | cluster
    ndist: int
    dist_strides: tuple = ()  # per distributed dim: CTA-rank stride (mbarriers)
    dist_extents: tuple = ()
    phys: tuple = ()          # per non-distributed dim: (extent or depth, is_ring)
    ring_extent: object = None  # the ring dim's logical extent (an Expr)
    depth: int = 1
    pre: int = 0
    offset: int = 0
    count: int = 0
    base: str = ""
    async_arrive: bool = False  # some Arrive's first timeline is not cuda_temporal
    remote_arrive: bool = False  # some Arrive targets other CTAs (release.cluster arrives)

    @property
    def nslots(self) -> int:
        n = 1
        for e, _ in self.phys:
            n *= e
        return n


def make_bar(s: N.BarrierAlloc, path, sharding, block_dim: int, cname: str) -> BarInfo:
    mech = s.mech
    nd = sharding.n_distributed if sharding is not None else 0
    b = BarInfo(s.name, path, mech, mech.kind, nd, base=f"exo_base_{cname}")
    if mech.kind != "mbarrier":
        return b
    strides, exts = [], []
    for d in (sharding.dims if sharding else ()):
        if d.thread_pitch % block_dim:
            raise not_supported(f"mbarrier '{s.name}' distributed below CTA granularity", s)
        strides.append(d.thread_pitch // block_dim)
        exts.append(d.extent)
    b.dist_strides, b.dist_extents = tuple(strides), tuple(exts)
    phys = []
    for d in s.dims[nd:]:
        if d.ring_depth is not None:
            if b.ring_extent is not None:
                raise not_supported(f"mbarrier '{s.name}' with two ring-buffer dimensions", s)
            b.ring_extent, b.depth = d.extent, d.ring_depth
            phys.append((d.ring_depth, True))
        else:
            v = const_value(d.extent)
            if v is None:
                raise not_supported(f"mbarrier '{s.name}' with a non-constant extent that "
                                    "is not a ring buffer (use `e @ ring_buffer_by(d)`)", s)
            phys.append((v, False))
    b.phys = tuple(phys)
    b.pre = mech.pre_arrive
    if b.pre and b.ring_extent is None:
        raise not_supported(f"CudaMbarrierPreArrive '{s.name}' without a ring dimension", s)
    return b


def enclosing_ifs(body, path, loops: list | None = None) -> list[tuple[object, bool]]:
    """The ``If`` conditions around the statement at ``path`` (True: in the then-branch);
    the enclosing ``For`` loops are appended to ``loops`` when it is given."""
    out, stmts = [], body
    for k, (fld, i) in enumerate(path):
        s = stmts[i]
        if k + 1 < len(path):
            nxt = path[k + 1][0]
            if isinstance(s, N.If):
                out.append((s.cond, nxt == "body"))
                stmts = s.body if nxt == "body" else s.orelse
            else:
                if loops is not None and isinstance(s, N.For):
                    loops.append(s)
                stmts = s.body
    return out


def _names(e, out):
    if isinstance(e, N.Read):
        out.add(e.name)
    elif isinstance(e, N.BinOp):
        _names(e.lhs, out)
        _names(e.rhs, out)
    elif isinstance(e, N.UnOp):
        _names(e.arg, out)
    elif isinstance(e, N.StrideExpr):
        out.add(e.name)


def arrive_threads(info, ref: N.BarrierRef, bar: BarInfo, block_dim: int,
                   conds=(), loops=(), ctas: list | None = None) -> int:
    """Threads of one CTA that execute an Arrive on the same element (per phase); ``conds``
    are the enclosing ``If`` conditions: those over thread iterators only filter threads, and
    so do those that also mention iterators of enclosing sequential loops with constant bounds
    (``loops``; e.g. ``if wg == j % 2:`` in a loop over tiles ``j``): the count is then taken
    for every value of those iterators and must be the same for all of them."""
    m = info.mapping
    tnames = {t.name for t in m.thread_iters}
    seqs = {}
    for lp in loops:
        lo, hi = const_value(lp.lo), const_value(lp.hi)
        if isinstance(lp.mode, N.Seq) and lo is not None and hi is not None and hi > lo:
            seqs[lp.iter] = range(lo, hi)
    usable, used_seq = [], set()
    for c, want in conds:
        ns = set()
        _names(c, ns)
        if not ns & tnames:
            continue  # filters whole instances, not threads
        for v in ns - tnames - set(seqs):
            per = _mod_period(c, v)
            if per is None:
                raise not_supported(f"an Arrive under a condition on thread iterator(s) and "
                                    f"'{v}': the arrival count per phase cannot be computed",
                                    info.stmt, hint="condition on thread iterators, constants "
                                    "and iterators of constant-bound loops (or `i % c`)")
            seqs[v] = range(per)  # v only matters modulo `per`: every residue is tried
        usable.append((c, want))
        used_seq |= ns - tnames
    names = sorted(used_seq)
    counts = set()
    for svals in product(*(seqs[n] for n in names)):
        counts.add(_arrive_count(info, ref, bar, block_dim, usable, dict(zip(names, svals)),
                                 ctas))
    if len(counts) > 1:
        raise not_supported(f"an Arrive whose number of threads per phase depends on the loop "
                            f"iterator(s) {', '.join(names)} ({sorted(counts)}); an mbarrier "
                            "has one arrival count", info.stmt)
    return counts.pop()


def _mod_period(e, v: str) -> int | None:
    """``p`` such that ``e`` only depends on ``v`` modulo ``p`` (every occurrence of ``v`` is
    inside ``x % c`` with ``c | p``), else None."""
    import math

    found = [1]

    def go(x, under):
        if isinstance(x, N.Read):
            if not x.idx and x.name == v and under is None:
                return False
            return all(go(i, under) for i in x.idx)
        if isinstance(x, N.BinOp):
            if x.op == "%":
                c = const_value(x.rhs)
                if c is not None and c > 0:
                    found[0] = math.lcm(found[0], c)
                    return go(x.lhs, c)
            if x.op == "/" and under is not None:
                return go(x.lhs, None) and go(x.rhs, None)  # (v / 2) % 2 is not periodic in 2
            return go(x.lhs, under) and go(x.rhs, under)
        if isinstance(x, N.UnOp):
            return go(x.arg, under)
        return True

    return found[0] if go(e, None) else None


def _arrive_count(info, ref, bar, block_dim, usable, outer: dict, ctas=None) -> int:
    """Threads per CTA and element of one phase; ``ctas``, when given, gets the set of CTAs
    with an arriving thread."""
    m = info.mapping
    iters = m.thread_iters
    total = 1
    for t in iters:
        total *= t.count
    if total > 1 << 16:
        raise not_supported("an Arrive under more than 65536 thread-iterator combinations",
                            info.stmt)
    groups: dict = {}
    for vals in product(*(range(t.count) for t in iters)):
        env = {**outer, **{t.name: v for t, v in zip(iters, vals)}}
        if any(bool(eval_ctl(c, env)) != want for c, want in usable):
            continue
        key_idx = []
        for a in ref.idx[bar.ndist:]:
            if isinstance(a, N.Point):
                try:
                    key_idx.append(eval_ctl(a.pt, _Zero(env)))
                except Exception:  # noqa: BLE001 - unknown names: not thread-dependent
                    key_idx.append(None)
        for tid in m.threads(env):
            k = (tid // block_dim, tuple(key_idx))
            groups.setdefault(k, set()).add(tid)
    if ctas is not None:
        ctas.append({c for c, _ in groups})
    return max((len(v) for v in groups.values()), default=0)


class _Zero(dict):
    """Environment that reads unknown names (task and seq iterators, sizes) as 0."""

    def __missing__(self, key):
        return 0


def multicast_factor(ref: N.BarrierRef, bar: BarInfo) -> int:
    n = 1
    for a, ext in zip(ref.idx[:bar.ndist], bar.dist_extents):
        if isinstance(a, N.Interval):
            n *= ext
    return n


# ---------------------------------------------------------------- addresses

def slot_index(bar: BarInfo, ref: N.BarrierRef, ctl: Ctl, node) -> tuple[str, str | None]:
    """(C++ slot index within the CTA's array, C++ running index ``j`` of the ring or None)."""
    terms, j = [], None
    stride = 1
    for a, (ext, ring) in reversed(list(zip(ref.idx[bar.ndist:], bar.phys))):
        if not isinstance(a, N.Point):
            raise not_supported(f"an interval index on non-distributed dimension of "
                                f"mbarrier '{bar.name}'", node)
        if ring:
            v = ctl(a.pt)
            j = f"{v} + {bar.base}" if not bar.pre else f"{v} - {bar.pre} + {bar.base}"
            idx = "(unsigned(exo_j) % {}u)".format(ext) if ext > 1 else "0"
        else:
            idx = ctl(a.pt)
        if idx != "0":
            terms.append(idx if stride == 1 else f"{idx} * {stride}")
        stride *= ext
    return (" + ".join(reversed(terms)) if terms else "0"), j


def slot_addr(bar: BarInfo, slot: str) -> str:
    off = f"exo_smem_sh + {bar.offset}u"
    return off if slot == "0" else f"{off} + 8u * ({slot})"


def parity(bar: BarInfo, j: str | None) -> str:
    if j is None:  # no ring: one use per lifetime
        return f"({bar.base} & 1)"
    return "((unsigned(exo_j) / {}u) & 1u)".format(bar.depth) if bar.depth > 1 else \
        "(unsigned(exo_j) & 1u)"


# ---------------------------------------------------------------- statements

def scope_of(coll, cluster_dim: int) -> str:
    if coll.size == 1:
        return "thread"
    if matches(coll, cuda_warp):
        return "warp"
    if matches(coll, cuda_warpgroup) and coll.size < coll.block_dim:
        return "warpgroup"
    if cluster_dim > 1 and matches(coll, cuda_cluster):
        return "cluster"
    if matches(coll, cuda_cta_in_cluster) or matches(coll, cuda_cluster):
        return "cta"
    return "other"


def proxy_fence(space: str) -> str:
    """``fence.proxy.async`` restricted to ``space`` (kernel_facts.proxy_space)."""
    return f'asm volatile("fence.proxy.async{space};\\n" ::: "memory");'


def named_barrier(bar_id: str, nthreads: int) -> str:
    """``bar.sync id, n`` (PTX ISA barrier: ``bar.sync`` is ``barrier.sync.aligned``; ``n``
    counts the threads of whole warps taking part)."""
    if bar_id.isdigit():
        return f'asm volatile("bar.sync {bar_id}, {nthreads};\\n" ::: "memory");'
    return (f'asm volatile("bar.sync %0, {nthreads};\\n" :: "r"(uint32_t({bar_id})) : '
            '"memory");')


def lower_fence(s: N.Fence, coll, cluster_dim: int, named: tuple[str, int] | None = None,
                space: str = "") -> list[str]:
    """``named``: (C++ id expression, thread count) of a named-barrier Fence
    (``analysis/named_barriers.py``); ``space``: the proxy fences' state space."""
    L1, L2 = s.L1, s.L2
    if L1 == wgmma_fence_1:
        if L2 != wgmma_fence_2:
            raise not_supported(f"Fence({L1}, {L2}): wgmma_fence_1 pairs with wgmma_fence_2",
                                s)
        return ['asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");']
    out = []
    if L1 <= cuda_in_order:
        pass
    elif L1 <= Sm80_generic:
        out.append('asm volatile("cp.async.wait_all;\\n" ::: "memory");')
    else:
        raise not_supported(f"Fence with first timeline {L1} (use cuda_in_order or "
                            "Sm80_generic; async work completes through barriers)", s)
    proxy = False
    if not L1 <= cuda_temporal and not L2 <= cuda_in_order:
        if L2 <= Sm80_generic:
            raise not_supported(f"Fence with second timeline {L2} (use cuda_in_order)", s)
        if not L2 <= cuda_generic_and_async_proxy:
            raise not_supported(f"Fence with second timeline {L2}", s)
        proxy = True
    sc = "named" if named is not None else scope_of(coll, cluster_dim)
    # writer-side proxy fence (as CUTLASS does before a barrier that hands SMEM to TMA/wgmma)
    if proxy and sc != "thread":
        out.append(proxy_fence(space))
    if sc == "thread":
        pass
    elif sc == "named":
        out.append(named_barrier(*named))
    elif sc == "warp":
        out.append("__syncwarp();")
    elif sc == "cta":
        out.append('asm volatile("barrier.cta.sync 0;\\n" ::: "memory");')
    elif sc == "cluster":
        out.append('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");')
        out.append('asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");')
    else:
        raise not_supported(f"Fence executed by {coll.shape()} (a thread, warp, CTA or "
                            "cluster can fence)", s)
    if proxy:  # reader side, after the barrier (reference notes 2.7)
        out.append(proxy_fence(space))
    return out


def lower_commit_arrive(s: N.Arrive, bar: BarInfo) -> list[str]:
    name = bar.mech.name
    L1 = s.L1
    if name == "Sm80_CommitGroup":
        if not L1 <= Sm80_cp_async:
            raise not_supported(f"Arrive({L1}) on Sm80_CommitGroup (use Sm80_cp_async)", s)
        return ['asm volatile("cp.async.commit_group;\\n" ::: "memory");']
    if name == "Sm90_TmaCommitGroup":
        if not L1 <= tma_to_gmem_async:
            raise not_supported(f"Arrive({L1}) on Sm90_TmaCommitGroup", s)
        return ['asm volatile("cp.async.bulk.commit_group;\\n" ::: "memory");']
    if name == "Sm90_WgmmaCommitGroup":
        if not L1 <= wgmma_async:
            raise not_supported(f"Arrive({L1}) on Sm90_WgmmaCommitGroup", s)
        return ['asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");']
    raise not_supported(f"commit group {name}", s)


def lower_commit_await(s: N.Await, bar: BarInfo, bulk_read: bool = False) -> list[str]:
    """``bulk_read``: TMA commit groups wait with ``.read`` (kernel_facts.bulk_wait_read)."""
    name = bar.mech.name
    n = int(s.N)
    if name == "Sm80_CommitGroup":
        if not s.L2 <= cuda_in_order:
            raise not_supported(f"Await(..., {s.L2}) on Sm80_CommitGroup (use cuda_in_order)",
                                s)
        return [f'asm volatile("cp.async.wait_group {n};\\n" ::: "memory");']
    if not s.L2 <= cuda_generic_and_async_proxy:
        raise not_supported(f"Await(..., {s.L2}) on {name}", s)
    if name == "Sm90_TmaCommitGroup":
        # PTX commits a bulk copy to the group of the lane that issued it, and each lane's
        # wait_group waits for its own groups only: the warp's other lanes would go on at
        # once. The warp barrier holds them until the issuing lane's wait returned, which is
        # what the checkers assume of a warp's Await (docs/semantics.md, "Commit groups").
        rd = ".read" if bulk_read else ""
        return [f'asm volatile("cp.async.bulk.wait_group{rd} {n};\\n" ::: "memory");',
                "__syncwarp();"]
    if name == "Sm90_WgmmaCommitGroup":
        return [f'asm volatile("wgmma.wait_group.sync.aligned {n};\\n" ::: "memory");']
    raise not_supported(f"commit group {name}", s)


def lower_cluster_arrive(s: N.Arrive) -> list[str]:
    out = []
    if s.L1 <= cuda_in_order:
        pass
    elif s.L1 <= Sm80_generic:
        out.append('asm volatile("cp.async.wait_all;\\n" ::: "memory");')
    else:
        raise not_supported(f"Arrive({s.L1}) on CudaClusterSync", s)
    out.append('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");')
    return out


def lower_cluster_await(s: N.Await, proxy_needed: bool, space: str = "") -> list[str]:
    out = ['asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");']
    if not s.L2 <= cuda_in_order:
        if not s.L2 <= cuda_generic_and_async_proxy:
            raise not_supported(f"Await(..., {s.L2}) on CudaClusterSync", s)
        if proxy_needed:
            out.append(proxy_fence(space))
    return out


def check_mbar_arrive(s: N.Arrive) -> str:
    """'cp' for a cp.async arrive, 'plain' for an ordinary one."""
    if s.L1 <= Sm80_cp_async:
        return "cp"
    if s.L1 <= cuda_in_order:
        return "plain"
    raise not_supported(f"mbarrier Arrive({s.L1}) (use cuda_in_order or cuda_temporal; TMA "
                        "loads complete on a trailing `>> z[...]` barrier)", s)


def mbar_await_proxy(s: N.Await, bar: BarInfo) -> bool:
    if s.L2 <= cuda_in_order:
        return False
    if not s.L2 <= cuda_generic_and_async_proxy:
        raise not_supported(f"mbarrier Await(..., {s.L2}) (use cuda_in_order or "
                            "cuda_generic_and_async_proxy)", s)
    return bar.async_arrive
