"""Facts about one kernel's accesses that pick the cheapest correct form of two instructions.

* ``proxy_space``: the state space of the ``fence.proxy.async`` a proxy Fence or Await emits.
  A plain ``fence.proxy.async`` orders every state space and becomes ``MEMBAR.ALL.GPU`` in
  SASS; ``fence.proxy.async.shared::cta`` orders shared memory only (PTX ISA, membar/fence:
  proxykind ``.async.shared::{cta,cluster}``). The restricted form is enough when no global
  tensor of the kernel is accessed through both proxies (generic loads/stores *and* TMA): then
  every generic/async pair a proxy Fence orders is on shared memory. Kernels of a cluster use
  ``.shared::cluster`` (multicast and peer CTAs write the executing CTA's shared memory).
* ``bulk_wait_read``: whether ``Await`` on an ``Sm90_TmaCommitGroup`` may lower to
  ``cp.async.bulk.wait_group.read N`` (the bulk copies finished *reading* their shared memory
  source) instead of ``cp.async.bulk.wait_group N`` (their global writes are also done). The
  model's Await orders both; the ``.read`` form is enough when nothing in the kernel can need
  the global side: every global destination of a TMA store or reduce is touched in the kernel
  only by TMA stores/reduces, and either all of them are reduce-adds (atomic: they need no
  order among themselves) or a single store statement writes it whose instances inside one
  task never overlap (checked with isl below; instances of different tasks never overlap in a
  proven program, since two tasks touching one element race). The writes themselves are
  complete when the kernel is (grid completion), which is what the kernel-end stream fence of
  the model needs.
"""

from __future__ import annotations

from exogpu_verify.analysis.walk import iter_stmts  # noqa: F401
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.affine import NotAffine, const_value, to_isl_str

_TMA_LOAD = "tma_to_smem_async_instr"
_TMA_STORE = "tma_to_gmem_async_instr"


def tensor_map_bases(p: N.Procedure) -> dict[str, str]:
    """Tensor-map window name -> the global tensor it is a window of."""
    out = {}
    for _, s in iter_stmts(p.body):
        if isinstance(s, N.WindowStmt):
            out[s.name] = out.get(s.rhs.name, s.rhs.name)
    return out


def _reads(e, out: set):
    if isinstance(e, N.Read):
        if e.idx:
            out.add(e.name)
        for i in e.idx:
            _reads(i, out)
    elif isinstance(e, N.BinOp):
        _reads(e.lhs, out)
        _reads(e.rhs, out)
    elif isinstance(e, N.UnOp):
        _reads(e.arg, out)
    elif isinstance(e, N.BuiltIn):
        for a in e.args:
            _reads(a, out)


_CMP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def const_cond(e) -> bool | None:
    """The value of a control condition made of constants (metaprogramming flags), or None."""
    if isinstance(e, N.Const) and isinstance(e.val, bool):
        return e.val
    if isinstance(e, N.UnOp) and e.op == "not":
        v = const_cond(e.arg)
        return None if v is None else not v
    if isinstance(e, N.BinOp):
        if e.op in _CMP:
            a, b = const_value(e.lhs), const_value(e.rhs)
            return None if a is None or b is None else _CMP[e.op](a, b)
        if e.op in ("and", "or"):
            a, b = const_cond(e.lhs), const_cond(e.rhs)
            if e.op == "and":
                return False if False in (a, b) else (True if a is b is True else None)
            return True if True in (a, b) else (False if a is b is False else None)
    return None


def live_stmts(body, prefix=(), fld="body"):
    """``iter_stmts`` without the branches of constant conditions that never run."""
    for i, s in enumerate(body):
        path = prefix + ((fld, i),)
        yield path, s
        if isinstance(s, N.If):
            c = const_cond(s.cond)
            if c is not False:
                yield from live_stmts(s.body, path, "body")
            if c is not True:
                yield from live_stmts(s.orelse, path, "orelse")
        elif isinstance(s, (N.For, N.With)):
            yield from live_stmts(s.body, path, "body")


def _accesses(body, bases: dict):
    """(generic names, TMA-load bases, TMA-store calls) of a kernel body."""
    generic, loads, stores = set(), set(), []
    for path, s in live_stmts(body):
        if isinstance(s, (N.Assign, N.Reduce)):
            generic.add(bases.get(s.name, s.name))
            _reads(s.rhs, generic)
        elif isinstance(s, N.If):
            _reads(s.cond, generic)
        elif isinstance(s, N.Call) and s.callee.instr is not None:
            tl = s.callee.instr.timeline.name
            for prm, a in zip(s.callee.params, s.args):
                if not (prm.is_data and isinstance(a, N.WindowExpr)):
                    continue
                base = bases.get(a.name, a.name)
                if tl == _TMA_LOAD:
                    loads.add(base)
                elif tl == _TMA_STORE:
                    if prm.name == "dst":
                        stores.append((path, s, base))
                elif tl in ("cuda_in_order_instr", "Sm80_cp_async_instr"):
                    generic.add(base)
    generic = {bases.get(g, g) for g in generic}
    return generic, loads, stores


def proxy_space(p: N.Procedure, body, gmem: set[str], cluster_dim: int) -> str:
    """PTX suffix for ``fence.proxy.async`` in this kernel (see the module docstring)."""
    generic, loads, stores = _accesses(body, tensor_map_bases(p))
    asyncs = loads | {b for _, _, b in stores}
    if (generic & asyncs) & gmem:
        return ""
    return ".shared::cluster" if cluster_dim > 1 else ".shared::cta"


def bulk_wait_read(p: N.Procedure, body, task_iters: list[str]) -> bool:
    """May TMA commit-group waits of this kernel use ``.read`` (see the module docstring)?"""
    bases = tensor_map_bases(p)
    generic, loads, stores = _accesses(body, bases)
    by_base: dict[str, list] = {}
    for path, s, b in stores:
        by_base.setdefault(b, []).append((path, s))
    for b, calls in by_base.items():
        if b in generic or b in loads:
            return False
        atomic = [bool(c.callee.instr.atomic) for _, c in calls]
        if all(atomic):
            continue
        if len(calls) != 1 or not _instances_disjoint(body, calls[0][0], task_iters):
            return False
    return True


def _at(body, path) -> tuple[object, list]:
    """The statement at ``path`` and the ``For`` loops around it (outermost first)."""
    loops, stmts, s = [], body, None
    for k, (fld, i) in enumerate(path):
        s = stmts[i]
        if k + 1 < len(path):
            if isinstance(s, N.For):
                loops.append(s)
            nxt = path[k + 1][0]
            stmts = s.orelse if (isinstance(s, N.If) and nxt == "orelse") else s.body
    return s, loops


def _instances_disjoint(body, path, task_iters: list[str]) -> bool:
    """No two instances of the TMA store at ``path`` (inside one task: task iterators fixed)
    write overlapping boxes. Loop guards are ignored (a superset of the instances), so a
    ``False`` may be conservative; anything isl cannot express is ``False``."""
    import islpy as isl

    s, loops = _at(body, path)
    dst = next(a for prm, a in zip(s.callee.params, s.args) if prm.name == "dst")
    vs = [lp.iter for lp in loops]
    names: set = set()
    for lp in loops:
        for e in (lp.lo, lp.hi):
            _names(e, names)
    for a in dst.idx:
        for e in ((a.pt,) if isinstance(a, N.Point) else (a.lo, a.hi)):
            _names(e, names)
    params = sorted((names - set(vs)) | set(task_iters))

    def ren(suffix):
        return {v: f"{v}{suffix}" for v in vs}

    try:
        cons = []
        for suf in ("_a", "_b"):
            r = ren(suf)
            for lp in loops:
                cons.append(f"{to_isl_str(lp.lo, r)} <= {lp.iter}{suf} < {to_isl_str(lp.hi, r)}")
        ra, rb = ren("_a"), ren("_b")
        for d, a in enumerate(dst.idx):
            if isinstance(a, N.Point):
                cons.append(f"{to_isl_str(a.pt, ra)} = {to_isl_str(a.pt, rb)}")
            else:
                # [lo_a, hi_a) and [lo_b, hi_b) intersect
                cons.append(f"{to_isl_str(a.lo, ra)} < {to_isl_str(a.hi, rb)}")
                cons.append(f"{to_isl_str(a.lo, rb)} < {to_isl_str(a.hi, ra)}")
        if vs:
            diff = " or ".join(f"{v}_a < {v}_b" for v in vs)
            cons.append(f"({diff})")
        else:
            return True  # one instance per task
        dims = [f"{v}_a" for v in vs] + [f"{v}_b" for v in vs]
        text = (f"[{', '.join(params)}] -> {{ [{', '.join(dims)}] : "
                f"{' and '.join(cons)} }}")
        return isl.Set(text).is_empty()
    except (NotAffine, isl.Error):
        return False


def _names(e, out: set):
    if isinstance(e, N.Read) and not e.idx:
        out.add(e.name)
    elif isinstance(e, N.BinOp):
        _names(e.lhs, out)
        _names(e.rhs, out)
    elif isinstance(e, N.UnOp):
        _names(e.arg, out)
