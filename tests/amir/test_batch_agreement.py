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

from exogpu_verify.loader import module_procs
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
    for p, sizes in _generated(12):  # 150 in the slow step
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


def _prog_modules():
    """The hand-written programs of ``tests/amir/progs`` and ``tests/symbolic/progs``, with the
    arguments and sizes their tests use."""
    mp = load_path(ROOT / "tests" / "amir" / "progs" / "machine_progs.py", "exogpu_batch_mp")
    op = load_path(ROOT / "tests" / "amir" / "progs" / "oracle_progs.py", "exogpu_batch_op")
    ar = load_path(ROOT / "tests" / "symbolic" / "progs" / "alternating_ring.py",
                   "exogpu_batch_ar")
    out = []
    for order in ("raw", "war", "waw"):
        for fence in ("none", "cta", "warp"):
            out.append((f"two_warps-{order}-{fence}", lambda o=order, f=fence:
                        mp.two_warps(o, f), {"N": 2}))
    for k, a in {"in_warp": (False,), "in_warp_fenced": (True,), "in_warp_same": (False, 0),
                 "in_warp_no_free_fence": (True, 1, False)}.items():
        out.append((k, lambda a=a: mp.in_warp(*a), {"N": 2}))
    for k, kw in {"ring": {}, "ring_no_war": {"await_war": False}, "ring_pre0": {"pre": 0},
                  "ring_off1": {"off": 1}, "ring_no_final": {"final": False}}.items():
        out.append((k, lambda kw=kw: mp.ring(**kw), {"K": 6}))
    for t in ("slice", "two", "one"):
        out.append((f"multicast-{t}", lambda t=t: mp.multicast(t), {"N": 2}))
    for d in (0, 1, 2):
        out.append((f"commit_groups-{d}", lambda d=d: mp.commit_groups(d), {"K": 5}))
    for c in ("cluster", "fence", "cta"):
        out.append((f"cluster_pair-{c}", lambda c=c: mp.cluster_pair(c), {"N": 2}))
    for a in ("atomic", "write"):
        out.append((f"atomics-{a}", lambda a=a: mp.atomics(a), {"N": 2}))
    out.append(("out_of_bounds", lambda: mp.out_of_bounds, {"N": 2}))
    out.append(("two_arrive_statements", lambda: op.two_arrive_statements, {"T": 2}))
    out.append(("mixed_precision", lambda: op.mixed_precision, {"N": 64}))
    out.append(("never_arrived", lambda: op.never_arrived, {"T": 2}))
    for name in ("alternating_ring", "alternating_ring_bad"):
        p = getattr(ar, name)
        sizes = {prm.name: 4 for prm in p.params if not prm.is_data}
        out.append((name, lambda p=p: p, sizes))
    return out


def test_prog_modules_agree():
    t = Tally()
    for name, make, sizes in _prog_modules():
        p = make()
        t.same(p, {k: v for k, v in sizes.items() if p.param(k)})
    assert t.verdicts["checked"] and t.verdicts["refuted"], t.verdicts
    assert t.batched >= 0.5 * t.runs, (t.batched, t.runs)


def _shipped():
    out = []
    for folder in ("specs", "examples"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            mod = load_path(f, "exogpu_batch_shipped")
            sizes = getattr(mod, "VERIFY_SIZES", None)
            if not sizes:
                continue
            for v in module_procs(mod):
                if all(p.name in sizes for p in v.params if not p.is_data):
                    # their per-element runs take 10-50 s of CPU each (the scheduled
                    # matmul, the GEMVs, the fixed async chain): the slow step checks them
                    heavy = "scheduling" in f.parts or f.stem == "gemv" or \
                        v.name == "async_transitive_fixed"
                    marks = [pytest.mark.slow] if heavy else []
                    out.append(pytest.param(v, {k: x for k, x in sizes.items() if v.param(k)},
                                            id=f"{f.stem}.{v.name}", marks=marks))
    return out


@pytest.mark.parametrize("p,sizes", _shipped())
def test_shipped_programs_agree(p, sizes):
    Tally().same(p, sizes)
