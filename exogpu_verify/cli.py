"""``exogpu-verify``: check every module-level proc in the given files and folders.

Exit status: 0 all proven or checked; 1 something refuted or a user error; 2 bad usage;
3 inconclusive (some verdict ``unknown``, nothing refuted).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .api import MODES, size_problems, verify
from .ir.nodes import Procedure
from .loader import (UsageError, find_files, load_module, module_bindings, module_procs,
                     name_clashes)
from .report import Diagnostic, Report

EXIT_OK, EXIT_REFUTED, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


def parse_sizes(text: str | None) -> dict | None:
    """``N=4096,M=512`` -> ``{"N": 4096, "M": 512}`` (whether each value suits its proc,
    positive for a ``size``, satisfying the asserts, is checked per proc)."""
    if not text:
        return None
    out: dict[str, int] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, val = part.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise UsageError(f"--sizes: expected NAME=INT, got {part!r} (e.g. --sizes "
                             "N=4096,M=512)")
        try:
            v = int(val)
        except ValueError:
            raise UsageError(f"--sizes: {name} must be an integer, got {val.strip()!r}") from None
        if name in out:
            raise UsageError(f"--sizes: {name} is given twice")
        out[name] = v
    return out


def _exit_code(reports: list[Report], load_errors: int) -> int:
    if load_errors or any(r.verdict == "refuted" for r in reports):
        return EXIT_REFUTED
    if any(r.verdict == "unknown" for r in reports):
        return EXIT_UNKNOWN
    return EXIT_OK


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("exogpu")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="exogpu-verify",
        description="Check that every module-level proc in PATHs is race-free "
                    "(seq[p] == par[p]): proven for all sizes, or checked at the sizes given.",
        epilog="Exit status: 0 all proven or checked; 1 something refuted or a user error; "
               "2 bad usage (including PATHs with no proc and bad --sizes); 3 inconclusive.")
    ap.add_argument("paths", nargs="*", metavar="PATH", help="files or folders of .py modules")
    ap.add_argument("--version", action="version", version=f"exogpu-verify {_version()}")
    ap.add_argument("--proc", action="append", metavar="NAME", default=[],
                    help="check only this proc (its module-level name or its def name); "
                         "repeat or separate by commas for several")
    ap.add_argument("--sizes", help="concrete sizes, e.g. N=4096,M=512: every size parameter "
                    "of every proc checked (replaces the modules' VERIFY_SIZES)")
    ap.add_argument("--mode", choices=MODES, default="auto",
                    help="auto: all sizes, falling back to --sizes or VERIFY_SIZES (default); "
                         "symbolic: all sizes only; concrete: the sizes only")
    ap.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    ap.add_argument("--print-ir", action="store_true",
                    help="print each proc's IR (the text its certificate hashes) before its "
                         "verdict")
    ap.add_argument("--certificates", metavar="DIR",
                    help="write proof certificates for proven procs into DIR")
    ap.add_argument("--report", metavar="DIR",
                    help="write a picture per proc into DIR (SVG + HTML, and index.html): the "
                         "race of a refuted proc, the obligations of a proven one")
    ap.add_argument("--timeout", type=float, default=60.0, metavar="S",
                    help="wall-clock limit in seconds for each stage of a proc's check: the "
                         "all-size proof, and each concrete check (default 60)")
    ap.add_argument("--recheck", metavar="DIR",
                    help="re-derive every certificate's obligations in DIR from the program "
                         "it names, re-decide them (isl, Z3, cvc5), compare a scheduled "
                         "proc's chain of rewrites and replay it, and fail on any difference")
    return ap


@dataclass
class Target:
    """One proc to check: where it is bound and under which module-level name."""

    file: Path
    name: str
    proc: Procedure

    @property
    def label(self) -> str:
        return self.name if self.name == self.proc.name else f"{self.name} ({self.proc.name})"


def _load(args, out) -> tuple[list[Target], int]:
    """Import every file under the PATHs; the procs each binds, and the number of files that
    failed to load. A PATH that loads cleanly but binds no proc is a usage error."""
    targets: list[Target] = []
    load_errors = 0
    seen: dict[Path, tuple[int, list[str]]] = {}  # a file named twice is loaded once
    for arg in args.paths:
        found, errors_before = 0, load_errors
        imported: list[str] = []
        files = find_files([arg])
        for f in files:
            key = f.resolve()
            if key in seen:
                found += seen[key][0]
                imported += seen[key][1]
                continue
            mod, diag = load_module(f)
            if diag is not None:
                load_errors += 1
                out.load_error(f, diag)
                seen[key] = (0, [])
                continue
            bound = module_bindings(mod)
            # reports name procs by binding; but certificates are named by the proc's name,
            # so different procs sharing one would share a certificate
            clashes = name_clashes(mod, list({id(p): p for _, p in bound}.values())) \
                if args.certificates else {}
            for d in clashes.values():
                load_errors += 1
                out.load_error(f, d)
            bound = [(name, p) for name, p in bound if p.name not in clashes]
            targets += [Target(f, name, p) for name, p in bound]
            only = [k for k, v in vars(mod).items() if isinstance(v, Procedure)
                    and not v.is_instr and all(v is not p for _, p in bound)]
            seen[key] = (len(bound), only)
            found += len(bound)
            imported += only
        if not found and load_errors == errors_before:
            what = "file" if Path(arg).is_file() else f"folder ({len(files)} .py files)"
            why = (f" ({', '.join(sorted(set(imported)))} only imported: procs are checked in "
                   "the module that builds them)") if imported else ""
            raise UsageError(f"{arg}: no @proc in this {what}{why}; decorate the kernel's def "
                             "with @proc (from exogpu_verify import *), or bind a proc a "
                             "factory builds at module level (gemm = make_gemm(...))")
    return targets, load_errors


def _select(targets: list[Target], wanted: list[str]) -> list[Target]:
    names = [n.strip() for w in wanted for n in w.split(",") if n.strip()]
    if not names:
        return targets
    unknown = [n for n in names if not any(n in (t.name, t.proc.name) for t in targets)]
    if unknown:
        have = ", ".join(sorted({t.name for t in targets})) or "none"
        raise UsageError(f"--proc {', '.join(unknown)}: no such proc in the PATHs "
                         f"(procs: {have})")
    return [t for t in targets if t.name in names or t.proc.name in names]


def _sizes_for(targets: list[Target], sizes: dict | None) -> dict[int, dict | None]:
    """The sizes each target is checked at (``None``: its module's VERIFY_SIZES); usage
    errors name the size: one no proc has, one a proc needs but is not given, values that
    violate a proc's asserts."""
    if sizes is None:
        return {id(t): None for t in targets}
    known = {prm.name for t in targets for prm in t.proc.params if not prm.is_data}
    for k in sizes:
        if k not in known:
            raise UsageError(f"--sizes: no proc checked has a size parameter {k!r} "
                             f"(their size parameters: {', '.join(sorted(known)) or 'none'})")
    out = {}
    for t in targets:
        mine = {k: v for k, v in sizes.items() if t.proc.param(k) is not None}
        problems = size_problems(t.proc, mine)
        if problems:
            raise UsageError(f"--sizes for {t.file}::{t.label}: " + "; ".join(problems))
        out[id(t)] = mine
    return out


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    from .output import Output

    out = Output(json_mode=args.json)
    if args.recheck:
        return recheck_main(args, out)
    t0 = time.perf_counter()
    try:
        if not args.paths:
            raise UsageError("give at least one PATH (file or folder), or --recheck DIR")
        sizes = parse_sizes(args.sizes)
        if args.timeout <= 0:
            raise UsageError("--timeout must be positive")
        if args.certificates and args.mode == "concrete":
            raise UsageError("--certificates needs proofs: use --mode auto or symbolic")
        find_files(args.paths)  # every PATH exists before anything is imported
        targets, load_errors = _load(args, out)
        targets = _select(targets, args.proc)
        per_target = _sizes_for(targets, sizes)
    except UsageError as e:
        out.usage_error(str(e))
        return EXIT_USAGE
    reports: list[Report] = []
    cert_paths: dict = {}
    pages: list[tuple[str, str, str]] = []
    for t in targets:
        if args.print_ir:
            out.ir(t.file, t.name, str(t.proc))
        with out.progress(t.name):
            r = verify(t.proc, sizes=per_target[id(t)], mode=args.mode, timeout_s=args.timeout)
        reports.append(r)
        out.report(t.file, r, name=t.name)
        if args.certificates and r.verdict == "proven" and "obligations" in r.extra:
            load_errors += _write_certificate(t.proc, r, t.file, args.certificates,
                                              cert_paths, out)
        if args.report:
            from .pictures import write_picture

            page = f"{t.file.stem}.{t.name}"
            try:
                out.picture(write_picture(t.proc, r, args.report, page,
                                          where=f"{t.file}::{t.name}"))
                pages.append((page, r.verdict, f"{t.file}::{t.name}"))
            except Exception as e:  # noqa: BLE001 - a bug in exogpu: say so, keep checking
                out.internal_error(f"--report: drawing {t.name} failed: "
                                   f"{type(e).__name__}: {e} (this is a bug in exogpu)")
    if args.report:
        from .pictures import write_index

        write_index(args.report, pages)
    code = _exit_code(reports, load_errors)
    out.finish(reports, load_errors, time.perf_counter() - t0, code)
    return code


def _write_certificate(p, r: Report, f: Path, proof_dir: str, seen: dict, out) -> int:
    """Write ``p``'s certificate; 1 (an error) when another proc of this run already wrote
    the same certificate file (same file stem and proc name in two folders)."""
    from types import SimpleNamespace

    from .symbolic.certificates import cert_name, write_certificate

    name = cert_name(p)
    if name in seen and seen[name] != (str(f), p.name):
        out.load_error(f, Diagnostic.at(
            "usage", f"the certificate {name} was already written for {seen[name][1]} of "
            f"{seen[name][0]} in this run", p.srcinfo,
            hint="certificates are named <file stem>.<proc>.json: rename the file or the proc, "
                 "or write the two folders' certificates into different --certificates folders"))
        return 1
    seen[name] = (str(f), p.name)
    write_certificate(p, SimpleNamespace(verdict="proven", obligations=r.extra["obligations"]),
                      proof_dir, source=str(f))
    return 0


def _find_source(source: str, cert: Path) -> Path | None:
    """The source a certificate names: relative to the current folder (where it was
    written from), else to the folder above the certificates' folder."""
    for base in (Path.cwd(), cert.resolve().parent.parent):
        cand = base / source
        if cand.is_file():
            return cand
    return None


def recheck_main(args, out) -> int:
    """``--recheck DIR``: every certificate re-derived from its program; see recheck.py."""
    from .recheck import RecheckResult, read_certificate, recheck_certificate

    d = Path(args.recheck)
    if not d.is_dir():
        out.usage_error(f"--recheck: no such folder {args.recheck}")
        return EXIT_USAGE
    files = sorted(d.glob("*.json"))
    if not files:
        out.usage_error(f"--recheck: no certificates (*.json) in {args.recheck}")
        return EXIT_USAGE
    modules: dict = {}
    results = []
    for f in files:
        data, problems = read_certificate(f)
        if data is None or problems:
            results.append(RecheckResult(f, False, problems))
            continue
        src = _find_source(data["source"], f)
        if src is None:
            results.append(RecheckResult(f, False, [
                f"source: {data['source']!r} not found (looked in {Path.cwd()} and in "
                f"{f.resolve().parent.parent})"], proc=data["proc"]))
            continue
        key = src.resolve()
        if key not in modules:
            mod, diag = load_module(src)
            modules[key] = (None, diag.message) if mod is None else \
                (module_procs(mod), None)
        procs, err = modules[key]
        if err is not None:
            results.append(RecheckResult(f, False, [f"source {data['source']}: cannot import "
                                                    f"it: {err}"], proc=data["proc"]))
            continue
        cands = [p for p in procs if p.name == data["proc"]]
        if len(cands) != 1:
            names = ", ".join(sorted({p.name for p in procs})) or "none"
            why = (f"proc: {data['source']} defines no module-level proc named "
                   f"{data['proc']!r} (it defines: {names})") if not cands else \
                (f"proc: {data['source']} defines {len(cands)} different procs named "
                 f"{data['proc']!r}; give each its own name (exogpu_verify.schedule.rename)")
            results.append(RecheckResult(f, False, [why], proc=data["proc"]))
            continue
        results.append(recheck_certificate(f, cands[0], args.timeout))
    bad = sum(not r.ok for r in results)
    if args.json:
        print(json.dumps({"exit_code": EXIT_REFUTED if bad else EXIT_OK, "certificates": [
            {"file": str(r.path), "proc": r.proc, "ok": r.ok, "obligations": r.obligations,
             "derivation": r.derivation, "problems": r.problems,
             "seconds": round(r.seconds, 3)} for r in results]},
            indent=2))
    else:
        from rich.markup import escape

        for r in results:
            label, style = ("ok", "bold green") if r.ok else ("FAILED", "bold red")
            what = f"{r.obligations} obligations re-derived and re-decided" if r.ok else \
                f"{len(r.problems)} problem(s)"
            out.console.print(f"[{style}]{label:>8}[/]  {escape(str(r.path))}  ({what}, "
                              f"{r.seconds:.2f}s)")
            if r.ok and r.derivation:
                out.console.print(f"          [dim]{escape(r.derivation)}[/]")
            for prob in r.problems:
                out.console.print(f"          {escape(prob)}")
        out.console.print(f"{len(results)} certificate(s): {len(results) - bad} ok, {bad} failed")
    return EXIT_REFUTED if bad else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
