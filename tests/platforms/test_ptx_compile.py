"""Every instruction's C++/PTX template, instantiated and compiled by nvcc (ptxas included).

One translation unit per architecture holds a kernel per instruction (and per size variant
whose PTX differs). ``sm_90a`` gets everything; ``sm_80`` gets the CUDA and Ampere libraries.
Skipped only when ``nvcc`` is not on PATH.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import platform_cu_harness as h
from exogpu_verify.ir.types import bf16, f16, f32
from exogpu_verify.platforms import cuda, sm80, sm90
from exogpu_verify.platforms._ptx import SYNC_PTX

pytestmark = pytest.mark.skipif(h.NVCC is None, reason="nvcc is not on PATH: the PTX templates "
                                "cannot be assembled on this machine")


def _variants():
    """Instances beyond the default sizes whose emitted PTX differs."""
    out = []
    for n in (1, 2, 4):
        out.append((sm80.Sm80_cp_async_f32, {"n": n}))
    for n in (2, 4, 8):
        out.append((sm80.Sm80_cp_async_bf16, {"n": n}))
        out.append((sm80.Sm80_cp_async_f16, {"n": n}))
    for T in (f32, bf16, f16):
        for sa, sb in ((64, 64), (32, 32), (128, 64)):
            out.append((sm90.Sm90_wgmma_ss(T, 64, sa, sb), None))
        out.append((sm90.Sm90_wgmma_rs(T, 32, 64), None))
    # MN-major (transposed) operands beyond the pre-instantiated 128-byte-swizzle members:
    # both transposes, each smaller swizzle (its mode and SBO), N spanning several atom columns
    for T, N, sa, sb, ma, mb in ((bf16, 64, 64, 64, "MN", "MN"), (f16, 32, 32, 32, "MN", "K"),
                                 (bf16, 96, 128, 32, "K", "MN"), (f16, 48, 64, 128, "MN", "K"),
                                 (f16, 256, 32, 64, "MN", "MN")):
        out.append((sm90.Sm90_wgmma_ss(T, N, sa, sb, ma, mb), None))
    out.append((sm90.Sm90_wgmma_rs(f16, 64, 64, "MN"), None))
    out.append((sm90.Sm90_wgmma_rs(bf16, 16, 32, "MN"), None))
    out.append((sm90.Sm90_tma_multicast(2, bf16, 2, 2), None))
    out.append((sm90.Sm90_tma_multicast(2, f32, 8), None))
    return out


def _sync_kernel() -> str:
    """A kernel issuing every synchronization snippet of ``SYNC_PTX`` (operands bound)."""
    def line(key, operands=" ::: \"memory\""):
        return f'  asm volatile("{SYNC_PTX[key].replace("{N}", "1")}\\n"{operands});\n'

    try_wait = SYNC_PTX["mbarrier_try_wait"].replace("%0", "p")
    return ("__global__ void exo_sync_snippets() {\n"
            "  __shared__ alignas(8) uint64_t mbar;\n  uint32_t a = exo_smem_u32(&mbar);\n"
            + line("mbarrier_init", ' :: "r"(a), "r"(32) : "memory"')
            + line("mbarrier_arrive", ' :: "r"(a) : "memory"')
            + '  uint32_t done = 0;\n'
            + '  asm volatile("{\\n.reg .pred p;\\n' + try_wait
            + '\\nselp.u32 %0, 1, 0, p;\\n}\\n" : "=r"(done) : "r"(a), "r"(0) : "memory");\n'
            + "".join(line(k) for k in SYNC_PTX if not k.startswith("mbarrier"))
            + "  if (done) mbar = 0;\n}\n")


def _units():
    sm90a = [(p, None) for lib in (cuda, sm80, sm90) for p in lib.INSTRS.values()]
    sm90a += _variants()
    sm_80 = [(p, None) for p in cuda.INSTRS.values() if not p.name.startswith("setmaxnreg")]
    sm_80 += [(p, None) for p in sm80.INSTRS.values()]
    sm_80 += [v for v in _variants() if v[0].name.startswith("Sm80")]
    return {"90a": h.translation_unit(sm90a) + _sync_kernel(), "80": h.translation_unit(sm_80)}


@pytest.fixture(scope="module")
def compiled():
    work = Path(tempfile.mkdtemp(prefix="exogpu_ptx_"))
    units = _units()
    with ThreadPoolExecutor(max_workers=len(units)) as ex:
        futs = {arch: ex.submit(h.compile_cu, src, arch, work) for arch, src in units.items()}
        return {arch: f.result() for arch, f in futs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["90a", "80"])
def test_every_template_assembles(compiled, arch):
    r = compiled[arch]
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert r.returncode == 0, "\n".join(errors[:40]) or r.stderr[-4000:]


def test_every_instruction_is_instantiated():
    src = _units()["90a"]
    for lib in (cuda, sm80, sm90):
        for name in lib.INSTRS:
            assert f"_{name}(" in src, name


def test_a_ptx_typo_fails_to_assemble():
    """The check is not vacuous: a misspelt PTX type is an nvcc/ptxas error."""
    p = sm80.Sm80_mma_m16n8k16_f32_bf16
    src = h.translation_unit([(p, None)]).replace(".f32.bf16.bf16.f32", ".f32.bf16.bf16.f33")
    assert ".f33" in src
    r = h.compile_cu(src, "80", Path(tempfile.mkdtemp(prefix="exogpu_ptx_bad_")))
    assert r.returncode != 0


def test_wgmma_transpose_flags_reach_the_ptx():
    """imm-trans-a/b (PTX ISA 9.7.15.5.2): 1 for an MN-major operand; the RS form has only
    imm-trans-b. ptxas accepts these immediates (test_every_template_assembles)."""
    args = {"D": "d", "D_scale_d": "s", "A": "a", "B": "b", "A_stride0": "1024",
            "B_stride0": "4096"}
    for p, tail in ((sm90.wgmma_m64n64k16_f32_bf16_ss_mn_a, "exo_p, 1, 1, 1, 0;"),
                    (sm90.wgmma_m64n64k16_f32_f16_ss_mn_b, "exo_p, 1, 1, 0, 1;"),
                    (sm90.wgmma_m64n64k16_f32_bf16_ss_mn_ab, "exo_p, 1, 1, 1, 1;"),
                    (sm90.wgmma_m64n64k16_f32_bf16_ss, "exo_p, 1, 1, 0, 0;"),
                    (sm90.wgmma_m64n64k16_f32_f16_rs_mn_b, "exo_p, 1, 1, 1;")):
        assert tail in p.instr.codegen(args), p.name


def test_wgmma_operand_count_matches_n():
    p = sm90.wgmma_m64n256k16_f32_bf16_ss
    text = p.instr.codegen({"D": "d", "D_scale_d": "s", "A": "a", "B": "b"})
    assert text.count('"+f"') == 128
    assert "m64n256k16.f32.bf16.bf16" in text
