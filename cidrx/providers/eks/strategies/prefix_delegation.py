"""Strategy prefix-delegation: turn on VPC CNI prefix delegation (a /28 per ENI slot) and reserve aligned space
in fragmented pod subnets so single addresses do not use it up; Karpenter node classes and self-managed groups
get the new max pods. Pure: no I/O; check_drift compares the plan's basis with a fresh snapshot before apply.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.cni_env import SET_DAEMONSET_ENV, UPDATE_ADDON_ENV
from cidrx.providers.eks.actions.karpenter import UPDATE_EC2_NODE_CLASS
from cidrx.providers.eks.actions.subnets import RESERVE_SUBNET_CIDR
from cidrx.providers.eks.facts.cni import PREFIX_DELEGATION, cni_config, max_pods
from cidrx.providers.eks.facts.provisioners import provisioners
from cidrx.providers.eks.facts.subnets import subnet_label, subnet_uses
from cidrx.providers.eks.model import EksSection, Subnet, eks_section
from cidrx.providers.eks.strategies.drift import check_plan_drift
from cidrx.providers.eks.strategies.network_steps import env_step
from cidrx.providers.eks.strategies.placement import template_nodegroup
from cidrx.providers.eks.strategies.provisioners import (
    SELF_MANAGED_ACTIONS,
    check_not_auto_mode_only,
    karpenter_prefix_delegation,
    self_managed,
)


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    eks = eks_section(snapshot)
    cni = cni_config(eks, snapshot.kube)
    if opts.cidr:
        raise InvalidInput("--cidr does not apply to --strategy prefix-delegation (it uses existing subnets)")
    check_not_auto_mode_only(eks, "prefix-delegation")
    types = {t.name: t for t in eks.instance_types}
    in_use = {t for ng in eks.nodegroups for t in ng.instance_types} | {n.instance_type for n in snapshot.kube.nodes}
    non_nitro = sorted(t for t in in_use if t in types and types[t].hypervisor != "nitro" and not types[t].bare_metal)
    if non_nitro:
        raise InvalidInput(
            f"prefix delegation needs Nitro instances; {', '.join(non_nitro)} "
            f"{'is' if len(non_nitro) == 1 else 'are'} not Nitro. Use --strategy custom-networking"
        )
    uses = [u for u in subnet_uses(eks, snapshot.kube, cni) if "pods" in u.roles or "nodes" in u.roles]
    dead = [u for u in uses if u.free_28 == 0]
    if dead and len(dead) == len(uses):
        raise InvalidInput(
            "prefix delegation cannot help: no pod subnet has a free aligned /28 ("
            + ", ".join(f"{u.subnet.cidr} {u.subnet.available_ips} free" for u in dead)
            + "). Use --strategy custom-networking"
        )
    steps: list[Step] = []
    for u in uses:
        if u.free_28 == 0 or u.subnet.reservations:
            continue
        occupied = [*netmath.aws_reserved_addresses(netmath.parse_cidr(u.subnet.cidr))]
        occupied += [IPv4Network(x, strict=False) for x in u.subnet.used]
        block = _largest_free_block(u.subnet, occupied)
        if block is None:
            continue
        steps.append(
            Step(
                id=f"reserve-prefixes-{u.subnet.subnet_id}",
                action=RESERVE_SUBNET_CIDR.name,
                params={"subnet_id": u.subnet.subnet_id, "cidr": str(block), "type": "prefix"},
                description=f"reserve {block} in {subnet_label(u.subnet)} for /28 prefixes so single addresses "
                "do not fragment it",
                permissions=RESERVE_SUBNET_CIDR.permissions,
            )
        )
    env = {PREFIX_DELEGATION: "true", "WARM_PREFIX_TARGET": "1"}
    steps.append(env_step(eks, cni, env, "enable-prefix-delegation", "prefix delegation"))
    template = template_nodegroup(eks, opts.template) if eks.nodegroups else None
    itype = next((types[n] for n in (template.instance_types if template else ()) if n in types), None)
    pd_cni = replace(cni, prefix_delegation=True)
    notes = [
        "Existing nodes keep their max-pods until they are replaced: roll the node groups "
        "(or create new ones) after the change.",
    ]
    if itype:
        notes.append(f"{itype.name} nodes can run {max_pods(itype, pd_cni)} pods with prefix delegation.")
    if dead:
        notes.append(
            "These subnets have no free /28 and gain nothing: " + ", ".join(subnet_label(u.subnet) for u in dead)
        )
    karpenter = karpenter_prefix_delegation(eks, snapshot.kube, pd_cni)
    groups = self_managed(eks, pd_cni, ("enable-prefix-delegation",), prefix_delegation=True)
    steps += [*karpenter.steps, *groups.steps]
    notes += [*karpenter.notes, *groups.notes]
    if provisioners(eks).auto_mode:
        notes.append("EKS Auto Mode nodes are unaffected: they ignore aws-node env and use /28 prefixes already.")
    basis: dict[str, Any] = {
        "vpc_id": eks.vpc.vpc_id,
        "subnets": {u.subnet.subnet_id: u.subnet.cidr for u in uses},
        "reservations": {u.subnet.subnet_id: list(u.subnet.reservations) for u in uses},
        "cni_source": cni.source,
        **(karpenter.basis or {}),
        **(groups.basis or {}),
    }
    summary = {"free_28": {u.subnet.subnet_id: u.free_28 for u in uses}}
    return seal_plan(snapshot, created_at, "prefix-delegation", basis, steps, notes, summary)


def _largest_free_block(subnet: Subnet, occupied: list[IPv4Network]) -> IPv4Network | None:
    net = netmath.parse_cidr(subnet.cidr)
    for prefix in range(max(net.prefixlen + 1, 24), 29):
        block = netmath.first_free_block(prefix, [net], occupied)
        if block is not None:
            return block
    return None


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan) when the pod subnets changed or their planned blocks are no longer free."""
    check_plan_drift(plan, snapshot, _drift)


def _drift(plan: Plan, eks: EksSection, snapshot: Snapshot) -> list[str]:
    problems: list[str] = []
    subnets = {s.subnet_id: s for s in eks.subnets}
    for sid, cidr in plan.basis["subnets"].items():
        s = subnets.get(sid)
        if s is None or s.cidr != cidr:
            problems.append(f"subnet {sid} ({cidr}) is gone or changed")
    for step in plan.steps:
        if step.action != RESERVE_SUBNET_CIDR.name:
            continue
        s = subnets.get(step.params["subnet_id"])
        if s is None:
            continue
        block = netmath.parse_cidr(step.params["cidr"])
        before = set(plan.basis["reservations"].get(s.subnet_id, ()))
        for r in s.reservations:
            # Our own reservation from an earlier run of this plan is progress, not drift.
            if r != str(block) and r not in before and netmath.overlaps(netmath.parse_cidr(r), block):
                problems.append(f"{r} was reserved in {s.subnet_id} and overlaps the planned {block}")
        taken = [u for u in s.used if netmath.overlaps(IPv4Network(u, strict=False), block)]
        if taken and str(block) not in s.reservations:
            problems.append(f"{', '.join(taken[:3])} in {s.subnet_id} now sit inside the planned {block}")
    return problems


ACTIONS = (
    RESERVE_SUBNET_CIDR,
    UPDATE_ADDON_ENV,
    SET_DAEMONSET_ENV,
    UPDATE_EC2_NODE_CLASS,
    *SELF_MANAGED_ACTIONS,
)
