"""The 1024-thread warp-synchronous block scan of ``bench/scan_kernels.py`` (issue 15's
symbolic-speed kernel, ~490 obligations): its sequential meaning is the per-block prefix
sum, it is proven for all sizes, and the checker is precise about its warp Fences: deleting
any Fence that orders a conflict is refuted (the concrete replay agreeing), while the three
that order nothing (the ``d = 16`` copies, whose reading and writing lanes are disjoint, and
the Fence before lane 31 publishes its own total) can be deleted and the kernel stays
proven."""

from __future__ import annotations

import re

import numpy as np
import pytest
from symbolic_helpers import ROOT, load_path

from exogpu_verify import interpret, parse_proc_source, verify
from exogpu_verify.ir.printer import print_proc, roundtrip_env

SCAN = load_path(ROOT / "bench" / "scan_kernels.py").block_scan
LINES = print_proc(SCAN).splitlines()
FENCES = [i for i, ln in enumerate(LINES) if ln.strip().startswith("Fence(")]


def _after(text: str) -> int:
    """The first Fence after the line containing ``text``."""
    at = next(i for i, ln in enumerate(LINES) if text in ln)
    return next(i for i in FENCES if i > at)


def _before(text: str) -> int:
    at = next(i for i, ln in enumerate(LINES) if text in ln)
    return max(i for i in FENCES if i < at)


#: Fences that order no conflicting pair
NEEDLESS = {_after("t[w, l] = s[w, l - 16]"), _before("if l == 31:"),
            _after("wt[l] = ws[l - 16]")}


def _without(i: int):
    text = LINES[:i] + [re.sub(r"Fence\(.*\)", "pass", LINES[i])] + LINES[i + 1:]
    return parse_proc_source("\n".join(text), roundtrip_env(SCAN), file="<mutant>",
                             instr_info=SCAN.instr)


def test_block_scan_means_per_block_prefix_sums():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(2048).astype(np.float32)
    y = np.full(2048, np.nan, np.float32)
    interpret(SCAN, N=2048, x=x, y=y)
    want = np.cumsum(x.reshape(2, 1024).astype(np.float64), axis=1).reshape(-1)
    assert np.allclose(y, want, rtol=1e-4, atol=1e-4)


def test_block_scan_is_proven_with_its_obligations():
    r = verify(SCAN, mode="symbolic")
    assert r.verdict == "proven", r.summary()
    assert int(re.match(r"(\d+) obligations", r.reason).group(1)) >= 400
    assert len(FENCES) == 23 and len(NEEDLESS) == 3


@pytest.mark.slow
@pytest.mark.parametrize("i", FENCES, ids=[f"line{i + 1}" for i in FENCES])
def test_each_fence_is_needed_or_orders_nothing(i):
    r = verify(_without(i), mode="symbolic", timeout_s=600)
    if i in NEEDLESS:
        assert r.verdict == "proven", (LINES[i - 2].strip(), r.summary())
    else:
        assert r.verdict == "refuted", (LINES[i - 2].strip(), r.summary())
        assert {d.kind for d in r.diagnostics} == {"sync"}, [str(d) for d in r.diagnostics]
