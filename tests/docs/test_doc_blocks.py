"""Every code block of README.md and docs/*.md is run or parsed (conventions: doc_blocks.py),
so the docs cannot drift from what the tools do; the README's test command is CI's."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from doc_blocks import (apply_diff, blocks, commands, is_tool_command, output_mismatch,
                        run_command)

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _is_program(text: str) -> bool:
    return "@proc" in text or "@instr" in text


def _runs():
    """One test per documented command; nvcc builds (exogpu-codegen without --no-build) are
    slow."""
    out = []
    for doc in DOCS:
        for b in blocks(doc):
            if b.lang != "text":
                continue
            for cmd, _ in commands(b.text):
                if not is_tool_command(cmd):
                    continue
                slow = cmd.startswith("exogpu-codegen") and "--no-build" not in cmd
                out.append(pytest.param(doc, b, cmd, id=f"{b.where}: {cmd}",
                                        marks=[pytest.mark.slow] if slow else []))
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """doc -> a folder with the doc's named files (and the repository's specs/, examples/,
    proofs/)."""
    made: dict[Path, Path] = {}

    def get(doc: Path) -> Path:
        if doc not in made:
            d = tmp_path_factory.mktemp(doc.stem.lower())
            for sub in ("specs", "examples", "proofs"):
                os.symlink(ROOT / sub, d / sub)
            files: dict[str, str] = {}
            for b in blocks(doc):
                if b.lang == "python" and b.info.endswith(".py"):
                    files[b.info] = b.text
                elif b.lang == "diff":
                    base, arrow, name = b.info.partition("->")
                    assert arrow, f"{b.where}: a diff block is ```diff BASE.py -> NEW.py"
                    base, name = base.strip(), name.strip()
                    assert base in files, f"{b.where}: {base} is not defined above"
                    files[name] = apply_diff(files[base], b.text, b.where)
            for name, text in files.items():
                (d / name).write_text(text)
            made[doc] = d
        return made[doc]

    return get


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_python_blocks_parse_and_programs_are_named(doc, scratch):
    problems = []
    for b in blocks(doc):
        if b.lang not in ("python", "py"):
            continue
        text = b.text
        if b.info == "fragment":
            text = "def _fragment():\n" + "".join("    " + ln + "\n" for ln in text.splitlines())
        elif not b.info.endswith(".py") and _is_program(text):
            problems.append(f"{b.where}: a complete program needs a name: ```python NAME.py")
            continue
        try:
            ast.parse(text)
        except SyntaxError as e:
            problems.append(f"{b.where}: does not parse: {e}")
    scratch(doc)  # named files and diffs apply
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("doc,block,cmd", _runs())
def test_documented_command_output(doc, block, cmd, scratch):
    d = scratch(doc)
    expected = dict(commands(block.text))[cmd]
    code, out = run_command(cmd, d)
    bad = output_mismatch(expected, out, d)
    assert bad is None, f"{block.where}: `{cmd}` (exit {code}): {bad}\n--- actual output:\n{out}"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    [cmd] = [ln.strip() for ln in readme.splitlines()
             if ln.strip().startswith("python -m pip install -e \".[test]\"")]
    ci = (ROOT / ".ci" / "run").read_text()
    assert cmd in ci.splitlines(), (cmd, ci)
    assert "-m slow" in ci  # the slow tests run as CI's second step, not dropped


def test_conventions_are_enforced(tmp_path):
    """The checks bite: an unnamed program, a wrong diff and a wrong expected line fail."""
    doc = tmp_path / "x.md"
    doc.write_text("```python\n@proc\ndef f(): pass\n```\n")
    [b] = blocks(doc)
    assert b.lang == "python" and b.info == "" and _is_program(b.text)
    with pytest.raises(AssertionError, match="exactly once"):
        apply_diff("a\nb\n", "-c\n+d\n", "x.md:1")
    assert apply_diff("a\nb\nc\n", " a\n-b\n+B\n", "x.md:1") == "a\nB\nc\n"
    assert output_mismatch(["  proven  f.py::f ..."], "  proven  f.py::f  3 obligations\n",
                           tmp_path) is None
    assert output_mismatch(["refuted f.py::f"], "  proven  f.py::f\n", tmp_path) is not None
    assert output_mismatch(["1 proc(s): 1 proven in 0.50s"], "1 proc(s): 1 proven in 9.99s",
                           tmp_path) is None
