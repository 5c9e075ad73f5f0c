"""Printer round trip: ``parse(print(p)) == p`` and printing is idempotent.

A hypothesis strategy builds random well-formed programs as source text (CPU part with
loops, conditionals, allocations, windows, calls; CUDA part with device functions, task and
thread loops, warp groups, barriers, fences, arrives and awaits). A deterministic test does
the same round trip on every module-level procedure of ``examples/*.py`` and ``specs/*.py``.
"""

from __future__ import annotations

from testlib import load_path

import random
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exogpu_verify import Procedure, parse_proc_source
from exogpu_verify.frontend import print_proc, roundtrip_env

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------ the callees

CALLEES = {
    "copy4": '''
@instr(timeline=cuda_in_order_instr, unit=cuda_thread, codegen="copy4({dst}, {src});")
def copy4(n: size, dst: [f32][n] @ CudaBasicSmem, src: [f32][n] @ CudaGmemLinear):
    assert n == 4
    for i in seq(0, n):
        dst[i] = src[i]
''',
    "acopy4": '''
@instr(timeline=Sm80_cp_async_instr, unit=cuda_thread, barrier=CudaMbarrier,
       codegen="acopy4({dst}, {src});")
def acopy4(n: size, dst: [f32][n] @ CudaBasicSmem, src: [f32][n] @ CudaGmemLinear):
    assert n == 4
    for i in seq(0, n):
        dst[i] = src[i]
''',
    "tload": '''
@instr(timeline=tma_to_smem_async_instr, unit=cuda_warp, barrier=CudaMbarrier,
       codegen="tload({dst}, {src});")
def tload(dst: [f32][4, 8] @ CudaBasicSmem, src: [f32][4, 8] @ Sm90_tensorMap(0, 4, 8)):
    for i in seq(0, 4):
        for j in seq(0, 8):
            dst[i, j] = src[i, j]
''',
    "cpu_copy": '''
@instr(timeline=cpu_in_order_instr, codegen="memcpy({dst}, {src}, 4 * {n});")
def cpu_copy(n: size, dst: [f32][n] @ DRAM, src: [f32][n] @ DRAM):
    for i in seq(0, n):
        dst[i] = src[i]
''',
    "cpu_zero": '''
@instr(timeline=cpu_in_order_instr, codegen="memset0({x});")
def cpu_zero(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 0.0
''',
    "helper": '''
@proc
def helper(n: size, x: [f32][n] @ DRAM, s: index, on: bool):
    for i in seq(0, n):
        if on:
            x[i] = x[i] + s
''',
}


@lru_cache(maxsize=None)
def env() -> dict:
    e = {name: parse_proc_source(src) for name, src in CALLEES.items()}
    e["FOUR"] = 4  # a Python int used in control and data expressions
    return e


def roundtrip(p: Procedure, reparse_env: dict) -> str:
    """Print ``p``, parse it back in ``reparse_env``, check equality and idempotence."""
    text = print_proc(p)
    q = parse_proc_source(text, reparse_env, file="<printed>")
    assert q == p, f"round trip changed the IR:\n{text}\n---\n{print_proc(q)}"
    again = print_proc(q)
    assert again == text, f"printing is not idempotent:\n{text}\n---\n{again}"
    return text


def test_callees_round_trip():
    for p in env().values():
        if isinstance(p, Procedure):
            roundtrip(p, roundtrip_env(p))


# ------------------------------------------------------------------ random programs

SYNC_TLS = ["cuda_in_order", "cuda_temporal", "Sm80_cp_async", "Sm80_generic",
            "tma_to_smem_async", "tma_to_gmem_async", "wgmma_async", "wgmma_async_smem",
            "wgmma_fence_1", "wgmma_fence_2", "cuda_generic_and_async_proxy",
            "cuda_stream_sync", "cpu_in_order"]
SCALARS = ["f32", "f32", "f32", "f16", "bf16", "f64", "i32", "i8", "ui8"]
UNITS = [("cuda_thread", 1), ("8 * cuda_thread", 8), ("cuda_warp", 32),
         ("cuda_warpgroup", 128), ("2 * cuda_warpgroup", 256)]
CMPS = ["<", "<=", ">", ">=", "==", "!="]


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple  # source text of each extent
    space: str  # host | gmem | smem | rmem | tensormap
    scalar: str
    dense: bool


@dataclass(frozen=True)
class Barrier:
    name: str
    extents: tuple  # source text of each extent
    kind: str  # mbarrier | commit | cluster


@dataclass(frozen=True)
class Scope:
    ints: tuple = ()
    bools: tuple = ()
    tensors: tuple = ()
    barriers: tuple = ()
    cuda: bool = False
    threads: int = 0  # threads of the current collective (CUDA scope)
    cta_level: bool = False  # directly in a CTA-wide collective (CudaWarps allowed)
    block_warps: int = 0
    warp_groups: tuple = ()  # (name, count) of a warp_config
    depth: int = 0


def const_of(text: str):
    """The value of a constant extent written by the generator, or None if symbolic."""
    try:
        v = eval(text, {"__builtins__": {}, "FOUR": 4})  # noqa: S307 - our own text
    except NameError:
        return None
    return v if isinstance(v, int) else None


class HypothesisChoices:
    """Random choices drawn by hypothesis (so failing programs shrink)."""

    def __init__(self, draw):
        self.draw = draw

    def ri(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def ch(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def perm(self, n):
        return list(self.draw(st.permutations(range(n))))

    def flt(self):
        return self.draw(st.floats(-1e4, 1e4, allow_nan=False, width=32))


class SeededChoices:
    """The same choices from a seeded ``random.Random`` (deterministic coverage test)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def ri(self, lo, hi):
        return self.rng.randint(lo, hi)

    def ch(self, seq):
        return self.rng.choice(list(seq))

    def perm(self, n):
        out = list(range(n))
        self.rng.shuffle(out)
        return out

    def flt(self):
        return float(np.float32(self.rng.uniform(-1e4, 1e4)))


@dataclass
class Gen:
    rnd: object
    n: int = 0
    lines: list = field(default_factory=list)

    # ---------------------------------------------------------------- drawing helpers
    def ri(self, lo, hi):
        return self.rnd.ri(lo, hi)

    def ch(self, seq):
        return self.rnd.ch(seq)

    def coin(self, pct):
        return self.ri(0, 99) < pct

    def fresh(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def emit(self, depth, text):
        self.lines.append("    " * depth + text)

    # ---------------------------------------------------------------- expressions
    def aff(self, sc: Scope, depth: int = 2) -> str:
        """A quasi-affine integer expression."""
        k = self.ri(0, 10 if depth > 0 else 2)
        if k == 0 or not sc.ints:
            return str(self.ri(-3, 20))
        if k == 1:
            return self.ch(sc.ints)
        if k == 2:
            return self.ch(["FOUR", str(self.ri(0, 9))])
        a = self.aff(sc, depth - 1)
        if k == 3:
            return f"({a}) + ({self.aff(sc, depth - 1)})"
        if k == 4:
            return f"({a}) - ({self.aff(sc, depth - 1)})"
        if k == 5:
            return f"{self.ri(-4, 6)} * ({a})"
        if k == 6:
            return f"({a}) * {self.ri(0, 6)}"
        if k == 7:
            return f"({a}) {self.ch(['/', '//'])} {self.ri(1, 9)}"
        if k == 8:
            return f"({a}) % {self.ri(1, 9)}"
        if k == 9:
            return f"-({a})"
        return f"({a})"

    def cond(self, sc: Scope, depth: int = 2) -> str:
        k = self.ri(0, 6 if depth > 0 else 2)
        if k == 0 and sc.bools:
            return self.ch(sc.bools)
        if k == 1 and self.coin(20):
            return self.ch(["True", "False"])
        if k <= 2:
            return f"{self.aff(sc, 1)} {self.ch(CMPS)} {self.aff(sc, 1)}"
        if k == 3:
            return f"{self.aff(sc, 1)} {self.ch(CMPS)} {self.aff(sc, 1)} {self.ch(CMPS)} " \
                   f"{self.aff(sc, 1)}"
        if k == 4:
            return f"({self.cond(sc, depth - 1)}) and ({self.cond(sc, depth - 1)})"
        if k == 5:
            return f"({self.cond(sc, depth - 1)}) or ({self.cond(sc, depth - 1)})"
        return f"not ({self.cond(sc, depth - 1)})"

    def readable(self, sc: Scope):
        return [t for t in sc.tensors if t.space != "tensormap"]

    def point(self, sc: Scope, t: Tensor) -> str:
        if not t.shape:
            return t.name
        return f"{t.name}[{', '.join(self.aff(sc, 1) for _ in t.shape)}]"

    def data(self, sc: Scope, depth: int = 2) -> str:
        k = self.ri(0, 10 if depth > 0 else 3)
        ts = self.readable(sc)
        if k == 0:
            return repr(self.rnd.flt())
        if k == 1:
            return str(self.ri(-5, 50))
        if k == 2 and sc.ints:
            return self.ch(sc.ints)
        if k <= 3 or (k == 2 and not sc.ints):
            return self.point(sc, self.ch(ts)) if ts else "1.0"
        a = self.data(sc, depth - 1)
        if k == 4:
            return f"-({a})"
        if k in (5, 6):
            return f"({a}) {self.ch(['+', '-', '*', '/'])} ({self.data(sc, depth - 1)})"
        if k == 7:
            return f"{self.ch(['relu', 'sqrt', 'exp', 'abs'])}({a})"
        if k == 8:
            return f"{self.ch(['fmax', 'fmin'])}({a}, {self.data(sc, depth - 1)})"
        if k == 9:
            return f"select({a}, {', '.join(self.data(sc, depth - 1) for _ in range(3))})"
        return f"({a})"

    def window(self, sc: Scope, t: Tensor, widths: tuple) -> str:
        """A window of ``t`` with one interval of each width (in order) and points elsewhere."""
        if len(t.shape) == len(widths) and self.coin(25) and all(
                const_of(e) in (None, w) for e, w in zip(t.shape, widths)):
            return t.name  # the whole tensor or window, by name
        dims = sorted(self.rnd.perm(len(t.shape))[:len(widths)])
        parts = []
        for d in range(len(t.shape)):
            if d in dims:
                w = widths[dims.index(d)]
                if self.coin(70):
                    lo = self.aff(sc, 1)
                    parts.append(f"{lo}:{lo} + {w}")
                else:
                    lo = self.ri(0, 3)
                    parts.append(f"{lo}:{lo + w}")
            else:
                parts.append(self.aff(sc, 1))
        return f"{t.name}[{', '.join(parts)}]"

    # ---------------------------------------------------------------- statements
    def block(self, sc: Scope, depth: int, n_max: int = 3) -> None:
        start = len(self.lines)
        for _ in range(self.ri(1, n_max)):
            sc = self.stmt(sc, depth)
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def stmt(self, sc: Scope, depth: int) -> Scope:
        """Emit one statement; returns the scope for the following statements."""
        nest = sc.depth < 3
        opts = ["assign", "reduce", "alloc", "window"]
        if nest:
            opts += ["seq", "if", "if"]
        if sc.cuda:
            opts += ["smem", "rmem", "barrier", "fence", "arrive", "await", "copy"]
            if nest and sc.threads > 1:
                opts += ["threads", "threads"]
            if nest and sc.cta_level:
                opts += ["warps"]
        else:
            opts += ["cpu_call", "cpu_call"]
            if nest:
                opts += ["kernel", "kernel"]
        what = self.ch(opts)
        return getattr(self, "s_" + what)(sc, depth)

    def writable(self, sc: Scope):
        if sc.cuda:
            return [t for t in sc.tensors if t.space in ("gmem", "smem", "rmem")]
        return [t for t in sc.tensors if t.space == "host"]

    def s_assign(self, sc, d, op="="):
        ts = self.writable(sc)
        if not ts:
            self.emit(d, "pass")
            return sc
        self.emit(d, f"{self.point(sc, self.ch(ts))} {op} {self.data(sc)}")
        return sc

    def s_reduce(self, sc, d):
        return self.s_assign(sc, d, "+=")

    def s_alloc(self, sc, d, space=None):
        if sc.cuda and space is None:
            return self.s_smem(sc, d)
        name = self.fresh("a")
        scalar = self.ch(SCALARS)
        rank = self.ri(0, 3)
        sizes = [i for i in sc.ints if i.startswith("N")]
        shape = tuple(self.ch(sizes + [str(self.ri(1, 16)), "N0 + 2", "2 * N0"])
                      if sizes else str(self.ri(1, 16)) for _ in range(rank))
        mem = "DRAM" if self.coin(70) else "CudaGmemLinear"
        ann = f"{scalar}[{', '.join(shape)}]" if shape else scalar
        self.emit(d, f"{name}: {ann} @ {mem}")
        t = Tensor(name, shape, "host" if mem == "DRAM" else "gmem", scalar, True)
        return replace(sc, tensors=sc.tensors + (t,))

    def const_shape(self, rank_lo, rank_hi, lo=1, hi=16):
        shape = []
        for _ in range(self.ri(rank_lo, rank_hi)):
            v = self.ri(lo, hi)
            shape.append(self.ch([str(v), f"2 * {v}", f"{v} + 1", f"FOUR * {v}"]))
        return tuple(shape)

    def s_smem(self, sc, d):
        name = self.fresh("s")
        shape = self.const_shape(1, 3, 4, 16)
        scalar = "f32" if self.coin(75) else self.ch(SCALARS)
        mem = self.ch(["CudaSmemLinear", "CudaSmemLinear", "Sm90_SmemSwizzled(128)",
                       "Sm90_SmemSwizzled(64)"])
        self.emit(d, f"{name}: {scalar}[{', '.join(shape)}] @ {mem}")
        return replace(sc, tensors=sc.tensors + (Tensor(name, shape, "smem", scalar, True),))

    def s_rmem(self, sc, d):
        name = self.fresh("r")
        shape = self.const_shape(0, 2)
        ann = f"f32[{', '.join(shape)}]" if shape else "f32"
        self.emit(d, f"{name}: {ann} @ CudaRmem")
        return replace(sc, tensors=sc.tensors + (Tensor(name, shape, "rmem", "f32", True),))

    def s_window(self, sc, d):
        ts = [t for t in self.readable(sc) if t.shape]
        if not ts:
            self.emit(d, "pass")
            return sc
        t = self.ch(ts)
        name = self.fresh("w")
        n_iv = self.ri(1, len(t.shape))
        ivs = sorted(self.rnd.perm(len(t.shape))[:n_iv])
        parts, shape = [], []
        for k in range(len(t.shape)):
            if k in ivs:
                form = self.ri(0, 3)
                if form == 0:
                    parts.append(":")
                    shape.append(t.shape[k])
                elif form == 1:
                    lo = self.aff(sc, 1)
                    w = self.ri(1, 8)
                    parts.append(f"{lo}:{lo} + {w}")
                    shape.append(str(w))
                elif form == 2:
                    hi = self.ri(1, 8)
                    parts.append(f":{hi}")
                    shape.append(str(hi))
                else:
                    parts.append(f"{self.ri(0, 3)}:")
                    shape.append(f"{t.shape[k]} - 3")
            else:
                parts.append(self.aff(sc, 1))
        self.emit(d, f"{name} = {t.name}[{', '.join(parts)}]")
        w = Tensor(name, tuple(shape), t.space, t.scalar, False)
        return replace(sc, tensors=sc.tensors + (w,))

    def s_seq(self, sc, d):
        it = self.fresh("i")
        unroll = f", pragma_unroll={self.ri(0, 4)}" if self.coin(15) else ""
        self.emit(d, f"for {it} in seq({self.aff(sc, 1)}, {self.aff(sc, 1)}{unroll}):")
        self.block(replace(sc, ints=sc.ints + (it,), depth=sc.depth + 1, cta_level=False),
                   d + 1)
        return sc

    def s_if(self, sc, d):
        self.emit(d, f"if {self.cond(sc)}:")
        inner = replace(sc, depth=sc.depth + 1)
        self.block(inner, d + 1)
        if self.coin(50):
            self.emit(d, "else:")
            self.block(inner, d + 1)
        return sc

    def s_cpu_call(self, sc, d):
        f32_host = [t for t in sc.tensors if t.space == "host" and t.scalar == "f32" and t.shape]
        if not f32_host:
            return self.s_assign(sc, d)
        k = self.ri(0, 2)
        if k == 0:
            dst, src = self.ch(f32_host), self.ch(f32_host)
            self.emit(d, f"cpu_copy(4, {self.window(sc, dst, (4,))}, {self.window(sc, src, (4,))})")
        elif k == 1:
            dense = [t for t in f32_host if t.dense and len(t.shape) == 1]
            if not dense:
                return self.s_assign(sc, d)
            t = self.ch(dense)
            arg = t.name if self.coin(50) else f"{t.name}[:]"
            self.emit(d, f"cpu_zero({t.shape[0]}, {arg})")
        else:
            t = self.ch(f32_host)
            on = self.cond(sc, 1)
            self.emit(d, f"helper(4, {self.window(sc, t, (4,))}, {self.aff(sc, 1)}, {on})")
        return sc

    def s_kernel(self, sc, d):
        cluster = self.ch([1, 1, 2, 4])
        launch = ""
        if self.coin(30):
            groups = (("producer", self.ri(1, 4)), ("consumer", self.ch([4, 8])))
            cfgs = [f'CudaWarpConfig("{groups[0][0]}", {groups[0][1]}, setmaxnreg_dec=40)',
                    f'CudaWarpConfig("{groups[1][0]}", {groups[1][1]}'
                    + (", setmaxnreg_inc=232)" if self.coin(50) else ")")]
            warps = groups[0][1] + groups[1][1]
            launch = f"warp_config=[{', '.join(cfgs)}]"
        else:
            groups = ()
            warps = self.ch([1, 2, 4, 8])
            launch = f"blockDim={32 * warps}"
        if cluster != 1:
            launch = f"clusterDim={cluster}, " + launch if self.coin(50) else \
                launch + f", clusterDim={cluster}"
        self.emit(d, f"with CudaDeviceFunction({launch}):")
        ints = sc.ints
        for level in range(self.ri(1, 2)):
            it = self.fresh("task")
            self.emit(d + 1 + level, f"for {it} in cuda_tasks({self.aff(sc, 1)}, "
                                     f"{self.aff(sc, 1)}):")
            ints += (it,)
        depth = d + 1 + level + 1
        inner = replace(sc, ints=ints, cuda=True, threads=32 * warps, cta_level=True,
                        block_warps=warps, warp_groups=groups, depth=sc.depth + 1)
        # the tensors visible in a kernel: GMEM ones (and tensor maps)
        inner = replace(inner, tensors=tuple(t for t in sc.tensors
                                             if t.space in ("gmem", "tensormap")))
        if cluster > 1 and self.coin(60):
            c = self.fresh("c")
            self.emit(depth, f"for {c} in cuda_threads(0, {cluster}, unit=cuda_cta_in_cluster):")
            inner = replace(inner, ints=inner.ints + (c,))
            depth += 1
        self.block(inner, depth, n_max=4)
        return sc

    def s_threads(self, sc, d):
        units = [(u, n) for u, n in UNITS if n <= sc.threads and sc.threads % n == 0]
        if not units:
            return self.s_assign(sc, d)
        unit, size = self.ch(units)
        count = self.ri(1, sc.threads // size)
        it = self.fresh("t")
        hi = self.ch([str(count), f"{count} * 1", f"FOUR * {count} / 4"])
        kw = f", unit={unit}" if unit != "cuda_thread" or self.coin(70) else ""
        self.emit(d, f"for {it} in cuda_threads(0, {hi}{kw}):")
        self.block(replace(sc, ints=sc.ints + (it,), threads=size, cta_level=False,
                           depth=sc.depth + 1), d + 1)
        return sc

    def s_warps(self, sc, d):
        if sc.warp_groups:
            name, count = self.ch(sc.warp_groups)
            if self.coin(30):
                self.emit(d, f'with CudaWarps(name="{name}"):')
                n = count
            else:
                lo = self.ri(0, count - 1)
                hi = self.ri(lo + 1, count)
                self.emit(d, f'with CudaWarps({lo}, {hi}, name="{name}"):')
                n = hi - lo
        else:
            lo = self.ri(0, sc.block_warps - 1)
            hi = self.ri(lo + 1, sc.block_warps)
            self.emit(d, f"with CudaWarps({lo}, {hi}):")
            n = hi - lo
        self.block(replace(sc, threads=32 * n, cta_level=False, depth=sc.depth + 1), d + 1)
        return sc

    def s_barrier(self, sc, d):
        name = self.fresh("z")
        k = self.ri(0, 5)
        if k <= 2:
            extents = tuple(self.ch(["2", "4", "N0", "N0 / 4", "N0 + 1"])
                            for _ in range(self.ri(0, 2)))
            # `@` binds like `*`, so a sum needs parentheses before `@ ring_buffer_by`
            dims = [(f"({e})" if "+" in e else e) + f" @ ring_buffer_by({self.ri(1, 4)})"
                    if self.coin(50) else e for e in extents]
            mech = "CudaMbarrier" if k < 2 else f"CudaMbarrierPreArrive({self.ri(1, 3)})"
            kind = "mbarrier"
        elif k == 3:
            extents, dims, mech, kind = (), [], "CudaClusterSync", "cluster"
        else:
            extents = tuple(self.ch(["2", "4"]) for _ in range(self.ri(0, 1)))
            dims = list(extents)
            mech = self.ch(["Sm80_CommitGroup", "Sm90_TmaCommitGroup", "Sm90_WgmmaCommitGroup"])
            kind = "commit"
        shape = f"[{', '.join(dims)}]" if dims else ""
        self.emit(d, f"{name}: barrier{shape} @ {mech}")
        return replace(sc, barriers=sc.barriers + (Barrier(name, extents, kind),))

    def bref(self, sc, b: Barrier, slices: bool) -> str:
        if not b.extents:
            return b.name
        idx = []
        for _ in b.extents:
            if slices and self.coin(25):
                idx.append(self.ch([":", "0:1", ":1"]))
            else:
                idx.append(self.aff(sc, 1))
        return f"{b.name}[{', '.join(idx)}]"

    def s_fence(self, sc, d):
        self.emit(d, f"Fence({self.ch(SYNC_TLS)}, {self.ch(SYNC_TLS)})")
        return sc

    def s_arrive(self, sc, d):
        if not sc.barriers:
            return self.s_fence(sc, d)
        b = self.ch(sc.barriers)
        n = self.ri(1, 2 if b.extents else 1)
        tail = "".join(f" >> {self.bref(sc, b, True)}" for _ in range(n))
        one = ", 1" if self.coin(25) else ""
        self.emit(d, f"Arrive({self.ch(SYNC_TLS)}{one}){tail}")
        return sc

    def s_await(self, sc, d):
        if not sc.barriers:
            return self.s_fence(sc, d)
        b = self.ch(sc.barriers)
        n = self.ch(["", ", 0", f", {self.ri(0, 3)}"])
        self.emit(d, f"Await({self.bref(sc, b, False)}, {self.ch(SYNC_TLS)}{n})")
        return sc

    def s_copy(self, sc, d):
        smem = [t for t in sc.tensors if t.space == "smem" and t.scalar == "f32"]
        gmem = [t for t in sc.tensors if t.space == "gmem" and t.scalar == "f32" and t.shape]
        mbar = [b for b in sc.barriers if b.kind == "mbarrier"]
        tmaps = [t for t in sc.tensors if t.space == "tensormap"]
        k = self.ri(0, 2)
        if k == 2 and mbar and tmaps and [t for t in smem if len(t.shape) >= 2]:
            dst = self.ch([t for t in smem if len(t.shape) >= 2])
            self.emit(d, f"tload({self.window(sc, dst, (4, 8))}, "
                         f"{self.window(sc, self.ch(tmaps), (4, 8))}) >> "
                         f"{self.bref(sc, self.ch(mbar), False)}")
            return sc
        if not smem or not gmem:
            return self.s_assign(sc, d)
        dst = self.window(sc, self.ch(smem), (4,))
        src = self.window(sc, self.ch(gmem), (4,))
        if k >= 1 and mbar:
            b = self.ch(mbar)
            tail = "".join(f" >> {self.bref(sc, b, True)}" for _ in range(self.ri(1, 2)))
            self.emit(d, f"acopy4(4, {dst}, {src}){tail}")
        else:
            self.emit(d, f"copy4(FOUR, {dst}, {src})")
        return sc

    # ---------------------------------------------------------------- whole program
    def program(self) -> str:
        sizes = [f"N{k}" for k in range(self.ri(1, 3))]
        params = [f"{s}: size" for s in sizes]
        ints, bools, tensors = list(sizes), [], []
        for k in range(self.ri(0, 2)):
            params.append(f"x{k}: index")
            ints.append(f"x{k}")
        for k in range(self.ri(0, 2)):
            params.append(f"b{k}: bool")
            bools.append(f"b{k}")
        n_tensors = self.ri(1, 5)
        for k in range(n_tensors):
            space = "host" if k == 0 else "gmem" if k == 1 else self.ch(["host", "gmem"])
            scalar = "f32" if k < 2 else self.ch(SCALARS)
            shape = tuple(self.ch(sizes + [str(self.ri(4, 64)), f"{sizes[0]} + 4"])
                          for _ in range(self.ri(1, 3)))
            dense = k < 2 or self.coin(60)
            name = f"{'A' if space == 'host' else 'G'}{k}"
            ann = (f"{scalar}" if dense else f"[{scalar}]") + f"[{', '.join(shape)}]"
            mem = "" if space == "host" and self.coin(40) else \
                f" @ {'DRAM' if space == 'host' else 'CudaGmemLinear'}"
            params.append(f"{name}: {ann}{mem}")
            tensors.append(Tensor(name, shape, space, scalar, dense))
        self.emit(0, "@proc")
        self.emit(0, f"def gen({', '.join(params)}):")
        sc = Scope(ints=tuple(ints), bools=tuple(bools), tensors=tuple(tensors))
        for _ in range(self.ri(0, 3)):
            k = self.ri(0, 2)
            if k == 0:
                self.emit(1, f"assert {self.ch(sizes)} % {self.ri(1, 8)} == 0")
            elif k == 1:
                t = self.ch(tensors)
                self.emit(1, f"assert stride({t.name}, {len(t.shape) - 1}) == 1")
            else:
                # a random condition, kept satisfiable (sizes are >= 1): asserts that no
                # size satisfies are rejected at decoration (frontend/asserts.py)
                c = self.cond(replace(sc, ints=tuple(sizes)), 1)
                self.emit(1, f"assert ({c}) or {self.ch(sizes)} >= 1")
        # a tensor map over a dense rank-2 GMEM parameter
        g2 = [t for t in tensors if t.space == "gmem" and t.dense and len(t.shape) == 2
              and t.scalar == "f32"]
        if g2 and self.coin(50):
            t = self.ch(g2)
            self.emit(1, f"tm = {t.name}[:, :] @ Sm90_tensorMap(0, 4, 8)")
            sc = replace(sc, tensors=sc.tensors + (Tensor("tm", t.shape, "tensormap", "f32",
                                                          False),))
        if self.coin(80):  # most programs launch a kernel
            sc = self.s_kernel(sc, 1)
        self.block(sc, 1)
        return "\n".join(self.lines) + "\n"


@st.composite
def programs(draw):
    return Gen(HypothesisChoices(draw)).program()


@pytest.mark.slow
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_round_trip(text):
    p = parse_proc_source(text, env(), file="<generated>")
    roundtrip(p, roundtrip_env(p) | env())


def test_seeded_programs_cover_the_language_and_round_trip():
    """400 seeded programs: the generator produces every construct (guards against a
    silently narrow strategy), and each one round-trips."""
    needles = ["cuda_threads(", "CudaWarps(", "Arrive(", ", 1) >> ", "Await(", "Fence(",
               "select(", "relu(", "@ ring_buffer_by(", "CudaMbarrierPreArrive(",
               "CudaClusterSync", "Sm90_WgmmaCommitGroup", "tload(", "acopy4(", "copy4(",
               "cpu_copy(", "cpu_zero(", "helper(", "else:", " += ", "warp_config=",
               "clusterDim=", "Sm90_tensorMap", "Sm90_SmemSwizzled", "unit=cuda_cta_in_cluster",
               "unit=2 * cuda_warpgroup", " % ", " // ", " not ", " and ", " or ",
               "pragma_unroll", "stride(", ": bool", ": index", "[f32][", "@ CudaRmem"]
    seen = set()
    for seed in range(400):
        text = Gen(SeededChoices(seed)).program()
        seen |= {n for n in needles if n in text}
        p = parse_proc_source(text, env(), file="<generated>")
        roundtrip(p, roundtrip_env(p) | env())
    assert not set(needles) - seen, sorted(set(needles) - seen)


# ------------------------------------------------------------------ examples and specs


def _module_files():
    files = []
    for folder in ("examples", "specs"):
        files += sorted((ROOT / folder).glob("*.py"))
    return [f for f in files if not f.name.startswith("_")]


def _import(path: Path):
    return load_path(path, 'exogpu_roundtrip')


FILES = _module_files()


@pytest.mark.skipif(not FILES, reason="examples/ and specs/ hold no modules yet")
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_examples_and_specs_round_trip(path):
    mod = _import(path)
    procs = {k: v for k, v in vars(mod).items() if isinstance(v, Procedure)}
    if not procs:
        pytest.skip(f"{path.name} defines no module-level procedure")
    for name, p in procs.items():
        # module globals resolve user-defined memories and instructions; callees win
        roundtrip(p, {k: v for k, v in vars(mod).items() if not k.startswith("__")}
                  | roundtrip_env(p))
