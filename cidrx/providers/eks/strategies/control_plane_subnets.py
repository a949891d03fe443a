"""Strategy control-plane-subnets: give the EKS control plane subnets with room for its network interfaces.

When the cluster's own subnets (`resourcesVpcConfig.subnetIds`) keep fewer free addresses than EKS needs (6;
16 recommended), upgrades fail and EKS reports `InsufficientFreeAddresses`. The fix EKS documents is
UpdateClusterConfig with more subnets from the Availability Zones the cluster was created with. This plan
adds, per zone of the cluster, the other subnet of the VPC with the most free addresses (preferring subnets
nodes and pods do not fill). Pure: no I/O; check_drift compares the plan's basis with a fresh snapshot.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.cluster_config import UPDATE_CLUSTER_SUBNETS
from cidrx.providers.eks.facts.cni import cni_config
from cidrx.providers.eks.facts.control_plane import (
    INSUFFICIENT_FREE_ADDRESSES,
    MIN_FREE,
    RECOMMENDED_FREE,
    candidates,
    cluster_subnets,
    cluster_zones,
    low_subnets,
)
from cidrx.providers.eks.facts.subnets import pod_subnet_ids, subnet_label
from cidrx.providers.eks.model import EksSection, eks_section
from cidrx.providers.eks.strategies.drift import check_plan_drift

STEP_ID = "update-cluster-subnets"


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    eks = eks_section(snapshot)
    low = low_subnets(eks)
    reported = any(i.code == INSUFFICIENT_FREE_ADDRESSES for i in eks.cluster.health_issues)
    if not low and not reported:
        raise InvalidInput(
            f"every subnet of cluster {eks.cluster.name} has at least {RECOMMENDED_FREE} free addresses; the control "
            "plane needs no more subnets"
        )
    avoid = frozenset(pod_subnet_ids(eks, snapshot.kube, cni_config(eks, snapshot.kube)))
    found = candidates(eks, avoid)
    if not found:
        raise InvalidInput(
            f"no other subnet in the cluster's zones ({', '.join(cluster_zones(eks))}) has {MIN_FREE} free addresses; "
            "create small dedicated subnets (/28) there, then run this again"
        )
    current = list(eks.cluster.subnet_ids)
    wanted = current + [c.subnet.subnet_id for c in found]
    added = ", ".join(f"{subnet_label(c.subnet)} ({c.subnet.az}, {c.subnet.available_ips} free)" for c in found)
    step = Step(
        id=STEP_ID,
        action=UPDATE_CLUSTER_SUBNETS.name,
        params={"cluster": eks.cluster.name, "subnet_ids": wanted, "previous": current},
        description=f"add {added} to the subnets of cluster {eks.cluster.name} (UpdateClusterConfig)",
        permissions=UPDATE_CLUSTER_SUBNETS.permissions,
    )
    notes = [
        "EKS places the control plane's network interfaces in any of the cluster's subnets; with subnets that have "
        "room, upgrades and control-plane scaling no longer depend on the full ones.",
        "The VPC config update replaces the control plane's network interfaces and takes several minutes; the "
        "Kubernetes API stays available.",
    ]
    if low:
        notes.append(
            "Subnets short of addresses: " + ", ".join(f"{subnet_label(s)} {s.available_ips} free" for s in low)
        )
    thin = [c for c in found if not c.recommended]
    if thin:
        notes.append(
            f"Fewer than the {RECOMMENDED_FREE} free addresses EKS recommends in "
            + ", ".join(subnet_label(c.subnet) for c in thin)
        )
    shared = [c for c in found if c.subnet.subnet_id in avoid]
    if shared:
        notes.append(
            "No subnet of their own in some zones: these also hold nodes or pods, which may fill them again: "
            + ", ".join(subnet_label(c.subnet) for c in shared)
        )
    missed = sorted(set(cluster_zones(eks)) - {c.subnet.az for c in found})
    if missed:
        notes.append(f"No subnet with room to add in {', '.join(missed)}.")
    basis: dict[str, Any] = {
        "vpc_id": eks.vpc.vpc_id,
        "cluster_subnets": current,
        "added": {c.subnet.subnet_id: {"az": c.subnet.az, "cidr": c.subnet.cidr} for c in found},
    }
    summary = {"free": {s.subnet_id: s.available_ips for s in cluster_subnets(eks)}}
    return seal_plan(snapshot, created_at, "control-plane-subnets", basis, [step], notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan) when the cluster's subnets changed, or a subnet to add is gone, moved or full."""
    check_plan_drift(plan, snapshot, _drift)


def _drift(plan: Plan, eks: EksSection, snapshot: Snapshot) -> list[str]:
    problems: list[str] = []
    before = list(plan.basis["cluster_subnets"])
    planned = next((list(s.params["subnet_ids"]) for s in plan.steps if s.id == STEP_ID), before)
    now = set(eks.cluster.subnet_ids)
    if now != set(before) and now != set(planned):  # the planned list is this plan's own progress
        problems.append(
            f"cluster {eks.cluster.name} now has subnets {', '.join(sorted(now))}, not {', '.join(sorted(before))}"
        )
    subnets = {s.subnet_id: s for s in eks.subnets}
    for sid, was in plan.basis["added"].items():
        s = subnets.get(sid)
        if s is None or s.az != was["az"] or s.cidr != was["cidr"]:
            problems.append(f"subnet {sid} ({was['cidr']} in {was['az']}) is gone or changed")
        elif sid not in now and s.available_ips < MIN_FREE:
            problems.append(f"subnet {sid} now has {s.available_ips} free addresses (EKS needs {MIN_FREE})")
    return problems


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the estate shows it now (cidrx.engine.basis compares it key by key). The subnets to add
    and the list they join are read from the plan's step; the cluster's list already being the planned one
    is this plan's own progress."""
    eks = eks_section(snapshot)
    step = next((s for s in plan.steps if s.id == STEP_ID), None)
    before = [str(x) for x in (step.params.get("previous") or ())] if step else []
    planned = [str(x) for x in (step.params.get("subnet_ids") or ())] if step else []
    now = list(eks.cluster.subnet_ids)
    subnets = {s.subnet_id: s for s in eks.subnets}
    added: dict[str, Any] = {}
    for sid in planned:
        if sid in before:
            continue
        s = subnets.get(sid)
        added[sid] = {"az": s.az, "cidr": s.cidr} if s is not None else None
    return {
        "vpc_id": eks.vpc.vpc_id,
        "cluster_subnets": before if set(now) == set(planned) else now,
        "added": added,
    }


ACTIONS = (UPDATE_CLUSTER_SUBNETS,)
