"""Call preconditions: argument window shapes (kind ``type``) and the callee's asserts,
``stride()`` asserts included (kind ``instruction``), for every size, in both checkers.

Each family has the example, variants (constant, size-dependent, loop-dependent, through a
window statement, built by a rewrite) and the correct twin that stays ``proven``."""

from __future__ import annotations

import dataclasses

import pytest
from pre_helpers import accepted_both, parse, refuted_both

from exogpu_verify import verify
from exogpu_verify.errors import ExoGpuError
from exogpu_verify.ir import nodes as N
from exogpu_verify.ir.types import index

KERNEL = '''
@proc
def k(N: size, M: size, A: f32[M] @ CudaGmemLinear, B: f32[M] @ CudaGmemLinear):
    {asserts}
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for h in cuda_threads(0, 1, unit=cuda_thread):
                copy_n(N, B[0:M], A[0:M])  # <-
'''


# ---------------------------------------------------------------- argument shapes
def test_window_shorter_than_parameter_for_some_sizes_is_a_type_error():
    d = refuted_both(KERNEL.format(asserts="assert M >= 1"), "type", {"N": 2, "M": 4},
                     "has shape [M] but the parameter is [f32][n], i.e. [N]", static=False)
    assert "argument 'dst' of copy_n()" in d.message


def test_window_shape_equal_to_parameter_by_assert_is_proven():
    accepted_both(KERNEL.format(asserts="assert M == N"), {"N": 4, "M": 4})


LOOP_EXTENT = '''
@proc
def k(N: size, A: f32[8] @ CudaGmemLinear, B: f32[8 * N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for h in cuda_threads(0, 1, unit=cuda_thread):
                for i in seq(0, N):
                    copy_n(4, B[8 * i:8 * i + 4 + {extra}], A[0:4 + {extra}])  # <-
'''


def test_window_extent_that_depends_on_the_loop_is_checked_per_iteration():
    # i % 2 makes the second iteration's window 5 long: N = 1 is fine, N = 2 is not
    src = LOOP_EXTENT.format(extra="i % 2")
    refuted_both(src, "type", {"N": 2}, "has shape [i % 2 + 4]")
    p = parse(src)
    assert verify(p, sizes={"N": 1}).verdict == "checked"
    r = verify(p)
    assert r.sizes == {"N": 2}  # the smallest failing size, found symbolically


def test_window_extent_that_simplifies_to_the_shape_is_proven():
    accepted_both(LOOP_EXTENT.format(extra="0 * i"), {"N": 3})


def test_constant_mismatch_behind_a_window_statement_is_a_decoration_error():
    src = '''
    @proc
    def k(A: f32[128] @ CudaGmemLinear, B: f32[32] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=32):
            for t in cuda_tasks(0, 1):
                for h in cuda_threads(0, 4, unit=cuda_thread):
                    w = B[8 * h:8 * h + 8]
                    copy_n(16, w, A[32 * h:32 * h + 16])  # <-
    '''
    with pytest.raises(ExoGpuError) as e:
        parse(src)
    d = e.value.diagnostic
    assert (d.kind, d.line) == ("type", 7)
    assert "argument 'dst' of copy_n()" in d.message and "[8]" in d.message and "[16]" in d.message


GOOD_CALL = '''
@proc
def k(A: f32[128] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for h in cuda_threads(0, 4, unit=cuda_thread):
                copy_n(16, B[16 * h:16 * h + 16], A[32 * h:32 * h + 16])  # <-
'''


def _calls(body):
    for s in body:
        if isinstance(s, N.Call):
            yield s
        for f in ("body", "orelse"):
            yield from _calls(getattr(s, f, ()) or ())


def _rewrite_call(p, fn):
    """``p`` with its only call replaced by ``fn(call)`` (as a rewrite would build it)."""
    def go(body):
        out = []
        for s in body:
            if isinstance(s, N.Call):
                s = fn(s)
            for f in ("body", "orelse"):
                if getattr(s, f, None):
                    s = dataclasses.replace(s, **{f: go(getattr(s, f))})
            out.append(s)
        return tuple(out)
    return p.with_body(go(p.body))


def test_short_window_built_by_a_rewrite_is_refuted_by_verify():
    # the example, as IR the frontend never saw: copy_n(16, B[8h:8h+8], ...)
    p = parse(GOOD_CALL)
    h = N.Read("h", (), index)

    def short(call):
        dst = call.args[1]
        iv = N.Interval(N.BinOp("*", N.Const(8, index), h, index),
                        N.BinOp("+", N.BinOp("*", N.Const(8, index), h, index),
                                N.Const(8, index), index))
        return dataclasses.replace(call, args=(call.args[0], dataclasses.replace(dst, idx=(iv,)),
                                               call.args[2]))

    bad = _rewrite_call(p, short)
    r = verify(bad)
    assert r.verdict == "refuted" and r.stages[-1] == "static"
    d = r.diagnostics[0]
    assert (d.kind, d.line) == ("type", 6)
    assert "has shape [8] but the parameter is [f32][n], i.e. [16]" in d.message
    assert verify(p).verdict == "proven"


def test_replace_builds_calls_whose_windows_match():
    from exogpu_verify.schedule import replace

    src = '''
    @proc
    def k(A: f32[128] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear):
        with CudaDeviceFunction(blockDim=32):
            for t in cuda_tasks(0, 1):
                for h in cuda_threads(0, 4, unit=cuda_thread):
                    for i in seq(0, 16):
                        B[16 * h + i] = A[32 * h + i]
    '''
    p = parse(src)
    q = replace(p, p.find_loop("i"), parse(GOOD_CALL).body[0].body[0].body[0].body[0].callee)
    assert any(c.callee.name == "copy_n" for c in _calls(q.body))
    assert verify(q).verdict == "proven"


# ---------------------------------------------------------------- callee asserts
ASSERTING = '''
@instr(timeline=cuda_in_order_instr, unit=cuda_thread)
def copy_x4(n: size, dst: [f32][n] @ CudaGmemLinear, src: [f32][n] @ CudaGmemLinear):
    assert n % 4 == 0
    assert stride(src, 0) == 1
    for i in seq(0, n):
        dst[i] = src[i]
'''


def _env():
    from exogpu_verify import parse_proc_source

    return {"copy_x4": parse_proc_source(ASSERTING)}


CALLER = '''
@proc
def k(N: size, A: {aty} @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    {asserts}
    with CudaDeviceFunction(blockDim=32):
        for t in cuda_tasks(0, 1):
            for h in cuda_threads(0, 1, unit=cuda_thread):
                copy_x4({n}, B[0:{n}], A[0:{n}])  # <-
'''


def test_size_dependent_callee_assert_is_checked_for_all_sizes():
    src = CALLER.format(aty="f32[N]", asserts="assert N >= 1", n="N")
    d = refuted_both(src, "instruction", {"N": 6}, "precondition `assert n % 4 == 0` of "
                     "copy_x4() does not hold", static=False, **_env())
    assert "n = 6" in d.message or "n =" in d.message


def test_callee_assert_established_by_the_callers_assert_is_proven():
    accepted_both(CALLER.format(aty="f32[N]", asserts="assert N % 4 == 0", n="N"), {"N": 8},
                  **_env())


def test_constant_callee_assert_violation_is_static():
    src = CALLER.format(aty="f32[N]", asserts="assert N >= 8", n="6")
    refuted_both(src, "instruction", None, "`assert n % 4 == 0`", static=True, **_env())


def test_stride_assert_on_a_strided_window_is_an_instruction_error():
    src = '''
    @proc
    def k(N: size, A: f32[N, 2] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
        assert N % 4 == 0
        with CudaDeviceFunction(blockDim=32):
            for t in cuda_tasks(0, 1):
                for h in cuda_threads(0, 1, unit=cuda_thread):
                    copy_x4(N, B[0:N], A[0:N, 0])  # <-
    '''
    d = refuted_both(src, "instruction", None, "`assert stride(src, 0) == 1`", static=True,
                     **_env())
    assert "stride(src, 0) = 2" in d.message


def test_stride_of_a_window_parameter_needs_the_callers_assert():
    src = CALLER.format(aty="[f32][N]", asserts="assert N % 4 == 0", n="N")
    refuted_both(src, "instruction", None, "cannot be established", static=True, **_env())
    fixed = CALLER.format(aty="[f32][N]", asserts="assert N % 4 == 0\n    assert stride(A, 0) == 1",
                          n="N")
    accepted_both(fixed, None, **_env())
