"""Proof certificates: what was proven, for exactly which program, stated for any solver.

A certificate is a JSON file ``<module>.<proc>.json`` (format ``FORMAT``) holding the
program (its printed IR and that text's SHA-256), the source file that defines it, tool
versions, the derivation of a scheduled proc (``ir.derivation.provenance_record``: p1's
hash and location, every rewrite with its arguments, what it checked and whether it is
unsafe; null for a proc written directly), and every obligation of the proof: its kind and name, the isl text of its
conflict set, the isl texts of the ordered sets subtracted from it (each labelled with
what orders it, and with its witness where it has one: ``witness.py``), the whole obligation
as one SMT-LIB2 script (``smtlib.py``: unsat means the obligation holds for every size), the
witnessed script without quantifiers where every ordered set has a witness (its unsat
implies the obligation's), and the verdicts of isl, Z3 and cvc5 (on the witnessed script
when there is one).
``recheck.py`` re-derives the obligations from the program and compares; docs/certificates.md
says how to check one without exogpu.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..ir.derivation import provenance_record

#: /3 added ``derivation`` (the schedule p1 -> pN); /2 certificates are refused as outdated
FORMAT = "exogpu-certificate/3"
#: the solvers whose ``unsat`` a certificate records for every obligation
PROOF_SOLVERS = ("z3", "cvc5")


def program_text(p) -> str:
    from ..ir.printer import print_proc

    return print_proc(p)


def program_hash(p) -> str:
    """The identity a certificate is bound to: SHA-256 of the printed IR."""
    return hashlib.sha256(program_text(p).encode()).hexdigest()


def _versions() -> dict:
    import islpy

    from importlib.metadata import PackageNotFoundError, version

    from .solvers import versions

    try:
        ours = version("exogpu")
    except PackageNotFoundError:
        ours = "unknown"
    return {"exogpu": ours, "islpy": islpy.__version__, **versions()}


def cert_name(p) -> str:
    """``<stem of the defining file>.<proc name>.json``."""
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
        """True when this certificate claims a proof of exactly ``p`` (same printed IR).
        A claim only: ``recheck.recheck_certificate`` is the check."""
        return self.data.get("format") == FORMAT and self.data.get("verdict") == "proven" \
            and self.data.get("program_hash") == program_hash(p)


def obligation_record(ob) -> dict:
    """The certificate entry of one discharged obligation (``ValueError`` if the solvers
    did not all answer unsat)."""
    ex = ob.extra or {}
    solvers = dict(ex.get("solvers") or {})
    if not ex.get("smtlib") or any(solvers.get(s) != "unsat" for s in PROOF_SOLVERS):
        raise ValueError(f"obligation {ob.name} was not discharged by "
                         f"{' and '.join(PROOF_SOLVERS)} (solvers: {solvers})")
    witnessed = ex.get("smtlib_witnessed")
    ordered = []
    for k, (lbl, txt) in enumerate(ob.ordered):
        entry = {"by": lbl, "set": txt}
        if witnessed:
            entry["witness"] = ob.witnesses[k]
        ordered.append(entry)
    rec = {
        "name": ob.name,
        "kind": ob.kind,
        "conflict": ob.conflict,
        "ordered": ordered,
        "smtlib": ex["smtlib"],
        "solvers": solvers,
        "seconds": round(ob.seconds, 4),
    }
    if witnessed:  # the solvers' answers are on this script (witness.py)
        rec["smtlib_witnessed"] = witnessed
    if ex.get("strategy"):  # e.g. {"cvc5": "--seed=1"}: how to re-run it by hand
        rec["strategy"] = dict(ex["strategy"])
    return rec


def certificate_data(p, obligations, source: str | None = None) -> dict:
    """The JSON object of a certificate for ``p`` proven by ``obligations``. ``source``:
    the file that binds the proc at module level (default: the file defining it)."""
    src = source or (p.srcinfo.file if p.srcinfo and p.srcinfo.file else None)
    return {
        "format": FORMAT,
        "proc": p.name,
        "source": os.path.relpath(src) if src else None,
        "program_hash": program_hash(p),
        "program": program_text(p),
        "verdict": "proven",
        "derivation": provenance_record(p),
        "tools": _versions(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "obligations": [obligation_record(ob) for ob in obligations],
    }


def write_certificate(p, result, proof_dir, source: str | None = None) -> Path:
    """Write the certificate of a proven proc (``result``: a proven SymbolicResult, or
    anything with ``verdict`` and ``obligations``)."""
    if result.verdict != "proven":
        raise ValueError("only proven procs get certificates")
    data = certificate_data(p, result.obligations, source)
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
    """The certificate file for ``p`` in ``proof_dir``, read but not checked (None when
    missing or unreadable)."""
    path = Path(proof_dir) / cert_name(p)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return Certificate(path, data) if isinstance(data, dict) else None
