"""The IR after each scheduling step, as unified diffs: ``step_diffs(p)`` for a finished
chain, ``walkthrough(steps)`` as markdown for documentation, and ``EXOGPU_LOG=schedule`` (a
comma-separated list of topics) to print each step to stderr as it happens."""

from __future__ import annotations

import difflib
import os
import sys

from ..ir import nodes as N


def chain(p: N.Procedure):
    """``[(rewrite, input, output)]`` for every step of ``p``'s provenance."""
    out = []
    prov = p.provenance
    for k, rw in enumerate(prov):
        src = rw.forward.src if rw.forward is not None else None
        nxt = prov[k + 1].forward.src if k + 1 < len(prov) and prov[k + 1].forward else \
            (p if k + 1 == len(prov) else None)
        out.append((rw, src, nxt))
    return out


def _diff(k, rw, before, after) -> str:
    a, b = str(before).splitlines(True), str(after).splitlines(True)
    flag = "UNSAFE " if rw.unsafe else ""
    head = f"## step {k}: {flag}{rw.name}({rw.args})\n##   checked: {rw.checked}\n"
    return head + "".join(difflib.unified_diff(a, b, "before", "after", n=1))


def step_diffs(p: N.Procedure) -> list[str]:
    """The IR change of every step of ``p``'s chain, as unified diffs with a header."""
    out = []
    for k, (rw, src, dst) in enumerate(chain(p), 1):
        if src is None or dst is None:
            out.append(f"## step {k}: {rw.name}({rw.args}) (intermediate not kept)\n")
            continue
        out.append(_diff(k, rw, src, dst))
    return out


def log_step(old: N.Procedure, new: N.Procedure) -> None:
    """With ``EXOGPU_LOG=schedule`` (a comma-separated list), print each step's diff to
    stderr as it happens."""
    if "schedule" not in (os.environ.get("EXOGPU_LOG") or "").split(","):
        return
    print(_diff(len(new.provenance), new.provenance[-1], old, new), file=sys.stderr)


def walkthrough(steps) -> str:
    """Markdown for a schedule given as ``[(description, proc), ...]`` (the spec first): each
    step's title, the primitives it applied (from the provenance) and its IR diff."""
    out, prev, done = [], None, 0
    for k, (desc, p) in enumerate(steps):
        text = str(p)
        out.append(f"### Step {k}: {desc}\n")
        calls = p.provenance[done:]
        done = len(p.provenance)
        if calls:
            out.append("\n".join(f"{'UNSAFE ' if r.unsafe else ''}`{r.name}({r.args})`  "
                                  for r in calls) + "\n")
        if prev is None:
            out.append("```python\n" + text + "```\n")
        else:
            diff = "".join(difflib.unified_diff(prev.splitlines(True), text.splitlines(True),
                                                "before", "after", n=1))
            out.append("```diff\n" + diff + "```\n")
        prev = text
    return "\n".join(out)
