"""A 1024-thread warp-synchronous block scan: the kernel of issue 15's symbolic-speed goal
(~480 obligations; it took 49.5 s when the issue was filed, <= 10 s is the goal).

``block_scan`` computes, for each block of 1024 elements, the inclusive prefix sums ``y[1024 b
+ i] = x[1024 b] + ... + x[1024 b + i]`` (as the sequential program does them: each warp's
32 sums by the Hillis-Steele doubling steps, then the 32 warp totals the same way, then
each element plus the totals of the warps before it). One CTA of 32 warps per block:

* each warp scans its 32 elements in shared memory (``s[w, :]``) in 5 steps ``d = 1, 2, 4,
  8, 16``: lane ``l >= d`` copies ``s[w, l - d]`` into ``t[w, l]``, then adds it to ``s[w,
  l]``; warp-level Fences (``__syncwarp``) order each copy after the previous step's adds of
  other lanes and each add after the copies that read the old value (a write-after-read);
* lane 31 publishes the warp's total (``ws[w]``); a CTA Fence; warp 0 scans ``ws`` the same
  way; a CTA Fence; every thread adds the totals of the earlier warps and writes ``y``; a
  CTA Fence before the shared memory is freed (the next task reuses it).

Three of the warp Fences order nothing, and the checker says so by proving the kernel
without any one of them (``tests/symbolic/test_scan.py``): in the ``d = 16`` steps the lanes
that read (``l - 16 < 16``) and the lanes that write (``l >= 16``) touch disjoint elements,
and before lane 31 publishes ``ws[w]`` it reads only what it wrote itself. Deleting any
other Fence is refuted. The kernel keeps them as a programmer would write the loop unrolled.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"N": 2048}


@proc
def block_scan(N: size, x: f32[N] @ CudaGmemLinear, y: f32[N] @ CudaGmemLinear):
    assert N % 1024 == 0
    with CudaDeviceFunction(blockDim=1024):
        for b in cuda_tasks(0, N / 1024):
            s: f32[32, 32] @ CudaSmemLinear
            t: f32[32, 32] @ CudaSmemLinear
            ws: f32[32] @ CudaSmemLinear
            wt: f32[32] @ CudaSmemLinear
            for w in cuda_threads(0, 32, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    s[w, l] = x[1024 * b + 32 * w + l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 1:
                        t[w, l] = s[w, l - 1]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 1:
                        s[w, l] += t[w, l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 2:
                        t[w, l] = s[w, l - 2]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 2:
                        s[w, l] += t[w, l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 4:
                        t[w, l] = s[w, l - 4]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 4:
                        s[w, l] += t[w, l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 8:
                        t[w, l] = s[w, l - 8]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 8:
                        s[w, l] += t[w, l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 16:
                        t[w, l] = s[w, l - 16]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 16:
                        s[w, l] += t[w, l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l == 31:
                        ws[w] = s[w, 31]
            Fence(cuda_in_order, cuda_in_order)
            for w in cuda_threads(0, 1, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 1:
                        wt[l] = ws[l - 1]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 1:
                        ws[l] += wt[l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 2:
                        wt[l] = ws[l - 2]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 2:
                        ws[l] += wt[l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 4:
                        wt[l] = ws[l - 4]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 4:
                        ws[l] += wt[l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 8:
                        wt[l] = ws[l - 8]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 8:
                        ws[l] += wt[l]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 16:
                        wt[l] = ws[l - 16]
                Fence(cuda_in_order, cuda_in_order)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if l >= 16:
                        ws[l] += wt[l]
            Fence(cuda_in_order, cuda_in_order)
            for w in cuda_threads(0, 32, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    if w >= 1:
                        y[1024 * b + 32 * w + l] = s[w, l] + ws[w - 1]
                    else:
                        y[1024 * b + 32 * w + l] = s[w, l]
            Fence(cuda_in_order, cuda_in_order)
