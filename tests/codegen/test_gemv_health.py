"""The GEMV variants of ``specs/gemv.py`` pass the proof gate with ``proofs/`` and build for
sm_90a healthy: 0-byte stack, no spills, no ptxas warning, no local memory, and the SASS
reads ``A`` and ``x`` with 16-byte loads (``LDG.E.EF.128``: the evict-first ``.cs`` form for
``A``; ``LDG.E.128`` for ``x``) and reduces with ``SHFL.BFLY``. Needs nvcc, cuobjdump and
nvdisasm; in CI a missing tool fails instead of skipping."""

from __future__ import annotations

import os
import subprocess

import pytest
from codegen_cases import HAVE_NVCC, ROOT, load_module

from exogpu_codegen import compile
from exogpu_codegen.health import sass_tools

G = load_module("specs/gemv.py")
CONFIGS = {c.name: c for c in G.VARIANT_CONFIGS}


def _tools_or_skip():
    missing = "nvcc" if not HAVE_NVCC else ("cuobjdump/nvdisasm" if sass_tools() is None
                                            else None)
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing} missing in CI: the GEMV health checks cannot run")
        pytest.skip(f"{missing} not installed")


@pytest.fixture(scope="module")
def builds(cache_dir):
    _tools_or_skip()
    return {n: compile(p, proof_dir=str(ROOT / "proofs")) for n, p in G.VARIANTS.items()}


def _sass_ops(library) -> list[str]:
    cu, nd = sass_tools()
    env = {**os.environ, "PATH": nd + os.pathsep + os.environ.get("PATH", "")}
    out = subprocess.run([cu, "-sass", str(library)], capture_output=True, text=True,
                         env=env, check=True, timeout=300).stdout
    return [ln.split("*/", 1)[1].split(";")[0].strip() for ln in out.splitlines()
            if ln.strip().startswith("/*") and "*/" in ln]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(G.VARIANTS))
def test_gemv_builds_healthy_with_vector_loads(builds, name):
    k = builds[name]
    cfg = CONFIGS[name]
    assert k.generated.gate.checked                      # certificate in proofs/
    (r,) = k.resources
    assert (r.stack_bytes, r.spills, r.warnings) == (0, 0, ()), r
    assert k.health.ok and k.health.sass_checked, [i.message for i in k.health.issues]
    (s,) = k.health.sass.values()
    # one load of x and R of A per unrolled chunk in the main loop (ptxas may add copies
    # of the loop, never fewer)
    assert s.global_loads_128 >= cfg.unroll * (cfg.rows + 1), s
    ops = _sass_ops(k.build.library)
    assert sum("LDG.E.EF.128" in o for o in ops) >= cfg.unroll * cfg.rows
    assert not any("LDG" in o and "CONSTANT" in o for o in ops)   # never the .nc path
    assert sum(o.startswith("SHFL.BFLY") for o in ops) == 5 * cfg.rows
