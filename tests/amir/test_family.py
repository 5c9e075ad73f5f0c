"""A ``Family`` (``exogpu_verify/amir/family.py``) behaves exactly like the point records it
stands for: random sequences of synchronizations (split first where the machine would),
checks, supersedes and free checks are applied to a family and, with ``Record``'s own
methods, to its member records one by one; after every step the live members, their flags
and every answer must be the same. (If the rules of ``Record`` change, this is the test that
says whether families still follow them.)"""

from __future__ import annotations

import random

import numpy as np
import pytest

from exogpu_verify.amir.family import Family
from exogpu_verify.amir.machine import ALL, ATOMIC, FULL, ISSUE, TEMPORAL, Record

QUALS = tuple(range(6))
TASK, OTHER = 3, 4


class _VS:
    name = "x"


def _random_family(rng):
    """A family over a 2-D hull and the reference records of its members."""
    masks = []
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.6:
            masks.append(1 << rng.randrange(64))
        else:
            lo = 8 * rng.randrange(8)
            masks.append(((1 << rng.choice([4, 8])) - 1) << lo)
    masks = list(dict.fromkeys(masks))
    hull = ((2, 2 + rng.randint(1, 4)), (5, 5 + rng.randint(1, 4)))
    shape = tuple(b - a for a, b in hull)
    vol = shape[0] * shape[1]
    # instances: (flat element, mask id); an element is live with one mask, or several
    inst = []
    for e in range(vol):
        r = rng.random()
        if r < 0.25:
            continue
        ks = rng.sample(range(len(masks)), rng.randint(2, len(masks))) if r > 0.85 and \
            len(masks) > 1 else [rng.randrange(len(masks))]
        inst += [(e, k) for k in ks]
    if not inst:
        inst = [(0, 0)]
    ids = np.full(vol, -1, np.int32)
    multi = False
    for e in {e for e, _ in inst}:
        ks = {k for x, k in inst if x == e}
        ids[e] = ks.pop() if len(ks) == 1 else -2
        multi |= ids[e] == -2
    lin = np.array([e for e, _ in inst], np.int64)
    mid = np.array([k for _, k in inst], np.int32)
    q0 = rng.choice(QUALS)
    in_order = rng.random() < 0.8
    selfkeys = [(q0, f) for f in range(4)] if in_order else [(q0, ISSUE)]
    mutate = rng.random() < 0.6
    f = Family(_VS(), hull, ids.reshape(shape), mutate, False, None, frozenset(QUALS), TASK,
               selfkeys, masks, sorted(set(mid.tolist())), lin if multi else None,
               mid if multi else None)
    refs = []
    for e, k in sorted(set(inst)):
        idx = tuple(int(x) + h[0] for x, h in zip(np.unravel_index(e, shape), hull))
        r = Record(tuple((x, x + 1) for x in idx), mutate, False, None, frozenset(QUALS), "x")
        r.flags = {key: {TASK: masks[k]} for key in selfkeys}
        refs.append((idx, k, r))
    return f, refs, masks


def _members(fams):
    out = {}
    for f in fams:
        for idx, k in f.members_in():
            assert (idx, k) not in out
            out[(idx, k)] = f.member(k).flags
    return out


def _same(fams, refs):
    got = _members(fams)
    want = {(idx, k): r.flags for idx, k, r in refs}
    assert got.keys() == want.keys()
    for key, fl in want.items():
        norm = {k: v for k, v in fl.items() if v}
        assert {k: v for k, v in got[key].items() if v} == norm, key


def _box(rng):
    return ((rng.randint(0, 6), rng.randint(6, 10)), (rng.randint(3, 7), rng.randint(7, 11)))


def _bits(rng):
    return tuple(sorted(rng.sample(QUALS, rng.randint(0, 3))))


def _mask(rng, masks):
    r = rng.random()
    if r < 0.3:
        return (1 << 64) - 1
    if r < 0.6:
        return rng.choice(masks)
    if r < 0.8:
        return ((1 << 32) - 1) << rng.choice([0, 32])
    return rng.getrandbits(64) or 1


@pytest.mark.parametrize("seed", range(300))
def test_family_follows_its_member_records(seed):
    rng = random.Random(seed)
    f, refs, masks = _random_family(rng)
    fams = [f]
    _same(fams, refs)
    for _ in range(12):
        op = rng.random()
        if op < 0.45:  # a synchronization: catch (sync_level), then grant (augment)
            task = rng.choice([TASK, TASK, OTHER, ALL])
            mask = -1 if task == ALL else _mask(rng, masks)
            full1, temp1 = frozenset(_bits(rng)), _bits(rng)
            full2, temp2 = _bits(rng), _bits(rng)
            for g in list(fams):  # what batch.prepare_sync does
                if not g.uniform_for(task, mask):
                    part = g.split({k for k in g.mids if masks[k] & mask})
                    if part is not None:
                        fams.append(part)
            for g in fams:
                lvl = g.sync_level(task, mask, full1, temp1)
                if lvl is not None:
                    g.augment(task, mask, full2, temp2, lvl)
            for _, _, r in refs:
                lvl = r.sync_level(task, mask, full1, temp1)
                if lvl is not None:
                    r.augment(task, mask, full2, temp2, lvl)
        elif op < 0.75:  # a check on a box (batch._pair_ok / Family.has's answers)
            from exogpu_verify.amir.batch import _pair_ok

            box = _box(rng)
            flag = rng.choice([ATOMIC, TEMPORAL, FULL])
            quals = _bits(rng) or (0,)
            task = rng.choice([TASK, TASK, OTHER])
            mask = _mask(rng, masks)
            conv = rng.random() < 0.3
            want = all(r.has(flag, quals, task, mask, conv) for idx, _, r in refs
                       if all(lo <= x < hi for x, (lo, hi) in zip(idx, box)))
            got = True
            for g in fams:
                reg = g.region(box)
                if reg is None:
                    continue
                got &= all(_pair_ok(g, k, flag, quals, task, mask, conv)
                           for k in g.live_mids(reg))
            assert got == want
        elif op < 0.9:  # supersede a box
            box = _box(rng)
            for g in fams:
                reg = g.region(box)
                if reg is not None:
                    g.kill(reg)
            refs = [x for x in refs
                    if not all(lo <= i < hi for i, (lo, hi) in zip(x[0], box))]
        else:  # the free check: every live member
            flag = TEMPORAL
            quals = _bits(rng) or (1,)
            mask = _mask(rng, masks)
            want = all(r.has(flag, quals, TASK, mask, False) for _, _, r in refs)
            assert all(g.has(flag, quals, TASK, mask, False) for g in fams
                       if g.is_live()) == want
        fams = [g for g in fams if g.is_live()]
        _same(fams, refs)


def _random_generic_family(rng):
    """A family of one-thread generic-proxy records (first qual c2, as batch.py makes them),
    not yet proxy-fenced, and the reference records of its members."""
    from exogpu_verify.amir.machine import Event
    from exogpu_verify.ir.timelines import QUAL_TLS

    q0 = QUAL_TLS["c2"].bit
    masks = list(dict.fromkeys(1 << rng.randrange(64) for _ in range(rng.randint(2, 6))))
    hull = ((0, rng.randint(1, 4)), (0, rng.randint(1, 4)))
    shape = tuple(b - a for a, b in hull)
    vol = shape[0] * shape[1]
    ids = np.array([rng.randrange(len(masks)) if rng.random() < 0.8 else -1
                    for _ in range(vol)], np.int32)
    if not (ids >= 0).any():
        ids[0] = 0
    selfkeys = [(q0, f) for f in range(4)]
    mutate = rng.random() < 0.6
    mids = sorted({int(k) for k in ids if k >= 0})
    f = Family(_VS(), hull, ids.reshape(shape), mutate, False, None, GQUALS, TASK, selfkeys,
               masks, mids)
    f.prx = f.union
    refs = []
    for e in range(vol):
        k = int(ids[e])
        if k < 0:
            continue
        idx = tuple(int(x) + h[0] for x, h in zip(np.unravel_index(e, shape), hull))
        ev = Event(None, "x", TASK, masks[k], (), {})
        r = Record(tuple((x, x + 1) for x in idx), mutate, False, ev, GQUALS, "x")
        r.flags = {key: {TASK: masks[k]} for key in selfkeys}
        r.prx = masks[k]
        refs.append((idx, k, r))
    return f, refs, masks


def _gq():
    from exogpu_verify.ir.timelines import QUAL_TLS

    return frozenset(QUAL_TLS[n].bit for n in ("c1", "c2", "mbar", "sm80", "g2s", "aret"))


GQUALS = _gq()


@pytest.mark.parametrize("seed", range(200))
def test_generic_family_follows_its_member_records(seed):
    # the proxy state: Fences (some of them proxy Fences) catch and fence the members as
    # Machine.fence does for records; the view (aret) and prx must follow each member's
    rng = random.Random(seed)
    f, refs, masks = _random_generic_family(rng)
    fams = [f]
    bits = sorted(GQUALS)
    for _ in range(10):
        task = rng.choice([TASK, TASK, TASK, OTHER, ALL])
        mask = -1 if task == ALL else _mask(rng, masks)
        full1 = frozenset(rng.sample(bits, rng.randint(0, 3)))
        temp1 = tuple(sorted(set(rng.sample(bits, rng.randint(0, 3))) | full1))
        full2 = tuple(sorted(rng.sample(bits, rng.randint(0, 4))))
        temp2 = tuple(sorted(set(rng.sample(bits, rng.randint(0, 3))) | set(full2)))
        proxy = rng.random() < 0.5
        for g in list(fams):  # batch.prepare_sync
            if not g.uniform_for(task, mask):
                part = g.split({k for k in g.mids if masks[k] & mask})
                if part is not None:
                    fams.append(part)
        for g in fams + [r for _, _, r in refs]:  # Machine.fence
            lvl = g.sync_level(task, mask, full1, temp1)
            if lvl is None:
                continue
            g.augment(task, mask, full2, temp2, lvl)
            if g.prx is not None and lvl & 3 == FULL:
                g.fenced(task, mask, proxy, None)
        fams = [g for g in fams if g.is_live()]
        _same(fams, refs)
        for idx, k, r in refs:
            g = next(g for g in fams if (idx, k) in g.members_in())
            assert (g.member(k).prx == 0) == (r.prx == 0), (idx, k)
