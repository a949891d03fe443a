"""GitHub-flavoured Markdown for CI job summaries and merge-request comments.

Pure text out. Severity badges are bold words, not emoji, so they survive any renderer and read well in
plain text too. Text from the cluster (event messages carry `<id>`-like placeholders) is escaped so a
renderer never swallows it as HTML.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from cidrx.model.findings import Diagnosis, Severity
from cidrx.model.plan import Plan, content_digest
from cidrx.render.age import taken_note
from cidrx.render.fixes import split_fix
from cidrx.render.table import by_urgency, counts_line, nodes_text, percent, value_text, verdict

_SEVERITIES = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)


def escape(text: str) -> str:
    """Text safe inside a paragraph or list item: no raw HTML, no accidental emphasis at line start."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cell(value: Any) -> str:
    """A table cell: escaped, with pipes and newlines that would break the row neutralised."""
    text = "" if value is None else str(value)
    return escape(text).replace("|", "\\|").replace("\r", " ").replace("\n", "<br>")


def code(text: str) -> str:
    """Inline code that survives backticks inside `text`."""
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def prose(text: str) -> str:
    """Fix prose: `code` spans kept as code (their text shown as is), everything else escaped."""
    parts = re.split(r"(`[^`]+`)", text)
    return "".join(p if p.startswith("`") and p.endswith("`") and len(p) > 1 else escape(p) for p in parts)


def fix_lines(remediation: str, indent: str = "  ") -> list[str]:
    """A finding's fix: its prose, then its commands in one fenced block, one command per line."""
    fix = split_fix(remediation)
    out = ["", f"{indent}*Fix:* {prose(fix.prose)}" if fix.prose else f"{indent}*Fix:*", ""]
    if fix.commands:
        out += [f"{indent}```sh", *[f"{indent}{c}" for c in fix.commands], f"{indent}```", ""]
    return out


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[str] = ()) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |"]
    lines.append("|" + "|".join("---:" if h in right else "---" for h in headers) + "|")
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def render_diagnosis(d: Diagnosis) -> str:
    out = [f"### cidrx diagnosis: {code(d.target.label())}", ""]
    out += [f"**{escape(verdict(d, counts=False)[1])}**", ""]
    out.append(
        f"**{counts_line(d)}** (snapshot {code(d.snapshot_fingerprint[:12] or 'unsealed')}{taken_note(d.taken_at)})"
    )
    out += ["", "#### Findings", ""]
    if not d.findings:
        out.append("No findings.")
    for sev in _SEVERITIES:
        for f in (f for f in d.findings if f.severity is sev):
            out.append(f"- **{sev.value.upper()}** {code(f.id)} on {escape(f.subject)}: {escape(f.summary)}")
            out += [f"  - {escape(e)}" for e in f.evidence]
            if f.remediation:
                out += fix_lines(f.remediation)
    out += ["", "#### Capacity", ""]
    if d.capacity:
        rows = []
        for c in by_urgency(d.capacity):
            nodes = nodes_text(c)
            rows.append(
                [
                    c.kind,
                    c.name,
                    c.zone or "",
                    c.cidr or "",
                    c.size,
                    c.used,
                    c.free,
                    percent(c.utilization),
                    nodes,
                    c.note or "",
                ]
            )
        headers = ["kind", "name", "zone", "CIDR", "size", "used", "free", "util", "nodes/max", "note"]
        if any(c.nodes_fit is not None for c in d.capacity):  # how many more nodes fit, where known
            headers.insert(9, "fit")
            for row, c in zip(rows, by_urgency(d.capacity), strict=True):
                row.insert(9, "" if c.nodes_fit is None else c.nodes_fit)
        out += table(headers, rows, right=("size", "used", "free", "util", "nodes/max", "fit"))
    else:
        out.append("No address spaces found.")
    return "\n".join(out).rstrip("\n") + "\n"


def _mapping(data: Mapping[str, Any]) -> list[str]:
    return [f"- {code(str(k))}: {escape(value_text(v))}" for k, v in data.items()]


def render_plan(plan: Plan) -> str:
    out = [f"### cidrx plan {code(plan.plan_id or 'unsealed')} for {code(plan.target.label())}", ""]
    out.append(
        f"Strategy **{escape(plan.strategy)}**, made {escape(plan.created_at)} "
        f"from snapshot {code(plan.snapshot_fingerprint[:12])}; content digest {code(content_digest(plan)[:16])}."
    )
    out += ["", "#### Steps", ""]
    rows = [
        [i, code(s.id), code(s.action), s.description, ", ".join(s.depends_on) or "-"]
        for i, s in enumerate(plan.steps, start=1)
    ]
    # Ids are wrapped in code spans above; cell() must not escape their backticks, only the rest.
    lines = ["| # | step | action | description | depends on |", "|---:|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {cell(r[3])} | {cell(r[4])} |" for r in rows]
    out += lines if plan.steps else ["Nothing to do."]
    out += ["", "#### Basis", "", "Apply refuses this plan if any of these facts changed:", ""]
    out += _mapping(plan.basis) or ["- (none)"]
    if plan.summary:
        out += ["", "#### Summary", "", *_mapping(plan.summary)]
    if plan.notes:
        out += ["", "#### Notes", ""] + [f"- {escape(n)}" for n in plan.notes]
    return "\n".join(out) + "\n"
