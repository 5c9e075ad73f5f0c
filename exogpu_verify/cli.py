"""``exogpu-verify``: check every module-level proc in the given files and folders.

Exit status: 0 all proven or checked; 1 something refuted or a user error; 2 bad usage;
3 inconclusive (some verdict ``unknown``, nothing refuted).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .api import MODES, verify
from .loader import UsageError, distinct_procs, find_files, load_module, module_procs
from .report import Diagnostic, Report

EXIT_OK, EXIT_REFUTED, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


def parse_sizes(text: str | None) -> dict | None:
    """``N=4096,M=512`` -> ``{"N": 4096, "M": 512}``."""
    if not text:
        return None
    out = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, val = part.partition("=")
        if not eq or not name.strip().isidentifier():
            raise UsageError(f"--sizes: expected NAME=INT, got {part!r} (e.g. --sizes N=4096,M=512)")
        try:
            v = int(val)
        except ValueError:
            raise UsageError(f"--sizes: {name.strip()} must be an integer, got {val!r}") from None
        if v <= 0:
            raise UsageError(f"--sizes: {name.strip()} must be positive, got {v}")
        out[name.strip()] = v
    return out


def _exit_code(reports: list[Report], load_errors: int) -> int:
    if load_errors or any(r.verdict == "refuted" for r in reports):
        return EXIT_REFUTED
    if any(r.verdict == "unknown" for r in reports):
        return EXIT_UNKNOWN
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="exogpu-verify",
        description="Check that every module-level proc in PATHs is race-free "
                    "(seq[p] == par[p]).")
    ap.add_argument("paths", nargs="*", metavar="PATH", help="files or folders of .py modules")
    ap.add_argument("--sizes", help="concrete sizes, e.g. N=4096,M=512")
    ap.add_argument("--mode", choices=MODES, default="auto")
    ap.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    ap.add_argument("--certificates", metavar="DIR",
                    help="write proof certificates for proven procs into DIR")
    ap.add_argument("--timeout", type=float, default=60.0, metavar="S",
                    help="solver timeout per proc in seconds (default 60)")
    ap.add_argument("--recheck", metavar="DIR",
                    help="re-derive every certificate's obligations in DIR from the program "
                         "it names, re-decide them (isl, Z3, cvc5) and fail on any difference")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    from .output import Output

    out = Output(json_mode=args.json)
    if args.recheck:
        return recheck_main(args, out)
    try:
        if not args.paths:
            raise UsageError("give at least one PATH (file or folder), or --recheck DIR")
        sizes = parse_sizes(args.sizes)
        files = find_files(args.paths)
        if args.timeout <= 0:
            raise UsageError("--timeout must be positive")
        if args.certificates and args.mode == "concrete":
            raise UsageError("--certificates needs proofs: use --mode auto or symbolic")
    except UsageError as e:
        out.usage_error(str(e))
        return EXIT_USAGE
    if not files:
        out.usage_error(f"no .py files under {' '.join(args.paths)}")
        return EXIT_USAGE
    reports: list[Report] = []
    load_errors = 0
    t0 = time.perf_counter()
    cert_paths: dict = {}
    for f in files:
        mod, diag = load_module(f)
        if diag is not None:
            load_errors += 1
            out.load_error(f, diag)
            continue
        procs, clashes = distinct_procs(mod)
        for d in clashes:
            load_errors += 1
            out.load_error(f, d)
        for p in procs:
            with out.progress(p.name):
                r = verify(p, sizes=sizes, mode=args.mode, timeout_s=args.timeout)
            reports.append(r)
            out.report(f, r)
            if args.certificates and r.verdict == "proven" and "obligations" in r.extra:
                load_errors += _write_certificate(p, r, f, args.certificates, cert_paths, out)
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
             "problems": r.problems, "seconds": round(r.seconds, 3)} for r in results]},
            indent=2))
    else:
        from rich.markup import escape

        for r in results:
            label, style = ("ok", "bold green") if r.ok else ("FAILED", "bold red")
            what = f"{r.obligations} obligations re-derived and re-decided" if r.ok else \
                f"{len(r.problems)} problem(s)"
            out.console.print(f"[{style}]{label:>8}[/]  {escape(str(r.path))}  ({what}, "
                              f"{r.seconds:.2f}s)")
            for prob in r.problems:
                out.console.print(f"          {escape(prob)}")
        out.console.print(f"{len(results)} certificate(s): {len(results) - bad} ok, {bad} failed")
    return EXIT_REFUTED if bad else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
