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
from .errors import not_supported
from .gate import check_gate, program_hash
from .generate import ARCHS, Generated, generate
from .runtime import Kernel

__all__ = ["ARCHS", "BuildResult", "Generated", "Kernel", "KernelResources", "build",
           "check_gate", "compile", "generate", "not_supported", "program_hash"]


def compile(p, *, arch: str = "sm_90a", unchecked: bool = False, cache: bool = True,
            proof_dir: str | None = None, out_dir=None) -> Kernel:  # noqa: A001 - the API name
    """Generate, build (cached) and load ``p``; see the module docstring. Raises
    ``ExoGpuError``: analysis errors, the proof gate's refusal, unsupported constructs, a
    missing nvcc (kind ``usage``)."""
    g = generate(p, arch=arch, unchecked=unchecked, proof_dir=proof_dir)
    b = build(g.source, p.name, arch, cache=cache, out_dir=out_dir,
              dynamic_smem={k.name: k.smem_bytes for k in g.kernels})
    return Kernel(p, g, b)
