"""Rendering of a fleet diagnosis: a summary row per cluster followed by each cluster's diagnosis, the
combined `cidrx.fleet/v1` JSON, Markdown for a CI job summary, or one Prometheus exposition. Pure: a
Fleet in, text out.
"""

from __future__ import annotations

from typing import Any

from cidrx.model import codec
from cidrx.model.findings import Capacity
from cidrx.model.fleet import NO_KUBE_REASON, Fleet, Member
from cidrx.render import markdown, table
from cidrx.render.jsonout import diagnosis_doc
from cidrx.render.term import PLAIN, Term

HEADERS = ["cluster", "status", "critical", "warning", "info", "kube context", "fullest capacity / error"]
_NUMERIC = ("critical", "warning", "info")
ERROR_WIDTH = 100  # of an error in a summary row; the whole text follows in the cluster's own section


def status(m: Member) -> str:
    """`ok`, `findings` or `unreadable`, with the member's exit code."""
    if m.diagnosis is None:
        return f"unreadable (exit {m.exit_code})"
    return f"{'findings' if m.exit_code else 'ok'} (exit {m.exit_code})"


def fullest(capacity: tuple[Capacity, ...]) -> Capacity | None:
    """The address space closest to full: highest utilisation, then fewest free."""
    return max(capacity, key=lambda c: (c.utilization, -c.free), default=None)


def capacity_line(c: Capacity | None) -> str:
    if c is None:
        return "(no address spaces found)"
    where = f" {c.cidr}" if c.cidr else ""
    return f"{c.kind} {c.name}{where}: {table.percent(c.utilization)} used, {c.free} free"


def kube_column(m: Member) -> str:
    """The context the cluster was read through, or why its in-cluster side was not read (in short)."""
    if m.kube_context:
        return m.kube_context
    return "skipped (--no-kube)" if m.note == NO_KUBE_REASON else "none: cloud side only"


def cut(text: str, width: int = ERROR_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _row(m: Member) -> list[Any]:
    if m.diagnosis is None:
        return [m.target.label(), status(m), "-", "-", "-", kube_column(m), cut(m.error or "")]
    counts = [m.diagnosis.counts.get(s, 0) for s in _NUMERIC]
    return [m.target.label(), status(m), *counts, kube_column(m), capacity_line(fullest(m.diagnosis.capacity))]


def summary_line(fleet: Fleet) -> str:
    c = fleet.counts
    return (
        f"{c.clusters} cluster(s): {c.critical} critical, {c.warning} warning, {c.info} info; "
        f"{c.unreadable} could not be read; exit {fleet.exit_code}"
    )


def render_table(fleet: Fleet, term: Term = PLAIN) -> str:
    body = table.grid(HEADERS, [_row(m) for m in fleet.clusters], term)
    out = ["cidrx fleet diagnosis", "", body, "", *table.wrap(summary_line(fleet), term.width, "  ")]
    for n in fleet.notes:
        out += table.wrap(n, term.width, "      ", first="note: ")
    for m in fleet.clusters:
        out += ["", "=" * term.width, ""]
        if m.diagnosis is not None:
            if m.note:
                out += table.wrap(f"({m.note})", term.width, " ")
            out.append(table.render_diagnosis(m.diagnosis, term).rstrip("\n"))
        else:
            text = f"cidrx could not diagnose {m.target.label()} (exit {m.exit_code}): {m.error}"
            out += table.wrap(text, term.width, "  ")
            if m.hint:
                out += table.wrap(m.hint, term.width, "      ", first="hint: ")
    return "\n".join(out) + "\n"


def fleet_doc(fleet: Fleet) -> dict[str, Any]:
    """The `cidrx.fleet/v1` document: every key always present (null when not applicable); each
    cluster's `diagnosis` is the same `cidrx.diagnosis/v1` document `diagnose -o json` prints."""
    return {
        "schema": fleet.schema,
        "exit_code": fleet.exit_code,
        "counts": codec.to_builtins(fleet.counts),
        "notes": list(fleet.notes),
        "clusters": [
            {
                "target": codec.to_builtins(m.target),
                "kube_context": m.kube_context,
                "note": m.note,
                "exit_code": m.exit_code,
                "error": m.error,
                "hint": m.hint,
                "diagnosis": diagnosis_doc(m.diagnosis) if m.diagnosis is not None else None,
            }
            for m in fleet.clusters
        ],
    }


def render_json(fleet: Fleet) -> str:
    return codec.dumps(fleet_doc(fleet))


def render_markdown(fleet: Fleet) -> str:
    lines = ["## cidrx fleet diagnosis", ""]
    lines += markdown.table(HEADERS, [_row(m) for m in fleet.clusters], right=_NUMERIC)
    lines += ["", f"**{markdown.escape(summary_line(fleet))}**"]
    lines += [f"- {markdown.escape(n)}" for n in fleet.notes]
    for m in fleet.clusters:
        lines.append("")
        if m.diagnosis is not None:
            if m.note:
                lines += [f"*{markdown.escape(m.note)}*", ""]
            lines.append(markdown.render_diagnosis(m.diagnosis).rstrip("\n"))
        else:
            lines += [f"### cidrx could not diagnose {markdown.code(m.target.label())}", ""]
            lines.append(f"Exit {m.exit_code}: {markdown.escape(m.error or '')}")
            if m.hint:
                lines += ["", f"*Hint:* {markdown.escape(m.hint)}"]
    return "\n".join(lines) + "\n"


def render_prometheus(fleet: Fleet) -> str:
    """Every readable cluster's metrics in one exposition, each family once (the `target` label tells
    the clusters apart). A cluster that could not be read has no samples."""
    from cidrx.render.prometheus import render_prometheus_many

    return render_prometheus_many([m.diagnosis for m in fleet.clusters if m.diagnosis is not None])


def render_fleet(fleet: Fleet, fmt: str, term: Term = PLAIN) -> str:
    if fmt == "table":
        return render_table(fleet, term)
    if fmt == "json":
        return render_json(fleet)
    if fmt == "markdown":
        return render_markdown(fleet)
    if fmt == "prometheus":
        return render_prometheus(fleet)
    raise ValueError(f"unknown output format {fmt!r}")
