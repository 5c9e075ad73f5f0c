"""isl text for the relations between event instances: domains, sequential order, threads.

Every formula is built over positional dimension names (``a0, a1, ...`` for one instance,
``b0, ...`` for another) so sets of different shapes can be combined by plain text and
intersected in one isl space. Parameters are the procedure's size and index parameters.
"""

from __future__ import annotations

from ..analysis.conditions import has_stride
from ..analysis.mapping import isl_name
from ..ir.affine import NotAffine, cond_to_isl_str, to_isl_str
from .events import Event, Program, Unsupported


class Encoder:
    def __init__(self, prog: Program, size_params: list[str]):
        self.prog = prog
        self.params = [isl_name(p) for p in prog.params]
        ctx = [f"{isl_name(p)} >= 1" for p in size_params]
        for pred in prog.preds:
            if has_stride(pred):
                # strides are not parameters of the encoding; the call checks substitute the
                # caller's stride asserts themselves (analysis.calls)
                continue
            try:
                ctx.append(f"({cond_to_isl_str(pred, self._pren())})")
            except NotAffine:
                # dropping a precondition only enlarges what must be proven: still sound
                continue
        self.context = " and ".join(ctx) if ctx else "1 = 1"
        self._ren_cache: dict = {}

    def _pren(self) -> dict:
        return {p: isl_name(p) for p in self.prog.params}

    @property
    def pstr(self) -> str:
        return f"[{', '.join(self.params)}]"

    # ------------------------------------------------------------ naming
    def ren(self, e: Event, pre: str) -> dict:
        r = self._pren()
        for k, v in enumerate(e.vars):
            r[v] = f"{pre}{k}"
        return r

    def dims(self, e: Event, pre: str) -> list[str]:
        return [f"{pre}{k}" for k in range(len(e.loops))]

    def ex(self, expr, e: Event, pre: str) -> str:
        try:
            return to_isl_str(expr, self.ren(e, pre))
        except NotAffine as na:
            raise Unsupported(f"non-affine expression: {na.reason}", e.srcinfo) from None

    # ------------------------------------------------------------ domains and order
    def dom(self, e: Event, pre: str) -> str:
        r = self.ren(e, pre)
        cons = []
        for k, lp in enumerate(e.loops):
            cons.append(f"{to_isl_str(lp.lo, r)} <= {pre}{k} < {to_isl_str(lp.hi, r)}")
        for cond, pol in e.guards:
            c = cond_to_isl_str(cond, r)
            cons.append(f"({c})" if pol else f"not ({c})")
        return " and ".join(cons) if cons else "1 = 1"

    @staticmethod
    def common(e1: Event, e2: Event) -> int:
        k = 0
        for a, b in zip(e1.loops, e2.loops):
            if a.uid != b.uid:
                break
            k += 1
        return k

    def before(self, e1: Event, p1: str, e2: Event, p2: str) -> str:
        """Instance of e1 strictly before instance of e2 in sequential program order."""
        k = self.common(e1, e2)
        # position tokens decide ties once all common loop variables are equal
        first_pos = None
        t1, t2 = e1.sched, e2.sched
        for x, y in zip(t1, t2):
            if x != y:
                first_pos = (x, y)
                break
        tie_ok = False
        if first_pos is not None:
            (kx, vx), (ky, vy) = first_pos
            if kx == "pos" and ky == "pos":
                tie_ok = vx < vy
            # a divergence on a loop token cannot happen before the common prefix ends
        disj = []
        for j in range(k):
            eq = [f"{p1}{i} = {p2}{i}" for i in range(j)]
            disj.append(" and ".join(eq + [f"{p1}{j} < {p2}{j}"]))
        if tie_ok:
            disj.append(" and ".join([f"{p1}{i} = {p2}{i}" for i in range(k)]) or "1 = 1")
        if not disj:
            return "1 = 0"
        return "(" + " or ".join(f"({d})" for d in disj) + ")"

    def same_prefix(self, e1: Event, p1: str, e2: Event, p2: str, depth: int) -> str:
        """Equality of the first ``depth`` (shared) loop variables."""
        if self.common(e1, e2) < depth:
            return "1 = 0"
        return " and ".join(f"{p1}{i} = {p2}{i}" for i in range(depth)) or "1 = 1"

    def task_depth(self, e: Event) -> int:
        """Number of enclosing loops up to and including the innermost cuda_tasks loop."""
        d = 0
        for k, lp in enumerate(e.loops):
            if lp.kind == "task":
                d = k + 1
        return d

    # ------------------------------------------------------------ threads
    def tid(self, e: Event, pre: str, tid: str) -> tuple[str, list[str]]:
        """Constraint ``tid`` in threads(e); returns (text, existential names)."""
        if e.kind == "free":
            n = self.prog.kernels[e.kernel].blockDim * self.prog.kernels[e.kernel].clusterDim
            return f"0 <= {tid} < {n}", []
        return e.mapping.tid_constraint(self.ren(e, pre), tid, f"{pre}{tid}x")

    def progression(self, e: Event, pre: str) -> tuple[str, int, int] | None:
        """threads(e) as ``(base, pitch, length)``: ``{base + pitch*x : 0 <= x < length}``
        (``ThreadMapping.progression``), or None."""
        if e.kind == "free":
            return "0", 1, (self.prog.kernels[e.kernel].blockDim *
                            self.prog.kernels[e.kernel].clusterDim)
        return e.mapping.progression(self.ren(e, pre))

    def same_task(self, e1: Event, p1: str, e2: Event, p2: str) -> str | None:
        """Both instances in the same device task (cluster); None if different kernels."""
        if e1.kernel is None or e2.kernel is None or e1.kernel != e2.kernel:
            return None
        d = self.task_depth(e1)
        if d != self.task_depth(e2) or self.common(e1, e2) < d:
            return None
        return self.same_prefix(e1, p1, e2, p2, d)

    def share(self, e1: Event, p1: str, e2: Event, p2: str) -> str:
        """Some thread executes both instances."""
        if e1.kernel is None or e2.kernel is None:
            return "1 = 1" if e1.kernel is None and e2.kernel is None else "1 = 0"
        st = self.same_task(e1, p1, e2, p2)
        if st is None:
            return "1 = 0"
        fast = _meet(self.progression(e1, p1), self.progression(e2, p2))
        if fast is not None:
            return f"({st} and {fast})"
        t = f"t{p1}{p2}"
        c1, x1 = self.tid(e1, p1, t)
        c2, x2 = self.tid(e2, p2, t)
        return f"({st} and exists ({', '.join([t] + x1 + x2)} : {c1} and {c2}))"

    def cover(self, h: Event, ph: str, e2: Event, p2: str, convergent: bool) -> str:
        """Every thread of the e2 instance (one, if convergent) executes the h instance."""
        if convergent:
            return self.share(h, ph, e2, p2)
        if h.kernel is None:
            return "1 = 1"
        if e2.kernel is None:
            return "1 = 0"
        st = self.same_task(h, ph, e2, p2)
        if st is None:
            return "1 = 0"
        fast = _within(self.progression(e2, p2), self.progression(h, ph))
        if fast is not None:
            return f"({st} and {fast})"
        t = f"u{ph}{p2}"
        c2, x2 = self.tid(e2, p2, t)
        ch, xh = self.tid(h, ph, t)
        inner = f"exists ({', '.join(xh)} : {ch})" if xh else f"({ch})"
        return (f"({st} and not (exists ({', '.join([t] + x2)} : {c2} and not ({inner}))))")

    # ------------------------------------------------------------ data
    def box(self, e: Event, pre: str, elem: list[str]) -> str:
        """The element ``elem`` lies in the box accessed by the instance."""
        cons = []
        for w, x in zip(e.box, elem):
            if w[0] == "pt":
                cons.append(f"{x} = {self.ex(w[1], e, pre)}")
            else:
                cons.append(f"{self.ex(w[1], e, pre)} <= {x} < {self.ex(w[2], e, pre)}")
        return " and ".join(cons) if cons else "1 = 1"

    def barrier_elems(self, ref, e: Event, pre: str, elem: list[str]) -> str:
        cons = []
        for w, x in zip(ref.idx, elem):
            if w[0] == "pt":
                cons.append(f"{x} = {self.ex(w[1], e, pre)}")
            else:
                cons.append(f"{self.ex(w[1], e, pre)} <= {x} < {self.ex(w[2], e, pre)}")
        return " and ".join(cons) if cons else "1 = 1"


# ---------------------------------------------------------------- thread sets without quantifiers
# ``share`` and ``cover`` state "some thread runs both" and "every thread of one runs the
# other". With both thread sets arithmetic progressions (every warp, warpgroup, lane range and
# elected thread is one), these are quantifier-free linear facts, exactly equivalent to the
# quantified texts (which stay the fallback). They keep the ordered sets small for isl and
# free of quantifier alternation for the SMT solvers.

def _member(t: str, p) -> str:
    """The thread ``t`` lies in the progression ``p``."""
    b, pitch, n = p
    if n == 1:
        return f"(({t}) = ({b}))"
    out = f"(({b}) <= ({t}) <= ({b}) + {pitch * (n - 1)}"
    if pitch > 1:
        out += f" and ((({t}) - ({b})) mod {pitch}) = 0"
    return out + ")"


def _meet(p1, p2) -> str | None:
    """Some thread lies in both progressions (None: not stated without quantifiers)."""
    if p1 is None or p2 is None:
        return None
    if p1[2] == 1:
        return _member(p1[0], p2)
    if p2[2] == 1:
        return _member(p2[0], p1)
    if p1[1] == 1 and p2[1] == 1:  # two intervals overlap
        return (f"(({p1[0]}) <= ({p2[0]}) + {p2[2] - 1} and "
                f"({p2[0]}) <= ({p1[0]}) + {p1[2] - 1})")
    return None


def _within(inner, outer) -> str | None:
    """Every thread of progression ``inner`` lies in ``outer`` (None: not stated without
    quantifiers). With ``outer``'s pitch dividing ``inner``'s, ``inner``'s threads are all
    congruent to its base modulo ``outer``'s pitch, and ``outer`` holds every such number
    between its ends: the congruence and the two ends decide it."""
    if inner is None or outer is None:
        return None
    bi, pi, ni = inner
    bo, po, no = outer
    if ni == 1:
        return _member(bi, outer)
    if no == 1 or no < ni:  # fewer threads cannot hold more
        return "(1 = 0)"
    if pi % po:
        return None
    out = f"(({bo}) <= ({bi}) and ({bi}) + {pi * (ni - 1)} <= ({bo}) + {po * (no - 1)}"
    if po > 1:
        out += f" and ((({bi}) - ({bo})) mod {po}) = 0"
    return out + ")"
