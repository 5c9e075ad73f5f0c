"""The sequential reference interpreter on hand-built IR: values, precision, windows and
calls, vectorization (bitwise equal to scalar execution), and usage errors."""

from __future__ import annotations

from testlib import load_path

import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from exogpu_verify.errors import ExoGpuError
from exogpu_verify.ir.nodes import Alloc, CudaWarps, Fence, Pass, Read, With
from exogpu_verify.ir.memories import DRAM
from exogpu_verify.ir.timelines import cuda_in_order
from exogpu_verify.ir.types import bf16, f16, f32, f64, i8, i32, index
from exogpu_verify.semantics import generated_source, interpret, interpret_with
from exogpu_verify.semantics.vectorize import loop_vectorization_blocker, plan_vectorization


def _load(relpath: str):
    return load_path(Path(__file__).resolve().parent / relpath)


IR = _load("irbuild.py")
rd, e, lit, dop, fn, cop = IR.rd, IR.e, IR.lit, IR.dop, IR.fn, IR.cop


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


def run_both(p, **args):
    """Run vectorized and scalar on copies; assert bitwise-equal results; return them."""
    a1 = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    a2 = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    interpret_with(p, a1, vectorize=True)
    interpret_with(p, a2, vectorize=False)
    for k, v in a1.items():
        if isinstance(v, np.ndarray):
            assert bits(v) == bits(a2[k]), f"{k} differs between vectorized and scalar"
    return a1


def matmul(n: int, t_in=f32, t_out=f32):
    body = IR.loop("i", 0, n, IR.loop("j", 0, n, IR.loop("k", 0, n, IR.reduce(
        "C", ("i", "j"), dop("*", rd("A", t_in, "i", "k"), rd("B", t_in, "k", "j"), t_out)))))
    return IR.proc("matmul", [IR.data("A", t_in, n, n), IR.data("B", t_in, n, n),
                              IR.data("C", t_out, n, n)], [body])


def rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------ values and precision


def test_matmul_matches_numpy_in_the_same_order():
    A, B = rand((64, 64), np.float32, 1), rand((64, 64), np.float32, 2)
    out = run_both(matmul(64), A=A, B=B, C=np.zeros((64, 64), np.float32))
    ref = np.zeros((64, 64), np.float32)
    for k in range(64):  # C[i, j] accumulates k = 0, 1, ... in f32, like the program
        ref += A[:, k:k + 1] * B[k:k + 1, :]
    assert bits(out["C"]) == bits(ref)


def test_matmul_vectorizes_the_middle_loop():
    p = matmul(64)
    src = generated_source(p)
    assert "for v_i in range" in src and "for v_k in range" in src
    assert "for v_j in range" not in src and "v_C.shape[1]" in src  # j: a slice of C's rows
    assert "for v_j in range" in generated_source(p, vectorize=False)


def test_matmul_256_is_fast():
    A, B = rand((256, 256), np.float32, 3), rand((256, 256), np.float32, 4)
    C = np.zeros((256, 256), np.float32)
    t0 = time.perf_counter()
    interpret(matmul(256), A=A, B=B, C=C)
    assert time.perf_counter() - t0 < 10
    ref = np.zeros((256, 256), np.float32)
    for k in range(256):
        ref += A[:, k:k + 1] * B[k:k + 1, :]
    assert bits(C) == bits(ref)


def test_bf16_products_accumulate_exactly_in_f32():
    A, B = rand((16, 16), ml_dtypes.bfloat16, 5), rand((16, 16), ml_dtypes.bfloat16, 6)
    out = run_both(matmul(16, bf16, f32), A=A, B=B, C=np.zeros((16, 16), np.float32))
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    ref = np.zeros((16, 16), np.float32)
    for k in range(16):
        ref += A32[:, k:k + 1] * B32[k:k + 1, :]  # bf16 x bf16 is exact in f32
    assert bits(out["C"]) == bits(ref)


def test_f16_rounds_after_every_operation():
    # d = a * b + c: all f16 -> computed in f16; into f32 -> computed in f32
    def prog(t_out):
        rhs = dop("+", dop("*", rd("a", f16, "i"), rd("b", f16, "i"), t_out),
                  rd("c", f16, "i"), t_out)
        return IR.proc("fma", [IR.data("a", f16, 8), IR.data("b", f16, 8),
                               IR.data("c", f16, 8), IR.data("d", t_out, 8)],
                       [IR.loop("i", 0, 8, IR.assign("d", ("i",), rhs))])
    a = np.full(8, 1 + 2 ** -10, np.float16)
    b = np.full(8, 1 + 2 ** -10, np.float16)
    c = np.full(8, -1.0, np.float16)
    d16 = run_both(prog(f16), a=a, b=b, c=c, d=np.zeros(8, np.float16))["d"]
    assert bits(d16) == bits(a * b + c)  # numpy f16 arithmetic rounds per operation
    assert d16[0] == np.float16(2 ** -9)  # the 2**-20 of the exact product is lost
    d32 = run_both(prog(f32), a=a, b=b, c=c, d=np.zeros(8, np.float32))["d"]
    assert d32[0] == np.float32(2 ** -9 + 2 ** -20)


def test_integer_division_truncates_and_results_wrap():
    p = IR.proc("ints", [IR.data("x", i32, 4), IR.data("y", i32, 4), IR.data("q", i32, 4),
                         IR.data("r", i32, 4), IR.data("w", i8, 4)], [
        IR.loop("i", 0, 4,
                IR.assign("q", ("i",), dop("/", rd("x", i32, "i"), rd("y", i32, "i"), i32)),
                IR.assign("r", ("i",), dop("%", rd("x", i32, "i"), rd("y", i32, "i"), i32)),
                IR.assign("w", ("i",), dop("*", rd("w", i8, "i"), lit(2), i8)))])
    out = run_both(p, x=np.array([-7, 7, -7, 9], np.int32), y=np.array([2, -2, -2, 3], np.int32),
                   q=np.zeros(4, np.int32), r=np.zeros(4, np.int32),
                   w=np.array([100, -100, 3, 64], np.int8))
    assert out["q"].tolist() == [-3, -3, 3, 3]
    assert out["r"].tolist() == [-1, 1, -1, 0]
    assert out["w"].tolist() == [-56, 56, 6, -128]


def test_control_values_in_data_and_floor_division():
    # y[i] = i / 3 (floor, control) converted to f32, plus A[i % 5] * (i - 10)
    body = IR.loop("i", 0, 20, IR.assign("y", ("i",), dop(
        "+", cop("/", cop("-", "i", 10), 3),
        dop("*", rd("A", f32, cop("%", "i", 5)), cop("-", "i", 10), f32), f32)))
    p = IR.proc("ctl", [IR.data("A", f32, 5), IR.data("y", f32, 20)], [body])
    A = np.arange(5, dtype=np.float32)
    out = run_both(p, A=A, y=np.zeros(20, np.float32))
    want = [(i - 10) // 3 + A[i % 5] * (i - 10) for i in range(20)]
    assert out["y"].tolist() == want


def test_builtins():
    x = rd("x", f32, "i")
    outs = {"relu": fn("relu", f32, x), "sqrt": fn("sqrt", f32, x), "exp": fn("exp", f32, x),
            "abs": fn("abs", f32, x), "fmax": fn("fmax", f32, x, lit(0.5)),
            "fmin": fn("fmin", f32, x, lit(0.5)),
            "sel": fn("select", f32, x, lit(0.0), lit(1.0), dop("*", x, lit(2.0), f32))}
    p = IR.proc("builtins", [IR.data("x", f32, 9)] + [IR.data(k, f32, 9) for k in outs],
                [IR.loop("i", 0, 9, *[IR.assign(k, ("i",), v) for k, v in outs.items()])])
    xs = np.array([-2, -0.5, 0, 0.25, 0.5, 1, 3, np.nan, np.inf], np.float32)
    args = {k: np.zeros(9, np.float32) for k in outs}
    out = run_both(p, x=xs, **args)
    with np.errstate(all="ignore"):
        assert bits(out["relu"]) == bits(np.where(xs > 0, xs, np.float32(0)))
        assert bits(out["sqrt"]) == bits(np.sqrt(xs))
        assert bits(out["exp"]) == bits(np.exp(xs))
        assert bits(out["abs"]) == bits(np.abs(xs))
        assert bits(out["fmax"]) == bits(np.fmax(xs, np.float32(0.5)))
        assert bits(out["fmin"]) == bits(np.fmin(xs, np.float32(0.5)))
        assert bits(out["sel"]) == bits(np.where(xs < 0, np.float32(1), xs * 2))
    assert out["relu"][7] == 0  # relu(NaN) = 0


def test_alloc_is_nan_filled_and_scalars_work():
    # t: f32 (rank 0); u: f32[4] never written; y[i] = t + u[i] -> NaN
    p = IR.proc("allocs", [IR.data("x", f32, 4), IR.data("y", f32, 4), IR.data("s", f64)], [
        Alloc("t", IR.tensor(f32), DRAM, IR.at(2)),
        Alloc("u", IR.tensor(f32, 4), DRAM, IR.at(3)),
        IR.assign("t", (), lit(0.0)),
        IR.loop("i", 0, 4, IR.reduce("t", (), rd("x", f32, "i"))),
        IR.assign("s", (), Read("t", (), f32)),
        IR.loop("i", 0, 4, IR.assign("y", ("i",), dop("+", rd("y", f32, "i"),
                                                      rd("u", f32, "i"), f32)))])
    s = np.zeros((), np.float64)
    out = run_both(p, x=np.arange(4, dtype=np.float32), y=np.zeros(4, np.float32), s=s)
    assert out["s"][()] == 6.0
    assert np.isnan(out["y"]).all()


def test_sync_and_with_are_transparent():
    body = [With(CudaWarps(), (IR.loop("i", 0, 8, Fence(cuda_in_order, cuda_in_order),
                                      IR.assign("y", ("i",), rd("x", f32, "i")), Pass()),))]
    p = IR.proc("w", [IR.data("x", f32, 8), IR.data("y", f32, 8)], body)
    x = rand(8, np.float32)
    assert bits(run_both(p, x=x, y=np.zeros(8, np.float32))["y"]) == bits(x)


# ------------------------------------------------------------------ windows and calls


def copy4():
    """An instruction-like callee: ``copy4(n, dst: [f32][n], src: [f32][n])``, assert n == 4."""
    return IR.proc("copy4", [IR.ctrl("n"), IR.data("dst", f32, "n", window=True),
                             IR.data("src", f32, "n", window=True)],
                   [IR.loop("i", 0, "n", IR.assign("dst", ("i",), rd("src", f32, "i")))],
                   preds=[cop("==", IR.sz("n"), 4)], line=100)


def test_calls_bind_windows_as_views():
    cp = copy4()
    p = IR.proc("rows", [IR.ctrl("M"), IR.data("A", f32, "M", 8), IR.data("B", f32, "M", 8)], [
        IR.loop("i", 0, IR.sz("M"),
                IR.call(cp, 4, IR.window("B", f32, "i", (4, 8)),
                        IR.window("A", f32, "i", (0, 4)), line=5),
                IR.call(cp, 4, IR.window("B", f32, "i", (0, 4)),
                        IR.window("A", f32, "i", (4, 8))))])
    A = rand((3, 8), np.float32)
    out = run_both(p, M=3, A=A, B=np.zeros((3, 8), np.float32))
    assert bits(out["B"]) == bits(np.concatenate([A[:, 4:], A[:, :4]], axis=1))


def test_overlapping_windows_run_the_callee_sequentially():
    # copy4(A[1:5], A[0:4]) smears A[0] (each step reads what the previous one wrote);
    # a vectorized copy would shift instead, so the overlap must disable vectorization
    p = IR.proc("smear", [IR.data("A", f32, 8)], [
        IR.call(copy4(), 4, IR.window("A", f32, (1, 5)), IR.window("A", f32, (0, 4)))])
    A = np.arange(8, dtype=np.float32)
    interpret(p, A=A)
    assert A.tolist() == [0, 0, 0, 0, 0, 5, 6, 7]


def test_error_inside_a_callee_notes_the_call_site():
    shift = IR.proc("shift", [IR.data("dst", f32, 4, window=True),
                              IR.data("src", f32, 4, window=True)],
                    [IR.loop("i", 0, 4, IR.assign("dst", ("i",),
                                                  rd("src", f32, cop("+", "i", 1)), line=51))],
                    line=50)
    p = IR.proc("outer", [IR.data("A", f32, 8)], [
        IR.call(shift, IR.window("A", f32, (0, 4)), IR.window("A", f32, (4, 8)), line=6)])
    with pytest.raises(ExoGpuError) as exc:
        interpret(p, A=np.zeros(8, np.float32))
    d = exc.value.diagnostic
    assert d.kind == "usage" and d.line == 51 and "shift" in d.message
    assert any("prog.py:6" in n for n in d.notes)


def test_window_statement_and_column_window():
    from exogpu_verify.ir.nodes import WindowStmt
    p = IR.proc("col", [IR.data("A", f32, 4, 6), IR.data("y", f32, 4)], [
        WindowStmt("c", IR.window("A", f32, (0, 4), 2), None, IR.at(2)),
        IR.loop("i", 0, 4, IR.assign("y", ("i",), rd("c", f32, "i")))])
    A = rand((4, 6), np.float32)
    assert bits(run_both(p, A=A, y=np.zeros(4, np.float32))["y"]) == bits(A[:, 2])


def test_callee_precondition_is_reported_at_the_call_site():
    cp = copy4()
    p = IR.proc("bad", [IR.data("A", f32, 8), IR.data("B", f32, 8)], [
        IR.call(cp, 3, IR.window("B", f32, (0, 3)), IR.window("A", f32, (0, 3)), line=7)])
    with pytest.raises(ExoGpuError) as exc:
        interpret(p, A=np.zeros(8, np.float32), B=np.zeros(8, np.float32))
    d = exc.value.diagnostic
    assert d.kind == "usage" and d.line == 7
    assert "n == 4" in d.message and "copy4" in d.message and "n = 3" in d.message


def test_stride_precondition():
    p = IR.proc("unit_stride", [IR.data("A", f32, 4, 4, window=True), IR.data("y", f32, 4)], [
        IR.loop("i", 0, 4, IR.assign("y", ("i",), rd("A", f32, "i", 0)))],
        preds=[cop("==", IR.stride("A", 1), 1)], line=3)
    big = rand((4, 8), np.float32)
    y = np.zeros(4, np.float32)
    interpret(p, A=big[:, 0:4], y=y)  # a row-major window: stride(A, 1) == 1
    assert bits(y) == bits(big[:, 0])
    with pytest.raises(ExoGpuError) as exc:
        interpret(p, A=big[:, ::2], y=y)
    assert exc.value.kind == "usage" and exc.value.diagnostic.line == 3
    assert "stride(A, 1) == 1" in exc.value.diagnostic.message


# ------------------------------------------------------------------ vectorization


def test_floor_div_mod_indices_vectorize():
    # B[i] = A[i / 2] + A[i % 3] + A[2 * i + 1]: i is vectorized (B's index is i)
    body = IR.loop("i", 0, 16, IR.assign("B", ("i",), dop("+", dop(
        "+", rd("A", f32, cop("/", "i", 2)), rd("A", f32, cop("%", "i", 3)), f32),
        rd("A", f32, cop("+", cop("*", 2, "i"), 1)), f32)))
    p = IR.proc("fdm", [IR.data("A", f32, 40), IR.data("B", f32, 16)], [body])
    assert plan_vectorization(p.body, {}) == {id(body)}
    A = rand(40, np.float32)
    out = run_both(p, A=A, B=np.zeros(16, np.float32))
    i = np.arange(16)
    assert bits(out["B"]) == bits(A[i // 2] + A[i % 3] + A[2 * i + 1])


def test_reversed_and_diagonal_accesses_use_fancy_indices():
    # B[7 - i] = A[i, i] + B[7 - i]: coefficient -1 and a repeated variable -> fancy indexing
    body = IR.loop("i", 0, 8, IR.assign("B", (cop("-", 7, "i"),), dop(
        "+", rd("A", f32, "i", "i"), rd("B", f32, cop("-", 7, "i")), f32)))
    p = IR.proc("rev", [IR.data("A", f32, 8, 8), IR.data("B", f32, 8)], [body])
    assert "_vindex" in generated_source(p)
    A, B = rand((8, 8), np.float32, 7), rand(8, np.float32, 8)
    out = run_both(p, A=A, B=B)
    assert bits(out["B"]) == bits(np.diag(A)[::-1] + B)


def test_written_floor_div_index_does_not_vectorize():
    # B[i / 4] += A[i]: four iterations write one element -> sequential accumulation
    body = IR.loop("i", 0, 16, IR.reduce("B", (cop("/", "i", 4),), rd("A", f32, "i")))
    p = IR.proc("fd", [IR.data("A", f32, 16), IR.data("B", f32, 4)], [body])
    assert loop_vectorization_blocker(body, {}) is not None
    run_both(p, A=rand(16, np.float32), B=np.zeros(4, np.float32))


def test_jointly_injective_dims_vectorize():
    # B[i / 4, i % 4] = A[i]: neither dimension alone is injective in i, both together are
    body = IR.loop("i", 0, 16, IR.assign("B", (cop("/", "i", 4), cop("%", "i", 4)),
                                         rd("A", f32, "i")))
    p = IR.proc("split", [IR.data("A", f32, 16), IR.data("B", f32, 4, 4)], [body])
    assert loop_vectorization_blocker(body, {}) is None
    A = rand(16, np.float32, 9)
    out = run_both(p, A=A, B=np.zeros((4, 4), np.float32))
    assert bits(out["B"]) == bits(A.reshape(4, 4))


def test_jointly_non_injective_dims_do_not_vectorize():
    # B[i / 4, i % 2] += A[i]: i and i + 2 (same group of 4, same parity) write one element
    body = IR.loop("i", 0, 16, IR.reduce("B", (cop("/", "i", 4), cop("%", "i", 2)),
                                         rd("A", f32, "i")))
    assert loop_vectorization_blocker(body, {}) is not None


def test_guarded_bodies_do_not_vectorize():
    inner = IR.if_(cop("<", "i", 5), [IR.assign("B", ("i",), rd("A", f32, "i"))],
                   [IR.assign("B", ("i",), lit(-1.0))])
    body = IR.loop("i", 0, 8, inner)
    p = IR.proc("guard", [IR.data("A", f32, 8), IR.data("B", f32, 8)], [body])
    assert "If" in loop_vectorization_blocker(body, {})
    assert plan_vectorization(p.body, {}) == frozenset()
    out = run_both(p, A=np.arange(8, dtype=np.float32), B=np.zeros(8, np.float32))
    assert out["B"].tolist() == [0, 1, 2, 3, 4, -1, -1, -1]


def test_stencil_with_shifted_reads_stays_sequential():
    # B[i + 1] = B[i] * 2: a loop-carried dependence; not vectorizable
    body = IR.loop("i", 0, 7, IR.assign("B", (cop("+", "i", 1),),
                                        dop("*", rd("B", f32, "i"), lit(2.0), f32)))
    p = IR.proc("scan", [IR.data("B", f32, 8)], [body])
    assert loop_vectorization_blocker(body, {}) is not None
    out = run_both(p, B=np.ones(8, np.float32))
    assert out["B"].tolist() == [2.0 ** k for k in range(8)]


def test_aliased_arguments_fall_back_to_scalar():
    # B[i] = 1; C[i] = A[i + 1]: with A and B the same array, sequential reads see old values
    body = IR.loop("i", 0, 7, IR.assign("B", ("i",), lit(1.0)),
                   IR.assign("C", ("i",), rd("A", f32, cop("+", "i", 1))))
    p = IR.proc("alias", [IR.data("A", f32, 8), IR.data("B", f32, 8), IR.data("C", f32, 7)],
                [body])
    assert plan_vectorization(p.body, {}) == {id(body)}
    X = np.zeros(8, np.float32)
    C = np.full(7, 5, np.float32)
    interpret(p, A=X, B=X, C=C)
    assert C.tolist() == [0.0] * 7


def test_hoisted_index_checks_wait_for_use():
    # the inner loop runs K times; B[j + 8] is out of bounds only if it runs at all
    p = IR.proc("hoist", [IR.ctrl("K", index), IR.data("B", f32, 8)], [
        IR.loop("j", 0, 8, IR.loop("k", 0, Read("K", (), index),
                                   IR.assign("B", (cop("+", "j", 8),), lit(1.0), line=9)))])
    interpret(p, K=0, B=np.zeros(8, np.float32))
    for vec in (True, False):
        with pytest.raises(ExoGpuError) as exc:
            interpret_with(p, dict(K=1, B=np.zeros(8, np.float32)), vectorize=vec)
        assert exc.value.kind == "usage" and exc.value.diagnostic.line == 9
        assert "out of bounds" in exc.value.diagnostic.message


def test_negative_index_is_an_error_not_a_wraparound():
    p = IR.proc("neg", [IR.data("A", f32, 8), IR.data("B", f32, 8)], [
        IR.loop("i", 0, 8, IR.assign("B", ("i",), rd("A", f32, cop("-", "i", 1)), line=4))])
    for vec in (True, False):
        with pytest.raises(ExoGpuError) as exc:
            interpret_with(p, dict(A=np.zeros(8, np.float32), B=np.zeros(8, np.float32)),
                           vectorize=vec)
        assert exc.value.kind == "usage" and exc.value.diagnostic.line == 4


# ------------------------------------------------------------------ usage errors


def axpy():
    body = IR.loop("i", 0, IR.sz("N"), IR.reduce("y", ("i",), rd("x", f32, "i")))
    return IR.proc("axpy", [IR.ctrl("N"), IR.data("x", f32, "N"), IR.data("y", f32, "N")],
                   [body], preds=[cop("==", cop("%", IR.sz("N"), 4), 0)], line=20)


@pytest.mark.parametrize("args, words", [
    (dict(N=8, x=np.zeros(8, np.float64), y=np.zeros(8, np.float32)), ["x", "float32", "float64"]),
    (dict(N=8, x=np.zeros(9, np.float32), y=np.zeros(8, np.float32)), ["x", "(8,)", "(9,)"]),
    (dict(N=6, x=np.zeros(6, np.float32), y=np.zeros(6, np.float32)), ["N % 4 == 0", "N = 6"]),
    (dict(N=-4, x=np.zeros(4, np.float32), y=np.zeros(4, np.float32)), ["N", "positive"]),
    (dict(N=8, x=[0.0] * 8, y=np.zeros(8, np.float32)), ["x", "numpy array"]),
    (dict(N=8, y=np.zeros(8, np.float32)), ["missing", "x"]),
    (dict(N=8, x=np.zeros(8, np.float32), y=np.zeros(8, np.float32), z=1), ["unexpected", "z"]),
    (dict(N=8.0, x=np.zeros(8, np.float32), y=np.zeros(8, np.float32)), ["N", "int"]),
])
def test_usage_errors(args, words):
    with pytest.raises(ExoGpuError) as exc:
        interpret(axpy(), **args)
    d = exc.value.diagnostic
    assert d.kind == "usage" and d.line == 20 and d.hint
    for w in words:
        assert w in d.message


def test_read_only_output_is_a_usage_error():
    y = np.zeros(8, np.float32)
    y.flags.writeable = False
    with pytest.raises(ExoGpuError) as exc:
        interpret(axpy(), N=8, x=np.zeros(8, np.float32), y=y)
    assert exc.value.kind == "usage" and "read-only" in exc.value.diagnostic.message


def test_numpy_integers_and_strided_data_are_accepted():
    x = rand(16, np.float32)[::2]
    y = np.zeros(8, np.float32)
    interpret(axpy(), N=np.int64(8), x=x, y=y)
    assert bits(y) == bits(x)
