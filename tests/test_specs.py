"""The kernels shipped in ``specs/``: sequential meaning, size rules, round trip, ``verify``.

Every module-level procedure of every ``specs/*.py`` is run with the sequential interpreter
on random inputs at the module's ``VERIFY_SIZES`` and compared with a numpy reference
written here; its ``assert`` size rules reject sizes that break them; printed IR parses back
to an equal procedure; ``verify`` answers with a ``Report`` whatever the verdict, and
every shipped kernel is accepted whenever the checker is decisive.
"""

from __future__ import annotations

from testlib import load_path

import functools
from pathlib import Path

import numpy as np
import pytest

from testlib import verify_cached
from exogpu_verify import ExoGpuError, interpret
from exogpu_verify.loader import module_bindings
from exogpu_verify.report import VERDICTS, Report
from exogpu_verify.frontend import parse_proc_source, print_proc, roundtrip_env
from exogpu_verify.ir import nodes as N

# verify() of the shipped procs is shared with the other modules that verify them, across
# pytest-xdist workers too (testlib.verify_cached: one report per kernel per session)

DIR = Path(__file__).resolve().parents[1] / "specs"


# ------------------------------------------------------------------ loading and inputs
def load_module(path: Path):
    return load_path(path)


def module_procs(mod) -> dict:
    """The procs the module binds, by name, as ``exogpu-verify`` finds them
    (``loader.module_bindings``: defined here or built here by a factory or a schedule)."""
    return dict(module_bindings(mod))


def control_value(e, sizes: dict) -> int:
    """A shape expression at concrete sizes (``/`` is floor division)."""
    if isinstance(e, N.Const):
        return int(e.val)
    if isinstance(e, N.Read) and not e.idx:
        return sizes[e.name]
    if isinstance(e, N.BinOp):
        a, b = control_value(e.lhs, sizes), control_value(e.rhs, sizes)
        return {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0,
                "%": a % b if b else 0}[e.op]
    raise TypeError(f"unexpected shape expression {e!r}")


def random_args(p: N.Procedure, sizes: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    args = {}
    for q in p.params:
        if q.is_data:
            shape = tuple(control_value(e, sizes) for e in q.type.shape)
            args[q.name] = np.asarray(rng.standard_normal(shape)).astype(
                q.type.scalar.np_dtype)
        else:
            args[q.name] = sizes[q.name]
    return args


# ------------------------------------------------------------------ numpy references
def copy_B(A, **_):
    return {"B": A}


def transpose(A, **_):
    return {"B": A.T}


def saxpy(a, x, y, **_):
    return {"y": (a * x + y).astype(np.float32)}


def matmul(A, B, **_):
    return {"C": (A.astype(np.float64) @ B).astype(np.float32)}


# (module, proc) -> (reference, rtol; 0 = exact)
REFERENCES = {
    ("vec_copy", "vec_copy"): (copy_B, 0),
    ("transpose_smem", "transpose_smem"): (transpose, 0),
    ("saxpy", "saxpy"): (saxpy, 1e-6),
    ("matmul_smem", "matmul_smem"): (matmul, 1e-5),
}

# (module, proc) -> size assignments that break an ``assert`` of the kernel
BAD_SIZES = {
    ("vec_copy", "vec_copy"): [{"N": 100}],
    ("transpose_smem", "transpose_smem"): [{"M": 48, "N": 64}, {"M": 64, "N": 40}],
    ("saxpy", "saxpy"): [{"N": 257}],
    ("matmul_smem", "matmul_smem"): [{"M": 24, "N": 16, "K": 16}, {"M": 16, "N": 8, "K": 16},
                                     {"M": 16, "N": 16, "K": 20}],
}

MODULES = {path.stem: load_module(path) for path in sorted(DIR.glob("*.py"))}
PROCS = [(m, name) for m, mod in MODULES.items() for name in module_procs(mod)]
IDS = [f"{m}.{n}" for m, n in PROCS]


def gemm_ref(A, B, C, **_):
    """``C = A @ B.T`` (float64 reference, rounded to C's type)."""
    return {"C": (A.astype(np.float64) @ B.astype(np.float64).T).astype(C.dtype)}


def gemm_kn_ref(A, B, C, **_):
    """``C = A @ B`` with B stored K x N (the ``_kn`` variants)."""
    return {"C": (A.astype(np.float64) @ B.astype(np.float64)).astype(C.dtype)}


# the GEMM family (specs/gemm.py): every shipped variant, one reference; 16-bit outputs are
# compared at bf16 precision
for _n in getattr(MODULES.get("gemm"), "VARIANTS", {}):
    REFERENCES[("gemm", _n)] = (gemm_kn_ref if _n.endswith("_kn") else gemm_ref,
                                1e-2 if "_bf16_bf16_" in _n else 1e-4)
    BAD_SIZES[("gemm", _n)] = [{"M": 64, "N": 512, "K": 256}, {"M": 128, "N": 448, "K": 256},
                               {"M": 128, "N": 512, "K": 48}]


def gemv_ref(A, x, y, **_):
    """``y = A @ x`` (float64 reference, rounded to f32)."""
    return {"y": (A.astype(np.float64) @ x.astype(np.float64)).astype(np.float32)}


# the GEMV variants (specs/gemv.py): f32 sums in another order than numpy's
for _n in getattr(MODULES.get("gemv"), "VARIANTS", {}):
    REFERENCES[("gemv", _n)] = (gemv_ref, 1e-5)
    BAD_SIZES[("gemv", _n)] = [{"M": 40, "K": 512}, {"M": 64, "K": 520}]


def _slow_gemm(params):
    """GEMM (and GEMV) variants take 5-30 s each to verify: the CI proof gate
    (``exogpu-verify specs/``) proves them; here they run with ``-m slow``."""
    return [pytest.param(*pr, marks=pytest.mark.slow) if pr[0] in ("gemm", "gemv") else pr
            for pr in params]


def get(m: str, name: str) -> N.Procedure:
    return module_procs(MODULES[m])[name]


@functools.cache
def report(m: str, name: str):
    """``verify`` at the defaults (auto mode, falling back to ``VERIFY_SIZES``), once per
    session (``testlib.verify_cached``: other test modules verify the same procs)."""
    return verify_cached(get(m, name))


# ------------------------------------------------------------------ tests
def test_every_module_is_documented_and_sized():
    assert MODULES, f"no specs found in {DIR}"
    for m, mod in MODULES.items():
        assert mod.__doc__ and mod.__doc__.strip(), f"specs/{m}.py has no docstring"
        sizes = getattr(mod, "VERIFY_SIZES", None)
        assert isinstance(sizes, dict) and sizes, f"specs/{m}.py must set VERIFY_SIZES"
        for name, p in module_procs(mod).items():
            assert set(p.size_params()) <= set(sizes), \
                f"specs/{m}.py: VERIFY_SIZES misses sizes of {name}"


def test_every_proc_has_a_reference():
    assert set(PROCS) == set(REFERENCES), (
        f"missing references: {sorted(set(PROCS) - set(REFERENCES))}; "
        f"stale references: {sorted(set(REFERENCES) - set(PROCS))}")


#: (module, proc, seed): two seeds each, one per GEMM variant (a few seconds each); the
#: first GEMM variant runs by default, the others (~5 s of CPU each) with -m slow
SEEDED = [(m, n, sd) for m, n in PROCS for sd in ((0,) if m == "gemm" else (0, 1))]
_FIRST_GEMM = next((n for m, n in PROCS if m == "gemm"), None)
SEEDED_PARAMS = [pytest.param(m, n, sd, id=f"{m}.{n}-{sd}",
                              marks=[pytest.mark.slow] if m == "gemm" and n != _FIRST_GEMM
                              else [])
                 for m, n, sd in SEEDED]


@pytest.mark.parametrize("m,name,seed", SEEDED_PARAMS)
def test_interpret_matches_numpy(m, name, seed):
    p = get(m, name)
    reference, rtol = REFERENCES[(m, name)]
    args = random_args(p, MODULES[m].VERIFY_SIZES, seed)
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    expected = dict(before)
    expected.update(reference(**{k: (v.copy() if isinstance(v, np.ndarray) else v)
                                 for k, v in args.items()}))
    interpret(p, **args)
    for k, want in expected.items():
        if rtol == 0:
            np.testing.assert_array_equal(args[k], want, err_msg=f"{name}: {k}")
        else:
            np.testing.assert_allclose(args[k], want, rtol=rtol, atol=rtol,
                                       err_msg=f"{name}: {k}")


@pytest.mark.parametrize("m,name", PROCS, ids=IDS)
def test_size_rules_are_enforced(m, name):
    p = get(m, name)
    assert p.preds, f"{name} states no size rule"
    for bad in BAD_SIZES[(m, name)]:
        with pytest.raises(ExoGpuError) as e:
            interpret(p, **random_args(p, bad, 0))
        assert e.value.diagnostic.kind == "usage"


def test_thread_loops_fit_the_block():
    """``cuda_threads`` may not ask for more threads than the launch provides (``blockDim``
    threads per CTA, ``clusterDim`` CTAs per cluster)."""
    def walk(stmts, avail, name, launch):
        for s in stmts:
            if isinstance(s, N.With) and isinstance(s.ctx, N.CudaDeviceFunction):
                cd = getattr(s.ctx, "clusterDim", 1) or 1
                walk(s.body, s.ctx.blockDim * cd, name, (s.ctx.blockDim, cd))
                continue
            if isinstance(s, N.For) and isinstance(s.mode, N.CudaThreads):
                per = s.mode.unit.threads(*launch) if launch else None
                assert per is not None and control_value(s.hi, {}) * per <= avail, \
                    f"{name}: cuda_threads(0, {s.hi.val}, unit={s.mode.unit}) in {avail} threads"
                walk(s.body, per, name, launch)
                continue
            walk(getattr(s, "body", ()), avail, name, launch)
            walk(getattr(s, "orelse", ()) or (), avail, name, launch)

    for m, name in PROCS:
        walk(get(m, name).body, None, name, None)


@pytest.mark.parametrize("m,name", PROCS, ids=IDS)
def test_print_parse_round_trip(m, name):
    p = get(m, name)
    text = print_proc(p)
    assert parse_proc_source(text, roundtrip_env(p)) == p, text


@pytest.mark.parametrize("m,name", _slow_gemm(PROCS), ids=IDS)
def test_verify_reports(m, name):
    r = report(m, name)
    assert isinstance(r, Report)
    assert r.verdict in VERDICTS
    assert r.proc == name


@pytest.mark.parametrize("m,name", _slow_gemm(PROCS), ids=IDS)
def test_shipped_kernels_are_accepted(m, name):
    r = report(m, name)
    if r.verdict == "unknown":
        pytest.skip(f"checker inconclusive: {r.reason}")
    assert r.ok, r.summary() + "".join(f"\n  {d.kind}: {d.message}" for d in r.diagnostics)
