"""A seeded generator of small, well-formed kernels for the symbolic/concrete agreement tests.

``generate(n, seed)`` returns ``n`` :class:`GenProg` records (source text, sizes to sample,
family, knobs). Every program is parsed with ``parse_proc_source``; whether it passes the
static analyses is the caller's business (programs that do not are counted and discarded).

Families (each knob is drawn at random, so roughly half of the programs are racy):

* ``phases``: ``cuda_tasks`` over ``N / 64``, an SMEM (or GMEM scratch) tile written by one
  thread layout and read by another with a random index pattern (identity, reverse, shift,
  8x8 transpose, intra-warp shift), optional CTA ``Fence`` between the phases and at the end,
  optionally a warp-scope Fence instead, optionally inside ``seq`` loop over ``K`` reusing the
  tile (the classic missing second ``__syncthreads``), optionally double-buffered; GMEM
  outputs with disjoint or overlapping tiles per task.
* ``ring``: a producer warp and ``W`` consumer warps (``CudaWarps``) passing tiles through an
  ``S``-slot SMEM ring guarded by ``full``/``empty`` mbarrier rings
  (``ring_buffer_by(D)``; ``empty`` either released by a guarded ``Await(empty[k - d])`` or
  pre-arrived with ``CudaMbarrierPreArrive(P)``), with random off-by-one virtual indices,
  timelines, a TMA-like producer (trailing barrier) and overlapping output tiles.
* ``two_kernels``: a GMEM tile written by one kernel and read (with another tiling, maybe
  through SMEM) by the next: ordered by the kernel boundary.
* ``siblings``: two sibling blocks allocating SMEM tiles, often under the same name, with
  random extents, offsets and fences.
* ``commit``: per-thread ``cp_async``-like copies (``Sm80_cp_async`` timeline) committed to
  an ``Sm80_CommitGroup`` per thread and awaited with a random depth, read ``lag`` iterations
  later by the same or another thread (then behind a CTA Fence), with or without the final
  drain ``Await(cg, ..., 0)`` and the Fence before the tile's free.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path


def _instrs():
    path = Path(__file__).resolve().parent / "instrs.py"
    name = "exogpu_tests__symbolic__progs__instrs"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


ENV = _instrs().ENV

#: sizes sampled for programs whose only size is N (iterations N / 64 = 1, 2, 3, 5, 6)
N_SIZES = ({"N": 64}, {"N": 128}, {"N": 192}, {"N": 320}, {"N": 384})
#: sizes for programs with a K loop: (tasks, iterations)
NK_SIZES = ({"N": 64, "K": 1}, {"N": 128, "K": 2}, {"N": 64, "K": 3}, {"N": 192, "K": 5})


@dataclass
class GenProg:
    name: str
    family: str
    src: str
    sizes: tuple
    knobs: dict = field(default_factory=dict)


class _W:
    """Indented line writer."""

    def __init__(self):
        self.lines: list[str] = []
        self.ind = 0

    def __call__(self, line: str):
        self.lines.append("    " * self.ind + line)

    def block(self):
        w = self

        class _B:
            def __enter__(self):
                w.ind += 1

            def __exit__(self, *a):
                w.ind -= 1

        return _B()

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


# ------------------------------------------------------------------ phases family
#: thread layouts over 64 elements: (loop headers, linear element id, per-thread id)
LAYOUTS = {
    "flat": (["for t in cuda_threads(0, 64, unit=cuda_thread):"], "t"),
    "warps": (["for w in cuda_threads(0, 2, unit=cuda_warp):",
               "for l in cuda_threads(0, 32, unit=cuda_thread):"], "(32 * w + l)"),
    "half_seq": (["for t in cuda_threads(0, 32, unit=cuda_thread):", "for j in seq(0, 2):"],
                 "(32 * j + t)"),
    "interleaved": (["for w in cuda_threads(0, 2, unit=cuda_warp):",
                     "for l in cuda_threads(0, 32, unit=cuda_thread):"], "(2 * l + w)"),
}


def _pattern(kind: str, i: str, s: int) -> str:
    if kind == "id":
        return i
    if kind == "rev":
        return f"63 - {i}"
    if kind == "shift":
        return f"({i} + {s}) % 64"
    if kind == "transpose":
        return f"8 * ({i} % 8) + {i} / 8"
    if kind == "warp_shift":  # stays within the 32-element half of the element id
        return f"32 * ({i} / 32) + ({i} % 32 + {s}) % 32"
    raise ValueError(kind)


def gen_phases(rng: random.Random, name: str) -> GenProg:
    use_k = rng.random() < 0.4
    dbuf = use_k and rng.random() < 0.3
    smem = rng.random() < 0.8
    two_d = smem and not dbuf and rng.random() < 0.25
    lw = rng.choice(list(LAYOUTS))
    lr = rng.choice(list(LAYOUTS))
    pw = rng.choice(["id", "id", "rev", "shift", "transpose"])
    pr = rng.choice(["id", "id", "rev", "shift", "transpose", "warp_shift"])
    s = rng.choice([1, 3, 17, 32])
    warp_fence = lw == lr == "warps" and rng.random() < 0.35
    fence1 = rng.random() < 0.85
    fence2 = use_k and rng.random() < 0.8
    fence2_guard = fence2 and rng.random() < 0.3  # skip the second sync in the last step
    fence_end = rng.random() < 0.85
    out = rng.choice(["disjoint"] * 6 + ["overlap", "same", "rw", "rw"])
    # fence timelines: the temporal set only orders overwrites (WAR/WAW), not reads (RAW)
    tl1 = rng.choice(["cuda_in_order"] * 5 + ["cuda_temporal"])
    tl2 = rng.choice(["cuda_in_order"] * 3 + ["cuda_temporal"])
    knobs = dict(use_k=use_k, dbuf=dbuf, smem=smem, two_d=two_d, lw=lw, lr=lr, pw=pw, pr=pr,
                 s=s, warp_fence=warp_fence, fence1=fence1, fence2=fence2, fence2_guard=fence2_guard,
                 fence_end=fence_end, out=out, tl1=tl1, tl2=tl2)
    w = _W()
    params = "N: size, K: size, " if use_k else "N: size, "
    cext = "64" if out == "same" else "N"
    scratch = "" if smem else ", S: f32[N] @ CudaGmemLinear"
    w(f"def {name}({params}A: f32[N] @ CudaGmemLinear, C: f32[{cext}] @ CudaGmemLinear"
      f"{scratch}):")
    with w.block():
        w("assert N % 64 == 0")
        w("with CudaDeviceFunction(blockDim=64):")
        with w.block():
            w("for task in cuda_tasks(0, N / 64):")
            with w.block():
                if smem:
                    w("buf: f32[2, 64] @ CudaSmemLinear" if dbuf else
                      "buf: f32[8, 8] @ CudaSmemLinear" if two_d else
                      "buf: f32[64] @ CudaSmemLinear")
                slot = "k % 2, " if dbuf else ""

                def ref(e):
                    if not smem:
                        return f"S[64 * task + {e}]"
                    if two_d:
                        return f"buf[({e}) / 8, ({e}) % 8]"
                    return f"buf[{slot}{e}]"

                def outref(i):
                    if out == "same":
                        return f"C[{i}]"
                    if out == "overlap":
                        return f"C[32 * task + {i}]"
                    return f"C[64 * task + {i}]"

                if use_k:
                    w("for k in seq(0, K):")
                    w.ind += 1
                hw, iw = LAYOUTS[lw]
                hr, ir = LAYOUTS[lr]
                if warp_fence:
                    w(hw[0])
                    with w.block():
                        w(hw[1])
                        with w.block():
                            w(f"{ref(_pattern(pw, iw, s))} = A[64 * task + {iw}]")
                        if fence1:
                            w(f"Fence({tl1}, cuda_in_order)")
                        w(hr[1])
                        with w.block():
                            op = "+=" if out == "rw" else "="
                            w(f"{outref(ir)} {op} {ref(_pattern(pr, ir, s))}")
                else:
                    for h in hw:
                        w(h)
                        w.ind += 1
                    w(f"{ref(_pattern(pw, iw, s))} = A[64 * task + {iw}]")
                    w.ind -= len(hw)
                    if fence1:
                        w(f"Fence({tl1}, cuda_in_order)")
                    for h in hr:
                        w(h)
                        w.ind += 1
                    op = "+=" if out == "rw" else "="
                    w(f"{outref(ir)} {op} {ref(_pattern(pr, ir, s))}")
                    w.ind -= len(hr)
                if fence2:
                    if fence2_guard:
                        w("if k < K - 1:")
                        w.ind += 1
                    w(f"Fence({tl2}, cuda_in_order)")
                    if fence2_guard:
                        w.ind -= 1
                if use_k:
                    w.ind -= 1
                if fence_end:
                    w("Fence(cuda_in_order, cuda_in_order)")
    return GenProg(name, "phases", w.text(), NK_SIZES if use_k else N_SIZES, knobs)


# ------------------------------------------------------------------ ring family
def gen_ring(rng: random.Random, name: str) -> GenProg:
    D = rng.choice([1, 2, 2, 3, 4])  # ring depth
    S = D if rng.random() < 0.85 else rng.choice([1, 2, 3, 4])  # buffer slots
    pre = rng.random() < 0.2
    P = rng.randint(1, D) if pre else 0
    W = rng.choice([1, 2])
    tma = rng.random() < 0.35
    # at most one deliberate protocol bug (None: the textbook protocol)
    bug = rng.choice([None] * 7 + ["wait_early", "wait_late", "wait_2wrap", "guard", "release",
                                   "full_off", "full_tl", "overlap", "no_fence",
                                   "last_release", "double_release", "release_task0"])
    dw = 0 if pre else {"wait_early": S - 1, "wait_late": S + 1, "wait_2wrap": 2 * S}.get(bug, S)
    guard = dw if bug != "guard" else max(0, dw + rng.choice([-1, 1]))
    o = rng.choice([-1, 1]) if bug == "release" else 0  # consumer's release offset
    fo = 1 if bug == "full_off" else 0  # producer's full offset
    Lf = "cuda_temporal" if (tma or bug == "full_tl") else "cuda_in_order"
    Le = rng.choice(["cuda_in_order", "cuda_in_order", "cuda_temporal"])
    L2c = ("cuda_generic_and_async_proxy" if tma and rng.random() < 0.7 else "cuda_in_order")
    out = "overlap" if bug == "overlap" else "disjoint"
    fence_end = bug != "no_fence"
    tasks = 2 if bug == "release_task0" else rng.choice([1, 2])
    # TMA-filled stages read with ordinary loads: each consumer warp's proxy Fence before the
    # release (docs/semantics.md, "Proxies"); missing in about a quarter of them (a bug).
    # Derived from the other knobs, so that the random stream (the corpus) stays the same.
    px = tma and (D + S + W + tasks) % 4 != 0
    knobs = dict(bug=bug, D=D, S=S, pre=pre, P=P, W=W, tma=tma, dw=dw, guard=guard, o=o, fo=fo, Lf=Lf,
                 Le=Le, L2c=L2c, out=out, fence_end=fence_end, tasks=tasks, px=px)
    proxy_fence = "Fence(cuda_in_order, cuda_generic_and_async_proxy)"
    empty_mech = f"CudaMbarrierPreArrive({P})" if pre else "CudaMbarrier"
    w = _W()
    w(f"def {name}(N: size, A: f32[{tasks}, N] @ CudaGmemLinear, "
      f"C: f32[{tasks}, N] @ CudaGmemLinear):")
    with w.block():
        w("assert N % 64 == 0")
        w(f'with CudaDeviceFunction(warp_config=[CudaWarpConfig("producer", 1), '
          f'CudaWarpConfig("consumer", {W})]):')
        with w.block():
            w(f"for task in cuda_tasks(0, {tasks}):")
            with w.block():
                w(f"buf: f32[{S}, 64] @ CudaSmemLinear")
                w(f"full: barrier[N / 64 @ ring_buffer_by({D})] @ CudaMbarrier")
                w(f"empty: barrier[N / 64 @ ring_buffer_by({D})] @ {empty_mech}")
                w("for k in seq(0, N / 64):")
                with w.block():
                    w('with CudaWarps(0, 1, name="producer"):')
                    with w.block():
                        if pre:
                            w("Await(empty[k], cuda_in_order, 0)")
                        elif dw > 0:
                            w(f"if k >= {guard}:")
                            with w.block():
                                w(f"Await(empty[k - {dw}], cuda_in_order, 0)")
                        fk = f"k + {fo}" if fo else "k"
                        if tma:
                            w("for t in cuda_threads(0, 1, unit=cuda_thread):")
                            with w.block():
                                w(f"tma_load_ph(64, buf[k % {S}, 0:64], "
                                  f"A[task, 64 * k:64 * k + 64]) >> full[{fk}]")
                                w(f"Arrive({Lf}) >> full[{fk}]")
                        else:
                            w("for t in cuda_threads(0, 32, unit=cuda_thread):")
                            with w.block():
                                w(f"buf[k % {S}, t] = A[task, 64 * k + t]")
                                w(f"buf[k % {S}, t + 32] = A[task, 64 * k + t + 32]")
                            w(f"Arrive({Lf}) >> full[{fk}]")
                    w(f'with CudaWarps(0, {W}, name="consumer"):')
                    with w.block():
                        w(f"Await(full[k], {L2c}, 0)")
                        cbase = "32 * k" if out == "overlap" else "64 * k"
                        if W == 2:
                            w("for w in cuda_threads(0, 2, unit=cuda_warp):")
                            with w.block():
                                w("for t in cuda_threads(0, 32, unit=cuda_thread):")
                                with w.block():
                                    w(f"C[task, {cbase} + 32 * w + t] = buf[k % {S}, 32 * w + t]")
                                if px:
                                    w(proxy_fence)
                        else:
                            w("for t in cuda_threads(0, 32, unit=cuda_thread):")
                            with w.block():
                                w(f"C[task, {cbase} + t] = buf[k % {S}, t]")
                                w(f"C[task, {cbase} + t + 32] = buf[k % {S}, t + 32]")
                            if px:
                                w(proxy_fence)
                        rel = k_plus(P + o) if pre else k_plus(o)
                        if bug == "last_release":  # the final release is missing
                            w("if k < N / 64 - 1:")
                            w.ind += 1
                        if bug == "release_task0":  # the second task never releases
                            w("if task == 0:")
                            w.ind += 1
                        w(f"Arrive({Le}) >> empty[{rel}]")
                        if bug in ("last_release", "release_task0"):
                            w.ind -= 1
                        if bug == "double_release":  # one index gets two Arrive instances
                            w("if k == 0:")
                            with w.block():
                                w(f"Arrive({Le}) >> empty[{rel}]")
                if fence_end:
                    w(proxy_fence if tma else "Fence(cuda_in_order, cuda_in_order)")
    return GenProg(name, "ring", w.text(), N_SIZES, knobs)


def k_plus(d: int) -> str:
    return "k" if d == 0 else (f"k + {d}" if d > 0 else f"k - {-d}")


# ------------------------------------------------------------------ commit-group family
def gen_commit(rng: random.Random, name: str) -> GenProg:
    S = rng.choice([1, 2, 3])
    depth = rng.choice([0, 0, 1, 1, 2])
    lag = rng.choice([0, 0, 1, 1, 2])
    cross = rng.random() < 0.4
    shift = rng.choice([1, 32, 63])
    fence_mid = cross and rng.random() < 0.75
    fence_post = cross and rng.random() < 0.6
    drain = rng.random() < 0.8
    fence_end = rng.random() < 0.8
    warps = rng.random() < 0.4
    knobs = dict(S=S, depth=depth, lag=lag, cross=cross, shift=shift, fence_mid=fence_mid,
                 fence_post=fence_post, drain=drain, fence_end=fence_end, warps=warps)
    if warps:
        heads = ["for w in cuda_threads(0, 2, unit=cuda_warp):",
                 "for t in cuda_threads(0, 32, unit=cuda_thread):"]
        i, cg = "(32 * w + t)", "cg[w, t]"
        decl = "cg: barrier[2, 32] @ Sm80_CommitGroup"
    else:
        heads = ["for t in cuda_threads(0, 64, unit=cuda_thread):"]
        i, cg = "t", "cg[t]"
        decl = "cg: barrier[64] @ Sm80_CommitGroup"
    w = _W()
    w(f"def {name}(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):")
    with w.block():
        w("assert N % 64 == 0")
        w("with CudaDeviceFunction(blockDim=64):")
        with w.block():
            w("for task in cuda_tasks(0, 1):")
            with w.block():
                w(f"buf: f32[{S}, 64] @ CudaSmemLinear")
                w(decl)
                w("for k in seq(0, N / 64):")
                with w.block():
                    for h in heads:
                        w(h)
                        w.ind += 1
                    w(f"cp_async_ph(1, buf[k % {S}, {i}:{i} + 1], A[64 * k + {i}:64 * k + {i} + 1])")
                    w(f"Arrive(Sm80_cp_async) >> {cg}")
                    w(f"Await({cg}, cuda_in_order, {depth})")
                    kk = k_plus(-lag)
                    src_i = f"({i} + {shift}) % 64" if cross else i
                    if not cross:
                        if lag:
                            w(f"if k >= {lag}:")
                            w.ind += 1
                        w(f"C[64 * ({kk}) + {i}] = buf[({kk}) % {S}, {src_i}]")
                        if lag:
                            w.ind -= 1
                    w.ind -= len(heads)
                    if cross:
                        if fence_mid:
                            w("Fence(cuda_in_order, cuda_in_order)")
                        w("for t in cuda_threads(0, 64, unit=cuda_thread):")
                        with w.block():
                            src_i = f"(t + {shift}) % 64"
                            if lag:
                                w(f"if k >= {lag}:")
                                w.ind += 1
                            w(f"C[64 * ({kk}) + t] = buf[({kk}) % {S}, {src_i}]")
                            if lag:
                                w.ind -= 1
                        if fence_post:
                            w("Fence(cuda_in_order, cuda_in_order)")
                if drain:
                    for h in heads:
                        w(h)
                        w.ind += 1
                    w(f"Await({cg}, cuda_in_order, 0)")
                    w.ind -= len(heads)
                if fence_end:
                    w("Fence(cuda_in_order, cuda_in_order)")
    return GenProg(name, "commit", w.text(), N_SIZES, knobs)


# ------------------------------------------------------------------ two-kernel family
def gen_two_kernels(rng: random.Random, name: str) -> GenProg:
    """Kernel 1 writes a GMEM scratch tile per task; kernel 2 reads it with another tiling
    (ordered by the kernel boundary), optionally through an SMEM tile of its own."""
    pr = rng.choice(["id", "rev", "shift", "transpose"])
    s = rng.choice([1, 17, 32])
    cross_task = rng.random() < 0.5  # kernel 2 reads the *next* task's tile
    smem2 = rng.random() < 0.5
    fence_mid = rng.random() < 0.7
    fence_end = rng.random() < 0.8
    same_kernel = rng.random() < 0.2  # bug: both phases in one kernel, no grid-wide sync
    knobs = dict(pr=pr, s=s, cross_task=cross_task, smem2=smem2, fence_mid=fence_mid,
                 fence_end=fence_end, same_kernel=same_kernel)
    tile = "64 * task + 64" if cross_task else "64 * task"
    src_e = _pattern(pr, "t", s)

    def phase1():
        w("for t in cuda_threads(0, 64, unit=cuda_thread):")
        with w.block():
            w("S[64 * task + t] = A[64 * task + t] * 2.0")

    def phase2():
        if smem2:
            w("buf: f32[64] @ CudaSmemLinear")
            w("for t in cuda_threads(0, 64, unit=cuda_thread):")
            with w.block():
                if cross_task:  # the next task's tile, if there is one
                    w("if task < N / 64 - 1:")
                    w.ind += 1
                w(f"buf[t] = S[{tile} + t]")
                if cross_task:
                    w.ind -= 1
            if fence_mid:
                w("Fence(cuda_in_order, cuda_in_order)")
            w("for t in cuda_threads(0, 64, unit=cuda_thread):")
            with w.block():
                w(f"C[64 * task + t] = buf[{src_e}]")
            if fence_end:
                w("Fence(cuda_in_order, cuda_in_order)")
        else:
            w("for t in cuda_threads(0, 64, unit=cuda_thread):")
            with w.block():
                if cross_task:
                    w("if task < N / 64 - 1:")
                    w.ind += 1
                w(f"C[64 * task + t] = S[{tile} + {src_e}]")
                if cross_task:
                    w.ind -= 1

    w = _W()
    w(f"def {name}(N: size, A: f32[N] @ CudaGmemLinear, S: f32[N] @ CudaGmemLinear, "
      "C: f32[N] @ CudaGmemLinear):")
    with w.block():
        w("assert N % 64 == 0")
        for part in ([phase1, phase2],) if same_kernel else ([phase1], [phase2]):
            w("with CudaDeviceFunction(blockDim=64):")
            with w.block():
                w("for task in cuda_tasks(0, N / 64):")
                with w.block():
                    for f in part:
                        f()
    return GenProg(name, "two_kernels", w.text(), N_SIZES, knobs)


# ------------------------------------------------------------------ sibling-blocks family
def gen_siblings(rng: random.Random, name: str) -> GenProg:
    """Two sibling blocks (``for main in seq(0, 1)`` / ``for epi in seq(0, 1)``, as in the
    GEMM's main loop and epilogue) each allocate an SMEM tile, often under the same name;
    random extents, offsets (possibly out of bounds) and fences."""
    same_name = rng.random() < 0.6
    blocks = []
    for b in range(2):
        ext = rng.choice([64, 128])
        off = rng.choice([0, 0, 0, 64])
        blocks.append(dict(
            name="buf" if (b == 0 or same_name) else "buf2", ext=ext, off=off,
            pat=rng.choice(["id", "rev", "shift"]), fence_mid=rng.random() < 0.85,
            fence_end=rng.random() < (0.6 if b == 0 else 0.8), loop=("main", "epi")[b]))
    knobs = dict(same_name=same_name, blocks=blocks)
    w = _W()
    w(f"def {name}(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):")
    with w.block():
        w("assert N % 64 == 0")
        w("with CudaDeviceFunction(blockDim=64):")
        with w.block():
            w("for task in cuda_tasks(0, N / 64):")
            with w.block():
                for b, bl in enumerate(blocks):
                    nm, off = bl["name"], bl["off"]
                    w(f"for {bl['loop']} in seq(0, 1):")
                    with w.block():
                        w(f"{nm}: f32[{bl['ext']}] @ CudaSmemLinear")
                        w("for t in cuda_threads(0, 64, unit=cuda_thread):")
                        with w.block():
                            w(f"{nm}[{off} + t] = A[64 * task + t]")
                        if bl["fence_mid"]:
                            w("Fence(cuda_in_order, cuda_in_order)")
                        w("for t in cuda_threads(0, 64, unit=cuda_thread):")
                        with w.block():
                            op = "=" if b == 0 else "+="
                            w(f"C[64 * task + t] {op} {nm}[{off} + {_pattern(bl['pat'], 't', 5)}]")
                        if bl["fence_end"]:
                            w("Fence(cuda_in_order, cuda_in_order)")
    return GenProg(name, "siblings", w.text(), N_SIZES, knobs)


FAMILIES = (("phases", gen_phases, 0.35), ("ring", gen_ring, 0.28), ("commit", gen_commit, 0.15),
            ("two_kernels", gen_two_kernels, 0.10), ("siblings", gen_siblings, 0.12))


def generate(n: int, seed: int = 0) -> list[GenProg]:
    rng = random.Random(seed)
    out = []
    names = [f for f, _, _ in FAMILIES]
    weights = [wt for _, _, wt in FAMILIES]
    gens = {f: g for f, g, _ in FAMILIES}
    for k in range(n):
        fam = rng.choices(names, weights)[0]
        out.append(gens[fam](rng, f"g{k}_{fam}"))
    return out


def parse(gp: GenProg):
    from exogpu_verify.frontend import parse_proc_source

    return parse_proc_source(gp.src, dict(ENV), file=f"<generated {gp.name}>")
