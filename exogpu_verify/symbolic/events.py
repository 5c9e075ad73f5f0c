"""Symbolic events: statement instances of an AMIR program as parametric integer sets.

``collect_events(am, info)`` walks the AMIR once and records every access, fence, arrive,
await, free and condition check with what the encoding needs: its enclosing loops (names, bounds, kinds),
guards, its position in the sequential schedule, its kernel, its thread mapping (from the
collective analysis, by IR path) and its qualitative timelines. Anything the Presburger
encoding cannot express raises ``Unsupported`` with the reason (the verdict is then
``unknown`` and the concrete checker takes over).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..amir import nodes as A
from ..amir.lead import lead_mapping
from ..ir import nodes as N
from ..ir.affine import NotAffine, check_quasi_affine, cond_to_isl_str, to_isl_str
from ..ir.memories import BarrierMechanism, MbarrierPhases
from ..ir.timelines import access_in_order, cuda_in_order_instr


class Unsupported(Exception):
    """The symbolic encoding cannot express this program (reason in ``args[0]``)."""

    def __init__(self, reason: str, srcinfo=None):
        super().__init__(reason)
        self.reason = reason
        self.srcinfo = srcinfo


@dataclass(frozen=True)
class Loop:
    var: str
    lo: N.Expr
    hi: N.Expr
    kind: str
    uid: int


@dataclass
class Event:
    kind: str  # access | fence | arrive | await | free | check
    uid: int
    loops: tuple  # of Loop
    guards: tuple  # of (cond, polarity)
    sched: tuple  # tokens: ("pos", k) or ("loop", uid)
    kernel: int | None  # kernel uid, None at CPU scope
    mapping: object  # ThreadMapping, or None (CPU: all threads)
    srcinfo: object
    node: object
    # accesses
    var: str | None = None
    box: tuple = ()
    mode: str = ""
    quals: tuple = ()
    in_order: bool = True
    what: str = ""
    trailing: tuple = ()
    # sync
    L1: object = None
    L2: object = None
    N: int = 0
    targets: tuple = ()
    extra: dict = field(default_factory=dict)

    @property
    def vars(self) -> list[str]:
        return [lp.var for lp in self.loops]


@dataclass
class VarDecl:
    name: str
    mem: object
    shape: tuple
    depth: int  # number of enclosing loops at the allocation (0 for parameters)
    barrier: bool = False
    ring: tuple = ()
    kernel: int | None = None
    display: str = ""
    #: the allocation statement's enclosing loops and guards (its lifetimes)
    loops: tuple = ()
    guards: tuple = ()
    #: an mbarrier ring continued by the next iteration of the seq loop allocating it
    #: (``AmAlloc.continues``)
    continues: bool = False


@dataclass
class Program:
    events: list
    vars: dict
    kernels: dict  # uid -> CudaDeviceFunction
    params: list
    preds: tuple


def _check_affine(e, what, si):
    try:
        check_quasi_affine(e)
    except NotAffine as na:
        raise Unsupported(f"non-affine {what}: {na.reason}", si) from None


def _bool_reads(e) -> set:
    if isinstance(e, N.Read) and not e.idx and getattr(e.type, "name", "") == "bool":
        return {e.name}
    out = set()
    for attr in ("lhs", "rhs", "arg"):
        if hasattr(e, attr):
            out |= _bool_reads(getattr(e, attr))
    return out


def collect_events(am: A.AmProc, info) -> Program:
    """Walk ``am`` (AMIR with IR paths) and return its events; see the module docstring."""
    ev: list[Event] = []
    decls: dict[str, VarDecl] = {}
    kernels: dict[int, object] = {}
    counter = [0]

    def uid():
        counter[0] += 1
        return counter[0]

    for name, mem, shape in am.data_params:
        decls[name] = VarDecl(name, mem, tuple(shape), 0, display=name)

    def mapping_of(node, kernel):
        if kernel is None:
            return None
        if node.path is None:
            raise Unsupported("a CUDA statement without a thread mapping (inlined proc call)",
                              node.srcinfo)
        m = info.collectives.mapping(node.path)
        if m is None:
            raise Unsupported("no thread mapping from the collective analysis", node.srcinfo)
        return m

    def walk(stmts, loops, guards, sched, kernel):
        for k, s in enumerate(stmts):
            sc = sched + (("pos", k),)
            t = type(s)
            base = dict(loops=tuple(loops), guards=tuple(guards), sched=sc, kernel=kernel,
                        srcinfo=s.srcinfo, node=s)
            if t is A.AmFor:
                _check_affine(s.lo, "loop bound", s.srcinfo)
                _check_affine(s.hi, "loop bound", s.srcinfo)
                lp = Loop(s.iter, s.lo, s.hi, s.kind, uid())
                walk(s.body, loops + [lp], guards, sc + (("loop", lp.uid),), kernel)
            elif t is A.AmIf:
                try:
                    cond_to_isl_str(s.cond)
                except NotAffine as na:
                    from ..ir.printer import expr_str

                    why = na.reason
                    if _bool_reads(s.cond):
                        why = (f"it depends on the bool parameter(s) "
                               f"{', '.join(sorted(_bool_reads(s.cond)))}")
                    raise Unsupported(f"condition `{expr_str(s.cond)}` cannot be encoded: {why}",
                                      s.srcinfo) from None
                walk(s.body, loops, guards + [(s.cond, True)], sc + (("pos", 0),), kernel)
                if s.orelse:
                    walk(s.orelse, loops, guards + [(s.cond, False)], sc + (("pos", 1),),
                         kernel)
            elif t is A.AmKernel:
                kid = uid()
                kernels[kid] = s.cfg
                walk(s.body, loops, guards, sc, kid)
            elif t is A.AmWarps:
                walk(s.body, loops, guards, sc, kernel)
            elif t is A.AmAlloc:
                shape = tuple(s.shape)
                for e in shape:
                    _check_affine(e, "allocation extent", s.srcinfo)
                decls[s.name] = VarDecl(s.name, s.mem, shape, len(loops),
                                        barrier=isinstance(s.mem, BarrierMechanism),
                                        ring=s.ring, kernel=kernel, display=s.display or s.name,
                                        loops=tuple(loops), guards=tuple(guards),
                                        continues=s.continues)
            elif t is A.AmFree:
                d = decls.get(s.name)
                if d is not None and not d.barrier and kernel is not None and \
                        (d.mem.is_shared or d.mem.async_registers or d.mem is MbarrierPhases):
                    what = (f"free of {d.display} (end of its block)" if d.mem.is_shared
                            else f"end of the lifetime of {d.display}"
                            if d.mem is MbarrierPhases
                            else f"end of the registers of {d.display}")
                    ev.append(Event("free", uid(), mapping=mapping_of(s, kernel), var=s.name,
                                    what=what, **base))
            elif t is A.AmAccess:
                d = decls[s.name]
                for w in s.box:
                    for e in w[1:]:
                        _check_affine(e, "index", s.srcinfo)
                quals = d.mem.qual_tls(s.instr_tl)
                if quals is None:
                    raise Unsupported(f"no qualitative timeline for {d.display} @ {d.mem} with "
                                      f"instr-tl {s.instr_tl}", s.srcinfo)
                in_order = (access_in_order(s.instr_tl, quals[0]) if s.hw_order
                            else s.instr_tl.in_order)
                ev.append(Event("access", uid(), mapping=lead_mapping(mapping_of(s, kernel),
                                                                  s.lead),
                                var=s.name, box=s.box, mode=s.mode, quals=quals,
                                in_order=in_order, what=s.what,
                                trailing=s.barriers, **base))
            elif t is A.AmCheck:
                # conditions on control values: which threads run the instance is irrelevant
                ev.append(Event("check", uid(), mapping=None, what="conditions",
                                extra={"conds": s.conds}, **base))
            elif t is A.AmFence:
                ev.append(Event("fence", uid(), mapping=mapping_of(s, kernel), L1=s.L1,
                                L2=s.L2, what="Fence", **base))
            elif t is A.AmArrive:
                ev.append(Event("arrive", uid(), mapping=mapping_of(s, kernel), L1=s.L1,
                                targets=s.targets, what="Arrive", **base))
            elif t is A.AmAwait:
                ev.append(Event("await", uid(), mapping=mapping_of(s, kernel), L2=s.L2,
                                N=s.N, targets=(s.target,), what="Await", **base))
            else:
                raise Unsupported(f"cannot encode {t.__name__}", getattr(s, "srcinfo", None))

    walk(am.body, [], [], (), None)
    for p in am.preds:
        try:
            cond_to_isl_str(p)
        except NotAffine:
            pass
    params = [n for n in am.params]
    return Program(ev, decls, kernels, params, am.preds)


__all__ = ["Unsupported", "Event", "Program", "VarDecl", "Loop", "collect_events",
           "to_isl_str", "cuda_in_order_instr"]
