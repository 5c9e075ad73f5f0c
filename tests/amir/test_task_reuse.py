"""Task reuse in the concrete machine (``Machine._replay``) changes no verdict and no report:
every program is checked with reuse on and off, and the verdicts, diagnostics (message,
notes, line, kind) and witnesses must be identical. Programs: the generated agreement corpus
at its sampled sizes, the oracle corpus, the shipped specs/examples at their VERIFY_SIZES, and
the GEMM benchmark kernel with each injected bug at sizes with several tasks."""

from __future__ import annotations

import random

import pytest

from exogpu_verify.loader import module_procs
from exogpu_verify.amir import check_sync_concrete, interp
from exogpu_verify.analysis import analyze_static
from exogpu_verify.frontend import parse_proc_source
from testlib import ROOT, load_path


def _outcome(p, sizes, reuse: bool):
    saved = interp.REUSE_TASKS
    interp.REUSE_TASKS = reuse
    try:
        verdict, diags, witness, reason = check_sync_concrete(p, dict(sizes))
    finally:
        interp.REUSE_TASKS = saved
    return (verdict, reason,
            [(d.kind, d.message, d.line, tuple(d.notes)) for d in diags],
            None if witness is None else (witness.first, witness.second, witness.missing))


def _same(p, sizes):
    a = _outcome(p, sizes, True)
    b = _outcome(p, sizes, False)
    assert a == b, (sizes, a, b)
    return a[0]


@pytest.mark.slow
def test_generated_corpus_reports_unchanged():
    G = load_path(ROOT / "tests" / "symbolic" / "progs" / "generator.py", "exogpu_symtests")
    verdicts = []
    for gp in G.generate(120, 20261):
        p = G.parse(gp)
        if analyze_static(p):
            continue
        for sizes in gp.sizes:
            verdicts.append(_same(p, sizes))
    assert "checked" in verdicts and "refuted" in verdicts


@pytest.mark.slow
def test_oracle_corpus_reports_unchanged(prog_loader):
    gen = prog_loader("amir/progs/oracle_gen.py")
    for n in range(80):
        src, sizes, _ = gen.generate(random.Random(n))
        p = parse_proc_source(src, dict(gen.ENV), file=f"<oracle-random-{n}>")
        _same(p, sizes)


@pytest.fixture(scope="module")
def gk():
    return load_path(ROOT / "bench" / "gemm_kernels.py", "exogpu_reuse")


@pytest.mark.parametrize("bug", ["none", "wrong_wgmma_cg", "missing_fence_before_epilogue",
                                 "missing_fence_after_epilogue", "missing_await_raw",
                                 "war_arrive_one_wg", "missing_final_war_arrive",
                                 "epilogue_fence_no_proxy", "copy_before_war_await",
                                 "arrive_before_last_copy", "non_split_two_tasks", "split"])
def test_gemm_reports_unchanged(gk, bug):
    p = gk.gemm_split if bug == "split" else gk.make_gemm(bug)
    S = 2 if bug in ("split", "non_split_two_tasks") else 1
    _same(p, {"S": S, "M": 256, "N": 512, "K": 384})


def test_gemm_tasks_are_replayed(gk):
    from exogpu_verify.amir.convert import lower_to_amir

    m = interp.Machine(lower_to_amir(gk.gemm), {"S": 1, "M": 256, "N": 512, "K": 256},
                       reuse_tasks=True)
    m.run()
    assert m.ntasks == 4 and m.replayed_tasks == 3
    m2 = interp.Machine(lower_to_amir(gk.gemm), {"S": 1, "M": 256, "N": 512, "K": 256},
                        reuse_tasks=False)
    m2.run()
    assert m2.replayed_tasks == 0 and m2.steps == m.steps


def test_task_dependent_control_is_not_replayed():
    src = '''
def f(N: size, A: f32[N, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            s: f32[32] @ CudaSmemLinear
            for t in cuda_threads(0, 32, unit=cuda_thread):
                s[t] = A[task, t]
            if task == 2:
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    A[task, t] = s[31 - t]
            else:
                Fence(cuda_in_order, cuda_in_order)
                for t in cuda_threads(0, 32, unit=cuda_thread):
                    A[task, t] = s[31 - t]
            Fence(cuda_in_order, cuda_in_order)
'''
    p = parse_proc_source(src, {}, file="<reuse-control>")
    assert _same(p, {"N": 4}) == "refuted"


#: families whose variants differ in tiling parameters only (one factory's structure): one
#: variant
ONE_VARIANT = {"gemv": "gemv_f32_r8_u1_w4_b8"}


@pytest.mark.slow
def test_shipped_programs_reports_unchanged():
    from exogpu_verify.ir.nodes import Procedure

    n = 0
    for folder in ("specs", "examples"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            mod = load_path(f, "exogpu_reuse_shipped")
            sizes = getattr(mod, "VERIFY_SIZES", None)
            if not sizes:
                continue
            for v in module_procs(mod):
                if all(p.name in sizes for p in v.params if not p.is_data) \
                        and v.name == ONE_VARIANT.get(f.stem, v.name):
                    _same(v, {k: x for k, x in sizes.items() if v.param(k)})
                    n += 1
    assert n
