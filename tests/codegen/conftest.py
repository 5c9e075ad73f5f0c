"""Session fixtures of the code-generation tests: a private build cache and every case of
``codegen_cases.CASES`` built once, in parallel."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from codegen_cases import CASES, get_proc  # noqa: E402


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("exogpu-cache")
    old = os.environ.get("EXOGPU_CACHE_DIR")
    os.environ["EXOGPU_CACHE_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("EXOGPU_CACHE_DIR", None)
    else:
        os.environ["EXOGPU_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def built(cache_dir):
    """proc name -> Kernel (or the exception its build raised), built in parallel."""
    from exogpu_codegen import compile

    procs = {name: get_proc(rel, name) for rel, name in CASES}

    def one(item):
        name, p = item
        try:
            return name, compile(p, unchecked=True)
        except Exception as e:  # noqa: BLE001 - reported by the test that needs it
            return name, e

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
        return dict(ex.map(one, procs.items()))
