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
    if str(path.parent) not in sys.path:  # as exogpu-verify loads it: siblings importable
        sys.path.append(str(path.parent))
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


_VERIFIED: dict = {}


def verify_cached(p, sizes: dict | None = None, mode: str | None = None,
                  timeout_s: float = 3600.0):
    """``exogpu_verify.verify(p, sizes=..., mode=...)``, once per program text in a test
    session (each pytest-xdist worker has its own cache). The timeout only guards against a
    hang: verify's default 60 s of wall-clock would turn a proof into ``checked`` on a
    loaded machine, and tests must not depend on time.

    Several test modules verify the same shipped procs (loaded separately, so as different
    ``Procedure`` objects); the key is what the verdict depends on: the printed program, the
    module's ``VERIFY_SIZES`` (the auto-mode fallback), the sizes and the mode.
    """
    from exogpu_verify import verify
    from exogpu_verify.ir.printer import print_proc

    vs = p.module.get("VERIFY_SIZES") if isinstance(p.module, dict) else None
    key = (print_proc(p), repr(sorted(vs.items())) if isinstance(vs, dict) else None,
           repr(sorted((sizes or {}).items())) if sizes is not None else None, mode,
           p.srcinfo.file)
    hit = _VERIFIED.get(key)
    if hit is None:
        hit = _VERIFIED[key] = verify(p, sizes=sizes, mode=mode, timeout_s=timeout_s)
    return hit
