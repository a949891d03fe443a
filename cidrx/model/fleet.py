"""Fleet mode's documents: the clusters to diagnose (`Job`), what became of each (`Member`), the whole run
(`Fleet`, the cidrx.fleet/v1 document) and what a provider's cluster listing found (`Listing`).

Why it exists: the use case that runs a fleet (cidrx.app.fleet), the renderers that print it and the providers
that list clusters all name these types; as plain data below all of them, none has to import another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cidrx.errors import ExitStatus
from cidrx.model.findings import Diagnosis, Severity
from cidrx.model.target import Target

FLEET_SCHEMA = "cidrx.fleet/v1"
# Exit codes from least to most serious. A cluster that could not be diagnosed (usage, access, a bug)
# outranks one with findings: the job's picture is incomplete, which a gate must not pass as "known".
# 4 and 5 never come out of diagnose; they are ranked so that the order is total and deterministic.
_RANK: dict[int, int] = {
    ExitStatus.OK: 0,
    ExitStatus.FINDINGS: 1,
    ExitStatus.STALE: 2,
    ExitStatus.PARTIAL: 3,
    ExitStatus.USAGE: 4,
    ExitStatus.ACCESS: 5,
    ExitStatus.INTERNAL: 6,
}
NO_KUBE_REASON = "in-cluster checks skipped (--no-kube)"


@dataclass(frozen=True)
class Job:
    """One cluster to diagnose. `kube_context` is how its Kubernetes API is reached; `kube_skipped` says
    why it is not read at all (no matching context, --no-kube), None when it is."""

    target: Target
    kube_context: str | None = None
    kube_skipped: str | None = None


@dataclass(frozen=True)
class Member:
    """One cluster of the fleet: its diagnosis, or the error (and hint) that kept it from being read."""

    target: Target
    kube_context: str | None
    note: str | None
    exit_code: int
    error: str | None
    hint: str | None
    diagnosis: Diagnosis | None


@dataclass(frozen=True)
class FleetCounts:
    """Totals: clusters listed, clusters that could not be read, findings of the others by severity."""

    clusters: int
    unreadable: int
    critical: int
    warning: int
    info: int


@dataclass(frozen=True)
class Fleet:
    """Members in listing order, totals, fleet-wide notes and the exit code (the worst cluster's, or worse)."""

    clusters: tuple[Member, ...]
    counts: FleetCounts
    exit_code: int
    notes: tuple[str, ...] = ()
    schema: str = FLEET_SCHEMA


def worst_exit(codes: Sequence[int]) -> int:
    """The most serious exit code (see _RANK); an unknown code outranks every known one."""
    return max(codes, key=lambda c: (_RANK.get(c, len(_RANK)), c), default=ExitStatus.OK)


def make_fleet(members: Sequence[Member], *, notes: Sequence[str] = (), floor: int = ExitStatus.OK) -> Fleet:
    """The fleet of `members`, counts filled; the exit code is at least as serious as `floor`."""
    read = [m.diagnosis for m in members if m.diagnosis is not None]

    def total(sev: Severity) -> int:
        return sum(d.counts.get(sev.value, sum(1 for f in d.findings if f.severity is sev)) for d in read)

    counts = FleetCounts(
        clusters=len(members),
        unreadable=len(members) - len(read),
        critical=total(Severity.CRITICAL),
        warning=total(Severity.WARNING),
        info=total(Severity.INFO),
    )
    code = worst_exit([floor, *(m.exit_code for m in members)])
    return Fleet(tuple(members), counts, code, tuple(notes))


@dataclass(frozen=True)
class Listing:
    """The clusters a provider's `list_clusters` hook found. `notes`: what it could not list (the fleet is
    then incomplete: exit 3 at least, and an empty listing is not an error of its own); `account`: asked
    by its `kube_context` hook when a context needs it; `empty` / `empty_hint`: the error when none."""

    targets: tuple[Target, ...]
    notes: tuple[str, ...] = ()
    account: Callable[[], Any] | None = None
    empty: str = ""
    empty_hint: str = ""
