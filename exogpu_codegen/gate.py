"""The proof gate: code is generated only for a program with a valid certificate.

A certificate is produced by the symbolic checker (``exogpu_verify.symbolic.certificates``)
and is valid for exactly one program: the sha256 of its printed IR. The gate applies the
same validation as ``exogpu-verify --recheck`` (``exogpu_verify.recheck``): the file must be
well formed, carry this program's hash, and its obligations must be exactly the ones
re-derived from the program and re-decided by isl, Z3 and cvc5; the refusal lists what is
wrong. Without a valid certificate, generation is refused unless the caller passes
``unchecked=True`` (``--unchecked``), which is stamped into the generated file's header.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from exogpu_verify.ir.printer import print_proc
from exogpu_verify.ir.nodes import Procedure

from .errors import usage


def program_hash(p: Procedure) -> str:
    """The identity a certificate is bound to: sha256 of the printed IR."""
    return hashlib.sha256(print_proc(p).encode()).hexdigest()


@dataclass(frozen=True)
class GateResult:
    checked: bool
    program_hash: str
    note: str
    #: for a scheduled proc: "derived from p1 (file:line) by k checked steps (j unsafe)"
    derivation: str | None = None

    def header_lines(self) -> list[str]:
        if self.checked:
            return [f"// proof: {self.note}"] + (
                [f"// {self.derivation}"] if self.derivation else [])
        return ["// UNCHECKED: generated with --unchecked (unchecked=True); the synchronization of",
                "// this program was NOT proven race-free: no certificate was checked.",
                f"// ({self.note})"]


def default_proof_dir() -> str:
    return os.environ.get("EXOGPU_PROOF_DIR", "proofs")


def check_gate(p: Procedure, unchecked: bool = False, proof_dir: str | None = None
               ) -> GateResult:
    """Accept ``p`` if a valid certificate for exactly this program exists in ``proof_dir``;
    with ``unchecked`` accept anyway (and say so). Raises ``ExoGpuError`` (usage) otherwise."""
    h = program_hash(p)
    if unchecked:  # the gate is skipped, whatever certificates exist
        return GateResult(False, h, "the proof gate was skipped; no certificate was checked")
    proof_dir = proof_dir or default_proof_dir()
    try:
        from exogpu_verify.recheck import recheck_certificate
        from exogpu_verify.symbolic.certificates import cert_name
    except ImportError:
        raise usage(f"refusing to generate code for '{p.name}': it needs a proof certificate, "
                    "and no certificate can exist yet (the symbolic checker's certificates, "
                    "exogpu_verify.symbolic.certificates, are not available in this "
                    "installation)",
                    hint="pass unchecked=True to compile() or --unchecked to exogpu-codegen to "
                         "generate code without a proof (stamped into the generated file)",
                    node=p) from None
    path = Path(proof_dir) / cert_name(p)
    hint = (f"run `exogpu-verify --certificates {proof_dir} <file defining {p.name}>` first, "
            "or pass --unchecked / unchecked=True")
    if not path.exists():
        raise usage(f"refusing to generate code for '{p.name}': no certificate for it in "
                    f"{proof_dir} (expected {path})", hint=hint, node=p)
    r = recheck_certificate(path, p)
    if r.ok:
        from exogpu_verify.ir.derivation import derivation

        return GateResult(True, h, f"checked certificate {path.name} (sha256:{h[:16]}...; "
                          f"{r.obligations} obligations re-derived and re-decided by isl, Z3 "
                          "and cvc5)", derivation(p))
    shown = r.problems[:4]
    more = f" (and {len(r.problems) - 4} more)" if len(r.problems) > 4 else ""
    raise usage(f"refusing to generate code for '{p.name}': its certificate {path} is "
                f"rejected: " + "; ".join(shown) + more, hint=hint, node=p)
