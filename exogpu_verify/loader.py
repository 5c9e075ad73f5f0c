"""Finding the procs to check: files and folders -> imported modules -> module-level procs.

Shared by ``exogpu-verify`` and ``exogpu-codegen``. Importing a user's module never raises:
a failure becomes a located ``Diagnostic``.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib.util
import os
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


def ensure_folder(opt: str, d: str, keep: bool = True) -> None:
    """Check that files can be written into the output folder ``d`` of option ``opt``, before
    any proc is checked, or raise a ``UsageError`` naming the option and why. The folders made
    to find out are removed again unless ``keep`` (a run that writes nothing leaves none)."""
    path = Path(d)
    made = [q for q in [path, *path.parents] if not q.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".exogpu-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        why = "it is a file, not a folder" if path.exists() and not path.is_dir() else \
            (e.strerror or str(e))
        raise UsageError(f"{opt} {d}: cannot write there ({why}); name a folder you can "
                         "write to") from None
    finally:
        for q in made if not keep else ():
            with contextlib.suppress(OSError):
                q.rmdir()


def load_module(path: Path):
    """Import a file as a module; returns (module, None) or (None, Diagnostic)."""
    name = "exogpu_user_" + "_".join(path.with_suffix("").parts[-3:]).replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None, Diagnostic("usage", f"cannot import {path}: it is not a Python module "
                                "(.py)", str(path), None, None,
                                hint="name the .py files (or their folders) that define the "
                                     "procs")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(mod)
    except ExoGpuError as e:
        d = e.diagnostic
        if d.file is None:  # raised without a location (e.g. ``proc(lambda: ...)``)
            d = dataclasses.replace(d, file=str(path), line=_user_line(e, path), col=0)
        return None, d
    except SyntaxError as e:
        return None, Diagnostic("syntax", f"Python syntax error: {e.msg}", e.filename or str(path),
                                e.lineno or None, (e.offset or 1) - 1)
    except SystemExit as e:  # sys.exit() at import: would end exogpu-verify silently
        return None, Diagnostic("usage", f"importing {path} called sys.exit({e.code!r})",
                                str(path), _user_line(e, path), 0,
                                hint="a module whose procs are checked must not exit when "
                                     "imported: put script code under "
                                     "`if __name__ == \"__main__\":`")
    except Exception as e:  # noqa: BLE001 - user module code failed; report, no traceback
        return None, Diagnostic("usage", f"importing {path} raised {type(e).__name__}: {e}",
                                str(path), _user_line(e, path), 0,
                                hint="the module must import cleanly before its procs can be "
                                     "checked")
    finally:
        sys.path.pop(0)
    return mod, None


def _user_line(e: BaseException, path: Path) -> int | None:
    """The last line of ``path`` on the traceback of ``e`` (where the user's code raised)."""
    tb = e.__traceback__
    line = None
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if fn == str(path) or Path(fn).resolve() == path.resolve():
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def module_bindings(mod) -> list[tuple[str, Procedure]]:
    """``(name, proc)`` for every proc bound at module level in ``mod``, in binding order.

    A proc counts wherever it was built: by a ``def`` in this module, or by a call such as
    ``gemm = make_gemm(cfg)`` whose factory lives in another module. A proc that is only
    imported (``from kernels import gemm``) belongs to the module that binds it and is not
    counted again here. Instructions (``@instr``) are not procs to check. The first name
    bound to a proc wins when several names refer to it.
    """
    local, imported, stars = _top_level_names(getattr(mod, "__file__", None))
    star_mods = [m for m in (sys.modules.get(n) for n in stars) if m is not None]
    out: list[tuple[str, Procedure]] = []
    seen: list[Procedure] = []
    for name, v in vars(mod).items():
        if not isinstance(v, Procedure) or v.is_instr or name.startswith("__"):
            continue
        # built here (by a def, a local factory, or an assignment) unless it came by an import
        # (named, or ``from m import *`` of a module that binds the same proc); a name bound
        # dynamically (``globals()[n] = make(n)``) counts
        came_by_star = any(getattr(m, name, None) is v for m in star_mods)
        if not (v.module is vars(mod) or name in local
                or (name not in imported and not came_by_star)):
            continue
        if any(v is q or v == q for q in seen):
            continue
        seen.append(v)
        out.append((name, v))
    return out


def module_procs(mod) -> list[Procedure]:
    """The procs of ``module_bindings(mod)``."""
    return [p for _, p in module_bindings(mod)]


def _top_level_names(file) -> tuple[set[str], set[str], list[str]]:
    """(names bound by assignments, defs, loop and ``with`` targets; names bound by
    ``import``; the modules of ``from m import *``) of a module's top-level code, looking
    inside top-level ``if``/``try``/``for``/``with`` blocks."""
    names: set[str] = set()
    imported: set[str] = set()
    stars: list[str] = []
    if not file:
        return names, imported, stars
    try:
        tree = ast.parse(Path(file).read_text(), filename=str(file))
    except (OSError, SyntaxError, ValueError):
        return names, imported, stars

    def targets(t):
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for x in t.elts:
                targets(x)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    def block(stmts):
        for st in stmts:
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    if a.name == "*":
                        stars.append(st.module or "")
                    else:
                        imported.add(a.asname or a.name.split(".")[0])
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(st.name)
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    targets(t)
            elif isinstance(st, (ast.AnnAssign, ast.AugAssign)):
                targets(st.target)
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                targets(st.target)
                block(st.body)
                block(st.orelse)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for it in st.items:
                    if it.optional_vars is not None:
                        targets(it.optional_vars)
                block(st.body)
            elif isinstance(st, ast.If):
                block(st.body)
                block(st.orelse)
            elif isinstance(st, ast.Try):
                block(st.body)
                for h in st.handlers:
                    block(h.body)
                block(st.orelse)
                block(st.finalbody)
            for node in ast.walk(st) if isinstance(st, (ast.Assign, ast.AnnAssign, ast.Expr,
                                                          ast.AugAssign)) else ():
                if isinstance(node, ast.NamedExpr):
                    targets(node.target)

    block(tree.body)
    return names, imported, stars


def name_clashes(mod, procs: list[Procedure]) -> dict[str, Diagnostic]:
    """One ``usage`` diagnostic per name that several different procs of ``mod`` share
    (typically procs built by one factory function): they would share one certificate, so
    the tools refuse them where certificates are written or read (``exogpu-verify
    --certificates``, the codegen gate) instead of guessing."""
    by: dict[str, list[Procedure]] = {}
    for p in procs:
        by.setdefault(p.name, []).append(p)
    out = {}
    for name, ps in by.items():
        if len(ps) < 2:
            continue
        binds = [k for k, v in vars(mod).items() if any(v is p for p in ps)]
        si = ps[-1].srcinfo
        out[name] = (Diagnostic.at(
            "usage", f"{len(ps)} different procs are named '{name}' (module-level names "
            f"{', '.join(binds)}): they would share one certificate", si,
            hint="give each proc its own name: derive the name from the factory's parameters "
                 "with rename (from exogpu_verify.schedule import rename; e.g. "
                 f"`{binds[-1] if binds else 'p'} = rename(make(...), "
                 f"\"{binds[-1] if binds else name + '_2'}\")`)"))
    return out


def distinct_procs(mod) -> tuple[list[Procedure], list[Diagnostic]]:
    """Module-level procs of ``mod`` whose names are unique, and the name clashes."""
    procs = module_procs(mod)
    clashes = name_clashes(mod, procs)
    return [p for p in procs if p.name not in clashes], list(clashes.values())
