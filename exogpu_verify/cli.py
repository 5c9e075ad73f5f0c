"""``exogpu-verify``: check every module-level proc in the given files and folders.

Exit status: 0 all proven or checked; 1 something refuted or a user error; 2 bad usage;
3 inconclusive (some verdict ``unknown``, nothing refuted).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .api import (MODES, assignment_at, module_setting_at, module_sizes_problems, size_problems,
                  timeout_for, verify)
from .errors import ExoGpuError
from .parallel import Failed, Job, context, default_jobs, inherits_memory, run_jobs
from .ir.nodes import Procedure
from .loader import (UsageError, ensure_folder, find_files, load_module, module_bindings,
                     module_procs, name_clashes)
from .report import Diagnostic, Report

EXIT_OK, EXIT_REFUTED, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


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
    ap.add_argument("--timeout", type=float, default=None, metavar="S",
                    help="wall-clock limit in seconds for each stage of a proc's check: the "
                         "all-size proof, and each concrete check (default: the module's "
                         "VERIFY_TIMEOUT, else 60)")
    ap.add_argument("--recheck", metavar="DIR",
                    help="re-derive every certificate's obligations in DIR from the program "
                         "it names, re-decide them (isl, Z3, cvc5), compare a scheduled "
                         "proc's chain of rewrites and replay it, and fail on any difference")
    ap.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                    help="check N procs (or certificates) at once, each in a worker process "
                         "(default: the number of cores, here "
                         f"{default_jobs()}); results and their order are those of -j 1")
    return ap


@dataclass
class Target:
    """One proc to check: where it is bound and under which module-level name."""

    file: Path
    name: str
    proc: Procedure
    #: the binding file's ``VERIFY_SIZES`` when the proc is defined in another module (a
    #: ``VARIANTS`` dict of procs a library generator builds): the spec module's sizes
    #: apply to the procs it binds (LANGUAGE.md); None when the proc's own module decides
    file_sizes: object = None

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
            here = vars(mod)
            targets += [Target(f, name, p, here.get("VERIFY_SIZES")
                               if "VERIFY_SIZES" in here and p.module is not here else None)
                        for name, p in bound]
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


def _sizes_for(targets: list[Target], sizes: dict | None, mode: str = "auto"
               ) -> dict[int, dict | None]:
    """The sizes each target is checked at (``None``: its module's VERIFY_SIZES); usage
    errors name the size: one no proc has, one a proc needs but is not given, values that
    violate a proc's asserts; without ``--sizes``, a module's VERIFY_SIZES whose values
    could not be checked at (named with its file and line, as a bad VERIFY_TIMEOUT is)."""
    if sizes is None:
        out: dict[int, dict | None] = {}
        for t in targets:
            out[id(t)] = None
            if mode == "symbolic":
                continue
            if t.file_sizes is not None:  # the spec module's sizes, for a proc built elsewhere
                vs = t.file_sizes
                problems = [f"VERIFY_SIZES = {vs!r} must be a dict of size name -> int"] \
                    if not isinstance(vs, dict) else []
                if not problems:
                    out[id(t)] = {k: v for k, v in vs.items()
                                  if isinstance(k, str) and t.proc.param(k) is not None}
                    problems = size_problems(t.proc, out[id(t)])
                where = f"{t.file}:{(assignment_at(t.file, 'VERIFY_SIZES') or (1,))[0]}"
            else:
                problems = module_sizes_problems(t.proc)
                si = module_setting_at(t.proc, "VERIFY_SIZES")
                where = f"{si.file}:{si.line}"
            if problems:
                raise UsageError(f"{where}: VERIFY_SIZES, the sizes {t.label} is "
                                 "checked at when its all-size proof is inconclusive: "
                                 + "; ".join(problems) + " (give each size parameter a "
                                 f"positive integer satisfying {t.label}'s asserts, or pass "
                                 "--sizes)")
        return out
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


def _timeouts_for(targets: list[Target], timeout: float | None) -> dict[int, float]:
    """Each target's per-stage limit: ``--timeout``, else its module's VERIFY_TIMEOUT, else
    60 s; a bad VERIFY_TIMEOUT is a usage error naming the file."""
    out = {}
    for t in targets:
        try:
            out[id(t)] = timeout_for(t.proc, timeout)
        except ExoGpuError as e:
            raise UsageError(f"{t.file}: {e.diagnostic.message}") from None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    from .output import Output

    out = Output(json_mode=args.json)
    if args.jobs is not None and args.jobs < 1:
        out.usage_error(f"-j/--jobs must be at least 1, got {args.jobs}")
        return EXIT_USAGE
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        out.usage_error(f"--timeout must be a positive number of seconds, got {args.timeout}")
        return EXIT_USAGE
    if args.recheck:
        try:
            return recheck_main(args, out)
        except KeyboardInterrupt:  # while importing a certificate's source
            out.interrupted(0, None, "certificate(s)")
            return EXIT_INTERRUPTED
    t0 = time.perf_counter()
    try:
        if not args.paths:
            raise UsageError("give at least one PATH (file or folder), or --recheck DIR")
        sizes = parse_sizes(args.sizes)
        if args.certificates and args.mode == "concrete":
            raise UsageError("--certificates needs proofs: use --mode auto or symbolic")
        find_files(args.paths)  # every PATH exists before anything is imported
        for opt, d in (("--certificates", args.certificates), ("--report", args.report)):
            if d:
                ensure_folder(opt, d, keep=False)
        targets, load_errors = _load(args, out)
        targets = _select(targets, args.proc)
        per_target = _sizes_for(targets, sizes, args.mode)
        timeouts = _timeouts_for(targets, args.timeout)
    except UsageError as e:
        out.usage_error(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:  # while importing the user's modules
        out.interrupted(0, None)
        return EXIT_INTERRUPTED
    reports: list[Report] = []
    cert_paths: dict = {}
    pages: list[tuple[str, str, str]] = []

    def handle(t: Target, r: Report) -> int:
        """Print one verdict and write what it earns; the number of errors doing so."""
        errors = 0
        reports.append(r)
        out.report(t.file, r, name=t.name)
        if args.certificates and r.verdict == "proven" and "obligations" in r.extra:
            errors += _write_certificate(t.proc, r, t.file, args.certificates, cert_paths, out)
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
        return errors

    jobs = default_jobs() if args.jobs is None else args.jobs
    try:
        if jobs == 1 or len(targets) < 2:
            for t in targets:
                if args.print_ir:
                    out.ir(t.file, t.name, str(t.proc))
                with out.progress(t.name):
                    r = verify(t.proc, sizes=per_target[id(t)], mode=args.mode,
                               timeout_s=timeouts[id(t)])
                load_errors += handle(t, r)
        else:
            for t, r in _verify_parallel(targets, per_target, timeouts, args, jobs, out):
                load_errors += handle(t, r)
    except KeyboardInterrupt:
        out.interrupted(len(reports), len(targets))
        return EXIT_INTERRUPTED
    if args.report:
        from .pictures import write_index

        write_index(args.report, pages)
    code = _exit_code(reports, load_errors)
    out.finish(reports, load_errors, time.perf_counter() - t0, code)
    return code


def hard_limit(timeout: float) -> float:
    """Seconds after which a worker is stopped: a proc's check has at most eight stages
    under ``--timeout`` (the proof, up to six replays of a counterexample, the fallback),
    plus the analyses and the lowering, which have no deadline of their own."""
    return 10 * timeout + 60


def _verify_job(file: Path, name: str, p: Procedure | None, sizes, mode: str,
                timeout: float) -> Report:
    """In a worker: ``verify`` one target (``p`` None: spawned, so re-import its file)."""
    if p is None:
        mod, diag = load_module(file)
        if diag is not None:
            raise RuntimeError(f"re-importing {file} in the worker failed: {diag.message}")
        p = dict(module_bindings(mod))[name]
    return verify(p, sizes=sizes, mode=mode, timeout_s=timeout)


def _verify_parallel(targets: list[Target], per_target: dict, timeouts: dict, args,
                     jobs: int, out):
    """``(target, report)`` in target order, each checked in a worker process."""
    ctx = context()
    inherit = inherits_memory(ctx)
    if inherit:
        _warm_imports()
    work = [Job(t.label, _verify_job, (t.file, t.name, t.proc if inherit else None,
                                      per_target[id(t)], args.mode, timeouts[id(t)]),
                hard_limit(timeouts[id(t)]))
            for t in targets]
    with out.bar(len(work), [t.name for t in targets]) as bar:
        for i, r in run_jobs(work, jobs, ctx, on_start=bar.start, on_done=bar.finish,
                             tick=bar.refresh):
            t = targets[i]
            if isinstance(r, Failed):
                r = _failed_report(t.proc, f"checking {t.label} in a worker", r)
            if args.print_ir:
                out.ir(t.file, t.name, str(t.proc))
            yield t, r


def _warm_imports() -> None:
    """Import the checkers and solvers once, before forking, not once per worker."""
    import cvc5  # noqa: F401
    import z3  # noqa: F401

    from .amir import check as _amir  # noqa: F401
    from .symbolic import check as _symbolic  # noqa: F401


def _failed_report(p: Procedure, what: str, f: Failed) -> Report:
    """``unknown`` for a job that gave no result; a crash is an internal error."""
    diags = (Diagnostic.at("internal", f"{what}: {f.why}", p.srcinfo),) if f.crashed else ()
    return Report(p.name, "unknown", diags, f"{what}: {f.why}")


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
    from .recheck import RecheckResult, read_certificate
    from .symbolic.certificates import cert_name

    d = Path(args.recheck)
    if d.is_file():
        out.usage_error(f"--recheck {args.recheck}: this is a file; --recheck takes the folder "
                        f"of certificates (--recheck {d.parent})")
        return EXIT_USAGE
    if not d.is_dir():
        out.usage_error(f"--recheck: no such folder {args.recheck}")
        return EXIT_USAGE
    files = sorted(d.glob("*.json"))
    if not files:
        out.usage_error(f"--recheck: no certificates (*.json) in {args.recheck}")
        return EXIT_USAGE
    modules: dict = {}
    results: list = []
    todo: list[tuple] = []  # (position, file, source, proc, timeout)
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
        want = cert_name(cands[0])
        if f.name != want:
            results.append(RecheckResult(f, False, [
                f"file name: this is the certificate of {data['proc']} of {data['source']}, "
                f"which is named {want}: the codegen gate looks it up by that name, so "
                f"rename the file to {want} (or re-run exogpu-verify --certificates)"],
                proc=data["proc"]))
            continue
        try:
            tmo = timeout_for(cands[0], args.timeout)
        except ExoGpuError as e:
            results.append(RecheckResult(f, False, [f"source {data['source']}: "
                                                    f"{e.diagnostic.message}"],
                                         proc=data["proc"]))
            continue
        todo.append((len(results), f, src, cands[0], tmo))
        results.append(None)
    try:
        for pos, r in _recheck_all(todo, args, out):
            results[pos] = r
    except KeyboardInterrupt:
        out.interrupted(sum(r is not None for r in results), len(results), "certificate(s)")
        return EXIT_INTERRUPTED
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


def _recheck_job(f: Path, src: Path, name: str, p: Procedure | None, timeout: float):
    """In a worker: re-check one certificate (``p`` None: spawned, so re-import ``src``)."""
    from .recheck import recheck_certificate

    if p is None:
        mod, diag = load_module(src)
        if diag is not None:
            raise RuntimeError(f"re-importing {src} in the worker failed: {diag.message}")
        [p] = [q for q in module_procs(mod) if q.name == name]
    return recheck_certificate(f, p, timeout)


def _recheck_all(todo: list, args, out):
    """``(position, RecheckResult)`` for each certificate to re-derive, in order; in worker
    processes with -j N."""
    from .recheck import RecheckResult, recheck_certificate

    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs == 1 or len(todo) < 2:
        for pos, f, _, p, tmo in todo:
            with out.progress(f.name):
                yield pos, recheck_certificate(f, p, tmo)
        return
    ctx = context()
    inherit = inherits_memory(ctx)
    if inherit:
        _warm_imports()
    work = [Job(f.name, _recheck_job, (f, src, p.name, p if inherit else None, tmo),
                hard_limit(tmo)) for _, f, src, p, tmo in todo]
    with out.bar(len(work), [t[1].name for t in todo]) as bar:
        for i, r in run_jobs(work, jobs, ctx, on_start=bar.start, on_done=bar.finish,
                             tick=bar.refresh):
            pos, f, _, p, _ = todo[i]
            if isinstance(r, Failed):
                r = RecheckResult(f, False, [f"re-checking it in a worker: {r.why}"],
                                  proc=p.name)
            yield pos, r


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
