"""exogpu-verify --report: the SVG of a race shows both accesses and the synchronization
between them with their lines, the missing edge, lanes per thread group; a proof shows its
obligations by kind. The SVGs are parsed, not compared as text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from exogpu_verify import verify
from exogpu_verify.cli import main
from exogpu_verify.pictures import write_index, write_picture

PROG = Path(__file__).resolve().parent / "progs" / "handoff.py"
SVG = "{http://www.w3.org/2000/svg}"


def marker(name: str, after: int = 0) -> int:
    """The line of the first ``# NAME`` comment after line ``after`` in the test program."""
    for i, line in enumerate(PROG.read_text().splitlines(), 1):
        if i > after and line.rstrip().endswith(f"# {name}"):
            return i
    raise AssertionError(name)


def marker_def(proc_name: str) -> int:
    for i, line in enumerate(PROG.read_text().splitlines(), 1):
        if line.startswith(f"def {proc_name}("):
            return i
    raise AssertionError(proc_name)


@pytest.fixture(scope="module")
def progs(prog_loader):
    return prog_loader("pictures/progs/handoff.py")


@pytest.fixture(scope="module")
def reports(progs):
    return {n: verify(getattr(progs, n))
            for n in ("handoff_bug", "partial_arrive", "handoff", "free_bug")}


def draw(progs, reports, name, tmp_path) -> ET.Element:
    svg, html = write_picture(getattr(progs, name), reports[name], tmp_path, name,
                              where=f"handoff.py::{name}")
    assert svg.suffix == ".svg" and html.suffix == ".html"
    return ET.parse(svg).getroot()


def groups(root, cls):
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == cls]


def test_race_picture_has_both_accesses_the_syncs_and_the_missing_edge(progs, reports,
                                                                        tmp_path):
    r = reports["partial_arrive"]
    assert r.verdict == "refuted" and r.witness is not None
    root = draw(progs, reports, "partial_arrive", tmp_path)
    start = marker_def("partial_arrive")
    write, read = marker("WRITE", start), marker("READ", start)
    accesses = {g.get("data-role"): int(g.get("data-line")) for g in groups(root, "access")}
    assert accesses == {"earlier": write, "later": read}
    syncs = [(g.get("data-kind"), int(g.get("data-line"))) for g in groups(root, "sync")]
    # the Arrive by warp 0 and the Await by every thread lie between; the final CTA Fence
    # comes after the read
    assert syncs == [("Arrive", marker("ARRIVE", start)), ("Await", marker("AWAIT", start))]
    [edge] = groups(root, "sync-edge")
    assert (int(edge.get("data-from")), int(edge.get("data-to"))) == \
        (marker("ARRIVE", start), marker("AWAIT", start))
    [missing] = groups(root, "missing-edge")
    assert (int(missing.get("data-from")), int(missing.get("data-to"))) == (write, read)
    lanes = [g.get("data-label") for g in groups(root, "lane")]
    assert lanes == ["thread 63 of task (task=0)", "thread 0 of task (task=0)"]
    # the Arrive (threads 0-31) is in the reader's lane only, the Await spans both
    lanes_of = {g.get("data-kind"): g.get("data-lanes") for g in groups(root, "sync")}
    assert lanes_of == {"Arrive": "1", "Await": "0,1"}
    text = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "read-after-write hazard on buf[63]" in text and "missing" in text


def test_per_warp_fence_is_drawn_per_warp(progs, reports, tmp_path):
    root = draw(progs, reports, "handoff_bug", tmp_path)
    start = marker_def("handoff_bug")
    accesses = {g.get("data-role"): int(g.get("data-line")) for g in groups(root, "access")}
    assert accesses == {"earlier": marker("WRITE", start), "later": marker("READ", start)}
    [fence] = groups(root, "sync")
    assert fence.get("data-kind") == "Fence" and int(fence.get("data-line")) == \
        marker("WARP FENCE", start)
    # between warp 1's write and warp 0's read only warp 0 fences: one box, reader's lane
    assert fence.get("data-lanes") == "1"
    assert len([c for c in fence if c.tag == f"{SVG}rect"]) == 1


def test_free_is_at_the_end_of_the_block(progs, reports, tmp_path):
    """The free of a buffer comes after the block's last statement: the per-warp Fences after
    the last read lie between the read and the free (drawn once per warp)."""
    r = reports["free_bug"]
    assert r.verdict == "refuted" and "free" in r.reason
    root = draw(progs, reports, "free_bug", tmp_path)
    start = marker_def("free_bug")
    accesses = {g.get("data-role"): int(g.get("data-line")) for g in groups(root, "access")}
    assert accesses == {"earlier": marker("LAST READ", start), "later": marker("ALLOC", start)}
    [fence] = groups(root, "sync")
    assert int(fence.get("data-line")) == marker("WARP FENCE AFTER", start)


def test_proof_picture_counts_obligations_by_kind(progs, reports, tmp_path):
    r = reports["handoff"]
    assert r.verdict == "proven"
    root = draw(progs, reports, "handoff", tmp_path)
    drawn = {g.get("data-kind"): int(g.get("data-count")) for g in groups(root, "obligation-kind")}
    want: dict = {}
    for ob in r.extra["obligations"]:
        want[ob.kind] = want.get(ob.kind, 0) + 1
    assert drawn == want and sum(drawn.values()) == len(r.extra["obligations"])


def test_html_page_embeds_the_svg_and_the_diagnostic(progs, reports, tmp_path):
    _, html = write_picture(progs.partial_arrive, reports["partial_arrive"], tmp_path, "p")
    page = html.read_text()
    assert "<svg" in page and "read-after-write hazard" in page
    assert "def partial_arrive(" in page  # the printed IR
    assert not page.lstrip().startswith("<?xml")


def test_static_error_picture_shows_the_diagnostic(tmp_path):
    from exogpu_verify import parse_proc_source

    p = parse_proc_source("""
def bad(N: size, A: f32[N, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N):
            z: barrier @ CudaMbarrier
            for t in cuda_threads(0, 32, unit=cuda_thread):
                A[task, t] = 0.0
            Arrive(cuda_in_order, 1) >> z
""", file="bad.py")
    r = verify(p)
    assert r.verdict == "refuted"
    svg, _ = write_picture(p, r, tmp_path, "bad")
    [d] = groups(ET.parse(svg).getroot(), "diagnostic")
    assert d.get("data-kind") == "barrier-usage" and d.get("data-line") == "5"


def test_cli_report_writes_pages_and_an_index(tmp_path, capsys):
    code = main([str(PROG), "--report", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    names = sorted(f.name for f in tmp_path.iterdir())
    procs = ["handoff_bug", "partial_arrive", "handoff", "free_bug"]  # in binding order
    assert names == sorted([f"handoff.{p}.{ext}" for p in procs for ext in ("html", "svg")]
                           + ["index.html"])
    index = (tmp_path / "index.html").read_text()
    assert re.findall(r'href="([^"]+)"', index) == [f"handoff.{p}.html" for p in procs]
    assert "report: " in out


def test_index_of_nothing(tmp_path):
    assert "<table>" in write_index(tmp_path, []).read_text()
