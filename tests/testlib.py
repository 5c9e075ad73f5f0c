"""Helpers shared by test modules (importable as ``testlib``: ``tests/`` is on ``sys.path``
through its ``conftest.py``).

``@proc`` reads source files through ``inspect``, so test programs live in real files and
are imported by path, once, under a unique module name (``tests/`` has no packages, and the
name ``conftest`` repeats across folders).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
import threading
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
#: the session's shared folder (made by tests/conftest.py, inherited by xdist's workers)
SHARED_ENV = "EXOGPU_TEST_SHARED_DIR"
_LOADING = threading.RLock()


def load_path(path, prefix: str = "exogpu_tests"):
    """Import the file at ``path`` once and return the module."""
    path = Path(path).resolve()
    try:
        rel = path.relative_to(ROOT)
    except ValueError:
        rel = Path(*path.parts[-3:])
    name = prefix + "__" + "__".join(rel.with_suffix("").parts).replace("-", "_")
    with _LOADING:          # tests build kernels from threads: one import at a time
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
    session: in this process's memory, and on disk in the session's shared folder (see
    tests/conftest.py), so that pytest-xdist's workers verify each shipped kernel once
    between them (a worker that asks while another is verifying waits for its report). The
    timeout only guards against a hang: verify's default 60 s of wall-clock would turn a
    proof into ``checked`` on a loaded machine, and tests must not depend on time.

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
        def run():
            return verify(p, sizes=sizes, mode=mode, timeout_s=timeout_s)
        hit = _VERIFIED[key] = _shared_once("verify", repr(key), run)
    return hit


def concrete_cached(p, sizes: dict):
    """``check_sync_concrete(p, sizes)`` run to the end (no deadline), once per program text
    and sizes in the session (shared between workers like ``verify_cached``): the agreement
    tests check the smallest sizes of a shipped kernel in two tests."""
    from exogpu_verify.amir import check_sync_concrete
    from exogpu_verify.ir.printer import print_proc

    key = (print_proc(p), repr(sorted(sizes.items())), p.srcinfo.file)
    hit = _CONCRETE.get(key)
    if hit is None:
        hit = _CONCRETE[key] = _shared_once(
            "concrete", repr(key), lambda: check_sync_concrete(p, dict(sizes)))
    return hit


_CONCRETE: dict = {}


def _shared_once(kind: str, key: str, compute):
    """``compute()``, or the result another process of this session stored under ``key``
    (pickled in the shared folder, under a file lock held while computing). Without a shared
    folder, or for a result that does not pickle, just ``compute()``."""
    root = os.environ.get(SHARED_ENV)
    if not root or not Path(root).is_dir():
        return compute()
    from filelock import FileLock

    d = Path(root) / kind
    d.mkdir(exist_ok=True)
    path = d / (hashlib.sha256(key.encode()).hexdigest() + ".pkl")
    with FileLock(str(path) + ".lock"):
        if path.exists():
            return pickle.loads(path.read_bytes())
        out = compute()
        try:
            data = pickle.dumps(out)
        except Exception:  # noqa: BLE001 - not shareable: this process keeps its own copy
            return out
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return out
