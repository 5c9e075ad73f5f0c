"""Helpers for the precondition tests (bounds, argument shapes, instruction and resource
preconditions): parse a program from text, then check that both checkers agree on the
verdict, the diagnostic kind and the line (marked ``# <-`` in the text).

``refuted_both`` runs ``verify(p)`` (all sizes: static analyses, then the symbolic checker,
whose counterexample is replayed concretely) and ``verify(p, sizes=...)`` (the concrete
machine); ``accepted_both`` requires ``proven`` and ``checked``.
"""

from __future__ import annotations

import textwrap

from analysis_helpers import ENV, marked_line

from exogpu_verify import verify
from exogpu_verify import parse_proc_source
from exogpu_verify.ir.types import bf16, f32
from exogpu_verify.platforms.sm90 import (Sm90_RmemMatrixD, Sm90_tma_load, Sm90_tma_multicast,
                                          Sm90_tma_store, Sm90_wgmma_ss, Sm90_wgmma_zero)

PRE_INSTRS = '''
@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def copy_n(n: size, dst: [f32][n] @ CudaGmemLinear, src: [f32][n] @ CudaGmemLinear):
    for i in seq(0, n):
        dst[i] = src[i]
'''

SM90 = {
    "tma_load": Sm90_tma_load(2, bf16), "tma_store": Sm90_tma_store(2, bf16),
    "tma_load_f32": Sm90_tma_load(2, f32), "tma_mc2": Sm90_tma_multicast(2, bf16, 2),
    "wgmma": Sm90_wgmma_ss(bf16, 64), "wgmma_mn_a": Sm90_wgmma_ss(bf16, 64, major_a="MN"),
    "wgmma_zero": Sm90_wgmma_zero(64), "Sm90_RmemMatrixD": Sm90_RmemMatrixD,
}


def parse(src: str, **env):
    copy_n = parse_proc_source(PRE_INSTRS)
    return parse_proc_source(textwrap.dedent(src).strip("\n"),
                             {**ENV, "copy_n": copy_n, **SM90, **env})


def _diag(r):
    assert r.verdict == "refuted", (r.verdict, r.reason)
    assert r.diagnostics, r.reason
    return r.diagnostics[0]


def refuted_both(src: str, kind: str, sizes: dict | None, contains: str | None = None,
                 static: bool | None = None, **env):
    """Both checkers refute ``src`` with ``kind`` at the marked line (``sizes``: the concrete
    sizes, None for a static finding, which ``verify`` reports the same way in every mode).
    ``static``: whether the static analyses must be the ones to find it."""
    p = parse(src, **env)
    line = marked_line(src)
    r = verify(p)
    d = _diag(r)
    assert (d.kind, d.line) == (kind, line), str(d)
    if contains is not None:
        assert contains in d.message, d.message
    if static is not None:
        assert (r.stages[-1] == "static") == static, r.stages
    if sizes is not None:
        rc = verify(p, sizes=sizes, mode="concrete")
        dc = _diag(rc)
        assert (dc.kind, dc.line) == (kind, line), str(dc)
    return d


def accepted_both(src: str, sizes: dict | None, **env):
    p = parse(src, **env)
    r = verify(p)
    assert r.verdict == "proven", (r.reason, [str(d) for d in r.diagnostics])
    if sizes is not None:
        rc = verify(p, sizes=sizes, mode="concrete")
        assert rc.verdict == "checked", (rc.reason, [str(d) for d in rc.diagnostics])
    return r


def kinds_of(r) -> set:
    return {ob.kind for ob in r.extra.get("obligations", ())}
