"""Shared test fixtures (keep small).

Tests have no ``__init__.py``; helper modules with real ``@proc`` definitions (``@proc``
reads source files through ``inspect``) live in ``tests/<area>/progs/`` and are imported by
path with ``load_prog``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def load_prog(relpath: str):
    """Import ``tests/<relpath>`` (e.g. ``frontend/progs/accept_progs.py``) once, by path."""
    path = (TESTS / relpath).resolve()
    name = "exogpu_tests__" + "__".join(path.relative_to(TESTS).with_suffix("").parts)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


@pytest.fixture(scope="session")
def prog_loader():
    """``prog_loader("frontend/progs/x.py")`` -> the imported module."""
    return load_prog
