"""Helpers for the static-analysis tests (a plain module, imported by the test modules): parse small programs from text, run the analyses.

Programs mark the line a diagnostic must point at with a trailing ``# <-`` comment; the
helpers compute that line number, so tests assert the kind and the line without counting.
"""

from __future__ import annotations

import textwrap

from exogpu_verify.analysis import analyze_static
from exogpu_verify.frontend import parse_proc_source

INSTRS = {
    "warp_op": '''
@instr(cuda_in_order_instr, unit=cuda_warp)
def warp_op(x: [f32][32] @ CudaSmemLinear):
    for i in seq(0, 32):
        x[i] = 0.0
''',
    "wg_op": '''
@instr(wgmma_async_instr, unit=cuda_warpgroup)
def wg_op(x: [f32][128] @ CudaSmemLinear):
    for i in seq(0, 128):
        x[i] = x[i] + 1.0
''',
    "tma_load": '''
@instr(tma_to_smem_async_instr, unit=cuda_thread, barrier=CudaMbarrier)
def tma_load(dst: [f32][64] @ CudaSmemLinear, src: [f32][64] @ CudaGmemLinear):
    for i in seq(0, 64):
        dst[i] = src[i]
''',
    "cp_async": '''
@instr(Sm80_cp_async_instr, unit=cuda_thread)
def cp_async(dst: [f32][4] @ CudaSmemLinear, src: [f32][4] @ CudaGmemLinear):
    for i in seq(0, 4):
        dst[i] = src[i]
''',
    "tma_store": '''
@instr(tma_to_gmem_async_instr, unit=cuda_thread)
def tma_store(dst: [f32][64] @ CudaGmemLinear, src: [f32][64] @ CudaSmemLinear):
    for i in seq(0, 64):
        dst[i] = src[i]
''',
    "upload": '''
@instr(cpu_cuda_stream_instr)
def upload(n: size, dst: [f32][n] @ CudaGmemLinear, src: [f32][n] @ DRAM):
    for i in seq(0, n):
        dst[i] = src[i]
''',
    "host_touch": '''
@instr(cpu_in_order_instr)
def host_touch(n: size, x: [f32][n] @ CudaGmemLinear):
    for i in seq(0, n):
        x[i] = 0.0
''',
    "wg_acc": '''
@instr(cuda_in_order_instr, unit=cuda_warpgroup, distributed={"D": (cuda_thread,)})
def wg_acc(D: [f32][128, 8] @ CudaRmem):
    for t in seq(0, 128):
        for j in seq(0, 8):
            D[t, j] = 0.0
''',
    "warp_reg": '''
@instr(cuda_in_order_instr, unit=cuda_warp)
def warp_reg(x: [f32][32] @ CudaRmem):
    for i in seq(0, 32):
        x[i] = 0.0
''',
    "cta_op": '''
@instr(cuda_in_order_instr, unit=cuda_cta_in_cluster)
def cta_op(x: [f32][64] @ CudaSmemLinear):
    for i in seq(0, 64):
        x[i] = 0.0
''',
}


def instr_env() -> dict:
    return {name: parse_proc_source(src) for name, src in INSTRS.items()}


ENV = instr_env()


def parse(src: str, **env):
    """Parse a program (line numbers relative to the dedented text)."""
    return parse_proc_source(textwrap.dedent(src).strip("\n"), {**ENV, **env})


def marked_line(src: str, mark: str = "# <-") -> int:
    lines = textwrap.dedent(src).strip("\n").splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if ln.rstrip().endswith(mark)]
    assert len(hits) == 1, f"expected exactly one line marked {mark!r}"
    return hits[0]


def diags(src: str, **env):
    return analyze_static(parse(src, **env))


def assert_ok(src: str, **env):
    ds = diags(src, **env)
    assert ds == [], "\n".join(str(d) for d in ds)


def assert_error(src: str, kind: str, contains: str | None = None, **env):
    """Exactly the first diagnostic has ``kind`` at the marked line; returns it."""
    ds = diags(src, **env)
    assert ds, "expected a diagnostic, got none"
    d = ds[0]
    assert (d.kind, d.line) == (kind, marked_line(src)), "\n".join(str(x) for x in ds)
    if contains is not None:
        assert contains in d.message, d.message
    return d

