"""Reports that say what to fix (issue 15): a race between two ``cuda_tasks`` iterations
says that tasks cannot synchronize and the writes must be partitioned (a race inside one task
keeps the advice to add synchronization); an index out of bounds is kind ``bounds``, never
``sync``, in both checkers. (The proxy-fence and ``wgmma.fence`` hints, which name the
Fence to extend or the wgmma to fence, are tested with their rules:
tests/symbolic/test_rule_proxy.py and test_rule_wgmma.py.)"""

from __future__ import annotations

import pytest

from analysis_helpers import marked_line, parse

from exogpu_verify import verify

HEAD = """
def k(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N + 256] @ CudaGmemLinear,
      C: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
"""

CROSS_TASK = {
    # every task writes the same 256 elements
    "waw": """
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[t] = A[256 * task + t]  # <-
""",
    # each task reads what the next task writes
    "war": """
            for t in cuda_threads(0, 256, unit=cuda_thread):
                C[256 * task + t] = B[256 * task + t + 256]
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[256 * task + t] = A[256 * task + t]  # <-
""",
}

TASK_HINT = ("tasks cannot synchronize", "partition the writes so that each task writes its "
             "own part")


@pytest.mark.parametrize("case", sorted(CROSS_TASK))
@pytest.mark.parametrize("mode,sizes", [("auto", None), ("concrete", {"N": 512})])
def test_race_between_tasks_says_tasks_cannot_synchronize(case, mode, sizes):
    src = HEAD + CROSS_TASK[case]
    r = verify(parse(src), sizes=sizes, mode=mode)
    assert r.verdict == "refuted", r.summary()
    d = r.diagnostics[0]
    assert (d.kind, d.line) == ("sync", marked_line(src)), d
    assert all(s in d.hint for s in TASK_HINT), d.hint
    assert "task=0" in " ".join(d.notes) and "task=1" in " ".join(d.notes)


def test_race_inside_one_task_asks_for_synchronization_not_partitioning():
    src = HEAD + """
            tile: f32[256] @ CudaSmemLinear
            for t in cuda_threads(0, 256, unit=cuda_thread):
                tile[t] = A[256 * task + t]
            for t in cuda_threads(0, 256, unit=cuda_thread):
                C[256 * task + t] = tile[255 - t]  # <-
            Fence(cuda_in_order, cuda_in_order)
"""
    r = verify(parse(src))
    assert r.verdict == "refuted"
    d = r.diagnostics[0]
    assert (d.kind, d.line) == ("sync", marked_line(src))
    assert "tasks cannot synchronize" not in d.hint
    assert "add the missing Fence or Arrive/Await pair" in d.hint


@pytest.mark.parametrize("mode,sizes", [("auto", None), ("symbolic", None),
                                        ("concrete", {"N": 512})])
def test_out_of_bounds_in_a_kernel_is_bounds_not_sync(mode, sizes):
    src = HEAD + """
            for t in cuda_threads(0, 256, unit=cuda_thread):
                C[256 * task + t + 1] = A[256 * task + t]  # <-
"""
    r = verify(parse(src), sizes=sizes, mode=mode)
    assert r.verdict == "refuted", r.summary()
    assert [d.kind for d in r.diagnostics] == ["bounds"]
    assert r.diagnostics[0].line == marked_line(src)
    assert "out-of-bounds" in r.diagnostics[0].message
