"""Batched access nests under the synchronization rules of issue 11 (part records, proxies,
frees of memory the async proxy reuses, wgmma registers, persistent kernels): the programs
of the rule tests (``tests/symbolic/test_rule_*.py``: accepted forms and their refuted twins,
many with the generic accesses in batched nests) at the sizes those tests check them must get
the same verdict and report with batching on and off (``test_batch_agreement.Tally``)."""

from __future__ import annotations

import inspect
import sys
from unittest.mock import MagicMock

import pytest

from testlib import ROOT, load_path

SYM = ROOT / "tests" / "symbolic"
RULES = ("test_rule_collective", "test_rule_persistent", "test_rule_proxy", "test_rule_wgmma")


def _collect(module: str) -> list:
    """(source, env, sizes) of the programs the module's unparametrized tests check."""
    if str(SYM) not in sys.path:
        sys.path.insert(0, str(SYM))
    mod = load_path(SYM / f"{module}.py", f"exogpu_batch_{module}")
    seen: list = []

    # the helpers record their program and return stand-ins, so that a test goes on to its
    # next program; it stops where it inspects a stand-in (its assertions are not ours)
    def proven(src, sizes, env=None):
        seen.append((src, env, list(sizes)))
        return MagicMock()

    def concrete_only(src, sizes, env=None):
        seen.append((src, env, list(sizes)))
        return MagicMock(), MagicMock()

    def refuted(src, snippet, hazard, sizes, *a, env=None, **k):
        seen.append((src, env, [sizes]))
        return MagicMock()

    import rule_helpers

    fakes = {id(getattr(rule_helpers, n)): fn for n, fn in
             (("proven", proven), ("concrete_only", concrete_only), ("refuted", refuted))}
    saved = {name: v for name, v in vars(mod).items() if id(v) in fakes}
    try:
        for name, v in saved.items():  # (aliases too: test_rule_wgmma's _proven)
            setattr(mod, name, fakes[id(v)])
        for name, fn in sorted(vars(mod).items()):
            if not name.startswith("test_") or not callable(fn):
                continue
            if any(p.default is inspect.Parameter.empty
                   for p in inspect.signature(fn).parameters.values()):
                continue  # parametrized: its programs are variants of the others'
            try:
                fn()
            except Exception:  # noqa: BLE001 - the test's use of a stand-in
                pass
    finally:
        for name, v in saved.items():
            setattr(mod, name, v)
    return seen


def _programs():
    out = []
    for module in RULES:
        for n, (src, env, sizes) in enumerate(_collect(module)):
            for sz in sizes:
                out.append(pytest.param(src, env, sz, id=f"{module}-{n}-{sz}"))
    return out


@pytest.mark.parametrize("src,env,sizes", _programs())
def test_rule_programs_agree(src, env, sizes):
    from rule_helpers import program
    from test_batch_agreement import Tally

    Tally().same(program(src, env), sizes)


def test_rule_programs_exercise_batching():
    # the corpus above must batch nests next to the rules' statements, in both outcomes
    from rule_helpers import program

    from exogpu_verify.amir import interp
    from exogpu_verify.amir.convert import lower_to_amir

    runs = batched = 0
    outcomes = set()
    for p in _programs():
        src, env, sizes = p.values
        m = interp.Machine(lower_to_amir(program(src, env)), dict(sizes))
        try:
            m.run()
            failed = False
        except (interp.Hazard, interp.CheckError):
            failed = True
        runs += 1
        if m.batched_nests:
            batched += 1
            outcomes.add(failed)
    assert batched >= 0.6 * runs and outcomes == {True, False}, (batched, runs, outcomes)
