"""Helpers for the scheduling tests: parse procs from text, run two procs on the same
random inputs with the sequential interpreter, compare bitwise or approximately."""

from __future__ import annotations

import numpy as np

from exogpu_verify import interpret
from exogpu_verify import parse_proc_source
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import const_value
from exogpu_verify.schedule.irtools import subst


def P(src: str, env=None) -> N.Procedure:
    return parse_proc_source(src, env or {})


def _shape(p, prm, sizes):
    env = {k: N.Const(v, prm.type.shape[0].type if prm.type.shape else None)
           for k, v in sizes.items()}
    out = []
    for e in prm.type.shape:
        v = const_value(subst(e, env))
        assert v is not None, f"cannot size {prm.name}"
        out.append(v)
    return tuple(out)


def inputs(p, sizes, seed=0):
    rng = np.random.default_rng(seed)
    args = dict(sizes)
    for prm in p.params:
        if prm.is_data:
            shp = _shape(p, prm, sizes)
            dt = prm.type.scalar.np_dtype
            if np.issubdtype(dt, np.floating) or prm.type.scalar.name == "bf16":
                a = rng.standard_normal(shp).astype(dt)
            else:
                a = rng.integers(-5, 6, shp).astype(dt)
            args[prm.name] = a
    return args


def run(p, args):
    a = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    interpret(p, **a)
    return a


def same(p0, p1, sizes, seed=0, bitwise=True, rtol=1e-4, atol=1e-4):
    """Run ``p0`` and ``p1`` on the same inputs; assert equal outputs."""
    args = inputs(p0, sizes, seed)
    r0, r1 = run(p0, args), run(p1, args)
    for prm in p0.params:
        if prm.is_data:
            a, b = r0[prm.name], r1[prm.name]
            if bitwise:
                assert a.tobytes() == b.tobytes(), f"{prm.name} differs:\n{a}\n{b}"
            else:
                np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def last(p):
    return p.provenance[-1]
