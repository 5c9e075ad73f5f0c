"""Running independent checks in worker processes (``exogpu-verify -j N``).

``run_jobs(jobs, n)`` runs each job's function in a process of its own, at most ``n`` at
once, and yields the results *in job order*, each as soon as it and every job before it
are done, so a caller that prints as it goes prints exactly what a sequential run prints.
One process per job isolates failures: a worker that dies (a crash in a native solver, the
machine out of memory) or runs past its hard time limit is stopped and reported as that
job's failure (a ``Failed``), and the other jobs go on. Where the platform can fork (Linux),
workers inherit the parent's memory, so the procs already loaded are not re-imported;
elsewhere they are spawned and the job's function must load what it needs itself
(``inherits_memory`` says which). Workers ignore SIGINT: on Ctrl-C the parent stops them all
and the ``KeyboardInterrupt`` reaches the caller.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Callable, Iterator


@dataclass(frozen=True)
class Job:
    """One unit of work: ``fn(*args)`` in a worker. Under spawn, ``fn`` and ``args`` are
    pickled (``fn`` a module-level function); under fork they are inherited as they are."""

    label: str
    fn: Callable
    args: tuple = ()
    #: seconds after which the worker is killed (None: no limit)
    limit_s: float | None = None


@dataclass(frozen=True)
class Failed:
    """A job that gave no result: why, in words a user can act on; ``crashed`` when the
    worker died or raised (a bug), not when it was stopped at the time limit."""

    why: str
    crashed: bool = True


def default_jobs() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def context(method: str | None = None):
    """The multiprocessing context workers start from: fork where the OS has it safely
    (Linux), else spawn."""
    if method is None:
        method = "fork" if sys.platform.startswith("linux") else "spawn"
    return mp.get_context(method)


def inherits_memory(ctx) -> bool:
    return ctx.get_start_method() == "fork"


def _child(conn, fn, args) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    try:
        payload = ("ok", fn(*args))
    except BaseException as e:  # noqa: BLE001 - reported to the parent as this job's failure
        payload = ("error", f"{type(e).__name__}: {e}")
    try:
        conn.send(payload)
    except Exception as e:  # noqa: BLE001 - e.g. a result that cannot be pickled
        conn.send(("error", f"the result could not be sent back: {type(e).__name__}: {e}"))
    conn.close()


@contextlib.contextmanager
def _sigint_held():
    """A Ctrl-C during the block takes effect when the block ends. A SIGINT that lands
    between the fork and the worker's entry in ``running`` would otherwise leave a worker
    the parent does not know of, still running after the parent exits (holding its output
    pipes open). A Python handler, not a signal mask: the handler always runs in the main
    thread, whichever thread the signal reaches."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and only it gets KeyboardInterrupt)
        return
    got: list = []
    prev = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, prev)
        if got:
            if callable(prev):
                prev(signal.SIGINT, None)  # default_int_handler raises KeyboardInterrupt
            elif prev == signal.SIG_DFL:
                raise KeyboardInterrupt


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def run_jobs(jobs: list[Job], n: int, ctx=None,
             on_start: Callable[[int], None] | None = None,
             on_done: Callable[[int], None] | None = None,
             tick: Callable[[], None] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, result)`` for every job, in index order; ``result`` is what the
    job's function returned, or a ``Failed``; a worker still running after its job's
    ``limit_s`` is killed (a ``Failed`` naming the limit). ``on_start(i)`` and
    ``on_done(i)`` are called when job ``i`` starts and ends, ``tick()`` about ten times a
    second while waiting (a progress display refreshes there: no thread of the parent runs
    while workers are forked)."""
    ctx = ctx or context()
    n = max(1, n)
    frozen = inherits_memory(ctx)
    if frozen:  # forked workers then leave the parent's objects alone: no copy-on-write by
        gc.freeze()  # their garbage collector (Python docs, gc.freeze)
    pending = list(range(len(jobs)))
    running: dict[int, tuple] = {}  # index -> (process, connection, start time)
    done: dict[int, Any] = {}
    nxt = 0
    try:
        while nxt < len(jobs):
            while pending and len(running) < n:
                i = pending.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(send, jobs[i].fn, jobs[i].args),
                                   name=f"exogpu-verify: {jobs[i].label}", daemon=True)
                with _sigint_held():  # a Ctrl-C during the fork waits until it is recorded
                    proc.start()
                    running[i] = (proc, recv, time.monotonic())
                send.close()
                if on_start is not None:
                    on_start(i)
            if nxt in done:
                yield nxt, done.pop(nxt)
                nxt += 1
                continue
            ready = wait([c for _, c, _ in running.values()], timeout=0.1)
            now = time.monotonic()
            for i, (proc, conn, t0) in list(running.items()):
                if conn in ready:
                    try:
                        status, value = conn.recv()
                        done[i] = value if status == "ok" else Failed(
                            f"the worker raised {value} (this is a bug in exogpu)")
                    except (EOFError, OSError):
                        proc.join()
                        done[i] = Failed(f"the worker process {_death(proc.exitcode)} before "
                                         "reporting (a crash in a solver or the checker, or "
                                         "the machine ran out of memory)")
                    except Exception as e:  # noqa: BLE001 - e.g. a result that does not unpickle
                        done[i] = Failed(f"the worker's result could not be read back: "
                                         f"{type(e).__name__}: {e} (this is a bug in exogpu)")
                elif jobs[i].limit_s is not None and now - t0 > jobs[i].limit_s:
                    proc.kill()
                    done[i] = Failed(f"stopped after {jobs[i].limit_s:g} s, the hard limit for "
                                     "one job", crashed=False)
                else:
                    continue
                conn.close()
                proc.join()
                del running[i]
                if on_done is not None:
                    on_done(i)
            if tick is not None:
                tick()
    finally:
        for proc, conn, _ in running.values():
            proc.kill()
        for proc, conn, _ in running.values():
            proc.join()
            conn.close()
        if frozen:
            gc.unfreeze()
