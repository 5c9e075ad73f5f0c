"""The *lead* threads of a statement: the thread of each CTA that issues a copy's
``mbarrier.expect_tx``, and one arriving thread of each CTA (``amir/phases.py``, "copy
issues").

An instruction that completes on an mbarrier (``tma_load(...) >> z[i]``) is executed by a
collective, but its generated code issues the copy, and the ``mbarrier.expect_tx`` that arms
the barrier's phase for its bytes, from one thread per CTA: the platform's TMA loads and
multicasts elect lane 0 of the warp (``platforms/_tma.py``), the lowest thread of the
collective in its CTA. ``AmAccess.lead`` restricts an access to such threads:

* ``None``: every thread of the statement (all ordinary accesses);
* ``(-1, 0)``: the lowest thread of each CTA the statement runs on;
* ``(j, n)`` with ``n`` the cluster's CTA count: the lowest thread the statement runs on in
  CTA ``j`` (none if it runs on no thread there); CTA rank ``j`` is then coordinate ``j`` of
  a barrier dimension of extent ``n`` distributed over the cluster's CTAs;
* ``(j, n)`` otherwise: as ``(-1, 0)`` (more threads: a stricter access).

``lead_mask`` is the concrete machine's thread mask, ``lead_mapping`` the symbolic checker's
thread mapping of the same set (the mapping falls back to the statement's own threads when
its collective cannot be cut at a CTA boundary: stricter again).
"""

from __future__ import annotations

from dataclasses import replace

from ..analysis.tiling import TilingError


def lead_mask(mask: int, lead, block_dim: int, cluster_dim: int) -> int:
    """The bits of ``mask`` (cluster-relative thread ids) selected by ``lead`` (0: none)."""
    if lead is None or mask < 0:
        return mask
    full = (1 << block_dim) - 1
    lows = {}
    for c in range(cluster_dim):
        part = (mask >> (c * block_dim)) & full
        if part:
            lows[c] = c * block_dim + (part & -part).bit_length() - 1
    j, n = lead
    if 0 <= j < n == cluster_dim:
        return 1 << lows[j] if j in lows else 0
    out = 0
    for t in lows.values():
        out |= 1 << t
    return out


class _InCta:
    """A thread mapping restricted to the threads of CTA ``cta`` (an extra constraint)."""

    def __init__(self, m, cta: int):
        self._m, self._cta = m, cta

    def __getattr__(self, name):
        if name.startswith("_"):  # (unpickling: before __init__ ran)
            raise AttributeError(name)
        return getattr(self._m, name)

    @property
    def num_threads(self) -> int:
        return 1

    def tid_constraint(self, rename: dict, tid: str, xprefix: str):
        text, exist = self._m.tid_constraint(rename, tid, xprefix)
        bd = self._m.block_dim
        return (f"({text}) and {self._cta * bd} <= {tid} < {(self._cta + 1) * bd}", exist)

    def progression(self, rename: dict):
        return None

    def threads(self, env: dict):
        bd = self._m.block_dim
        return frozenset(t for t in self._m.threads(env) if t // bd == self._cta)


def lead_mapping(m, lead):
    """The ``ThreadMapping`` ``m`` restricted as ``lead_mask`` restricts a mask."""
    if lead is None or m is None:
        return m
    coll = m.collective
    bd = coll.block_dim
    try:
        coll = coll.refine({bd})
    except TilingError:
        return m
    if any(d.pitch < bd < d.pitch * d.extent for d in coll.dims):
        return m  # a dimension still crosses the CTA boundary
    ctas = [k for k, d in enumerate(coll.dims) if d.pitch >= bd]
    n_ctas = 1
    for k in ctas:
        n_ctas *= coll.dims[k].length
    j, n = lead
    one = 0 <= j < n == coll.cluster_dim
    pick = one and n_ctas == n
    digits = {}
    if pick:  # the statement runs on every CTA: CTA j by the digits of its rank
        rest = j
        for k in sorted(ctas, key=lambda k: coll.dims[k].pitch):  # least significant first
            digits[k] = rest % coll.dims[k].length
            rest //= coll.dims[k].length
    dims = []
    for k, d in enumerate(coll.dims):
        if d.pitch < bd:
            dims.append(replace(d, length=1))
        elif pick:
            dims.append(replace(d, start=d.start + digits[k], length=1))
        else:
            dims.append(d)
    out = replace(m, collective=replace(coll, dims=tuple(dims)))
    if one and not pick:
        return _InCta(out, j)
    return out


__all__ = ["lead_mask", "lead_mapping"]
