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
from .loader import UsageError, find_files, load_module, module_procs
from .report import Report

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
                    help="re-run every obligation of the certificates in DIR in fresh solvers "
                         "and fail on any mismatch or stale program hash")
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
    for f in files:
        mod, diag = load_module(f)
        if diag is not None:
            load_errors += 1
            out.load_error(f, diag)
            continue
        for p in module_procs(mod):
            with out.progress(p.name):
                r = verify(p, sizes=sizes, mode=args.mode, timeout_s=args.timeout)
            reports.append(r)
            out.report(f, r)
            if args.certificates and r.verdict == "proven" and "obligations" in r.extra:
                from types import SimpleNamespace

                from .symbolic.certificates import write_certificate

                write_certificate(p, SimpleNamespace(verdict="proven",
                                                     obligations=r.extra["obligations"]),
                                  args.certificates)
    code = _exit_code(reports, load_errors)
    out.finish(reports, load_errors, time.perf_counter() - t0, code)
    return code


def recheck_main(args, out) -> int:
    """``--recheck DIR``: every certificate re-derived and re-solved; stale hashes fail."""
    from .symbolic.certificates import recheck_file

    d = Path(args.recheck)
    if not d.is_dir():
        out.usage_error(f"--recheck: no such folder {args.recheck}")
        return EXIT_USAGE
    files = sorted(d.glob("*.json"))
    if not files:
        out.usage_error(f"--recheck: no certificates (*.json) in {args.recheck}")
        return EXIT_USAGE
    procs: dict = {}
    import json as _json

    sources = {_json.loads(f.read_text()).get("source") for f in files}
    for src in sorted(s for s in sources if s):
        path = Path(src)
        if not path.is_file():
            continue
        mod, diag = load_module(path)
        if mod is None:
            continue
        for p in module_procs(mod):
            procs[(src, p.name)] = p
    bad = 0
    results = []
    for f in files:
        r = recheck_file(f, int(args.timeout * 1000), procs)
        results.append(r)
        bad += not r.ok
    if args.json:
        print(json.dumps({"exit_code": EXIT_REFUTED if bad else EXIT_OK, "certificates": [
            {"file": str(r.path), "ok": r.ok, "obligations": r.obligations,
             "problems": r.problems} for r in results]}, indent=2))
    else:
        for r in results:
            status = "ok" if r.ok else "FAILED"
            out.console.print(f"{status:>8}  {r.path}  ({r.obligations} obligations re-checked)")
            for prob in r.problems:
                out.console.print(f"          {prob}")
        out.console.print(f"{len(results)} certificate(s): {len(results) - bad} ok, {bad} failed")
    return EXIT_REFUTED if bad else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
