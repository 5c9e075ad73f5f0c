"""Proof certificates: what was proven, for exactly which program, re-checkable by anyone.

A certificate is a JSON file ``<module>.<proc>.json`` holding the program hash (SHA-256 of
the printed IR), tool versions, and every obligation: its isl conflict set, the isl sets of
ordered pairs subtracted from it, the remainder, and the remainder as an SMT-LIB2 formula
with Z3's verdict and statistics. ``recheck`` re-derives each remainder with isl, re-runs
each SMT-LIB2 formula in a fresh Z3 solver, and compares the program hash with the current
source, failing on any mismatch.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

FORMAT = "exogpu-certificate/1"


def program_hash(p) -> str:
    from ..ir.printer import print_proc

    return hashlib.sha256(print_proc(p).encode()).hexdigest()


def _versions() -> dict:
    import islpy
    import z3

    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("exogpu")
    except PackageNotFoundError:
        ours = "unknown"
    return {"exogpu": ours, "islpy": islpy.__version__, "z3": z3.get_version_string()}


def cert_name(p) -> str:
    stem = Path(p.srcinfo.file).stem if p.srcinfo and p.srcinfo.file else "module"
    return f"{stem}.{p.name}.json"


@dataclass
class Certificate:
    path: Path
    data: dict

    @property
    def proc(self) -> str:
        return self.data["proc"]

    @property
    def hash(self) -> str:
        return self.data["program_hash"]

    def valid_for(self, p) -> bool:
        """True when this certificate proves exactly ``p`` (same printed IR)."""
        return self.data.get("format") == FORMAT and self.data.get("verdict") == "proven" \
            and self.hash == program_hash(p)


def write_certificate(p, result, proof_dir) -> Path:
    """Write the certificate of a proven proc (``result``: a proven SymbolicResult)."""
    if result.verdict != "proven":
        raise ValueError("only proven procs get certificates")
    obs = []
    for ob in result.obligations:
        extra = getattr(ob, "extra", {}) or {}
        obs.append({
            "name": ob.name,
            "kind": ob.kind,
            "conflict": ob.conflict,
            "ordered": [{"by": lbl, "set": txt} for lbl, txt in ob.ordered],
            "remainder": str(ob.remainder) if ob.remainder is not None else None,
            "smtlib": extra.get("smtlib"),
            "z3": extra.get("z3"),
            "z3_stats": extra.get("z3_stats", {}),
            "seconds": round(ob.seconds, 4),
        })
    data = {
        "format": FORMAT,
        "proc": p.name,
        "source": os.path.relpath(p.srcinfo.file) if p.srcinfo and p.srcinfo.file else None,
        "program_hash": program_hash(p),
        "verdict": "proven",
        "tools": _versions(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "obligations": obs,
    }
    out = Path(proof_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / cert_name(p)
    fd, tmp = tempfile.mkstemp(dir=out, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)  # atomic: a reader never sees half a certificate
    return path


def load_certificate(proof_dir, p) -> Certificate | None:
    path = Path(proof_dir) / cert_name(p)
    if not path.is_file():
        return None
    try:
        return Certificate(path, json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError):
        return None


@dataclass
class RecheckResult:
    path: Path
    ok: bool
    problems: list
    obligations: int


def recheck_file(path: Path, timeout_ms: int = 60000, procs: dict | None = None
                 ) -> RecheckResult:
    """Re-run every obligation of one certificate in fresh solvers; see module docstring."""
    import islpy as isl

    from .z3bridge import recheck_smtlib

    problems = []
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        return RecheckResult(Path(path), False, [f"unreadable certificate: {e}"], 0)
    if data.get("format") != FORMAT:
        return RecheckResult(Path(path), False, [f"unknown format {data.get('format')!r}"], 0)
    n = 0
    for ob in data.get("obligations", []):
        n += 1
        s = isl.Set(ob["conflict"])
        for o in ob["ordered"]:
            s = s.subtract(isl.Set(o["set"]))
        if not s.is_empty():
            problems.append(f"{ob['name']}: isl re-derivation of the remainder is not empty")
        if ob.get("smtlib"):
            z = recheck_smtlib(ob["smtlib"], timeout_ms)
            if z != "unsat":
                problems.append(f"{ob['name']}: fresh Z3 says {z}, certificate says unsat")
    if procs is not None:
        p = procs.get((data.get("source"), data.get("proc")))
        if p is None:
            problems.append(f"proc {data.get('proc')} not found in {data.get('source')}")
        elif program_hash(p) != data.get("program_hash"):
            problems.append(f"stale certificate: {data.get('proc')} changed since it was proven "
                            "(program hash differs); re-run exogpu-verify --certificates")
    return RecheckResult(Path(path), not problems, problems, n)
