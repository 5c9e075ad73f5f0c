"""Code blocks of the Markdown docs, and how the doc tests run them.

Conventions (also in docs/tutorial.md, "How this page is tested"):

* ```` ```python NAME.py ```` is a complete module: it is written to ``NAME.py`` in a scratch
  folder (with the other files of the same page) and must import cleanly.
* ```` ```diff BASE.py -> NAME.py ```` derives ``NAME.py`` from an earlier file: lines starting
  with ``-`` are removed, ``+`` added, `` `` (space) kept; they must match the base exactly.
* ```` ```python ```` without a name is an API fragment: it must parse as Python.
  ```` ```python fragment ```` is a piece of a proc body: it must parse inside a ``def``.
* ```` ```text ```` blocks are run when they contain ``$ exogpu-verify ...`` (or
  ``$ python -m exogpu_verify ...``, ``$ exogpu-codegen ...``, ``$ python NAME.py`` for a file
  of the page) lines, in the scratch folder
  (where the repository's ``specs/``, ``examples/`` and ``proofs/`` are also visible). The
  lines after a command are its expected output: each must appear in the actual output, in
  order (other lines may come in between); a line ending in ``...`` matches any line that
  starts with the rest; runs of spaces count as one, timings (``in 1.23s``) are not
  compared, and the scratch folder's path is removed from the actual output. ``exogpu-verify``
  runs with ``--timeout 3600`` unless the command sets one, so no verdict depends on the
  machine's load.
* Blocks in other languages (``bash``, none) are not run.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*(.*?)\s*$")
COMMANDS = ("exogpu-verify", "exogpu-codegen")


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # of the opening fence
    lang: str
    info: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc.name}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """Every fenced code block of ``doc``, in order."""
    out, cur = [], None
    for i, line in enumerate(doc.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if m and "`" in m.group(4):  # CommonMark: a backtick fence's info has no backticks
            m = None
        if cur is None:
            if m:
                cur = (i, m.group(2), m.group(3).lower(), m.group(4), [], len(m.group(1)))
        elif m and m.group(2) == cur[1] and not m.group(3) and not m.group(4):
            start, _, lang, info, body, indent = cur
            out.append(Block(doc, start, lang, info,
                             textwrap.dedent("\n".join(body)) + "\n"))
            cur = None
        else:
            cur[4].append(line)
    assert cur is None, f"{doc}:{cur[0]}: unclosed code block"
    return out


def apply_diff(base: str, diff: str, where: str) -> str:
    """Apply a diff block's hunks (``@@`` lines separate hunks) to ``base``."""
    lines = base.splitlines()
    hunks, cur = [], []
    for d in diff.splitlines():
        if d.startswith("@@"):
            if cur:
                hunks.append(cur)
            cur = []
        elif d:
            cur.append(d)
    if cur:
        hunks.append(cur)
    for hunk in hunks:
        old = [d[1:] for d in hunk if d[0] in " -"]
        new = [d[1:] for d in hunk if d[0] in " +"]
        bad = [d for d in hunk if d[0] not in " -+"]
        assert not bad, f"{where}: diff lines must start with ' ', '-' or '+': {bad[0]!r}"
        hits = [i for i in range(len(lines) - len(old) + 1) if lines[i:i + len(old)] == old]
        assert len(hits) == 1, (f"{where}: the hunk's context and removed lines must occur "
                                f"exactly once in the base file (found {len(hits)}):\n"
                                + "\n".join(old))
        i = hits[0]
        lines[i:i + len(old)] = new
    return "\n".join(lines) + "\n"


def commands(text: str) -> list[tuple[str, list[str]]]:
    """``(command line, expected output lines)`` for each ``$ ...`` line of a text block."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:].strip(), []))
        elif out and line.strip():
            out[-1][1].append(line)
    return out


def is_tool_command(cmd: str) -> bool:
    argv = shlex.split(cmd)
    return bool(argv) and (argv[0] in COMMANDS or argv[:3] == ["python", "-m", "exogpu_verify"]
                           or (len(argv) == 2 and argv[0] == "python"
                               and argv[1].endswith(".py")))


def run_command(cmd: str, cwd: Path) -> tuple[int, str]:
    """Run one documented command in ``cwd``: exogpu-verify / exogpu-codegen in-process,
    ``python NAME.py`` (a file of the page) in a fresh interpreter."""
    argv = shlex.split(cmd)
    if argv[0] == "python" and argv[1].endswith(".py"):
        r = subprocess.run([sys.executable, argv[1]], cwd=cwd, capture_output=True, text=True,
                           timeout=1800)
        return r.returncode, r.stdout + r.stderr
    if argv[:3] == ["python", "-m", "exogpu_verify"]:
        argv = ["exogpu-verify"] + argv[3:]
    if argv[0] == "exogpu-verify":
        from exogpu_verify.cli import main

        if "--timeout" not in argv:  # a hang guard: verdicts must not depend on the load
            argv += ["--timeout", "3600"]
    else:
        from exogpu_codegen.cli import main
    buf = io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            code = main(argv[1:])
    finally:
        os.chdir(old)
    return code, buf.getvalue()


_SPACES = re.compile(r"\s+")
_TIME = re.compile(r"\bin \d+(\.\d+)?s\b")


def _norm(line: str) -> str:
    return _TIME.sub("in <t>s", _SPACES.sub(" ", line.strip()))


def output_mismatch(expected: list[str], actual: str, scratch: Path) -> str | None:
    """None when every expected line appears in order in ``actual``; else what is missing."""
    got = [_norm(x.replace(f"{scratch}{os.sep}", "").replace(str(scratch), "."))
           for x in actual.splitlines()]
    got = [g for g in got if g]
    k = 0
    for want in expected:
        w = _norm(want)
        if not w:
            continue
        prefix = w.endswith("...")
        w = w[:-3].rstrip() if prefix else w
        while k < len(got) and not (got[k].startswith(w) if prefix else got[k] == w):
            k += 1
        if k == len(got):
            return f"expected line not found (in order): {want.strip()!r}"
        k += 1
    return None
