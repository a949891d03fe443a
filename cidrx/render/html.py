"""`-o html`: one self-contained page with the diagnosis (or plan) and an SVG map of every network.

Pure: a Diagnosis, the snapshot's address maps (cidrx.model.netmap) and optionally a Plan in, one HTML
document out. Nothing is loaded from anywhere (inline CSS and SVG, no script, no fonts, no images), so
the file can be attached to a ticket or opened from a CI artefact offline.

Each map draws one extent (an address block of a cloud network, a private address space, an IPAM pool) as a row of
boxes in address order: every range in it and every unallocated gap between them. Boxes are drawn to scale: a
box is as wide as its share of its parent's addresses, and a range that holds other ranges (a subnet in a routed
block, a leaked or borrowed address in its IPAM block) draws them inside itself, to scale within it, wrapped onto
as many rows inside it as they need when they do not fit side by side (its box grows taller, never wider). Address
spaces differ by many orders of magnitude (a /28 next to a /16 is 1/4096 of it), so no box is narrower than a
minimum that keeps its address legible (MIN_W; MIN_ONE for a single address): a box at its minimum is wider than
its share and the boxes beside it give up that width in proportion to their sizes, so widths still rank by size
and every box says its exact size. Inside a range box, reserved, used and free addresses are drawn to scale. A
plan's new range is drawn in, dashed.

The capacity table keeps one line per row: the terminal table's columns, given up in its order as the window
narrows, and long text cut with "…" (the cell's title holds all of it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from ipaddress import IPv4Address, IPv4Network

from cidrx.model.findings import Diagnosis, Severity
from cidrx.model.netmap import Area, NetworkMap, covered, free_blocks
from cidrx.model.plan import Plan
from cidrx.render.age import taken_note
from cidrx.render.fixes import split_fix
from cidrx.render.table import (
    CAPACITY_HEADERS,
    DROP_ORDER,
    NUMERIC,
    by_urgency,
    capacity_cell,
    capacity_columns,
    counts_line,
    percent,
    util_text,
    value_text,
    verdict,
)

WIDTH = 760  # of each map's drawing, in SVG units: at a 760 px window its labels are drawn near their 11 px
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
    "borrowed": "#f2c12e",
    "route": "#ffffff",
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
table.capacity td, table.capacity th { white-space: nowrap; padding: 3px 6px; }
table.capacity td > div { max-width: 16em; overflow: hidden; text-overflow: ellipsis; }
table.capacity td.c-kind > div { max-width: 10em; }
table.capacity td.c-note { width: 100%; max-width: 0; } table.capacity td.c-note > div { max-width: none; }
tr.full td { background: #fdecea; } tr.tight td { background: #fff6e5; }
.finding { border-left: 4px solid #999; padding: 4px 10px; margin: 8px 0; background: #fafafa; }
.finding.critical { border-color: #d64541; } .finding.warning { border-color: #e8a33a; }
.finding.info { border-color: #4a90e2; }
.verdict { font-weight: 600; font-size: 16px; padding: 6px 10px; margin: 0 0 10px; border-left: 6px solid #4a90e2;
           background: #eef4fc; }
.verdict.critical { border-color: #d64541; background: #fdecea; } .verdict.warning { border-color: #e8a33a;
           background: #fff6e5; } .verdict.ok { border-color: #4caf50; background: #eef8ee; }
.badge { background: #d64541; color: #fff; font-size: 11px; padding: 1px 6px; border-radius: 3px; }
.sev { font-weight: 600; text-transform: uppercase; font-size: 12px; } code { font-size: 12px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 4px; border: 1px solid #888;
            vertical-align: middle; }
svg text { font: 11px system-ui, sans-serif; fill: #222; }
svg .gap rect { stroke: #bbb; stroke-dasharray: 2 2; }
svg .range > rect.frame { fill: none; stroke: #555; }
svg .range.exhausted > rect.frame { stroke: #b3261e; stroke-width: 3; }
svg .range.route > rect.frame { stroke: #777; stroke-dasharray: 4 3; }
svg .range.planned > rect.frame { stroke: #2f6fc4; stroke-width: 2; stroke-dasharray: 6 3; }
"""

# Below NARROW_PX a capacity column is given up, the next one _NARROW_STEP px further down, in the order the terminal's
# compact table gives them up (table.DROP_ORDER; the note is cut to the room left instead, the nodes stay, names
# show their id only): at 760 px the table holds what an 80-column terminal shows.
NARROW_PX = 1000
_NARROW_STEP = 70
CSS += "".join(
    f"@media (max-width: {NARROW_PX - _NARROW_STEP * i}px) {{ table.capacity .c-{col} {{ display: none; }} }}\n"
    for i, col in enumerate(c for c in DROP_ORDER if c in ("size", "used", "zone", "fit"))
)


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


MIN_W = 96.0  # a box's minimum width: "10.0.208.0/27" still reads in it
MIN_ONE = 72.0  # a single address's (a leaked or borrowed IP inside its block): ".41" over "borrowed"
HEAD = 38  # the band of a box that holds ranges: its own two labels and usage
PAD = 4  # between a box's frame and the ranges drawn inside it
LABEL = 16  # the name line under a box
ROW_GAP = 8  # between one row of boxes (their name lines included) and the next
FILL = 0.8  # the share of a row its boxes' minimum widths may take: the rest is shared to scale


@dataclass
class _Node:
    """A range with the ranges it holds (a subnet in a routed block, a leaked IP in its IPAM block)."""

    area: Area
    net: IPv4Network
    parent: str = ""
    children: list[_Node] = field(default_factory=list)


def _tree(m: NetworkMap) -> list[_Node]:
    """The map's areas as a forest: an area holds every later area inside it (address order, larger first)."""
    nodes = [_Node(a, n) for a in m.areas if (n := _net(a.cidr)) is not None]
    nodes.sort(key=lambda t: (int(t.net.network_address), t.net.prefixlen))
    roots: list[_Node] = []
    stack: list[_Node] = []
    for node in nodes:
        while stack and not node.net.subnet_of(stack[-1].net):
            stack.pop()
        if stack:
            node.parent = stack[-1].area.cidr
            stack[-1].children.append(node)
        else:
            roots.append(node)
        stack.append(node)
    return roots


_Part = tuple[int, int, "_Node | None"]


def _span(lo: int, hi: int, taken: Sequence[_Node]) -> list[_Part]:
    """[lo, hi] cut into the nodes (address order) and the unclaimed intervals between them."""
    out: list[_Part] = []
    at = lo
    for n in taken:
        first, last = int(n.net.network_address), int(n.net.broadcast_address)
        if first > at:
            out.append((at, first - 1, None))
        out.append((first, last, n))
        at = max(at, last + 1)
    if at <= hi:
        out.append((at, hi, None))
    return out


def _min_width(n: _Node) -> float:
    """The narrowest a range's box may be: its own labels, and room for the widest range it holds (its
    ranges wrap onto more rows inside it when they do not fit side by side)."""
    own = MIN_ONE if n.area.size == 1 else MIN_W
    if not n.children:
        return own
    return max(own, max(_min_width(c) for c in n.children) + 2 * PAD + 2 * GAP_X)


def _widths(sizes: Sequence[int], mins: Sequence[float], width: float) -> list[float]:
    """Widths proportional to `sizes` within `width`, none below its minimum: an item whose share is below
    its minimum gets the minimum and the others share what is left, in proportion (repeated until stable).
    Rows are cut so minimums take at most FILL of a row (_rows); should they still not fit, they are scaled
    down together (labels then shorten)."""
    # A box's minimum is raised to the largest minimum of any smaller sibling (a small range holding ranges
    # needs room for them), so a larger range is never drawn narrower than a smaller one; empty space inside a
    # range (minimum 0) keeps no minimum.
    mins = [
        max(m for m, z in zip(mins, sizes, strict=True) if z <= size) if own else 0.0
        for own, size in zip(mins, sizes, strict=True)
    ]
    if sum(mins) > width:
        k = width / sum(mins)
        mins = [w * k for w in mins]
    fixed: set[int] = set()
    while True:
        left = width - sum(mins[i] for i in fixed)
        share = sum(sizes[i] for i in range(len(sizes)) if i not in fixed)
        grow = {i for i in range(len(sizes)) if i not in fixed and (share <= 0 or left * sizes[i] / share < mins[i])}
        if not grow:
            return [mins[i] if i in fixed else left * sizes[i] / share for i in range(len(sizes))]
        fixed |= grow


# Advance widths of 11 px DejaVu Sans (the widest common system-ui fallback, measured in Chromium), rounded up:
# a label sized by them stays inside its box in narrower fonts too.
_NARROW = {c: 3.8 for c in " '.,:;/|ijlIJ"} | {c: 4.5 for c in "f-()[]tr!"}
_WIDE = {c: 8.7 for c in "KVXZBRCAUNHDGOQ&"} | {c: 11.0 for c in "wmMW%@#+=<>…"}


def text_width(text: str) -> float:
    """The width `text` takes in the map's 11 px labels, in px (an upper bound)."""
    return sum(_NARROW.get(c) or _WIDE.get(c) or 7.0 for c in text)


def _fit(text: str, width: float) -> str:
    # A label keeps 4 px either side inside its box; one that does not fit ends in "…" where it is cut.
    # A box too narrow for two characters (one of many ranges inside a small one) shows none: its title has it.
    room = width - 8
    if text_width(text) <= room:
        return text
    while text and text_width(text + "…") > room:
        text = text[:-1]
    return text + "…" if len(text) >= 2 else ""


def _area_title(a: Area) -> str:
    parts = [f"{a.name} — {a.cidr}", f"{a.size:,} addresses"]
    if a.planned:
        parts.append("planned: not created yet")
    elif a.role == "route":
        parts.append("routed to a network outside the cluster: context, not used-up capacity")
    elif a.used is None:
        parts.append("taken (usage not known to cidrx)")
    else:
        parts.append(f"used {a.used:,}, free {a.free:,}" + (f", reserved {a.reserved:,}" if a.reserved else ""))
    if a.exhausted:
        parts.append("EXHAUSTED")
    if a.detail:
        parts.append(a.detail)
    return "; ".join(parts)


def _area_svg(a: Area, x: float, y: float, w: float, full: bool = False, h: float = BOX, parent: str = "") -> str:
    classes = ["range", a.role] + (["exhausted"] if a.exhausted else []) + (["planned"] if a.planned else [])
    inside = f' data-in="{escape(parent)}"' if parent else ""
    out = [
        f'<g class="{" ".join(classes)}" data-cidr="{escape(a.cidr)}" data-size="{a.size}"{inside}>'
        f"<title>{escape(_area_title(a))}</title>"
    ]
    band = BOX if h == BOX else HEAD - PAD  # usage is drawn in the band above the ranges a box holds
    if band != h:
        out.append(f'<rect class="bg" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{h:.1f}" fill="#fff"/>')
    if a.planned:
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{band}" fill="{COLOURS["planned"]}"/>')
    elif a.role == "route":
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{band}" fill="{COLOURS["route"]}"/>')
    elif a.used is None:
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{band}" fill="{COLOURS["taken"]}"/>')
    elif a.role in ("stale", "borrowed"):
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{band}" fill="{COLOURS[a.role]}"/>')
    else:
        total = max(1, a.size)
        reserved_w = w * a.reserved / total
        used_w = w * min(a.used, total - a.reserved) / total
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{band}" fill="{COLOURS["free"]}"/>')
        if reserved_w:
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{reserved_w:.1f}" height="{band}" fill="{COLOURS["reserved"]}"/>'
            )
        if used_w:
            # Red for what is used in an exhausted range or pool (the legend's "used, range exhausted"),
            # also for the single addresses of a pool that has nothing left.
            fill = COLOURS["full"] if a.exhausted or full else COLOURS["used"]
            out.append(f'<rect x="{x + reserved_w:.1f}" y="{y}" width="{used_w:.1f}" height="{band}" fill="{fill}"/>')
    out.append(f'<rect class="frame" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{h:.1f}"/>')
    top = a.cidr.removesuffix("/32") if a.size > 1 else "." + a.cidr.removesuffix("/32").rsplit(".", 1)[-1]
    out.append(f'<text x="{x + 4:.1f}" y="{y + 15}">{escape(_fit(top, w))}</text>')
    share = (
        "planned"
        if a.planned
        else "other network"
        if a.role == "route"
        else "in use"
        if a.used is None
        else f"FULL {util_text(_util(a))}"
        if a.exhausted
        else f"{percent(_util(a))} used"
    )
    if a.size == 1:
        share = {"stale": "stale", "reserved": "reserved", "borrowed": "borrowed"}.get(a.role, "in use")
    out.append(f'<text x="{x + 4:.1f}" y="{y + 31}">{escape(_fit(share, w))}</text>')
    out.append(f'<text x="{x + 2:.1f}" y="{y + h + 13:.1f}">{escape(_fit(a.name, w))}</text>')
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
        f'<g class="gap" data-first="{IPv4Address(first)}" data-size="{count}"><title>{escape(title)}</title>'
        f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BOX}" fill="{COLOURS["unallocated"]}"/>'
        f'<text x="{x + 4:.1f}" y="{y + 15}">{escape(_fit("unallocated", w))}</text>'
        f'<text x="{x + 4:.1f}" y="{y + 31}">{escape(_fit(f"{count:,} addr", w))}</text>'
        f'<text x="{x + 2:.1f}" y="{y + BOX + 13}">{escape(_fit(str(IPv4Address(first)), w))}</text></g>'
    )


def _place(n: _Node, x: float, y: float, w: float, full: bool) -> tuple[list[str], float]:
    """A range's box at (x, y), `w` wide, with the ranges it holds inside it (wrapped onto as many rows as
    they need): its SVG and its height."""
    if not n.children:
        return [_area_svg(n.area, x, y, w, full, BOX, n.parent)], BOX
    parts = _span(int(n.net.network_address), int(n.net.broadcast_address), n.children)
    if len(_rows(parts, False, w - 2 * PAD)) > 1:
        # Ranges that wrap onto several rows fill them: empty space between them would no longer be to scale.
        parts = [p for p in parts if p[2] is not None]
    inner, h = _stack(parts, x + PAD, y + HEAD, w - 2 * PAD, full, gaps=False)
    h += HEAD + PAD
    return [_area_svg(n.area, x, y, w, full, h, n.parent), *inner], h


def _stack(parts: list[_Part], x: float, y: float, w: float, full: bool, *, gaps: bool) -> tuple[list[str], float]:
    """`parts` (address order) in rows that fit `w` (_rows), one under the other: their SVG and the height
    they take, name lines included."""
    body: list[str] = []
    top = y
    for row in _rows(parts, gaps, w):
        svg, h = _row(row, x, y, w, full, gaps=gaps)
        body += svg
        y += h + LABEL + ROW_GAP
    return body, y - ROW_GAP - top


def _row(parts: list[_Part], x: float, y: float, w: float, full: bool, *, gaps: bool) -> tuple[list[str], float]:
    """Lay `parts` side by side in `w`, each as wide as its share of the addresses (minimums kept): their SVG
    and the height of the tallest. Unclaimed intervals are drawn as unallocated boxes at the top level
    (`gaps`), as empty space inside a range."""
    mins = [_min_width(n) if n is not None else (MIN_W if gaps else 0.0) for _, _, n in parts]
    widths = _widths([hi - lo + 1 for lo, hi, _ in parts], mins, w - GAP_X * (len(parts) - 1))
    body: list[str] = []
    height = 0.0
    for (lo, hi, n), bw in zip(parts, widths, strict=True):
        if n is not None:
            svg, h = _place(n, x, y, bw, full)
            body += svg
            height = max(height, h)
        elif gaps:
            body.append(_gap_svg(lo, hi, hi - lo + 1, x, y, bw))
            height = max(height, BOX)
        x += bw + GAP_X
    return body, height


def _rows(parts: list[_Part], gaps: bool, width: float) -> list[list[_Part]]:
    """`parts` in address order, cut into rows whose boxes fit `width` at their minimum widths (a 10.0.0.0/8
    network space holds a dozen ranges and the gaps between them; a small block may hold more leaked
    addresses than fit side by side): to scale within a row. At the top level (`gaps`) the minimums take at
    most FILL of a row, so the rest is shared to scale; inside a range, empty space (no box) takes the rest,
    goes with the row it falls in and never makes a row of its own."""
    budget = width * FILL if gaps else width
    rows: list[list[_Part]] = [[]]
    used = 0.0
    for part in parts:
        need = _need(part, gaps)
        if used > 0 and need > 0 and used + need > budget:
            rows.append([])
            used = 0.0
        rows[-1].append(part)
        used += need
    # The same number of boxes per row where they fit, so a short last row is not stretched across the map.
    per = -(-len(parts) // len(rows))
    even = [parts[i : i + per] for i in range(0, len(parts), per)]
    if len(even) == len(rows) and all(
        sum(_need(p, gaps) for p in row) <= budget and any(_need(p, gaps) for p in row) for row in even
    ):
        return even
    return rows


def _need(part: _Part, gaps: bool) -> float:
    """The width a part takes in a row at its minimum (its share of the gaps between boxes included)."""
    if part[2] is not None:
        return _min_width(part[2]) + GAP_X
    return MIN_W + GAP_X if gaps else 0.0


def map_svg(m: NetworkMap) -> str:
    """The extent as rows of boxes to scale (ranges and unallocated gaps, address order), each range's
    own ranges drawn inside it, to scale within it."""
    roots = _tree(m)
    extent = _net(m.cidr)
    if extent is not None and all(r.net.subnet_of(extent) for r in roots):
        parts = _span(int(extent.network_address), int(extent.broadcast_address), roots)
        if m.planned:
            parts = [p for p in parts if p[2] is not None]
    else:
        parts = [(int(r.net.network_address), int(r.net.broadcast_address), r) for r in roots]
    body, h = _stack(parts, 0.0, 4.0, WIDTH, m.exhausted, gaps=not m.planned)
    height = int(4 + h + ROW_GAP)
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
        ("borrowed", "borrowed (pod on another node than its block's)"),
        ("reserved", "reserved (provider, network, broadcast)"),
        ("taken", "taken (usage unknown)"),
        ("route", "route to another network (context, not capacity)"),
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
        if ranges and all(a.role == "route" for a in ranges):
            summary = f"{m.cidr}: routes to other networks only: context for where a new range may go, not capacity"
        elif full:
            summary += f"; exhausted: {', '.join(a.cidr for a in full)}"
    badge = ' <span class="badge">EXHAUSTED</span>' if m.exhausted else ""
    return f"<h3>{escape(m.title or m.cidr)}{badge}</h3><p class='sum'>{escape(summary)}</p>{map_svg(m)}"


def _capacity_table(d: Diagnosis) -> str:
    """Capacity rows closest to full first, one line each: the columns of the terminal's table (those with
    something to show), names by their id, a cell too long for its column cut with "…" (its title holds
    the whole text)."""
    ordered = by_urgency(d.capacity)
    cols = capacity_columns(ordered)
    head = "".join(
        f'<th class="c-{col}{" n" if col in NUMERIC else ""}">{CAPACITY_HEADERS.get(col, col)}</th>' for col in cols
    )
    rows = []
    for c in ordered:
        cls = "full" if c.utilization >= 1.0 else "tight" if c.utilization >= 0.8 else ""
        tds = []
        for col in cols:
            text = capacity_cell(c, col, display=col != "name", precise=True)
            if col in NUMERIC:
                short, whole = _number(text)
                title = f' title="{escape(whole)}"' if short != whole else ""
                tds.append(f'<td class="c-{col} n"{title}>{escape(short)}</td>')
            else:
                whole = c.name if col == "name" else text
                title = f' title="{escape(whole)}"' if whole else ""
                tds.append(f'<td class="c-{col}"{title}><div>{escape(text)}</div></td>')
        rows.append(f'<tr class="{cls}">{"".join(tds)}</tr>')
    table = f"<table class='capacity'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return f"<div class='wide'>{table}</div>"


def _number(text: str) -> tuple[str, str]:
    """A count as shown (thousands separated; beyond 12 digits, an IPv6 range's size, as 1.8e19) and whole."""
    if not text.isdigit():
        return text, text
    whole = f"{int(text):,}"
    return (whole if len(text) <= 12 else f"{int(text):.1e}".replace("e+", "e")), whole


def _fix_html(remediation: str) -> str:
    """The fix's prose (its `code` spans as <code>), then each command in a <pre><code> of its own."""
    fix = split_fix(remediation)
    parts = re.split(r"`([^`]+)`", fix.prose)
    prose = "".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts))
    commands = "".join(f"<pre><code>{escape(c)}</code></pre>" for c in fix.commands)
    return f"<p><b>Fix:</b> {prose}</p>{commands}"


_WORST_FIRST = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)


def _findings(d: Diagnosis) -> str:
    if not d.findings:
        return "<p>none</p>"
    out = []
    for f in sorted(d.findings, key=lambda f: _WORST_FIRST.index(f.severity)):  # stable: same order within one
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
    """The page. A diagnosis: title, the verdict line of the terminal, findings worst first, the address maps,
    capacity (the answer first, as at a terminal). A plan: title, the address maps with the plan's new range,
    its steps, summary and notes, capacity, findings."""
    if plan is not None:
        title = f"cidrx plan {plan.plan_id} for {plan.target.label()}"
        meta = f"strategy {plan.strategy}; made {plan.created_at} from snapshot {plan.snapshot_fingerprint[:12]}"
    else:
        title = f"cidrx diagnosis of {d.target.label()}"
        meta = f"snapshot {d.snapshot_fingerprint[:12] or 'unsealed'}{taken_note(d.taken_at)}; {counts_line(d)}"
    drawn = with_plan(maps, plan)
    sections = "".join(_map_section(m) for m in drawn) or "<p>No address space to draw.</p>"
    worst = next((s for s in (Severity.CRITICAL, Severity.WARNING) if any(f.severity is s for f in d.findings)), None)
    heading = f"<h1>{escape(title)}</h1><p class='meta'>{escape(meta)}</p>"
    findings = f"<h2>Findings ({escape(counts_line(d))})</h2>{_findings(d)}"
    maps_html = f"<h2>Address maps</h2>{_legend()}{sections}"
    capacity = f"<h2>Capacity</h2>{_capacity_table(d)}" if d.capacity else ""
    if plan is not None:
        body = [heading, maps_html, _steps(plan), capacity, findings]
    else:
        sev, line = verdict(d, counts=False)  # the counts follow in the line under the title
        body = [
            f"<p class='verdict {sev.value if sev and sev is not Severity.INFO else 'ok'}'>{escape(line)}</p>{heading}",
            findings,
            maps_html,
        ]
        body.append(capacity)
    status = f" — {worst.value}" if worst is not None else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title + status)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
