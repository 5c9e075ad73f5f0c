"""Helpers shared by test modules (importable as ``testlib``: ``tests/`` is on ``sys.path``
through its ``conftest.py``).

``@proc`` reads source files through ``inspect``, so test programs live in real files and
are imported by path, once, under a unique module name (``tests/`` has no packages, and the
name ``conftest`` repeats across folders).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def load_path(path, prefix: str = "exogpu_tests"):
    """Import the file at ``path`` once and return the module."""
    path = Path(path).resolve()
    try:
        rel = path.relative_to(ROOT)
    except ValueError:
        rel = Path(*path.parts[-3:])
    name = prefix + "__" + "__".join(rel.with_suffix("").parts).replace("-", "_")
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


def load_prog(relpath: str):
    """Import ``tests/<relpath>`` (e.g. ``frontend/progs/accept_progs.py``) once."""
    return load_path(TESTS / relpath)
