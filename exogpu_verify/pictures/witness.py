"""A race witness as a picture model: lanes of threads, rows in program order.

``witness_picture(p, report, where)`` turns a refuted ``Report`` with a ``Witness`` into
lanes (the threads of the earlier and of the later access, one lane per CTA when an access
spans several) and rows: the earlier access, every synchronization statement (``Fence``,
``Arrive``, ``Await``, an instruction completing on a barrier) with an instance between the
two accesses in the sequential program order the abstract machine executes (docs/
semantics.md), then the later access. Instances are compared on schedule vectors: block
positions interleaved with loop iterator values, fixed for the two accesses by the witness,
ranging over the loop bounds for a sync statement, one instance per value of its
``cuda_threads`` iterators (so a per-warp Fence is drawn once per warp that reaches it). The
model is data; ``svg.py`` draws it."""

from __future__ import annotations

import itertools
import linecache
from dataclasses import dataclass

from ..amir.threads import runs_text
from ..analysis import analyze
from ..analysis.walk import child_blocks
from ..ir import nodes as N
from ..ir.printer import expr_str
from ..report import Report

SYNC_TYPES = (N.Fence, N.Arrive, N.Await)


@dataclass(frozen=True)
class Lane:
    label: str  # "thread 1 of task (bi=0, bj=0)"
    threads: frozenset


@dataclass(frozen=True)
class Row:
    kind: str  # "access" | "sync" | "gap"
    line: int | None
    source: str  # the statement's source line, stripped
    detail: str  # what it does, for whom
    #: boxes to draw, each a group of lane indices it spans: one box over several lanes when
    #: one instance of the statement (one rendezvous) includes threads of each; one box per
    #: lane when separate instances do (a per-CTA Fence seen from two CTAs); () when only
    #: other threads execute it
    groups: tuple[tuple[int, ...], ...]
    role: str = ""  # "earlier" | "later" for accesses; the sync kind for syncs
    #: per group, who executes that box (sync rows: "threads 0-127, one of 2 instances")
    by: tuple[str, ...] = ()
    barrier: str = ""  # for Arrive/Await/trailing barriers: the barrier's name


@dataclass(frozen=True)
class WitnessPicture:
    title: str
    where: str
    sizes: dict
    lanes: tuple[Lane, ...]
    rows: tuple[Row, ...]
    missing: str
    notes: tuple[str, ...]
    hint: str


def witness_picture(p: N.Procedure, r: Report, where: str) -> WitnessPicture | None:
    """The picture model of ``r``'s witness, or None when ``r`` has none."""
    w = r.witness
    if w is None or not w.second:
        return None
    d = r.diagnostics[0] if r.diagnostics else None
    title = d.message.split(" at sizes ")[0] if d is not None else r.reason
    first, second = w.first or None, w.second
    ci = analyze(p).collectives
    block = ci.kernels[0].config.blockDim if ci is not None and len(ci.kernels) == 1 else None
    lanes: list[Lane] = []

    def lanes_of(ev: dict) -> tuple[int, ...]:
        """The access's threads as lanes, one per CTA when they span several (a per-CTA
        Fence then visibly joins only the lanes of one CTA)."""
        th = frozenset(t for a, b in ev.get("thread_ranges", ()) for t in range(a, b + 1))
        label = ev.get("threads", "")
        parts = [(label, th)]
        ctas = sorted({t // block for t in th}) if block else []
        if len(ctas) > 1:
            where = label.split(" of ", 1)[1] if " of " in label else ""
            parts = []
            for c in ctas:
                mine = frozenset(t for t in th if t // block == c)
                parts.append((f"{_ranges(mine)} of {where}, CTA {c}".replace(" of , ", " of "),
                              mine))
        out = []
        for lab, ths in parts:
            for i, ln in enumerate(lanes):
                if ln.label == lab:
                    out.append(i)
                    break
            else:
                lanes.append(Lane(lab, ths))
                out.append(len(lanes) - 1)
        return tuple(out)

    la = lanes_of(first) if first else None
    lb = lanes_of(second)
    stmts = _statements(p)
    f_at = _find(stmts, first) if first else None
    s_at = _find(stmts, second)
    if s_at is not None and str(second.get("what", "")).startswith("free"):
        # a free happens at the end of the allocation's block, after its last statement
        path, st, anc = s_at
        s_at = (path[:-1] + ((path[-1][0], 999_999),), st, anc)
    rows: list[Row] = []
    if first:
        rows.append(_access_row(first, "earlier", la, w.sizes))
    if f_at is not None and s_at is not None:
        fv = _vector(f_at, first.get("iterators", {}), w.sizes, access=True)
        sv = _vector(s_at, second.get("iterators", {}), w.sizes, access=True)
        found = []
        for path, s, anc in stmts:
            if not _is_sync(s):
                continue
            insts, key = _instances_between(ci, (path, s, anc), w.sizes, fv, sv)
            if insts:
                found.append((key, len(found), _sync_row(s, *_groups(insts, lanes))))
        # downward in the order of each statement's first instance after the earlier access
        rows += [row for _, _, row in sorted(found)]
    rows.append(_access_row(second, "later", lb, w.sizes))
    return WitnessPicture(title, where, dict(w.sizes), tuple(lanes), tuple(rows), w.missing,
                          tuple(d.notes) if d else (), (d.hint or "") if d else "")


# ------------------------------------------------------------------ statements and rows

def _statements(p: N.Procedure) -> list[tuple[tuple, object, tuple]]:
    """(path, stmt, ancestors) in program order; ancestors are (path, stmt) pairs."""
    out = []

    def walk(body, prefix, fld, anc):
        for i, s in enumerate(body):
            path = prefix + ((fld, i),)
            out.append((path, s, anc))
            for f, blk in child_blocks(s):
                walk(blk, path, f, anc + ((path, s),))

    walk(p.body, (), "body", ())
    return out


def _find(stmts, ev: dict):
    line = ev.get("line")
    for entry in stmts:
        si = getattr(entry[1], "srcinfo", None)
        if si is not None and si.line == line and not child_blocks(entry[1]) \
                and (ev.get("file") in (None, si.file)):
            return entry
    return None


def _is_sync(s) -> bool:
    return isinstance(s, SYNC_TYPES) or (isinstance(s, N.Call) and bool(s.barriers))


def _source(file, line) -> str:
    if not file or not line:
        return ""
    return linecache.getline(file, line).strip()


def _access_row(ev: dict, role: str, lanes, sizes: dict) -> Row:
    iters = ", ".join(f"{k}={v}" for k, v in ev.get("iterators", {}).items() if k not in sizes)
    tls = ", ".join(ev.get("timelines", ()))
    detail = ev.get("what", "")
    if iters:
        detail += f"  at {iters}"
    if tls:
        detail += f"  [{tls}]"
    return Row("access", ev.get("line"), _source(ev.get("file"), ev.get("line")), detail,
               tuple((i,) for i in lanes), role)


def _sync_row(s, groups: tuple, by: tuple[str, ...]) -> Row:
    si = s.srcinfo
    if isinstance(s, N.Fence):
        kind, barrier, what = "Fence", "", f"Fence({s.L1}, {s.L2})"
    elif isinstance(s, N.Arrive):
        barrier = s.targets[0].name if s.targets else ""
        kind, what = "Arrive", f"Arrive({s.L1}) >> " + ", ".join(_ref(t) for t in s.targets)
    elif isinstance(s, N.Await):
        kind, barrier = "Await", s.target.name
        what = f"Await({_ref(s.target)}, {s.L2}, {s.N})"
    else:
        kind, barrier = "barrier call", s.barriers[0].name
        what = f"{s.callee.name}(...) >> " + ", ".join(_ref(t) for t in s.barriers)
    return Row("sync", si.line, _source(si.file, si.line), what, groups, role=kind,
               barrier=barrier, by=by)


def _ref(b: N.BarrierRef) -> str:
    return expr_str(b)


def _groups(insts: list, lanes: list[Lane]) -> tuple[tuple, tuple[str, ...]]:
    """How instances (thread sets, ``None`` for the host thread) meet the lanes (see
    ``Row.groups``), and per group who runs that instance."""
    if any(inst is None for inst in insts):  # CPU scope: one instance, in order with all
        return (tuple(range(len(lanes))),), ("the host thread",)
    found: dict[tuple[int, ...], frozenset] = {}
    for inst in insts:
        t = tuple(i for i, ln in enumerate(lanes) if ln.threads & inst)
        if t and t not in found:
            found[t] = inst
    groups = sorted(found)
    of = f", one of {len(insts)} separate instances" if len(insts) > 1 else ""
    return tuple(groups), tuple(_ranges(found[g]) + of for g in groups)


def _instances_between(ci, entry, sizes: dict, fv: list, sv: list) -> list:
    """The thread sets of the instances of a statement that lie between the two accesses in
    program order: one per value of its ``cuda_threads`` iterators (a Fence inside ``for w in
    cuda_threads(0, 2, unit=cuda_warp)`` is one rendezvous per warp); ``None`` stands for a
    CPU-scope statement's one instance."""
    m = ci.mapping(entry[0]) if ci is not None else None
    if m is None:
        v = _vector(entry, {}, sizes, access=False)
        return ([None], _first_after(v, fv)) if _between(fv, v, sv) else ([], None)
    out: list[frozenset] = []
    key = None
    counts = [range(t.count) for t in m.thread_iters]
    for vals in itertools.islice(itertools.product(*counts), 4096):
        env = {t.name: v for t, v in zip(m.thread_iters, vals)}
        v = _vector(entry, env, sizes, access=False)
        if not _between(fv, v, sv):
            continue
        k = _first_after(v, fv)
        key = k if key is None else min(key, k)
        th = frozenset(m.threads(env))
        if th and th not in out:
            out.append(th)
    return out, key


def _ranges(threads) -> str:
    ts = sorted(threads)
    if not ts:
        return "no threads"
    return ("thread " if len(ts) == 1 else "threads ") + runs_text(ts, 4)


# ------------------------------------------------------------------ program order

def _vector(entry, iters: dict, sizes: dict, access: bool):
    """The schedule vector of a statement instance in sequential program order: per step,
    the block position, then for a loop (``seq``, ``cuda_tasks`` and ``cuda_threads`` alike:
    the sequential meaning runs them in order) its iterator's value from ``iters``. A value
    not in ``iters`` is ``None`` for an access (unknown) and the inclusive range of the
    loop's iterations for a sync statement (``None`` ends when the bounds are not known)."""
    from ..amir.evaluate import ev

    path, _, anc = entry
    out: list = []
    env = dict(sizes)
    env.update(iters)
    for k, step in enumerate(path):
        fld, i = step
        out.append(i if fld == "body" else 1_000_000 + i)
        if k < len(anc) and isinstance(anc[k][1], N.For):
            loop = anc[k][1]
            val = iters.get(loop.iter)
            if val is not None:
                out.append(int(val))
            elif access:
                out.append(None)
            else:
                try:
                    out.append((int(ev(loop.lo, env)), int(ev(loop.hi, env)) - 1))
                except Exception:  # bounds that depend on a free outer iterator
                    out.append((None, None))
    return out


def _between(a: list, v: list, b: list) -> bool:
    """Whether some instance of ``v`` (ints and ranges) lies strictly between the fixed
    vectors ``a`` and ``b`` in lexicographic order."""

    def go(j: int, tight_a: bool, tight_b: bool) -> bool:
        if not tight_a and not tight_b:
            return True
        if j >= len(v) or (tight_a and j >= len(a)) or (tight_b and j >= len(b)):
            return False
        # an access's unknown iterator: assume some instance may lie between
        tight_a = tight_a and a[j] is not None
        tight_b = tight_b and b[j] is not None
        c = v[j]
        lo, hi = (c, c) if isinstance(c, int) else c
        for rel_a in ("eq", "gt") if tight_a else ("any",):
            for rel_b in ("eq", "lt") if tight_b else ("any",):
                lo2, hi2 = lo, hi
                if rel_a == "eq":
                    lo2, hi2 = _meet(lo2, hi2, a[j], a[j])
                elif rel_a == "gt":
                    lo2, hi2 = _meet(lo2, hi2, a[j] + 1, None)
                if rel_b == "eq":
                    lo2, hi2 = _meet(lo2, hi2, b[j], b[j])
                elif rel_b == "lt":
                    lo2, hi2 = _meet(lo2, hi2, None, b[j] - 1)
                if lo2 is not None and hi2 is not None and lo2 > hi2:
                    continue
                if go(j + 1, rel_a == "eq", rel_b == "eq"):
                    return True
        return False

    return go(0, True, True)


def _first_after(v: list, a: list) -> list[int]:
    """The smallest instance of ``v`` after ``a`` (a sort key; unknown values read as 0)."""
    def lo_of(c):
        return c if isinstance(c, int) else (c[0] if c[0] is not None else 0)

    def go(j: int, tight: bool):
        if j >= len(v):
            return None if tight else []
        c = v[j]
        lo, hi = (c, c) if isinstance(c, int) else c
        aj = a[j] if j < len(a) else None
        if not tight or aj is None:
            rest = go(j + 1, False)
            return [lo_of(c)] + rest
        if (lo is None or lo <= aj) and (hi is None or aj <= hi):
            rest = go(j + 1, True)
            if rest is not None:
                return [aj] + rest
        nxt = aj + 1 if lo is None else max(lo, aj + 1)
        if hi is not None and nxt > hi:
            return None
        return [nxt] + go(j + 1, False)

    return go(0, True) or [lo_of(c) for c in v]


def _meet(lo, hi, lo2, hi2):
    lo = lo2 if lo is None else (lo if lo2 is None else max(lo, lo2))
    hi = hi2 if hi is None else (hi if hi2 is None else min(hi, hi2))
    return lo, hi
