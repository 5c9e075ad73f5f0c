"""Named barriers in both checkers: a Fence executed by a set of whole warps smaller than the
CTA orders exactly its own threads' accesses (same timeline rules as a CTA Fence). The
correct programs are proven for all sizes and checked concretely; each buggy twin is refuted
by both checkers, at one of the two racing accesses."""

from __future__ import annotations

import pytest

from testlib import TESTS, load_path

from exogpu_verify import verify

PATH = TESTS / "analysis" / "progs" / "named_barrier_progs.py"
P = load_path(PATH)
SIZES = {"N": 2, "M": 128}


def _sizes(p):
    return {q.name: SIZES[q.name] for q in p.params if not q.is_data}


def _line(marker: str) -> int:
    lines = PATH.read_text().splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if ln.rstrip().endswith(marker)]
    assert len(hits) == 1, marker
    return hits[0]


@pytest.mark.parametrize("name", P.GOOD)
def test_named_barrier_programs_are_proven(name):
    r = verify(getattr(P, name), mode="symbolic")
    assert r.verdict == "proven", r.reason


@pytest.mark.parametrize("name", P.GOOD)
def test_named_barrier_programs_pass_the_concrete_check(name):
    p = getattr(P, name)
    r = verify(p, sizes=_sizes(p))
    assert r.verdict == "checked", r.reason


@pytest.mark.parametrize("mode", ["symbolic", "concrete"])
@pytest.mark.parametrize("name", sorted(P.BAD))
def test_named_barrier_bugs_are_refuted(name, mode):
    p = getattr(P, name)
    hazard, markers = P.BAD[name]
    r = verify(p, mode="symbolic") if mode == "symbolic" else verify(p, sizes=_sizes(p))
    assert r.verdict == "refuted", r.reason
    d = r.diagnostics[0]
    assert d.kind == "sync" and hazard in d.message, d.message
    assert d.line in {_line(m) for m in markers}
