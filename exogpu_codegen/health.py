"""Codegen health: what ptxas and the SASS say about a built kernel, and the rules it must meet.

A kernel is *healthy* when ptxas reports a stack frame of 0 bytes, no spills and no
performance warning (``(C7514) Potential Performance Loss: wgmma.mma_async instructions are
serialized ...`` and its siblings), and its SASS has no local-memory access (``LDL``/``STL``)
and, if it issues wgmma, HGMMAs issued back to back (only the last HGMMA of a commit group
waits on the scoreboard, ``gsb0``) with a ``WARPGROUP.DEPBAR.LE gsb0, N`` with ``N > 0`` where
the program waits for all but the newest groups. Local memory and serialized wgmma are
*errors*: ``exogpu-codegen`` fails the build on them unless ``--allow-unhealthy`` is given.

The SASS comes from ``cuobjdump -sass`` (PyPI ``nvidia-cuda-cuobjdump``), which needs
``nvdisasm`` (PyPI ``nvidia-cuda-nvdisasm``); both are found on PATH or in the ``nvidia``
Python namespace packages. Without them the SASS rules are not checked, and the report says so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .mangle import demangle


@dataclass(frozen=True)
class SassKernel:
    """Facts from one kernel's SASS, in program (address) order."""

    kernel: str
    hgmma: tuple[str, ...] = ()           # shapes, e.g. "HGMMA.64x256x16.F32.BF16"
    hgmma_runs: tuple[int, ...] = ()      # HGMMAs per scoreboard wait (gsb0), in order
    depbar_gsb0: tuple[int, ...] = ()     # N of each WARPGROUP.DEPBAR.LE gsb0, N
    local_loads: int = 0                  # LDL
    local_stores: int = 0                 # STL
    named_barriers: tuple[int, ...] = ()  # ids of BAR.SYNC / BAR.ARV (0 = CTA barrier)
    membar_gpu: int = 0                   # MEMBAR.ALL.GPU (what a plain fence.proxy.async is)
    instructions: int = 0
    global_loads_128: int = 0             # LDG.*.128 (16-byte vector loads)

    @property
    def max_hgmma_run(self) -> int:
        return max(self.hgmma_runs, default=0)

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "hgmma": sorted(set(self.hgmma)),
                "max_hgmma_run": self.max_hgmma_run, "depbar_gsb0": sorted(set(self.depbar_gsb0)),
                "local_loads": self.local_loads, "local_stores": self.local_stores,
                "named_barriers": sorted(set(self.named_barriers)),
                "membar_gpu": self.membar_gpu, "instructions": self.instructions,
                "global_loads_128": self.global_loads_128}


@dataclass(frozen=True)
class HealthIssue:
    kernel: str
    kind: str       # stack | spill | ptxas | local-memory | wgmma-serialized | wgmma-wait
    message: str
    error: bool     # fails the build unless allowed


@dataclass(frozen=True)
class Health:
    issues: tuple[HealthIssue, ...] = ()
    sass: dict = field(default_factory=dict)   # kernel -> SassKernel
    sass_checked: bool = False
    note: str = ""

    @property
    def errors(self) -> tuple[HealthIssue, ...]:
        return tuple(i for i in self.issues if i.error)

    @property
    def ok(self) -> bool:
        return not self.issues


# ---------------------------------------------------------------- tools

def _namespace_bins() -> list[Path]:
    try:
        import nvidia  # namespace package of the NVIDIA PyPI wheels
    except ImportError:
        return []
    out = []
    for root in getattr(nvidia, "__path__", []):
        out += sorted(Path(root).glob("cu*/bin"))
        out += sorted(Path(root).glob("cuda_*/bin"))
    return out


@lru_cache(maxsize=1)
def sass_tools() -> tuple[str, str] | None:
    """(cuobjdump, folder holding nvdisasm), or None if either is missing."""
    dirs = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    dirs += _namespace_bins()
    cuda = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin"
    dirs.append(cuda)

    def find(name):
        hit = shutil.which(name)
        if hit:
            return Path(hit)
        for d in dirs:
            if (d / name).exists():
                return d / name
        return None

    cu, nd = find("cuobjdump"), find("nvdisasm")
    if cu is None or nd is None:
        return None
    return str(cu), str(nd.parent)


_FUNC = re.compile(r"^\s*Function : (\S+)")
_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_HGMMA = re.compile(r"\b(HGMMA\.[0-9]+x[0-9]+x[0-9]+\.\w+\.\w+)")
_DEPBAR = re.compile(r"WARPGROUP\.DEPBAR\.LE\s+gsb0\s*,\s*(0x[0-9a-f]+|\d+)")
_BAR = re.compile(r"\bBAR\.(?:SYNC|ARV|RED)\w*(?:\.\w+)*\s+(0x[0-9a-f]+|\d+)")


def parse_sass(text: str) -> dict[str, SassKernel]:
    """Per-kernel facts from ``cuobjdump -sass`` output (kernel names demangled the way
    ``build.parse_ptxas`` does)."""
    out: dict[str, SassKernel] = {}
    cur, acc = None, None

    def flush():
        if cur is not None:
            out[cur] = SassKernel(cur, tuple(acc["hgmma"]), tuple(acc["runs"]),
                                  tuple(acc["depbar"]), acc["ldl"], acc["stl"],
                                  tuple(acc["bars"]), acc["membar"], acc["n"], acc["ldg128"])

    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            flush()
            cur = demangle(m.group(1))
            acc = {"hgmma": [], "runs": [], "depbar": [], "ldl": 0, "stl": 0, "bars": [],
                   "membar": 0, "n": 0, "pending": 0, "ldg128": 0}
            continue
        if cur is None:
            continue
        m = _INSTR.search(line)
        if not m:
            continue
        ins = m.group(1)
        acc["n"] += 1
        op = ins.split()[0] if not ins.startswith("@") else ins.split()[1]
        h = _HGMMA.search(ins)
        if h:
            acc["hgmma"].append(h.group(1))
            acc["pending"] += 1
            if "gsb0" in ins:
                acc["runs"].append(acc["pending"])
                acc["pending"] = 0
            continue
        d = _DEPBAR.search(ins)
        if d:
            acc["depbar"].append(int(d.group(1), 0))
            continue
        if op.startswith("LDL"):
            acc["ldl"] += 1
        elif op.startswith("STL"):
            acc["stl"] += 1
        elif op.startswith("MEMBAR") and ".GPU" in op:
            acc["membar"] += 1
        elif op.startswith("LDG") and op.endswith(".128"):
            acc["ldg128"] += 1
        b = _BAR.search(ins)
        if b:
            acc["bars"].append(int(b.group(1), 0))
    flush()
    return out


def disassemble(library) -> dict[str, SassKernel] | None:
    """SASS facts of every kernel in a built library, or None without the tools."""
    tools = sass_tools()
    if tools is None:
        return None
    cu, nd_dir = tools
    env = dict(os.environ)
    env["PATH"] = nd_dir + os.pathsep + env.get("PATH", "")
    env.setdefault("NVDISASM_PATH", nd_dir)
    r = subprocess.run([cu, "-sass", str(library)], capture_output=True, text=True,
                       timeout=300, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass failed on {library}: {r.stderr.strip()[-500:]}")
    return parse_sass(r.stdout)


# ---------------------------------------------------------------- rules

def check_health(build, sass: dict | None = None, *, use_sass: bool = True) -> Health:
    """The health rules of the module docstring for every kernel of ``build`` (a
    ``BuildResult``); ``sass`` may be given (else it is disassembled when the tools exist)."""
    issues: list[HealthIssue] = []
    for r in build.resources:
        if r.stack_bytes:
            issues.append(HealthIssue(r.kernel, "stack", f"{r.stack_bytes} bytes stack frame "
                                      "(local memory: a register array indexed by a value "
                                      "the compiler cannot resolve?)", True))
        if r.spills:
            issues.append(HealthIssue(r.kernel, "spill", f"{r.spill_stores} B spill stores, "
                                      f"{r.spill_loads} B spill loads", True))
        for w in r.warnings:
            serial = "serialized" in w
            issues.append(HealthIssue(r.kernel, "wgmma-serialized" if serial else "ptxas",
                                      f"ptxas: {w}", serial))
    note = ""
    if use_sass and sass is None:
        try:
            sass = disassemble(build.library)
        except RuntimeError as e:
            sass, note = None, str(e)
        if sass is None and not note:
            note = ("SASS not checked: cuobjdump/nvdisasm not found (pip install "
                    "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    if sass is not None:
        for k, s in sass.items():
            if s.local_loads or s.local_stores:
                issues.append(HealthIssue(k, "local-memory", f"{s.local_loads} LDL and "
                                          f"{s.local_stores} STL in the SASS", True))
            if s.hgmma and s.max_hgmma_run <= 1 and len(s.hgmma) > 1:
                issues.append(HealthIssue(k, "wgmma-serialized", "every HGMMA waits for the "
                                          "previous one (WARPGROUP.DEPBAR after each)", True))
    return Health(tuple(issues), dict(sass or {}), sass is not None, note)


def expect_wgmma_pipeline(s: SassKernel, shapes: set[str], group: int,
                          wait_depth: int) -> list[str]:
    """What is wrong with a GEMM kernel's SASS: the expected HGMMA ``shapes``, runs of at least
    ``group`` HGMMAs per scoreboard wait, a ``WARPGROUP.DEPBAR.LE gsb0, N`` with
    ``N >= wait_depth`` (the main loop's ``wgmma.wait_group``), no local memory."""
    problems = []
    missing = shapes - set(s.hgmma)
    if missing:
        problems.append(f"missing HGMMA shapes {sorted(missing)} (have {sorted(set(s.hgmma))})")
    if s.max_hgmma_run < group:
        problems.append(f"HGMMAs issued back to back at most {s.max_hgmma_run} at a time "
                        f"(expected {group})")
    if wait_depth and not any(n >= wait_depth for n in s.depbar_gsb0):
        problems.append(f"no WARPGROUP.DEPBAR.LE gsb0, N with N >= {wait_depth} "
                        f"(have {sorted(set(s.depbar_gsb0))})")
    if s.local_loads or s.local_stores:
        problems.append(f"local memory: {s.local_loads} LDL, {s.local_stores} STL")
    return problems
