"""Shared test fixtures (keep small).

Tests have no ``__init__.py``; helper modules with real ``@proc`` definitions (``@proc``
reads source files through ``inspect``) live in ``tests/<area>/progs/`` and are imported by
path with ``load_prog``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from testlib import SHARED_ENV, load_prog  # noqa: E402  (one loader for every test module)


def pytest_configure(config):
    """One folder for the whole session, made by the controller and inherited (through the
    environment) by pytest-xdist's workers and every command a test runs: the verdicts of
    ``testlib.verify_cached`` and the nvcc build cache (``EXOGPU_CACHE_DIR``) live there, so
    a kernel is proven and built once per session whichever worker asks first, and tests
    never write to the user's own cache."""
    if hasattr(config, "workerinput") or os.environ.get(SHARED_ENV):
        return                      # an xdist worker, or a pytest run by a test: inherited
    d = tempfile.mkdtemp(prefix="exogpu-tests-")
    config.exogpu_shared = (d, os.environ.get("EXOGPU_CACHE_DIR"))
    os.environ[SHARED_ENV] = d
    os.environ["EXOGPU_CACHE_DIR"] = os.path.join(d, "kernels")


def pytest_unconfigure(config):
    saved = getattr(config, "exogpu_shared", None)
    if saved:
        d, cache = saved
        shutil.rmtree(d, ignore_errors=True)
        os.environ.pop(SHARED_ENV, None)
        if cache is None:
            os.environ.pop("EXOGPU_CACHE_DIR", None)
        else:
            os.environ["EXOGPU_CACHE_DIR"] = cache


@pytest.fixture(scope="session")
def prog_loader():
    """``prog_loader("frontend/progs/x.py")`` -> the imported module."""
    return load_prog
