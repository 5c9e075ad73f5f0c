"""Declared instruction checks (``@instr(checks=...)``) as conditions at each call.

The declarations are data in ``exogpu_verify.ir.checks`` (with the hardware numbers
in ``platforms.limits``); this module says what each one requires of a call's arguments, for
every size (``Condition``s, kind ``instruction``, ``resource`` for register counts):

* ``TensorMapCopy`` (TMA): the tensor map's element type and swizzle equal the SMEM tile's
  memory; its box equals the tile each CTA copies (a point of the window counts 1; a
  multicast copies ``1/slices`` of the first dimension per CTA); for a copy completing on an
  mbarrier, the bytes each receiving CTA gets (``slices`` boxes) equal the bytes its
  mbarrier expects; a multicast's CTA group fits the cluster; the SMEM tile (and each
  multicast slice) starts 128-byte aligned, on a swizzle atom when swizzled.
* ``WgmmaOperand``: the operand is in the swizzled memory the descriptor is built for, its
  last dimension is contiguous (the descriptor's majorness), its start address is 16-byte
  aligned and where base offset 0 puts it (first row of a swizzle atom with the K slice in
  that row for K-major; an atom boundary for MN-major).
* ``RegisterCount``: a constant in [24, 256], a multiple of 8.
* ``Aligned``: the argument (and its rows, in SMEM) starts on the instruction's alignment
  (``cp.async`` of ``n`` elements: ``n * size``; ``ldmatrix``: 16-byte rows;
  ``ld.global.v4``: 16 bytes). In SMEM: its address in the static layout. In GMEM: its
  element offset from the tensor's base, by a sufficient Presburger condition
  (``gmem_offset_condition``); the base pointer is checked at launch, for the parameters
  ``gmem_alignment_requirements`` lists, and at calls of procs for the windows passed.

``tensor_map_conditions`` checks the encoding of a tensor map where it is made
(``cuTensorMapEncodeTiled``): box extents in [1, 256], the inner box a multiple of 16 bytes
and (swizzled) at most the swizzle span, global strides multiples of 16 bytes.
"""

from __future__ import annotations

from math import gcd, prod

from ..errors import Diagnostic
from ..ir import nodes as N
from ..ir.affine import const_value
from ..ir.linear import NotLinear, linear
from ..platforms import limits as HW
from ..ir.checks import Aligned, RegisterCount, TensorMapCopy, WgmmaOperand
from .calls import arg_views, binding, show
from .conditions import (C, CheckedFact, Condition, ConditionSet, add, cmp, conj, disj, has_stride,
                         mod, mul, subst)
from .views import View, walk_views


def smem_swizzle(mem) -> int | None:
    """The swizzle of an SMEM memory as TMA and wgmma see it (None: not a tile memory)."""
    if mem is None:
        return None
    if mem.name == "Sm90_SmemSwizzled":
        return mem.args[0]
    if mem.name == "CudaSmemLinear":
        return 0
    return None


def smem_address(v: View):
    """Byte address of the view's first element in the kernel's SMEM layout, or None."""
    b = v.base
    if b.mem is None or not b.mem.is_shared or b.smem_offset is None:
        return None
    return add(C(b.smem_offset), mul(v.start_elems(), b.scalar.nbytes))


def declared_conditions(path, s: N.Call, views: dict, kernel, cs: ConditionSet,
                        diags: list) -> None:
    info = s.callee.instr
    if info is None:
        _proc_call_alignment(path, s, views, cs)
        return
    for chk in info.checks:
        if isinstance(chk, TensorMapCopy):
            _tma(path, s, chk, views, kernel, cs, diags)
        elif isinstance(chk, WgmmaOperand):
            _wgmma(path, s, chk, views, cs, diags)
        elif isinstance(chk, RegisterCount):
            _regcount(path, s, chk, cs, diags)
        elif isinstance(chk, Aligned):
            _aligned(path, s, chk, views, cs)


def _err(diags, msg, s, hint=None, kind="instruction"):
    diags.append(Diagnostic.at(kind, msg, s.srcinfo, hint))


def _tma(path, s: N.Call, chk: TensorMapCopy, views: dict, kernel, cs, diags) -> None:
    name = s.callee.name
    tv, sv = views.get(chk.tmap), views.get(chk.smem)
    if tv is None or sv is None:
        return
    tm = tv.tmap
    if tm is None:
        _err(diags, f"argument '{chk.tmap}' of {name}() must be a window of a tensor map "
             f"(`t = X[...] @ Sm90_tensorMap(swizzle, *box)`)", s)
        return
    where = f"{name}() with tensor map '{tm.name}' (line {tm.srcinfo.line})"
    if tv.scalar != sv.scalar:
        _err(diags, f"{where}: the tensor map holds {tv.scalar} but the SMEM tile "
             f"'{sv.name}' is {sv.scalar}", s)
        return
    sw = smem_swizzle(sv.mem)
    if sw is None or sw != tm.swizzle:
        want = "CudaSmemLinear" if tm.swizzle == 0 else f"Sm90_SmemSwizzled({tm.swizzle})"
        _err(diags, f"{where}: the tensor map's swizzle is {tm.swizzle} but the SMEM tile "
             f"'{sv.name}' is in {sv.mem}; TMA writes and reads SMEM with the map's swizzle, "
             "so they must agree", s, f"allocate '{sv.base.name}' @ {want}, or encode the "
             f"map with Sm90_tensorMap({sw if sw is not None else 0}, ...)")
        return
    # the tile each CTA copies, per base dimension of the tensor (points count 1)
    first = next((d for d, w in enumerate(tv.idx) if w[0] == "iv"), None)
    tile, conds = [], []
    for d, w in enumerate(tv.idx):
        ext = C(1) if w[0] == "pt" else add(w[2], mul(w[1], -1))
        want = tm.box[d] * (chk.slices if d == first else 1)
        tile.append(ext)
        conds.append(cmp("==", ext, want))
    per_cta = [show(e) if d != first or chk.slices == 1 else f"({show(e)}) / {chk.slices}"
               for d, e in enumerate(tile)]
    slice_txt = (f" (a multicast over {chk.slices} CTAs: each copies 1/{chk.slices} of the "
                 "first dimension)") if chk.slices > 1 else ""
    cs.add(path, Condition(
        "instruction", conj(*conds),
        f"{where}: the box {list(tm.box)} differs from the tile this call copies, "
        f"[{', '.join(per_cta)}]{slice_txt}; the hardware copies the box",
        s.srcinfo, hint="encode the map with the box of the copied tile",
        shows=tuple((f"tile extent {d}", e) for d, e in enumerate(tile)
                    if const_value(e) is None),
        fact=f"box of tensor map '{tm.name}' == tile of {name}()"))
    esize = tv.scalar.nbytes
    info = s.callee.instr
    if info.barrier is not None and info.barrier.kind == "mbarrier":
        prm = s.callee.param(chk.tmap)
        shape = [subst(e, binding(s)) for e in prm.type.shape]
        vals = [const_value(e) for e in shape]
        delivered = chk.slices * prod(tm.box) * esize
        if all(v is not None for v in vals):
            expect = C(chk.expect_tx_bytes(vals, esize))
        else:
            expect = mul(C(esize), _product(shape))
        cs.add(path, Condition(
            "instruction", cmp("==", expect, delivered),
            f"{where}: each CTA's mbarrier expects {show(expect)} transaction bytes for this "
            f"copy (the tile) but receives {chk.slices} x {prod(tm.box)} x {esize} = "
            f"{delivered} (the box{' of every CTA of the multicast' if chk.slices > 1 else ''}"
            "); the phase would never complete or complete early", s.srcinfo,
            hint="make the box the per-CTA tile", fact=f"transaction bytes of {name}()"))
    if chk.slices > 1 and kernel is not None:
        group = chk.slices * chk.cta_stride
        ok = kernel.clusterDim % group == 0
        cs.facts.append(_fact(f"multicast group of {name}() inside the cluster", ok, s))
        if not ok:
            _err(diags, f"{name}() multicasts to {chk.slices} CTAs {chk.cta_stride} apart (a "
                 f"group of {group} cluster ranks) but the cluster has {kernel.clusterDim} "
                 "CTAs: the CTA mask would name CTAs outside the cluster", s,
                 f"launch with clusterDim a multiple of {group}")
    align = HW.smem_alignment(tm.swizzle)
    addr = smem_address(sv)
    if addr is not None:
        cs.add(path, Condition(
            "instruction", cmp("==", mod(addr, align), 0),
            f"{where}: the SMEM tile {sv.name} must start {align}-byte aligned"
            f"{' (one swizzle atom)' if tm.swizzle else ''}; its address in the static SMEM "
            f"layout is {show(addr)}", s.srcinfo,
            hint="align the tile: start the window on a multiple of the alignment",
            shows=(("address", addr),), fact=f"SMEM alignment of {name}()"))
        if chk.slices > 1:
            # the shard one CTA holds: the window's dimensions that are not distributed
            shard = [const_value(e) for d, e in zip(sv.iv_dims, sv.extents)
                     if sv.base.strides[d] is not None]
            if all(x is not None for x in shard):
                slice_bytes = prod(shard) // chk.slices * esize
                cs.add(path, Condition(
                    "instruction", cmp("==", mod(C(slice_bytes), align), 0),
                    f"{where}: each CTA's slice is {slice_bytes} bytes, so the slices after "
                    f"the first do not start {align}-byte aligned", s.srcinfo,
                    fact=f"multicast slice alignment of {name}()"))


def _product(es):
    out = C(1)
    for e in es:
        out = mul(out, e)
    return out


def _fact(name, ok, s):
    return CheckedFact("instruction", name, ok, s.srcinfo.line if s.srcinfo else None)


def _wgmma(path, s: N.Call, chk: WgmmaOperand, views: dict, cs, diags) -> None:
    name = s.callee.name
    v = views.get(chk.param)
    if v is None:
        return
    where = f"operand '{chk.param}' of {name}()"
    if smem_swizzle(v.mem) != chk.swizzle or v.mem.name != "Sm90_SmemSwizzled":
        _err(diags, f"{where}: the matrix descriptor is built for Sm90_SmemSwizzled("
             f"{chk.swizzle}) but '{v.name}' is in {v.mem}", s)
        return
    inner = v.strides[-1] if v.strides else None
    if inner is not None:
        cs.add(path, Condition(
            "instruction", cmp("==", inner, 1),
            f"{where}: the descriptor reads a {chk.major}-major tile whose last dimension is "
            f"contiguous, but the window {v.name} has stride {show(inner)} there",
            s.srcinfo, hint="pass a window whose last dimension is the tile's contiguous one "
                            f"(or use the {'MN' if chk.major == 'K' else 'K'}-major instruction)",
            shows=(("stride", inner),), fact=f"majorness of {where}"))
    addr = smem_address(v)
    if addr is None:
        return
    atom = HW.swizzle_atom_bytes(chk.swizzle)
    if chk.major == "K":
        c = conj(cmp("==", mod(addr, HW.WGMMA_DESC_ALIGN), 0),
                 cmp("<=", mod(addr, atom), chk.swizzle - chk.k_bytes))
        req = (f"start {HW.WGMMA_DESC_ALIGN}-byte aligned in the first row of a "
               f"{atom}-byte swizzle atom, with its {chk.k_bytes}-byte K slice inside that row")
    else:
        c = cmp("==", mod(addr, atom), 0)
        req = f"start on a {atom}-byte swizzle atom"
    cs.add(path, Condition(
        "instruction", c,
        f"{where}: the matrix descriptor (base offset 0) needs the tile to {req}; its address "
        f"in the static SMEM layout is {show(addr)}", s.srcinfo,
        hint="start the window on a whole 8-row atom of the tile",
        shows=(("address", addr),), fact=f"descriptor address of {where}"))


def _regcount(path, s: N.Call, chk: RegisterCount, cs, diags) -> None:
    arg = binding(s).get(chk.param)
    if arg is None:
        return
    name = s.callee.name
    if const_value(arg) is None:
        _err(diags, f"{name}(): the register count must be a constant (setmaxnreg takes an "
             f"immediate), not {show(arg)}", s, kind="resource")
        return
    lo, hi, step = HW.SETMAXNREG_MIN, HW.SETMAXNREG_MAX, HW.SETMAXNREG_STEP
    cs.add(path, Condition(
        "resource", conj(cmp(">=", arg, lo), cmp("<=", arg, hi), cmp("==", mod(arg, step), 0)),
        f"{name}({show(arg)}): setmaxnreg.{chk.action} takes a register count in [{lo}, "
        f"{hi}] that is a multiple of {step}", s.srcinfo,
        fact=f"register count of {name}()"))


def _aligned_bytes(s: N.Call, chk: Aligned, v: View) -> int:
    """The alignment ``chk`` asks of its argument at call ``s`` (0: none, or not constant)."""
    if chk.elems is None:
        return chk.bytes
    n = const_value(binding(s).get(chk.elems, C(0)))
    # a non-constant count: the instruction's own asserts reject it
    return 0 if n is None else n * v.scalar.nbytes


def _aligned(path, s: N.Call, chk: Aligned, views: dict, cs) -> None:
    v = views.get(chk.param)
    if v is None:
        return
    name = s.callee.name
    nbytes = _aligned_bytes(s, chk, v)
    if nbytes <= 0:
        return
    if is_gmem(v):
        gmem_alignment(path, s, f"argument '{chk.param}' of {name}()", v, nbytes, cs)
        return
    addr = smem_address(v)
    if addr is None:
        return  # registers: no address
    conds = [cmp("==", mod(addr, nbytes), 0)]
    if chk.rows and v.strides and v.strides[0] is not None:
        conds.append(cmp("==", mod(mul(v.strides[0], v.scalar.nbytes), nbytes), 0))
    rows = " and every row" if chk.rows else ""
    cs.add(path, Condition(
        "instruction", conj(*conds),
        f"argument '{chk.param}' of {name}() must start{rows} {nbytes}-byte aligned; its "
        f"address in the static SMEM layout is {show(addr)}", s.srcinfo,
        hint="start the window (and its rows) on a multiple of the alignment",
        shows=(("address", addr),), fact=f"alignment of '{chk.param}' of {name}()"))


# ---------------------------------------------------------------- global-memory alignment
def is_gmem(v: View) -> bool:
    return v.base.mem is not None and v.base.mem.space == "gmem" and v.tmap is None


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _factors(e, out: list) -> int:
    """Split the product ``e`` into its constant and its affine factors (appended to
    ``out``); a factor that is neither (``stride(X, d)`` of a window parameter, which only
    the caller knows) is dropped: it is some integer, so dropping it keeps a divisibility
    condition on the rest sufficient."""
    c = const_value(e)
    if c is not None:
        return c
    if isinstance(e, N.BinOp) and e.op == "*":
        return _factors(e.lhs, out) * _factors(e.rhs, out)
    if has_stride(e):
        return 1
    try:
        linear(e)
    except NotLinear:
        return 1
    out.append(e)
    return 1


def _divides(m: int, fs: list):
    """``m`` divides the product of the affine ``fs``, exactly, as a Presburger condition:
    some split ``m = a * b`` with ``a | fs[0]`` and ``b | fs[1] * ...`` (take ``a =
    gcd(m, fs[0])``)."""
    if m == 1:
        return conj()
    if not fs:
        return disj()
    if len(fs) == 1:
        return cmp("==", mod(fs[0], m), 0)
    return disj(*(conj(cmp("==", mod(fs[0], a), 0) if a > 1 else None,
                       _divides(m // a, fs[1:])) for a in _divisors(m)))


def gmem_offset_condition(v: View, nbytes: int):
    """A sufficient condition, in the conditions language, for the byte offset of the
    global-memory view ``v``'s first element from its tensor's base to be a multiple of
    ``nbytes``, with a hint of how to meet it.

    The offset is ``sum_d start_d * stride_d * elem_bytes``. The dimensions with a constant
    stride form an affine sum, decided exactly modulo ``nbytes``; every other term (a stride
    that is a product of sizes, ``K`` or ``N * K``) must be a multiple of ``nbytes`` on its
    own, stated exactly as a disjunction over how the factors ``start_d``, ``K``, ... share
    the divisor. Rejected although aligned: non-constant terms whose remainders cancel in
    the sum, and windows of window parameters with an unknown stride (``stride(X, d)``),
    where the start alone must be aligned in that dimension."""
    esize = v.scalar.nbytes
    lin, conds, fixes = C(0), [], []
    for d, w in enumerate(v.idx):
        st = v.base.strides[d]
        if st is None:
            continue  # a distributed dimension (not global memory)
        start = w[1]
        cst = const_value(st)
        if cst is not None:
            lin = add(lin, mul(start, cst * esize))
            continue
        fs_start: list = []
        fs_stride: list = []
        k = esize * _factors(start, fs_start) * _factors(st, fs_stride)
        m = nbytes // gcd(nbytes, k)
        if m == 1:
            continue
        conds.append(_divides(m, fs_start + fs_stride))
        need = nbytes // gcd(nbytes, esize * _factors(st, []))
        fixes += [f"`assert {show(f)} % {need} == 0`" for f in fs_stride
                  if isinstance(f, N.Read) and need > 1]
    if const_value(lin) != 0:
        conds.insert(0, cmp("==", mod(lin, nbytes), 0))
    elems = nbytes // gcd(nbytes, esize)
    hint = (f"start the window on a multiple of {elems} elements in every dimension whose "
            f"stride is not a multiple of {nbytes} bytes")
    if fixes:
        hint += f", or make the stride a multiple of {nbytes} bytes: " + \
            " or ".join(dict.fromkeys(fixes))
    return conj(*conds), hint


def gmem_alignment(path, s: N.Call, what: str, v: View, nbytes: int, cs: ConditionSet,
                   why: str = "") -> None:
    """Condition: the global-memory argument ``what`` (view ``v``) of call ``s`` starts
    ``nbytes``-byte aligned, its tensor's base pointer assumed aligned (checked at launch)."""
    cond, hint = gmem_offset_condition(v, nbytes)
    multi = sum(1 for d, w in enumerate(v.idx) if v.base.strides[d] is not None
                and const_value(w[1]) != 0 and const_value(v.base.strides[d]) is None) > 1
    off = v.start_elems()
    shows = () if has_stride(off) else (("element offset", off),)
    cs.add(path, Condition(
        "instruction", cond,
        f"{what} must start {nbytes}-byte aligned in global memory{why}: its window starts "
        f"at element offset {show(off)} of '{v.base.name}' ({v.scalar.nbytes}-byte "
        f"elements), which must be a multiple of {nbytes // gcd(nbytes, v.scalar.nbytes)}"
        f"{' (each term with a size-dependent stride on its own)' if multi else ''}",
        s.srcinfo, hint=hint, shows=shows, fact=f"global-memory alignment of {what}"))


def gmem_alignment_requirements(p: N.Procedure) -> dict:
    """Global-memory parameters of ``p`` that an instruction with a declared ``Aligned``
    check reads or writes through, directly or in a called proc: name -> ``(bytes,
    instruction, line)``, the alignment (least common multiple) its base pointer needs.
    The proofs assume it; the generated entry point checks it at launch."""
    out: dict = {}
    for _path, s, scope in walk_views(p):
        if not isinstance(s, N.Call):
            continue
        views = arg_views(s, scope)
        line = s.srcinfo.line if s.srcinfo else None
        if s.callee.instr is None:
            reqs = [(views.get(q), b, who, ln) for q, (b, who, ln)
                    in gmem_alignment_requirements(s.callee).items()]
        else:
            reqs = []
            for chk in s.callee.instr.checks:
                v = views.get(chk.param) if isinstance(chk, Aligned) else None
                if v is not None:
                    reqs.append((v, _aligned_bytes(s, chk, v), s.callee.name, line))
        for v, b, who, ln in reqs:
            if v is None or b <= 0 or not is_gmem(v) or v.base.path is not None:
                continue  # CPU-scope allocations are cudaMalloc'ed: 256-byte aligned
            old = out.get(v.base.name)
            if old is None or b % old[0]:
                b = b if old is None else b * old[0] // gcd(b, old[0])
                out[v.base.name] = (b, who, ln)
    return out


def _proc_call_alignment(path, s: N.Call, views: dict, cs) -> None:
    """At a call of a proc: what its proofs assumed of its global-memory parameters' base
    pointers holds for the windows passed (the callee's launch check sees only these)."""
    for q, (b, who, ln) in gmem_alignment_requirements(s.callee).items():
        v = views.get(q)
        if v is not None and is_gmem(v):
            gmem_alignment(path, s, f"argument '{q}' of {s.callee.name}()", v, b, cs,
                           f" ({who}() at line {ln} in {s.callee.name}() accesses it with "
                           f"{b}-byte alignment)")


def tensor_map_conditions(path, s: N.WindowStmt, v: View, cs: ConditionSet, diags) -> None:
    """The encoding facts of the tensor map made by window statement ``s`` (view ``v``)."""
    tm = v.tmap
    esize = v.scalar.nbytes
    for d, b in enumerate(tm.box):
        if not 1 <= b <= HW.TMA_BOX_MAX:
            diags.append(Diagnostic.at("instruction", f"tensor map '{tm.name}': box extent {b} "
                                       f"(dimension {d}) is outside [1, {HW.TMA_BOX_MAX}]",
                                       s.srcinfo, "split the copy into boxes of at most "
                                                  f"{HW.TMA_BOX_MAX}"))
    inner = tm.box[-1] * esize
    cs.facts.append(_fact(f"inner box of '{tm.name}' is a multiple of 16 bytes",
                          inner % HW.TMA_INNER_BOX_ALIGN == 0, s))
    if inner % HW.TMA_INNER_BOX_ALIGN:
        diags.append(Diagnostic.at("instruction", f"tensor map '{tm.name}': the inner box "
                                   f"dimension is {tm.box[-1]} x {esize} = {inner} bytes, not a "
                                   f"multiple of {HW.TMA_INNER_BOX_ALIGN}", s.srcinfo))
    if tm.swizzle:
        cs.facts.append(_fact(f"inner box of '{tm.name}' within the swizzle span",
                              inner <= tm.swizzle, s))
        if inner > tm.swizzle:
            diags.append(Diagnostic.at("instruction", f"tensor map '{tm.name}': the inner box "
                                       f"dimension is {inner} bytes, more than the "
                                       f"{tm.swizzle}-byte swizzle span", s.srcinfo,
                                       f"use an inner box of at most {tm.swizzle // esize} "
                                       "elements, or a wider swizzle"))
    strides = v.base.strides
    if len(strides) >= 2 and strides[-2] is not None:
        # stride d = extent(d + 1) * stride(d + 1): a multiple of the innermost outer stride,
        # so that one being a multiple of 16 bytes makes them all
        st = mul(strides[-2], esize)
        cs.add(path, Condition(
            "instruction", cmp("==", mod(st, HW.TMA_GLOBAL_STRIDE_ALIGN), 0),
            f"tensor map '{tm.name}': the global stride of {v.base.name}'s dimension "
            f"{len(strides) - 2} is {show(st)} bytes, which must be a multiple of "
            f"{HW.TMA_GLOBAL_STRIDE_ALIGN} (cuTensorMapEncodeTiled)", s.srcinfo,
            hint=f"assert that {show(v.base.shape[-1])} is a multiple of "
                 f"{HW.TMA_GLOBAL_STRIDE_ALIGN // gcd(esize, HW.TMA_GLOBAL_STRIDE_ALIGN)}",
            shows=(("stride bytes", st),), fact=f"global strides of '{tm.name}'"))


__all__ = ["declared_conditions", "gmem_alignment_requirements", "gmem_offset_condition",
           "smem_address", "smem_swizzle", "tensor_map_conditions"]
