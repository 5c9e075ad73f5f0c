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
def cache_dir():
    """The session's build cache, shared by every worker and every command a test runs
    (tests/conftest.py sets ``EXOGPU_CACHE_DIR`` inside the session folder)."""
    d = Path(os.environ["EXOGPU_CACHE_DIR"])
    assert os.environ.get(SHARED_ENV) and d.is_relative_to(os.environ[SHARED_ENV]), \
        "tests/conftest.py did not set up the session's build cache"
    d.mkdir(parents=True, exist_ok=True)
    return d


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
