"""Atomics are atomic with each other only within one memory proxy (docs/semantics.md,
"Atomics and proxies"): a generic-proxy atomic and a TMA reduce-add on one element from
different tasks race; reduce-adds alone, or generic atomics alone, need no ordering. Both
checkers; ``mixed`` was proven by both before ``amir/convert.py`` demoted such atomics."""

from __future__ import annotations

import pytest

from testlib import TESTS, load_path

from exogpu_verify import verify

PATH = TESTS / "symbolic" / "progs" / "atomic_progs.py"
P = load_path(PATH)
SIZES = {"M": 64}


def _line(marker: str) -> int:
    hits = [i + 1 for i, ln in enumerate(PATH.read_text().splitlines()) if marker in ln]
    assert len(hits) == 1, marker
    return hits[0]


@pytest.mark.parametrize("mode", ["symbolic", "concrete"])
def test_generic_atomic_and_tma_reduce_add_on_one_element_race(mode):
    r = verify(P.mixed, mode=mode, sizes=SIZES if mode == "concrete" else None)
    assert r.verdict == "refuted", r.reason
    d = r.diagnostics[0]
    assert d.kind == "sync" and "write-after-write" in d.message, d.message
    assert "atomic in the generic proxy only" in d.message, d.message
    assert d.line in {_line("# <- generic"), _line("# <- tma")}


@pytest.mark.parametrize("name", ["tma", "generic"])
def test_atomics_of_one_proxy_need_no_ordering(name):
    p = getattr(P, name)
    assert verify(p, mode="symbolic").verdict == "proven"
    assert verify(p, mode="concrete", sizes=SIZES).verdict == "checked"
