"""Whether an apply worked, told from the estate itself: the diagnosis before the apply against a fresh one.

Steps that report `done` prove that each change was made, not that pods can get addresses now. So after
the last step apply re-collects and re-analyses, and this pure comparison says, for the ranges the plan
touched, capacity before -> after, and which findings are now resolved, which are still open (with what
remains to be done by hand) and which are new. The result goes to the terminal, the journal and `-o json`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

from cidrx.model.findings import Capacity, Diagnosis, Finding
from cidrx.model.plan import Plan


@dataclass(frozen=True)
class CapacityChange:
    kind: str
    name: str
    cidr: str | None
    before: Capacity | None  # None: the range did not exist before the apply
    after: Capacity | None  # None: it is gone after it


@dataclass(frozen=True)
class Verification:
    changes: tuple[CapacityChange, ...]
    resolved: tuple[Finding, ...]
    still_open: tuple[Finding, ...]
    new: tuple[Finding, ...]
    by_hand: tuple[str, ...]  # the plan's notes: what the apply leaves to a person


def _key(c: Capacity) -> tuple[str, str, str]:
    return (c.kind, c.name, c.cidr or "")


def _finding_key(f: Finding) -> tuple[str, str]:
    return (f.id, f.subject)


def _nets(value: Any) -> list[IPv4Network]:
    """Every IPv4 CIDR written anywhere in a plan value (summary, step params)."""
    out: list[IPv4Network] = []
    if isinstance(value, str):
        if "/" in value:
            with contextlib.suppress(ValueError):
                out.append(IPv4Network(value, strict=False))
    elif isinstance(value, dict):
        for v in value.values():
            out += _nets(v)
    elif isinstance(value, list | tuple):
        for v in value:
            out += _nets(v)
    return out


def plan_cidrs(plan: Plan) -> list[IPv4Network]:
    return _nets([plan.summary, [s.params for s in plan.steps]])


def _touched(c: Capacity, cidrs: list[IPv4Network]) -> bool:
    if not c.cidr:
        return False
    try:
        net = IPv4Network(c.cidr, strict=False)
    except ValueError:
        return False
    # A range the plan names or one inside it (a new subnet); not a whole space that merely holds it.
    return any(net == n or net.subnet_of(n) for n in cidrs)


def _changed(before: Capacity, after: Capacity) -> bool:
    return (before.size, before.used, before.free, before.nodes, before.max_nodes) != (
        after.size,
        after.used,
        after.free,
        after.nodes,
        after.max_nodes,
    )


def compare(plan: Plan, before: Diagnosis, after: Diagnosis) -> Verification:
    """Capacity rows the plan touched (named by its CIDRs, new, gone or changed) and findings, before ->
    after, in the after diagnosis's order."""
    cidrs = plan_cidrs(plan)
    old = {_key(c): c for c in before.capacity}
    new = {_key(c): c for c in after.capacity}
    changes: list[CapacityChange] = []
    for key, c in new.items():
        was = old.get(key)
        if was is None or _changed(was, c) or _touched(c, cidrs):
            changes.append(CapacityChange(c.kind, c.name, c.cidr, was, c))
    changes += [CapacityChange(c.kind, c.name, c.cidr, c, None) for key, c in old.items() if key not in new]
    open_before = {_finding_key(f) for f in before.findings}
    open_after = {_finding_key(f) for f in after.findings}
    return Verification(
        changes=tuple(changes),
        resolved=tuple(f for f in before.findings if _finding_key(f) not in open_after),
        still_open=tuple(f for f in after.findings if _finding_key(f) in open_before),
        new=tuple(f for f in after.findings if _finding_key(f) not in open_before),
        by_hand=tuple(plan.notes),
    )


def _capacity_doc(c: Capacity | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "size": c.size,
        "used": c.used,
        "free": c.free,
        "utilization": c.utilization,
        "nodes": c.nodes,
        "max_nodes": c.max_nodes,
    }


def _finding_doc(f: Finding) -> dict[str, Any]:
    return {"id": f.id, "severity": f.severity.value, "subject": f.subject, "remediation": f.remediation}


def verification_doc(v: Verification) -> dict[str, Any]:
    """The JSON form, used in the journal and in `-o json` apply output."""
    return {
        "capacity": [
            {
                "kind": c.kind,
                "name": c.name,
                "cidr": c.cidr,
                "before": _capacity_doc(c.before),
                "after": _capacity_doc(c.after),
            }
            for c in v.changes
        ],
        "resolved": [_finding_doc(f) for f in v.resolved],
        "still_open": [_finding_doc(f) for f in v.still_open],
        "new": [_finding_doc(f) for f in v.new],
        "by_hand": list(v.by_hand),
    }
