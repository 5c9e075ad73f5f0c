"""Host side of the GPU run (``bench/gpu_run.py``): what runs on the device, built here.

* ``discover()``: every kernel with a GPU path: the variants of each ``specs/*.py`` (its
  ``VARIANTS`` dict, else its module-level procs; ``UNPROVEN`` ones too, built unchecked and
  labelled), the examples whose code generates (certified here when proven), and the
  backend's own test kernels (unchecked). Modules are imported with the checker's own loader
  (``exogpu_verify.loader``), as ``exogpu-verify`` does. Each case gets a ``Recipe`` from
  ``RECIPES``: what the kernel computes (the device side's op), which arrays are outputs, and
  its size rules.
* sizes are derived from the proc's ``assert``s (``moduli``): the smallest allowed, a
  non-square one, one whose K loop wraps the SMEM ring many times, one run on 3 CTAs so each
  runs several tasks, the largest the generated code's 32-bit element limit allows,
  benchmark sizes; every one is re-checked against the asserts (``allowed``), and the
  sanitizer's size must wrap every ring twice and give each CTA two tasks (``case_sizes``).
* ``build_bundle()``: the proof gate's re-check of each certificate, one proc at a time
  with a generous time limit (a loaded machine must not turn a proof into ``unknown``), then
  nvcc (sm_90a) in parallel, codegen health (``exogpu_codegen.health``), and the bundle the
  device run reads: ``manifest.json``, stripped ``lib/*.so``, their ``src/*.cu`` (rebuilt
  there with the recorded nvcc command if a library does not load) and ``runner/`` (the
  device-side scripts and ``launch.py``: no checker, no islpy, z3 or cvc5).
* ``carried_bytes()`` and ``estimate()``: what travels to the device and how long the run
  takes there, printed by ``--dry-run`` and checked against the device tool's limits.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bench"
LIMIT = 2**31 - 1            # elements per array: the generated code's 32-bit indices
MAX_BYTES = 12 << 30         # per size: all arrays together (keeps the largest cases quick)
CARRY_LIMIT = 64 << 20       # the device tool's working tree + carried paths
DEVICE_BUDGET_S = 480        # the whole device run (one rerun fits the 15-minute lease)
GATE_TIMEOUT_S = 900.0       # per proc: re-deriving and re-deciding its obligations
GATE_RETRIES = 2             # further tries of a gate a solver left inconclusive
INCONCLUSIVE = "verdict unknown"   # recheck's words for a solver that could not decide
RUNNER = ("gpu_run.py", "gpu_device.py", "gpu_timing.py", "gpu_report.py")
FORMAT = 2                   # of manifest.json; the runner refuses another


# ---------------------------------------------------------------- recipes
@dataclass(frozen=True)
class Recipe:
    """How the device side runs a kernel: ``op`` names the reference
    (``gpu_device.reference_chunks``); ``outputs`` are pre-filled with NaN and compared;
    ``inout`` are random inputs that are also compared; ``scalars`` give by-value
    parameters; ``reduction`` names the size summed over (tolerances grow with it);
    ``family`` groups variants for the sanitizer and the plot; ``sizes`` is a
    ``SIZE_RULES`` key; ``tensor_cores`` marks f32 inputs that run as tf32; ``timed`` says
    whether it is benchmarked; ``largest`` whether the largest sizes run (not for kernels with
    one task or tiny CTAs: they would take seconds there)."""

    op: str
    outputs: tuple[str, ...]
    inout: tuple[str, ...] = ()
    scalars: tuple[tuple[str, float], ...] = ()
    sizes: str = ""
    family: str = ""
    reduction: str | None = None
    tensor_cores: bool = False
    timed: bool = False
    largest: bool = True


GEMM = Recipe("gemm_abt", ("C",), sizes="gemm", family="gemm", reduction="K",
              tensor_cores=True, timed=True)
RECIPES: dict[tuple[str, str], Recipe] = {
    ("specs/gemm.py", "*"): GEMM,
    # B stored K x N: C = A @ B
    ("specs/gemm.py", "gemm_bf16_f32_128x256_s4_coop_g2_kn"): Recipe(
        "matmul", ("C",), sizes="gemm", family="gemm", reduction="K", tensor_cores=True,
        timed=True),
    ("specs/gemv.py", "*"): Recipe("gemv", ("y",), sizes="gemv", family="gemv",
                                   reduction="K", timed=True),
    ("specs/vec_copy.py", "vec_copy"): Recipe("copy", ("B",), sizes="n", family="copy",
                                              timed=True),
    ("specs/saxpy.py", "saxpy"): Recipe("saxpy", (), ("y",), (("a", 1.5),), "n", "saxpy",
                                        timed=True),
    ("specs/transpose_smem.py", "transpose_smem"): Recipe("transpose", ("B",), sizes="mn",
                                                          family="transpose", timed=True),
    ("specs/matmul_smem.py", "matmul_smem"): Recipe("matmul", ("C",), sizes="small_mnk",
                                                    family="matmul_smem", reduction="K",
                                                    timed=True),
    ("examples/vec_copy_threads.py", "vec_copy_threads"): Recipe(
        "copy", ("B",), sizes="n", family="examples", largest=False),
    ("examples/tmp_per_thread.py", "tmp_per_thread"): Recipe(
        "copy", ("B",), sizes="n", family="examples", largest=False),
    # its spec accumulates (C += A @ B): C is random before and compared after
    ("examples/scheduling/matmul_schedule.py", "matmul_kernel"): Recipe(
        "matmul", (), ("C",), sizes="small_mnk", family="examples", reduction="K",
        largest=False),
    ("examples/scheduling/gemm_schedule.py", "*"): Recipe(
        "gemm_abt", ("C",), sizes="gemm", family="examples", reduction="K",
        tensor_cores=True, largest=False),
    ("examples/scheduling/gemm_library_schedule.py", "*"): Recipe(
        "gemm_abt", ("C",), sizes="gemm", family="examples", reduction="K",
        tensor_cores=True, largest=False),
    # the backend's own test kernels (tests/codegen/progs, tests/analysis/progs): unchecked
    ("tests/analysis/progs/hopper_gemm.py", "gemm_tile"): Recipe(
        "gemm_abt", ("C",), sizes="gemm", family="backend", reduction="K", tensor_cores=True,
        largest=False),
    ("tests/codegen/progs/codegen_progs.py", "cp_async_copy"): Recipe(
        "copy", ("B",), sizes="n", family="backend", largest=False),
    ("tests/codegen/progs/codegen_progs.py", "mbar_pingpong"): Recipe(
        "copy", ("B",), sizes="n1", family="backend", largest=False),
    ("tests/codegen/progs/codegen_progs.py", "tma_store_scale"): Recipe(
        "scale", ("B",), scalars=(("a", 2.0),), sizes="mn", family="backend", largest=False),
    ("tests/codegen/progs/codegen_progs.py", "cluster_multicast"): Recipe(
        "multicast", ("C",), sizes="tk", family="backend", largest=False),
    ("tests/codegen/progs/codegen_progs.py", "warp_mma"): Recipe(
        "matmul", ("C",), sizes="m", family="backend", reduction="8", tensor_cores=True,
        largest=False),
}
#: modules scanned besides specs/ (examples: every module-level proc whose code generates)
EXAMPLE_GLOBS = ("examples/*.py", "examples/scheduling/*.py")
BACKEND_CASES = [("tests/analysis/progs/hopper_gemm.py", "gemm_tile")] + [
    ("tests/codegen/progs/codegen_progs.py", n) for n in
    ("cp_async_copy", "mbar_pingpong", "tma_store_scale", "cluster_multicast", "warp_mma")]


@dataclass
class Case:
    name: str
    source: str                   # repository-relative module path
    proc: object
    recipe: Recipe
    gate: str                     # "certificate" | "unchecked: <why>"
    group: str                    # specs | examples | backend
    proof_dir: str | None = None
    notes: list = field(default_factory=list)


def load_module(rel: str):
    """A repository module imported by the checker's loader (its folder on ``sys.path``
    while it runs, as ``exogpu-verify`` does)."""
    from exogpu_verify.loader import load_module as load
    mod, diag = load(ROOT / rel)
    if mod is None:
        raise ImportError(f"{rel}: {diag.message}")
    return mod


def _module_procs(mod) -> dict:
    from exogpu_verify.loader import module_bindings
    return dict(module_bindings(mod))


def _has_kernel(p) -> bool:
    from exogpu_verify.analysis.walk import iter_stmts
    from exogpu_verify.ir import nodes as N
    return any(isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction)
               for _, s in iter_stmts(p.body))


def recipe_for(rel: str, name: str) -> Recipe:
    r = RECIPES.get((rel, name)) or RECIPES.get((rel, "*"))
    if r is None:
        raise LookupError(f"no device recipe for {rel}::{name}: add one to RECIPES in "
                          "bench/gpu_plan.py (what it computes, its outputs, its sizes)")
    return r


def discover(with_examples: bool = True, with_backend: bool = True,
             proof_dir: Path | None = None, work: Path | None = None, log=print,
             certify: bool = True) -> list[Case]:
    """Every case the device run covers (see the module docstring). Examples are verified
    here and get a certificate in ``work/proofs`` when proven (``certify``; else they are
    only found, e.g. to run their sequential meaning)."""
    cases: list[Case] = []
    for path in sorted((ROOT / "specs").glob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        mod = load_module(rel)
        procs = dict(getattr(mod, "VARIANTS", None) or _module_procs(mod))
        for n, p in procs.items():
            if _has_kernel(p):
                cases.append(Case(p.name, rel, p, recipe_for(rel, p.name), "certificate",
                                  "specs", str(proof_dir or ROOT / "proofs")))
        for n, p in (getattr(mod, "UNPROVEN", None) or {}).items():
            cases.append(Case(p.name, rel, p, recipe_for(rel, p.name),
                              "unchecked: in UNPROVEN (checked concretely, not proven)",
                              "specs"))
    if with_examples:
        cases += _examples(work or HERE / ".gpu_work", log, certify)
    if with_backend:
        for rel, n in BACKEND_CASES:
            p = getattr(load_module(rel), n)
            cases.append(Case(n, rel, p, recipe_for(rel, n),
                              "unchecked: a backend test kernel", "backend"))
    names = [c.name for c in cases]
    for c in cases:
        if names.count(c.name) > 1:
            c.name = Path(c.source).stem + "." + c.name
    return cases


def _examples(work: Path, log, certify: bool = True) -> list[Case]:
    """The examples' procs with a GPU path: a kernel whose code generates (the paper's
    placeholder instructions have none); proven ones are certified into ``work/proofs`` and
    go through the gate, ``unknown`` ones run unchecked (labelled), refuted ones not at all."""
    from types import SimpleNamespace

    from exogpu_codegen import generate
    from exogpu_verify import ExoGpuError, verify
    from exogpu_verify.symbolic.certificates import write_certificate

    out = []
    pdir = work / "proofs"
    for pattern in EXAMPLE_GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            try:
                mod = load_module(rel)
            except ImportError:
                continue                    # an example that does not import has no GPU path
            for p in _module_procs(mod).values():
                if not _has_kernel(p):
                    continue
                try:
                    generate(p, unchecked=True)
                except ExoGpuError:
                    continue                # placeholder instructions: no code (docs/codegen.md)
                recipe = recipe_for(rel, p.name)
                if not certify:
                    out.append(Case(p.name, rel, p, recipe, "unchecked: not verified here",
                                    "examples"))
                    continue
                r = verify(p, mode="symbolic", timeout_s=GATE_TIMEOUT_S)
                if r.verdict == "proven" and "obligations" in r.extra:
                    write_certificate(p, SimpleNamespace(verdict="proven",
                                                         obligations=r.extra["obligations"]),
                                      pdir)
                    out.append(Case(p.name, rel, p, recipe, "certificate", "examples",
                                    str(pdir)))
                elif r.verdict == "refuted":
                    log(f"  {rel}::{p.name} is refuted: not run")
                else:
                    out.append(Case(p.name, rel, p, recipe,
                                    f"unchecked: {r.verdict} ({r.reason})", "examples"))
    return out


# ---------------------------------------------------------------- sizes
def moduli(p) -> dict[str, int]:
    """Size parameter -> the modulus its asserts require (``assert N % 512 == 0``)."""
    from exogpu_codegen.cexpr import eval_ctl
    from exogpu_verify.ir import nodes as N
    out = {q.name: 1 for q in p.params if not q.is_data}

    def const(e):
        try:
            return int(eval_ctl(e, {}))
        except KeyError:
            return None

    def visit(e):
        if isinstance(e, N.BinOp) and e.op == "and":
            visit(e.lhs)
            visit(e.rhs)
        elif (isinstance(e, N.BinOp) and e.op == "==" and const(e.rhs) == 0
              and isinstance(e.lhs, N.BinOp) and e.lhs.op == "%"
              and isinstance(e.lhs.lhs, N.Read) and not e.lhs.lhs.idx
              and e.lhs.lhs.name in out and (const(e.lhs.rhs) or 0) > 0):
            out[e.lhs.lhs.name] = math.lcm(out[e.lhs.lhs.name], const(e.lhs.rhs))
    for pred in p.preds:
        visit(pred)
    return out


def shapes(p) -> dict[str, list[str]]:
    """Data parameter -> its shape as expressions (``/`` is floor division)."""
    from exogpu_verify.ir.printer import expr_str
    return {q.name: [expr_str(e) for e in q.type.shape] for q in p.params
            if q.is_data and q.type.shape}


def eval_shape(expr: str, sizes: dict) -> int:
    return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(sizes)))  # noqa: S307


def allowed(p, sizes: dict) -> str | None:
    """Why ``sizes`` cannot run ``p`` (an assert, the 32-bit limit, the byte cap), or None."""
    from exogpu_codegen.cexpr import eval_ctl
    from exogpu_verify.ir.printer import expr_str
    for pred in p.preds:
        try:
            if not eval_ctl(pred, sizes):
                return f"assert {expr_str(pred)}"
        except KeyError:
            continue
    total = 0
    for q in p.params:
        if q.is_data and q.type.shape:
            n = math.prod(eval_shape(e, sizes) for e in shapes(p)[q.name])
            if n > LIMIT:
                return f"{q.name} has {n} elements (> 2^31 - 1)"
            total += n * q.type.scalar.nbytes
    if total > MAX_BYTES:
        return f"{total >> 20} MiB of arrays"
    return None


def _down(x: int, d: int) -> int:
    return max(d, x // d * d)


def _gemm_sizes(d: dict, p) -> dict:
    dM, dN, dK = d["M"], d["N"], d["K"]
    correct = [{"M": dM, "N": dN, "K": dK}, {"M": 3 * dM, "N": 2 * dN, "K": 3 * dK},
               {"M": dM, "N": dN, "K": 16 * dK},
               {"M": 4 * dM, "N": 2 * dN, "K": 4 * dK, "grid": 3},
               {"M": 4096, "N": 4096, "K": 4096}, {"M": 1024, "N": 1536, "K": 8192}]
    n_max = max(dN, dM)
    correct.append({"M": _down(min(LIMIT // dN, LIMIT // dK), dM), "N": dN, "K": dK,
                    "largest": "M"})
    correct.append({"M": dM, "N": dN, "K": _down(min(LIMIT // n_max, 1 << 22), dK),
                    "largest": "K"})
    # squares, and the skinny shapes split-K is for (issue 13's goals)
    timing = [{"M": s, "N": s, "K": s} for s in (2048, 4096, 6144, 8192)] + \
        [{"M": m, "N": 1536, "K": 65536} for m in (256, 512, 1024, 2048, 4096)]
    return {"correct": correct, "time": timing,
            "sanitize": {"M": 2 * dM, "N": 2 * dN, "K": 16 * dK, "grid": 2}}


def _gemv_sizes(d: dict, p) -> dict:
    dM, dK = d["M"], d["K"]
    return {"correct": [{"M": dM, "K": dK}, {"M": 3 * dM, "K": 5 * dK},
                        {"M": 8 * dM, "K": 2 * dK, "grid": 3}, {"M": 16384, "K": 16384},
                        {"M": _down(LIMIT // dK, dM), "K": dK, "largest": "M"},
                        {"M": dM, "K": _down(LIMIT // dM, dK), "largest": "K"}],
            "time": [{"M": s, "K": s} for s in (8192, 16384, 32768)],
            "sanitize": {"M": 4 * dM, "K": 4 * dK, "grid": 2}}


def _n_sizes(d: dict, p) -> dict:
    dN = d["N"]
    return {"correct": [{"N": dN}, {"N": 7 * dN}, {"N": 64 * dN, "grid": 3},
                        {"N": _down(LIMIT // 2, dN), "largest": "N"}],
            "time": [{"N": 1 << 28}], "sanitize": {"N": 8 * dN, "grid": 2}}


def _mn_sizes(d: dict, p) -> dict:
    dM, dN = d["M"], d["N"]
    return {"correct": [{"M": dM, "N": dN}, {"M": 3 * dM, "N": 5 * dN},
                        {"M": 8 * dM, "N": 8 * dN, "grid": 3},
                        {"M": dM, "N": _down(LIMIT // 2 // dM, dN), "largest": "N"}],
            "time": [{"M": 16384, "N": 16384}],
            "sanitize": {"M": 4 * dM, "N": 2 * dN, "grid": 2}}


def _n1_sizes(d: dict, p) -> dict:
    """One task for the whole array (a single CTA): small sizes only."""
    dN = d["N"]
    return {"correct": [{"N": dN}, {"N": 7 * dN}, {"N": 64 * dN}], "time": [],
            "sanitize": {"N": 8 * dN}}


def _small_mnk_sizes(d: dict, p) -> dict:
    dM, dN, dK = d["M"], d["N"], d["K"]
    return {"correct": [{"M": dM, "N": dN, "K": dK}, {"M": 3 * dM, "N": 5 * dN, "K": 7 * dK},
                        {"M": 4 * dM, "N": 4 * dN, "K": 4 * dK, "grid": 3},
                        {"M": 1024, "N": 1024, "K": 1024}],
            "time": [{"M": 2048, "N": 2048, "K": 2048}],
            "sanitize": {"M": 2 * dM, "N": 2 * dN, "K": 2 * dK, "grid": 2}}


def _m_sizes(d: dict, p) -> dict:
    dM = d["M"]
    return {"correct": [{"M": dM}, {"M": 5 * dM}, {"M": 64 * dM, "grid": 3}],
            "time": [], "sanitize": {"M": 8 * dM, "grid": 2}}


def _tk_sizes(d: dict, p) -> dict:
    dT, dK = d["T"], d["K"]
    return {"correct": [{"T": dT, "K": dK}, {"T": 6 * dT, "K": 3 * dK},
                        {"T": 64 * dT, "K": 2 * dK, "grid": 4}, {"T": 264 * dT, "K": 16 * dK}],
            "time": [], "sanitize": {"T": 8 * dT, "K": 4 * dK, "grid": 2}}


SIZE_RULES = {"gemm": _gemm_sizes, "gemv": _gemv_sizes, "n": _n_sizes, "n1": _n1_sizes,
              "mn": _mn_sizes, "small_mnk": _small_mnk_sizes, "m": _m_sizes, "tk": _tk_sizes}


def task_count(p, sizes: dict) -> int:
    """Tasks of the proc's kernels at ``sizes`` (the product of its ``cuda_tasks`` extents;
    the largest over several kernels)."""
    from exogpu_codegen.cexpr import eval_ctl
    from exogpu_verify.analysis.walk import iter_stmts
    from exogpu_verify.ir import nodes as N
    best = 0
    for _, s in iter_stmts(p.body):
        if isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction):
            n, body = 1, s.body
            while len(body) >= 1 and isinstance(body[0], N.For) and \
                    isinstance(body[0].mode, N.CudaTasks):
                f = body[0]
                n *= max(0, eval_ctl(f.hi, sizes) - eval_ctl(f.lo, sizes))
                body = f.body
            best = max(best, n)
    return best


def ring_wraps(p, sizes: dict) -> float | None:
    """The fewest times a virtual ring (``e @ ring_buffer_by(d)``) goes round its ``d``
    physical barriers at ``sizes`` (``e / d``), or None without rings. Rings whose extent
    is a constant of the kernel (the tile hand-over ``carry``) are not counted."""
    from exogpu_codegen.cexpr import eval_ctl
    from exogpu_verify.analysis.walk import iter_stmts
    from exogpu_verify.ir import nodes as N
    out = None
    for _, s in iter_stmts(p.body):
        if isinstance(s, N.BarrierAlloc):
            for d in s.dims:
                if d.ring_depth and not isinstance(d.extent, N.Const):
                    try:
                        w = eval_ctl(d.extent, sizes) / d.ring_depth
                    except KeyError:
                        continue
                    out = w if out is None else min(out, w)
    return out


def case_sizes(c: Case) -> dict:
    """The sizes of every phase, each allowed by the proc's asserts (others are dropped and
    noted in ``c.notes``); raises ``ValueError`` when the sanitizer's size is not allowed or
    misses its purpose (each CTA reuses its barriers and ring phases for a second task, and
    each SMEM ring wraps at least twice)."""
    p = c.proc
    mod = moduli(p)
    plan = SIZE_RULES[c.recipe.sizes](mod, p)
    out = {}
    for phase in ("correct", "time"):
        keep = []
        for s in plan[phase]:
            if "largest" in s and not c.recipe.largest:
                continue
            sz = {k: v for k, v in s.items() if k in mod}
            why = allowed(p, sz)
            if why is None:
                keep.append(s)
            else:
                c.notes.append(f"{phase} size {sz} dropped: {why}")
        out[phase] = keep
    s = plan["sanitize"]
    sz = {k: v for k, v in s.items() if k in mod}
    why = allowed(p, sz)
    if why is not None:
        raise ValueError(f"{c.name}: sanitizer size {s} is not allowed: {why}")
    tasks, wraps = task_count(p, sz), ring_wraps(p, sz)
    if s.get("grid") and tasks < 2 * s["grid"]:
        raise ValueError(f"{c.name}: sanitizer size {s}: {tasks} tasks for {s['grid']} CTAs")
    if wraps is not None and wraps < 2:
        raise ValueError(f"{c.name}: sanitizer size {s} wraps a ring only {wraps} times")
    out["sanitize"] = s
    out["sanitize_facts"] = {"tasks": tasks, "ctas": s.get("grid") or tasks,
                             "ring_wraps": wraps}
    return out


# ---------------------------------------------------------------- build
def _strip(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    strip = shutil.which("strip")
    if strip:
        subprocess.run([strip, "--strip-unneeded", str(dst)], capture_output=True, timeout=120)


def gate_check(c: Case) -> str:
    """The proof gate's re-check of ``c``'s certificate with ``GATE_TIMEOUT_S`` (the gate
    inside ``compile`` then reuses this derivation); raises ``RuntimeError`` on a refusal.
    Returns what was checked."""
    from exogpu_verify.recheck import recheck_certificate
    from exogpu_verify.symbolic.certificates import cert_name

    path = Path(c.proof_dir) / cert_name(c.proc)
    if not path.exists():
        raise RuntimeError(f"no certificate {path} for {c.name}")
    t0 = time.perf_counter()
    r = recheck_certificate(path, c.proc, timeout_s=GATE_TIMEOUT_S)
    if not r.ok:
        raise RuntimeError(f"the certificate {path} of {c.name} is rejected: "
                           + "; ".join(r.problems[:4]))
    return f"{path.name}: {r.obligations} obligations re-decided ({time.perf_counter() - t0:.0f} s)"


def manifest_entry(c: Case, k, sizes: dict) -> dict:
    """What the device side knows of case ``c`` compiled as ``k`` (a ``Kernel``)."""
    from exogpu_codegen.build import find_nvcc, nvcc_command, nvcc_version

    p, h = c.proc, k.health
    return {
        "name": c.name, "source": c.source, "proc": p.name, "group": c.group,
        "family": c.recipe.family or c.group, "op": c.recipe.op, "gate": c.gate,
        "outputs": list(c.recipe.outputs), "inout": list(c.recipe.inout),
        "scalars": dict(c.recipe.scalars), "timed": c.recipe.timed,
        "tensor_cores": c.recipe.tensor_cores, "reduction": c.recipe.reduction,
        "lib": f"lib/{c.name}.so", "cu": f"src/{c.name}.cu",
        "entry": k.generated.entry, "params": [list(x) for x in k.generated.params],
        "arrays": {q.name: {"dtype": q.type.scalar.name, "shape": shapes(p)[q.name]}
                   for q in p.params if q.is_data and q.type.shape},
        "sizes": sizes, "moduli": moduli(p),
        "kernels": [{"name": x.name, "block_dim": x.block_dim, "cluster_dim": x.cluster_dim,
                     "smem_bytes": x.smem_bytes} for x in k.generated.kernels],
        "resources": [r.to_json() for r in k.resources],
        "health": {"ok": h.ok, "sass_checked": h.sass_checked, "note": h.note,
                   "issues": [f"{i.kind}: {i.message}" for i in h.issues],
                   "sass": {n: s.to_json() for n, s in h.sass.items()}},
        "proof": k.generated.gate.note,
        "cached": k.build.cached,
        "nvcc": nvcc_command("nvcc", k.generated.arch, Path("SRC.cu"), Path("OUT.so"))[1:],
        "nvcc_version": (nvcc_version(find_nvcc()).splitlines() or ["?"])[-1],
        "notes": list(c.notes),
    }


def build_case(c: Case, bundle: Path | None = None, gate_done: bool = False) -> dict:
    """Compile one case (through the gate unless unchecked; ``gate_check`` first unless
    ``gate_done``), check its health, copy the stripped library and its source into
    ``bundle``; the manifest entry, with the ``Kernel`` under ``"kernel"``."""
    from exogpu_codegen import compile

    t0 = time.perf_counter()
    sizes = case_sizes(c)                 # before the build: a bad size rule fails at once
    if c.gate == "certificate" and not gate_done:
        gate_check(c)
    k = compile(c.proc, unchecked=c.gate != "certificate", proof_dir=c.proof_dir,
                health="warn")
    e = manifest_entry(c, k, sizes)
    e["build_seconds"] = round(time.perf_counter() - t0, 1)
    if bundle is not None:
        _strip(k.build.library, bundle / e["lib"])
        shutil.copyfile(k.build.source, bundle / e["cu"])
    e["kernel"] = k                        # dropped before the manifest is written
    return e


def build_bundle(bundle: Path, cases: list[Case], jobs: int = 2, log=print) -> dict:
    """Build every case into ``bundle`` (replaced) and write ``bundle/manifest.json``: the
    gates one at a time here, nvcc in ``jobs`` threads as each gate passes."""
    if bundle.exists():
        shutil.rmtree(bundle)
    for d in ("lib", "src", "runner"):
        (bundle / d).mkdir(parents=True)
    for f in RUNNER:
        shutil.copyfile(HERE / f, bundle / "runner" / f)
    shutil.copyfile(ROOT / "exogpu_codegen" / "launch.py", bundle / "runner" / "launch.py")
    entries, failures = [], []

    def one(c):
        try:
            e = build_case(c, bundle, gate_done=True)
            e.pop("kernel")
            res = ", ".join(_res(r) for r in e["resources"]) or "host only"
            bad = "" if e["health"]["ok"] else " UNHEALTHY: " + "; ".join(e["health"]["issues"])
            log(f"  built {c.name}: {res}{bad} ({e['build_seconds']} s"
                f"{', cached' if e['cached'] else ''})")
            return e, None
        except Exception as ex:  # noqa: BLE001 - every failure is reported, none stops the rest
            log(f"  FAILED {c.name}: {type(ex).__name__}: {str(ex)[:400]}")
            return None, {"name": c.name, "error": f"{type(ex).__name__}: {ex}"}

    def gate(c) -> str | None:
        """None if the gate passed (logged), else why not."""
        try:
            log(f"  gate {c.name}: {gate_check(c)}")
            return None
        except Exception as e:  # noqa: BLE001 - reported as a build failure
            return str(e)

    futures, retry = [], []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        for c in cases:
            if c.gate == "certificate":
                why = gate(c)
                if why is not None:
                    if INCONCLUSIVE in why:
                        log(f"  gate {c.name}: inconclusive ({why[-160:]}); retried alone "
                            "after the builds")
                        retry.append(c)
                    else:
                        log(f"  FAILED {c.name}: {why}")
                        failures.append({"name": c.name, "error": why})
                    continue
            futures.append(ex.submit(one, c))
        for f in futures:
            e, fail = f.result()
            (entries.append(e) if e else failures.append(fail))
    # a solver's `unknown` under load is no verdict: the same re-check again, with nothing
    # of ours running beside it (a certificate that is wrong fails every time)
    for c in retry:
        why = "?"
        for attempt in range(GATE_RETRIES):
            why = gate(c)
            if why is None or INCONCLUSIVE not in why:
                break
            log(f"  gate {c.name}: inconclusive again (try {attempt + 2})")
        if why is not None and INCONCLUSIVE in why:
            # still no verdict: the kernel is built all the same (the device run needs it),
            # unchecked and labelled so; the certificate itself is CI's to re-check
            # (`exogpu-verify --recheck proofs/`)
            c.gate = (f"unchecked: the proof gate's re-check was inconclusive here "
                      f"{1 + GATE_RETRIES} times ({why[why.find('verdict unknown'):][:200]})")
            log(f"  WARNING {c.name}: built unchecked ({c.gate})")
            why = None
        if why is None:
            e, fail = one(c)
            (entries.append(e) if e else failures.append(fail))
        else:
            log(f"  FAILED {c.name}: {why}")
            failures.append({"name": c.name, "error": why})
    order = {c.name: i for i, c in enumerate(cases)}
    entries.sort(key=lambda e: order[e["name"]])
    manifest = {"format": FORMAT,
                "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                "commit": _git(["rev-parse", "--short", "HEAD"]),
                "dirty": bool(_git(["status", "--porcelain", "--untracked-files=no"])),
                "host": f"{os.uname().nodename} {os.uname().machine}",
                "cases": entries, "build_failures": failures}
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _res(r: dict) -> str:
    return f"{r['registers']} regs, {r['stack_bytes']} B stack, " \
        f"{r['spill_stores'] + r['spill_loads']} B spilled"


def _git(args: list[str]) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except OSError:
        return "?"


# ---------------------------------------------------------------- what travels, how long
def carried_bytes(bundle: Path, root: Path = ROOT) -> dict:
    """Bytes the device tool sends: the files git tracks or would track (not ignored) in
    ``root``, plus the carried bundle (git-ignored)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=root, capture_output=True, timeout=60).stdout.split(b"\0")
    tree = 0
    for f in out:
        if f:
            p = root / f.decode()
            if p.is_file() and not p.is_symlink():
                tree += p.stat().st_size
    carried = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    return {"tree": tree, "bundle": carried, "total": tree + carried, "limit": CARRY_LIMIT}


#: assumed costs on the device (not measured there yet: no GPU has run this): rates about
#: half of an H200's, Python start-up with PyTorch, compute-sanitizer's per-run overhead
COST = {"tensor_flops": 300e12, "ffma_flops": 20e12, "bytes": 2.0e12, "ref_flops": 20e12,
        "child_start_s": 8.0, "per_run_s": 0.3, "sanitizer_run_s": 15.0, "probe_s": 20.0,
        "libcheck_s": 5.0, "ceilings_s": 25.0, "report_s": 10.0}


def _work(e: dict, sz: dict) -> tuple[float, float]:
    """(flops, bytes) of one run of case ``e`` at sizes ``sz``."""
    nbytes = 0
    for a in e["arrays"].values():
        nbytes += math.prod(eval_shape(x, sz) for x in a["shape"]) * \
            {"bf16": 2, "f16": 2}.get(a["dtype"], 4)
    from gpu_device import product_flops
    return product_flops(e, {k: v for k, v in sz.items() if k in e["moduli"]}), nbytes


def estimate(manifest: dict, rounds: int = 60, correct_jobs: int = 3,
             sanitizer_jobs: int = 6) -> dict:
    """Seconds per phase of the device run (``gpu_run.py --device``) from ``COST``."""
    cases = manifest["cases"]
    C = COST
    est = {"probe and library check": C["probe_s"] + C["libcheck_s"],
           "ceilings (before and after timing)": 2 * C["ceilings_s"]}
    corr = 0.0
    for e in cases:
        corr += C["child_start_s"]
        for sz in e["sizes"]["correct"]:
            fl, by = _work(e, sz)
            rate = C["tensor_flops"] if e["tensor_cores"] else C["ffma_flops"]
            t = fl / rate + by / C["bytes"]
            if sz.get("grid"):                      # few CTAs: a fraction of the chip
                t *= 132 / sz["grid"]
            corr += C["per_run_s"] + t + fl / C["ref_flops"] + 6 * by / C["bytes"]
    corr /= correct_jobs
    san = 3 * len(cases) * C["sanitizer_run_s"] / sanitizer_jobs
    est[f"correctness ({correct_jobs} at a time) alongside the sanitizer ({sanitizer_jobs} "
        "at a time)"] = max(corr, san)
    tim = C["child_start_s"]
    for e in cases:
        if not e["timed"]:
            continue
        for sz in e["sizes"]["time"]:
            fl, by = _work(e, sz)
            rate = C["tensor_flops"] if e["tensor_cores"] else C["ffma_flops"]
            t = max(fl / rate, by / C["bytes"]) + 0.2e-3        # + flush and overhead
            tim += 2 * (rounds + 5) * t + 0.5 + 2 * by / C["bytes"]   # ours + baseline
    est["timing"] = tim
    est["reports"] = C["report_s"]
    est["total"] = sum(est.values())
    est["budget"] = DEVICE_BUDGET_S
    est["_parts"] = {"correctness": corr, "sanitizer": san}
    return est
