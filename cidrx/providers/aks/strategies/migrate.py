"""AKS strategy `aks-migrate`: after cidrx applied an `aks-pod-subnet` expansion whose new pod subnet has room,
move the workloads off the old agent pools whose pod subnet is full. With Azure CNI dynamic pod IP allocation each
node takes batches of pod addresses from its own pool's pod subnet as its pods grow, so pods the scheduler puts on
those nodes keep failing (docs/cloud-facts.md, "AKS after an expansion"). The plan cordons each of their nodes,
evicts its pods with the Eviction API honouring PodDisruptionBudgets (DaemonSet and mirror pods stay, as with
`kubectl drain --ignore-daemonsets`), then scales each old User pool to 0 through the agent pool API (autoscaling
off, count 0). A System pool cannot go to 0 (AKS keeps at least one System pool with nodes): its nodes are
cordoned and drained only. After `aks-node-pool` nothing has to move (each node reserved its pods' addresses when
it was created), so there is nothing to plan. Opt-in: `expand --plan --strategy aks-migrate`; pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.kube import KubeNode
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.actions.migrate import CORDON_NODE, EVICT_NODE_PODS, SCALE_AGENT_POOL, scaling
from cidrx.providers.aks.analyze.analyze import aks_section
from cidrx.providers.aks.facts.applied import AppliedPool, applied_pools
from cidrx.providers.aks.facts.subnets import SubnetUse, subnet_uses
from cidrx.providers.aks.model import AgentPool, AksSection

NAME = "aks-migrate"
ACTIONS = (CORDON_NODE, EVICT_NODE_PODS, SCALE_AGENT_POOL)
SYSTEM = "System"  # agentPools mode: System pools keep at least one node (docs/cloud-facts.md, "AKS migration")
TO = {"count": 0, "enableAutoScaling": False}


def pool_scaling(pool: AgentPool) -> dict[str, Any]:
    """The pool's count and autoscaler settings, as the scale step reads and restores them."""
    return scaling(
        {
            "count": pool.count,
            "enableAutoScaling": pool.enable_auto_scaling,
            "minCount": pool.min_count,
            "maxCount": pool.max_count,
        }
    )


def _roomy(snapshot: Snapshot, aks: AksSection) -> list[AppliedPool]:
    """The applied pod-subnet plans' pools whose new pod subnet still has room for a batch."""
    return [a for a in applied_pools(aks, snapshot.kube) if a.role == "pods" and a.room > 0]


def _full(aks: AksSection, roomy: list[AppliedPool]) -> list[SubnetUse]:
    """The pod subnets no applied pool owns that cannot give one more batch of pod addresses."""
    own = {a.use.subnet.id.lower() for a in roomy}
    return [
        u
        for u in subnet_uses(aks)
        if u.role == "pods" and u.subnet.id.lower() not in own and u.room_for_nodes == 0 and u.pools
    ]


def _stuck(aks: AksSection, snapshot: Snapshot, roomy: list[AppliedPool]) -> tuple[list[SubnetUse], list[AgentPool]]:
    """(full pod subnets, their pools not created by a plan of cidrx), pools by name."""
    full = _full(aks, roomy)
    mine = {a.pool.name for a in applied_pools(aks, snapshot.kube)}
    pools = {p.name: p for u in full for p in u.pools if p.name not in mine}
    return full, [pools[n] for n in sorted(pools)]


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    aks = aks_section(snapshot)
    applied = applied_pools(aks, snapshot.kube)
    roomy = _roomy(snapshot, aks)
    if not roomy:
        if any(a.role == "nodes" for a in applied):
            raise InvalidInput(
                "the expansions cidrx applied to this cluster added node subnets (aks-node-pool): nothing has to "
                "move, each node reserved its pods' addresses when it was created",
            )
        raise InvalidInput(
            "no pod-subnet expansion cidrx applied to this cluster has a new pod subnet with room: there is nothing "
            "to migrate onto",
            hint="plan an expansion first (`cidrx expand --plan --strategy aks-pod-subnet`), apply it, then migrate",
        )
    full, pools = _stuck(aks, snapshot, roomy)
    by_pool: dict[str, list[KubeNode]] = {
        p.name: sorted((n for n in snapshot.kube.nodes if n.pool == p.name), key=lambda n: n.name) for p in pools
    }
    if not any(by_pool.values()):
        raise InvalidInput("no node of an agent pool on a full pod subnet is left: nothing to migrate")
    steps: list[Step] = []
    scaled: dict[str, Any] = {}
    system: list[str] = []
    for pool in pools:
        nodes = by_pool[pool.name]
        for n in nodes:
            steps.append(
                Step(
                    id=f"cordon-{n.name}",
                    action=CORDON_NODE.name,
                    params={"node": n.name, "agent_pool": pool.name},
                    description=f"cordon node {n.name} ({n.internal_ip}, agent pool {pool.name}): no new pods there",
                    permissions=CORDON_NODE.permissions,
                )
            )
            if not snapshot.kube.pods_per_node.get(n.name):
                continue  # no pod to move
            steps.append(
                Step(
                    id=f"evict-{n.name}",
                    action=EVICT_NODE_PODS.name,
                    params={"node": n.name, "agent_pool": pool.name},
                    description=f"evict the pods of node {n.name} with the Eviction API, honouring "
                    "PodDisruptionBudgets (DaemonSet and mirror pods stay); stop and report if a budget never allows",
                    depends_on=(f"cordon-{n.name}",),
                    permissions=EVICT_NODE_PODS.permissions,
                )
            )
        if pool.mode == SYSTEM:
            system.append(pool.name)
            continue
        planned = {s.id for s in steps}
        after = tuple(f"evict-{n.name}" if f"evict-{n.name}" in planned else f"cordon-{n.name}" for n in nodes)
        was = pool_scaling(pool)
        scaled[pool.name] = was
        auto = f", autoscaling {pool.min_count}-{pool.max_count} turned off" if pool.enable_auto_scaling else ""
        steps.append(
            Step(
                id=f"scale-{pool.name}",
                action=SCALE_AGENT_POOL.name,
                params={
                    "resource_group": aks.resource_group,
                    "cluster": aks.cluster.name,
                    "pool": pool.name,
                    "to": dict(TO),
                },
                description=f"scale agent pool {pool.name} from {pool.count} node(s) to 0{auto} once its nodes are "
                "empty (agent pool PUT with If-Match); rollback restores its count and autoscaler",
                depends_on=after,
                permissions=SCALE_AGENT_POOL.permissions,
            )
        )
    onto = [a.space for a in roomy]
    notes = [
        "Pods are evicted, never deleted: a PodDisruptionBudget that allows no disruption holds its pods, and the "
        "apply stops after the per-node timeout naming it (the node stays cordoned; run the same command again).",
        "Evicted pods are recreated by their controllers on nodes that can address them ("
        + "; ".join(onto)
        + "); `cidrx rollback` uncordons the nodes and restores the pools' count and autoscaler, but does not move "
        "pods back.",
        "Full pod subnets: " + ", ".join(f"{u.subnet.name} ({u.subnet.address_prefix})" for u in full),
    ]
    if system:
        notes.append(
            f"System pool(s) {', '.join(system)} are cordoned and drained only: AKS keeps at least one System pool "
            "with nodes, so a System pool cannot be scaled to 0 (make another pool System first, then scale it "
            "by hand)."
        )
    basis: dict[str, Any] = {
        "applied_plans": sorted({a.plan_id for a in roomy}),
        "nodes": {n.name: pool for pool, nodes in by_pool.items() for n in nodes},
        "agent_pools": scaled,
    }
    summary: dict[str, Any] = {
        "nodes": sum(len(v) for v in by_pool.values()),
        "agent_pools": sorted(scaled),
        "drained_only": system,
        "onto": onto,
    }
    return seal_plan(snapshot, created_at, NAME, basis, steps, notes, summary)


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the estate shows it now. A node that is gone, or a pool already at 0, is this plan's own
    progress (its scale step removed them)."""
    aks = aks_section(snapshot)
    pools = {p.name: p for p in aks.agent_pools}
    targets = {str(s.params["pool"]): s.params["to"] for s in plan.steps if s.action == SCALE_AGENT_POOL.name}
    was = plan.basis.get("agent_pools") or {}
    done: set[str] = set()
    now_pools: dict[str, Any] = {}
    for name, to in targets.items():
        p = pools.get(name)
        if p is None:
            now_pools[name] = None
        elif pool_scaling(p) == to:
            done.add(name)
            now_pools[name] = was.get(name)
        else:
            now_pools[name] = pool_scaling(p)
    nodes = {n.name: n for n in snapshot.kube.nodes}
    now_nodes: dict[str, Any] = {}
    for s in plan.steps:
        if s.action != CORDON_NODE.name:
            continue
        name, pool = str(s.params["node"]), str(s.params["agent_pool"])
        n = nodes.get(name)
        now_nodes[name] = n.pool if n is not None else (pool if pool in done else None)
    planned = set(plan.basis.get("applied_plans") or ())
    return {
        "applied_plans": sorted({a.plan_id for a in _roomy(snapshot, aks) if a.plan_id in planned}),
        "nodes": now_nodes,
        "agent_pools": now_pools,
    }


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when the plan's agent pools or nodes are not the ones it saw (its own progress
    aside)."""
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    now = read_basis(plan, snapshot)
    problems = []
    for name, pool in (plan.basis.get("nodes") or {}).items():
        if now["nodes"].get(name) != pool:
            problems.append(f"node {name} (agent pool {pool}) is gone or moved")
    for name, was in (plan.basis.get("agent_pools") or {}).items():
        if now["agent_pools"].get(name) != was:
            problems.append(f"agent pool {name} was scaled or changed since the plan")
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")
