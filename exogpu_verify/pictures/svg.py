"""SVG drawings: a race witness (lanes of threads, program order downward, the missing edge),
a summary of a proof's obligations by kind, and a card for any other verdict.

Plain SVG 1.1 text, no scripts or external resources. Every drawn element that a reader (or
a test) looks for is a ``<g>`` with a ``class`` (``access``, ``sync``, ``missing-edge``,
``lane``, ``obligation-kind``) and ``data-*`` attributes (``data-line``, ``data-role``,
``data-kind``, ``data-count``).
"""

from __future__ import annotations

import textwrap
from xml.sax.saxutils import escape, quoteattr

from .witness import WitnessPicture

FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
MONO = "font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\""
LANE_W, LANE_GAP, MARGIN = 330, 36, 28
ROW_H, BOX_H, TOP = 72, 54, 176
COLORS = {
    "earlier": ("#dbeafe", "#1d4ed8"),
    "later": ("#fee2e2", "#b91c1c"),
    "sync": ("#dcfce7", "#15803d"),
    "sync-other": ("#f3f4f6", "#6b7280"),
}


def _t(x, y, text, size=12, weight="normal", fill="#111827", mono=False, anchor="start",
       extra=""):
    fam = MONO if mono else FONT
    return (f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}" font-weight="{weight}" '
            f'fill="{fill}" text-anchor="{anchor}" {fam}{extra}>{escape(text)}</text>')


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:max(1, n - 1)] + "\u2026"


def _svg(width, height, body: list[str], title: str) -> str:
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">',
        f"<title>{escape(title)}</title>",
        '<defs><marker id="arrow-red" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#b91c1c"/></marker><marker id="arrow-gray" viewBox="0 0 10 10" refX="9" '
        'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#4b5563"/></marker></defs>',
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
        *body, "</svg>", ""])


def witness_svg(pic: WitnessPicture) -> str:
    """The race: one column per lane of threads, program order downward."""
    lanes = list(pic.lanes)
    other = any(r.kind == "sync" and not r.groups for r in pic.rows)
    ncols = len(lanes) + (1 if other else 0)
    gutter = 56 if any(r.barrier for r in pic.rows) else 0
    left = MARGIN + gutter
    width = max(900, left + MARGIN + ncols * LANE_W + (ncols - 1) * LANE_GAP + 110)
    col_x = [left + i * (LANE_W + LANE_GAP) for i in range(ncols)]
    bottom = TOP + len(pic.rows) * ROW_H
    foot = _footer_lines(pic, width)
    height = bottom + 40 + 18 * len(foot) + 30
    out: list[str] = []
    sizes = ", ".join(f"{k}={v}" for k, v in pic.sizes.items()) or "no sizes"
    fit = int((width - 2 * MARGIN) / 6.6)
    out.append(_t(MARGIN, 36, _clip(f"refuted: {pic.title}", int(fit * 0.68)), 18, "bold",
                  "#b91c1c"))
    out.append(_t(MARGIN, 60, _clip(f"{pic.where}  \u00b7  witness at {sizes}", fit), 13,
                  fill="#374151"))
    out.append(_t(MARGIN, 82, _clip("lanes: threads \u00b7 downward: program order \u00b7 "
                                    "boxes: the two accesses and the synchronization between "
                                    "them \u00b7 red dashed: the missing ordering", fit), 12,
                  fill="#6b7280"))
    labels = [ln.label for ln in lanes] + (["other threads"] if other else [])
    for i, label in enumerate(labels):
        x = col_x[i]
        out.append(f'<g class="lane" data-lane="{i}" data-label={quoteattr(label)}>')
        out.append(f'<rect x="{x}" y="100" width="{LANE_W}" height="50" rx="8" fill="#f9fafb" '
                   'stroke="#9ca3af"/>')
        parts = textwrap.wrap(label, 44)[:2]
        for k, part in enumerate(parts):
            out.append(_t(x + LANE_W / 2, 130 - 8 * (len(parts) - 1) + 17 * k, part, 12,
                          "bold", anchor="middle"))
        out.append(f'<line x1="{x + LANE_W / 2}" y1="150" x2="{x + LANE_W / 2}" '
                   f'y2="{bottom}" stroke="#d1d5db" stroke-width="2" stroke-dasharray="4 6"/>')
        out.append("</g>")
    boxes: list[list[tuple]] = []  # per row: (x0, x1, y) of each box
    for j, row in enumerate(pic.rows):
        groups = list(row.groups) or ([(len(lanes),)] if other else [])
        y = TOP + j * ROW_H
        boxes.append([(col_x[min(g)], col_x[max(g)] + LANE_W, y) for g in groups])
        if row.kind == "access":
            fill, stroke = COLORS[row.role]
            cls = f'class="access" data-role="{row.role}"'
        else:
            fill, stroke = COLORS["sync" if row.groups else "sync-other"]
            cls = f'class="sync" data-kind={quoteattr(row.role)}'
        if row.barrier:
            cls += f" data-barrier={quoteattr(row.barrier)}"
        lanes_attr = "|".join(",".join(str(i) for i in g) for g in row.groups)
        out.append(f'<g {cls} data-line="{row.line or ""}" data-lanes="{lanes_attr}">')
        for k, (x0, x1, _) in enumerate(boxes[-1]):
            detail = row.detail
            if k < len(row.by):
                detail = f"by {row.by[k]}" if row.source else f"{detail}  by {row.by[k]}"
            out += _box(row, detail, x0, x1, y, fill, stroke)
        out.append("</g>")
    out += _barrier_arrows(pic, boxes, left)
    out += _missing_edge(pic, boxes)
    y = bottom + 36
    for k, (text, color, bold) in enumerate(foot):
        out.append(_t(MARGIN, y + 18 * k, text, 12, "bold" if bold else "normal", color))
    return _svg(width, height, out, f"race witness: {pic.title}")


def _box(row, detail, x0, x1, y, fill, stroke) -> list[str]:
    chars = int((x1 - x0 - 16) / 7.3)
    head = f"line {row.line}" if row.line else "line ?"
    head += f" \u00b7 {row.role} access" if row.kind == "access" else f" \u00b7 {row.role}"
    return [f'<rect x="{x0}" y="{y}" width="{x1 - x0}" height="{BOX_H}" rx="7" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{2 if row.kind == "access" else 1.5}"/>',
            _t(x0 + 8, y + 16, head, 11, "bold", stroke),
            _t(x0 + 8, y + 32, _clip(row.source or row.detail, chars), 12, mono=True),
            _t(x0 + 8, y + 47, _clip(detail, int(chars * 1.1)), 10.5, fill="#4b5563")]


def _barrier_arrows(pic: WitnessPicture, boxes, left) -> list[str]:
    """Gray arrows in the left gutter from each Arrive (or instruction completing on a
    barrier) to the next Await of the same barrier below it: the edges that do exist."""
    out = []
    rows = pic.rows
    k = 0
    for i, a in enumerate(rows):
        if a.kind != "sync" or a.role not in ("Arrive", "barrier call") or not boxes[i]:
            continue
        for j in range(i + 1, len(rows)):
            b = rows[j]
            if b.kind == "sync" and b.role == "Await" and b.barrier == a.barrier and boxes[j]:
                gx = left - 12 - 10 * (k % 4)
                ya, yb = boxes[i][0][2] + BOX_H / 2, boxes[j][0][2] + BOX_H / 2
                xa, xb = boxes[i][0][0], boxes[j][0][0]
                out.append(f'<g class="sync-edge" data-from="{a.line}" data-to="{b.line}" '
                           f'data-barrier={quoteattr(a.barrier)}>'
                           f'<path d="M{xa},{ya} L{gx},{ya} L{gx},{yb} L{xb - 1},{yb}" '
                           'stroke="#4b5563" stroke-width="1.5" fill="none" '
                           'marker-end="url(#arrow-gray)"/>'
                           + _t(gx - 3, ya - 4, a.barrier, 10, fill="#4b5563", anchor="end")
                           + "</g>")
                k += 1
                break
    return out


def _missing_edge(pic: WitnessPicture, boxes) -> list[str]:
    roles = [r.role for r in pic.rows]
    if "earlier" not in roles or "later" not in roles:
        return []
    i, j = roles.index("earlier"), roles.index("later")
    # from the earlier access to the rightmost box of the later one (the path runs right
    # of every box)
    (_, ax1, ay), (_, bx1, by) = boxes[i][0], max(boxes[j], key=lambda b: b[1])
    xr = max(x1 for bs in boxes for _, x1, _ in bs) + 34
    y0, y1 = ay + BOX_H / 2, by + BOX_H / 2
    d = f"M{ax1},{y0} L{xr},{y0} L{xr},{y1} L{bx1 + 2},{y1}"
    ym = (y0 + y1) / 2
    return [f'<g class="missing-edge" data-from="{pic.rows[i].line}" '
            f'data-to="{pic.rows[j].line}">',
            f'<path d="{d}" stroke="#b91c1c" stroke-width="2.5" stroke-dasharray="8 6" '
            'fill="none" marker-end="url(#arrow-red)"/>',
            _t(xr + 8, ym - 4, "missing", 12, "bold", "#b91c1c"),
            _t(xr + 8, ym + 12, "edge", 12, "bold", "#b91c1c"), "</g>"]


def _footer_lines(pic: WitnessPicture, width) -> list[tuple[str, str, bool]]:
    n = max(60, int((width - 2 * MARGIN) / 7))
    lines = [("Why: " + (pic.missing or "the accesses are not ordered"), "#b91c1c", True)]
    for note in pic.notes:
        if note and note != pic.missing:
            lines.append(("note: " + note, "#374151", False))
    if pic.hint:
        lines.append(("fix: " + pic.hint, "#15803d", True))
    out = []
    for text, color, bold in lines:
        for k, part in enumerate(textwrap.wrap(text, n)):
            out.append((part if k == 0 else "    " + part, color, bold))
    return out


#: what discharging an obligation of each kind established, in words
PROVES = {
    "RAW": "each read is ordered after the writes it conflicts with",
    "WAR": "each write is ordered after the reads it conflicts with",
    "WAW": "conflicting writes are ordered",
    "free without sync": "shared-memory accesses are ordered before the free",
    "out of bounds": "every access lies within its tensor",
    "barrier index out of range": "barrier indices lie within their extents",
    "await progress": "each Await has its Arrive earlier (no deadlock)",
    "barrier misuse": "one Arrive statement per CTA and barrier phase",
}


def obligations_svg(where: str, counts: dict[str, int], reason: str) -> str:
    """A proof: how many obligations of each kind were discharged for all sizes."""
    kinds = sorted(counts, key=lambda k: (-counts[k], k))
    width, bar_x, bar_w = 1010, 230, 360
    height = 120 + 34 * max(1, len(kinds)) + 40
    most = max(counts.values(), default=1) or 1
    out = [_t(MARGIN, 36, f"proven: {where}", 18, "bold", "#15803d"),
           _t(MARGIN, 60, _clip(reason, 110), 13, fill="#374151"),
           _t(MARGIN, 84, "obligations discharged for every size satisfying the asserts, by "
              "kind", 12, fill="#6b7280")]
    for i, k in enumerate(kinds):
        y = 104 + 34 * i
        w = max(4, bar_w * counts[k] / most)
        out.append(f'<g class="obligation-kind" data-kind={quoteattr(k)} '
                   f'data-count="{counts[k]}">')
        out.append(_t(bar_x - 12, y + 17, k, 13, anchor="end"))
        out.append(f'<rect x="{bar_x}" y="{y}" width="{w:.0f}" height="24" rx="4" '
                   'fill="#86efac" stroke="#15803d"/>')
        out.append(_t(bar_x + w + 8, y + 17, str(counts[k]), 13, "bold"))
        if k in PROVES:
            out.append(_t(bar_x + bar_w + 48, y + 17, PROVES[k], 12, fill="#4b5563"))
        out.append("</g>")
    total = sum(counts.values())
    out.append(_t(MARGIN, height - 22, f"{total} obligations in all", 12, fill="#374151"))
    return _svg(width, height, out, f"proof summary: {where}")


def verdict_svg(where: str, verdict: str, reason: str, diags: list[tuple]) -> str:
    """Any other verdict: what it is, why, and each diagnostic with its line."""
    color = {"refuted": "#b91c1c", "unknown": "#a16207", "checked": "#15803d"}.get(verdict,
                                                                                  "#111827")
    lines = textwrap.wrap(reason or "", 100)
    height = 110 + 18 * len(lines) + 64 * len(diags) + 20
    width = 820
    out = [_t(MARGIN, 36, f"{verdict}: {where}", 18, "bold", color)]
    for k, part in enumerate(lines):
        out.append(_t(MARGIN, 62 + 18 * k, part, 13, fill="#374151"))
    y = 80 + 18 * len(lines)
    for kind, line, msg in diags:
        out.append(f'<g class="diagnostic" data-kind={quoteattr(kind)} data-line="{line or ""}">')
        out.append(f'<rect x="{MARGIN}" y="{y}" width="{width - 2 * MARGIN}" height="54" '
                   f'rx="7" fill="#fff7ed" stroke="{color}"/>')
        out.append(_t(MARGIN + 10, y + 20, f"{kind} error, line {line}", 12, "bold", color))
        out.append(_t(MARGIN + 10, y + 40, _clip(msg, 108), 11.5, mono=True))
        out.append("</g>")
        y += 64
    return _svg(width, height, out, f"{verdict}: {where}")
