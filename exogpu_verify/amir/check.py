"""``check_sync_concrete``: the concrete synchronization check of one proc at given sizes."""

from __future__ import annotations

import time

from ..report import Diagnostic, Span, Witness, sizes_text
from ..ir.nodes import Procedure
from .convert import lower_to_amir
from .interp import CheckError, Hazard, Machine, ev
from .machine import ALL
from .threads import bits, runs_text

HAZARD_TEXT = {
    "RAW": "read-after-write hazard",
    "WAR": "write-after-read hazard",
    "WAW": "write-after-write hazard",
    "free without sync": "free without synchronization",
}


def _thread_ranges(e) -> list[list[int]]:
    """The event's thread ids as ``[first, last]`` runs (the pictures draw lanes from them)."""
    if e.task == ALL:
        return []
    runs: list[list[int]] = []
    for t in bits(e.mask):
        if runs and runs[-1][1] == t - 1:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    return runs


def _event_json(e, blockDim, task_desc) -> dict:
    si = e.srcinfo
    return {
        "what": e.what,
        "file": getattr(si, "file", None),
        "line": getattr(si, "line", None),
        "col": getattr(si, "col", -1) + 1 if si is not None else None,
        "threads": describe_threads(e.task, e.mask, blockDim, task_desc),
        "thread_ranges": _thread_ranges(e),
        "task": (task_desc or {}).get(e.task, "") if e.task != ALL else "",
        "timelines": [q.name for q in e.quals],
        "iterators": {k: v for k, v in e.env.items() if isinstance(k, str)},
    }


def check_sync_concrete(p: Procedure, sizes: dict, deadline: float | None = None):
    """Run the abstract machine on ``p`` at ``sizes``; returns (verdict, diagnostics, witness,
    reason). Verdict is ``checked`` when no hazard exists at these sizes, else ``refuted``;
    ``unknown`` when the sizes are unusable (missing, violating an assert)."""
    missing = [prm.name for prm in p.params if not prm.is_data and prm.name not in sizes]
    if missing:
        return ("unknown", (Diagnostic.at("usage", f"no value for {', '.join(missing)} in the "
                                          f"concrete sizes {sizes}", p.srcinfo,
                                          hint="pass every size/index parameter, e.g. --sizes "
                                               + ",".join(f"{m}=256" for m in missing)),),
                None, f"sizes missing for {', '.join(missing)}")
    env = dict(sizes)
    for prm in p.params:
        if not prm.is_data and prm.type.name == "size" and sizes[prm.name] <= 0:
            return ("unknown", (Diagnostic.at("usage", f"size {prm.name} must be positive",
                                              p.srcinfo),), None, "bad sizes")
    from ..ir.printer import expr_str

    for pred in p.preds:
        try:
            ok = ev(pred, env)
        except Exception:  # stride asserts: strides are not known at a concrete check
            continue
        if not ok:
            return ("unknown", (Diagnostic.at("usage", f"sizes {sizes} violate `assert "
                                              f"{expr_str(pred)}`", pred.srcinfo),), None,
                    f"sizes violate assert {expr_str(pred)}")
    hopeless = _too_many_tasks(p, env, deadline)
    if hopeless:
        return "unknown", (), None, hopeless
    am = lower_to_amir(p)
    m = Machine(am, env, deadline)
    rerun = False
    try:
        try:
            m.run()
        except (Hazard, CheckError):
            if not m.batched_nests:
                raise
            # batched access nests found a failure (batch.py: only when the per-element run
            # fails too); the report is the per-element machine's, re-run from the start
            rerun = True
            m = Machine(am, env, deadline, batch=False)
            m.run()
    except TimeoutError:
        if rerun:
            return ("unknown", (), None, "the concrete check found a hazard, but re-running "
                    "it element by element for the report did not finish within the timeout "
                    f"({m.steps} statement instances executed); use smaller sizes or "
                    "--timeout")
        return ("unknown", (), None, f"the concrete check did not finish within the timeout "
                f"({m.steps} statement instances executed); use smaller sizes or --timeout")
    except Hazard as h:
        bd = _blockdim(p)
        first, second = h.first, h.second
        text = HAZARD_TEXT.get(h.kind, h.kind)
        box = ", ".join(f"{a}" if b == a + 1 else f"{a}:{b}" for a, b in h.box)
        msg = (f"{text} on {h.var}[{box}] at sizes "
               f"{', '.join(f'{k}={v}' for k, v in sizes.items())}: {second.what} by "
               f"{describe_threads(second.task, second.mask, bd, m.task_desc)}")
        if first is not None:
            msg += (f" conflicts with the earlier {first.what} by "
                    f"{describe_threads(first.task, first.mask, bd, m.task_desc)}")
        notes = [h.missing]
        if first is not None:
            iters = {k: v for k, v in first.env.items() if k not in sizes}
            if iters:
                notes.append("earlier access at " + ", ".join(f"{k}={v}" for k, v in
                                                               iters.items()))
        iters = {k: v for k, v in second.env.items() if k not in sizes}
        if iters:
            notes.append("later access at " + ", ".join(f"{k}={v}" for k, v in iters.items()))
        sec = (Span(first.srcinfo, "earlier access"),) if first is not None else ()
        hint = "add the missing Fence or Arrive/Await pair between the two accesses"
        if first is not None and first.task != second.task and ALL not in (first.task,
                                                                          second.task):
            # tasks are separate clusters: no synchronization statement orders them
            hint = ("the accesses are in different tasks, and tasks cannot synchronize "
                    "(cuda_tasks iterations run on different clusters, which no Fence or "
                    "barrier orders): partition the writes so that each task writes its own "
                    "part, and no other task reads or writes it")
        d = Diagnostic.at("sync", msg, second.srcinfo, notes=tuple(notes), secondary=sec,
                          hint=h.hint or hint)
        w = Witness(dict(sizes), _event_json(first, bd, m.task_desc) if first else {},
                    _event_json(second, bd, m.task_desc), h.missing)
        return "refuted", (d,), w, f"{h.kind} hazard"
    except CheckError as e:
        d = Diagnostic.at(e.kind if e.kind != "usage" else "sync", e.message, e.srcinfo,
                          hint=e.hint)
        return "refuted", (d,), None, e.message
    return "checked", (), None, ""


#: more tasks per second than the machine ever runs (it runs one Python loop iteration per
#: task, with the task's replay: about 10^4 per second on scalar kernels)
_MAX_TASK_RATE = 10 ** 7


def _too_many_tasks(p: Procedure, env: dict, deadline: float | None) -> str:
    """Why the check at ``env`` cannot finish before ``deadline``, or "": the machine runs
    every task of every kernel, and a kernel launched unconditionally at the top of ``p``
    has at least the product of the trip counts of its outer ``cuda_tasks`` loops whose
    bounds are known from the sizes. Said up front instead of after the timeout; memory
    is not the limit (the machine stores records of the accesses made, not arrays as
    large as the sizes)."""
    from ..ir import nodes as N

    if deadline is None:
        return ""
    budget = max(deadline - time.perf_counter(), 0.0) * _MAX_TASK_RATE
    for s in p.body:
        if not (isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction)):
            continue
        count, loops, body = 1, [], s.body
        while len(body) == 1 and isinstance(body[0], N.For) and \
                isinstance(body[0].mode, N.CudaTasks):
            f = body[0]
            try:
                trips = ev(f.hi, env) - ev(f.lo, env)
            except Exception:  # noqa: BLE001 - bounds on an outer task iterator: stop here
                break
            count *= max(trips, 0)
            loops.append(f)
            body = f.body
        if loops and count > budget:
            si = loops[0].srcinfo
            where = f" at {si.file}:{si.line}" if si is not None and si.line else ""
            names = ", ".join(f"`{f.iter}`" for f in loops)
            return (f"the concrete check at {sizes_text(env)} would run at least {count:.3g} "
                    f"tasks (the cuda_tasks loop{'s' if len(loops) > 1 else ''} over {names}"
                    f"{where}), more than it can run within the timeout; check at smaller "
                    "sizes (the all-size proof needs none)")
    return ""


def _blockdim(p):
    from ..ir import nodes as N

    def walk(stmts):
        for s in stmts:
            if isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction):
                return s.ctx.blockDim
            for attr in ("body", "orelse"):
                r = walk(getattr(s, attr, ()) or ())
                if r:
                    return r
        return None

    return walk(p.body)


def describe_threads(task: int, mask: int, blockDim: int | None,
                     task_desc: dict | None = None) -> str:
    """The threads of (task, mask) in words, for reports: runs of thread ids and the task."""
    if task == ALL:
        return "all threads (CPU scope / kernel boundary)"
    where = f"task ({task_desc[task]})" if task_desc and task in task_desc else f"task #{task}"
    ts = bits(mask)
    if not ts:
        return f"{where}: no threads"
    txt = runs_text(ts, 6)
    word = "thread" if len(ts) == 1 else "threads"
    return f"{word} {txt} of {where}"


__all__ = ["check_sync_concrete", "ALL", "time"]
