"""Plain-text rendering for a person at a terminal (or reading a CI log): diagnoses, plans, apply results.

Pure functions, object in and text out, so the CLI decides where text goes and tests read it directly.
Capacity and steps are tables; findings are indented blocks, because their evidence lines are long.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from tabulate import tabulate

from cidrx.model.findings import Capacity, Diagnosis, Finding, Severity
from cidrx.model.plan import Plan
from cidrx.render.age import taken_note

WIDTH = 100
_SEVERITIES = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)


def percent(utilization: float) -> str:
    return f"{utilization * 100:.1f}%"


def counts_line(d: Diagnosis) -> str:
    """`2 critical, 1 warning, 0 info`: every severity, worst first, even when zero."""
    counts = {s.value: d.counts.get(s.value, sum(1 for f in d.findings if f.severity is s)) for s in _SEVERITIES}
    return ", ".join(f"{counts[s.value]} {s.value}" for s in _SEVERITIES)


def _wrap(text: str, indent: str, first: str | None = None) -> list[str]:
    # Never split CIDRs, ids or flags across lines: only break at spaces.
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [(indent if first is None else first).rstrip()]


def capacity_table(capacity: Sequence[Capacity]) -> str:
    has_zone = any(c.zone for c in capacity)
    has_nodes = any(c.nodes is not None or c.max_nodes is not None for c in capacity)
    has_note = any(c.note for c in capacity)
    headers = ["kind", "name"] + (["zone"] if has_zone else []) + ["cidr", "size", "used", "free", "util%"]
    headers += (["nodes/max"] if has_nodes else []) + (["note"] if has_note else [])
    rows: list[list[Any]] = []
    for c in capacity:
        row: list[Any] = [c.kind, c.name] + ([c.zone or ""] if has_zone else [])
        row += [c.cidr or "", c.size, c.used, c.free, percent(c.utilization)]
        if has_nodes:
            nodes = "" if c.nodes is None else str(c.nodes)
            row.append(f"{nodes}/{c.max_nodes}" if c.max_nodes is not None else nodes)
        if has_note:
            row.append(c.note or "")
        rows.append(row)
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True, colalign=_align(headers))


def _align(headers: list[str]) -> tuple[str, ...]:
    numeric = {"size", "used", "free", "util%", "nodes/max", "#"}
    return tuple("right" if h in numeric else "left" for h in headers)


def finding_block(f: Finding) -> list[str]:
    lines = [f"  {f.id}  {f.subject}"]
    lines += _wrap(f.summary, "    ")
    for e in f.evidence:
        lines += _wrap(e, "        ", first="      - ")
    if f.remediation:
        lines += _wrap(f.remediation, "         ", first="    fix: ")
    return lines


def render_diagnosis(d: Diagnosis) -> str:
    snapshot = f"snapshot {d.snapshot_fingerprint[:12] or 'unsealed'}{taken_note(d.taken_at)}"
    out = [f"cidrx diagnosis of {d.target.label()} ({snapshot})", ""]
    out.append("Capacity")
    out.append(capacity_table(d.capacity) if d.capacity else "  (no address spaces found)")
    out.append("")
    out.append("Findings")
    if not d.findings:
        out.append("  none")
    for sev in _SEVERITIES:
        group = [f for f in d.findings if f.severity is sev]
        if not group:
            continue
        out.append("")
        out.append(f"{sev.value.upper()} ({len(group)})")
        for f in group:
            out += finding_block(f)
    out.append("")
    out.append(counts_line(d))
    return "\n".join(out) + "\n"


def value_text(value: Any) -> str:
    """A basis/summary/output value on one line: strings as they are, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "), default=str)


def _mapping_lines(data: Mapping[str, Any], indent: str = "  ") -> list[str]:
    lines: list[str] = []
    for key, value in data.items():
        lines += _wrap(value_text(value), indent + "    ", first=f"{indent}{key}: ")
    return lines


def steps_table(plan: Plan) -> str:
    rows = [
        [i, s.id, s.action, s.description, ", ".join(s.depends_on) or "-"] for i, s in enumerate(plan.steps, start=1)
    ]
    headers = ["#", "step", "action", "description", "depends on"]
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True, colalign=_align(headers))


def render_plan(plan: Plan) -> str:
    out = [
        f"cidrx plan {plan.plan_id or '(unsealed)'} for {plan.target.label()}",
        f"  strategy: {plan.strategy}",
        f"  made: {plan.created_at} from snapshot {plan.snapshot_fingerprint[:12]}",
        "",
        "Steps",
        steps_table(plan) if plan.steps else "  (nothing to do)",
        "",
        "Basis (apply refuses the plan if any of this changed)",
    ]
    out += _mapping_lines(plan.basis) or ["  (none)"]
    if plan.summary:
        out += ["", "Summary", *_mapping_lines(plan.summary)]
    if plan.notes:
        out += ["", "Notes"]
        for n in plan.notes:
            out += _wrap(n, "    ", first="  - ")
    return "\n".join(out) + "\n"


def render_results(results: Sequence[tuple[str, str, Mapping[str, Any]]], notes: Sequence[str] = ()) -> str:
    """What an apply did, one row per step (`done`, `skipped` = found already done), then what is left to
    do by hand."""
    rows = [
        [step_id, status, ", ".join(f"{k}={value_text(v)}" for k, v in outputs.items())]
        for step_id, status, outputs in results
    ]
    out = [tabulate(rows, headers=["step", "status", "outputs"], tablefmt="simple", disable_numparse=True)]
    done = sum(1 for _, status, _ in results if status == "done")
    out += ["", f"{done} step(s) changed something, {len(results) - done} were already done"]
    if notes:
        out += ["", "Next steps (by hand)"]
        for n in notes:
            out += _wrap(n, "    ", first="  - ")
    return "\n".join(out) + "\n"
