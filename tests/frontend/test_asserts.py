"""Asserts that make a proof vacuous or cannot be evaluated are located user errors at
decoration (issue 11, "Vacuous proofs"): no size satisfies them (kind ``type``, at the first
assert), or a control expression divides by a constant that is not positive. Their twins
that some size satisfies are accepted and proven as before."""

from __future__ import annotations

import pytest

from exogpu_verify import ExoGpuError, interpret, parse_proc_source, verify

KERNEL = """
def k(M: size, N: size, s: index, A: f32[M] @ CudaGmemLinear):
    ASSERTS
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, M):
            for t in cuda_threads(0, 1, unit=cuda_thread):
                A[task] = 1.0
"""


def parse(asserts: list[str]):
    text = KERNEL.replace("ASSERTS", "\n    ".join(asserts) if asserts else "pass")
    return text, parse_proc_source(text)


def line_of(text: str, snippet: str) -> int:
    return [i + 1 for i, ln in enumerate(text.splitlines()) if snippet in ln][0]


@pytest.mark.parametrize("asserts", [
    ["assert M == 0"],
    ["assert N % 256 == -1"],
    ["assert M < 1"],
    ["assert M % 2 == 0", "assert M % 4 == 1"],
    ["assert N >= 4", "assert M + N <= 4"],
    ["assert M % 128 == 0", "assert M < 100"],
    ["assert s == 3 and s == 4"],
])
def test_unsatisfiable_asserts_are_a_type_error_at_the_first_assert(asserts):
    text = KERNEL.replace("ASSERTS", "\n    ".join(asserts))
    with pytest.raises(ExoGpuError) as ei:
        parse_proc_source(text)
    d = ei.value.diagnostic
    assert d.kind == "type"
    assert "no size satisfies the asserts" in d.message
    assert d.line == line_of(text, asserts[0])


@pytest.mark.parametrize("asserts", [
    ["assert M == 1"],
    ["assert N % 256 == 255"],
    ["assert M % 2 == 0", "assert M % 4 == 2"],
    ["assert N >= 4", "assert M + N <= 5"],
    ["assert s == -7"],                      # index parameters may be negative
])
def test_satisfiable_twins_are_accepted_and_proven(asserts):
    _text, p = parse(asserts)
    assert verify(p).verdict == "proven"


def test_asserts_isl_cannot_express_are_not_taken_for_unsatisfiable():
    # a product of sizes is not quasi-affine: left out, never claimed empty
    parse(["assert M * N == 0"])
    parse(["assert stride(A, 0) == 1"])


def test_contradicting_stride_asserts_are_vacuous_too():
    text = KERNEL.replace("ASSERTS", "assert stride(A, 0) == 1\n    assert stride(A, 0) == 2")
    with pytest.raises(ExoGpuError) as ei:
        parse_proc_source(text)
    assert ei.value.diagnostic.kind == "type"


@pytest.mark.parametrize("expr,op,c", [
    ("M % 0 == 0", "%", 0),
    ("M / 0 == 1", "/", 0),
    ("M % -4 == 1", "%", -4),
    ("(M - 1) / -2 >= 0", "/", -2),
])
def test_division_by_a_non_positive_constant_is_a_located_error(expr, op, c):
    text = KERNEL.replace("ASSERTS", f"assert {expr}")
    with pytest.raises(ExoGpuError) as ei:
        parse_proc_source(text)
    d = ei.value.diagnostic
    assert d.kind == "type"
    assert f"'{op}' by the non-positive constant {c}" in d.message and "positive constants" in d.message
    assert d.line == line_of(text, f"assert {expr}")


def test_division_by_zero_in_a_loop_bound_is_located_too():
    text = KERNEL.replace("ASSERTS", "pass").replace("cuda_tasks(0, M)", "cuda_tasks(0, M % 0)")
    with pytest.raises(ExoGpuError) as ei:
        parse_proc_source(text)
    assert ei.value.diagnostic.kind == "type"
    assert ei.value.diagnostic.line == line_of(text, "cuda_tasks(0, M % 0)")


def test_a_procedure_with_satisfiable_asserts_still_interprets():
    import numpy as np

    _text, p = parse(["assert M % 2 == 0"])
    a = np.zeros(4, np.float32)
    interpret(p, M=4, N=1, s=0, A=a)
    assert (a == 1.0).all()
