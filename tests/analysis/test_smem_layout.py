"""The static SMEM layout the resource checks use is the one codegen emits, kernel by kernel
(codegen calls ``analysis.smem_layout.plan_smem``; the barrier slot counts are derived
independently on both sides, so this compares them on every code-generation case)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))

from codegen_cases import CASES, case_id, get_proc  # noqa: E402

from exogpu_verify.analysis import analyze  # noqa: E402
from exogpu_verify.analysis.smem_layout import kernel_smem_layouts  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_checker_and_codegen_lay_out_smem_alike(case):
    from exogpu_codegen.generate import generate

    p = get_proc(*case)
    layouts = kernel_smem_layouts(p, analyze(p).distributed)
    g = generate(p, unchecked=True)
    assert [k.smem_bytes for k in g.kernels] == [kl.layout.bytes_needed for kl in layouts]
