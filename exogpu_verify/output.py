"""Terminal and JSON output of ``exogpu-verify`` (rich for people, plain JSON for machines)."""

from __future__ import annotations

import contextlib
import json
import sys
import threading

from rich.console import Console
from rich.markup import escape

from .report import Report, sizes_text
from .errors import Diagnostic, render

_STYLE = {"proven": "bold green", "checked": "green", "refuted": "bold red",
          "unknown": "yellow"}


class Output:
    def __init__(self, json_mode: bool):
        self.json_mode = json_mode
        self.console = Console(stderr=False, highlight=False, soft_wrap=True)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self.items: list[dict] = []
        self.errors: list[dict] = []
        self._ir: dict[str, str] = {}

    def usage_error(self, msg: str) -> None:
        if self.json_mode:
            print(json.dumps({"error": "usage", "message": msg}))
        else:
            self.err.print(f"[bold red]exogpu-verify: usage error:[/] {escape(msg)}")

    def internal_error(self, msg: str) -> None:
        if self.json_mode:
            self.errors.append({"internal": msg})
        else:
            self.err.print(f"[bold red]exogpu-verify: internal error:[/] {escape(msg)}")

    def load_error(self, path, d: Diagnostic) -> None:
        if self.json_mode:
            self.errors.append({"file": str(path), "diagnostic": d.to_json()})
            return
        self.console.print(f"[bold red]error[/] loading {escape(str(path))}")
        self.console.print(escape(render(d)))

    @contextlib.contextmanager
    def progress(self, name: str):
        """A spinner for checks that take more than a second, on a terminal only."""
        if self.json_mode or not self.console.is_terminal:
            yield
            return
        done = threading.Event()
        status = None

        def show():
            nonlocal status
            if not done.wait(1.0):
                status = self.console.status(f"checking {name} ...")
                status.start()

        th = threading.Thread(target=show, daemon=True)
        th.start()
        try:
            yield
        finally:
            done.set()
            th.join()
            if status is not None:
                status.stop()

    @contextlib.contextmanager
    def bar(self, total: int, names: list[str]):
        """A progress bar over ``total`` jobs (``names[i]`` is job ``i``), on a terminal only
        and never with --json. It draws only when told (``refresh``): no thread runs while
        worker processes are forked."""
        if self.json_mode or not self.console.is_terminal:
            yield _NoBar()
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                                   TextColumn, TimeElapsedColumn)

        prog = Progress(SpinnerColumn(), TextColumn("checking"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("[dim]{task.description}[/]"), console=self.console,
                        transient=True, auto_refresh=False)
        bar = _Bar(prog, prog.add_task("", total=total), names)
        with prog:
            yield bar

    def interrupted(self, done: int, total: int | None, what: str = "proc(s)") -> None:
        """Ctrl-C after ``done`` of ``total`` checks (``total`` None: while importing)."""
        msg = f"interrupted (Ctrl-C) after {done} of {total} {what}; nothing more was checked" \
            if total is not None else "interrupted (Ctrl-C) while importing the modules; " \
            "nothing was checked"
        if self.json_mode:
            print(json.dumps({"error": "interrupted", "message": msg}))
        else:
            self.err.print(f"[bold red]exogpu-verify:[/] {escape(msg)}")

    def ir(self, path, name: str, text: str) -> None:
        """``--print-ir``: the proc's printed IR (in JSON, a field of its report)."""
        if self.json_mode:
            self._ir[name] = text
            return
        self.console.print(f"[dim]# IR of {escape(str(path))}::{escape(name)}[/]")
        self.console.print(escape(text.rstrip("\n")))

    def picture(self, files: list) -> None:
        """``--report DIR``: the files written for the last report."""
        if self.json_mode:
            if self.items:
                self.items[-1]["report_files"] = [str(f) for f in files]
            return
        for f in files:
            self.console.print(f"          [dim]report: {escape(str(f))}[/]")

    def report(self, path, r: Report, name: str | None = None) -> None:
        """One verdict; ``name`` is the module-level name the proc is bound to (shown beside
        the def name when they differ: ``copy256 (copy)``)."""
        name = name or r.proc
        label = name if name == r.proc else f"{name} ({r.proc})"
        if self.json_mode:
            d = r.to_json()
            d["file"] = str(path)
            d["name"] = name
            if name in self._ir:
                d["ir"] = self._ir.pop(name)
            self.items.append(d)
            return
        style = _STYLE[r.verdict]
        at = ""
        if r.verdict == "checked" and r.sizes is not None:
            at = "  at " + sizes_text(r.sizes)
        self.console.print(f"[{style}]{r.verdict:>8}[/]  {escape(str(path))}::{escape(label)}"
                           + at + (f"  [dim]{escape(r.reason)}[/]" if r.reason else ""))
        if r.extra.get("derivation"):
            self.console.print(f"          [dim]{escape(r.extra['derivation'])}[/]")
        for d in r.diagnostics:
            self.console.print(escape(render(d)))
        if r.witness is not None:
            self.console.print(f"  witness at sizes {r.witness.sizes}")

    def finish(self, reports: list[Report], load_errors: int, seconds: float, code: int) -> None:
        if self.json_mode:
            print(json.dumps({"exit_code": code, "reports": self.items,
                              "load_errors": self.errors, "seconds": round(seconds, 3)},
                             indent=2))
            return
        counts: dict[str, int] = {}
        for r in reports:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        parts = [f"{n} {v}" for v, n in sorted(counts.items())]
        if load_errors:
            parts.append(f"{load_errors} file(s) failed to load")
        self.console.print(f"{len(reports)} proc(s): {', '.join(parts) or 'none'} "
                           f"in {seconds:.2f}s")
        sys.stdout.flush()


class _NoBar:
    def start(self, i: int) -> None:
        pass

    def finish(self, i: int) -> None:
        pass

    def refresh(self) -> None:
        pass


class _Bar:
    """The running jobs' names beside a rich progress bar."""

    def __init__(self, prog, task, names: list[str]):
        self.prog, self.task, self.names = prog, task, names
        self.running: dict[int, str] = {}

    def _describe(self) -> None:
        text = ", ".join(self.running.values())
        if len(text) > 60:
            text = text[:57] + "..."
        self.prog.update(self.task, description=escape(text))

    def start(self, i: int) -> None:
        self.running[i] = self.names[i]
        self._describe()
        self.prog.refresh()

    def finish(self, i: int) -> None:
        self.running.pop(i, None)
        self.prog.advance(self.task)
        self._describe()
        self.prog.refresh()

    def refresh(self) -> None:
        self.prog.refresh()
