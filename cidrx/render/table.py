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
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from cidrx.engine.verify import Verification
from cidrx.model.findings import Capacity, Diagnosis, Finding, Severity
from cidrx.model.plan import Plan, content_digest
from cidrx.render.age import taken_note
from cidrx.render.term import PLAIN, Term

_SEVERITIES = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)
_SEVERITY_STYLE = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
NUMERIC = frozenset({"size", "used", "free", "util%", "nodes/max", "#", "critical", "warning", "info"})
# Columns whose cells are one token (never wrapped while the table can be made to fit otherwise).
_ONE_TOKEN = frozenset(
    {"kind", "zone", "cidr", "size", "used", "free", "util%", "nodes/max", "#", "step", "action", "status"}
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
_MIN_TEXT = 12  # a text column narrower than this (or than its longest word, up to _LONG_WORD) is unreadable
_LONG_WORD = 24


def _min_widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """The narrowest each column may be: one-token columns whole, text columns as wide as their longest
    word (capped at _LONG_WORD, at least _MIN_TEXT), so nothing wraps a letter at a time."""
    out = []
    for c, h in enumerate(headers):
        cells = [len(h)] + [len(r[c]) for r in rows]
        if h in _ONE_TOKEN:
            out.append(max(cells))
        else:
            longest_word = max([len(w) for r in rows for w in r[c].split()] or [0])
            out.append(min(max(cells), max(len(h), min(_LONG_WORD, max(_MIN_TEXT, longest_word)))))
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
) -> str:
    """A table of `rows` under `headers` that fits `term.width`: columns separated by spaces, the header
    underlined with ASCII dashes, long cells wrapped (words longer than their column folded). When even
    that cannot fit, each row becomes a short block instead (see `_stacked`), never a line too long."""
    text_rows = [[str(v) for v in row] for row in rows]
    minimum = _min_widths(headers, text_rows)
    if sum(minimum) + _GAP * (len(headers) - 1) > term.width:
        return _stacked(headers, text_rows, term, lead)
    from rich.box import Box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    dashes = Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)
    table = Table(box=dashes, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="", highlight=False)
    for h, least in zip(headers, minimum, strict=True):
        justify: Literal["left", "right"] = "right" if h in NUMERIC else "left"
        table.add_column(h, justify=justify, no_wrap=h in _ONE_TOKEN, overflow="fold", min_width=least)
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
    if c.utilization >= 1.0 or (c.free == 0 and c.size > 0):
        return "bold red"
    return "yellow" if c.utilization >= 0.8 else None


def capacity_table(capacity: Sequence[Capacity], term: Term = PLAIN) -> str:
    ordered = by_urgency(capacity)
    has_zone = any(c.zone for c in ordered)
    has_nodes = any(c.nodes is not None or c.max_nodes is not None for c in ordered)
    has_note = any(c.note for c in ordered)
    has_fit = any(c.nodes_fit is not None for c in ordered)
    headers = ["kind", "name"] + (["zone"] if has_zone else []) + ["cidr", "size", "used", "free", "util%"]
    headers += (["nodes/max"] if has_nodes else []) + (["fit"] if has_fit else []) + (["note"] if has_note else [])
    rows: list[list[Any]] = []
    styles: list[list[str | None]] = []
    for c in ordered:
        row: list[Any] = [c.kind, c.name] + ([c.zone or ""] if has_zone else [])
        row += [c.cidr or "", c.size, c.used, c.free, percent(c.utilization)]
        if has_nodes:
            row.append(nodes_text(c))
        if has_fit:
            row.append("" if c.nodes_fit is None else c.nodes_fit)
        if has_note:
            row.append(c.note or "")
        rows.append(row)
        style = _util_style(c)
        styles.append([style if h in ("free", "util%") else None for h in headers])
    return grid(headers, rows, term, styles=styles)


def finding_block(f: Finding, term: Term = PLAIN) -> list[str]:
    w = term.width
    lines = [f"  {paint(f.id, _SEVERITY_STYLE[f.severity], term)}  {f.subject}"]
    if len(f"  {f.id}  {f.subject}") > w:
        lines = wrap(f"{f.id}  {f.subject}", w, "    ", first="  ")
        lines[0] = lines[0].replace(f.id, paint(f.id, _SEVERITY_STYLE[f.severity], term), 1)
    lines += wrap(f.summary, w, "    ")
    for e in f.evidence:
        lines += wrap(e, w, "        ", first="      - ")
    if f.remediation:
        lines += wrap(f.remediation, w, "         ", first="    fix: ")
    return lines


def heading(text: str, term: Term) -> str:
    return paint(text, "bold", term)


def render_diagnosis(d: Diagnosis, term: Term = PLAIN) -> str:
    snapshot = f"snapshot {d.snapshot_fingerprint[:12] or 'unsealed'}{taken_note(d.taken_at)}"
    title = f"cidrx diagnosis of {d.target.label()} ({snapshot})"
    out = [*wrap(title, term.width, "  ", first=""), ""]
    out.append(heading("Capacity", term))
    out.append(capacity_table(d.capacity, term) if d.capacity else "  (no address spaces found)")
    out.append("")
    out.append(heading("Findings", term))
    if not d.findings:
        out.append("  none")
    for sev in _SEVERITIES:
        group = [f for f in d.findings if f.severity is sev]
        if not group:
            continue
        out.append("")
        out.append(paint(f"{sev.value.upper()} ({len(group)})", _SEVERITY_STYLE[sev], term))
        for f in group:
            out += finding_block(f, term)
    out.append("")
    out.append(counts_line(d))
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
    rows = [
        [i, s.id, s.action, s.description, ", ".join(s.depends_on) or "-"] for i, s in enumerate(plan.steps, start=1)
    ]
    return grid(["#", "step", "action", "description", "depends on"], rows, term, lead=3)


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


def _figures(c: Capacity | None) -> str:
    if c is None:
        return "none"
    return f"{c.used}/{c.size} used, {c.free} free ({percent(c.utilization)})"


def verification_lines(v: Verification, term: Term = PLAIN) -> list[str]:
    """What a fresh snapshot says after the apply: capacity before -> after of the ranges the plan touched,
    findings resolved, still open and new."""
    w = term.width
    out = [heading("After the apply (a fresh snapshot, compared with the one the apply started from)", term)]
    out.append("  Capacity of the ranges the plan touched, before -> after:")
    for c in v.changes:
        where = f"{c.kind} {c.name}" + (f" {c.cidr}" if c.cidr else "")
        out += wrap(f"{where}: {_figures(c.before)} -> {_figures(c.after)}", w, "        ", first="    - ")
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
