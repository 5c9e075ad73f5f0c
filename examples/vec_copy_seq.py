"""Vector copy, sequential: the meaning that every parallel schedule must keep.

Paper Section 2 (and the commentary's first listing): a plain ``seq`` loop at CPU scope on
host (``DRAM``) arrays. There is no parallelism and no synchronization, so the checker is
expected to accept it trivially (verdict ``proven``). ``vec_copy_threads.py`` is the same
program with its iterations assigned to CUDA threads.
"""

from __future__ import annotations

from exogpu_verify import *

VERIFY_SIZES = {"N": 1024}


@proc
def vec_copy_seq(N: size, A: f32[N] @ DRAM, B: f32[N] @ DRAM):
    for i in seq(0, N):
        B[i] = A[i]
