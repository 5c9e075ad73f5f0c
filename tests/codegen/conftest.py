"""Session fixtures of the code-generation tests: a private build cache and the cases of
``codegen_cases.CASES``, each built once, when a test first needs it."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from codegen_cases import CASES, get_proc  # noqa: E402
from testlib import SHARED_ENV  # noqa: E402


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """The session's build cache: the folder every worker shares (tests/conftest.py sets
    ``EXOGPU_CACHE_DIR``), or a private one where that is not set (a test file run on its
    own outside this tree's conftest)."""
    shared = os.environ.get("EXOGPU_CACHE_DIR")
    if shared and os.environ.get(SHARED_ENV) and Path(shared).is_relative_to(
            os.environ[SHARED_ENV]):
        Path(shared).mkdir(parents=True, exist_ok=True)
        yield Path(shared)
        return
    d = tmp_path_factory.mktemp("exogpu-cache")
    old = os.environ.get("EXOGPU_CACHE_DIR")
    os.environ["EXOGPU_CACHE_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("EXOGPU_CACHE_DIR", None)
    else:
        os.environ["EXOGPU_CACHE_DIR"] = old


class Builds(dict):
    """proc name -> Kernel (or the exception its build raised), compiled on first use and
    kept for the session; ``all()`` builds every case in parallel (the slow build tests)."""

    def __init__(self):
        super().__init__()
        self.procs = {name: (rel, name) for rel, name in CASES}

    def _one(self, name):
        from exogpu_codegen import compile

        try:
            return compile(get_proc(*self.procs[name]), unchecked=True)
        except Exception as e:  # noqa: BLE001 - reported by the test that needs it
            return e

    def __missing__(self, name):
        k = self[name] = self._one(name)
        return k

    def all(self) -> dict:
        todo = [n for n in self.procs if n not in self]
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
            for n, k in zip(todo, ex.map(self._one, todo)):
                self[n] = k
        return dict(self)


@pytest.fixture(scope="session")
def built(cache_dir):
    """proc name -> Kernel (or the exception its build raised), built on first use."""
    return Builds()
