"""Cases of the code-generation tests (imported by the tests and by conftest.py).

``CASES`` are the procs that must generate and build for sm_90a: every shipped spec, every
example whose instructions have code (the paper's placeholders have none, see
``UNSUPPORTED``), the warp-specialized Hopper GEMM of the analysis tests, and
``progs/codegen_progs.py``. ``built`` builds them all once per session, in parallel, into a
private cache folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from testlib import load_path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
HAVE_NVCC = shutil.which("nvcc") is not None
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")

CASES = [
    ("specs/vec_copy.py", "vec_copy"),
    ("specs/saxpy.py", "saxpy"),
    ("specs/transpose_smem.py", "transpose_smem"),
    ("specs/matmul_smem.py", "matmul_smem"),
    ("examples/vec_copy_seq.py", "vec_copy_seq"),
    ("examples/vec_copy_threads.py", "vec_copy_threads"),
    ("examples/tmp_per_thread.py", "tmp_per_thread"),
    ("examples/scheduling/matmul_schedule.py", "matmul_kernel"),
    ("tests/analysis/progs/hopper_gemm.py", "gemm_tile"),
    ("tests/codegen/progs/codegen_progs.py", "cluster_multicast"),
    ("tests/codegen/progs/codegen_progs.py", "cp_async_copy"),
    ("tests/codegen/progs/codegen_progs.py", "tma_store_scale"),
    ("tests/codegen/progs/codegen_progs.py", "mbar_pingpong"),
    ("tests/codegen/progs/codegen_progs.py", "warp_mma"),
    ("tests/codegen/progs/codegen_progs.py", "scale_host"),
]
SPECS = [c for c in CASES if c[0].startswith("specs/")]

#: (file, proc, diagnostic kind, a word of the message): procs the backend must refuse
UNSUPPORTED = [
    ("examples/sync_bug_wgmma_wait.py", "wgmma_wait_fixed", "usage", "example_wgmma"),
    ("examples/sync_bug_multicast.py", "multicast_fixed", "usage", "example_tma_multicast"),
    ("examples/sync_bug_async_transitive.py", "async_transitive_fixed", "usage",
     "example_tma_multicast"),
    ("examples/tmp_scalar_broadcast.py", "tmp_scalar_broadcast", "distributed-memory", "tmp"),
]


def load_module(rel: str):
    """Import ``rel`` (relative to the repository) once (``testlib.load_path``: thread-safe,
    ``Builds.all`` builds from several threads)."""
    return load_path(ROOT / rel, "exogpu_codegen_tests")


def get_proc(rel: str, name: str):
    mod = load_module(rel)
    if name == "matmul_kernel":  # the scheduled kernel is built by the example's schedule()
        return mod.schedule()[-1][1]
    return getattr(mod, name)


def case_id(case) -> str:
    return case[1]


