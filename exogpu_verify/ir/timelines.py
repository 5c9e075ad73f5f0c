"""Instruction, qualitative and synchronization timelines (paper Fig. 16; notes section 2).

* An ``InstrTL`` tags an instruction (``cuda_in_order_instr``, ``wgmma_async_instr``, ...).
* A ``QualTL`` tags one memory access; it is a function of the accessed memory and the
  instruction timeline (``Memory.qual_tls``).
* A ``SyncTL`` parameterizes ``Fence``/``Arrive``/``Await``: a *full* set of qualitative
  timelines (orders reads and writes) and a *temporal-only* set (orders only overwrites).
  The temporal set is ``full | temporal_only``.

The sets below follow the implemented ("endgame") model of the reference notes, section 2.4:
it has no per-timeline transitivity flag, because visibility gained through earlier
synchronization is itself tracked. ``transitive`` keeps the paper's flag (section 2.5) as
documentation and for a checker that wants the paper's model. Two departures, both for
soundness (``docs/semantics.md``, "The tables"): ``wgmma_zero_qual`` is in no timeline (only
``wgmma.fence`` orders other register accesses before a wgmma), and the async proxy's quals
reach a generic-proxy access only through a proxy fence of its own threads
(``SyncTL.proxy_fence``, ``SyncTL.generic_carry``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class InstrTL:
    name: str
    device: str  # "cpu" or "cuda"
    in_order: bool

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


cpu_in_order_instr = InstrTL("cpu_in_order_instr", "cpu", True)
cpu_cuda_stream_instr = InstrTL("cpu_cuda_stream_instr", "cpu", True)
cuda_in_order_instr = InstrTL("cuda_in_order_instr", "cuda", True)
Sm80_cp_async_instr = InstrTL("Sm80_cp_async_instr", "cuda", False)
tma_to_smem_async_instr = InstrTL("tma_to_smem_async_instr", "cuda", False)
tma_to_gmem_async_instr = InstrTL("tma_to_gmem_async_instr", "cuda", False)
wgmma_async_instr = InstrTL("wgmma_async_instr", "cuda", False)
wgmma_zero_instr = InstrTL("wgmma_zero_instr", "cuda", True)

INSTR_TLS = {
    t.name: t
    for t in (cpu_in_order_instr, cpu_cuda_stream_instr, cuda_in_order_instr, Sm80_cp_async_instr,
              tma_to_smem_async_instr, tma_to_gmem_async_instr, wgmma_async_instr,
              wgmma_zero_instr)
}


@dataclass(frozen=True, slots=True)
class QualTL:
    """A qualitative timeline. ``bit`` orders them for bitset encodings.

    The flags below are the whole of the hardware facts the checkers read about one qual
    (``docs/semantics.md``, "The rules"):

    * ``hw_ordered``: the hardware orders consecutive accesses on it even when the
      instruction is asynchronous (wgmma's register accumulator: PTX ISA, wgmma.mma_async,
      accumulator dependences between wgmmas of one warpgroup are tracked).
    * ``proxy``: the memory proxy of an access to shared or global memory, ``"generic"``
      (ordinary loads and stores, ``cp.async``) or ``"async"`` (TMA, its stores and
      reductions, wgmma's SMEM operands; ``aret`` is the async proxy's view of an access).
      A generic access followed by an async-proxy one needs a proxy fence executed by the
      generic access's threads (PTX ISA, "Async proxy" and ``fence.proxy.async``).
    * ``reg_async``: a register operand that an asynchronous instruction reads or writes in
      place (wgmma's accumulator and A fragment): every other access to those registers
      must be separated from the instruction by ``wgmma.fence`` (PTX ISA, wgmma.fence).
    * ``lazy``: an access that touches nothing when executed and takes effect at the next
      access on one of its extended quals (``wgmma_zero`` sets the scale-d flag of the next
      wgmma): it is not checked against earlier accesses and does not supersede them.
    """

    name: str
    abbrev: str
    bit: int
    convergent: bool
    hw_ordered: bool = False
    proxy: str = ""
    reg_async: bool = False
    lazy: bool = False

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.abbrev


_QUALS = [
    ("cpu_in_order_qual", "cpu", True),
    ("cpu_cuda_stream_qual", "strm", True),
    ("cuda_in_order_rmem_qual", "c1", True),
    ("cuda_in_order_ram_qual", "c2", False),
    ("cuda_mbarrier_qual", "mbar", False),
    ("Sm80_cp_async_qual", "sm80", False),
    ("tma_to_smem_async_qual", "g2s", False),
    ("tma_to_gmem_async_qual", "s2g", False),
    ("wgmma_async_rmem_a_qual", "wgA", True),
    ("wgmma_async_rmem_d_qual", "wgD", True),
    ("wgmma_async_smem_qual", "wgS", False),
    ("wgmma_zero_qual", "wg0", True),
    ("cuda_async_proxy_retired_qual", "aret", False),
]
_HW_ORDERED = {"wgD"}
#: cp.async (non-bulk) is performed in the generic proxy; bulk copies and wgmma descriptors
#: in the async proxy (PTX ISA, "Async proxy")
_PROXY = {"c2": "generic", "sm80": "generic", "g2s": "async", "s2g": "async", "wgS": "async",
          "aret": "async"}
_REG_ASYNC = {"wgA", "wgD"}
_LAZY = {"wg0"}
QUAL_TLS: dict[str, QualTL] = {
    abbrev: QualTL(name, abbrev, bit, conv, abbrev in _HW_ORDERED, _PROXY.get(abbrev, ""),
                   abbrev in _REG_ASYNC, abbrev in _LAZY)
    for bit, (name, abbrev, conv) in enumerate(_QUALS)
}
#: the async proxy's quals: never granted to a generic-proxy access except through the
#: proxy fence of its own threads (``docs/semantics.md``, "Proxies")
ASYNC_PROXY_QUALS = frozenset(q for q in QUAL_TLS.values() if q.proxy == "async")
GENERIC_PROXY_QUALS = frozenset(q for q in QUAL_TLS.values() if q.proxy == "generic")
#: the qual through which the async proxy's view of a generic access travels
ASYNC_VIEW = QUAL_TLS["aret"]


def access_in_order(instr_tl: InstrTL, first_qual: QualTL) -> bool:
    """Is an access recorded as in-order (all visibility flags for its own threads)?"""
    return instr_tl.in_order or first_qual.hw_ordered


Q = QUAL_TLS  # short alias used in tables below

cpu_q, strm_q = Q["cpu"], Q["strm"]
c1_q, c2_q, mbar_q = Q["c1"], Q["c2"], Q["mbar"]
sm80_q, g2s_q, s2g_q = Q["sm80"], Q["g2s"], Q["s2g"]
wgA_q, wgD_q, wgS_q, wg0_q, aret_q = Q["wgA"], Q["wgD"], Q["wgS"], Q["wg0"], Q["aret"]


@dataclass(frozen=True, slots=True)
class SyncTL:
    """A synchronization timeline: full set and temporal-only set of qualitative timelines."""

    name: str
    full: frozenset[QualTL]
    temporal_only: frozenset[QualTL] = frozenset()
    transitive: bool = field(default=False, compare=False)

    @property
    def temporal(self) -> frozenset[QualTL]:
        return self.full | self.temporal_only

    @property
    def proxy_fence(self) -> bool:
        """As the second timeline of a Fence: the Fence is a proxy fence (lowered with
        ``fence.proxy.async``): it makes its threads' earlier generic-proxy accesses visible
        to the async proxy."""
        return ASYNC_VIEW in self.full

    @property
    def generic_carry(self) -> str | None:
        """How far this timeline carries a generic-proxy access: ``"full"``, ``"temporal"``
        or None. The async proxy's view of a generic access, once its threads made it
        (``proxy_fence``), travels through synchronization exactly as far as the access."""
        if self.full & GENERIC_PROXY_QUALS:
            return "full"
        if self.temporal & GENERIC_PROXY_QUALS:
            return "temporal"
        return None

    def implements(self, other: "SyncTL") -> bool:
        """A barrier built for ``self`` also serves ``other`` (notes 2.4)."""
        return other.full <= self.full and other.temporal <= self.temporal

    def __le__(self, other: "SyncTL") -> bool:
        return other.implements(self)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


def _s(name, full, temporal_only=(), transitive=False) -> SyncTL:
    return SyncTL(name, frozenset(Q[a] for a in full), frozenset(Q[a] for a in temporal_only),
                  transitive)


_DEVICE_ALL = ("strm", "c1", "c2", "mbar", "sm80", "g2s", "s2g", "wgA", "wgD", "wgS", "aret")

empty_sync_tl = _s("empty_sync_tl", ())
cpu_in_order = _s("cpu_in_order", ("cpu",), transitive=True)
cuda_stream_sync = _s("cuda_stream_sync", _DEVICE_ALL, transitive=True)
cuda_in_order = _s("cuda_in_order", ("c1", "c2", "mbar"), ("aret",), transitive=True)
cuda_temporal = _s("cuda_temporal", ("mbar",), ("c1", "c2", "aret"))
Sm80_cp_async = _s("Sm80_cp_async", ("mbar", "sm80"))
Sm80_generic = _s("Sm80_generic", ("c1", "c2", "mbar", "sm80"), ("aret",))
tma_to_smem_async = _s("tma_to_smem_async", ("g2s",))
tma_to_gmem_async = _s("tma_to_gmem_async", ("s2g",))
wgmma_async_smem = _s("wgmma_async_smem", ("wgS",))
wgmma_fence_1 = _s("wgmma_fence_1", ("c1", "wgA", "wgD"))
wgmma_fence_2 = _s("wgmma_fence_2", ("wgA", "wgD"))
wgmma_async = _s("wgmma_async", ("wgA", "wgD", "wgS"))
cuda_generic_and_async_proxy = _s("cuda_generic_and_async_proxy", ("c1", "c2", "mbar", "aret"))

SYNC_TLS: dict[str, SyncTL] = {
    t.name: t
    for t in (empty_sync_tl, cpu_in_order, cuda_stream_sync, cuda_in_order, cuda_temporal,
              Sm80_cp_async, Sm80_generic, tma_to_smem_async, tma_to_gmem_async,
              wgmma_async_smem, wgmma_fence_1, wgmma_fence_2, wgmma_async,
              cuda_generic_and_async_proxy)
}
