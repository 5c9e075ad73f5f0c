"""Finding the procs to check: files and folders -> imported modules -> module-level procs.

Shared by ``exogpu-verify`` and ``exogpu-codegen``. Importing a user's module never raises:
a failure becomes a located ``Diagnostic``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .errors import ExoGpuError
from .ir.nodes import Procedure
from .report import Diagnostic


class UsageError(Exception):
    """Bad command-line usage (exit status 2)."""


def find_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files += sorted(f for f in path.rglob("*.py") if "__pycache__" not in f.parts)
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"no such file or folder: {p}")
    return files


def load_module(path: Path):
    """Import a file as a module; returns (module, None) or (None, Diagnostic)."""
    name = "exogpu_user_" + "_".join(path.with_suffix("").parts[-3:]).replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None, Diagnostic("usage", f"cannot import {path}", str(path), 1, 0)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(mod)
    except ExoGpuError as e:
        return None, e.diagnostic
    except SyntaxError as e:
        return None, Diagnostic("syntax", f"Python syntax error: {e.msg}", e.filename or str(path),
                                e.lineno, (e.offset or 1) - 1)
    except Exception as e:  # noqa: BLE001 - user module code failed; report, no traceback
        tb = e.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(path) or \
                    Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
                line = tb.tb_lineno
            tb = tb.tb_next
        return None, Diagnostic("usage", f"importing {path} raised {type(e).__name__}: {e}",
                                str(path), line, 0,
                                hint="the module must import cleanly before its procs can be "
                                     "checked")
    finally:
        sys.path.pop(0)
    return mod, None


def module_procs(mod) -> list[Procedure]:
    """Module-level procs defined in ``mod`` (instructions and imported procs excluded)."""
    out = []
    for v in vars(mod).values():
        if isinstance(v, Procedure) and not v.is_instr and v.module is vars(mod):
            if v not in out:
                out.append(v)
    return out
