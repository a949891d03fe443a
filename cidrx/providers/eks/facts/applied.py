"""The plans cidrx applied to an EKS cluster's VPC, told by the plan tag on the pod subnets they created
(custom networking and subnet discovery create them), with the addresses those subnets still have free, and
when they were applied (the time tag the apply writes beside the plan tag)."""

from __future__ import annotations

from cidrx.model.applied import AppliedPlan
from cidrx.model.plan import DIGEST_TAG
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.facts.subnets import usable_addresses
from cidrx.providers.eks.model import APPLIED_AT_TAG, eks_section


def applied_plans(snapshot: Snapshot) -> tuple[AppliedPlan, ...]:
    eks = eks_section(snapshot)
    by_plan: dict[str, list[tuple[str, int, int]]] = {}
    for s in eks.subnets:
        plan_id = s.tags.get(DIGEST_TAG)
        if plan_id:
            by_plan.setdefault(plan_id, []).append((s.subnet_id, usable_addresses(s.cidr), s.available_ips))
    when = applied_at(snapshot)
    return tuple(
        AppliedPlan(
            plan_id,
            "subnets " + ", ".join(sid for sid, _, _ in sorted(subnets)),
            sum(size for _, size, _ in subnets),
            sum(free for _, _, free in subnets),
            when.get(plan_id, ""),
        )
        for plan_id, subnets in sorted(by_plan.items())
    )


def applied_at(snapshot: Snapshot) -> dict[str, str]:
    """Plan id -> when its apply created the first of its subnets (UTC, ISO 8601); plans applied by a cidrx that
    wrote no time tag are left out."""
    out: dict[str, str] = {}
    for s in eks_section(snapshot).subnets:
        plan_id, when = s.tags.get(DIGEST_TAG), s.tags.get(APPLIED_AT_TAG)
        if plan_id and when:
            out[plan_id] = min(out.get(plan_id, when), when)
    return out
