"""One-shot mbarriers work as a single phase in the static analyses and both checkers: a
correct hand-off is proven (and checked), a second phase on the same barrier and a read
before the Await are refuted at the right line; PreArrive without a ring stays an error."""

from __future__ import annotations

import pytest

from exogpu_verify import parse_proc_source, verify


@pytest.fixture(scope="module")
def progs(prog_loader):
    return prog_loader("analysis/progs/oneshot_progs.py")


def line_of(progs, text: str) -> int:
    src = open(progs.__file__).read().splitlines()
    return next(i for i, ln in enumerate(src, 1) if ln.rstrip().endswith(text))


def test_single_phase_handoff_is_proven_and_checked(progs):
    assert verify(progs.oneshot).verdict == "proven"
    assert verify(progs.oneshot, sizes={"N": 3}).verdict == "checked"


@pytest.mark.parametrize("mode", ["auto", "concrete"])
def test_second_phase_on_a_one_shot_barrier_is_refuted(progs, mode):
    r = verify(progs.oneshot_twice, sizes={"N": 1, "K": 2}, mode=mode)
    assert r.verdict == "refuted"
    d = r.diagnostics[0]
    assert d.kind == "barrier-usage" and "second Arrive" in d.message
    assert d.line == line_of(progs, "# SECOND PHASE")


@pytest.mark.parametrize("mode", ["auto", "concrete"])
def test_read_before_the_await_is_a_race(progs, mode):
    r = verify(progs.oneshot_no_wait, sizes={"N": 1}, mode=mode)
    assert r.verdict == "refuted"
    d = r.diagnostics[0]
    assert d.kind == "sync" and d.line == line_of(progs, "# EARLY READ")


def test_pre_arrive_needs_a_ring():
    p = parse_proc_source("""
def p(N: size, A: f32[N, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            z: barrier @ CudaMbarrierPreArrive(1)
            for t in cuda_threads(0, 32, unit=cuda_thread):
                A[task, t] = 0.0
            Arrive(cuda_in_order, 1) >> z
            Await(z, cuda_in_order, 0)
""", file="p.py")
    r = verify(p)
    assert r.verdict == "refuted"
    d = r.diagnostics[0]
    assert d.kind == "barrier-usage" and d.line == 5 and "ring buffer dimension" in d.message
