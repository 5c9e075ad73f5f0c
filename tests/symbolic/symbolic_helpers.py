"""Helpers for the symbolic-checker tests: loading shipped programs, sampling sizes that satisfy
a proc's asserts, and comparing the symbolic verdict with the concrete one.

Agreement rule (issue 5, "Agreement"): ``proven`` => the concrete check says ``checked`` at
every sampled size; ``refuted`` (symbolic, replayed by ``verify``) => the concrete check at
the witness sizes says ``refuted``; ``unknown`` is allowed but counted.
"""

from __future__ import annotations

from testlib import load_path as _load_path
from testlib import concrete_cached, verify_cached

import itertools
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from exogpu_verify.amir import check_sync_concrete
from exogpu_verify.frontend import parse_proc_source
from exogpu_verify.ir.nodes import Procedure

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def load_path(path: Path, prefix: str = "exogpu_symtests"):
    """Import a file by path once (``@proc`` needs its source on disk)."""
    return _load_path(path, prefix)


def generator():
    return load_path(HERE / "progs" / "generator.py")


def instrs():
    return load_path(HERE / "progs" / "instrs.py")


def parse(src: str, **env) -> Procedure:
    """Parse kernel text with the placeholder instructions of ``progs/instrs.py`` in scope."""
    e = dict(instrs().ENV)
    e.update(env)
    return parse_proc_source(src, e)


def procs_in(mod) -> list[tuple[str, Procedure]]:
    out, seen = [], set()
    for n, p in vars(mod).items():
        if isinstance(p, Procedure) and not p.is_instr and id(p) not in seen:
            seen.add(id(p))
            out.append((n, p))
    return out


def shipped_procs() -> list[tuple[str, Procedure]]:
    """Every module-level proc of examples/ (recursively) and specs/, as (id, proc)."""
    out = []
    files = sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "specs").glob("*.py"))
    for f in files:
        mod = load_path(f)
        for n, p in procs_in(mod):
            out.append((f"{f.relative_to(ROOT)}::{n}", p))
    return out


# ------------------------------------------------------------------ size sampling
_MOD = re.compile(r"^\s*(\w+)\s*%\s*(\d+)\s*==\s*0\s*$")


def _moduli(p: Procedure) -> dict:
    from exogpu_verify.ir.printer import expr_str

    mods = {}
    for pred in p.preds:
        m = _MOD.match(expr_str(pred))
        if m:
            mods[m.group(1)] = max(mods.get(m.group(1), 1), int(m.group(2)))
    return mods


def satisfies(p: Procedure, sizes: dict) -> bool:
    from exogpu_verify.amir.interp import ev

    for pred in p.preds:
        try:
            if not ev(pred, dict(sizes)):
                return False
        except Exception:  # stride asserts and the like: not decided by sizes
            continue
    return True


def sample_sizes(p: Procedure, k: int = 4, extra: tuple = ()) -> list[dict]:
    """Up to ``k`` size dicts satisfying ``p``'s asserts: the smallest, the module's
    VERIFY_SIZES, then mixed multiples of the asserted moduli (3 and 5 units reach beyond a
    2-deep ring)."""
    names = list(p.size_params())
    if not names:
        return [{}]
    mods = _moduli(p)
    unit = {n: mods.get(n, 1) for n in names}
    cands = [{n: unit[n] for n in names}]
    vs = (p.module or {}).get("VERIFY_SIZES") if isinstance(p.module, dict) else None
    if isinstance(vs, dict) and all(n in vs for n in names):
        cands.append({n: vs[n] for n in names})
    cands += list(extra)
    for mult in ((1, 3, 2), (2, 1, 3), (3, 2, 1), (1, 5, 1), (5, 1, 5)):
        cands.append({n: unit[n] * mult[i % 3] for i, n in enumerate(names)})
    out = []
    for c in cands:
        if c not in out and satisfies(p, c):
            out.append(c)
    return out[:k]


# ------------------------------------------------------------------ agreement
@dataclass
class Outcome:
    name: str
    verdict: str  # symbolic verdict through verify(auto): proven | refuted | unknown
    reason: str = ""
    witness_sizes: dict | None = None
    concrete: dict = field(default_factory=dict)  # sizes tuple -> (verdict, reason)
    disagreement: str = ""
    not_smallest: list = field(default_factory=list)
    obligations: int = 0
    unknown_kind: str = ""
    family: str = ""
    known: str | None = None  # a pinned disagreement class (test_agreement.py)


def _key(sizes: dict) -> tuple:
    return tuple(sorted(sizes.items()))


def _volume(sizes: dict) -> int:
    v = 1
    for x in sizes.values():
        v *= max(1, int(x))
    return v


def check_agreement(name: str, p: Procedure, sizes: list[dict], budget_s: float = 1e9,
                    first_s: float = 1e9) -> Outcome:
    """Run ``verify(p)`` (auto, no sizes: symbolic, with concrete replay of a refutation)
    and the concrete checker at ``sizes`` (smallest first; the first size gets ``first_s``
    seconds, the others share ``budget_s``; a size that runs out of time is recorded as
    ``unknown`` and does not count); fill in an :class:`Outcome`."""
    r = verify_cached(p)
    o = Outcome(name, r.verdict, r.reason)
    if r.verdict == "checked":  # auto mode fell back to VERIFY_SIZES: symbolic undecided
        o.verdict = "unknown"
        o.unknown_kind = "fallback to VERIFY_SIZES"
    end = time.perf_counter() + budget_s
    for i, sz in enumerate(sorted(sizes, key=_volume)):
        now = time.perf_counter()
        if i and now >= end:
            break
        if budget_s >= 1e9 and first_s >= 1e9:     # no time limit: shared with other tests
            v, diags, _w, reason = concrete_cached(p, sz)
        else:
            dl = now + (first_s if i == 0 else max(0.0, end - now))
            v, diags, _w, reason = check_sync_concrete(p, dict(sz), deadline=dl)
        o.concrete[_key(sz)] = (v, reason)
    if o.verdict == "proven":
        o.obligations = len(r.extra.get("obligations", ()))
        bad = {k: v for k, v in o.concrete.items() if v[0] == "refuted"}
        if bad:
            o.disagreement = (f"{name}: symbolic PROVEN but concrete says "
                              + "; ".join(f"{dict(k)}: {v[0]} ({v[1][:120]})"
                                          for k, v in bad.items()))
    elif o.verdict == "refuted":
        if r.sizes is None:
            o.disagreement = f"{name}: refuted without witness sizes ({r.reason})"
            return o
        o.witness_sizes = dict(r.sizes)
        v, _d, _w, reason = concrete_cached(p, r.sizes)
        o.concrete[_key(r.sizes)] = (v, reason)
        if v != "refuted":
            o.disagreement = (f"{name}: symbolic REFUTED at {r.sizes} but concrete says {v} "
                              f"({reason})")
        # is the witness the smallest failing size among those sampled?
        wk = _key(r.sizes)
        for k, (cv, _) in o.concrete.items():
            if cv == "refuted" and k != wk and all(a[1] <= b[1] for a, b in zip(k, wk)):
                o.not_smallest.append(dict(k))
    else:
        o.unknown_kind = o.unknown_kind or _unknown_kind(r.reason)
    return o


def _unknown_kind(reason: str) -> str:
    if "found no hazard" in reason:
        m = re.search(r"obligation '([^']*?)(?: \(line \d+\))?' not discharged", reason)
        what = m.group(1) if m else "?"
        what = re.sub(r"[:(].*", "", what).strip()
        return f"refutation not replayed ({what})"
    m = re.search(r"inconclusive \((.*?)\)", reason)
    return (m.group(1) if m else reason)[:80]


def summarize(outcomes: list[Outcome]) -> dict:
    counts = {"proven": 0, "refuted": 0, "unknown": 0}
    for o in outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    return counts


def product_sizes(**axes) -> list[dict]:
    names = list(axes)
    return [dict(zip(names, vals)) for vals in itertools.product(*axes.values())]


def checked_sizes(o: Outcome) -> list[dict]:
    """Sizes at which the concrete check finished with 'checked'."""
    return [dict(k) for k, v in o.concrete.items() if v[0] == "checked"]
