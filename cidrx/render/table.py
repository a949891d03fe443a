"""Plain-text rendering for a person at a terminal (or reading a CI log): diagnoses, plans, apply results.

Pure functions, object in and text out, so the CLI decides where text goes and tests read it directly.
Capacity and steps are tables laid out by rich to the `Term`'s width (long cells wrap inside their
column instead of running off the screen); findings are indented blocks wrapped to the same width.
Colour (severity, full ranges) only when the Term says so; without it the text is plain ASCII, the same
on every run, so CI logs and the README's examples stay stable.
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from cidrx.engine.verify import Verification
from cidrx.model.findings import KUBE_UNREACHABLE, Capacity, Diagnosis, Finding, Severity, worst
from cidrx.model.plan import Plan, content_digest
from cidrx.render.age import taken_note
from cidrx.render.fixes import continued, split_fix
from cidrx.render.term import PLAIN, Term

_SEVERITIES = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)
_SEVERITY_STYLE = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
NUMERIC = frozenset(
    {"size", "used", "free", "util%", "util", "nodes/max", "nodes", "fit", "#", "critical", "warning", "info"}
)
# Columns whose cells are one token (never wrapped while the table can be made to fit otherwise).
_ONE_TOKEN = frozenset(
    {"kind", "zone", "cidr", "size", "used", "free", "util%", "util", "nodes/max", "nodes", "fit", "#", "step"}
    | {"action", "status"}
)


def percent(utilization: float) -> str:
    return f"{utilization * 100:.1f}%"


def counts_line(d: Diagnosis) -> str:
    """`2 critical, 1 warning, 0 info`: every severity, worst first, even when zero."""
    counts = {s.value: d.counts.get(s.value, sum(1 for f in d.findings if f.severity is s)) for s in _SEVERITIES}
    return ", ".join(f"{counts[s.value]} {s.value}" for s in _SEVERITIES)


def paint(text: str, style: str, term: Term) -> str:
    """`text` in `style` (a rich style, e.g. "bold red") when the Term takes colour, else as it is."""
    if not term.color or not text:
        return text
    from rich.color import ColorSystem
    from rich.style import Style

    return Style.parse(style).render(text, color_system=ColorSystem.STANDARD)


def wrap(text: str, width: int, indent: str, first: str | None = None) -> list[str]:
    """`text` wrapped to `width`, breaking only at spaces (CIDRs, ids and flags stay whole) unless a single
    word is longer than a whole line, which is then cut so no line exceeds `width`."""
    lead = indent if first is None else first
    return textwrap.wrap(
        text,
        width=max(width, len(lead) + 8),
        initial_indent=lead,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [lead.rstrip()]


_GAP = 2  # spaces between columns
_MIN_TEXT = 12  # a text column narrower than this (or than its longest word) is unreadable


def _min_widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """The narrowest each column may be: one-token columns whole, text columns as wide as their longest
    word (at least _MIN_TEXT), so no token (an id, an env variable, a CIDR) is ever broken across lines."""
    out = []
    for c, h in enumerate(headers):
        cells = [len(h)] + [len(r[c]) for r in rows]
        if h in _ONE_TOKEN:
            out.append(max(cells))
        else:
            longest_word = max([len(w) for r in rows for w in r[c].split()] or [0])
            out.append(min(max(cells), max(len(h), _MIN_TEXT, longest_word)))
    return out


def _stacked(headers: Sequence[str], rows: Sequence[Sequence[str]], term: Term, lead: int) -> str:
    """The narrow-terminal form of a table: per row, its first `lead` cells on one line, then its one-token
    cells as `header value` on one wrapped line, then each other non-empty cell on its own wrapped line."""
    out: list[str] = []
    for row in rows:
        out += wrap("  ".join(cell for cell in row[:lead] if cell), term.width, "    ", first="")
        short = [f"{h} {cell}" for h, cell in zip(headers[lead:], row[lead:], strict=True) if cell and h in _ONE_TOKEN]
        if short:
            out += _pieces(short, term.width, "    ", "      ")
        for h, cell in zip(headers[lead:], row[lead:], strict=True):
            if cell and h not in _ONE_TOKEN:
                out += wrap(cell, term.width, "      ", first=f"    {h}: ")
    return "\n".join(out)


def _pieces(pieces: Sequence[str], width: int, first: str, indent: str) -> list[str]:
    """`pieces` joined by ", " on as few lines as fit `width`, never splitting a piece unless it alone is
    too long for a line."""
    lines: list[str] = []
    line = first
    for i, piece in enumerate(pieces):
        text = piece + ("," if i < len(pieces) - 1 else "")
        lead = line.strip() != ""
        if lead and len(line) + 1 + len(text) > width:
            lines.append(line.rstrip())
            line = indent
            lead = False
        line += (" " if lead else "") + text
    lines.append(line.rstrip())
    out: list[str] = []
    for text in lines:
        out += wrap(text.strip(), width, indent, first=text[: len(text) - len(text.lstrip())])
    return out


def grid(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    term: Term,
    *,
    styles: Sequence[Sequence[str | None]] | None = None,
    lead: int = 2,
    stack: bool = True,
) -> str:
    """A table of `rows` under `headers` that fits `term.width`: columns separated by spaces, the header
    underlined with ASCII dashes, long cells wrapped (words longer than their column folded). When even
    that cannot fit, each row becomes a short block instead (see `_stacked`), never a line too long; with
    `stack=False` the table stays a table and its cells wrap instead."""
    text_rows = [[str(v) for v in row] for row in rows]
    minimum = _min_widths(headers, text_rows)
    too_wide = sum(minimum) + _GAP * (len(headers) - 1) > term.width
    if too_wide and stack:
        return _stacked(headers, text_rows, term, lead)
    from rich.box import Box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    dashes = Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)
    table = Table(box=dashes, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="", highlight=False)
    for h, least in zip(headers, minimum, strict=True):
        justify: Literal["left", "right"] = "right" if h in NUMERIC else "left"
        one_line = h in _ONE_TOKEN and not too_wide
        table.add_column(h, justify=justify, no_wrap=one_line, overflow="fold", min_width=None if too_wide else least)
    for r, row in enumerate(text_rows):
        cells = []
        for c, value in enumerate(row):
            style = styles[r][c] if styles is not None and c < len(styles[r]) else None
            cells.append(Text(value, style=style or ""))
        table.add_row(*cells)
    console = Console(
        file=io.StringIO(),
        width=term.width,
        color_system="standard" if term.color else None,
        force_terminal=term.color,
        no_color=not term.color,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
        _environ={},
    )
    console.print(table)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in str(text).rstrip("\n").split("\n"))


def by_urgency(capacity: Sequence[Capacity]) -> list[Capacity]:
    """Capacity rows closest to full first: highest utilisation, then fewest free; ties keep their order."""
    return sorted(capacity, key=lambda c: (-c.utilization, c.free))


def _util_style(c: Capacity) -> str | None:
    if is_out(c):
        return "bold red"
    return "yellow" if c.utilization >= 0.8 else None


def is_out(c: Capacity) -> bool:
    """An address space (or node group) with nothing left."""
    return c.size > 0 and (c.free <= 0 or c.utilization >= 1.0)


def short_name(name: str) -> str:
    """A capacity row's name without the display name in parentheses ("subnet-0abc (PublicSubnet01)" ->
    "subnet-0abc"): the id alone identifies the row and can be pasted into a cloud CLI."""
    return _DISPLAY.sub("", name)


_DISPLAY = re.compile(r" \([^()]*\)$")


def util_text(utilization: float) -> str:
    """Utilisation in at most 4 characters for the compact table: "100%", "83%", "3.7%"."""
    pct = utilization * 100
    return f"{pct:.0f}%" if pct >= 10 or pct == 0 else f"{pct:.1f}%"


# The order the compact capacity table gives columns up in when it would not fit: the note, the decimal of
# util%, the display names, the figures `free`/`util` summarise, the zone, the node figures. kind, name,
# cidr, free and util always stay.
DROP_ORDER = ("note", "precision", "display", "size", "used", "zone", "fit", "nodes")


def capacity_columns(ordered: Sequence[Capacity]) -> list[str]:
    cols = ["kind", "name"]
    cols += ["zone"] if any(c.zone for c in ordered) else []
    cols += ["cidr", "size", "used", "free", "util"]
    cols += ["nodes"] if any(c.nodes is not None or c.max_nodes is not None for c in ordered) else []
    cols += ["fit"] if any(c.nodes_fit is not None for c in ordered) else []
    cols += ["note"] if any(c.note for c in ordered) else []
    return cols


def capacity_cell(c: Capacity, col: str, display: bool, precise: bool) -> str:
    if col == "name":
        return c.name if display else short_name(c.name)
    if col == "util":
        return percent(c.utilization) if precise else util_text(c.utilization)
    if col == "nodes":
        return nodes_text(c)
    if col == "fit":
        return "" if c.nodes_fit is None else str(c.nodes_fit)
    if col == "zone":
        return c.zone or ""
    if col == "cidr":
        return c.cidr or ""
    if col == "note":
        return c.note or ""
    return str(getattr(c, col))


# The full headers of --wide; the compact table says "util" and "nodes" to save columns.
CAPACITY_HEADERS = {"util": "util%", "nodes": "nodes/max"}


def capacity_table(capacity: Sequence[Capacity], term: Term = PLAIN) -> str:
    """Capacity rows, closest to full first, as one real table: one line per row. When every column does
    not fit the width, columns are given up in `DROP_ORDER` (and names lose their display part) until
    the rest fits; `Term.wide` keeps every column at its full width however wide that makes the lines."""
    ordered = by_urgency(capacity)
    cols = capacity_columns(ordered)
    dropped: set[str] = set()

    def layout() -> tuple[list[str], list[list[str]]]:
        shown = [c for c in cols if c not in dropped]
        precise = "precision" not in dropped
        rows = [[capacity_cell(c, col, "display" not in dropped, precise) for col in shown] for c in ordered]
        return shown, rows

    shown, rows = layout()
    if not term.wide:
        for victim in DROP_ORDER:
            if _natural_width(shown, rows) <= term.width:
                break
            dropped.add(victim)
            shown, rows = layout()
    styles = [[_util_style(c) if col in ("free", "util") else None for col in shown] for c in ordered]
    full = "precision" not in dropped
    headers = [CAPACITY_HEADERS.get(col, col) if full else col for col in shown]
    width = max(term.width, _natural_width(shown, rows)) if term.wide else term.width
    return grid(headers, rows, Term(width=width, color=term.color), styles=styles, stack=False)


def _natural_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The width of a table whose every cell is on one line (its header's dashes run one past the last
    column)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return sum(widths) + _GAP * (len(headers) - 1) + 1


def _fix_lines(f: Finding, term: Term, seen: dict[str, str]) -> list[str]:
    """`fix:` and the prose, then each command on its own lines (`\\`-continued to fit the width), so the
    command runs when pasted as printed. A fix already printed for an earlier finding is referred to."""
    if not f.remediation:
        return []
    if f.remediation in seen and not term.wide:
        return [f"    fix: as for {seen[f.remediation]} above"]
    seen.setdefault(f.remediation, f.id)
    fix = split_fix(f.remediation)
    lines = wrap(fix.prose, term.width, "         ", first="    fix: ") if fix.prose else ["    fix:"]
    width = 10**6 if term.wide else term.width
    for command in fix.commands:
        lines += continued(command, width, "      ")
    return lines


# Evidence lines shown per finding without --wide; the rest is summed up in one line.
_EVIDENCE = 2


def finding_block(f: Finding, term: Term = PLAIN, seen: dict[str, str] | None = None) -> list[str]:
    w = 10**6 if term.wide else term.width
    tag = paint(f.severity.value.upper(), _SEVERITY_STYLE[f.severity], term)
    lines = wrap(f"{f.severity.value.upper()} {f.id}  {f.subject}", w, "    ", first="")
    lines[0] = lines[0].replace(f.severity.value.upper(), tag, 1)
    lines += wrap(f.summary, w, "    ", first="  ")
    shown = f.evidence if term.wide else f.evidence[:_EVIDENCE]
    for e in shown:
        lines += wrap(e, w, "      ", first="    - ")
    if len(f.evidence) > len(shown):
        lines.append(f"    - ... {len(f.evidence) - len(shown)} more (--wide shows all)")
    lines += _fix_lines(f, Term(width=w, color=term.color, wide=term.wide), {} if seen is None else seen)
    return lines


def heading(text: str, term: Term) -> str:
    return paint(text, "bold", term)


def _plural(kind: str, n: int) -> str:
    return kind if n == 1 or kind.endswith("s") else f"{kind}s"


def verdict(d: Diagnosis, width: int = 10**6, counts: bool = True) -> tuple[Severity | None, str]:
    """The one line a person reads first: the worst severity, what is full and where (else
    the worst finding's summary). Made shorter, detail by detail, until it fits `width`."""
    sev = worst(d.findings)
    if sev is None:
        return None, "OK: no problems found"
    tail = f" ({counts_line(d)})" if counts else ""
    if sev is Severity.INFO:  # information only (e.g. a full range an applied plan relieves): nothing to do
        text = "OK: nothing needs action"
        return sev, text + tail if len(text + tail) <= width else text
    out = [c for c in by_urgency(d.capacity) if is_out(c)]
    head = f"{sev.value.upper()}: "
    candidates: list[str] = []
    if out:
        kinds: dict[str, list[Capacity]] = {}
        for c in out:
            kinds.setdefault(c.kind, []).append(c)
        zones = list(dict.fromkeys(c.zone for c in out if c.zone))
        where = f" in {', '.join(zones)}" if zones else ""
        named = ", ".join(
            f"{k} {short_name(g[0].name)}" if len(g) == 1 else f"{len(g)} {_plural(k, 2)}" for k, g in kinds.items()
        )
        counted = ", ".join(f"{len(g)} {_plural(k, len(g))}" for k, g in kinds.items())
        for what in (named, counted):
            candidates += [f"{what} full{where}", f"{what} full"]
        candidates = [head + c for c in candidates]
    else:
        first = next(f for f in d.findings if f.severity is sev)
        candidates = [f"{head}{first.summary}"]
    for text in candidates:
        for end in (tail, ""):
            if len(text + end) <= width:
                return sev, text + end
    return sev, candidates[-1]


def render_diagnosis(d: Diagnosis, term: Term = PLAIN) -> str:
    """Verdict, findings worst first (each with one fix), capacity as a table, counts: the answer first,
    so it is on screen at the top during an incident."""
    w = 10**6 if term.wide else term.width
    sev, line = verdict(d, w)
    painted = paint(line, "green" if sev in (None, Severity.INFO) else _SEVERITY_STYLE[sev], term)
    out = [painted]
    for f in d.findings:  # an info finding, but it changes what the verdict covers: say so at the top
        if f.id == KUBE_UNREACHABLE.id:
            why = f": {f.evidence[0]}" if f.evidence else ""
            out += wrap(f"note: in-cluster checks did not run{why}", w, "  ", first="")
    snapshot = f"snapshot {d.snapshot_fingerprint[:12] or 'unsealed'}{taken_note(d.taken_at)}"
    out += wrap(f"cidrx diagnosis of {d.target.label()} ({snapshot})", 10**6 if term.wide else term.width, "  ", "")
    out.append("")
    out.append(heading("Findings", term))
    if not d.findings:
        out.append("  none")
    seen: dict[str, str] = {}
    for sev_ in _SEVERITIES:
        for f in (f for f in d.findings if f.severity is sev_):
            out += finding_block(f, term, seen)
    out.append("")
    out.append(heading("Capacity", term))
    out.append(capacity_table(d.capacity, term) if d.capacity else "  (no address spaces found)")
    out.append("")
    if counts_line(d) not in line:
        out.append(counts_line(d))
    out.append(painted)  # the verdict again: after a long report it is the line left on screen
    return "\n".join(out) + "\n"


def nodes_text(c: Capacity) -> str:
    """The nodes/max cell: "2/4" with an address-space limit, "2" without one, "" when neither is known."""
    nodes = "" if c.nodes is None else str(c.nodes)
    return f"{nodes}/{c.max_nodes}" if c.max_nodes is not None else nodes


def value_text(value: Any) -> str:
    """A basis/summary/output value on one line: strings as they are, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "), default=str)


def mapping_lines(data: Mapping[str, Any], term: Term = PLAIN, indent: str = "  ") -> list[str]:
    lines: list[str] = []
    for key, value in data.items():
        lines += wrap(value_text(value), term.width, indent + "    ", first=f"{indent}{key}: ")
    return lines


def steps_table(plan: Plan, term: Term = PLAIN) -> str:
    """Every plan's steps in one layout, whatever the strategy and width: `N  step-id  (action)`, then the
    description and what the step waits for, wrapped under it (words never broken)."""
    out: list[str] = []
    pad = len(str(len(plan.steps)))
    indent = " " * (pad + 2)
    for i, s in enumerate(plan.steps, start=1):
        out += wrap(f"{str(i).rjust(pad)}  {s.id}  ({s.action})", term.width, indent + "  ", first="")
        out += wrap(s.description, term.width, indent + "  ", first=indent)
        if s.depends_on:
            out += wrap(f"after: {', '.join(s.depends_on)}", term.width, indent + "  ", first=indent)
    return "\n".join(out)


def render_plan(plan: Plan, term: Term = PLAIN) -> str:
    out = [
        *wrap(f"cidrx plan {plan.plan_id or '(unsealed)'} for {plan.target.label()}", term.width, "  ", first=""),
        *wrap(f"strategy: {plan.strategy}", term.width, "    ", first="  "),
        *wrap(f"content digest: {content_digest(plan)[:16]} (target, basis and steps)", term.width, "    ", "  "),
        *wrap(f"made: {plan.created_at} from snapshot {plan.snapshot_fingerprint[:12]}", term.width, "    ", "  "),
        "",
        heading("Steps", term),
        steps_table(plan, term) if plan.steps else "  (nothing to do)",
        "",
        heading("Basis (apply refuses the plan if any of this changed)", term),
    ]
    out += mapping_lines(plan.basis, term) or ["  (none)"]
    if plan.summary:
        out += ["", heading("Summary", term), *mapping_lines(plan.summary, term)]
    if plan.notes:
        out += ["", heading("Notes", term)]
        for n in plan.notes:
            out += wrap(n, term.width, "    ", first="  - ")
    return "\n".join(out) + "\n"


def render_results(
    results: Sequence[tuple[str, str, Mapping[str, Any]]],
    notes: Sequence[str] = (),
    term: Term = PLAIN,
    verification: Verification | None = None,
    unverified: str | None = None,
) -> str:
    """What an apply did, one row per step (`done`, `skipped` = found already done), what a fresh snapshot
    says about it (or why it could not be taken), then what is left to do by hand."""
    rows = [
        [step_id, status, ", ".join(f"{k}={value_text(v)}" for k, v in outputs.items())]
        for step_id, status, outputs in results
    ]
    out = [grid(["step", "status", "outputs"], rows, term, lead=2)]
    done = sum(1 for _, status, _ in results if status == "done")
    out += ["", f"{done} step(s) changed something, {len(results) - done} were already done"]
    if verification is not None:
        out += ["", *verification_lines(verification, term)]
    elif unverified:
        out += ["", *wrap(f"could not check the result: {unverified}", term.width, "    ")]
    if notes:
        out += ["", heading("Next steps (by hand)", term)]
        for n in notes:
            out += wrap(n, term.width, "    ", first="  - ")
    return "\n".join(out) + "\n"


def _figures(c: Capacity) -> str:
    if c.size == 0:
        return "no nodes yet" if not c.nodes else "no room counted"
    return f"{c.used}/{c.size} used, {c.free} free ({percent(c.utilization)})"


def change_text(before: Capacity | None, after: Capacity | None) -> str:
    """One range before -> after an apply, in words where a figure would mislead ("none -> 0/0 used")."""
    if before is None and after is None:
        return "unchanged"
    if before is None:
        assert after is not None
        return f"new: {_figures(after)}"
    if after is None:
        return f"{_figures(before)} -> gone"
    return f"{_figures(before)} -> {_figures(after)}"


def verification_lines(v: Verification, term: Term = PLAIN) -> list[str]:
    """What a fresh snapshot says after the apply: capacity before -> after of the ranges the plan touched,
    findings resolved, still open and new."""
    w = term.width
    out = [heading("After the apply (a fresh snapshot, compared with the one the apply started from)", term)]
    out.append("  Capacity of the ranges the plan touched, before -> after:")
    for c in v.changes:
        where = f"{c.kind} {c.name}" + (f" {c.cidr}" if c.cidr else "")
        out += wrap(f"{where}: {change_text(c.before, c.after)}", w, "        ", first="    - ")
    if not v.changes:
        out.append("    (no capacity changed)")
    groups = (("Findings resolved", v.resolved, "green"), ("Still open", v.still_open, "yellow"), ("New", v.new, "red"))
    for title, findings, style in groups:
        out.append(f"  {paint(f'{title} ({len(findings)})', style, term) if findings else f'{title} (0)'}")
        for f in findings:
            out += wrap(f"{f.id} ({f.severity.value}) {f.subject}", w, "        ", first="    - ")
            if title != "Findings resolved" and f.remediation:
                out += wrap(f.remediation, w, "             ", first="        fix: ")
    return out
