"""A read record captured by an Arrive is not extended by a later read (the concrete
machine's coalescing of adjacent reads of one statement, ``Machine._coalesce``): an Arrive
enrolls the record in a barrier phase or commit group without changing its flags, so a
merged record would let the next reads complete with the earlier group. Found by deleting
the final ``Await(tcg, cuda_in_order, 0)`` of a shipped GEMM: its last TMA store's read of
``C_smem`` was merged into the store before it and completed with that store's group, so
the free of ``C_smem`` was accepted at every size."""

from __future__ import annotations

import pytest

from exogpu_verify import verify
from exogpu_verify.frontend import parse_proc_source

PROG = '''
@instr(timeline=tma_to_gmem_async_instr, unit=cuda_warp)
def store_like(dst: [f32][32] @ CudaGmemLinear, src: [f32][32] @ CudaSmemLinear):
    for i in seq(0, 32):
        dst[i] = src[i]

def k(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 64 == 0
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, N / 64):
            x: f32[2, 32] @ CudaSmemLinear
            cg: barrier @ Sm90_TmaCommitGroup
            for t in cuda_threads(0, 64, unit=cuda_thread):
                x[t / 32, t % 32] = A[task * 64 + t]
            Fence(cuda_in_order, cuda_generic_and_async_proxy)
            for w in cuda_threads(0, 1, unit=cuda_warp):
                for c in seq(0, 2):
                    store_like(B[task * 64 + c * 32:task * 64 + c * 32 + 32], x[c, 0:32])
                    Arrive(tma_to_gmem_async) >> cg
                    Await(cg, cuda_in_order, 1)
                FINAL
            Fence(cuda_in_order, cuda_in_order)
'''


def prog(final: str):
    head, _, tail = PROG.replace("FINAL", final).partition("\ndef k(")
    return parse_proc_source("def k(" + tail, {"store_like": parse_proc_source(head)})


@pytest.mark.parametrize("n", [64, 128])
def test_last_store_still_reading_at_the_free_is_a_hazard(n):
    r = verify(prog("pass"), mode="concrete", sizes={"N": n})
    assert r.verdict == "refuted", r.summary()
    d = r.diagnostics[0]
    assert "free without sync" in d.message and "x" in d.message, str(d)


def test_symbolic_does_not_prove_it():
    r = verify(prog("pass"), mode="symbolic")
    assert r.verdict in ("refuted", "unknown"), r.summary()
    assert r.verdict != "proven"


@pytest.mark.parametrize("mode", ["concrete", "symbolic"])
def test_waiting_for_every_store_is_accepted(mode):
    r = verify(prog("Await(cg, cuda_in_order, 0)"), mode=mode,
               **({"sizes": {"N": 128}} if mode == "concrete" else {}))
    assert r.verdict in ("checked", "proven"), r.summary()
