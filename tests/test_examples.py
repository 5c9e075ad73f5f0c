"""The paper's example programs in ``examples/``: they parse, mean what they say, print back.

Every module-level procedure (and instruction) of every ``examples/*.py`` is run with the
sequential interpreter on random inputs at the module's ``VERIFY_SIZES`` and compared with a
numpy reference written here independently of the program; printed IR parses back to an
equal procedure; ``verify`` answers with a ``Report`` whatever its verdict (the checkers are
under construction, so ``test_verify_reports`` accepts any verdict). Where the checker is
decisive, ``test_verdict_matches_the_story`` holds it to the story each example tells: the
bug is refuted with the right kind of diagnostic, on one of the two conflicting statements,
and the fix is accepted.
"""

from __future__ import annotations

from testlib import load_path

import functools
import re
from pathlib import Path

import numpy as np
import pytest

from testlib import verify_cached
from exogpu_verify.loader import module_bindings
from exogpu_verify import interpret
from exogpu_verify.report import VERDICTS, Report
from exogpu_verify.frontend import parse_proc_source, print_proc, roundtrip_env
from exogpu_verify.ir.printer import stmt_lines
from exogpu_verify.ir import nodes as N

# verify() of the shipped procs is shared with the other modules that verify them, across
# pytest-xdist workers too (testlib.verify_cached: one report per kernel per session)

DIR = Path(__file__).resolve().parents[1] / "examples"


# ------------------------------------------------------------------ loading and inputs
def load_module(path: Path):
    return load_path(path)


def module_procs(mod) -> dict:
    """The instructions the module defines and the procs it binds, by name, as
    ``exogpu-verify`` finds them (``loader.module_bindings``: defined here or built here by a
    factory or a schedule)."""
    instrs = {k: v for k, v in vars(mod).items()
              if isinstance(v, N.Procedure) and v.is_instr and v.module is vars(mod)}
    return instrs | dict(module_bindings(mod))


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
            args[q.name] = rng.standard_normal(shape).astype(q.type.scalar.np_dtype)
        else:
            args[q.name] = sizes[q.name]
    return args


def check_against_reference(p, sizes: dict, reference, rtol: float, seed: int = 0):
    """Interpret ``p``; data the reference does not name must come back unchanged."""
    args = random_args(p, sizes, seed)
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    expected = dict(before)
    expected.update(reference(**{k: (v.copy() if isinstance(v, np.ndarray) else v)
                                 for k, v in args.items()}))
    interpret(p, **args)
    for name, want in expected.items():
        got = args[name]
        if rtol == 0:
            np.testing.assert_array_equal(got, want, err_msg=f"{p.name}: {name}")
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol,
                                       err_msg=f"{p.name}: {name}")


# ------------------------------------------------------------------ numpy references
def copy_B(A, **_):
    return {"B": A}


def broadcast_last(N, A, **_):
    # sequentially, each task's first thread loop leaves tmp = its last element of A
    return {"B": np.repeat(A.reshape(N // 32, 32)[:, 31], 32)}


def copy_dst(src, **_):
    return {"dst": src}


def multicast_dst(src, dst, **_):
    return {"dst": np.broadcast_to(src, dst.shape).copy()}


def wgmma_acc(D, A, B, **_):
    return {"D": (D.astype(np.float64) + A.astype(np.float64) @ B).astype(np.float32)}


def multicast_copy(A, C, **_):
    # C[task, k, cta] = A[task, k] for both CTAs
    return {"C": np.broadcast_to(A[:, :, None], C.shape).copy()}


def per_warpgroup_matmul(A, B, **_):
    # C[task, cta, wg] = A[task, cta, wg] @ B[task, cta]
    return {"C": np.einsum("tcwmk,tckn->tcwmn", A.astype(np.float64), B).astype(np.float32)}


def async_transitive(A, B, Bout, **_):
    # Bout[task, k, cta] = B[task, k]; C[task, k, cta, wg] = A[task, cta, wg] @ sum_{j<=k} B[task, j]
    partial = np.cumsum(B.astype(np.float64), axis=1)
    C = np.einsum("tcwmk,tjkn->tjcwmn", A.astype(np.float64), partial)
    return {"Bout": np.broadcast_to(B[:, :, None], Bout.shape).copy(),
            "C": C.astype(np.float32)}


# (module, proc) -> (extra sizes for instruction parameters, reference, rtol; 0 = exact)
REFERENCES = {
    ("vec_copy_seq", "vec_copy_seq"): ({}, copy_B, 0),
    ("vec_copy_threads", "vec_copy_threads"): ({}, copy_B, 0),
    ("tmp_per_thread", "tmp_per_thread"): ({}, copy_B, 0),
    ("tmp_scalar_broadcast", "tmp_scalar_broadcast"): ({}, broadcast_last, 0),
    ("sync_bug_multicast", "some_in_order_op"): ({"n": 8}, copy_dst, 0),
    ("sync_bug_multicast", "example_tma_multicast"): ({}, multicast_dst, 0),
    ("sync_bug_multicast", "multicast_bug"): ({}, multicast_copy, 0),
    ("sync_bug_multicast", "multicast_fixed"): ({}, multicast_copy, 0),
    ("sync_bug_multicast", "multicast_fixed_fence"): ({}, multicast_copy, 0),
    ("sync_bug_wgmma_wait", "some_in_order_op"): ({"n": 16}, copy_dst, 0),
    ("sync_bug_wgmma_wait", "example_wgmma"): ({}, wgmma_acc, 1e-5),
    ("sync_bug_wgmma_wait", "wgmma_wait_bug"): ({}, per_warpgroup_matmul, 1e-5),
    ("sync_bug_wgmma_wait", "wgmma_wait_fixed"): ({}, per_warpgroup_matmul, 1e-5),
    ("sync_bug_async_transitive", "some_in_order_op"): ({"n": 1}, copy_dst, 0),
    ("sync_bug_async_transitive", "example_tma_multicast"): ({}, multicast_dst, 0),
    ("sync_bug_async_transitive", "example_wgmma"): ({}, wgmma_acc, 1e-5),
    ("sync_bug_async_transitive", "async_transitive_bug"): ({}, async_transitive, 1e-4),
    ("sync_bug_async_transitive", "async_transitive_fixed"): ({}, async_transitive, 1e-4),
}

# kernel -> None (accepted), or (diagnostic kind, names of which one must appear in the
# statement the diagnostic points at: the two racing accesses, or the misused variable)
EXPECTED = {
    "vec_copy_seq": None,
    "vec_copy_threads": None,
    "tmp_per_thread": None,
    "tmp_scalar_broadcast": ("distributed-memory", ("tmp",)),
    "multicast_bug": ("sync", ("example_tma_multicast", "some_in_order_op")),
    "multicast_fixed": None,
    "multicast_fixed_fence": None,
    "wgmma_wait_bug": ("sync", ("example_wgmma", "some_in_order_op")),
    "wgmma_wait_fixed": None,
    "async_transitive_bug": ("sync", ("example_tma_multicast", "example_wgmma")),
    "async_transitive_fixed": None,
}

MODULES = {path.stem: load_module(path) for path in sorted(DIR.glob("*.py"))}
PROCS = [(m, name) for m, mod in MODULES.items() for name in module_procs(mod)]
KERNELS = [(m, name) for m, name in PROCS if not module_procs(MODULES[m])[name].is_instr]


def get(m: str, name: str) -> N.Procedure:
    return module_procs(MODULES[m])[name]


@functools.cache
def report(m: str, name: str):
    """``verify`` at the defaults (auto mode, falling back to ``VERIFY_SIZES``), once per
    session (``testlib.verify_cached``: other test modules verify the same procs)."""
    return verify_cached(get(m, name))


# ------------------------------------------------------------------ tests
def test_every_module_is_documented_and_sized():
    assert MODULES, f"no examples found in {DIR}"
    for m, mod in MODULES.items():
        assert mod.__doc__ and mod.__doc__.strip(), f"examples/{m}.py has no docstring"
        assert isinstance(getattr(mod, "VERIFY_SIZES", None), dict), \
            f"examples/{m}.py must set VERIFY_SIZES"
        assert module_procs(mod), f"examples/{m}.py defines no procedure"


def test_every_proc_has_a_reference():
    assert set(PROCS) == set(REFERENCES), (
        f"missing references: {sorted(set(PROCS) - set(REFERENCES))}; "
        f"stale references: {sorted(set(REFERENCES) - set(PROCS))}")


def test_each_bug_has_a_fix():
    for m in MODULES:
        if m.startswith("sync_bug_"):
            names = [n for mm, n in KERNELS if mm == m]
            assert any(n.endswith("_bug") for n in names), m
            assert any(n.endswith("_fixed") for n in names), m


@pytest.mark.parametrize("m,name", PROCS, ids=[f"{m}.{n}" for m, n in PROCS])
def test_interpret_matches_numpy(m, name):
    p = get(m, name)
    extra, reference, rtol = REFERENCES[(m, name)]
    sizes = {**MODULES[m].VERIFY_SIZES, **extra}
    check_against_reference(p, sizes, reference, rtol)


def test_scalar_tmp_is_a_broadcast_not_a_copy():
    """The sequential meaning the distributed-memory analysis protects (paper 2.1)."""
    p = MODULES["tmp_scalar_broadcast"].tmp_scalar_broadcast
    A = np.arange(64, dtype=np.float32)
    B = np.zeros(64, dtype=np.float32)
    interpret(p, N=64, A=A, B=B)
    assert (B[:32] == 31).all() and (B[32:] == 63).all()
    assert not np.array_equal(B, A)


@pytest.mark.parametrize("m,name", PROCS, ids=[f"{m}.{n}" for m, n in PROCS])
def test_print_parse_round_trip(m, name):
    p = get(m, name)
    text = print_proc(p)
    assert parse_proc_source(text, roundtrip_env(p)) == p, text


@pytest.mark.parametrize("m,name", KERNELS, ids=[f"{m}.{n}" for m, n in KERNELS])
def test_verify_reports(m, name):
    r = report(m, name)
    assert isinstance(r, Report)
    assert r.verdict in VERDICTS
    assert r.proc == name


def statement_lines(p: N.Procedure, names) -> set[int]:
    """Source lines of the leaf statements of ``p`` whose text mentions one of ``names``."""
    out = set()

    def walk(stmts):
        for s in stmts:
            if hasattr(s, "body"):
                walk(s.body)
                walk(getattr(s, "orelse", ()) or ())
            elif any(re.search(rf"\b{n}\b", stmt_lines([s])[0]) for n in names):
                out.add(s.srcinfo.line)

    walk(p.body)
    return out


def test_expectations_cover_every_kernel():
    assert set(EXPECTED) == {name for _, name in KERNELS}


@pytest.mark.parametrize("m,name", KERNELS, ids=[f"{m}.{n}" for m, n in KERNELS])
def test_verdict_matches_the_story(m, name):
    p = get(m, name)
    r = report(m, name)
    if r.verdict == "unknown":
        pytest.skip(f"checker inconclusive: {r.reason}")
    want = EXPECTED[name]
    if want is None:
        assert r.ok, r.summary() + "".join(f"\n  {d.kind}: {d.message}" for d in r.diagnostics)
        return
    kind, names = want
    assert r.verdict == "refuted", r.summary()
    assert r.diagnostics, r.summary()
    d = r.diagnostics[0]
    assert d.kind == kind, d.message
    assert d.line in statement_lines(p, names), (d.line, d.message)
