"""The catalog: every instruction is documented, well-formed, and its lowering is the
documented one where the choice is subtle (cp.async cache level, wgmma descriptors)."""

from __future__ import annotations

import re
from pathlib import Path

from exogpu_verify.ir.types import bf16, f32
from exogpu_verify.platforms import cuda, sm80, sm90

DOC = Path(__file__).resolve().parents[2] / "docs" / "platforms.md"
LIBS = (cuda, sm80, sm90)


def test_every_instruction_has_a_docs_row():
    text = DOC.read_text()
    for lib in LIBS:
        for name in lib.INSTRS:
            pattern = re.sub(r"m64n\d+", "m64n{N}", name)
            assert f"`{pattern}`" in text, name


def test_every_instruction_declares_unit_timeline_and_lowering():
    for lib in LIBS:
        for name, p in lib.INSTRS.items():
            assert p.name == name and p.is_instr
            assert p.instr.codegen is not None, name
            for pname, _ in p.instr.distributed:
                assert p.param(pname) is not None


def test_cp_async_uses_cg_only_for_16_bytes():
    gen = sm80.Sm80_cp_async_f32.instr.codegen
    assert "cp.async.ca.shared.global [%0], [%1], 4;" in gen({"n": 1, "dst": "d", "src": "s"})
    assert "cp.async.cg.shared.global [%0], [%1], 16;" in gen({"n": 4, "dst": "d", "src": "s"})


def test_wgmma_descriptors_follow_the_swizzle():
    args = {"D": "d", "D_scale_d": "f", "A": "a", "B": "b"}
    t = sm90.Sm90_wgmma_ss(bf16, 64, 64, 32).instr.codegen(args)
    assert "exo_wgmma_desc(a, 16, 512, 2)" in t and "exo_wgmma_desc(b, 16, 256, 3)" in t
    # MN-major: LBO = the atom-column stride in bytes (2 * stride(X, 0)), SBO = 8 K rows of
    # `swizzle` bytes (PTX ISA 9.7.15.5.1.2.1; docs/platforms.md)
    mn = {**args, "A_stride0": "sa", "B_stride0": "sb"}
    t = sm90.Sm90_wgmma_ss(bf16, 64, 64, 32, "MN", "MN").instr.codegen(mn)
    assert "exo_wgmma_desc(a, uint32_t(sa) * 2u, 512, 2)" in t
    assert "exo_wgmma_desc(b, uint32_t(sb) * 2u, 256, 3)" in t
    t = sm90.wgmma_m64n128k16_f32_bf16_ss_mn_b.instr.codegen(mn)
    assert "exo_wgmma_desc(a, 16, 1024, 1)" in t
    assert "exo_wgmma_desc(b, uint32_t(sb) * 2u, 1024, 1)" in t
    t = sm90.wgmma_m64n8k8_f32_f32_ss.instr.codegen(args)
    assert "m64n8k8.f32.tf32.tf32" in t and "exo_p, 1, 1;" in t  # no transpose flags for tf32
    assert t.rstrip().endswith("f = 1; }")


def test_tma_coordinates_are_innermost_first():
    gen = sm90.tma_load_3d_f32.instr.codegen
    t = gen({"n0": 1, "n1": 64, "n2": 32, "dst": "s", "src": "m", "_mbar": "mb",
             "src_coords": ["b", "r", "c"]})
    assert '"r"(int32_t(c)), "r"(int32_t(r)), "r"(int32_t(b))' in t
    assert '"n"(8192)' in t  # expect_tx bytes = 64 * 32 * 4


def test_factories_are_cached_and_named():
    assert sm90.Sm90_wgmma_ss(f32, 128) is sm90.wgmma_m64n128k8_f32_f32_ss
    assert sm90.Sm90_tma_multicast(2, bf16, 2, 2).name == "tma_multicast_2d_bf16_x2_s2"
