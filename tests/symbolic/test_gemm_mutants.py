"""Every synchronization statement of a shipped GEMM is needed: deleting any one Fence,
Arrive or Await (or the trailing barrier of a TMA load or multicast) of the cooperative
``gemm_bf16_f32_128x256_s4_coop_g2``, the 2x1-cluster ``..._c2x1``, the ping-pong
``gemm_bf16_f32_128x128_s4_pp_g4`` or the B-as-K x N ``..._kn`` (all scheduled from the
naive matmul) gives a program that is not proven. The symbolic checker refutes each (with the
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

NAMES = ("gemm_bf16_f32_128x256_s4_coop_g2", "gemm_bf16_f32_128x256_s4_coop_g2_c2x1",
         "gemm_bf16_f32_128x128_s4_pp_g4", "gemm_bf16_f32_128x256_s4_coop_g2_kn")
SYNC = re.compile(r"^(\s*)(Fence|Arrive|Await)\(")
KERNELS = load_path(ROOT / "specs" / "gemm.py").VARIANTS


def _mutants(name):
    lines = print_proc(KERNELS[name]).splitlines()
    out = []
    for i, ln in enumerate(lines):
        m = SYNC.match(ln)
        if m:
            out.append((name, i, lines[:i] + [m.group(1) + "pass"] + lines[i + 1:]))
        elif " >> " in ln and not ln.lstrip().startswith("Arrive"):
            out.append((name, i, lines[:i] + [ln.split(" >> ")[0]] + lines[i + 1:]))
    return out


MUTANTS = [m for name in NAMES for m in _mutants(name)]


@pytest.mark.parametrize("name", NAMES)
def test_the_kernel_has_its_synchronization(name):
    assert sum(m[0] == name for m in MUTANTS) >= 20
    assert verify(KERNELS[name], mode="symbolic").verdict == "proven"


@pytest.mark.parametrize("name,i,text", MUTANTS,
                         ids=[f"{n.split('_')[-1]}-line{i + 1}" for n, i, _ in MUTANTS])
def test_deleting_one_synchronization_is_refuted(name, i, text):
    p = KERNELS[name]
    try:
        q = parse_proc_source("\n".join(text), roundtrip_env(p), file="<mutant>",
                              instr_info=p.instr)
    except ExoGpuError as e:  # a TMA load without its barrier: refused as written
        assert e.diagnostic.kind == "barrier-usage", str(e.diagnostic)
        return
    r = verify(q, mode="symbolic", timeout_s=600)
    assert r.verdict == "refuted", (print_proc(p).splitlines()[i].strip(), r.summary())


def _shallow(name: str, depth: int) -> list[str]:
    lines = print_proc(KERNELS[name]).splitlines()
    [i] = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("raw: barrier[")]
    assert "ring_buffer_by(4)" in lines[i], lines[i]
    return lines[:i] + [lines[i].replace("ring_buffer_by(4)", f"ring_buffer_by({depth})")] + \
        lines[i + 1:]


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_a_raw_ring_shallower_than_the_stages_is_refuted(name, depth):
    """Four SMEM stages and the producer up to four loads ahead: ``raw`` with fewer than four
    mbarriers lets a load's ``expect_tx`` and Arrive reuse an mbarrier whose previous phase
    may still wait for its copy (docs/semantics.md, "Physical phases of an mbarrier ring").
    Both checkers accepted these before they checked the physical phases."""
    p = KERNELS[name]
    q = parse_proc_source("\n".join(_shallow(name, depth)), roundtrip_env(p), file="<shallow>",
                          instr_info=p.instr)
    r = verify(q, mode="symbolic", timeout_s=600)
    assert r.verdict == "refuted", r.summary()
    assert "raw (physical mbarriers of ring_buffer_by" in r.diagnostics[0].message, \
        r.diagnostics[0].message
