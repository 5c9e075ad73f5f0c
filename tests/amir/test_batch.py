"""Batched access nests (``exogpu_verify/amir/batch.py``) on hand-written programs, one per
path of the batched machine: each must give the per-element machine's verdict and report
(kind, line, message), and batch what it claims to batch."""

from __future__ import annotations

import pytest

from exogpu_verify import *  # noqa: F403 (the instruction below)
from exogpu_verify.amir import check_sync_concrete, interp, replay
from exogpu_verify.amir.convert import lower_to_amir
from exogpu_verify.frontend import parse_proc_source

HEAD = '''
def prog(T: size, A: f32[T, 64] @ CudaGmemLinear, O: f32[T, 64] @ CudaGmemLinear,
         G: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, T):
            s: f32[64] @ CudaSmemLinear
            s2: f32[64, 4] @ CudaSmemLinear
'''


@instr(timeline=cuda_in_order_instr, unit=cuda_thread)  # noqa: F405
def copy4(dst: [f32][4] @ CudaDeviceVisibleLinear,  # noqa: F405
          src: [f32][4] @ CudaDeviceVisibleLinear):  # noqa: F405
    for i in seq(0, 4):  # noqa: F405
        dst[i] = src[i]


def _prog(body: str):
    src = HEAD + "\n".join("            " + ln for ln in body.strip("\n").splitlines()) + "\n"
    return parse_proc_source(src, {"copy4": copy4}, file="<batch>"), src


def _outcome(p, sizes, batch):
    saved = interp.BATCH_NESTS
    interp.BATCH_NESTS = batch
    try:
        v, diags, w, reason = check_sync_concrete(p, dict(sizes))
    finally:
        interp.BATCH_NESTS = saved
    return v, reason, [(d.kind, d.message, d.line, tuple(d.notes)) for d in diags], \
        None if w is None else (w.first, w.second)


def _check(body, verdict, kind=None, marker=None, sizes=None, batched=True):
    """Both machines agree; the verdict (and the diagnostic's kind and line) is as given."""
    sizes = sizes or {"T": 2}
    p, src = _prog(body)
    a, b = _outcome(p, sizes, True), _outcome(p, sizes, False)
    assert a == b
    assert a[0] == verdict, a
    if kind is not None:
        lines = src.splitlines()
        line = next(i + 1 for i, ln in enumerate(lines) if marker in ln)
        assert (a[2][0][0], a[2][0][2]) == (kind, line), (a, line)
    m = interp.Machine(lower_to_amir(p), dict(sizes))
    try:
        m.run()
    except (interp.Hazard, interp.CheckError):
        pass
    assert (m.batched_nests > 0) == batched
    return a


COPY = '''
for t in cuda_threads(0, 64, unit=cuda_thread):
    s[t] = A[task, t]
Fence(cuda_in_order, cuda_in_order)
for t in cuda_threads(0, 64, unit=cuda_thread):
    O[task, t] = s[63 - t]  # READ
Fence(cuda_in_order, cuda_in_order)
'''


def test_copy_through_smem_is_checked():
    _check(COPY, "checked")


def test_missing_fence_is_the_same_raw_report():
    body = COPY.replace("Fence(cuda_in_order, cuda_in_order)\nfor t", "for t", 1)
    a = _check(body, "refuted", "sync", "# READ")
    assert "read-after-write" in a[2][0][1]


def test_missing_final_fence_frees_a_batched_record():
    body = COPY.rsplit("Fence", 1)[0]
    a = _check(body, "refuted", "sync", "s: f32[64]")
    assert "free without synchronization" in a[2][0][1]


def test_out_of_bounds_in_a_nest():
    _check(COPY.replace("s[63 - t]", "s[64 - t]"), "refuted", "bounds", "# READ")


def test_collective_error_in_a_nest():
    body = "for w in cuda_threads(0, 3, unit=cuda_warp):\n    s[w] = 1.0  # COLL\n"
    _check(body, "refuted", "collective", "for w in", batched=False)


def test_race_between_tasks_in_a_replayed_nest(monkeypatch):
    calls = []
    real = replay.run_elementwise
    monkeypatch.setattr(replay, "run_elementwise",
                        lambda m, loop, only: calls.append(1) or real(m, loop, only))
    body = '''
for t in cuda_threads(0, 64, unit=cuda_thread):
    G[t] = A[task, t]  # SHARED
'''
    _check(body, "refuted", "sync", "# SHARED")
    assert calls  # the second task's batched replay declined: element by element


def test_warp_sync_splits_a_pending_batched_record():
    # all 64 threads write; a CTA Arrive catches the records; a warp-level Fence (which
    # treats the two warps' records differently: split) comes before the Await
    body = '''
mc: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
for t in cuda_threads(0, 64, unit=cuda_thread):
    s[t] = A[task, t]
Arrive(cuda_in_order) >> mc[0]
for w in cuda_threads(0, 2, unit=cuda_warp):
    Fence(cuda_in_order, cuda_in_order)
Await(mc[0], cuda_in_order, 0)
for t in cuda_threads(0, 64, unit=cuda_thread):
    O[task, t] = s[63 - t]  # READ
Fence(cuda_in_order, cuda_in_order)
'''
    _check(body, "checked")
    # without the CTA barrier the warp Fence orders only each warp's own elements
    racy = body.replace("Arrive(cuda_in_order) >> mc[0]\n", "").replace(
        "Await(mc[0], cuda_in_order, 0)\n", "")
    _check(racy, "refuted", "sync", "# READ")


def test_warp_to_warp_barrier_on_batched_records():
    body = '''
mw: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
with CudaWarps(0, 1):
    for t in cuda_threads(0, 32, unit=cuda_thread):
        s[t] = A[task, t]
    Arrive(cuda_in_order) >> mw[0]
with CudaWarps(1, 2):
    Await(mw[0], cuda_in_order, 0)
    for t in cuda_threads(0, 32, unit=cuda_thread):
        O[task, t] = s[31 - t]
Fence(cuda_in_order, cuda_in_order)
'''
    _check(body, "checked")


@pytest.mark.parametrize("cols,verdict", [("0", "checked"), ("0, 2", "checked")])
def test_batched_writes_split_earlier_box_records(cols, verdict):
    # per-element box records (the if keeps that nest element by element), then a batched
    # nest writes single elements of every box: one box left (bbox) or runs
    writes = "\n".join(f"    s2[t, {c}] = A[task, t]" for c in cols.split(", "))
    body = f'''
for t in cuda_threads(0, 64, unit=cuda_thread):
    if t < 64:
        copy4(s2[t, 0:4], A[task, 0:4])
Fence(cuda_in_order, cuda_in_order)
for t in cuda_threads(0, 64, unit=cuda_thread):
{writes}
Fence(cuda_in_order, cuda_in_order)
for t in cuda_threads(0, 64, unit=cuda_thread):
    O[task, t] = s2[63 - t, 1] + s2[63 - t, 0]  # READ
Fence(cuda_in_order, cuda_in_order)
'''
    _check(body, verdict)
    # the element left of the box was written by another thread: no Fence, a race on it
    racy = body.replace("Fence(cuda_in_order, cuda_in_order)\nfor t in cuda_threads(0, 64, "
                        "unit=cuda_thread):\n    O[", "for t in cuda_threads(0, 64, "
                        "unit=cuda_thread):\n    O[")
    _check(racy, "refuted", "sync", "# READ")


def test_warp_level_scalars_and_broadcast_reads():
    body = '''
for w in cuda_threads(0, 2, unit=cuda_warp):
    s[w] = A[task, w]
Fence(cuda_in_order, cuda_in_order)
for t in cuda_threads(0, 64, unit=cuda_thread):
    O[task, t] = s[t / 32] + s[0]
for t in cuda_threads(0, 64, unit=cuda_thread):
    s[t] = 2.0  # OVERWRITE
Fence(cuda_in_order, cuda_in_order)
'''
    a = _check(body, "refuted", "sync", "# OVERWRITE")
    assert "write-after-read" in a[2][0][1]
    _check(body.replace("    s[t] = 2.0  # OVERWRITE", "    s2[t, 0] = 2.0"), "checked")


def test_windows_in_a_batched_nest():
    body = '''
for t in cuda_threads(0, 64, unit=cuda_thread):
    for j in seq(0, 2):
        copy4(s2[t, 0:4], A[task, 4 * ((t + j) % 16):4 * ((t + j) % 16) + 4])
Fence(cuda_in_order, cuda_in_order)
for t in cuda_threads(0, 64, unit=cuda_thread):
    O[task, t] = s2[63 - t, 3]
Fence(cuda_in_order, cuda_in_order)
'''
    _check(body, "checked")


def test_steps_are_counted_alike():
    p, _ = _prog(COPY)
    m1 = interp.Machine(lower_to_amir(p), {"T": 3}, batch=True)
    m1.run()
    m2 = interp.Machine(lower_to_amir(p), {"T": 3}, batch=False)
    m2.run()
    assert m1.batched_nests and m1.steps == m2.steps


def test_pruned_replay_checks_bounds_for_every_outer_task():
    # the nest's only non-task-local accesses are reads of A (never mutated): replays drop
    # them once their bounds hold for every task of the loop, with the outer task iterator
    # at its current value (tm = 2 reads past the end of A)
    src = '''
def prog(A: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for tm in cuda_tasks(0, 3):
            for tn in cuda_tasks(0, 2):
                s: f32[64] @ CudaSmemLinear
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    s[t] = A[20 * tm + t % 32]  # READ
                Fence(cuda_in_order, cuda_in_order)
'''
    p = parse_proc_source(src, {}, file="<prune>")
    a, b = _outcome(p, {}, True), _outcome(p, {}, False)
    assert a == b and a[0] == "refuted"
    line = next(i + 1 for i, ln in enumerate(src.splitlines()) if "# READ" in ln)
    assert a[2][0][0] == "bounds" and a[2][0][2] == line and "out-of-bounds" in a[2][0][1]
    m = interp.Machine(lower_to_amir(p), {})
    with pytest.raises(interp.CheckError):
        m.run()
    assert m.batched_nests and m.replayed_tasks


@pytest.mark.parametrize("window, elements", [(1, 1), (2, 3), (100, 128)])
def test_pruning_a_window_and_a_chunk_at_a_time_changes_nothing(monkeypatch, window,
                                                                 elements):
    # prune covers at most PRUNE_WINDOW tasks and evaluates at most MAX_ELEMENTS values at
    # once (memory bounded by the work, not by the sizes): the same refutation, the same
    # steps on a program that passes
    src = """
def prog(A: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for tm in cuda_tasks(0, 3):
            for tn in cuda_tasks(0, 5):
                s: f32[64] @ CudaSmemLinear
                for t in cuda_threads(0, 64, unit=cuda_thread):
                    s[t] = A[{k} * tm + t % 32]
                Fence(cuda_in_order, cuda_in_order)
"""
    bad = parse_proc_source(src.format(k=20), {}, file="<prune>")
    good = parse_proc_source(src.format(k=10), {}, file="<prune>")
    before = [_outcome(p, {}, True) for p in (bad, good)]
    m0 = interp.Machine(lower_to_amir(good), {})
    m0.run()
    monkeypatch.setattr(replay, "PRUNE_WINDOW", window)
    monkeypatch.setattr(replay, "MAX_ELEMENTS", elements)
    assert [_outcome(p, {}, True) for p in (bad, good)] == before
    assert before[0][0] == "refuted" and before[1][0] == "checked"
    m = interp.Machine(lower_to_amir(good), {})
    m.run()
    assert m.replayed_tasks == m0.replayed_tasks > 0 and m.steps == m0.steps


def test_a_report_rerun_past_the_timeout_is_unknown(monkeypatch):
    body = COPY.replace("Fence(cuda_in_order, cuda_in_order)\nfor t", "for t", 1)
    p, _ = _prog(body)
    real = interp.Machine.run

    def run(self):
        if not self.batch:
            raise TimeoutError  # the element-by-element re-run for the report
        return real(self)

    monkeypatch.setattr(interp.Machine, "run", run)
    v, diags, w, reason = check_sync_concrete(p, {"T": 2})
    assert v == "unknown" and not diags and "found a hazard" in reason


CPU = '''
def cpu(N: size, K: size, C: f32[N, 4], A: f32[N, 8]):
    for i in seq(0, N):
        for j in seq(0, 4):
            C[i, j] = A[i, j + K]  # READ
'''


@pytest.mark.parametrize("k,verdict", [(4, "checked"), (5, "refuted")])
def test_cpu_nest_with_runtime_checks(k, verdict):
    # CPU-scope nests batch too; their bounds are AmChecks, evaluated over the whole nest
    # (a failing one runs the nest element by element, which reports the first instance)
    p = parse_proc_source(CPU, {}, file="<cpu>")
    sizes = {"N": 3, "K": k}
    a, b = _outcome(p, sizes, True), _outcome(p, sizes, False)
    assert a == b and a[0] == verdict, a
    m1 = interp.Machine(lower_to_amir(p), dict(sizes))
    m2 = interp.Machine(lower_to_amir(p), dict(sizes), batch=False)
    if verdict == "checked":
        m1.run()
        m2.run()
        assert m1.batched_nests and m1.steps == m2.steps
    else:
        line = next(i + 1 for i, ln in enumerate(CPU.splitlines()) if "# READ" in ln)
        assert a[2][0][0] == "bounds" and a[2][0][2] == line, a
        assert a[2][0][1].endswith("at i=0, j=3"), a  # the first failing instance
        with pytest.raises(interp.CheckError):
            m1.run()


def test_kernel_nest_with_size_dependent_index():
    body = '''
for t in cuda_threads(0, 64, unit=cuda_thread):
    O[task, t] = A[task, t + T - 2]  # READ
'''
    _check(body, "checked", sizes={"T": 2})
    _check(body, "refuted", "bounds", "# READ", sizes={"T": 3}, batched=False)


CPU_KERNEL = '''
def prog(N: size, A: f32[N, 64] @ CudaGmemLinear, O: f32[N, 64] @ CudaGmemLinear):
    for i in seq(0, N):
        for j in seq(0, 64):
            A[i, j] = 1.0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N):
            for t in cuda_threads(0, 64, unit=cuda_thread):
                O[task, t] = A[task, t]
AFTER
'''


@pytest.mark.parametrize("after,verdict", [
    ("", "checked"),
    ("    for i in seq(0, N):\n        for j in seq(0, 64):\n"
     "            A[i, j] = O[i, 63 - j]  # CPU", "refuted")])
def test_cpu_families_across_a_kernel(after, verdict):
    # CPU-scope families (every thread's) caught by the launch; the kernel's families read
    # back on the CPU without a stream synchronization are a hazard, as element by element
    src = CPU_KERNEL.replace("AFTER", after)
    p = parse_proc_source(src, {}, file="<cpu-kernel>")
    a, b = _outcome(p, {"N": 3}, True), _outcome(p, {"N": 3}, False)
    assert a == b and a[0] == verdict, a
    m = interp.Machine(lower_to_amir(p), {"N": 3})
    try:
        m.run()
    except interp.Hazard:
        assert verdict == "refuted"
    assert m.batched_nests >= 2
