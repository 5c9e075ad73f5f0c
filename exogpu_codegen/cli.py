"""``exogpu-codegen PATH... [-o DIR] [--arch sm_90a|sm_80] [--no-build] [--unchecked]
[--allow-unhealthy]``.

Generates ``DIR/<proc>.cu`` for every module-level proc of the given files/folders and builds
each with nvcc (``DIR/<proc>.so``), printing ptxas' report (registers, stack frame, spills,
performance warnings) and the health rules of ``health.py`` (SASS: no local memory, wgmma not
serialized). Exit status as for ``exogpu-verify``: 0 all generated (and built healthy), 1 a
user error, a refusal by the proof gate or an unhealthy build, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from exogpu_verify.loader import (UsageError, find_files, load_module, module_bindings,
                                    name_clashes)
from exogpu_verify.errors import ExoGpuError

from .build import build
from .errors import usage
from .generate import ARCHS, generate
from .health import check_health

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


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
        files = find_files(args.paths)
    except UsageError as e:
        print(f"exogpu-codegen: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    errors = 0
    summary = []
    for f in files:
        mod, diag = load_module(f)
        if diag is not None:
            print(diag.render(), file=sys.stderr)
            errors += 1
            continue
        bound = module_bindings(mod)
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
                src.write_text(g.source)
                rec["source"] = str(src)
                line = f"{name}: {src}"
                if not args.no_build:
                    b = build(g.source, p.name, args.arch,
                              dynamic_smem={k.name: k.smem_bytes for k in g.kernels})
                    lib = out / f"{name}.so"
                    lib.write_bytes(b.library.read_bytes())
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
    if args.json:
        print(json.dumps(summary, indent=2))
    return EXIT_ERROR if errors else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
