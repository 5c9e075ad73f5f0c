"""A realistic warp-specialized Hopper GEMM (platform TMA + wgmma) passes the static
analyses, with the shardings codegen needs; the shipped examples behave as documented."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from exogpu_verify.loader import module_procs
from exogpu_verify.analysis import analyze, analyze_static
from exogpu_verify.ir import nodes as N

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gemm(prog_loader):
    return prog_loader("analysis/progs/hopper_gemm.py").gemm_tile


def test_hopper_gemm_accepted_with_expected_shardings(gemm):
    info = analyze(gemm)
    assert info.ok, "\n".join(str(d) for d in info.diagnostics)
    sh = {s.name: s for s in info.distributed.shardings}
    assert [(d.extent, d.thread_pitch) for d in sh["D"].dims] == [(2, 128), (4, 32), (32, 1)]
    assert sh["D"].dims[0].iterators == ("wg",)
    assert sh["D"].dims[1].iterators == ("D.0", "w")
    assert [(d.extent, d.thread_pitch) for d in sh["cg"].dims] == [(2, 128)]
    for name in ("sA", "sB", "raw", "war"):
        assert sh[name].n_distributed == 0


def test_hopper_gemm_roles_and_threads(gemm):
    ci = analyze(gemm).collectives
    tma = [s for s in ci.stmts if isinstance(s.stmt, N.Call) and "tma" in s.stmt.callee.name]
    assert tma and all(s.warp_role == "producer" for s in tma)
    assert set(tma[0].mapping.threads({})) == set(range(32))
    mma = [s for s in ci.stmts if isinstance(s.stmt, N.Call)
           and s.stmt.callee.name.startswith("wgmma_m64")]
    assert set(mma[0].mapping.threads({"wg": 1})) == set(range(256, 384))
    assert mma[0].warp_role == "consumer"


def test_hopper_gemm_wgmma_moved_to_warp_scope_rejected(gemm):
    def edit(s):
        if isinstance(s, N.For) and s.iter == "kk":
            return replace(s, body=(N.For("w9", N.Const(0, None), N.Const(1, None),
                                          N.CudaThreads(__import__("exogpu_verify").cuda_warp),
                                          s.body, s.srcinfo),))
        if isinstance(s, (N.For, N.With, N.If)):
            return replace(s, body=tuple(edit(c) for c in s.body))
        return s

    bad = gemm.with_body([edit(s) for s in gemm.body])
    ds = analyze_static(bad)
    assert ds and ds[0].kind == "collective" and "need cuda_warpgroup: 128 threads" in \
        ds[0].message


@pytest.mark.parametrize("path,ok", [
    ("examples/tmp_per_thread.py", True), ("examples/tmp_scalar_broadcast.py", False),
    ("examples/sync_bug_multicast.py", True), ("examples/sync_bug_wgmma_wait.py", True),
    ("examples/sync_bug_async_transitive.py", True),
])
def test_examples_static_verdicts(path, ok):
    import importlib.util

    f = ROOT / path
    if not f.exists():
        pytest.skip(f"{path} not present")
    spec = importlib.util.spec_from_file_location("exogpu_tests__ex__" + f.stem, f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    procs = module_procs(mod)
    assert procs
    for p in procs:
        ds = analyze_static(p)
        assert (not ds) == ok, (p.name, [str(d) for d in ds])
        if not ok:
            assert ds[0].kind == "distributed-memory"
