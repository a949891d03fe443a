"""EKS strategy `eks-migrate`: after cidrx applied an expansion whose new subnets have room, move the workloads
off the nodes in full subnets (they cannot give new pods addresses): cordon each node, evict its pods with the
Eviction API honouring PodDisruptionBudgets (DaemonSet and mirror pods stay, as with `kubectl drain
--ignore-daemonsets`), then scale each old managed node group whose nodes all sat in full subnets down to 0.
Their replacements join with the new space. Nodes Karpenter or EKS Auto Mode launched get no steps: their
drift replaces them once their node class selects subnets with room (`karpenter-subnets`), within their
disruption budgets. Opt-in: `expand --plan --strategy eks-migrate`; pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection
from ipaddress import ip_address, ip_network
from typing import Any

from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.migrate import CORDON_NODE, EVICT_NODE_PODS, SCALE_NODEGROUP
from cidrx.providers.eks.facts.applied import applied_plans
from cidrx.providers.eks.facts.cni import cni_config
from cidrx.providers.eks.facts.subnets import subnet_label
from cidrx.providers.eks.model import EksSection, eks_section

NAME = "eks-migrate"
ACTIONS = (CORDON_NODE, EVICT_NODE_PODS, SCALE_NODEGROUP)
NEARLY_FULL = 0.8


def _full_node_subnets(eks: EksSection, snapshot: Snapshot) -> list[Any]:
    """Node subnets no plan of cidrx created that cannot take (or can barely take) another node."""
    out = []
    from cidrx.providers.eks.analyze.diagnosis import uses_now

    for u in uses_now(eks, snapshot.kube, cni_config(eks, snapshot.kube)):
        if "nodes" not in u.roles or u.need == 0 or u.subnet.tags.get(DIGEST_TAG):
            continue
        free = u.subnet.available_ips
        if free < 2 * u.need or (u.size and (u.size - free) / u.size >= NEARLY_FULL):
            out.append(u)
    return out


def _stuck(eks: EksSection, snapshot: Snapshot) -> tuple[list[Any], list[Any]]:
    """(full node subnets, the cluster's nodes whose address lies in one)."""
    full = _full_node_subnets(eks, snapshot)
    nets = [ip_network(u.subnet.cidr) for u in full]
    nodes = [n for n in snapshot.kube.nodes if n.internal_ip and any(ip_address(n.internal_ip) in net for net in nets)]
    return full, sorted(nodes, key=lambda n: n.name)


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    eks = eks_section(snapshot)
    roomy = [a for a in applied_plans(snapshot) if a.free > 0]
    if not roomy:
        raise InvalidInput(
            "no expansion cidrx applied to this cluster has new subnets with room: there is nothing to migrate onto",
            hint="plan an expansion first (`cidrx expand --plan`), apply it, then migrate",
        )
    full, nodes = _stuck(eks, snapshot)
    groups = {ng.name: ng for ng in eks.nodegroups}
    managed = [n for n in nodes if n.pool in groups and not groups[n.pool].tags.get(DIGEST_TAG)]
    others = [n for n in nodes if n not in managed]
    if not managed:
        raise InvalidInput(
            "no node of a managed node group sits in a full subnet: nothing to migrate"
            + (f" ({len(others)} other node(s) there are rolled by Karpenter/Auto Mode drift)" if others else ""),
        )
    steps: list[Step] = []
    for n in managed:
        steps.append(
            Step(
                id=f"cordon-{n.name}",
                action=CORDON_NODE.name,
                params={"node": n.name, "nodegroup": n.pool},
                description=f"cordon node {n.name} ({n.internal_ip}, node group {n.pool}): no new pods there",
                permissions=CORDON_NODE.permissions,
            )
        )
        if not snapshot.kube.pods_per_node.get(n.name):
            continue  # no pod to move (hostNetwork pods take no pod address)
        steps.append(
            Step(
                id=f"evict-{n.name}",
                action=EVICT_NODE_PODS.name,
                params={"node": n.name, "nodegroup": n.pool},
                description=f"evict the pods of node {n.name} with the Eviction API, honouring PodDisruptionBudgets "
                "(DaemonSet and mirror pods stay); stop and report if a budget never allows",
                depends_on=(f"cordon-{n.name}",),
                permissions=EVICT_NODE_PODS.permissions,
            )
        )
    everyone = {n.name for n in snapshot.kube.nodes}
    planned = {s.id for s in steps}
    scaled: dict[str, Any] = {}
    for name in sorted({n.pool for n in managed}):
        ng = groups[name]
        mine = [n.name for n in managed if n.pool == name]
        theirs = [n.name for n in snapshot.kube.nodes if n.pool == name and n.name in everyone]
        if set(theirs) - set(mine):
            continue  # some of its nodes have addresses: the group stays
        to = {"minSize": 0, "maxSize": max(1, ng.max_size), "desiredSize": 0}
        scaled[name] = {"minSize": ng.min_size, "maxSize": ng.max_size, "desiredSize": ng.desired_size}
        steps.append(
            Step(
                id=f"scale-{name}",
                action=SCALE_NODEGROUP.name,
                params={"cluster": eks.cluster.name, "name": name, "to": to},
                description=f"scale node group {name} from {ng.desired_size} node(s) to 0 once its nodes are empty "
                "(UpdateNodegroupConfig); rollback scales it back",
                depends_on=tuple(f"evict-{n}" if f"evict-{n}" in planned else f"cordon-{n}" for n in mine),
                permissions=SCALE_NODEGROUP.permissions,
            )
        )
    notes = [
        "Pods are evicted, never deleted: a PodDisruptionBudget that allows no disruption holds its pods, and the "
        "apply stops after the per-node timeout naming it (the node stays cordoned; run the same command again).",
        "Evicted pods are recreated by their controllers on nodes with addresses; `cidrx rollback` uncordons the "
        "nodes and scales the node groups back to the recorded size, but does not move pods back.",
        "Full subnets: " + ", ".join(subnet_label(u.subnet) for u in full),
    ]
    if others:
        notes.append(
            f"{len(others)} node(s) in full subnets belong to no managed node group of the cluster "
            f"({', '.join(n.name for n in others[:5])}): Karpenter and EKS Auto Mode replace them by drift once their "
            "node class selects subnets with room (see `--strategy karpenter-subnets`); no steps for them."
        )
    basis: dict[str, Any] = {
        "applied_plans": sorted(a.plan_id for a in roomy),
        "nodes": {n.name: n.pool for n in managed},
        "nodegroups": scaled,
    }
    summary = {"nodes": len(managed), "nodegroups": sorted(scaled), "onto": [a.space for a in roomy]}
    return seal_plan(snapshot, created_at, NAME, basis, steps, notes, summary)


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the estate shows it now. A node that is gone, or a group already at the planned size,
    is this plan's own progress (its scale step removed them)."""
    eks = eks_section(snapshot)
    groups = {ng.name: ng for ng in eks.nodegroups}
    targets = {str(s.params["name"]): s.params["to"] for s in plan.steps if s.action == SCALE_NODEGROUP.name}
    nodes = {n.name: n for n in snapshot.kube.nodes}
    planned = {
        str(s.params["node"]): str(s.params.get("nodegroup", "")) for s in plan.steps if s.action == CORDON_NODE.name
    }
    done = {
        name
        for name, to in targets.items()
        if name in groups
        and {
            "minSize": groups[name].min_size,
            "maxSize": groups[name].max_size,
            "desiredSize": groups[name].desired_size,
        }
        == to
    }
    now_nodes: dict[str, Any] = {}
    for name, group in planned.items():
        n = nodes.get(name)
        now_nodes[name] = n.pool if n is not None else (group if group in done else None)
    now_groups: dict[str, Any] = {}
    was = plan.basis.get("nodegroups") or {}
    for name in targets:
        ng = groups.get(name)
        if ng is None:
            now_groups[name] = None
        elif name in done and name in was:
            now_groups[name] = was[name]
        else:
            now_groups[name] = {"minSize": ng.min_size, "maxSize": ng.max_size, "desiredSize": ng.desired_size}
    return {
        "applied_plans": sorted(
            a.plan_id for a in applied_plans(snapshot) if a.plan_id in (plan.basis.get("applied_plans") or ())
        ),
        "nodes": now_nodes,
        "nodegroups": now_groups,
    }


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when the plan's node groups or nodes are not the ones it saw (its own
    progress aside)."""
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    now = read_basis(plan, snapshot)
    problems = []
    for name, group in (plan.basis.get("nodes") or {}).items():
        if now["nodes"].get(name) != group:
            problems.append(f"node {name} (node group {group}) is gone or moved")
    for name, was in (plan.basis.get("nodegroups") or {}).items():
        if now["nodegroups"].get(name) != was:
            problems.append(f"node group {name} was resized since the plan")
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")
