"""Assertions shared by the synchronization-rule tests (``test_rule_*.py``): every program is
checked by both checkers, which must agree (symbolic ``proven`` => concrete ``checked`` at
each sampled size; symbolic ``refuted`` => the concrete replay at the witness sizes finds
the same hazard at the same line)."""

from __future__ import annotations

from exogpu_verify import verify
from exogpu_verify.amir import check_sync_concrete
from exogpu_verify.analysis import analyze_static
from symbolic_helpers import parse


def line_of(src: str, snippet: str, nth: int = 0) -> int:
    hits = [i + 1 for i, ln in enumerate(src.splitlines()) if snippet in ln]
    assert len(hits) > nth, (snippet, hits)
    return hits[nth]


def program(src: str, env: dict | None = None):
    p = parse(src, **(env or {}))
    static = analyze_static(p)
    assert static == [], [d.message for d in static]
    return p


def proven(src: str, sizes: list[dict], env: dict | None = None):
    """Both checkers accept: proven for all sizes, checked at each of ``sizes``."""
    p = program(src, env)
    r = verify(p, mode="symbolic")
    assert r.verdict == "proven", r.summary()
    for sz in sizes:
        v, diags, _w, reason = check_sync_concrete(p, sz)
        assert v == "checked", (sz, reason, diags and diags[0].message)
    return p


def concrete_only(src: str, sizes: list[dict], env: dict | None = None):
    """Accepted by the concrete checker at ``sizes``; the symbolic checker may not encode the
    ordering (``unknown``) but must never refute it."""
    p = program(src, env)
    r = verify(p, mode="symbolic")
    assert r.verdict in ("proven", "unknown"), r.summary()
    for sz in sizes:
        v, diags, _w, reason = check_sync_concrete(p, sz)
        assert v == "checked", (sz, reason, diags and diags[0].message)
    return p, r


def refuted(src: str, snippet: str, hazard: str, sizes: dict, hint: str | None = None,
            earlier: str | None = None, nth: int = 0, env: dict | None = None,
            kind: str = "sync"):
    """Both checkers refute: the all-size check finds ``sizes`` as the smallest failing sizes
    and the diagnostic (of ``kind``) is at the line of ``snippet``, naming ``hazard``; the
    concrete check at those sizes says the same. Returns the diagnostic."""
    p = program(src, env)
    r = verify(p)
    assert r.verdict == "refuted", r.summary()
    assert r.sizes == sizes, (r.sizes, r.reason)
    d = r.diagnostics[0]
    assert d.kind == kind, d.message
    assert hazard in d.message, d.message
    assert d.line == line_of(src, snippet, nth), (d.line, d.message)
    if earlier is not None:
        assert d.secondary and d.secondary[0].srcinfo.line == line_of(src, earlier), d.message
    if hint is not None:
        assert hint in (d.hint or ""), d.hint
    v, diags, _w, _reason = check_sync_concrete(p, sizes)
    assert v == "refuted" and diags[0].line == d.line and diags[0].message == d.message
    return d


def _extent(e, sizes: dict) -> int:
    from exogpu_verify.amir.evaluate import ev

    return int(ev(e, dict(sizes)))


def oracle_same(p, sizes: dict, seeds: int = 3) -> None:
    """The randomized parallel oracle (``amir/oracle.py``: random interleavings, async
    completion at random points; proxies are not modelled) gives the sequential result in
    every sample: the synchronization the checkers accepted orders the accesses."""
    import numpy as np

    from exogpu_verify import interpret
    from exogpu_verify.amir.oracle import run_parallel

    rng = np.random.default_rng(0)
    args = {}
    for q in p.params:
        if not q.is_data:
            args[q.name] = sizes[q.name]
            continue
        shape = tuple(_extent(e, sizes) for e in q.type.shape)
        args[q.name] = np.asarray(rng.standard_normal(shape)).astype(q.type.scalar.np_dtype)
    seq = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    interpret(p, **seq)
    for seed in range(seeds):
        par = run_parallel(p, args, seed)
        for k, v in seq.items():
            if isinstance(v, np.ndarray):
                assert par[k].tobytes() == v.tobytes(), (p.name, k, seed)
