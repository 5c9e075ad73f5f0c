"""``exogpu-verify -j N``: procs (and ``--recheck``'s certificates) checked in worker
processes give the results of ``-j 1``, in the same order, with the same exit status; a worker
that crashes or runs past the hard limit is that proc's honest ``unknown``; Ctrl-C stops
everything cleanly."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import exogpu_verify.cli as cli
from exogpu_verify.cli import main
from exogpu_verify.parallel import Failed, Job, context, default_jobs, run_jobs

ROOT = Path(__file__).resolve().parents[2]

RACY = '''
from __future__ import annotations
from exogpu_verify import *

@proc
def racy_copy(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    assert N % 256 == 0
    with CudaDeviceFunction(blockDim=256):
        for task in cuda_tasks(0, N / 256):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                B[t] = A[task * 256 + t]
'''


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """vec_copy and saxpy (proven) and a race (refuted), in a folder; cwd = tmp_path."""
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "kernels"
    d.mkdir()
    for name in ("vec_copy.py", "saxpy.py"):
        shutil.copy(ROOT / "specs" / name, d / name)
    (d / "racy.py").write_text(textwrap.dedent(RACY))
    return d


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _untimed(obj):
    """A JSON document without what depends on the clock (seconds, creation time)."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if k not in ("seconds", "created")}
    if isinstance(obj, list):
        return [_untimed(v) for v in obj]
    return obj


def _untimed_text(text: str) -> str:
    return re.sub(r"\d+\.\d\ds\b", "<t>s", text)


def test_jobs_give_the_text_and_order_of_one_job(folder, capsys):
    code1, out1, err1 = run([folder, "-j", "1"], capsys)
    code2, out2, err2 = run([folder, "-j", "2"], capsys)
    assert code1 == code2 == 1  # the race is refuted, in both
    assert _untimed_text(out1) == _untimed_text(out2)
    assert err1 == err2 == ""
    order = re.findall(r"^\s*(?:proven|refuted)\s+\S+::(\w+)", out2, re.M)
    assert order == ["racy_copy", "saxpy", "vec_copy"]
    assert "3 proc(s): 2 proven, 1 refuted" in out2
    code3, out3, _ = run([folder, "--jobs", "3"], capsys)
    assert code3 == 1 and _untimed_text(out3) == _untimed_text(out1)


def test_jobs_give_the_json_certificates_and_pictures_of_one_job(folder, tmp_path, capsys):
    docs, certs, pics = [], [], []
    for j in ("1", "2"):
        code, out, _ = run([folder, "-j", j, "--json", "--print-ir", "--certificates",
                            f"proofs{j}", "--report", f"pics{j}"], capsys)
        assert code == 1
        doc = _untimed(json.loads(out))
        for r in doc["reports"]:
            r["report_files"] = [Path(f).name for f in r["report_files"]]
        docs.append(doc)
        certs.append({f.name: _untimed(json.loads(f.read_text()))
                      for f in sorted((tmp_path / f"proofs{j}").iterdir())})
        pics.append({f.name: f.read_bytes() for f in sorted((tmp_path / f"pics{j}").iterdir())})
    assert docs[0] == docs[1]
    assert [r["verdict"] for r in docs[0]["reports"]] == ["refuted", "proven", "proven"]
    assert all(r["ir"] and r["report_files"] for r in docs[0]["reports"])
    assert certs[0] == certs[1] and sorted(certs[0]) == ["saxpy.saxpy.json",
                                                         "vec_copy.vec_copy.json"]
    assert pics[0] == pics[1] and len(pics[0]) == 7  # 3 x (svg + html) + index.html


def test_recheck_in_parallel_gives_the_report_of_one_job(folder, tmp_path, capsys):
    assert run([folder, "--certificates", "proofs"], capsys)[0] == 1
    # one certificate made stale: it must fail in both, at the same place in the report
    stale = tmp_path / "proofs" / "saxpy.saxpy.json"
    doc = json.loads(stale.read_text())
    doc["program_hash"] = "0" * 64
    stale.write_text(json.dumps(doc))
    outs = []
    for j in ("1", "2"):
        code, out, _ = run(["--recheck", "proofs", "-j", j, "--json"], capsys)
        assert code == 1
        outs.append(_untimed(json.loads(out)))
        code, text, _ = run(["--recheck", "proofs", "-j", j], capsys)
        assert code == 1
        outs.append(_untimed_text(text))
    assert outs[0] == outs[2] and outs[1] == outs[3]
    assert [c["ok"] for c in outs[0]["certificates"]] == [False, True]


def _in_worker_only(monkeypatch, bad: str, act):
    """Replace ``verify`` in the forked workers: ``act()`` when checking ``bad``."""
    parent = os.getpid()
    real = cli.verify

    def patched(p, **kw):
        if os.getpid() != parent and p.name == bad:
            act()
        return real(p, **kw)

    monkeypatch.setattr(cli, "verify", patched)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork on Linux")
def test_a_crashed_worker_is_that_procs_internal_error(folder, monkeypatch, capsys):
    (folder / "racy.py").unlink()
    _in_worker_only(monkeypatch, "saxpy", lambda: os.kill(os.getpid(), signal.SIGKILL))
    code, out, _ = run([folder, "-j", "2", "--json"], capsys)
    doc = json.loads(out)
    sax, vec = doc["reports"]
    assert code == 3 == doc["exit_code"]  # inconclusive: nothing refuted, one unknown
    assert (sax["name"], sax["verdict"]) == ("saxpy", "unknown")
    assert "killed by signal SIGKILL" in sax["reason"]
    assert sax["diagnostics"][0]["kind"] == "internal"
    assert sax["diagnostics"][0]["line"] is not None  # located at the proc
    assert (vec["name"], vec["verdict"]) == ("vec_copy", "proven")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork on Linux")
def test_a_worker_past_the_hard_limit_is_stopped_and_unknown(folder, monkeypatch, capsys):
    monkeypatch.setattr(cli, "hard_limit", lambda timeout: 2.0)
    _in_worker_only(monkeypatch, "racy_copy", lambda: time.sleep(600))
    t0 = time.monotonic()
    code, out, _ = run([folder, "-j", "2"], capsys)
    assert time.monotonic() - t0 < 300
    assert code == 3
    assert re.search(r"unknown\s+\S+racy\.py::racy_copy\s+checking racy_copy in a worker: "
                     r"stopped after 2 s", out), out
    assert re.search(r"proven\s+\S+saxpy\.py::saxpy", out)
    assert "internal error" not in out  # a time limit is not a bug


def test_spawned_workers_reimport_the_files(folder, monkeypatch, capsys):
    monkeypatch.setattr(cli, "context", lambda: context("spawn"))
    code1, out1, _ = run([folder, "-j", "1", "--json"], capsys)
    code2, out2, _ = run([folder, "-j", "2", "--json"], capsys)
    assert code1 == code2 == 1
    assert _untimed(json.loads(out1)) == _untimed(json.loads(out2))


def test_bad_jobs_is_a_usage_error(folder, capsys):
    for j in ("0", "-2"):
        code, _, err = run([folder, "-j", j], capsys)
        assert code == 2 and "-j/--jobs must be at least 1" in err
    code, _, err = run([folder, "-j", "two"], capsys)
    assert code == 2


def test_default_jobs_is_the_cores_this_process_may_use():
    want = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_jobs() == want
    assert f"here {want})" in " ".join(cli.build_parser().format_help().split())


def _double(x):
    return 2 * x


def _die(x):
    os._exit(7)


def test_run_jobs_yields_in_job_order_and_reports_failures():
    jobs = [Job("a", _double, (1,)), Job("b", _die, (0,)), Job("c", _double, (3,)),
            Job("d", _double, (4,))]
    started, ended = [], []
    got = list(run_jobs(jobs, 3, on_start=started.append, on_done=ended.append))
    assert [i for i, _ in got] == [0, 1, 2, 3]
    assert got[0][1] == 2 and got[2][1] == 6 and got[3][1] == 8
    assert isinstance(got[1][1], Failed) and "exited with status 7" in got[1][1].why
    assert sorted(started) == sorted(ended) == [0, 1, 2, 3]


def test_progress_bar_only_on_a_terminal_and_never_with_json():
    from rich.console import Console

    from exogpu_verify.output import Output, _Bar, _NoBar

    out = Output(json_mode=False)
    out.console = Console(file=io.StringIO(), force_terminal=False)
    with out.bar(2, ["a", "b"]) as bar:
        assert isinstance(bar, _NoBar)
    out.console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with out.bar(2, ["a", "b"]) as bar:
        assert isinstance(bar, _Bar)
        bar.start(0)
        bar.finish(0)
    assert "checking" in out.console.file.getvalue()
    js = Output(json_mode=True)
    js.console = Console(file=io.StringIO(), force_terminal=True)
    with js.bar(2, ["a", "b"]) as bar:
        assert isinstance(bar, _NoBar)


SLOW_MAIN = Path(__file__).resolve().parent / "slow_verify_main.py"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_the_workers_and_exits_130(folder):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # a shell without job control starts background commands with SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: the command starts as from a
    # terminal, with SIGINT's default action
    proc = subprocess.Popen([sys.executable, str(SLOW_MAIN), str(folder), "-j", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_sigint)
    try:
        _interrupt_and_check(proc)
    finally:
        if proc.poll() is None:  # never leave the slow workers behind
            for k in _children(proc.pid):
                with contextlib.suppress(OSError):
                    os.kill(k, signal.SIGKILL)
            proc.kill()
            proc.communicate()


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _children(pid: int) -> set[int]:
    try:
        return {int(c) for t in Path(f"/proc/{pid}/task").iterdir()
                for c in (t / "children").read_text().split()}
    except OSError:
        return set()


def _interrupt_and_check(proc) -> None:
    kids: set[int] = set()
    deadline = time.monotonic() + 120
    while len(kids) < 2 and time.monotonic() < deadline and proc.poll() is None:
        kids |= _children(proc.pid)
        time.sleep(0.1)
    assert len(kids) == 2, "the two workers never started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "interrupted (Ctrl-C) after 0 of 3 proc(s)" in err
    assert "Traceback" not in out + err
    assert not [k for k in kids if Path(f"/proc/{k}").exists()]  # every worker is gone


def test_a_ctrl_c_during_a_workers_start_waits_until_it_is_recorded():
    # the Ctrl-C test above once hung: SIGINT landed between a fork and the worker's entry
    # in the parent's table, so that worker outlived the parent (holding its pipes open)
    reached = []
    old = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in exogpu-verify
    try:
        _interrupt_held(reached)
    finally:
        signal.signal(signal.SIGINT, old)
    assert reached == ["after the signal"]


def _interrupt_held(reached):
    from exogpu_verify.parallel import _sigint_held

    with pytest.raises(KeyboardInterrupt):
        with _sigint_held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs (in this, the main thread) and only records
            reached.append("after the signal")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
