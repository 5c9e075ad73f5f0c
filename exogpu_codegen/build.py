"""Build a generated translation unit with nvcc into a shared library, cached.

The cache key is the sha256 of the source, the nvcc command line (flags), the architecture
and ``nvcc --version``; entries live under ``platformdirs.user_cache_dir("exogpu")`` (or
``$EXOGPU_CACHE_DIR``), one folder per key, written atomically (build in a temporary folder,
then ``os.replace``) under a ``filelock`` so concurrent builds of the same source build once.
``EXOGPU_NO_CACHE=1`` or ``cache=False`` bypasses the cache. ptxas resource usage
(``-Xptxas -v``: registers, spills, shared memory per kernel) is parsed into
``BuildResult.resources``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import usage
from .mangle import demangle

GENCODE = {"sm_90a": "arch=compute_90a,code=sm_90a", "sm_80": "arch=compute_80,code=sm_80"}
BASE_FLAGS = ("-std=c++17", "-O3", "-lineinfo", "-Xcompiler", "-fPIC", "-shared",
              "-Xptxas", "-v", "-diag-suppress", "177")


@dataclass(frozen=True)
class KernelResources:
    """ptxas' report for one kernel."""

    kernel: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    static_smem_bytes: int
    #: ptxas performance warnings for this kernel (``(C7514) Potential Performance Loss: ...``)
    warnings: tuple[str, ...] = ()

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads

    def summary(self) -> str:
        """``168 regs, 0 B stack, 0 B spilled`` plus ptxas warning codes."""
        s = f"{self.registers} regs, {self.stack_bytes} B stack, {self.spills} B spilled"
        codes = [w.split(")")[0].lstrip("(") for w in self.warnings]
        return s + (f", ptxas {', '.join(codes)}" if codes else "")

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "registers": self.registers,
                "spill_stores": self.spill_stores, "spill_loads": self.spill_loads,
                "stack_bytes": self.stack_bytes, "static_smem_bytes": self.static_smem_bytes,
                "warnings": list(self.warnings)}


@dataclass(frozen=True)
class BuildResult:
    library: Path
    source: Path
    arch: str
    key: str
    cached: bool
    seconds: float
    resources: tuple[KernelResources, ...] = ()
    dynamic_smem: dict = field(default_factory=dict)  # kernel name -> bytes
    log: str = ""

    @property
    def spills(self) -> int:
        return sum(r.spills for r in self.resources)


def find_nvcc() -> str:
    env = os.environ.get("EXOGPU_NVCC")
    if env:  # the user's explicit choice: a bad one is named, not replaced by another nvcc
        nv = shutil.which(env)
        if nv is None:
            why = "is a folder" if Path(env).is_dir() else \
                "is not executable" if Path(env).exists() else "does not exist"
            raise usage(f"EXOGPU_NVCC={env} {why}: point it at the nvcc executable (e.g. "
                        "/usr/local/cuda/bin/nvcc), or unset it to use the nvcc on PATH",
                        hint="`exogpu-codegen --no-build` emits sources without nvcc")
        return nv
    nv = shutil.which("nvcc")
    if not nv:
        cuda = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc"
        nv = str(cuda) if cuda.exists() else None
    if not nv:
        raise usage("nvcc was not found: install the CUDA toolkit (12.4 or newer) and put nvcc "
                    "on PATH, or set EXOGPU_NVCC / CUDA_HOME",
                    hint="`exogpu-codegen --no-build` emits sources without nvcc")
    return nv


@lru_cache(maxsize=8)
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise usage(f"cannot run {nvcc}: {e}",
                    hint="install the CUDA toolkit (12.4 or newer), or set EXOGPU_NVCC to its "
                         "nvcc") from None
    if out.returncode != 0 or "nvcc" not in out.stdout + out.stderr:
        said = " ".join((out.stdout + out.stderr).split())[:200] or "no output"
        raise usage(f"{nvcc} does not work as nvcc: `{nvcc} --version` exited with status "
                    f"{out.returncode} ({said})",
                    hint="install the CUDA toolkit (12.4 or newer), or set EXOGPU_NVCC to its "
                         "nvcc")
    return out.stdout.strip()


def cache_root() -> Path:
    env = os.environ.get("EXOGPU_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("exogpu")) / "kernels"


def nvcc_command(nvcc: str, arch: str, src: Path, out: Path) -> list[str]:
    if arch not in GENCODE:
        raise usage(f"unknown architecture {arch!r} (one of {', '.join(GENCODE)})")
    return [nvcc, "-gencode", GENCODE[arch], *BASE_FLAGS, "-o", str(out), str(src)]


def cache_key(source: str, arch: str, nvcc: str) -> str:
    h = hashlib.sha256()
    for part in (source, arch, " ".join(nvcc_command("nvcc", arch, Path("x.cu"),
                                                     Path("x.so"))[1:]),
                 nvcc_version(nvcc)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PERF = re.compile(r"\((C\d+)\) Potential Performance Loss: (.*?)(?: in the function '([^']+)')?\s*$")
_WARN = re.compile(r"ptxas warning\s*:\s*(.*)$")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas(log: str) -> tuple[KernelResources, ...]:
    """Per-kernel resources from ``-Xptxas -v`` output, with the performance warnings ptxas
    attributes to each kernel (a warning naming no function goes to every kernel)."""
    warns: dict = {}
    for line in log.splitlines():
        m = _PERF.search(line)
        if m:
            code, what, fn = m.groups()
            warns.setdefault(demangle(fn) if fn else None, []).append(
                f"({code}) {' '.join(what.split())}")
            continue
        m = _WARN.search(line)
        if m and "Potential Performance Loss" not in line:
            warns.setdefault(None, []).append(" ".join(m.group(1).split()))
    out, cur, props = [], None, (0, 0, 0)
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            cur, props = m.group(1), (0, 0, 0)
            continue
        m = _PROPS.search(line)
        if m and cur is not None:
            props = tuple(int(x) for x in m.groups())
            continue
        m = _USED.search(line)
        if m and cur is not None:
            k = demangle(cur)
            out.append(KernelResources(k, int(m.group(1)), props[1], props[2], props[0],
                                       int(m.group(2) or 0),
                                       tuple(warns.get(k, []) + warns.get(None, []))))
            cur = None
    return tuple(out)


def build(source: str, name: str, arch: str = "sm_90a", cache: bool = True,
          out_dir: str | os.PathLike | None = None, dynamic_smem: dict | None = None
          ) -> BuildResult:
    """Compile ``source`` to a shared library (see the module docstring)."""
    import time

    nvcc = find_nvcc()
    key = cache_key(source, arch, nvcc)
    if os.environ.get("EXOGPU_NO_CACHE") == "1":
        cache = False
    t0 = time.perf_counter()
    if not cache or out_dir is not None:
        d = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="exogpu-"))
        d.mkdir(parents=True, exist_ok=True)
        res = _compile(nvcc, source, name, arch, d, key)
        return _result(res, d, name, arch, key, False, time.perf_counter() - t0, dynamic_smem)
    from filelock import FileLock

    root = cache_root()
    entry = root / key[:2] / key
    entry.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(entry) + ".lock"):
        meta = entry / "build.json"
        if meta.exists() and (entry / f"{name}.so").exists():
            info = json.loads(meta.read_text())
            return _result(info["log"], entry, name, arch, key, True,
                           time.perf_counter() - t0, dynamic_smem)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=entry.parent))
        try:
            log = _compile(nvcc, source, name, arch, tmp, key)
            (tmp / "build.json").write_text(json.dumps({"log": log, "arch": arch, "key": key}))
            if entry.exists():
                shutil.rmtree(entry)
            os.replace(tmp, entry)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return _result(log, entry, name, arch, key, False, time.perf_counter() - t0, dynamic_smem)


def _compile(nvcc: str, source: str, name: str, arch: str, d: Path, key: str) -> str:
    src = d / f"{name}.cu"
    src.write_text(source)
    lib = d / f"{name}.so"
    cmd = nvcc_command(nvcc, arch, src, lib)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise usage(f"nvcc took more than 10 minutes on {src}") from None
    log = r.stdout + r.stderr
    if r.returncode != 0:
        raise usage(f"nvcc failed on the generated {src} (this is a bug in exogpu-codegen or in "
                    f"an instruction's codegen template):\n{log[-4000:]}")
    return log


def _result(log, d: Path, name, arch, key, cached, secs, dyn) -> BuildResult:
    return BuildResult(d / f"{name}.so", d / f"{name}.cu", arch, key, cached, secs,
                       parse_ptxas(log), dict(dyn or {}), log)
