"""Provenance: the checked chain ``p1 -> ... -> pN`` a scheduled procedure carries.

Every rewrite appends a ``Rewrite`` to ``p.provenance``: the primitive, its arguments as
text, what was checked, whether it is unsafe, how it was called (``record.Call``) and the
sha256 of the procedure it produced. From that chain:

* ``derivation(p)``: "derived from gemm (file:line) by 108 checked steps (0 unsafe)";
* ``provenance_record(p)``: a JSON-able record (p1's name, location and hash, every step);
* ``replay(p)`` re-applies every step to ``p1`` (re-parsed from its source file when
  ``from_source=True``) and checks each result's hash: the chain is re-derived, not trusted;
  ``replay_record(record)`` does the same from the JSON record alone (arguments are
  evaluated again from their text in the defining module's namespace);
* ``step_diffs(p)`` / ``EXOGPU_LOG=schedule``: the IR after each step, as unified diffs
  (``trace=True`` on the replays prints them too).
"""

from __future__ import annotations

import ast
import os
import sys
import textwrap

from ..ir import nodes as N


class ReplayError(Exception):
    """A schedule could not be replayed, or replayed to a different program."""


from ..ir.derivation import (derivation, program_hash, provenance_record,  # noqa: F401
                             root)
from ..ir.derivation import where as _where
from . import (buffers, dims, exprs, gpu, guards, lifetime, loopnest, loops, stage,  # noqa
               stmts, subprocs, windows)
from .trace import _diff, step_diffs  # noqa: F401  (re-exported)

_PRIMITIVE_MODULES = (buffers, dims, exprs, gpu, guards, lifetime, loopnest, loops, stage,
                      stmts, subprocs, windows)


# ---------------------------------------------------------------- replay


def namespace_of(p1: N.Procedure) -> dict:
    """Names a recorded argument may use: the language, the platform libraries, the
    schedule module and the globals of the module that defined ``p1``."""
    from ..frontend.namespace import language_namespace

    ns: dict = language_namespace()
    for mod in ("cuda", "sm80", "sm90"):
        m = __import__(f"exogpu_verify.platforms.{mod}", fromlist=["*"])
        ns.update({k: v for k, v in vars(m).items() if not k.startswith("_")})
    for m in _PRIMITIVE_MODULES:
        ns.update({k: getattr(m, k) for k in getattr(m, "__all__", ())})
    if isinstance(p1.module, dict):
        ns.update(p1.module)
    return ns


def reparse_source(p1: N.Procedure) -> N.Procedure:
    """``p1`` parsed again from the function at its source location, in its module's
    globals (a proc written at module level; a factory's closure is not visible here)."""
    si = p1.srcinfo
    if si is None or not si.file or not os.path.exists(si.file):
        raise ReplayError(f"the source of {p1.name} is not available ({_where(p1)})")
    text = open(si.file, encoding="utf-8").read()
    tree = ast.parse(text)
    fdef = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == p1.name and \
                si.line in {node.lineno} | {d.lineno for d in node.decorator_list}:
            fdef = node
    if fdef is None:
        raise ReplayError(f"no function {p1.name} at {_where(p1)} any more")
    lines = text.splitlines(True)
    start = min([fdef.lineno] + [d.lineno for d in fdef.decorator_list])
    src = textwrap.dedent("".join(lines[start - 1:fdef.end_lineno]))
    src = "\n" * (start - 1) + src
    from ..frontend.decorators import parse_proc_source

    env = dict(p1.module) if isinstance(p1.module, dict) else {}
    try:
        q = parse_proc_source(src, env, file=si.file)
    except Exception as e:  # noqa: BLE001 - reported as a replay failure
        raise ReplayError(f"cannot re-parse {p1.name} from {_where(p1)}: {e}") from None
    from dataclasses import replace

    return replace(q, module=p1.module)


def _apply(p, call, namespace, live: bool):
    from . import record as R

    if call is None or call.args is None:
        raise ReplayError("the step was not recorded as a call of a public primitive")
    fn = _primitive(call.name)
    if fn is None:
        raise ReplayError(f"unknown primitive {call.name!r}")
    args = [R.resolve(a, p, namespace, live) for a in call.args]
    kwargs = {k: R.resolve(v, p, namespace, live) for k, v in call.kwargs}
    out = fn(p, *args, **kwargs)
    return out[0] if isinstance(out, tuple) else out


def _primitive(name):
    for m in _PRIMITIVE_MODULES:
        fn = getattr(m, name, None)
        if fn is not None and hasattr(fn, "__wrapped_primitive__"):
            return fn
    return None


def replay(p: N.Procedure, from_source: bool = False, trace: bool = False) -> N.Procedure:
    """Re-apply every step of ``p``'s chain to ``p1`` (re-parsed from its source file with
    ``from_source``) and check that each step gives the recorded program; returns the
    replayed procedure (equal to ``p``). Raises ``ReplayError`` naming the first step that
    cannot be replayed or differs."""
    if not p.provenance:
        return p
    p1 = root(p)
    cur = reparse_source(p1) if from_source else p1
    if from_source and program_hash(cur) != program_hash(p1):
        raise ReplayError(f"{p1.name} at {_where(p1)} changed since it was scheduled")
    ns = namespace_of(p1) if from_source else None
    steps = [(rw.name, rw.call, rw.result_hash) for rw in p.provenance]
    return _replay_steps(cur, steps, ns, live=not from_source, trace=trace,
                         want=program_hash(p))


def replay_record(record: dict, p1: N.Procedure | None = None,
                  trace: bool = False) -> N.Procedure:
    """Replay a ``provenance_record`` from the source alone: ``p1`` is re-parsed from the
    recorded file (or given) and must have the recorded hash; every step is evaluated from
    its recorded call and must give the recorded hash."""
    from . import record as R

    src = record.get("source") or {}
    if p1 is None:
        raise ReplayError("replay_record needs p1 (load the module that defines it)")
    if program_hash(p1) != src.get("hash"):
        raise ReplayError(f"{src.get('proc')} at {src.get('file')}:{src.get('line')} is not "
                          "the program the schedule started from (its hash differs)")
    steps = []
    for k, st in enumerate(record.get("steps") or [], 1):
        c = st.get("call")
        call = None
        if c is not None:
            call = R.Call(c["primitive"], tuple(R.spec_from_json(a) for a in c["args"]),
                          tuple((n, R.spec_from_json(v)) for n, v in c["kwargs"].items()))
        steps.append((st.get("primitive"), call, st.get("result_hash")))
    return _replay_steps(p1, steps, namespace_of(p1), live=False, trace=trace,
                         want=record.get("result_hash"))


def _replay_steps(cur, steps, ns, live, trace, want):
    for k, (name, call, h) in enumerate(steps, 1):
        before = cur
        try:
            cur = _apply(cur, call, ns, live)
        except ReplayError as e:
            raise ReplayError(f"step {k} ({name}): {e}") from None
        except Exception as e:  # noqa: BLE001 - a refused or failing step
            msg = getattr(e, "message", None) or str(e)
            raise ReplayError(f"step {k} ({name}) failed on replay: {msg}") from None
        if h is not None and program_hash(cur) != h:
            raise ReplayError(f"step {k} ({name}) replayed to a different program than the "
                              "one recorded")
        if trace:
            print(_diff(k, cur.provenance[-1], before, cur), file=sys.stderr)
    if want is not None and program_hash(cur) != want:
        raise ReplayError("the replayed schedule does not end at the recorded program")
    return cur


def recheck_provenance(p: N.Procedure, recorded: dict | None) -> list[str]:
    """What is wrong with the provenance a certificate ``recorded`` for ``p`` (loaded again
    from its module): it must be ``p``'s own chain, step for step, and replaying it from
    ``p1``'s source, both with ``p``'s calls and with the recorded ones alone, must give
    every recorded hash. An empty list means the chain is re-derived."""
    mine = provenance_record(p)
    if recorded is None and mine is None:
        return []
    if recorded is None or mine is None:
        return ["the certificate records a schedule but the procedure has none" if mine is None
                else "the procedure is scheduled but the certificate records no provenance"]
    problems = []
    if recorded.get("source", {}).get("hash") != mine["source"]["hash"]:
        problems.append(f"p1 ({mine['source']['proc']}) is not the program the schedule "
                        "started from (hash differs)")
    rs, ms = recorded.get("steps") or [], mine["steps"]
    if len(rs) != len(ms):
        problems.append(f"the certificate records {len(rs)} steps, the schedule has {len(ms)}")
    for k, (a, b) in enumerate(zip(rs, ms), 1):
        for key in ("primitive", "args", "unsafe", "result_hash", "call"):
            if a.get(key) != b.get(key):
                problems.append(f"step {k} ({b['primitive']}): the recorded {key} differs")
                break
    if problems:
        return problems
    try:
        replay(p, from_source=True)
        replay_record(recorded, reparse_source(root(p)))
    except ReplayError as e:
        problems.append(f"replay: {e}")
    return problems
