"""Pictures of verification results: ``exogpu-verify --report DIR``.

For each proc, ``write_picture`` writes ``DIR/<name>.svg`` and ``DIR/<name>.html`` (the page
embeds the SVG and adds the diagnostic as text): for a refuted proc with a race witness, the
threads of the two accesses as lanes, program order downward, both accesses, every
synchronization statement between them and the missing edge; for a proven proc, its
obligations by kind; otherwise the verdict, its reason and the diagnostics. ``write_index``
writes ``DIR/index.html`` linking them all.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from ..ir.nodes import Procedure
from ..report import Report, render
from .svg import obligations_svg, verdict_svg, witness_svg
from .witness import WitnessPicture, witness_picture

__all__ = ["WitnessPicture", "picture_svg", "witness_picture", "write_index", "write_picture"]


def picture_svg(p: Procedure, r: Report, where: str) -> str:
    """The SVG text for one report (see the module docstring)."""
    if r.verdict == "refuted":
        pic = witness_picture(p, r, where)
        if pic is not None:
            return witness_svg(pic)
    if r.verdict == "proven":
        counts: dict[str, int] = {}
        for ob in r.extra.get("obligations", ()):
            kind = getattr(ob, "kind", "obligation")
            counts[kind] = counts.get(kind, 0) + 1
        return obligations_svg(where, counts, r.reason)
    diags = [(d.kind, d.line, d.message) for d in r.diagnostics]
    return verdict_svg(where, r.verdict, r.reason, diags)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "proc"


def write_picture(p: Procedure, r: Report, out_dir, name: str, where: str = "") -> list[Path]:
    """Write ``<name>.svg`` and ``<name>.html`` into ``out_dir``; returns both paths."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    stem = _slug(name)
    where = where or name
    svg = picture_svg(p, r, where)
    svg_path, html_path = d / f"{stem}.svg", d / f"{stem}.html"
    svg_path.write_text(svg)
    text = "\n\n".join(render(x) for x in r.diagnostics)
    body = svg.split("?>", 1)[1] if svg.startswith("<?xml") else svg
    html_path.write_text(_fill(_PAGE, title=html.escape(f"{r.verdict}: {where}"), svg=body,
                               reason=html.escape(r.reason or ""),
                               diagnostics=f"<pre>{html.escape(text)}</pre>" if text else "",
                               ir=html.escape(str(p))))
    return [svg_path, html_path]


def write_index(out_dir, entries: list[tuple[str, str, str]]) -> Path:
    """``index.html`` linking each ``(name, verdict, where)`` page written into ``out_dir``."""
    d = Path(out_dir)
    rows = "\n".join(
        f'<tr><td class="{html.escape(v)}">{html.escape(v)}</td>'
        f'<td><a href="{html.escape(_slug(n))}.html">{html.escape(w or n)}</a></td></tr>'
        for n, v, w in entries)
    path = d / "index.html"
    path.write_text(_fill(_INDEX, rows=rows))
    return path


def _fill(template: str, **parts: str) -> str:
    """``{name}`` placeholders filled in one pass (the CSS braces are not placeholders)."""
    return re.sub(r"\{(\w+)\}", lambda m: parts.get(m.group(1), m.group(0)), template)


_STYLE = """body{font-family:system-ui,Helvetica,Arial,sans-serif;margin:24px;color:#111827}
pre{background:#f9fafb;border:1px solid #e5e7eb;padding:12px;overflow-x:auto}
.refuted{color:#b91c1c;font-weight:bold}.proven{color:#15803d;font-weight:bold}
.checked{color:#15803d}.unknown{color:#a16207;font-weight:bold}
details{margin-top:16px}"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>""" + _STYLE + """</style></head>
<body>
<h1>{title}</h1>
<p>{reason}</p>
{svg}
{diagnostics}
<details><summary>the program (printed IR)</summary><pre>{ir}</pre></details>
</body></html>
"""

_INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>exogpu-verify report</title>
<style>""" + _STYLE + """ td{padding:4px 12px}</style></head>
<body><h1>exogpu-verify report</h1>
<table>
{rows}
</table></body></html>
"""
