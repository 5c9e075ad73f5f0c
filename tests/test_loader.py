"""Which procs a module binds (exogpu_verify/loader.py): defined or built here count, procs
that only arrive by import (named or ``*``) do not, each proc once."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from exogpu_verify.loader import load_module, module_bindings

PROGS = Path(__file__).resolve().parent / "cli" / "progs"


def load(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    mod, diag = load_module(f)
    assert diag is None, diag
    return mod


@pytest.fixture
def on_path(tmp_path):
    sys.path.insert(0, str(PROGS))
    yield tmp_path
    sys.path.remove(str(PROGS))


def names(mod):
    return [(n, p.name) for n, p in module_bindings(mod)]


def test_star_import_brings_nothing_to_check(on_path):
    mod = load(on_path, "star.py", "from copy_variants import *\n")
    assert names(mod) == []


def test_dynamically_bound_factory_procs_count(on_path):
    mod = load(on_path, "dyn.py", """
        from copy_factory import make_copy
        for t in (64, 128):
            globals()[f"copy{t}"] = make_copy(t)
    """)
    assert names(mod) == [("copy64", "copy"), ("copy128", "copy")]


def test_an_alias_counts_once(on_path):
    mod = load(on_path, "alias.py", """
        from copy_factory import make_copy
        a = make_copy(32)
        b = a
    """)
    assert names(mod) == [("a", "copy")]


def test_renamed_import_is_still_an_import(on_path):
    mod = load(on_path, "ren.py", "from copy_variants import copy256 as mine\n")
    assert names(mod) == []


def test_instructions_are_not_procs_to_check(tmp_path):
    mod = load(tmp_path, "ins.py", """
        from __future__ import annotations
        from exogpu_verify import *

        @instr(timeline=cuda_in_order_instr, unit=cuda_thread, codegen="{dst} = {src};")
        def mov(dst: [f32][1] @ CudaRmem, src: [f32][1] @ CudaRmem):
            dst[0] = src[0]
    """)
    assert names(mod) == []
