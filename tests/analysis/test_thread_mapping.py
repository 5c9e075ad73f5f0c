"""Thread mappings against brute force: enumerate every thread of the cluster, compute from
first principles which iteration it runs, and compare with the analysis' Python mapping,
its islpy map and the per-iterator inverse formulas codegen uses."""

from __future__ import annotations

import islpy as isl
import pytest

from analysis_helpers import parse

from exogpu_verify.analysis import analyze_collectives


def _leaf(p, line_text: str):
    ci = analyze_collectives(p)
    assert ci.diagnostics == ()
    lines = [i + 1 for i, ln in enumerate(str(p).splitlines()) if line_text in ln]
    # the printed program starts with "@proc": parsed text line = printed line - 1
    infos = [s for s in ci.stmts if s.line == lines[0] - 1]
    assert infos, line_text
    return infos[0].mapping


def _isl_points(m, params: dict) -> dict:
    """{(loop values...): {tid, ...}} enumerated from the islpy map."""
    mp = m.to_isl()
    for k, v in params.items():
        i = mp.get_space().find_dim_by_name(isl.dim_type.param, k)
        mp = mp.fix_val(isl.dim_type.param, i, v)
    out: dict = {}
    n_in = mp.dim(isl.dim_type.in_)

    def add(pt):
        vals = [pt.get_coordinate_val(isl.dim_type.set, j).to_python()
                for j in range(n_in + 1)]
        out.setdefault(tuple(vals[:n_in]), set()).add(vals[n_in])

    mp.wrap().foreach_point(add)
    return out


def _check(p, marker, block, cluster, brute, thread_vars, N=512, tasks=("t",)):
    m = _leaf(p, marker)
    assert m.loop_vars == tasks + thread_vars
    expect: dict = {}
    for tid in range(block * cluster):
        it = brute(tid)
        if it is not None:
            expect.setdefault(it, set()).add(tid)
    # Python mapping: every environment, including ones no thread runs
    counts = [t.count for t in m.thread_iters]
    import itertools
    for vals in itertools.product(*(range(c) for c in counts)):
        env = dict(zip(thread_vars, vals))
        assert set(m.threads(env)) == expect.get(vals, set()), env
    # inverse formulas: each thread recovers its iteration from tid
    for it, tids in expect.items():
        env = dict(zip(thread_vars, it))
        for tid in tids:
            got = tuple(t.value(tid, env) for t in m.thread_iters)
            assert got == it, (tid, got, it)
    # islpy: same relation, task iterators as inputs that do not change tid
    pts = _isl_points(m, {"N": N})
    n_tasks = N // 256
    want = {(tk,) + it: tids for tk in range(n_tasks) for it, tids in expect.items()}
    assert pts == want


NEST = """
def k(N: size, A: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim={B}, clusterDim={C}):
        for t in cuda_tasks(0, N / 256):
            for wg in cuda_threads(0, 2, unit=2 * cuda_warpgroup):
                for w in cuda_threads(0, 8, unit=cuda_warp):
                    for i in cuda_threads(0, 32, unit=cuda_thread):
                        A[t * 256 + i] = 0.0
"""


@pytest.mark.parametrize("B,C", [(512, 1), (256, 2)])
def test_nest_threads_match_brute_force(B, C):
    p = parse(NEST.format(B=B, C=C))

    def brute(tid):  # 2*cuda_warpgroup = aligned 256 threads; warps; lanes
        return (tid // 256, (tid % 256) // 32, tid % 32)

    _check(p, "A[t * 256 + i]", B, C, brute, ("wg", "w", "i"))


def test_nest_with_spare_threads_brute_force():
    # 768 threads: 3 aligned groups of 256, only 2 used; 8 of 8 warps; 16 of 32 lanes
    p = parse(NEST.format(B=768, C=1).replace("cuda_threads(0, 32", "cuda_threads(0, 16"))

    def brute(tid):
        if tid // 256 >= 2 or tid % 32 >= 16:
            return None
        return (tid // 256, (tid % 256) // 32, tid % 32)

    _check(p, "A[t * 256 + i]", 768, 1, brute, ("wg", "w", "i"))


WS = """
def k(N: size, A: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(clusterDim={C}, warp_config=[CudaWarpConfig("producer", 4, setmaxnreg_dec=40), CudaWarpConfig("consumer", 8, setmaxnreg_inc=232)]):
        for t in cuda_tasks(0, N / 256):
            for cta in cuda_threads(0, {C}, unit=cuda_cta_in_cluster):
                with CudaWarps(name="consumer"):
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        for w in cuda_threads(0, 4, unit=cuda_warp):
                            for i in cuda_threads(0, 32, unit=cuda_thread):
                                A[t * 256 + i] = 0.0
                with CudaWarps(0, 1, name="producer"):
                    for i2 in cuda_threads(0, 1, unit=cuda_thread):
                        A[t] = 1.0
"""


@pytest.mark.parametrize("C", [1, 2])
def test_warp_specialized_consumer_matches_brute_force(C):
    p = parse(WS.format(C=C))
    B = 384

    def brute(tid):
        cta, local = divmod(tid, B)
        warp = local // 32
        if not 4 <= warp < 12:
            return None
        return (cta, (warp - 4) // 4, (warp - 4) % 4, tid % 32)

    _check(p, "A[t * 256 + i]", B, C, brute, ("cta", "wg", "w", "i"))


@pytest.mark.parametrize("C", [1, 2])
def test_warp_specialized_producer_matches_brute_force(C):
    p = parse(WS.format(C=C))

    def brute(tid):
        cta, local = divmod(tid, 384)
        return (cta, 0) if local == 0 else None

    _check(p, "A[t] = 1.0", 384, C, brute, ("cta", "i2"))


def test_warp_role_and_warp_range_recorded():
    p = parse(WS.format(C=2))
    ci = analyze_collectives(p)
    role = {s.line: s.warp_role for s in ci.stmts}
    assert (role[10], role[11], role[12], role[13]) == ("consumer", None, "producer",
                                                        "producer")
    ws = [s for s in ci.stmts if s.warps is not None]
    assert [(w.warps.name, str(w.warps.first), w.warps.count) for w in ws] == [
        ("consumer", "4", 8), ("producer", "0", 1)]


def test_iterator_formula_data_for_codegen():
    p = parse(NEST.format(B=512, C=1))
    m = _leaf(p, "A[t * 256 + i]")
    wg, w, i = m.thread_iters
    assert (wg.pitch, wg.modulus, wg.count, wg.tile_threads) == (256, 2, 2, 256)
    assert (w.pitch, w.modulus, w.count, w.tile_threads) == (32, 16, 8, 32)
    assert str(w.offset) == "256 * wg"
    assert (i.pitch, i.count, i.tile_threads) == (1, 32, 1)
    assert m.num_threads == 1
