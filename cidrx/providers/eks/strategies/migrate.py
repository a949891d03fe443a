"""EKS strategy `eks-migrate`: after cidrx applied an expansion whose new subnets have room, move the workloads
off the nodes in full subnets (they cannot give new pods addresses): cordon each node, evict its pods with the
Eviction API honouring PodDisruptionBudgets (DaemonSet and mirror pods stay, as with `kubectl drain
--ignore-daemonsets`), then scale each old managed node group (UpdateNodegroupConfig) or self-managed group
(its Auto Scaling group: UpdateAutoScalingGroup MinSize/DesiredCapacity) whose nodes all sat in full subnets down
to 0. Their replacements join with the new space. Nodes Karpenter or EKS Auto Mode launched get no steps: their
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
from cidrx.providers.eks.actions.migrate import (
    CORDON_NODE,
    EVICT_NODE_PODS,
    SCALE_AUTO_SCALING_GROUP,
    SCALE_NODEGROUP,
)
from cidrx.providers.eks.facts.applied import applied_plans
from cidrx.providers.eks.facts.cni import cni_config
from cidrx.providers.eks.facts.provisioners import provisioners
from cidrx.providers.eks.facts.subnets import subnet_label
from cidrx.providers.eks.model import EksSection, eks_section

NAME = "eks-migrate"
ACTIONS = (CORDON_NODE, EVICT_NODE_PODS, SCALE_NODEGROUP, SCALE_AUTO_SCALING_GROUP)
NODEGROUP, ASG = "nodegroup", "asg"  # who owns a node the migration empties: a managed group, an Auto Scaling group
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


def _owners(eks: EksSection, snapshot: Snapshot) -> dict[str, tuple[str, str]]:
    """Node name -> (kind, group) for the nodes a scale-down can take away: "nodegroup" for a managed node group
    (not one a plan of cidrx created), "asg" for a self-managed group's Auto Scaling group (its in-service
    instances, as collect matched them to nodes)."""
    groups = {ng.name: ng for ng in eks.nodegroups}
    out: dict[str, tuple[str, str]] = {}
    for n in snapshot.kube.nodes:
        if n.pool in groups and not groups[n.pool].tags.get(DIGEST_TAG):
            out[n.name] = (NODEGROUP, n.pool)
    for g in provisioners(eks).self_managed:
        if not g.tags.get(DIGEST_TAG):
            for name in g.nodes:
                out.setdefault(name, (ASG, g.name))
    return out


def _size(g: Any) -> dict[str, int]:
    return {"minSize": g.min_size, "maxSize": g.max_size, "desiredSize": g.desired_size}


def _group_param(kind: str) -> str:
    return "nodegroup" if kind == NODEGROUP else "auto_scaling_group"


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    eks = eks_section(snapshot)
    roomy = [a for a in applied_plans(snapshot) if a.free > 0]
    if not roomy:
        raise InvalidInput(
            "no expansion cidrx applied to this cluster has new subnets with room: there is nothing to migrate onto",
            hint="plan an expansion first (`cidrx expand --plan`), apply it, then migrate",
        )
    full, nodes = _stuck(eks, snapshot)
    owners = _owners(eks, snapshot)
    owned = [n for n in nodes if n.name in owners]
    others = [n for n in nodes if n.name not in owners]
    if not owned:
        raise InvalidInput(
            "no node of a managed or self-managed node group sits in a full subnet: nothing to migrate"
            + (f" ({len(others)} other node(s) there are rolled by Karpenter/Auto Mode drift)" if others else ""),
        )
    steps: list[Step] = []
    for n in owned:
        kind, group = owners[n.name]
        what = f"node group {group}" if kind == NODEGROUP else f"Auto Scaling group {group}"
        steps.append(
            Step(
                id=f"cordon-{n.name}",
                action=CORDON_NODE.name,
                params={"node": n.name, _group_param(kind): group},
                description=f"cordon node {n.name} ({n.internal_ip}, {what}): no new pods there",
                permissions=CORDON_NODE.permissions,
            )
        )
        if not snapshot.kube.pods_per_node.get(n.name):
            continue  # no pod to move (hostNetwork pods take no pod address)
        steps.append(
            Step(
                id=f"evict-{n.name}",
                action=EVICT_NODE_PODS.name,
                params={"node": n.name, _group_param(kind): group},
                description=f"evict the pods of node {n.name} with the Eviction API, honouring PodDisruptionBudgets "
                "(DaemonSet and mirror pods stay); stop and report if a budget never allows",
                depends_on=(f"cordon-{n.name}",),
                permissions=EVICT_NODE_PODS.permissions,
            )
        )
    planned = {s.id for s in steps}
    groups = {ng.name: ng for ng in eks.nodegroups}
    asgs = {g.name: g for g in provisioners(eks).self_managed}
    scaled: dict[str, Any] = {}
    scaled_asgs: dict[str, Any] = {}
    kept: list[str] = []
    for kind, name in sorted({owners[n.name] for n in owned}):
        mine = [n.name for n in owned if owners[n.name] == (kind, name)]
        theirs = [n for n, owner in owners.items() if owner == (kind, name)]
        if set(theirs) - set(mine):
            kept.append(name)
            continue  # some of its nodes have addresses: the group stays
        after = tuple(f"evict-{n}" if f"evict-{n}" in planned else f"cordon-{n}" for n in mine)
        if kind == NODEGROUP:
            ng = groups[name]
            scaled[name] = _size(ng)
            steps.append(
                Step(
                    id=f"scale-{name}",
                    action=SCALE_NODEGROUP.name,
                    params={"cluster": eks.cluster.name, "name": name, "to": _to(ng)},
                    description=f"scale node group {name} from {ng.desired_size} node(s) to 0 once its nodes are "
                    "empty (UpdateNodegroupConfig); rollback scales it back",
                    depends_on=after,
                    permissions=SCALE_NODEGROUP.permissions,
                )
            )
        else:
            g = asgs[name]
            scaled_asgs[name] = _size(g)
            steps.append(
                Step(
                    id=f"scale-asg-{name}",
                    action=SCALE_AUTO_SCALING_GROUP.name,
                    params={"name": name, "to": _to(g)},
                    description=f"scale self-managed Auto Scaling group {name} from {g.desired_size} instance(s) to 0 "
                    "once its nodes are empty (UpdateAutoScalingGroup MinSize/DesiredCapacity); rollback scales it "
                    "back",
                    depends_on=after,
                    permissions=SCALE_AUTO_SCALING_GROUP.permissions,
                )
            )
    notes = [
        "Pods are evicted, never deleted: a PodDisruptionBudget that allows no disruption holds its pods, and the "
        "apply stops after the per-node timeout naming it (the node stays cordoned; run the same command again).",
        "Evicted pods are recreated by their controllers on nodes with addresses; `cidrx rollback` uncordons the "
        "nodes and scales the node groups back to the recorded size, but does not move pods back.",
        "Full subnets: " + ", ".join(subnet_label(u.subnet) for u in full),
    ]
    if kept:
        notes.append(
            f"Not scaled down (some of their nodes are in subnets with room): {', '.join(kept)}; their nodes in full "
            "subnets are cordoned and drained only."
        )
    if others:
        notes.append(
            f"{len(others)} node(s) in full subnets belong to no managed or self-managed node group of the cluster "
            f"({', '.join(n.name for n in others[:5])}): Karpenter and EKS Auto Mode replace them by drift once their "
            "node class selects subnets with room (see `--strategy karpenter-subnets`); no steps for them."
        )
    basis: dict[str, Any] = {
        "applied_plans": sorted(a.plan_id for a in roomy),
        "nodes": {n.name: owners[n.name][1] for n in owned},
        "nodegroups": scaled,
    }
    if scaled_asgs:
        basis["auto_scaling_groups"] = scaled_asgs
    summary: dict[str, Any] = {"nodes": len(owned), "nodegroups": sorted(scaled), "onto": [a.space for a in roomy]}
    if scaled_asgs:
        summary["auto_scaling_groups"] = sorted(scaled_asgs)
    return seal_plan(snapshot, created_at, NAME, basis, steps, notes, summary)


def _to(g: Any) -> dict[str, int]:
    return {"minSize": 0, "maxSize": max(1, g.max_size), "desiredSize": 0}


def _now_sizes(
    targets: dict[str, Any], sizes: dict[str, dict[str, int]], was: dict[str, Any]
) -> tuple[set[str], dict[str, Any]]:
    """(groups already at the planned size, each planned group's size as the plan's basis would read it: the
    recorded size once this plan scaled it, None when it is gone)."""
    done = {name for name, to in targets.items() if sizes.get(name) == to}
    now: dict[str, Any] = {}
    for name in targets:
        if name not in sizes:
            now[name] = None
        elif name in done and name in was:
            now[name] = was[name]
        else:
            now[name] = sizes[name]
    return done, now


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the estate shows it now. A node that is gone, or a group already at the planned size,
    is this plan's own progress (its scale step removed them)."""
    eks = eks_section(snapshot)
    owners = _owners(eks, snapshot)
    targets = {str(s.params["name"]): s.params["to"] for s in plan.steps if s.action == SCALE_NODEGROUP.name}
    asg_targets = {
        str(s.params["name"]): s.params["to"] for s in plan.steps if s.action == SCALE_AUTO_SCALING_GROUP.name
    }
    nodes = {n.name: n for n in snapshot.kube.nodes}
    planned = {
        str(s.params["node"]): str(s.params.get("nodegroup") or s.params.get("auto_scaling_group") or "")
        for s in plan.steps
        if s.action == CORDON_NODE.name
    }
    done, now_groups = _now_sizes(
        targets, {ng.name: _size(ng) for ng in eks.nodegroups}, plan.basis.get("nodegroups") or {}
    )
    done_asgs, now_asgs = _now_sizes(
        asg_targets,
        {g.name: _size(g) for g in provisioners(eks).self_managed},
        plan.basis.get("auto_scaling_groups") or {},
    )
    now_nodes: dict[str, Any] = {}
    for name, group in planned.items():
        n = nodes.get(name)
        if n is not None:
            now_nodes[name] = owners[name][1] if name in owners else n.pool
        else:
            now_nodes[name] = group if group in done | done_asgs else None
    out: dict[str, Any] = {
        "applied_plans": sorted(
            a.plan_id for a in applied_plans(snapshot) if a.plan_id in (plan.basis.get("applied_plans") or ())
        ),
        "nodes": now_nodes,
        "nodegroups": now_groups,
    }
    if "auto_scaling_groups" in plan.basis:
        out["auto_scaling_groups"] = now_asgs
    return out


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
    for name, was in (plan.basis.get("auto_scaling_groups") or {}).items():
        if (now.get("auto_scaling_groups") or {}).get(name) != was:
            problems.append(f"Auto Scaling group {name} was resized since the plan")
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")
