"""Distributed memory analysis (paper 4.1; reference notes 4.2): deduce every shard layout.

An allocation inside a kernel is made by the collective at the allocation point, and one
shard of it belongs to one instance of its memory's native unit (a thread for ``CudaRmem``,
a CTA for shared memory and mbarriers, a warpgroup for a wgmma commit group...). Its leading
dimensions are *distributed*: at every use, the ``cuda_threads`` iterators introduced after
the allocation that pick different native-unit instances must appear, as plain variable
reads, as the leading indices, with tile counts equal to the extents; codegen strips those
dimensions. ``analyze_distributed_memory`` establishes, for each CUDA allocation:

1. the allocating collective holds whole native units ("Missing threads");
2. each use runs within one native unit ("Missing subdivision");
3. the leading indices are exactly the distributing iterators (or, for an instruction
   parameter declared distributed, full ``0:extent`` windows matched with the collective
   the instruction splits into);
4. all uses agree on the number of distributed dimensions, their thread pitches, and which
   threads own which shard (so a value is never read from another thread's shard).

It assumes ``analyze_collectives`` succeeded (uses without a thread mapping are skipped).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.units import CollUnit
from .collective import analyze_collectives
from .mapping import CollectiveInfo, StmtInfo, ThreadMapping
from .derive import ThreadIter, derive_partition
from .tiling import TilingError, covers_whole, instance_of, within_one
from .walk import Path, stmt_accesses, visible_from


@dataclass(frozen=True, slots=True)
class ShardDim:
    """One distributed (leading) dimension: shards along it are ``thread_pitch`` threads
    apart; ``iterators`` are the iterators that index it, one per use."""

    extent: int
    thread_pitch: int
    unit: CollUnit
    iterators: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Sharding:
    """The deduced layout of one CUDA allocation (data or barrier)."""

    name: str
    path: Path
    memory: str
    native_unit: CollUnit
    dims: tuple[ShardDim, ...]
    is_barrier: bool

    @property
    def n_distributed(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class DistributedInfo:
    shardings: tuple[Sharding, ...]
    diagnostics: tuple[Diagnostic, ...] = ()

    def of(self, name: str) -> Sharding | None:
        for s in self.shardings:
            if s.name == name:
                return s
        return None


@dataclass(frozen=True)
class _Use:
    info: StmtInfo
    idx: tuple  # ("pt", expr) | ("iv", lo, hi)
    node: object
    syn: tuple[tuple[int, ThreadIter], ...] = ()  # synthetic iterators: (position, iter)
    coll: object = None  # collective at the use (after synthetic tilings)


def _norm(i) -> tuple:
    if isinstance(i, N.Interval):
        return ("iv", i.lo, i.hi)
    if isinstance(i, N.Point):
        return ("pt", i.pt)
    return ("pt", i)


def _add(a, b):
    if const_value(a) == 0:
        return b
    if const_value(b) == 0:
        return a
    return N.BinOp("+", a, b, a.type)


def _compose(win: tuple, idx: tuple) -> tuple:
    """Indices of the base tensor for ``idx`` applied to a window with indices ``win``."""
    out, k = [], 0
    for w in win:
        if w[0] == "pt":
            out.append(w)
            continue
        u = idx[k] if k < len(idx) else ("iv", N.Const(0, None), None)
        k += 1
        if u[0] == "pt":
            out.append(("pt", _add(w[1], u[1])))
        else:
            out.append(("iv", _add(w[1], u[1]), _add(w[1], u[2]) if u[2] is not None else w[2]))
    return tuple(out)


def _home(refs) -> tuple | None:
    """The home index of a (possibly multicast) barrier target list; None if inconsistent."""
    home = []
    for d in range(len(refs[0].idx)):
        pts = {r.idx[d].pt for r in refs if isinstance(r.idx[d], N.Point)}
        if len(pts) > 1:
            return None
        home.append(("pt", pts.pop()) if pts else _norm(refs[0].idx[d]))
    return tuple(home)


def analyze_distributed_memory(p: N.Procedure, cinfo: CollectiveInfo | None = None
                               ) -> DistributedInfo:
    """Deduce the sharding of every CUDA allocation of ``p`` and check its uses."""
    cinfo = cinfo or analyze_collectives(p)
    diags: list[Diagnostic] = []
    allocs = [s for s in cinfo.stmts if s.mapping is not None and (
        (isinstance(s.stmt, N.Alloc) and s.stmt.mem.native_unit is not None)
        or (isinstance(s.stmt, N.BarrierAlloc) and s.stmt.mech.native_unit is not None))]
    windows = [s for s in cinfo.stmts if isinstance(s.stmt, N.WindowStmt)]
    uses: dict[Path, list[_Use]] = {a.path: [] for a in allocs}

    def resolve(name: str, path: Path, idx: tuple):
        """(alloc path, base idx) for a name used at ``path``, through window aliases."""
        best = None
        for w in windows:
            if w.stmt.name == name and visible_from(w.path, path):
                if best is None or len(w.path) > len(best[0]):
                    best = (w.path, ("win", w))
        for a in allocs:
            if a.stmt.name == name and visible_from(a.path, path):
                if best is None or len(a.path) > len(best[0]):
                    best = (a.path, ("alloc", a))
        if best is None:
            return None
        kind, s = best[1]
        if kind == "alloc":
            return s.path, idx
        w = s.stmt.rhs
        return resolve(w.name, s.path, _compose(tuple(_norm(i) for i in w.idx), idx))

    for s in cinfo.stmts:
        if s.mapping is None:
            continue
        st = s.stmt
        found = []
        if isinstance(st, N.Arrive):
            found.append((st.targets[0].name, _home(st.targets), st, None))
        elif isinstance(st, N.Await):
            found.append((st.target.name, tuple(_norm(i) for i in st.target.idx), st, None))
        elif isinstance(st, N.Call) and st.barriers:
            found.append((st.barriers[0].name, _home(st.barriers), st, "trailing"))
        if not isinstance(st, N.WindowStmt):
            for acc in stmt_accesses(st):
                found.append((acc.name, tuple(_norm(i) for i in acc.idx), acc.node, acc.param))
        for name, idx, node, prm in found:
            if idx is None:
                diags.append(Diagnostic.at("distributed-memory", f"the targets of this "
                                           f"statement give different points for the same "
                                           f"dimension of barrier '{name}'", st.srcinfo))
                continue
            r = resolve(name, s.path, idx)
            if r is None or r[0] not in uses:
                continue
            a = next(x for x in allocs if x.path == r[0])
            bunit = a.stmt.mech.native_unit if prm == "trailing" else None
            prm = None if prm == "trailing" else prm
            uses[r[0]].append(_make_use(s, r[1], node, st, prm, diags, bunit))
    out = []
    for a in allocs:
        sh = _deduce(a, [u for u in uses[a.path] if u is not None], diags)
        if sh is not None:
            out.append(sh)
    return DistributedInfo(tuple(out), tuple(diags))


def _make_use(s: StmtInfo, idx: tuple, node, st, prm, diags, unit=None) -> _Use | None:
    """A use; for an instruction parameter declared distributed (or a trailing barrier
    target, distributed per its native ``unit`` on its ``:`` dimensions), the collective the
    instruction splits into is derived as synthetic iterators, one per sharded dimension."""
    coll = s.mapping.collective
    ivs = [k for k, i in enumerate(idx) if i[0] == "iv"]
    if prm is not None and st.callee.instr is not None:
        units = st.callee.instr.distributed_units(prm.name)
        label = f"distributed parameter '{prm.name}' of {st.callee.name}()"
        base = prm.name
    elif unit is not None and not within_one(coll, unit):
        units = (unit,) * len(ivs)
        label = f"trailing barrier of {st.callee.name}()"
        base = f"{st.callee.name}.barrier"
    else:
        units = ()
    syn = []
    for j, u in enumerate(units):
        if j >= len(ivs):
            break
        pos = ivs[j]
        lo, hi = const_value(idx[pos][1]), const_value(idx[pos][2])
        if lo is None or hi is None:
            diags.append(Diagnostic.at("distributed-memory", f"{label} needs a constant "
                                       f"window on idx[{pos}]", st.srcinfo))
            return None
        if within_one(coll, u) and hi - lo == 1:
            continue
        try:
            coll, ti = derive_partition(coll, f"{base}.{j}", hi - lo, u)
        except TilingError as e:
            diags.append(Diagnostic.at("distributed-memory", f"{label}: {e.message}",
                                       st.srcinfo))
            return None
        syn.append((pos, ti))
    return _Use(s, idx, node, tuple(syn), coll)


def _post_iters(a_map: ThreadMapping, use: _Use) -> list[ThreadIter]:
    pre = {t.name for t in a_map.thread_iters}
    return [t for t in use.info.mapping.thread_iters if t.name not in pre] + [t for _, t in use.syn]


def _owners(coll, env: dict, unit: CollUnit) -> frozenset:
    return frozenset(instance_of(t, unit, coll.block_dim, coll.cluster_dim)
                     for t in coll.threads(env))


def _deduce(a: StmtInfo, uses: list[_Use], diags: list[Diagnostic]) -> Sharding | None:
    st = a.stmt
    is_bar = isinstance(st, N.BarrierAlloc)
    unit = st.mech.native_unit if is_bar else st.mem.native_unit
    mem = str(st.mech if is_bar else st.mem)
    extents = [const_value(d.extent) for d in st.dims] if is_bar else \
        [const_value(e) for e in st.type.shape]
    a_coll = a.mapping.collective

    def err(msg, node, hint=None):
        diags.append(Diagnostic.at("distributed-memory", msg, node.srcinfo, hint))

    if not covers_whole(a_coll, unit):
        err(f"Missing threads to match {unit}: '{st.name}' is allocated by a collective of "
            f"{a_coll.shape()}, but one shard of {mem} belongs to a whole {unit}", st,
            f"allocate '{st.name}' outside the cuda_threads loops that split the {unit}")
        return None
    first = None  # (use, dims: [(pos, ThreadIter)], owner map)
    names_at: list[list[str]] = []
    for use in uses:
        node = use.info.stmt
        coll = use.coll
        if not within_one(coll, unit):
            err(f"Missing subdivision to match {unit}: '{st.name}' ({mem}) is accessed by "
                f"{coll.shape()} at once, but each shard belongs to one {unit}", node)
            return None
        post = _post_iters(a.mapping, use)
        env0 = {t: 0 for t, _ in coll.ranges}
        required, single = [], []
        per_unit = unit.threads(coll.block_dim, coll.cluster_dim)
        for t in post:
            if t.count < 2:
                # a loop of one tile of whole native units (``cuda_threads(0, 1,
                # unit=cuda_warpgroup)``, what a generator for N warpgroups makes with N = 1)
                # may index a leading dimension of extent 1, like its N > 1 version
                if t.count == 1 and not is_bar and per_unit and t.tile_threads >= per_unit \
                        and t.tile_threads % per_unit == 0:
                    single.append(t)
                continue
            o0, o1 = _owners(coll, env0, unit), _owners(coll, {**env0, t.name: 1}, unit)
            if o0 == o1:
                continue
            if o0 & o1:
                err(f"cuda_threads iterator '{t.name}' splits {unit} instances unevenly; "
                    f"'{st.name}' ({mem}) cannot be distributed over it", node)
                return None
            required.append(t)
        dims = _match_indices(st, use, required, extents, err, single)
        if dims is None:
            return None
        pre = [t for t in a.mapping.thread_iters]
        owner = {}
        for vals in product(*(range(t.count) for t in pre + [t for _, t in dims])):
            env = {**env0, **{t.name: v for t, v in zip(pre + [t for _, t in dims], vals)}}
            key = (vals[:len(pre)], vals[len(pre):])
            owner[key] = _owners(coll, env, unit)
        names_at.append([t.name for _, t in dims])
        if first is None:
            first = (use, dims, owner)
            continue
        fu, fdims, fown = first
        line = fu.info.line
        if len(dims) != len(fdims):
            err(f"Distributed memory deduction for '{st.name}' failed: this use has "
                f"{len(dims)} distributed dimension(s), the use at line {line} has "
                f"{len(fdims)}", node)
            return None
        for i, ((_, t), (_, ft)) in enumerate(zip(dims, fdims)):
            if t.pitch != ft.pitch:
                err(f"Distributed memory deduction for '{st.name}' failed: thread pitch of "
                    f"idx[{i}] is {t.pitch} here ({t.name}) but {ft.pitch} at line {line} "
                    f"({ft.name})", node)
                return None
        for key, o in owner.items():
            if key in fown and fown[key] != o:
                err(f"Distributed memory deduction for '{st.name}' failed: Incompatible "
                    f"offsets: shard {list(key[1])} is used by {_who(o, unit)} here but by "
                    f"{_who(fown[key], unit)} at line {line}; a thread may only use its own "
                    "shard", node)
                return None
    if first is None:
        return Sharding(st.name, a.path, mem, unit, (), is_bar)
    _, fdims, _ = first
    if not _multicasts_ok(st, uses, len(fdims), extents, err):
        return None
    sdims = tuple(ShardDim(extents[pos], t.pitch, t.unit,
                           tuple(dict.fromkeys(ns[i] for ns in names_at)))
                  for i, (pos, t) in enumerate(fdims))
    return Sharding(st.name, a.path, mem, unit, sdims, is_bar)


def _multicasts_ok(st, uses: list[_Use], k: int, extents, err) -> bool:
    """Multicast intervals only on distributed (CTA) dimensions, and only ``0:extent``."""
    for use in uses:
        arr = use.info.stmt
        if not isinstance(arr, N.Arrive):
            continue
        for r in arr.targets:
            for d, i in enumerate(r.idx):
                if not isinstance(i, N.Interval):
                    continue
                if d >= k:
                    err(f"Cannot multicast on non-distributed dimension idx[{d}] of "
                        f"'{st.name}'", arr)
                    return False
                if const_value(i.lo) != 0 or const_value(i.hi) != extents[d]:
                    err(f"multicast Arrive on '{st.name}': Expected idx[{d}] to be "
                        f"0:{extents[d]}", arr)
                    return False
    return True


def _who(owners: frozenset, unit: CollUnit) -> str:
    ids = sorted(o[0] if len(o) == 1 else o for o in owners)
    return f"{unit} {', '.join(map(str, ids))}"


def _match_indices(st, use: _Use, required: list[ThreadIter], extents, err,
                   single: list[ThreadIter] = ()):
    """Match the leading indices of a use with the distributing iterators; returns
    ``[(position, iter)]`` in position order, or None after reporting. ``single``: iterators
    of one-tile loops over whole native units; one of them read as a plain index of an
    extent-1 dimension ahead of a distributing iterator is a distributed dimension too."""
    node = use.info.stmt
    idx = use.idx
    names = {t.name: t for t in required}
    all_iters = {t.name for t in use.info.mapping.thread_iters}
    syn = {pos: t for pos, t in use.syn if t.name in names}
    k = len(required)
    lead = 0  # leading extent-1 dimensions indexed by a one-tile loop's iterator
    ones = {t.name: t for t in single}
    while k and lead < len(idx) and lead not in syn and idx[lead][0] == "pt" \
            and isinstance(idx[lead][1], N.Read) and not idx[lead][1].idx \
            and idx[lead][1].name in ones and extents[lead] == 1:
        names[idx[lead][1].name] = ones.pop(idx[lead][1].name)
        lead += 1
    k += lead
    claimed: dict[str, int] = {}
    # a barrier target `z[:, k]` signals every shard along a distributed dimension; the
    # interval stands for the iterator it would otherwise name (matched in nesting order)
    multicast = isinstance(st, N.BarrierAlloc) and not isinstance(node, N.Await)
    wild = []
    for pos in range(min(k, len(idx))):
        if multicast and idx[pos][0] == "iv" and pos not in syn:
            wild.append(pos)
            continue
        if pos in syn:
            t = syn[pos]
            lo, hi = const_value(idx[pos][1]), const_value(idx[pos][2])
            if lo != 0 or hi != extents[pos]:
                err(f"'{st.name}': expected idx[{pos}]=0:{extents[pos]} for the distributed "
                    "instruction parameter", node)
                return None
            claimed[t.name] = pos
            continue
        kind, e = idx[pos][0], idx[pos][1]
        if kind != "pt" or not (isinstance(e, N.Read) and not e.idx):
            err(f"'{st.name}' ({st.mem if isinstance(st, N.Alloc) else st.mech}) is "
                f"distributed over {', '.join(names)}: Expected single variable name at "
                f"idx[{pos}], a cuda_threads iterator", node)
            return None
        if e.name not in names:
            if e.name in all_iters:
                msg = f"{e.name} is not an expected distributed iterator for idx[{pos}]"
            else:
                msg = f"Expected cuda_threads-loop iterator at idx[{pos}], not {e.name}"
            err(f"'{st.name}': {msg} (expected {', '.join(names)})", node)
            return None
        if e.name in claimed:
            err(f"'{st.name}': iterator {e.name} repeated unexpectedly at idx[{pos}]", node)
            return None
        claimed[e.name] = pos
    for pos, n in zip(wild, [n for n in names if n not in claimed]):
        lo, hi = const_value(idx[pos][1]), const_value(idx[pos][2])
        if lo != 0 or hi != extents[pos]:
            err(f"multicast on '{st.name}': Expected idx[{pos}] to be 0:{extents[pos]}", node)
            return None
        claimed[n] = pos
    missing = [n for n in names if n not in claimed]
    if missing:
        unit = st.mem.native_unit if isinstance(st, N.Alloc) else st.mech.native_unit
        err(f"'{st.name}' ({st.mem if isinstance(st, N.Alloc) else st.mech}) has one shard "
            f"per {unit}; this statement runs on a different {unit} for each value of "
            f"{', '.join(names)}, but the leading indices of '{st.name}' do not say which "
            f"shard each one uses. Missing: {', '.join(missing)}", node,
            f"give '{st.name}' one leading dimension per cuda_threads iterator, e.g. "
            f"`x: f32[32] @ CudaRmem` indexed `x[i]`")
        return None
    out = []
    for n, pos in sorted(claimed.items(), key=lambda kv: kv[1]):
        t = names[n]
        if extents[pos] is None or t.count != extents[pos]:
            err(f"'{st.name}': {n}.tile_count = {t.count}; must be {extents[pos]} to match "
                f"underlying tensor (dimension {pos})", node)
            return None
        out.append((pos, t))
    return out
