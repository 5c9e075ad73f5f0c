"""``exogpu-codegen PATH... [-o DIR] [--arch sm_90a|sm_80] [--no-build] [--unchecked]
[--allow-unhealthy]``.

Generates ``DIR/<proc>.cu`` for every module-level proc of the given files/folders and builds
each with nvcc (``DIR/<proc>.so``), printing ptxas' report (registers, stack frame, spills,
performance warnings) and the health rules of ``health.py`` (SASS: no local memory, wgmma not
serialized). Exit status as for ``exogpu-verify``: 0 all generated (and built healthy), 1 a
user error, a refusal by the proof gate, an unhealthy build or no working nvcc (reported
once, before anything is generated), 2 bad usage (including PATHs without a proc and an
output folder that cannot be written), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from exogpu_verify.loader import (UsageError, ensure_folder, find_files, load_module,
                                  module_bindings, name_clashes)
from exogpu_verify.errors import ExoGpuError

from .build import build, find_nvcc, nvcc_version
from .errors import usage
from .generate import ARCHS, generate
from .health import check_health

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="exogpu-codegen",
                                 description="Generate CUDA C++ for every module-level proc "
                                             "in PATHs and build it with nvcc.")
    ap.add_argument("paths", nargs="+", metavar="PATH", help="files or folders of .py modules")
    ap.add_argument("-o", "--output", default="exogpu_out", metavar="DIR",
                    help="output folder (default: exogpu_out)")
    ap.add_argument("--arch", choices=ARCHS, default="sm_90a")
    ap.add_argument("--no-build", action="store_true", help="emit sources only")
    ap.add_argument("--unchecked", action="store_true",
                    help="skip the proof gate (stamped into the generated header)")
    ap.add_argument("--certificates", metavar="DIR", default=None,
                    help="where proof certificates are (default: $EXOGPU_PROOF_DIR or proofs)")
    ap.add_argument("--allow-unhealthy", action="store_true",
                    help="keep builds that use local memory (stack frame, spills, LDL/STL) or "
                         "serialize wgmma (ptxas C7514); by default they fail")
    ap.add_argument("--json", action="store_true", help="print a JSON summary")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code not in (0, None) else EXIT_OK
    try:
        return _run(args)
    except UsageError as e:
        print(f"exogpu-codegen: usage error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("exogpu-codegen: interrupted (Ctrl-C); nothing more was generated",
              file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(args) -> int:
    files = find_files(args.paths)
    ensure_folder("-o/--output", args.output)
    out = Path(args.output)
    if not args.no_build:
        try:  # once, not once per proc: without nvcc no proc builds
            nvcc_version(find_nvcc())
        except ExoGpuError as e:
            print(f"exogpu-codegen: {e.diagnostic.message}", file=sys.stderr)
            if e.diagnostic.hint:
                print(f"  hint: {e.diagnostic.hint}", file=sys.stderr)
            return EXIT_ERROR
    errors = 0
    summary = []
    found = 0
    for f in files:
        mod, diag = load_module(f)
        if diag is not None:
            print(diag.render(), file=sys.stderr)
            errors += 1
            continue
        bound = module_bindings(mod)
        found += len(bound)
        # sources are named by binding, but the proof gate finds certificates by the proc's
        # name: different procs sharing one cannot both pass it
        clashes = {} if args.unchecked else \
            name_clashes(mod, list({id(p): p for _, p in bound}.values()))
        for d in clashes.values():
            print(d.render(), file=sys.stderr)
            errors += 1
            summary.append({"file": str(f), "ok": False, "error": d.to_json()})
        # files are named by the module-level binding: procs a factory builds share a def name
        for name, p in bound:
            if p.name in clashes:
                continue
            rec = {"proc": p.name, "name": name, "file": str(f)}
            try:
                g = generate(p, arch=args.arch, unchecked=args.unchecked,
                             proof_dir=args.certificates)
                src = out / f"{name}.cu"
                _write(src, g.source)
                rec["source"] = str(src)
                line = f"{name}: {src}"
                if not args.no_build:
                    b = build(g.source, p.name, args.arch,
                              dynamic_smem={k.name: k.smem_bytes for k in g.kernels})
                    lib = out / f"{name}.so"
                    _write(lib, b.library.read_bytes())
                    rec["library"] = str(lib)
                    rec["resources"] = [r.to_json() for r in b.resources]
                    res = "; ".join(r.summary() for r in b.resources)
                    line += f" -> {lib}" + (f" ({res})" if res else "")
                    h = check_health(b)
                    rec["health"] = {"ok": h.ok, "sass_checked": h.sass_checked,
                                     "issues": [vars(i) for i in h.issues],
                                     "sass": {k: v.to_json() for k, v in h.sass.items()}}
                    for i in h.issues:
                        sev = "error" if i.error and not args.allow_unhealthy else "warning"
                        print(f"{p.name}: {i.kernel}: health {sev}: {i.message}",
                              file=sys.stderr)
                    if h.note:
                        print(f"{p.name}: note: {h.note}", file=sys.stderr)
                    if h.errors and not args.allow_unhealthy:
                        if not args.json:
                            print(line)
                        raise usage(f"{p.name}: the build is not healthy ({len(h.errors)} "
                                    "problem(s) above: local memory or serialized wgmma)",
                                    hint="fix the kernel, or pass --allow-unhealthy to keep it")
                if not g.gate.checked:
                    line += "  [UNCHECKED]"
                elif g.gate.derivation:
                    line += f"\n  {g.gate.derivation}"
                    rec["derivation"] = g.gate.derivation
                rec["ok"] = True
                if not args.json:
                    print(line)
            except ExoGpuError as e:
                errors += 1
                rec["ok"] = False
                rec["error"] = e.diagnostic.to_json()
                print(e.diagnostic.render(), file=sys.stderr)
            except Exception as e:  # noqa: BLE001 - a bug in exogpu: report, no traceback
                errors += 1
                rec["ok"] = False
                rec["error"] = {"kind": "internal", "message": f"{type(e).__name__}: {e}"}
                print(f"{f}: {p.name}: internal error (this is a bug in exogpu-codegen): "
                      f"{type(e).__name__}: {e}", file=sys.stderr)
            summary.append(rec)
    if not found and not errors:
        raise UsageError(f"no @proc in {', '.join(args.paths)} ({len(files)} .py files); "
                         "decorate the kernel's def with @proc (from exogpu_verify import *), "
                         "or bind a proc a factory builds at module level "
                         "(gemm = make_gemm(...))")
    if args.json:
        print(json.dumps(summary, indent=2))
    return EXIT_ERROR if errors else EXIT_OK


def _write(path: Path, data: str | bytes) -> None:
    """Write an output file; a path that cannot take it is the user's error, named."""
    try:
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
    except OSError as e:
        why = "a folder is in the way" if path.is_dir() else (e.strerror or str(e))
        raise usage(f"cannot write {path} ({why})",
                    hint="choose another output folder with -o DIR, or remove what is there")


if __name__ == "__main__":
    sys.exit(main())
