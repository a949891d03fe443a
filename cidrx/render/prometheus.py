"""Prometheus text exposition format (version 0.0.4) of a Diagnosis, for alerting.

Why it exists: pod-IP exhaustion is slow, then sudden; a scheduled `cidrx diagnose -o prometheus` written
to node_exporter's textfile directory (or pushed by a CronJob) lets ordinary alert rules fire at 80% instead
of a person finding out from ContainerCreating pods. Metric names and labels are documented in
docs/metrics.md and are a stable interface: renaming one breaks users' alert rules.

Every capacity row becomes one sample per figure, labelled {target, kind, name, cidr, zone}. Per-kind
figures a row may carry in an optional `extra` mapping (e.g. an IPAM's `stale` or `borrowed` addresses) become
`cidrx_capacity_<figure>` gauges with the same labels. Findings become counts by severity and one
`cidrx_finding` sample per (id, severity, subject). Pure: a Diagnosis in, text out. `metric_families` is
the one list of families both this text renderer and `cidrx exporter` (cidrx/app/exporter.py) serve.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cidrx.model.findings import Capacity, Diagnosis, Severity

PREFIX = "cidrx_"
CAPACITY_LABELS = ("target", "kind", "name", "cidr", "zone")
_SEVERITIES = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")

# (metric, help, Capacity attribute) for the figures every row has, or has when not None.
CAPACITY_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("cidrx_capacity_size_addresses", "Usable size of the address space (pod slots for node groups).", "size"),
    ("cidrx_capacity_used_addresses", "Addresses (or pod slots) in use.", "used"),
    ("cidrx_capacity_free_addresses", "Addresses (or pod slots) still free.", "free"),
    ("cidrx_capacity_utilization_ratio", "Used over size, 0 to 1.", "utilization"),
    ("cidrx_capacity_max_nodes", "Nodes the space has room for (node-scoped spaces only).", "max_nodes"),
    ("cidrx_capacity_nodes", "Nodes that hold a share of the space (node-scoped spaces only).", "nodes"),
    ("cidrx_capacity_nodes_fit", "More nodes of the space's node shape that still fit in it.", "nodes_fit"),
)
_RESERVED = frozenset(name for name, _, _ in CAPACITY_FIGURES) | {
    "cidrx_findings",
    "cidrx_finding",
    "cidrx_capacity_info",
}

# Help for per-kind figures known today; others get a generic line.
EXTRA_HELP: Mapping[str, str] = {
    "stale": "Addresses held for pods that no longer need them (reclaimable).",
    "blocks_claimed": "IPAM blocks claimed by nodes.",
    "blocks_total": "IPAM blocks the pool can be cut into.",
    "borrowed": "Addresses allocated from a block another node holds the affinity for.",
    "leaked": "Addresses allocated to pods that are gone.",
    "corrupt": "IPAM records that cannot be read (no address).",
    "autoscaling_max_nodes": "The node group's autoscaling maximum (a scaling limit, not address space).",
    "nodes_with_free_eni_slots": "Nodes of the zone that can still attach an ENI (subnet discovery).",
    "pod_addresses_reachable": "Pod addresses nodes with free ENI slots can still take from tagged subnets.",
}


def escape_label(value: str) -> str:
    """A label value as the exposition format wants it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """HELP text: only backslash and newline are escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """Integers without a decimal point, floats in Python's shortest round-trip form; NaN and infinities
    spelled the way Prometheus parses them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**63:
        return str(int(value))
    return repr(float(value))


def metric_name(figure: str) -> str:
    """`cidrx_capacity_<figure>` with anything outside [a-zA-Z0-9_] turned into `_`."""
    return f"{PREFIX}capacity_{_NOT_NAME.sub('_', figure.strip())}"


@dataclass
class _Family:
    name: str
    help: str
    samples: list[tuple[tuple[tuple[str, str], ...], float]] = field(default_factory=list)
    seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set)

    def add(self, labels: tuple[tuple[str, str], ...], value: float) -> None:
        # One series per label set: a second row with identical labels would make the scrape invalid.
        if labels in self.seen:
            return
        self.seen.add(labels)
        self.samples.append((labels, value))


def _extra_figures(c: Capacity) -> Mapping[str, float]:
    """Per-kind figures of a row (Capacity.extra), numbers only."""
    return {str(k): float(v) for k, v in c.extra.items() if isinstance(v, int | float) and not isinstance(v, bool)}


_DISPLAY = re.compile(r"^(?P<id>\S+) \((?P<display>[^()]*)\)$")
INFO = "cidrx_capacity_info"


def split_name(name: str) -> tuple[str, str]:
    """(id, display name) of a capacity row's name: "subnet-0abc (PublicSubnet01)" -> ("subnet-0abc",
    "PublicSubnet01"). The `name` label holds only the id: a display name (an AWS Name tag) can be renamed
    at any time, which would start a new series and break alerts and graphs."""
    m = _DISPLAY.match(name)
    return (m["id"], m["display"]) if m else (name, "")


def _unit_name(name: str, unit: str) -> str:
    """`cidrx_capacity_size_addresses` for a row counting addresses, `..._size_blocks` for one counting blocks."""
    return name if unit == "addresses" or not name.endswith("_addresses") else f"{name.removesuffix('addresses')}{unit}"


def _capacity_families(target: str, capacity: Iterable[Capacity]) -> list[_Family]:
    families = {name: _Family(name, help_text) for name, help_text, _ in CAPACITY_FIGURES}
    info = _Family(INFO, "1 per capacity row that has a display name (display_name: e.g. the AWS Name tag).")
    extras: dict[str, _Family] = {}
    for c in capacity:
        ident, display = split_name(c.name)
        labels = (
            ("target", target),
            ("kind", c.kind),
            ("name", ident),
            ("cidr", c.cidr or ""),
            ("zone", c.zone or ""),
        )
        if display:
            info.add((*labels, ("display_name", display)), 1.0)
        for name, help_text, attr in CAPACITY_FIGURES:
            value = getattr(c, attr, None)
            if value is None:
                continue
            unit_name = _unit_name(name, c.unit)
            if unit_name not in families:
                families[unit_name] = _Family(
                    unit_name, help_text.replace("Addresses (or pod slots)", c.unit.capitalize())
                )
            families[unit_name].add(labels, float(value))
        for figure, value in sorted(_extra_figures(c).items()):
            name = metric_name(figure)
            if name in _RESERVED:
                continue
            if name not in extras:
                help_text = EXTRA_HELP.get(figure, f"Per-kind capacity figure {figure!r} (see docs/metrics.md).")
                extras[name] = _Family(name, help_text)
            extras[name].add(labels, value)
    ordered = [families[name] for name, _, _ in CAPACITY_FIGURES]
    other_units = [families[k] for k in sorted(families) if k not in _RESERVED]
    return [f for f in ordered + other_units + [info] + [extras[k] for k in sorted(extras)] if f.samples]


def _finding_families(target: str, d: Diagnosis) -> list[_Family]:
    counts = _Family("cidrx_findings", "Findings of the diagnosis by severity.")
    for sev in _SEVERITIES:
        n = d.counts.get(sev.value, sum(1 for f in d.findings if f.severity is sev))
        counts.add((("target", target), ("severity", sev.value)), float(n))
    each = _Family("cidrx_finding", "One series per finding (id, severity, subject); the value counts duplicates.")
    tally: dict[tuple[tuple[str, str], ...], int] = {}
    for f in d.findings:
        key: tuple[tuple[str, str], ...] = (
            ("target", target),
            ("id", f.id),
            ("severity", f.severity.value),
            ("subject", f.subject),
        )
        tally[key] = tally.get(key, 0) + 1
    for key, n in tally.items():
        each.add(key, float(n))
    return [counts] + ([each] if each.samples else [])


Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class MetricFamily:
    """One family: its name, HELP text, samples (label pairs in order, value) and type (gauge or counter;
    a counter's name ends in `_total`)."""

    name: str
    help: str
    samples: tuple[tuple[Labels, float], ...]
    type: str = "gauge"


def metric_families(diagnoses: Sequence[Diagnosis]) -> list[MetricFamily]:
    """Every capacity and finding family of `diagnoses` (one per cluster of a fleet): each family once,
    with every cluster's samples (the `target` label tells them apart)."""
    merged: dict[str, _Family] = {}
    for d in diagnoses:
        target = d.target.label()
        for family in _capacity_families(target, d.capacity) + _finding_families(target, d):
            into = merged.setdefault(family.name, _Family(family.name, family.help))
            for labels, value in family.samples:
                into.add(labels, value)
    return [MetricFamily(f.name, f.help, tuple(f.samples)) for f in merged.values()]


def family_lines(family: MetricFamily) -> list[str]:
    """A family in the text exposition format: HELP, TYPE, one line per sample."""
    out = [f"# HELP {family.name} {escape_help(family.help)}", f"# TYPE {family.name} {family.type}"]
    for labels, value in family.samples:
        body = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels)
        out.append(f"{family.name}{{{body}}} {format_value(value)}")
    return out


def render_prometheus(d: Diagnosis) -> str:
    """The whole diagnosis as metric families (HELP, TYPE, samples), ending with a newline."""
    return render_prometheus_many([d])


def render_prometheus_many(diagnoses: Sequence[Diagnosis]) -> str:
    """Several diagnoses (a fleet) in one exposition: each family once, with every cluster's samples (the
    `target` label tells them apart)."""
    lines = [line for family in metric_families(diagnoses) for line in family_lines(family)]
    return "\n".join(lines) + "\n"


def render_diagnosis(d: Diagnosis) -> str:
    return render_prometheus(d)
