"""exogpu_codegen: verified GPU IR -> CUDA C++ -> nvcc -> runtime.

``compile(p)`` runs the static analyses, the proof gate, generates one ``.cu`` file for the
proc (``generate``), builds it with nvcc into a cached shared library (``build``) and returns
a ``Kernel`` you call with sizes and arrays by name::

    from exogpu_codegen import compile
    k = compile(p)                    # refuses without a certificate unless unchecked=True
    k(N=4096, A=a_dev, B=b_dev)       # CuPy / DLPack / __cuda_array_interface__ / numpy arrays

Importing this package needs no GPU, no CuPy and no nvcc. See docs/codegen.md.
"""

from __future__ import annotations

from .build import BuildResult, KernelResources, build
from .errors import not_supported, usage
from .health import Health, check_health
from .gate import check_gate, program_hash
from .generate import ARCHS, Generated, generate
from .runtime import Kernel

__all__ = ["ARCHS", "BuildResult", "Generated", "Health", "Kernel", "KernelResources", "build",
           "check_gate", "check_health", "compile", "generate", "not_supported",
           "program_hash"]


def compile(p, *, arch: str = "sm_90a", unchecked: bool = False, cache: bool = True,
            proof_dir: str | None = None, out_dir=None,
            health: str = "error") -> Kernel:  # noqa: A001 - the API name
    """Generate, build (cached) and load ``p``; see the module docstring. ``health``: what
    an unhealthy build does (``health.py``: local memory, serialized wgmma): ``"error"``
    raises, ``"warn"`` keeps it (``k.health`` lists the issues), ``"off"`` skips the SASS.
    Raises ``ExoGpuError``: analysis errors, the proof gate's refusal, unsupported constructs,
    a missing nvcc, an unhealthy build (kind ``usage``)."""
    if health not in ("error", "warn", "off"):
        raise usage(f"health={health!r}: use 'error', 'warn' or 'off'")
    g = generate(p, arch=arch, unchecked=unchecked, proof_dir=proof_dir)
    b = build(g.source, p.name, arch, cache=cache, out_dir=out_dir,
              dynamic_smem={k.name: k.smem_bytes for k in g.kernels})
    h = check_health(b, use_sass=health != "off")
    if health == "error" and h.errors:
        lines = "; ".join(f"{i.kernel}: {i.message}" for i in h.errors)
        raise usage(f"the build of {p.name} is not healthy: {lines}",
                    hint="fix the kernel, or compile(..., health='warn') to keep it")
    k = Kernel(p, g, b)
    k.health = h
    return k
