"""The result of analysis: findings a person acts on and capacity figures a person or alert reads.

Finding ids are stable strings (documented in docs/findings.md); changing one breaks users' alert rules.
Every id is declared once as a FindingKind next to the code that raises it (each analyze module exports
its kinds as `KINDS`); docs/findings.md is generated from those declarations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from cidrx.model.target import Target


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    subject: str
    summary: str
    evidence: tuple[str, ...] = ()
    remediation: str = ""


@dataclass(frozen=True)
class FindingKind:
    """One kind of finding: its stable id, what it means for the cluster (the catalogue's text) and the
    severities it may be raised with. Findings are built through `finding()`, which refuses any other
    severity, so the catalogue cannot promise less than the code raises."""

    id: str
    meaning: str
    severities: tuple[Severity, ...]

    def __post_init__(self) -> None:
        if not _ID_RE.match(self.id):
            raise ValueError(f"finding id {self.id!r} is not of the form PREFIX-WORDS (upper case, dashes)")
        if not self.severities or len(set(self.severities)) != len(self.severities):
            raise ValueError(f"finding kind {self.id} must declare its severities, each once")
        if not self.meaning.strip():
            raise ValueError(f"finding kind {self.id} has no meaning")

    @classmethod
    def parse(cls, entry: str) -> FindingKind:
        """A kind written as its catalogue entry, `ID (severity or severity): meaning`; the meaning may wrap
        over several lines and is kept as one paragraph."""
        m = _ENTRY_RE.match(" ".join(entry.split()))
        if m is None:
            raise ValueError(f"finding kind {entry[:60]!r}... is not written as 'ID (severity or ...): meaning'")
        try:
            severities = tuple(Severity(s) for s in m["severities"].split(" or "))
        except ValueError as exc:
            raise ValueError(f"finding kind {m['id']}: {exc}") from None
        return cls(m["id"], m["meaning"], severities)

    @staticmethod
    def all_in(namespace: Mapping[str, object]) -> tuple[FindingKind, ...]:
        """Every FindingKind a module binds at top level, in binding order: analyze modules export
        `KINDS = FindingKind.all_in(globals())` after their declarations, so the catalogue cannot miss one."""
        return tuple(dict.fromkeys(v for v in namespace.values() if isinstance(v, FindingKind)))

    def finding(
        self,
        severity: Severity,
        subject: str,
        summary: str,
        evidence: tuple[str, ...] = (),
        remediation: str = "",
    ) -> Finding:
        if severity not in self.severities:
            declared = ", ".join(s.value for s in self.severities)
            raise ValueError(f"{self.id} is declared with severities {declared}, not {severity.value}")
        return Finding(self.id, severity, subject, summary, evidence, remediation)


_ID_RE = re.compile(r"^[A-Z]+(?:-[A-Z0-9]+)+$")
_ENTRY_RE = re.compile(r"^(?P<id>\S+) \((?P<severities>[a-z]+(?: or [a-z]+)*)\): (?P<meaning>.+)$")


KUBE_UNREACHABLE = FindingKind.parse(
    """KUBE-UNREACHABLE (info): The Kubernetes API could not be read (or --no-kube was given): in-cluster checks
    were skipped and the diagnosis covers the cloud side only."""
)


# Raised by every target (through kube_unreachable()), so the catalogue lists it once, for any target.
KINDS: tuple[FindingKind, ...] = (KUBE_UNREACHABLE,)


# How a reason names a kubeconfig taken from the KUBECONFIG variable (cidrx.kube.kubeconfig.tried writes it).
KUBECONFIG_FROM_ENV = "$KUBECONFIG="
ENV_KUBECONFIG_FIX = (
    "KUBECONFIG is set and was used (see above): check that its context (or --context) names this cluster "
    "and that its API server is reachable from here, then run again; --no-kube skips these checks."
)


def kube_unreachable(
    summary: str, remediation: str, *, reason: str | None = None, subject: str = "kubernetes"
) -> Finding:
    """The finding every target raises when its in-cluster checks could not run (always info: the cloud side
    is still diagnosed). Each provider words what was skipped and how to get it; `reason`, why the API could
    not be read (and what was tried), is the evidence when given. When the kubeconfig came from KUBECONFIG,
    advice to pass --kubeconfig would send the user wrong, so the fix says what to check instead."""
    evidence = (reason,) if reason is not None else ()
    if reason is not None and KUBECONFIG_FROM_ENV in reason:
        remediation = ENV_KUBECONFIG_FIX
    return KUBE_UNREACHABLE.finding(Severity.INFO, subject, summary, evidence, remediation)


@dataclass(frozen=True)
class Capacity:
    """One address space (subnet, pod range, pool) or one consumer of space (node group).

    `size`/`used`/`free` count addresses for address spaces and pod slots for node groups.
    `max_nodes`/`nodes` are set only for node-scoped address spaces: `max_nodes` is how many nodes the
    space has room for, never an autoscaling limit (node groups carry that as extra `autoscaling_max_nodes`).
    `nodes_fit` is how many more nodes of the space's node shape still fit (from the same per-node needs as
    the findings: warm pools and ENI primaries, node blocks, IPAM blocks); None where nodes take nothing from it.
    """

    kind: str
    name: str
    cidr: str | None
    size: int
    used: int
    free: int
    utilization: float
    max_nodes: int | None = None
    nodes: int | None = None
    nodes_fit: int | None = None
    zone: str | None = None
    note: str | None = None
    # Per-kind figures beyond size/used/free (an IPAM's `stale` or `blocks_claimed`, ...), exported
    # as cidrx_capacity_<figure> metrics (docs/metrics.md).
    extra: dict[str, float] = field(default_factory=dict)
    # What size/used/free count: "addresses" (pod slots for node groups), or another unit for rows that count
    # something else (a VPC's CIDR blocks): metrics then say so in their name (cidrx_capacity_size_<unit>).
    unit: str = "addresses"


@dataclass(frozen=True)
class Diagnosis:
    target: Target
    snapshot_fingerprint: str
    capacity: tuple[Capacity, ...]
    findings: tuple[Finding, ...]
    counts: dict[str, int] = field(default_factory=dict)
    # When the saved snapshot diagnosed (`diagnose --snapshot`) was taken, UTC ISO-8601; None for a live
    # diagnosis, so that two live runs over an unchanged estate print the same document.
    taken_at: str | None = None
    schema: str = "cidrx.diagnosis/v1"


def make_diagnosis(target: Target, fingerprint: str, capacity: list[Capacity], findings: list[Finding]) -> Diagnosis:
    """Findings sorted worst first (stable within a severity), counts filled for every severity."""
    ordered = sorted(findings, key=lambda f: -f.severity.rank)
    counts = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
    return Diagnosis(target, fingerprint, tuple(capacity), tuple(ordered), counts)


def utilization(used: int, size: int) -> float:
    return round(used / size, 4) if size > 0 else 1.0


def worst(findings: tuple[Finding, ...] | list[Finding]) -> Severity | None:
    return max((f.severity for f in findings), key=lambda s: s.rank, default=None)
