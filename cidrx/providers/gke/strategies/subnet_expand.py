"""GKE strategy `subnet-expand`: when the nodes' own addresses run out (the subnet's PRIMARY range is full, which
cluster-autoscaler also reports as "IP space exhausted"), widen the primary range with
`subnetworks.expandIpCidrRange` to the smallest aligned supernet that holds the nodes asked for and overlaps
nothing in the network, then widen GKE's `gke-<cluster>-<hash>-vms` firewall rule to it (GKE does not).

The expansion cannot be undone: the plan says so, and `cidrx rollback` refuses it (the action declares
`no_undo`). Pure: no I/O. `check_drift` compares a plan's basis with a fresh snapshot before apply.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.actions.firewall import ADD_FIREWALL_RANGE
from cidrx.providers.gke.actions.subnet_expand import EXPAND_SUBNET_RANGE
from cidrx.providers.gke.facts.node_subnet import (
    NodeSubnetUse,
    node_subnet_use,
    nodes_that_fit,
    other_firewalls,
    plan_expansion,
    vms_firewalls,
)
from cidrx.providers.gke.facts.occupied import occupied_space, short_region
from cidrx.providers.gke.facts.pod_ranges import pool_max_nodes
from cidrx.providers.gke.model import GkeSection
from cidrx.providers.gke.strategies.pod_range import firewall_drift, gke_section, refuse_stale

NAME = "subnet-expand"
ACTIONS = (EXPAND_SUBNET_RANGE, ADD_FIREWALL_RANGE)
# The way out when no supernet fits: a node pool on another subnet of a multi-subnet cluster (container v1
# NodeNetworkConfig.subnetwork; the cluster's IPAllocationPolicy.additionalIpRangesConfigs lists such subnets).
WAY_OUT = (
    "put new nodes on another subnet: GKE clusters can use more than one subnet, with a node pool on another "
    "subnet of the same network (node pool networkConfig.subnetwork; the cluster lists such subnets in "
    "ipAllocationPolicy.additionalIpRangesConfigs)"
)


def _use(gke: GkeSection) -> NodeSubnetUse:
    use = node_subnet_use(gke, sum(pool_max_nodes(p) for p in gke.node_pools))
    if use is None:
        raise InvalidInput(
            f"this snapshot holds no addresses of subnet {gke.subnet.name}'s primary range (taken before cidrx "
            "read VMs, forwarding rules and addresses)",
            hint="take a new snapshot (or diagnose the cluster directly) and plan again",
        )
    return use


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    gke = gke_section(snapshot)
    use = _use(gke)
    if opts.add_nodes is not None and opts.add_nodes < 1:
        raise InvalidInput("--add-nodes must be at least 1")
    # Room for the autoscaler's maximum, and at least as many nodes again as there are now.
    needed = opts.add_nodes or max(use.autoscaler_max - use.nodes, use.nodes, 1)
    subnet = gke.subnet
    region = short_region(subnet.region)
    where = f"subnet {region}/{subnet.name}"
    if use.free >= needed:
        raise InvalidInput(
            f"the primary range {use.cidr} of {where} has room for {use.free} more node(s), {needed} asked: "
            "nothing to expand",
            hint="pass a larger --add-nodes to plan an expansion anyway",
        )
    found = plan_expansion(gke, use.used, needed)
    if found.cidr is None:
        most = (
            f"the largest that overlaps nothing, {found.largest}, holds {found.largest_holds} more node(s) "
            f"(`--add-nodes {found.largest_holds}` plans it)"
            if found.largest is not None and found.largest_holds > use.free
            else f"no larger range fits: the primary range holds {use.free} more node(s) as it is"
        )
        raise InvalidInput(
            f"no aligned supernet of {use.cidr} ({where}) holds {needed} more node(s) without overlapping "
            f"something: {found.blocker}; {most}",
            hint=f"the way out: {WAY_OUT}",
        )
    new = found.cidr
    host_project = gke.host_project
    steps = [
        Step(
            id="expand-subnet-range",
            action=EXPAND_SUBNET_RANGE.name,
            params={
                "project": host_project,
                "region": region,
                "subnet": subnet.name,
                "from_cidr": str(use.cidr),
                "cidr": str(new),
            },
            description=f"expand the primary range of {where} from {use.cidr} to {new}"
            + (f" in Shared VPC host project {host_project}" if gke.shared_vpc else "")
            + f" (room for {nodes_that_fit(new, use.used)} more node(s)); this cannot be undone",
            permissions=EXPAND_SUBNET_RANGE.permissions,
        )
    ]
    firewalls = vms_firewalls(gke, use.cidr)
    for rule in firewalls:
        steps.append(
            Step(
                id=f"widen-firewall-{rule.name}",
                action=ADD_FIREWALL_RANGE.name,
                params={
                    "project": rule.project,
                    "firewall": rule.name,
                    "field": rule.ranges_field,
                    "cidr": str(new),
                    "seen": list(rule.ranges),
                },
                description=f"add {new} to sourceRanges of GKE's firewall rule {rule.name} (project {rule.project}), "
                f"which allows traffic from the node addresses ({', '.join(rule.ranges)}); GKE does not widen it",
                depends_on=("expand-subnet-range",),
                permissions=ADD_FIREWALL_RANGE.permissions,
            )
        )
    basis: dict[str, Any] = {
        "network": gke.cluster.network,
        "subnet_region": region,
        "subnet": subnet.name,
        "ip_cidr_range": str(use.cidr),
        "cidr": str(new),
    }
    if gke.shared_vpc:
        basis["network_project"] = host_project
    if firewalls:
        basis["firewalls"] = {r.name: list(r.ranges) for r in firewalls}
    holds = nodes_that_fit(new, use.used)
    notes = [
        f"The expansion of {where} from {use.cidr} to {new} cannot be undone: GCE cannot shrink a primary range, "
        "so `cidrx rollback` refuses this plan and changes nothing.",
        f"GKE's firewall rule for intra-cluster traffic from the nodes (gke-{gke.cluster.name}-<hash>-vms) is not "
        "widened by GKE when the range grows: "
        + (
            f"cidrx adds {new} to {', '.join(r.name for r in firewalls)}; rollback leaves it there, since the "
            "range stays expanded."
            if firewalls
            else "this snapshot shows no such rule naming the range; check the cluster's firewall rules."
        ),
    ]
    for rule in other_firewalls(gke, use.cidr, new):
        notes.append(
            f"Firewall rule {rule.name} ({rule.action}, {', '.join(rule.ranges)}) names today's node range but not "
            f"{new}; cidrx leaves it to its owner: if it is meant for the nodes, add {new}."
        )
    if gke.shared_vpc:
        notes.append(
            f"Shared VPC: the expansion runs in host project {host_project} (it needs "
            f"{', '.join(EXPAND_SUBNET_RANGE.permissions)} there); VMs of other service projects share the range."
        )
    notes.append(f"Terraform: set ip_cidr_range of the subnet to {new} (an in-place expansion); never set it back.")
    summary = {
        "subnet": f"{region}/{subnet.name}",
        "from_cidr": str(use.cidr),
        "cidr": str(new),
        "usable_before": use.usable,
        "usable_after": new.num_addresses - 4,
        "used": use.used,
        "nodes": use.nodes,
        "nodes_that_fit_before": use.free,
        "nodes_that_fit_after": holds,
        "asked": needed,
    }
    return seal_plan(snapshot, created_at, NAME, basis, steps, notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when the subnet or its primary range is not the one the plan saw (already the
    planned range is progress), the planned range now overlaps something, or the -vms rule changed."""
    gke = gke_section(snapshot)
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    b = plan.basis
    subnet = gke.subnet
    problems: list[str] = []
    if gke.cluster.network != b["network"]:
        problems.append(f"the cluster now uses network {gke.cluster.network}, not {b['network']}")
    if (gke.network_project or "") != b.get("network_project", ""):
        problems.append(f"the cluster's network now belongs to project {gke.host_project}")
    if subnet.name != b["subnet"] or short_region(subnet.region) != b["subnet_region"]:
        problems.append(f"the cluster now uses subnet {short_region(subnet.region)}/{subnet.name}, not {b['subnet']}")
    planned = netmath.parse_cidr(b["cidr"])
    if subnet.ip_cidr_range not in (b["ip_cidr_range"], b["cidr"]):
        problems.append(
            f"the primary range of subnet {b['subnet']} is now {subnet.ip_cidr_range}, not {b['ip_cidr_range']}"
        )
    old = netmath.parse_cidr(b["ip_cidr_range"])
    own = f"subnet {short_region(subnet.region)}/{subnet.name}"
    for net, where in occupied_space(gke):
        if where == own or net.subnet_of(old):
            continue
        if netmath.overlaps(net, planned):
            problems.append(f"{planned} now overlaps {net} ({where})")
    problems += firewall_drift(b.get("firewalls") or {}, gke, str(planned))
    refuse_stale(problems)


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the estate shows it now (cidrx.engine.basis compares it key by key). The planned range
    is read from the plan's step; the primary range already being it is this plan's own progress, as is the
    planned range in the firewall rules the plan widens."""
    gke = gke_section(snapshot)
    step = next((s for s in plan.steps if s.action == EXPAND_SUBNET_RANGE.name), None)
    cidr = str(step.params.get("cidr", "")) if step else ""
    was = str(step.params.get("from_cidr", "")) if step else ""
    subnet = gke.subnet
    current: dict[str, Any] = {
        "network": gke.cluster.network,
        "subnet_region": short_region(subnet.region),
        "subnet": subnet.name,
        "ip_cidr_range": was if subnet.ip_cidr_range == cidr and cidr else subnet.ip_cidr_range,
        "cidr": cidr,
    }
    if gke.shared_vpc:
        current["network_project"] = gke.host_project
    widened = [str(s.params.get("firewall")) for s in plan.steps if s.action == ADD_FIREWALL_RANGE.name]
    if widened:
        rules = {r.name: r for r in gke.firewalls or ()}
        # Unread firewalls (None) cannot show the rules the plan widens: that is drift, not a pass.
        current["firewalls"] = (
            None
            if gke.firewalls is None
            else {name: [r for r in rules[name].ranges if r != cidr] for name in widened if name in rules}
        )
    return current
