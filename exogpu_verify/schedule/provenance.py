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
* ``recheck_provenance(p, recorded)``: what ``--recheck`` and the codegen gate check of a
  certificate's ``derivation``: it is ``p``'s own chain, and it replays from the record;
* ``step_diffs(p)`` / ``EXOGPU_LOG=schedule``: the IR after each step, as unified diffs
  (``trace=True`` on the replays prints them too).
"""

from __future__ import annotations

import ast
import json
import os
import sys
import textwrap
from pathlib import Path

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
    """What is wrong with the derivation a certificate ``recorded`` for ``p``, the proc
    rebuilt from its source (importing its module re-ran every step of the schedule, each
    re-checking its legality). The recorded chain must be ``p``'s own: the same ``p1``
    (name, file and program hash) and the same steps in order (primitive, arguments, what
    was checked, unsafe or not, the call, the program each gave). Then the recorded steps
    alone are replayed on ``p1``: each call is evaluated from its JSON and applied again,
    which re-runs its legality check, and must give the recorded hashes. The location's
    line is not compared (moving p1 down its file changes no program). Messages name the
    certificate field that differs; an empty list means the chain is re-derived.
    ``recorded`` is well-formed (``recheck.schema_problems``) or None."""
    mine = provenance_record(p)
    if recorded is None and mine is None:
        return []
    mine = json.loads(json.dumps(mine))  # as a certificate holds it (tuples become lists)
    if mine is None:
        return [f"derivation: the certificate records a schedule ({len(recorded['steps'])} "
                f"step(s) from {recorded['source']['proc']}), but {p.name} is written "
                "directly (it has no schedule)"]
    if recorded is None:
        return [f"derivation: null, but {p.name} is {mine['summary']}: the certificate does "
                "not record its schedule"]
    problems = []
    rs, ms = recorded["source"], mine["source"]
    if rs["hash"] != ms["hash"]:
        problems.append(f"derivation.source.hash: {rs['hash'][:16]}... is not the program "
                        f"the schedule starts from ({ms['proc']} hashes to "
                        f"{ms['hash'][:16]}...)")
    if rs["proc"] != ms["proc"]:
        problems.append(f"derivation.source.proc: {rs['proc']!r}, the schedule starts from "
                        f"{ms['proc']!r}")
    p1_file = root(p).srcinfo.file if root(p).srcinfo else None
    if not _same_file(rs["file"], p1_file):
        problems.append(f"derivation.source.file: {rs['file']!r}, but {ms['proc']} is defined "
                        f"in {ms['file']!r}")
    problems += _step_problems(recorded["steps"], mine["steps"])
    if problems or any(st["call"] is None for st in recorded["steps"]):
        return problems  # a step without a recorded call replays only by re-running the module
    try:
        replay_record(recorded, root(p))
    except ReplayError as e:
        problems.append(f"derivation: replaying the recorded steps on {ms['proc']}: {e}")
    return problems


def _same_file(recorded: str | None, actual: str | None) -> bool:
    """``recorded`` (relative to the folder the certificate was written from) names
    ``actual``: its path, without ``.`` and ``..`` parts, ends ``actual``'s."""
    if not recorded or not actual:
        return not recorded and not actual
    want = [x for x in Path(recorded).parts if x not in (".", "..")]
    have = Path(os.path.abspath(actual)).parts
    return bool(want) and list(have[-len(want):]) == want


_STEP_KEYS = ("primitive", "args", "checked", "unsafe", "call", "result_hash")


def _desc(st: dict) -> str:
    args = " ".join(st["args"].split())
    return f"{st['primitive']}({args if len(args) <= 60 else args[:57] + '...'})"


def _step_problems(rec: list, mine: list) -> list[str]:
    """The differences between the recorded steps and the schedule's, by step."""
    first = next((i for i, (a, b) in enumerate(zip(rec, mine)) if a != b),
                 min(len(rec), len(mine)))
    if len(rec) != len(mine):
        head = (f"derivation.steps: the certificate records {len(rec)} step(s), the schedule "
                f"has {len(mine)}")
        if len(rec) < len(mine) and rec[first:] == mine[first + 1:]:
            return [f"{head}: step {first + 1} of the schedule, {_desc(mine[first])}, is "
                    "missing from the certificate"]
        if len(rec) > len(mine) and rec[first + 1:] == mine[first:]:
            return [f"{head}: the certificate's steps[{first}], {_desc(rec[first])}, is not a "
                    "step of the schedule"]
        if first == min(len(rec), len(mine)):
            more = mine[first:] if len(mine) > len(rec) else rec[first:]
            whose = "the schedule's" if len(mine) > len(rec) else "the certificate's"
            return [f"{head}: {whose} steps from {first + 1} on "
                    f"({', '.join(st['primitive'] for st in more[:5])}"
                    f"{', ...' if len(more) > 5 else ''}) have no counterpart"]
        return [f"{head}; they first differ at step {first + 1}: the certificate records "
                f"{_desc(rec[first])}, the schedule applies {_desc(mine[first])}"]
    out = []
    bad = [i for i, (a, b) in enumerate(zip(rec, mine)) if a != b]
    for i in bad[:5]:
        a, b = rec[i], mine[i]
        what = [_key_diff(k, a[k], b[k]) for k in _STEP_KEYS if a[k] != b[k]]
        out.append(f"derivation.steps[{i}] (step {i + 1}, {b['primitive']}): " +
                   "; ".join(what))
    if len(bad) > 5:
        out.append(f"derivation.steps: {len(bad) - 5} more step(s) differ")
    return out


def _key_diff(key: str, a, b) -> str:
    def short(t):
        t = " ".join(str(t).split())
        return repr(t if len(t) <= 70 else t[:67] + "...")

    if key == "unsafe":
        return (f"unsafe is {str(a).lower()} in the certificate, {str(b).lower()} in the "
                "schedule" + (" (the certificate hides an unsafe step)" if b else ""))
    if key == "call":
        return "call: the recorded call differs from the schedule's"
    if key == "result_hash":
        return "result_hash: the recorded result is not the program this step gives"
    return f"{key}: the certificate records {short(a)}, the schedule {short(b)}"
