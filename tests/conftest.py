"""Shared test fixtures (keep small).

Tests have no ``__init__.py``; helper modules with real ``@proc`` definitions (``@proc``
reads source files through ``inspect``) live in ``tests/<area>/progs/`` and are imported by
path with ``load_prog``.
"""

from __future__ import annotations

import pytest

from testlib import load_prog  # noqa: E402  (one loader for every test module)


@pytest.fixture(scope="session")
def prog_loader():
    """``prog_loader("frontend/progs/x.py")`` -> the imported module."""
    return load_prog
