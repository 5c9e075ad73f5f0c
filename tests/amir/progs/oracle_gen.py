"""Random small kernels for the parallel oracle (``tests/amir/test_oracle.py``).

``generate(rng)`` returns ``(source, sizes)`` for one random program, built from three
families; each inserts the synchronization a correct program needs and then, at random,
drops it, weakens it (a warp Fence where a CTA Fence is needed, an in-order Fence after
``cp.async``, a shallower commit-group wait) or moves it, so the corpus mixes accepted and
rejected programs:

* ``steps``: a 2-warp CTA runs a sequence of data-parallel steps over two SMEM buffers
  (each thread writes one element chosen by a permutation of the thread index, reads
  others: its own, a lane neighbour, the other warp's); steps are separated by CTA Fences,
  warp Fences, split mbarrier Arrive/Await (whole CTA or warp to warp), and include
  asynchronous loads (``cp.async`` with commit groups or ``Fence(Sm80_generic, ...)``, a
  TMA-like bulk copy completing on an mbarrier);
* ``ring``: a producer warp fills a 2-slot SMEM ring with TMA-like copies (full/empty
  mbarrier rings with pre-arrival), a consumer warp reads it;
* ``pipeline``: every thread double-buffers ``cp.async`` loads with commit groups and
  ``Await(cg, ..., N)``.

The instructions below are placeholders with the timelines of the real ones; their bodies
are copies.
"""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403
from exogpu_verify.platforms.sm80 import Sm80_cp_async_f32


@instr(timeline=tma_to_smem_async_instr, unit=cuda_thread, barrier=CudaMbarrier)
def bulk_load_32(dst: [f32][32] @ CudaSmemLinear, src: [f32][32] @ CudaGmemLinear):
    # a TMA-like bulk copy issued by one thread, completing on an mbarrier
    for i in seq(0, 32):
        dst[i] = src[i]


@instr(timeline=tma_to_gmem_async_instr, unit=cuda_warp)
def bulk_store_32(dst: [f32][32] @ CudaGmemLinear, src: [f32][32] @ CudaSmemLinear):
    # a TMA-store-like bulk copy (completion through a commit group)
    for i in seq(0, 32):
        dst[i] = src[i]


ENV = {"bulk_load_32": bulk_load_32, "bulk_store_32": bulk_store_32,
       "Sm80_cp_async_f32": Sm80_cp_async_f32}

# permutations of the thread index g = 32 * w + l of a 2-warp CTA, by who owns the element
SAME = ["32 * w + l"]
WARP = ["32 * w + (l + 1) % 32", "32 * w + 31 - l"]
CROSS = ["32 * (1 - w) + l", "63 - 32 * w - l"]
PERMS = SAME + WARP + CROSS


class _Src:
    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, depth: int, text: str):
        self.lines.append("    " * depth + text)


def _threads(out: _Src, d: int):
    out(d, "for w in cuda_threads(0, 2, unit=cuda_warp):")
    out(d + 1, "for l in cuda_threads(0, 32, unit=cuda_thread):")
    return d + 2


def generate(rng) -> tuple[str, dict, str]:
    """One random program: (source text, sizes, family)."""
    fam = rng.choices(["steps", "ring", "pipeline"], weights=[6, 2, 2])[0]
    return {"steps": _steps, "ring": _ring, "pipeline": _pipeline}[fam](rng) + (fam,)


# ------------------------------------------------------------------ family: steps
class _Bars:
    """Barrier arrays of a ``steps`` program: one per kind of use (an mbarrier's Arrives
    must agree in timeline and thread count), each index used for one phase."""

    def __init__(self, rng):
        self.n = {"mc": 0, "mw": 0, "mt": 0}
        self.mt_await = rng.choice(["cuda_generic_and_async_proxy"] * 4 + ["cuda_in_order"])

    def new(self, kind: str) -> str:
        i = self.n[kind]
        self.n[kind] += 1
        return f"{kind}[{i}]"

    def decls(self) -> list[str]:
        return [f"{k}: barrier[{n} @ ring_buffer_by({n})] @ CudaMbarrier"
                for k, n in self.n.items() if n]


def _steps(rng) -> tuple[str, dict]:
    out = _Src()
    out(0, "def prog(T: size, A: f32[T, 64] @ CudaGmemLinear, O: f32[T, 64] @ CudaGmemLinear, "
           "P: f32[T, 64] @ CudaGmemLinear):")
    out(1, "with CudaDeviceFunction(blockDim=64):")
    out(2, "for task in cuda_tasks(0, T):")
    body = _Src()
    d = 3
    bars = _Bars(rng)
    ncg = nstore = False
    pending_await: list[str] = []  # split-barrier elements arrived on but not awaited yet
    nbufs = rng.randint(2, 4)
    bufs = [f"s{i}" for i in range(nbufs)]
    written: list[str] = []  # buffers in order of their last write
    nsteps = rng.randint(2, 5)

    def target() -> str:
        fresh = [b for b in bufs if b not in written]
        return fresh[0] if fresh and rng.random() < 0.8 else rng.choice(bufs)

    def source() -> str:
        return written[-1] if rng.random() < 0.7 else rng.choice(written)

    def wrote(b: str):
        if b in written:
            written.remove(b)
        written.append(b)

    for k in range(nsteps + 1):
        last = k == nsteps
        kind = "out" if last else rng.choices(
            ["compute", "cpasync", "bulk", "inplace", "reduce_out"], weights=[6, 2, 2, 1, 1])[0]
        if not written and kind in ("compute", "inplace", "reduce_out", "out"):
            kind = "init"
        sync_kind = "inorder"
        if kind == "init":
            dst = target()
            i = _threads(body, d)
            body(i, f"{dst}[{rng.choice(PERMS)}] = A[task, {rng.choice(PERMS)}]")
            wrote(dst)
        elif kind == "compute":
            src = source()
            dst = target()
            while dst == src:
                dst = rng.choice(bufs)
            i = _threads(body, d)
            rhs = f"{src}[{rng.choice(PERMS)}]"
            rhs = rng.choice([f"{rhs} * 2.0 + 1.0", f"{rhs} + A[task, {rng.choice(PERMS)}]",
                              f"{rhs} * {rng.choice(written)}[{rng.choice(PERMS)}]"])
            body(i, f"{dst}[{rng.choice(PERMS)}] = {rhs}")
            wrote(dst)
        elif kind == "inplace":
            # read and write one buffer in one step: a race unless each thread touches its
            # own elements
            src = source()
            i = _threads(body, d)
            p = rng.choice(PERMS)
            q = p if rng.random() < 0.6 else rng.choice(PERMS)
            body(i, f"{src}[{p}] = {src}[{q}] * 0.5 + 0.25")
            wrote(src)
        elif kind == "reduce_out":
            i = _threads(body, d)
            body(i, f"O[task, {rng.choice(PERMS)}] += {source()}[{rng.choice(PERMS)}]")
        elif kind == "out":
            i = _threads(body, d)
            terms = " + ".join(f"{b}[{rng.choice(PERMS)}]" for b in written[-2:])
            op = "+=" if rng.random() < 0.5 else "="
            body(i, f"O[task, {rng.choice(PERMS)}] {op} {terms}")
            sync_kind = None
        elif kind == "cpasync":
            dst = target()
            i = _threads(body, d)
            p = rng.choice(PERMS)
            body(i, f"Sm80_cp_async_f32(1, {dst}[{p}:{p} + 1], A[task, {p}:{p} + 1])")
            wrote(dst)
            sync_kind = "cpasync"
        else:  # bulk
            dst = target()
            half, sh = 32 * rng.randint(0, 1), 32 * rng.randint(0, 1)
            bar = bars.new("mt")
            body(d, "for t in cuda_threads(0, 1, unit=cuda_thread):")
            body(d + 1, f"bulk_load_32({dst}[{half}:{half + 32}], A[task, {sh}:{sh + 32}]) "
                        f">> {bar}")
            if rng.random() < 0.9:
                body(d + 1, f"Arrive(cuda_temporal) >> {bar}")
            if dst not in written:
                # the other half stays uninitialized (NaN): define it first
                body(d, "for w in cuda_threads(0, 2, unit=cuda_warp):")
                body(d + 1, "for l in cuda_threads(0, 32, unit=cuda_thread):")
                body(d + 2, f"{dst}[32 * w + l] = 0.5")
            wrote(dst)
            sync_kind = ("bulk", bar)
        # a pending split barrier may be awaited now (after independent work)
        while pending_await and rng.random() < 0.7:
            body(d, f"Await({pending_await.pop(0)}, cuda_in_order, 0)")
        if sync_kind is None:
            continue
        r = rng.random()
        if sync_kind == "inorder":
            if r < 0.45:
                body(d, "Fence(cuda_in_order, cuda_in_order)")
            elif r < 0.55:
                body(d, "for w in cuda_threads(0, 2, unit=cuda_warp):")
                body(d + 1, "Fence(cuda_in_order, cuda_in_order)")
            elif r < 0.72:
                bar = bars.new("mc")
                body(d, f"Arrive(cuda_in_order) >> {bar}")
                if rng.random() < 0.5:
                    body(d, f"Await({bar}, cuda_in_order, 0)")
                else:
                    pending_await.append(bar)
            elif r < 0.85:
                bar = bars.new("mw")
                p, c = rng.choice([(0, 1), (1, 0)])
                body(d, f"with CudaWarps({p}, {p + 1}):")
                body(d + 1, f"Arrive(cuda_in_order) >> {bar}")
                body(d, f"with CudaWarps({c}, {c + 1}):")
                body(d + 1, f"Await({bar}, cuda_in_order, 0)")
            # else: no synchronization
        elif sync_kind == "cpasync":
            if r < 0.4:
                ncg = True
                i = _threads(body, d)
                body(i, "Arrive(Sm80_cp_async) >> cg[w, l]")
                body(i, f"Await(cg[w, l], cuda_in_order, {0 if rng.random() < 0.8 else 1})")
                if rng.random() < 0.8:
                    body(d, "Fence(cuda_in_order, cuda_in_order)")
            elif r < 0.75:
                body(d, "Fence(Sm80_generic, cuda_in_order)")
            elif r < 0.9:
                body(d, "Fence(cuda_in_order, cuda_in_order)")  # does not wait for cp.async
        else:
            if r < 0.9:
                body(d, f"Await({sync_kind[1]}, {bars.mt_await}, 0)")
            # else: never awaited
            if rng.random() < 0.8:
                body(d, "Fence(cuda_in_order, cuda_in_order)")
        if rng.random() < 0.15 and not last:
            # a TMA-store-like copy of one half to P, waited for through a commit group
            nstore = True
            b = rng.choice(written)
            h = rng.randint(0, 1)
            if rng.random() < 0.8:
                # generic-proxy writes -> async-proxy reads (fence.proxy.async)
                body(d, "Fence(cuda_in_order, cuda_generic_and_async_proxy)")
            body(d, "for t in cuda_threads(0, 1, unit=cuda_warp):")
            body(d + 1, f"bulk_store_32(P[task, {32 * h}:{32 * h + 32}], "
                        f"{b}[{32 * h}:{32 * h + 32}])")
            body(d + 1, "Arrive(tma_to_gmem_async) >> sg")
            if rng.random() < 0.85:
                body(d + 1, f"Await(sg, cuda_generic_and_async_proxy, "
                            f"{0 if rng.random() < 0.8 else 1})")
            body(d, "Fence(cuda_in_order, cuda_in_order)")
    for pb in pending_await:
        body(d, f"Await({pb}, cuda_in_order, 0)")
    if rng.random() < 0.8:
        body(d, "Fence(cuda_in_order, cuda_in_order)")  # before the SMEM is freed
    for b in bufs:
        out(d, f"{b}: f32[64] @ CudaSmemLinear")
    for decl in bars.decls():
        out(d, decl)
    if ncg:
        out(d, "cg: barrier[2, 32] @ Sm80_CommitGroup")
    if nstore:
        out(d, "sg: barrier @ Sm90_TmaCommitGroup")
    out.lines += body.lines
    return "\n".join(out.lines) + "\n", {"T": 2}


# ------------------------------------------------------------------ family: ring
def _ring(rng) -> tuple[str, dict]:
    K = rng.randint(1, 2)
    drop = {m: rng.random() < 0.15 for m in ("full_await", "empty_await", "empty_arrive",
                                             "arrive", "fence", "early_release")}
    src = [
        "def prog(T: size, K: size, A: f32[T, K, 32] @ CudaGmemLinear, "
        "O: f32[T, K, 32] @ CudaGmemLinear):",
        "    with CudaDeviceFunction(blockDim=64):",
        "        for task in cuda_tasks(0, T):",
        "            buf: f32[2, 32] @ CudaSmemLinear",
        "            full: barrier[K @ ring_buffer_by(2)] @ CudaMbarrier",
        "            empty: barrier[K @ ring_buffer_by(2)] @ CudaMbarrierPreArrive(2)",
        "            with CudaWarps(0, 1):",
        "                for k in seq(0, K):",
    ]
    if not drop["empty_await"]:
        src.append("                    Await(empty[k], cuda_in_order, 0)")
    src.append("                    for t in cuda_threads(0, 1, unit=cuda_thread):")
    src.append("                        bulk_load_32(buf[k % 2, :], A[task, k, :]) >> full[k]")
    if not drop["arrive"]:
        src.append("                        Arrive(cuda_temporal) >> full[k]")
    src += [
        "            with CudaWarps(1, 2):",
        "                for k in seq(0, K):",
    ]
    if not drop["full_await"]:
        tl = rng.choice(["cuda_generic_and_async_proxy", "cuda_in_order"])
        src.append(f"                    Await(full[k], {tl}, 0)")
    release = "                    Arrive(cuda_in_order) >> empty[k + 2]"
    if drop["early_release"] and not drop["empty_arrive"]:
        src.append(release)
    src += [
        "                    for l in cuda_threads(0, 32, unit=cuda_thread):",
        f"                        O[task, k, l] = buf[k % 2, {rng.choice(['l', '31 - l'])}]"
        " * 2.0",
    ]
    if not drop["early_release"] and not drop["empty_arrive"]:
        src.append(release)
    if not drop["fence"]:
        src.append("            Fence(cuda_in_order, cuda_in_order)")
    return "\n".join(src) + "\n", {"T": 2, "K": K}


# ------------------------------------------------------------------ family: pipeline
def _pipeline(rng) -> tuple[str, dict]:
    K = rng.randint(2, 3)
    n_wait = 1 if rng.random() < 0.75 else rng.choice([0, 2])
    fence_after_wait = rng.random() < 0.8
    fence_after_use = rng.random() < 0.8
    cross = rng.random() < 0.5  # read the other warp's element (needs the CTA fence)
    rd = "63 - 32 * w - l" if cross else "32 * w + l"
    src = [
        "def prog(T: size, K: size, A: f32[T, K, 64] @ CudaGmemLinear, "
        "O: f32[T, K, 64] @ CudaGmemLinear):",
        "    with CudaDeviceFunction(blockDim=64):",
        "        for task in cuda_tasks(0, T):",
        "            buf: f32[2, 64] @ CudaSmemLinear",
        "            cg: barrier[2, 32] @ Sm80_CommitGroup",
        "            for w in cuda_threads(0, 2, unit=cuda_warp):",
        "                for l in cuda_threads(0, 32, unit=cuda_thread):",
        "                    Sm80_cp_async_f32(1, buf[0, 32 * w + l:32 * w + l + 1], "
        "A[task, 0, 32 * w + l:32 * w + l + 1])",
        "                    Arrive(Sm80_cp_async) >> cg[w, l]",
        "            for k in seq(0, K):",
        "                for w in cuda_threads(0, 2, unit=cuda_warp):",
        "                    for l in cuda_threads(0, 32, unit=cuda_thread):",
        "                        if k < K - 1:",
        "                            Sm80_cp_async_f32(1, buf[(k + 1) % 2, 32 * w + l:32 * w + l"
        " + 1], A[task, k + 1, 32 * w + l:32 * w + l + 1])",
        "                        Arrive(Sm80_cp_async) >> cg[w, l]",
        f"                        Await(cg[w, l], cuda_in_order, {n_wait})",
    ]
    if fence_after_wait:
        src.append("                Fence(cuda_in_order, cuda_in_order)")
    src += [
        "                for w in cuda_threads(0, 2, unit=cuda_warp):",
        "                    for l in cuda_threads(0, 32, unit=cuda_thread):",
        f"                        O[task, k, 32 * w + l] = buf[k % 2, {rd}] + 1.0",
    ]
    if fence_after_use:
        src.append("                Fence(cuda_in_order, cuda_in_order)")
    return "\n".join(src) + "\n", {"T": 2, "K": K}
