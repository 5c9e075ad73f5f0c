"""Scope rules (kind "scope"): accepted and rejected programs, kind and line asserted."""

from __future__ import annotations

from dataclasses import replace

from analysis_helpers import assert_error, assert_ok, marked_line, parse

from exogpu_verify.analysis import check_scopes
from exogpu_verify.ir import nodes as N

KERNEL = """
def k(N: size, A: f32[N] @ CudaGmemLinear, H: f32[N] @ DRAM, G: f32[4] @ CudaGridConstant):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                A[task * 256 + t] = A[task * 256 + t] + G[0]
"""


def test_gmem_read_write_in_cuda_and_gridconst_read_accepted():
    assert_ok(KERNEL)


def test_dram_read_in_cuda_rejected():
    assert_error("""
def k(N: size, A: f32[N] @ CudaGmemLinear, H: f32[N] @ DRAM):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                A[task * 256 + t] = H[task * 256 + t]  # <-
""", "scope", "DRAM")


def test_gridconst_write_in_cuda_rejected():
    assert_error("""
def k(G: f32[4] @ CudaGridConstant):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            for t in cuda_threads(0, 1, unit=cuda_thread):
                G[0] = 1.0  # <-
""", "scope", "read-only")


def test_gmem_direct_write_at_cpu_rejected():
    assert_error("""
def k(N: size, A: f32[N] @ CudaGmemLinear):
    A[0] = 1.0  # <-
""", "scope", "CPU scope")


def test_gmem_to_stream_instr_at_cpu_accepted_other_cpu_instr_rejected():
    assert_ok("""
def k(N: size, A: f32[N] @ CudaGmemLinear, H: f32[N] @ DRAM):
    upload(N, A, H)
""")
    assert_error("""
def k(N: size, A: f32[N] @ CudaGmemLinear):
    host_touch(N, A)  # <-
""", "scope", "cpu_cuda_stream_instr")


def test_dram_alloc_and_access_at_cpu_accepted():
    assert_ok("""
def k(N: size, H: f32[N] @ DRAM):
    tmp: f32[N] @ DRAM
    for i in seq(0, N):
        tmp[i] = H[i]
""")


def test_device_memory_parameter_of_proc_rejected():
    assert_error("""
def k(x: f32[8] @ CudaRmem):  # <-
    pass
""", "scope", "CudaRmem")


def test_parser_scope_errors_have_scope_kind():
    import pytest

    from exogpu_verify import ExoGpuError

    with pytest.raises(ExoGpuError) as e:
        parse("""
def k(N: size):
    for t in cuda_threads(0, 32, unit=cuda_thread):
        pass
""")
    assert e.value.kind == "scope" and e.value.diagnostic.line == 2


# -------------------------------------------------------------- IR built directly (rewrites)

def _kernel_parts():
    p = parse(KERNEL)
    cdf = p.body[0]
    task = cdf.body[0]
    threads = task.body[0]
    return p, cdf, task, threads


def test_ir_cuda_threads_at_cpu_rejected():
    p, cdf, task, threads = _kernel_parts()
    q = p.with_body([threads])
    ds = check_scopes(q)
    assert [(d.kind, d.line) for d in ds][0] == ("scope", marked_line(KERNEL.replace(
        "unit=cuda_thread):", "unit=cuda_thread):  # <-")))


def test_ir_cuda_tasks_not_perfect_nest_rejected():
    p, cdf, task, threads = _kernel_parts()
    inner = replace(task, iter="task2", body=(N.Pass(threads.srcinfo),))
    bad_threads = replace(threads, body=threads.body + (inner,))
    q = p.with_body([replace(cdf, body=(replace(task, body=(bad_threads,)),))])
    ds = check_scopes(q)
    assert ds and ds[0].kind == "scope" and ds[0].line == task.srcinfo.line
    assert "perfect nest" in ds[0].message


def test_ir_smem_alloc_at_cpu_and_fence_at_cpu_rejected():
    from exogpu_verify import CudaSmemLinear, cuda_in_order, f32
    p, cdf, task, threads = _kernel_parts()
    si = threads.srcinfo
    alloc = N.Alloc("s", N.TensorType(f32, (N.Const(4, None),)), CudaSmemLinear, si)
    fence = N.Fence(cuda_in_order, cuda_in_order, cdf.srcinfo)
    ds = check_scopes(p.with_body([alloc, fence, cdf]))
    assert [(d.kind, d.line) for d in ds] == [("scope", si.line), ("scope", cdf.srcinfo.line)]


def test_ir_cuda_instr_at_cpu_and_proc_in_cuda_rejected():
    p, cdf, task, threads = _kernel_parts()
    smem_src = """
def k(N: size, A: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            s: f32[32] @ CudaSmemLinear
            warp_op(s)
"""
    q = parse(smem_src)
    task2 = q.body[0].body[0]
    call = task2.body[1]
    ds = check_scopes(q.with_body(list(q.body) + [replace(call)]))
    assert ds and ds[0].kind == "scope" and "inside a CudaDeviceFunction" in ds[0].message
    inner = parse("""
def helper(N: size, A: f32[N] @ CudaGmemLinear):
    pass
""")
    pc = N.Call(inner, (N.Read("N", (), None), N.WindowExpr("A", (), None)), (), call.srcinfo)
    ds = check_scopes(q.with_body([replace(q.body[0], body=(replace(
        task2, body=task2.body + (pc,)),))]))
    assert ds and ds[0].kind == "scope" and "proc helper()" in ds[0].message
