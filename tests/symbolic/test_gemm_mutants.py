"""Every synchronization statement of a shipped GEMM is needed: deleting any one Fence,
Arrive or Await of ``gemm_bf16_f32_128x256_s4_coop_g2`` (or the trailing barrier of a TMA
load) gives a program that is not proven. The symbolic checker refutes each (with the
concrete replay confirming it), so neither checker accepts a kernel with one
synchronization missing. (Deleting the final ``Await(tcg, cuda_in_order, 0)`` was once
accepted by the concrete checker: tests/amir/test_coalesce_sync.py.)"""

from __future__ import annotations

import re

import pytest
from symbolic_helpers import ROOT, load_path

from exogpu_verify import ExoGpuError, parse_proc_source, verify
from exogpu_verify.ir.printer import print_proc, roundtrip_env

pytestmark = pytest.mark.slow

NAME = "gemm_bf16_f32_128x256_s4_coop_g2"
SYNC = re.compile(r"^(\s*)(Fence|Arrive|Await)\(")


def _kernel():
    return load_path(ROOT / "specs" / "gemm.py").VARIANTS[NAME]


def _mutants():
    lines = print_proc(_kernel()).splitlines()
    out = []
    for i, ln in enumerate(lines):
        m = SYNC.match(ln)
        if m:
            out.append((i, lines[:i] + [m.group(1) + "pass"] + lines[i + 1:]))
        elif " >> " in ln and not ln.lstrip().startswith("Arrive"):
            out.append((i, lines[:i] + [ln.split(" >> ")[0]] + lines[i + 1:]))
    return lines, out


LINES, MUTANTS = _mutants()


def test_the_kernel_has_its_synchronization():
    assert len(MUTANTS) >= 20
    assert verify(_kernel(), mode="symbolic").verdict == "proven"


@pytest.mark.parametrize("i,text", MUTANTS, ids=[f"line{i + 1}" for i, _ in MUTANTS])
def test_deleting_one_synchronization_is_refuted(i, text):
    p = _kernel()
    try:
        q = parse_proc_source("\n".join(text), roundtrip_env(p), file="<mutant>",
                              instr_info=p.instr)
    except ExoGpuError as e:  # a TMA load without its barrier: refused as written
        assert e.diagnostic.kind == "barrier-usage", str(e.diagnostic)
        return
    r = verify(q, mode="symbolic", timeout_s=600)
    assert r.verdict == "refuted", (LINES[i].strip(), r.summary())
