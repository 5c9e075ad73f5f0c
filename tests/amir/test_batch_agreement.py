"""Batched access nests (``exogpu_verify/amir/batch.py``) change no verdict and no report.

Every program is checked with batching on and off (both with task reuse), and

* ``check_sync_concrete`` must give identical verdicts, reasons, diagnostics (kind, message,
  line, notes) and witnesses;
* the batched machine by itself (before ``check.py`` re-runs a failure element by element
  for its report) must fail exactly when the per-element machine fails, and count the same
  statement instances when neither does.

Programs: the generated symbolic/concrete agreement corpus at its sampled sizes, the oracle
corpus, a corpus of random scalar-nest kernels (``progs/nest_gen.py``: thread layouts,
seq loops, windows, atomics, warp-level syncs that split batched records, ifs), and the
shipped specs and examples at their ``VERIFY_SIZES``. The corpora must exercise batching
(most programs batch a nest) and mix verdicts.
"""

from __future__ import annotations

import collections
import random

import pytest

from exogpu_verify.amir import check_sync_concrete, interp
from exogpu_verify.amir.convert import lower_to_amir
from exogpu_verify.analysis import analyze_static
from exogpu_verify.frontend import parse_proc_source
from exogpu_verify.ir.nodes import Procedure
from testlib import ROOT, load_path


def _outcome(p, sizes, batch: bool):
    saved = interp.BATCH_NESTS
    interp.BATCH_NESTS = batch
    try:
        verdict, diags, witness, reason = check_sync_concrete(p, dict(sizes))
    finally:
        interp.BATCH_NESTS = saved
    return (verdict, reason,
            [(d.kind, d.message, d.line, tuple(d.notes)) for d in diags],
            None if witness is None else (witness.first, witness.second, witness.missing))


def _machine(p, sizes, batch: bool):
    m = interp.Machine(lower_to_amir(p), dict(sizes), batch=batch)
    try:
        m.run()
    except (interp.Hazard, interp.CheckError) as e:
        return m, type(e).__name__
    return m, None


class Tally:
    def __init__(self):
        self.verdicts = collections.Counter()
        self.batched = 0
        self.runs = 0

    def same(self, p, sizes):
        a = _outcome(p, sizes, True)
        b = _outcome(p, sizes, False)
        assert a == b, (p.name, sizes, a, b)
        mb, eb = _machine(p, sizes, True)
        me, ee = _machine(p, sizes, False)
        assert eb == ee, (p.name, sizes, eb, ee)
        if eb is None:
            assert mb.steps == me.steps, (p.name, sizes, mb.steps, me.steps)
        self.runs += 1
        self.batched += mb.batched_nests > 0
        self.verdicts[a[0]] += 1
        return a[0]


def test_nest_corpus_agrees(prog_loader):
    gen = prog_loader("amir/progs/nest_gen.py")
    t = Tally()
    for n in range(60):
        src, sizes = gen.generate(random.Random(n))
        p = parse_proc_source(src, dict(gen.ENV), file=f"<nest-{n}>")
        t.same(p, sizes)
    assert t.verdicts["checked"] >= 10 and t.verdicts["refuted"] >= 10, t.verdicts
    # (warp-level statements on SMEM are part records, never batched: batch.py)
    assert t.batched >= 0.7 * t.runs, (t.batched, t.runs)


@pytest.mark.slow
def test_nest_corpus_agrees_large(prog_loader):
    gen = prog_loader("amir/progs/nest_gen.py")
    t = Tally()
    for n in range(60, 400):
        src, sizes = gen.generate(random.Random(n))
        p = parse_proc_source(src, dict(gen.ENV), file=f"<nest-{n}>")
        t.same(p, sizes)
    assert t.verdicts["checked"] >= 50, t.verdicts


def _generated(count: int):
    G = load_path(ROOT / "tests" / "symbolic" / "progs" / "generator.py", "exogpu_symtests")
    for gp in G.generate(count, 20261):
        p = G.parse(gp)
        if not analyze_static(p):
            for sizes in gp.sizes:
                yield p, sizes


def test_generated_corpus_agrees():
    t = Tally()
    for p, sizes in _generated(30):
        t.same(p, sizes)
    assert t.verdicts["checked"] and t.verdicts["refuted"], t.verdicts
    assert t.batched >= 0.5 * t.runs, (t.batched, t.runs)


@pytest.mark.slow
def test_generated_corpus_agrees_large():
    t = Tally()
    for p, sizes in _generated(150):
        t.same(p, sizes)
    assert t.batched >= 0.5 * t.runs, (t.batched, t.runs)


def test_oracle_corpus_agrees(prog_loader):
    gen = prog_loader("amir/progs/oracle_gen.py")
    t = Tally()
    for n in range(40):
        src, sizes, _ = gen.generate(random.Random(n))
        p = parse_proc_source(src, dict(gen.ENV), file=f"<oracle-random-{n}>")
        t.same(p, sizes)
    assert t.batched >= 0.5 * t.runs, (t.batched, t.runs)


def _shipped():
    out = []
    for folder in ("specs", "examples"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            mod = load_path(f, "exogpu_batch_shipped")
            sizes = getattr(mod, "VERIFY_SIZES", None)
            if not sizes:
                continue
            for v in vars(mod).values():
                if isinstance(v, Procedure) and not v.is_instr and v.module is vars(mod) \
                        and all(p.name in sizes for p in v.params if not p.is_data):
                    # the per-element run of the scheduled matmul takes ~30 s
                    marks = [pytest.mark.slow] if "scheduling" in f.parts else []
                    out.append(pytest.param(v, {k: x for k, x in sizes.items() if v.param(k)},
                                            id=f"{f.stem}.{v.name}", marks=marks))
    return out


@pytest.mark.parametrize("p,sizes", _shipped())
def test_shipped_programs_agree(p, sizes):
    Tally().same(p, sizes)
