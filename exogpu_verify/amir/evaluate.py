"""Evaluation helpers of the concrete machine: control expressions, boxes and barrier
indices compiled to Python closures once per AMIR node, timeline bit sets, and the two
exceptions the machine raises."""

from __future__ import annotations

from ..ir import nodes as N
from ..ir.affine import free_names as _free_names  # noqa: F401 - batch, interp
from ..ir.timelines import QUAL_TLS, cuda_stream_sync
from . import nodes as A
from .machine import Event, point_key


class Hazard(Exception):
    def __init__(self, kind: str, var: str, box, first: Event | None, second: Event,
                 missing: str, hint: str | None = None):
        super().__init__(f"{kind} on {var}")
        self.kind, self.var, self.box = kind, var, box
        self.first, self.second, self.missing = first, second, missing
        self.hint = hint  # how to fix it, when the cause is known (amir/hints.py)


class CheckError(Exception):
    """Something the abstract machine cannot interpret (bad sizes, out of bounds, misuse)."""

    def __init__(self, kind: str, message: str, srcinfo=None, hint=None):
        super().__init__(message)
        self.kind, self.message, self.srcinfo, self.hint = kind, message, srcinfo, hint


_PY = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%", "<": "<", "<=": "<=", ">": ">",
       ">=": ">=", "==": "==", "!=": "!=", "and": "and", "or": "or"}


def _py(e) -> str:
    if isinstance(e, N.Const):
        return repr(e.val)
    if isinstance(e, N.Read):
        return f"E[{e.name!r}]"
    if isinstance(e, N.BinOp):
        return f"({_py(e.lhs)} {_PY[e.op]} {_py(e.rhs)})"
    if isinstance(e, N.UnOp):
        return f"(not {_py(e.arg)})" if e.op == "not" else f"(-{_py(e.arg)})"
    if isinstance(e, N.StrideExpr):
        return f"E[{('stride', e.name, e.dim)!r}]"
    raise CheckError("usage", f"cannot evaluate {type(e).__name__} as a control expression",
                     getattr(e, "srcinfo", None))


_COMPILED: dict = {}


def ev(e, env):
    # keyed by identity: hashing an expression tree on every evaluation is the hot path
    hit = _COMPILED.get(id(e))
    if hit is None or hit[0] is not e:
        hit = _COMPILED[id(e)] = (e, eval(f"lambda E: {_py(e)}"))  # noqa: S307 - our own IR
    return hit[1](env)


def _pyv(e) -> str:
    """``_py`` for numpy arrays of iterator values: the logical operators elementwise."""
    if isinstance(e, N.BinOp) and e.op in ("and", "or"):
        return f"_np.logical_{e.op}({_pyv(e.lhs)}, {_pyv(e.rhs)})"
    if isinstance(e, N.UnOp) and e.op == "not":
        return f"_np.logical_not({_pyv(e.arg)})"
    if isinstance(e, N.BinOp):
        return f"({_pyv(e.lhs)} {_PY[e.op]} {_pyv(e.rhs)})"
    if isinstance(e, N.UnOp):
        return f"(-{_pyv(e.arg)})"
    return _py(e)


_COMPILED_VEC: dict = {}


def ev_vec(e, env):
    """``ev`` where some iterators are numpy arrays (batched nests): the value broadcast over
    them (``/`` and ``%`` floor as in Python, as numpy's integer operators do)."""
    hit = _COMPILED_VEC.get(id(e))
    if hit is None or hit[0] is not e:
        import numpy

        fn = eval(f"lambda E: {_pyv(e)}", {"_np": numpy})  # noqa: S307 - our own IR
        hit = _COMPILED_VEC[id(e)] = (e, fn)
    return hit[1](env)


_STREAM_BITS = tuple(q.bit for q in cuda_stream_sync.full)
_LAUNCH_L1 = tuple(sorted(set(_STREAM_BITS) | {QUAL_TLS["cpu"].bit}))
_FREE_BITS = (QUAL_TLS["c2"].bit, QUAL_TLS["aret"].bit)
_RMEM_BITS = (QUAL_TLS["c1"].bit,)
_IN_ORDER_BITS = frozenset(q.bit for q in QUAL_TLS.values() if q.hw_ordered)


def _bits(qs) -> tuple:
    return tuple(sorted(q.bit for q in qs))


_SYNC_BITS: dict = {}


def _sync_bits(L) -> tuple:
    """(full bits, temporal bits) of a sync timeline, computed once per timeline (keyed by
    identity: hashing a timeline's frozensets on every sync statement is measurable)."""
    hit = _SYNC_BITS.get(id(L))
    if hit is None or hit[0] is not L:
        hit = _SYNC_BITS[id(L)] = (L, _bits(L.full), _bits(L.temporal),
                                   frozenset(_bits(L.full)))
    return hit[1], hit[2]


def _sync_bits_full(L) -> tuple:
    """(full bits as a frozenset, temporal bits) of a sync timeline's first-timeline use."""
    _sync_bits(L)
    hit = _SYNC_BITS[id(L)]
    return hit[3], hit[2]


_REFS: dict = {}


def _ref_values(ref, env):
    """Per dimension, the evaluated index values of a barrier reference (one compiled
    function per reference)."""
    hit = _REFS.get(id(ref))
    if hit is None or hit[0] is not ref:
        parts = []
        for w in ref.idx:
            if w[0] == "pt":
                parts.append(f"({_py(w[1])},)")
            else:
                parts.append(f"range({_py(w[1])}, {_py(w[2])})")
        fn = eval(f"lambda E: ({', '.join(parts)}{',' if len(parts) == 1 else ''})")  # noqa: S307
        hit = _REFS[id(ref)] = (ref, fn)
    return hit[1](env)


def _ref_values_slow(ref, env, exts, display):
    """``_ref_values`` one dimension at a time, checking the range of each as it goes (the
    order in which errors were always reported; used when a dimension does not compile)."""
    out = []
    for w, ext in zip(ref.idx, exts):
        if w[0] == "pt":
            vals = [ev(w[1], env)]
        else:
            vals = list(range(ev(w[1], env), ev(w[2], env)))
        for x in vals:
            if not 0 <= x < ext:
                raise CheckError("bounds", f"barrier index {x} out of range "
                                 f"[0, {ext}) for {display}", ref.srcinfo)
        out.append(vals)
    return out


def _mutated_names(stmts, out: set) -> set:
    """Base variables some access of the program mutates (syntactically)."""
    for s in stmts:
        if type(s) is A.AmAccess:
            if s.mode != "read":
                out.add(s.name)
        else:
            for attr in ("body", "orelse"):
                sub = getattr(s, attr, None)
                if sub:
                    _mutated_names(sub, out)
    return out




_BOXES: dict = {}


def _compile_box(s: A.AmAccess):
    parts = []
    for w in s.box:
        if w[0] == "pt":
            parts.append(f"(lambda i: (i, i + 1))({_py(w[1])})")
        else:
            parts.append(f"({_py(w[1])}, {_py(w[2])})")
    fn = eval(f"lambda E: ({', '.join(parts)}{',' if len(parts) == 1 else ''})")  # noqa: S307
    if s.box and all(w[0] == "pt" for w in s.box):
        # a single element: the point key comes with the box
        key = eval(f"lambda E: ({', '.join(_py(w[1]) for w in s.box)},)")  # noqa: S307

        def both(E, key=key):
            k = key(E)
            return tuple((i, i + 1) for i in k), k
    else:
        def both(E, fn=fn):
            b = fn(E)
            return b, point_key(b)
    return (s, fn, both)


def box_of(s: A.AmAccess, env):
    """The evaluated box of an access: one compiled function per statement."""
    hit = _BOXES.get(id(s))
    if hit is None or hit[0] is not s:
        hit = _BOXES[id(s)] = _compile_box(s)
    return hit[1](env)


def box_and_key(s: A.AmAccess, env):
    """``(box_of(s, env), point_key(box))``."""
    hit = _BOXES.get(id(s))
    if hit is None or hit[0] is not s:
        hit = _BOXES[id(s)] = _compile_box(s)
    return hit[2](env)
