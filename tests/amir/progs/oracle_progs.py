"""Hand-written programs for ``tests/amir/test_oracle.py``.

* ``two_arrive_statements``: two warps arrive on one mbarrier element with *separate*
  Arrive statements, then the CTA awaits it and reads the other warp's writes. The abstract
  machine counts Arrive instances per virtual index (the Await waits for both), but the
  code generator initializes the mbarrier with the threads of *one* statement (32), so on
  the hardware the first warp's arrivals complete the phase: the Await may pass before the
  other warp wrote (a race), and the second warp's arrivals complete a second phase, so a
  late parity wait hangs. The oracle's hardware mbarrier model shows both.
* ``mixed_precision``: per-thread arithmetic over bf16, f16, i32 and f32 with builtins, to
  check that the oracle's statement evaluation agrees bitwise with ``interpret``.
* ``never_arrived``: an Await whose Arrive was left out (the oracle reports a deadlock).
"""

from __future__ import annotations

from exogpu_verify import *  # noqa: F403


@proc
def two_arrive_statements(T: size, A: f32[T, 64] @ CudaGmemLinear,
                          O: f32[T, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, T):
            s0: f32[64] @ CudaSmemLinear
            mc: barrier[1 @ ring_buffer_by(1)] @ CudaMbarrier
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    s0[32 * w + l] = A[task, 32 * w + l]
            with CudaWarps(0, 1):
                Arrive(cuda_in_order) >> mc[0]
            with CudaWarps(1, 2):
                Arrive(cuda_in_order) >> mc[0]
            Await(mc[0], cuda_in_order, 0)
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    O[task, 32 * w + l] = s0[63 - 32 * w - l]
            Fence(cuda_in_order, cuda_in_order)


@proc
def mixed_precision(N: size, a: bf16[N] @ CudaGmemLinear, b: f16[N] @ CudaGmemLinear,
                    c: i32[N] @ CudaGmemLinear, out: f32[N] @ CudaGmemLinear,
                    hout: f16[N] @ CudaGmemLinear, iout: i32[N] @ CudaGmemLinear):
    assert N % 32 == 0
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N / 32):
            r: f32[32] @ CudaRmem
            for t in cuda_threads(0, 32, unit=cuda_thread):
                r[t] = a[32 * task + t] * a[32 * task + t] + b[32 * task + t]
                out[32 * task + t] = relu(r[t] - 0.5) + select(r[t], 1.0, sqrt(abs(r[t])),
                                                               exp(-r[t]))
                out[32 * task + t] += fmax(r[t], 0.25) / 3.0 + t
                hout[32 * task + t] = b[32 * task + t] + b[32 * task + t] * b[32 * task + t]
                iout[32 * task + t] = c[32 * task + t] / 7 - c[32 * task + t] * 3 + t


@proc
def never_arrived(T: size, A: f32[T, 64] @ CudaGmemLinear, O: f32[T, 64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, T):
            s0: f32[64] @ CudaSmemLinear
            mc: barrier[2 @ ring_buffer_by(2)] @ CudaMbarrier
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    s0[32 * w + l] = A[task, 32 * w + l]
            Arrive(cuda_in_order) >> mc[0]
            Await(mc[1], cuda_in_order, 0)
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    O[task, 32 * w + l] = s0[63 - 32 * w - l]
            Fence(cuda_in_order, cuda_in_order)
