"""Unit tests of the symbolic checker on small programs: verdicts, obligation counts, witness
sizes, and ``unknown`` (with a reason naming the construct) where the Presburger encoding
cannot express the program."""

from __future__ import annotations

import pytest

from exogpu_verify import verify
from exogpu_verify.amir import check_sync_concrete
from exogpu_verify.analysis import analyze_static
from exogpu_verify.symbolic import check_sync_symbolic
from symbolic_helpers import parse


def sym(src: str):
    p = parse(src)
    assert analyze_static(p) == [], [d.message for d in analyze_static(p)]
    return p, check_sync_symbolic(p)


def kinds(res) -> dict:
    out: dict = {}
    for ob in res.obligations:
        out[ob.kind] = out.get(ob.kind, 0) + 1
    return out


def line_of(src: str, snippet: str) -> int:
    hits = [i + 1 for i, ln in enumerate(src.splitlines()) if snippet in ln]
    assert len(hits) == 1, (snippet, hits)
    return hits[0]


# ------------------------------------------------------------------ per-thread copy
COPY = """
def copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[task * 256 + t] = A[task * 256 + t]
"""


def test_per_thread_copy_is_proven_with_three_obligations():
    p, res = sym(COPY)
    assert res.verdict == "proven", res.reason
    # bounds of the read and of the write, and the write against itself (WAW across
    # instances: disjoint elements, so the conflict set is already empty)
    assert kinds(res) == {"out of bounds": 2, "WAW": 1}
    assert all(ob.empty for ob in res.obligations)
    r = verify(p)
    assert r.verdict == "proven" and r.sizes is None
    assert r.reason.startswith("3 obligations discharged")


def test_copy_out_of_bounds_is_refuted_at_the_smallest_size():
    src = COPY.replace("B[task * 256 + t]", "B[task * 256 + t + 1]")
    p, res = sym(src)
    assert res.verdict == "refuted"
    assert res.failing.kind == "out of bounds"
    assert res.sizes == {"N": 256}
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"N": 256}
    assert "out-of-bounds" in r.diagnostics[0].message


# ------------------------------------------------------------------ CTA transpose
TRANSPOSE = """
def transpose(M: size, N: size, A: f32[M, N] @ CudaGmemLinear, B: f32[N, M] @ CudaGmemLinear):
    assert M % 32 == 0
    assert N % 32 == 0
    with CudaDeviceFunction(blockDim=256):
        for tm in cuda_tasks(0, M / 32):
            for tn in cuda_tasks(0, N / 32):
                tile: f32[32, 32] @ CudaSmemLinear
                for w in cuda_threads(0, 8, unit=cuda_warp):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        for i in seq(0, 4):
                            tile[4 * w + i, c] = A[32 * tm + 4 * w + i, 32 * tn + c]
                Fence(cuda_in_order, cuda_in_order)  # F1
                for w in cuda_threads(0, 8, unit=cuda_warp):
                    for c in cuda_threads(0, 32, unit=cuda_thread):
                        for i in seq(0, 4):
                            B[32 * tn + 4 * w + i, 32 * tm + c] = tile[c, 4 * w + i]
                Fence(cuda_in_order, cuda_in_order)  # F2
"""


def test_transpose_with_both_fences_is_proven():
    p, res = sym(TRANSPOSE)
    assert res.verdict == "proven", res.reason
    # 4 access bounds; tile: W->W, W->R (RAW), R->W (WAR), W->free, R->free; B: W->W
    assert kinds(res) == {"out of bounds": 4, "WAW": 2, "RAW": 1, "WAR": 1,
                          "free without sync": 2}
    raw = [ob for ob in res.obligations if ob.kind == "RAW"][0]
    # the RAW conflict is not empty: it is discharged by the fence
    assert any(label.startswith("fence at line") for label, _ in raw.ordered)
    for sizes in ({"M": 32, "N": 32}, {"M": 64, "N": 96}):
        assert check_sync_concrete(p, sizes)[0] == "checked"


def test_transpose_without_the_middle_fence_is_refuted_at_one_tile():
    src = TRANSPOSE.replace("Fence(cuda_in_order, cuda_in_order)  # F1", "pass")
    p, res = sym(src)
    assert res.verdict == "refuted"
    assert res.failing.kind == "RAW"
    assert res.sizes == {"M": 32, "N": 32}
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"M": 32, "N": 32}
    assert r.diagnostics[0].kind == "sync" and r.witness is not None
    assert check_sync_concrete(p, {"M": 32, "N": 32})[0] == "refuted"


def test_transpose_without_the_final_fence_races_with_the_free():
    src = TRANSPOSE.replace("Fence(cuda_in_order, cuda_in_order)  # F2", "pass")
    p, res = sym(src)
    assert res.verdict == "refuted"
    assert res.failing.kind == "free without sync"
    r = verify(p)
    assert r.verdict == "refuted" and "free without sync" in r.reason


# ------------------------------------------------------------------ WAW across tasks
TASKS = """
def tiles(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N / 64):
            for t in cuda_threads(0, 64, unit=cuda_thread):
                C[TILE * task + t] = A[64 * task + t]
"""


def test_disjoint_task_tiles_are_proven():
    p, res = sym(TASKS.replace("TILE", "64"))
    assert res.verdict == "proven"
    assert kinds(res) == {"out of bounds": 2, "WAW": 1}


def test_overlapping_task_tiles_are_a_waw_across_tasks_from_two_tasks_on():
    p, res = sym(TASKS.replace("TILE", "32"))
    assert res.verdict == "refuted"
    assert res.failing.kind == "WAW"
    assert res.sizes == {"N": 128}  # two tasks: the first size with a second task
    assert check_sync_concrete(p, {"N": 64})[0] == "checked"
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"N": 128}
    assert "write-after-write" in r.diagnostics[0].message


# ------------------------------------------------------------------ commit groups
COMMIT = """
def pipe(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[2, 64] @ CudaSmemLinear
            cg: barrier[64] @ Sm80_CommitGroup
            for k in seq(0, N / 64):
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    cp_async_ph(1, buf[k % 2, t:t + 1], A[64 * k + t:64 * k + t + 1])
                    Arrive(Sm80_cp_async) >> cg[t]
                    AWAIT
                    READ
            for t in cuda_threads(0, 64, unit=cuda_thread):
                Await(cg[t], cuda_in_order, 0)
            Fence(cuda_in_order, cuda_in_order)
"""


def commit(await_: str, read: str) -> str:
    return COMMIT.replace("AWAIT", await_).replace("READ", read)


def test_commit_group_depth_0_then_read_is_proven():
    p, res = sym(commit("Await(cg[t], cuda_in_order, 0)", "C[64 * k + t] = buf[k % 2, t]"))
    assert res.verdict == "proven", res.reason
    assert kinds(res)["await progress"] == 2
    raw = [ob for ob in res.obligations if ob.kind == "RAW" and ob.second.mode == "read"][0]
    assert any(label.startswith("pair at line") for label, _ in raw.ordered)


def test_commit_group_depth_1_leaves_the_current_group_in_flight():
    p, res = sym(commit("Await(cg[t], cuda_in_order, 1)", "C[64 * k + t] = buf[k % 2, t]"))
    assert res.verdict == "refuted"
    r = verify(p)
    assert r.verdict == "refuted"
    assert r.sizes == {"N": 64}  # one iteration already reads its own copy in flight
    assert "read-after-write" in r.diagnostics[0].message


def test_commit_group_depth_1_reading_the_previous_group_is_proven():
    # the software-pipelining idiom: wait until one group is pending, read the older one
    src = commit("if k >= 1:\n                        Await(cg[t], cuda_in_order, 1)\n"
                 "                        C[64 * (k - 1) + t] = buf[(k - 1) % 2, t]", "pass")
    p, res = sym(src)
    assert res.verdict == "proven", res.reason
    for n in (64, 128, 192, 320):
        assert check_sync_concrete(p, {"N": n})[0] == "checked"


def test_commit_group_depth_2_reading_the_previous_group_is_refuted():
    src = commit("if k >= 1:\n                        Await(cg[t], cuda_in_order, 2)\n"
                 "                        C[64 * (k - 1) + t] = buf[(k - 1) % 2, t]", "pass")
    p, res = sym(src)
    assert res.verdict == "refuted"
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"N": 128}
    assert check_sync_concrete(p, {"N": 64})[0] == "checked"


def test_unguarded_depth_1_await_is_not_refuted():
    """``Await(cg, ..., 1)`` with a single group committed returns at once (wait_group 1):
    not a progress error for the concrete machine, so the symbolic checker must not refute
    it (it may say ``unknown``)."""
    src = commit("Await(cg[t], cuda_in_order, 1)\n"
                 "                    if k >= 1:\n"
                 "                        C[64 * (k - 1) + t] = buf[(k - 1) % 2, t]", "pass")
    p, res = sym(src)
    for n in (64, 128, 192):
        assert check_sync_concrete(p, {"N": n})[0] == "checked"
    assert verify(p).verdict in ("proven", "unknown")


# ------------------------------------------------------------------ trailing barriers
TMA = """
def tma(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[64] @ CudaSmemLinear
            z: barrier[N / 64 @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, N / 64):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    tma_load_ph(64, buf[0:64], A[64 * k:64 * k + 64]) >> z[k]
                    ARRIVE
                AWAIT
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    C[64 * k + t] = buf[t]
                Fence(cuda_in_order, cuda_generic_and_async_proxy)
"""


def tma(arrive="Arrive(cuda_temporal) >> z[k]", await_="Await(z[k], cuda_in_order, 0)"):
    return TMA.replace("ARRIVE", arrive).replace("AWAIT", await_)


def test_trailing_barrier_load_with_arrive_is_proven():
    p, res = sym(tma())
    assert res.verdict == "proven", res.reason
    raw = [ob for ob in res.obligations if ob.kind == "RAW" and ob.name.startswith("RAW buf")][0]
    assert any(label.startswith("trailing at line") for label, _ in raw.ordered)
    for n in (64, 128, 192, 320):
        assert check_sync_concrete(p, {"N": n})[0] == "checked"


def test_trailing_barrier_load_without_arrive_is_a_barrier_usage_error():
    p = parse(tma(arrive="pass"))
    diags = analyze_static(p)
    assert [d.kind for d in diags] == ["barrier-usage"]
    assert "never arrived on" in diags[0].message
    r = verify(p)
    assert r.verdict == "refuted" and r.diagnostics[0].kind == "barrier-usage"
    res = check_sync_symbolic(p)
    assert res.verdict == "unknown" and "static" in res.reason


def test_trailing_barrier_awaited_only_once_is_refuted_from_the_second_load():
    src = tma(await_="if k == 0:\n                    Await(z[k], cuda_in_order, 0)")
    p, res = sym(src)
    assert res.verdict == "refuted"
    assert res.failing.kind == "RAW"
    assert res.sizes == {"N": 128}
    assert check_sync_concrete(p, {"N": 64})[0] == "checked"
    r = verify(p)
    assert r.verdict == "refuted" and r.sizes == {"N": 128}


def test_arrive_on_the_wrong_element_leaves_the_load_unordered():
    # the copy completes on z[k] but the thread arrives on z[k + 1]: the Await of z[k + 1]
    # waits for the wrong phase and z[k]'s copy is never waited for
    src = """
def tma(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[64] @ CudaSmemLinear
            z: barrier[(N / 64 + 1) @ ring_buffer_by(2)] @ CudaMbarrier
            for k in seq(0, N / 64):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    tma_load_ph(64, buf[0:64], A[64 * k:64 * k + 64]) >> z[k + 1]
                    Arrive(cuda_temporal) >> z[k]
                Await(z[k], cuda_in_order, 0)
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    C[64 * k + t] = buf[t]
                Fence(cuda_in_order, cuda_in_order)
"""
    p = parse(src)
    if analyze_static(p):
        pytest.skip("rejected by the static analyses")
    r = verify(p)
    assert r.verdict != "proven"
    assert check_sync_concrete(p, {"N": 64})[0] == "refuted"


# ------------------------------------------------------------------ unknown
def test_bool_parameter_in_an_if_is_unknown_naming_the_condition():
    src = """
def flagged(N: size, flag: bool, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N / 64):
            for t in cuda_threads(0, 64, unit=cuda_thread):
                if flag:
                    C[64 * task + t] = A[64 * task + t]
"""
    p, res = sym(src)
    assert res.verdict == "unknown"
    assert "condition" in res.reason or "bool" in res.reason, res.reason
    assert res.srcinfo is not None and res.srcinfo.line == line_of(src, "if flag:")
    r = verify(p)
    assert r.verdict == "unknown" and "symbolic check inconclusive" in r.reason
    # with sizes, auto mode falls back to the concrete check and says so
    r = verify(p, sizes={"N": 128, "flag": True}, mode="auto")
    assert r.verdict == "checked" and "inconclusive" in r.reason
    assert r.sizes == {"N": 128, "flag": True}


@pytest.mark.parametrize("index", ["A[t * task]", "A[(64 * task + t) % N]",
                                   "A[(64 * task + t) / N]"])
def test_non_affine_index_does_not_even_parse(index):
    from exogpu_verify import ExoGpuError

    src = f"""
def bad(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N / 64):
            for t in cuda_threads(0, 64, unit=cuda_thread):
                C[64 * task + t] = {index}
"""
    with pytest.raises(ExoGpuError) as ei:
        parse(src)
    assert "non-affine" in str(ei.value)


def test_data_dependent_guard_does_not_parse():
    from exogpu_verify import ExoGpuError

    src = """
def bad(N: size, A: f32[N] @ CudaGmemLinear, C: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N / 64):
            for t in cuda_threads(0, 64, unit=cuda_thread):
                if A[64 * task + t] > 0.0:
                    C[64 * task + t] = A[64 * task + t]
"""
    with pytest.raises(ExoGpuError) as ei:
        parse(src)
    assert "depend on data" in str(ei.value)
