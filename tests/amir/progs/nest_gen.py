"""Random kernels made of scalar access nests, for the batched/per-element agreement test
(``tests/amir/test_batch_agreement.py``).

``generate(rng)`` returns ``(source, sizes)``: a 64-thread CTA per task (``U x T`` tasks) runs
a few *steps*, optionally inside ``seq(0, K)``; each step is a nest of ``cuda_threads`` and
``seq`` loops in one of several thread layouts (all threads, one warp, warp-level scalar
statements, 4-thread groups, under ``CudaWarps``) whose body has one to three statements
over SMEM tiles, per-thread registers, a GMEM output per task and a GMEM array shared by all
tasks (rarely, reads out of bounds in some tasks only): writes, ``+=``, copies through an
instruction on 4-element windows, atomic adds, with index patterns that are permutations of the thread index, shifts, broadcasts (many threads
read one element), wrap-arounds and seq-dependent offsets. Some nests carry an ``if``
(which the batched machine does not batch: plain records for later nests to supersede
partially). Steps are separated at random by CTA, warp or temporal Fences, mbarrier
Arrive/Await pairs (CTA-wide or warp to warp, the latter splitting batched records by
warp), or nothing. About two thirds of the programs are racy.
"""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403


@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def copy4(dst: [f32][4] @ CudaDeviceVisibleLinear, src: [f32][4] @ CudaDeviceVisibleLinear):
    for i in seq(0, 4):
        dst[i] = src[i]


@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def add4(dst: [f32][4] @ CudaDeviceVisibleLinear, src: [f32][4] @ CudaDeviceVisibleLinear):
    for i in seq(0, 4):
        dst[i] += src[i]


@instr(timeline=cuda_in_order_instr, unit=cuda_thread, atomic=("dst",))
def atomic_add1(dst: [f32][1] @ CudaDeviceVisibleLinear,
                src: [f32][1] @ CudaDeviceVisibleLinear):
    dst[0] += src[0]


ENV = {"copy4": copy4, "add4": add4, "atomic_add1": atomic_add1}

#: thread layouts: (loop headers, expression of the thread index g, its range)
LAYOUTS = [
    (["for w in cuda_threads(0, 2, unit=cuda_warp):",
      "for l in cuda_threads(0, 32, unit=cuda_thread):"], "(32 * w + l)", 64),
    (["for t in cuda_threads(0, 64, unit=cuda_thread):"], "t", 64),
    (["for t in cuda_threads(0, 32, unit=cuda_thread):"], "t", 32),
    (["for q in cuda_threads(0, 16, unit=4 * cuda_thread):",
      "for l in cuda_threads(0, 4, unit=cuda_thread):"], "(4 * q + l)", 64),
    (["for w in cuda_threads(0, 2, unit=cuda_warp):"], "w", 2),  # warp-level scalars
]


def _perm(rng, g: str, n: int, seqv: str | None, ext: int = 64) -> str:
    """An index into ``[0, ext)``, one-to-one in ``g`` when ``n == ext`` (a write target)."""
    pats = [g, g, f"({g} + {rng.randint(1, 40)}) % {ext}", f"{ext - 1} - {g}"]
    if n == 64 and ext == 64:
        pats.append(f"8 * ({g} % 8) + {g} / 8")
    if seqv is not None and rng.random() < 0.08:
        return f"({g} + {seqv}) % {ext}"  # another thread's element in the next iteration
    out = rng.choice(pats)
    return f"({out}) % {ext}" if n > ext else out


def _idx(rng, g: str, n: int, seqv: str | None, ext: int = 64) -> str:
    """Any index into ``[0, ext)`` (a read): a permutation or a many-to-one pattern."""
    if rng.random() < 0.6:
        return _perm(rng, g, n, seqv, ext)
    pats = [f"({g} / 2) % {ext}", f"{rng.randint(0, ext - 1)}", f"({g} * 2) % {ext}"]
    if seqv is not None:
        pats += [f"(4 * {seqv} + {g}) % {ext}", f"{seqv}"]
    return rng.choice(pats)


def _win(rng, g: str, seqv: str | None) -> str:
    """A 4-element window of a 64-element row."""
    pats = [f"4 * ({g} % 16)", f"4 * (({g} + 1) % 16)", "0", f"4 * ({g} / 4)"]
    if seqv is not None:
        pats.append(f"4 * (({g} + {seqv}) % 16)")
    b = rng.choice(pats)
    return f"{b}:{b} + 4"


def generate(rng) -> tuple[str, dict]:
    lines: list[str] = []

    def out(d: int, text: str):
        lines.append("    " * d + text)

    body: list[tuple[int, str]] = []

    def b(d: int, text: str):
        body.append((d, text))

    K = rng.randint(1, 3)
    outer = rng.random() < 0.5
    base = 4 if outer else 3
    bars = {"mc": 0, "mw": 0}
    nsteps = rng.randint(2, 5)
    for k in range(nsteps):
        layout, g, n = rng.choice(LAYOUTS)
        d = base
        warps = rng.random() < 0.12
        if warps:
            wl = rng.randint(0, 1)
            b(d, f"with CudaWarps({wl}, {wl + 1}):")
            d += 1
            if n != 32:
                layout, g, n = LAYOUTS[2]
        inner_first = rng.random() < 0.2
        seqv = None
        if inner_first:
            b(d, "for j in seq(0, 2):")
            d += 1
            seqv = "j"
        for h in layout:
            b(d, h)
            d += 1
        if seqv is None and rng.random() < 0.4:
            b(d, f"for j in seq(0, {rng.randint(1, 4)}):")
            d += 1
            seqv = "j"
        if rng.random() < 0.2:
            b(d, f"if {g} < {max(1, n // 2)}:")
            d += 1
        wrote: dict = {}  # buffer -> index written in this nest (its own reads reuse it)

        def src_of(dst=None, at=None) -> str:
            cands = [f"A[task, {_idx(rng, g, n, seqv)}]", f"G[{_idx(rng, g, n, seqv)}]"]
            if rng.random() < 0.05:  # out of bounds in some tasks only
                cands = [rng.choice([f"A[task, ({g}) % 32 + 32 * u + 16 * task]",
                                     f"A[task, ({g}) % 32 + 40 * u]"])]
            for buf, ext in (("s0", 64), ("s2", 64), ("s1", 8)):
                if buf == dst and buf not in wrote:
                    if rng.random() < 0.5:
                        cands.append(f"{buf}[{at}]")  # read-modify of its own element
                    continue
                if buf in wrote and rng.random() < 0.9:
                    cands.append(f"{buf}[{wrote[buf]}]")  # the element this thread wrote
                    continue
                if buf == "s1":
                    cands.append(f"s1[{_idx(rng, g, n, seqv, 8)}, {_idx(rng, g, n, seqv, 8)}]")
                elif buf == "s2":
                    cands.append(f"s2[{_idx(rng, g, n, seqv)}, {rng.randint(0, 3)}]")
                else:
                    cands.append(f"s0[{_idx(rng, g, n, seqv)}]")
            return rng.choice(cands)

        for _ in range(rng.randint(1, 3)):
            kind = rng.choices(["smem", "smem2", "reg", "out", "shared", "copy", "add",
                                "atomic", "row"], weights=[6, 2, 2, 2, 2, 2, 1, 1, 2])[0]
            op = "+=" if rng.random() < 0.3 else "="
            if kind == "reg" and not (n == 64 and g == "(32 * w + l)"):
                kind = "out"
            if kind == "smem":
                i = wrote.get("s0") or _perm(rng, g, n, seqv)
                src = src_of("s0", i)
                wrote["s0"] = i
                b(d, f"s0[{i}] {op} {src} * 0.5")
            elif kind == "smem2":
                pp = _perm(rng, g, n, seqv, n if n in (32, 64) else 8)
                i = wrote.get("s1") or (f"({pp}) / 8, ({pp}) % 8" if n in (32, 64) else
                                        f"{pp}, {pp}")
                src = src_of("s1", i)
                wrote["s1"] = i
                b(d, f"s1[{i}] {op} {src}")
            elif kind == "reg":
                b(d, f"r[w, l, {seqv if seqv else rng.randint(0, 3)} % 4] {op} {src_of()}")
            elif kind == "out":
                i = wrote.get("O") or _perm(rng, g, n, seqv)
                wrote["O"] = i
                b(d, f"O[u, task, {i}] {op} {src_of()}")
            elif kind == "shared":
                if rng.random() < 0.4:
                    b(d, f"G[{_perm(rng, g, n, seqv)}] {op} {src_of()}")
                else:
                    i = wrote.get("O") or _perm(rng, g, n, seqv)
                    wrote["O"] = i
                    b(d, f"O[u, task, {i}] = G[{_idx(rng, g, n, seqv)}]")
            elif kind in ("copy", "add"):
                if "s2" in wrote:
                    row = wrote["s2"].split(",")[0]
                else:
                    row = _perm(rng, g, n, seqv)
                srcw = f"A[task, {_win(rng, g, seqv)}]" if "s2" in wrote or \
                    rng.random() < 0.5 else f"s2[{_idx(rng, g, n, seqv)}, 0:4]"
                wrote["s2"] = f"{row}, 0"
                b(d, f"{'copy4' if kind == 'copy' else 'add4'}(s2[{row}, 0:4], {srcw})")
            elif kind == "row":  # single elements of s2's 4-element rows
                row = wrote["s2"].split(",")[0] if "s2" in wrote else _perm(rng, g, n, seqv)
                src = f"A[task, {_idx(rng, g, n, seqv)}]"
                for c in sorted(rng.sample(range(4), rng.choice([1, 1, 2]))):
                    b(d, f"s2[{row}, {c}] = {src}")
                wrote["s2"] = f"{row}, 0"
            elif kind == "atomic":
                e = rng.choice(["0", f"{g} % 8", f"({g} / 8) % 8"])
                b(d, f"atomic_add1(acc[{e}:{e} + 1], A[task, 0:1])")
                if rng.random() < 0.2:
                    i = wrote.get("O") or _perm(rng, g, n, seqv)
                    wrote["O"] = i
                    b(d, f"O[u, task, {i}] = acc[{rng.randint(0, 7)}]")
        # synchronization after the step
        r = rng.random()
        d = base
        if r < 0.6:
            b(d, "Fence(cuda_in_order, cuda_in_order)")
        elif r < 0.68:
            b(d, "for w in cuda_threads(0, 2, unit=cuda_warp):")
            b(d + 1, "Fence(cuda_in_order, cuda_in_order)")
        elif r < 0.73:
            b(d, "Fence(cuda_temporal, cuda_in_order)")
        elif r < 0.85:
            i = bars["mc"]
            bars["mc"] += 1
            b(d, f"Arrive(cuda_in_order) >> mc[{i}]")
            b(d, f"Await(mc[{i}], cuda_in_order, 0)")
        elif r < 0.95:
            i = bars["mw"]
            bars["mw"] += 1
            p, c = rng.choice([(0, 1), (1, 0)])
            b(d, f"with CudaWarps({p}, {p + 1}):")
            b(d + 1, f"Arrive(cuda_in_order) >> mw[{i}]")
            b(d, f"with CudaWarps({c}, {c + 1}):")
            b(d + 1, f"Await(mw[{i}], cuda_in_order, 0)")
    out(0, "def prog(U: size, T: size, K: size, A: f32[T, 64] @ CudaGmemLinear, "
           "O: f32[U, T, 64] @ CudaGmemLinear, G: f32[64] @ CudaGmemLinear):")
    out(1, "with CudaDeviceFunction(blockDim=64):")
    out(2, "for u in cuda_tasks(0, U):")
    out(3, "for task in cuda_tasks(0, T):")
    out(4, "s0: f32[64] @ CudaSmemLinear")
    out(4, "s1: f32[8, 8] @ CudaSmemLinear")
    out(4, "r: f32[2, 32, 4] @ CudaRmem")
    out(4, "s2: f32[64, 4] @ CudaSmemLinear")
    out(4, "acc: f32[8] @ CudaSmemLinear")
    nb = K if outer else 1
    for kind, cnt in bars.items():
        if cnt:
            out(4, f"{kind}: barrier[{cnt * nb} @ ring_buffer_by({cnt * nb})] @ CudaMbarrier")
    if outer:
        out(4, "for k in seq(0, K):")
        # one barrier element per use and iteration
        body = [(d, t.replace("mc[", f"mc[{bars['mc']} * k + ").replace(
            "mw[", f"mw[{bars['mw']} * k + ")) for d, t in body]
    lines += ["    " * (d + 1) + t for d, t in body]
    if rng.random() < 0.8:
        out(4, "Fence(cuda_in_order, cuda_in_order)")
    return "\n".join(lines) + "\n", {"U": rng.choice([1, 1, 2]), "T": rng.randint(1, 3), "K": K}
