"""`-o html`: one self-contained page with the diagnosis (or plan) and an SVG map of every network.

Pure: a Diagnosis, the snapshot's address maps (cidrx.model.netmap) and optionally a Plan in, one HTML
document out. Nothing is loaded from anywhere (inline CSS and SVG, no script, no fonts, no images), so
the file can be attached to a ticket or opened from a CI artefact offline.

Each map draws one extent (an address block of a cloud network, a private address space, an IPAM pool) as a row of
boxes in address order: every range in it and every unallocated gap between them. Address spaces differ
by many orders of magnitude (a /27 subnet in a /16 block is 1/2048 of it), so a box's width grows with
the logarithm of its size, not linearly, and each box says its exact size; inside a range box, reserved,
used and free addresses are drawn to scale. A plan's new range is drawn in, dashed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from html import escape
from ipaddress import IPv4Address, IPv4Network
from typing import Any

from cidrx.model.findings import Diagnosis, Severity
from cidrx.model.netmap import Area, NetworkMap, covered, free_blocks
from cidrx.model.plan import Plan
from cidrx.render.age import taken_note
from cidrx.render.fixes import split_fix
from cidrx.render.table import by_urgency, counts_line, nodes_text, percent, value_text

WIDTH = 960  # of each map's drawing, in CSS pixels
ROW = 74  # height of one row of boxes, label included
BOX = 46  # height of a box
GAP_X = 4

COLOURS = {
    "used": "#e8833a",
    "full": "#d64541",
    "free": "#7cc47f",
    "reserved": "#9e9e9e",
    "taken": "#8aa0b8",
    "unallocated": "#f4f4f4",
    "planned": "#dceafb",
    "planned-line": "#2f6fc4",
    "stale": "#9b59b6",
}

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 24px;
       max-width: 1040px; overflow-wrap: break-word; }
th, td.n { white-space: nowrap; }
svg.map { width: 100%; height: auto; max-width: 960px; display: block; }
.wide { overflow-x: auto; max-width: 100%; }
pre { background: #f3f3f3; padding: 6px 8px; margin: 4px 0; white-space: pre-wrap; overflow-wrap: anywhere; }
pre code { font-size: 12px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 4px; }
.meta, .sum { color: #555; margin: 0 0 6px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.full td { background: #fdecea; } tr.tight td { background: #fff6e5; }
.finding { border-left: 4px solid #999; padding: 4px 10px; margin: 8px 0; background: #fafafa; }
.finding.critical { border-color: #d64541; } .finding.warning { border-color: #e8a33a; }
.finding.info { border-color: #4a90e2; }
.badge { background: #d64541; color: #fff; font-size: 11px; padding: 1px 6px; border-radius: 3px; }
.sev { font-weight: 600; text-transform: uppercase; font-size: 12px; } code { font-size: 12px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 4px; border: 1px solid #888;
            vertical-align: middle; }
svg text { font: 11px system-ui, sans-serif; fill: #222; }
svg .gap rect { stroke: #bbb; stroke-dasharray: 2 2; }
svg .range > rect.frame { fill: none; stroke: #555; }
svg .range.exhausted > rect.frame { stroke: #b3261e; stroke-width: 3; }
svg .range.planned > rect.frame { stroke: #2f6fc4; stroke-width: 2; stroke-dasharray: 6 3; }
"""


# --- the plan's new range, drawn into the maps ----------------------------------------------------------


def _net(text: str) -> IPv4Network | None:
    try:
        return IPv4Network(text, strict=False)
    except (ValueError, TypeError):
        return None


def with_plan(maps: Sequence[NetworkMap], plan: Plan | None) -> list[NetworkMap]:
    """`maps` with the range `plan` adds drawn in: inside the map whose extent holds it, else as a map of
    its own (a new VPC CIDR block, a new pool), holding the plan's subnets when it names them."""
    out = list(maps)
    if plan is None:
        return out
    new = _net(str(plan.summary.get("cidr", "")))
    if new is None:
        return out
    subnets = plan.summary.get("subnets")
    parts = [n for v in subnets.values() if (n := _net(str(v))) is not None] if isinstance(subnets, dict) else []
    names = {str(v): str(k) for k, v in subnets.items()} if isinstance(subnets, dict) else {}
    label = str(plan.summary.get("range_name") or plan.summary.get("name") or plan.strategy)
    planned = [
        Area(str(p), f"planned: {names.get(str(p), label)}", "planned", p.num_addresses, planned=True) for p in parts
    ] or [Area(str(new), f"planned: {label}", "planned", new.num_addresses, planned=True)]
    for i, m in enumerate(out):
        extent = _net(m.cidr)
        if extent is not None and new.subnet_of(extent):
            areas = sorted([*m.areas, *planned], key=lambda a: int(IPv4Network(a.cidr, strict=False).network_address))
            out[i] = NetworkMap(m.kind, m.name, m.cidr, tuple(areas), m.planned, m.title, m.exhausted)
            return out
    title = f"planned: new range {new} ({plan.strategy})"
    out.append(NetworkMap("planned", label, str(new), tuple(planned), planned=True, title=title))
    return out


# --- drawing ----------------------------------------------------------------------------------------------


def _box_width(size: int) -> float:
    return 92 + 12 * math.log2(max(1, size))


def _items(m: NetworkMap) -> list[tuple[str, Any]]:
    """("area", Area) and ("gap", (first, last, count)) in address order."""
    items: list[tuple[int, str, Any]] = []
    for a in m.areas:
        n = _net(a.cidr)
        if n is not None:
            items.append((int(n.network_address), "area", a))
    gaps = free_blocks(m, include_planned=True) if not m.planned else []
    # Adjacent free blocks are one gap to a reader.
    merged: list[list[int]] = []
    for g in gaps:
        lo, hi = int(g.network_address), int(g.broadcast_address)
        if merged and merged[-1][1] + 1 == lo:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    items += [(lo, "gap", (lo, hi, hi - lo + 1)) for lo, hi in merged]
    items.sort(key=lambda t: (t[0], t[1] == "area"))
    return [(kind, value) for _, kind, value in items]


def _fit(text: str, width: float) -> str:
    # 7 px per character of 11 px system-ui (its widest digits and capitals), so a label stays in its box.
    chars = max(3, int((width - 8) / 7.0))
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _area_title(a: Area) -> str:
    parts = [f"{a.name} — {a.cidr}", f"{a.size:,} addresses"]
    if a.planned:
        parts.append("planned: not created yet")
    elif a.used is None:
        parts.append("taken (usage not known to cidrx)")
    else:
        parts.append(f"used {a.used:,}, free {a.free:,}" + (f", reserved {a.reserved:,}" if a.reserved else ""))
    if a.exhausted:
        parts.append("EXHAUSTED")
    if a.detail:
        parts.append(a.detail)
    return "; ".join(parts)


def _area_svg(a: Area, x: float, y: float, w: float, full: bool = False) -> str:
    classes = ["range", a.role] + (["exhausted"] if a.exhausted else []) + (["planned"] if a.planned else [])
    out = [f'<g class="{" ".join(classes)}" data-cidr="{escape(a.cidr)}"><title>{escape(_area_title(a))}</title>']
    if a.planned:
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BOX}" fill="{COLOURS["planned"]}"/>')
    elif a.used is None:
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BOX}" fill="{COLOURS["taken"]}"/>')
    elif a.role == "stale":
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BOX}" fill="{COLOURS["stale"]}"/>')
    else:
        total = max(1, a.size)
        reserved_w = w * a.reserved / total
        used_w = w * min(a.used, total - a.reserved) / total
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BOX}" fill="{COLOURS["free"]}"/>')
        if reserved_w:
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{reserved_w:.1f}" height="{BOX}" fill="{COLOURS["reserved"]}"/>'
            )
        if used_w:
            # Red for what is used in an exhausted range or pool (the legend's "used, range exhausted"),
            # also for the single addresses of a pool that has nothing left.
            fill = COLOURS["full"] if a.exhausted or full else COLOURS["used"]
            out.append(f'<rect x="{x + reserved_w:.1f}" y="{y}" width="{used_w:.1f}" height="{BOX}" fill="{fill}"/>')
    out.append(f'<rect class="frame" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BOX}"/>')
    top = a.cidr.removesuffix("/32") + (" FULL" if a.exhausted else "")
    out.append(f'<text x="{x + 4:.1f}" y="{y + 15}">{escape(_fit(top, w))}</text>')
    share = "planned" if a.planned else "in use" if a.used is None else f"{percent(_util(a))} used"
    if a.size == 1:
        share = {"stale": "stale", "reserved": "reserved"}.get(a.role, "in use")
    out.append(f'<text x="{x + 4:.1f}" y="{y + 31}">{escape(_fit(share, w))}</text>')
    out.append(f'<text x="{x + 2:.1f}" y="{y + BOX + 13}">{escape(_fit(a.name, w))}</text>')
    out.append("</g>")
    return "".join(out)


def _util(a: Area) -> float:
    usable = a.size - a.reserved
    if usable <= 0 and a.used == 0:
        return 0.0
    return 1.0 if usable <= 0 else (a.used or 0) / usable


def _gap_svg(first: int, last: int, count: int, x: float, y: float, w: float) -> str:
    span = f"{IPv4Address(first)} – {IPv4Address(last)}"
    title = f"unallocated: {span}; {count:,} addresses no range takes"
    return (
        f'<g class="gap" data-first="{IPv4Address(first)}"><title>{escape(title)}</title>'
        f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BOX}" fill="{COLOURS["unallocated"]}"/>'
        f'<text x="{x + 4:.1f}" y="{y + 15}">{escape(_fit("unallocated", w))}</text>'
        f'<text x="{x + 4:.1f}" y="{y + 31}">{escape(_fit(f"{count:,} addr", w))}</text>'
        f'<text x="{x + 2:.1f}" y="{y + BOX + 13}">{escape(_fit(str(IPv4Address(first)), w))}</text></g>'
    )


def map_svg(m: NetworkMap) -> str:
    """The extent as rows of boxes (ranges and unallocated gaps, address order), wrapped at WIDTH."""
    items = _items(m)
    widths = [_box_width(v.size if k == "area" else v[2]) for k, v in items]
    placed: list[tuple[float, float, float]] = []
    x, y = 0.0, 4.0
    for w in widths:
        w = min(w, WIDTH)
        if x > 0 and x + w > WIDTH:
            x, y = 0.0, y + ROW
        placed.append((x, y, w))
        x += w + GAP_X
    height = int(y + ROW)
    body = []
    for (kind, value), (bx, by, bw) in zip(items, placed, strict=True):
        if kind == "area":
            body.append(_area_svg(value, bx, by, bw, m.exhausted))
        else:
            first, last, count = value
            body.append(_gap_svg(first, last, count, bx, by, bw))
    label = escape(f"address map of {m.title or m.cidr}")
    return (
        f'<svg class="map" role="img" aria-label="{label}" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}">{"".join(body)}</svg>'
    )


def _legend() -> str:
    swatches = [
        ("used", "used"),
        ("full", "used, range exhausted"),
        ("free", "free"),
        ("stale", "stale (pod gone, reclaimable)"),
        ("reserved", "reserved (provider, network, broadcast)"),
        ("taken", "taken (usage unknown)"),
        ("unallocated", "unallocated"),
        ("planned", "planned by this plan"),
    ]
    spans = "".join(f'<span><i style="background:{COLOURS[k]}"></i>{escape(t)}</span>' for k, t in swatches)
    return f'<p class="legend">{spans}</p>'


def _map_section(m: NetworkMap) -> str:
    extent = _net(m.cidr)
    size = extent.num_addresses if extent is not None else 0
    used = covered(m)
    gaps = free_blocks(m)
    largest = min((g.prefixlen for g in gaps), default=None)
    ranges = [a for a in m.areas if not a.planned]
    if m.planned:
        summary = f"{m.cidr}: {size:,} addresses, planned"
    else:
        summary = f"{m.cidr}: {size:,} addresses; {len(ranges)} range(s) take {used:,}; {size - used:,} unallocated" + (
            f" (largest free block /{largest})" if largest is not None else ""
        )
        full = [a for a in m.areas if a.exhausted]
        if full:
            summary += f"; exhausted: {', '.join(a.cidr for a in full)}"
    badge = ' <span class="badge">EXHAUSTED</span>' if m.exhausted else ""
    return f"<h3>{escape(m.title or m.cidr)}{badge}</h3><p class='sum'>{escape(summary)}</p>{map_svg(m)}"


def _capacity_table(d: Diagnosis) -> str:
    head = "".join(
        f'<th class="{"n" if h in ("size", "used", "free", "util") else ""}">{h}</th>'
        for h in ("kind", "name", "zone", "cidr", "size", "used", "free", "util", "nodes/max", "nodes fit", "note")
    )
    rows = []
    for c in by_urgency(d.capacity):
        cls = "full" if c.utilization >= 1.0 else "tight" if c.utilization >= 0.8 else ""
        nodes = nodes_text(c)
        cells = [c.kind, c.name, c.zone or "", c.cidr or ""]
        numbers = [f"{c.size:,}", f"{c.used:,}", f"{c.free:,}", percent(c.utilization)]
        tds = "".join(f"<td>{escape(v)}</td>" for v in cells) + "".join(f'<td class="n">{v}</td>' for v in numbers)
        fit = "" if c.nodes_fit is None else f"{c.nodes_fit:,}"
        tds += f'<td>{escape(nodes)}</td><td class="n">{fit}</td><td>{escape(c.note or "")}</td>'
        rows.append(f'<tr class="{cls}">{tds}</tr>')
    return f"<div class='wide'><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"


def _fix_html(remediation: str) -> str:
    """The fix's prose (its `code` spans as <code>), then each command in a <pre><code> of its own."""
    fix = split_fix(remediation)
    parts = re.split(r"`([^`]+)`", fix.prose)
    prose = "".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts))
    commands = "".join(f"<pre><code>{escape(c)}</code></pre>" for c in fix.commands)
    return f"<p><b>Fix:</b> {prose}</p>{commands}"


def _findings(d: Diagnosis) -> str:
    if not d.findings:
        return "<p>none</p>"
    out = []
    for f in d.findings:
        evidence = "".join(f"<li>{escape(e)}</li>" for e in f.evidence)
        fix = _fix_html(f.remediation) if f.remediation else ""
        out.append(
            f'<div class="finding {f.severity.value}"><p><span class="sev">{f.severity.value}</span> '
            f"<code>{escape(f.id)}</code> {escape(f.subject)}</p><p>{escape(f.summary)}</p>"
            f"<ul>{evidence}</ul>{fix}</div>"
        )
    return "".join(out)


def _steps(plan: Plan) -> str:
    rows = "".join(
        f"<tr><td class='n'>{i}</td><td><code>{escape(s.id)}</code></td><td>{escape(s.action)}</td>"
        f"<td>{escape(s.description)}</td></tr>"
        for i, s in enumerate(plan.steps, start=1)
    )
    summary = "".join(f"<li>{escape(k)}: {escape(value_text(v))}</li>" for k, v in plan.summary.items())
    notes = "".join(f"<li>{escape(n)}</li>" for n in plan.notes)
    return (
        "<h2>Steps</h2><table><thead><tr><th class='n'>#</th><th>step</th><th>action</th><th>description</th></tr>"
        f"</thead><tbody>{rows}</tbody></table><h2>Summary</h2><ul>{summary}</ul>"
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
    )


def render_html(d: Diagnosis, maps: Sequence[NetworkMap], plan: Plan | None = None) -> str:
    """The page: title, the address maps (with the plan's new range when given), capacity, findings, and
    for a plan its steps, summary and notes."""
    if plan is not None:
        title = f"cidrx plan {plan.plan_id} for {plan.target.label()}"
        meta = f"strategy {plan.strategy}; made {plan.created_at} from snapshot {plan.snapshot_fingerprint[:12]}"
    else:
        title = f"cidrx diagnosis of {d.target.label()}"
        meta = f"snapshot {d.snapshot_fingerprint[:12] or 'unsealed'}{taken_note(d.taken_at)}; {counts_line(d)}"
    drawn = with_plan(maps, plan)
    sections = "".join(_map_section(m) for m in drawn) or "<p>No address space to draw.</p>"
    worst = next((s for s in (Severity.CRITICAL, Severity.WARNING) if any(f.severity is s for f in d.findings)), None)
    body = [
        f"<h1>{escape(title)}</h1><p class='meta'>{escape(meta)}</p>",
        f"<h2>Address maps</h2>{_legend()}{sections}",
        _steps(plan) if plan is not None else "",
        f"<h2>Capacity</h2>{_capacity_table(d)}" if d.capacity else "",
        f"<h2>Findings ({escape(counts_line(d))})</h2>{_findings(d)}",
    ]
    status = f" — {worst.value}" if worst is not None else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title + status)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
