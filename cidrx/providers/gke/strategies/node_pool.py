"""GKE strategy `node-pool` (the default on Standard clusters, what the incident write-up does by hand): a new
pod range on the cluster's subnet and a node pool, a copy of an existing one, whose nodes take their pod blocks
from it (network_config.pod_range).

Pure: no I/O. `check_drift` compares a plan's basis with a fresh snapshot before apply.
"""

from __future__ import annotations

from collections.abc import Collection

from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.actions.firewall import ADD_FIREWALL_RANGE
from cidrx.providers.gke.actions.ip_masq import ADD_IP_MASQ_CIDR
from cidrx.providers.gke.actions.node_pool import CREATE_NODE_POOL
from cidrx.providers.gke.actions.subnet_ranges import ADD_SECONDARY_RANGE
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL, differences, initial_nodes, labels, node_pool_json
from cidrx.providers.gke.model import GkeSection, NodePool
from cidrx.providers.gke.strategies.pod_range import (
    draft,
    finish,
    gke_section,
    range_drift,
    refuse_stale,
    sizing,
    start,
)

NAME = "node-pool"
ACTIONS = (ADD_SECONDARY_RANGE, ADD_FIREWALL_RANGE, ADD_IP_MASQ_CIDR, CREATE_NODE_POOL)
POOL_NAME_MAX = 40  # GKE node pool names: at most 40 characters


def _pool_name(gke: GkeSection, template: NodePool, wanted: str | None) -> str:
    taken = {p.name for p in gke.node_pools}
    if wanted:
        if wanted in taken:
            raise InvalidInput(f"node pool {wanted!r} already exists in cluster {gke.cluster.name}")
        return wanted
    n = 2
    while True:
        suffix = f"-pods{n}"
        name = template.name[: POOL_NAME_MAX - len(suffix)] + suffix
        if name not in taken:
            return name
        n += 1


def _gpus(pool: NodePool) -> str:
    accelerators = pool.config.get("accelerators")
    if not isinstance(accelerators, list) or not accelerators:
        return ""
    kinds = ", ".join(f"{a.get('acceleratorCount', '?')} x {a.get('acceleratorType', '?')}" for a in accelerators)
    return f", {kinds}"


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    gke = gke_section(snapshot)
    c = gke.cluster
    if c.autopilot:
        raise InvalidInput(
            f"cluster {c.name} is Autopilot: GKE manages its node pools, so cidrx cannot create one; "
            "use --strategy cluster-range"
        )
    found = start(snapshot, opts)
    template = found.template
    if template is None:
        raise InvalidInput(f"cluster {c.name} has no node pool to copy; use --strategy cluster-range")
    size = sizing(found, opts)
    # The new pool starts with initialNodeCount nodes in each of its zones: the range must hold them.
    add_nodes = max(size.add_nodes, initial_nodes(template) * max(1, len(template.locations)))
    d = draft(snapshot, found, size, add_nodes, opts)
    cidr, new_max, node_prefix, max_pods = d.cidr, d.new_max, size.node_prefix, size.max_pods
    pool_name = _pool_name(gke, template, opts.pool_name)
    node_pool = node_pool_json(template, pool_name, d.range_name, max_pods)
    starting = node_pool["initialNodeCount"] * max(1, len(template.locations))
    if starting > new_max:
        raise InvalidInput(
            f"{cidr} holds {new_max} node(s) of /{node_prefix}, but {pool_name} starts with {starting}; "
            "use a larger --cidr"
        )
    changed = differences(template, node_pool, c.version)
    d.steps.append(
        Step(
            id="create-node-pool",
            action=CREATE_NODE_POOL.name,
            params={
                "project": gke.project,
                "location": c.location,
                "cluster": c.name,
                "node_pool": node_pool,
                "differences": changed,
            },
            description=f"create node pool {pool_name} as a copy of {template.name} ({template.machine_type}"
            f"{_gpus(template)}, max pods {max_pods}) taking pod blocks from {d.range_name}; it differs only in: "
            + "; ".join(changed),
            depends_on=d.after,
            permissions=CREATE_NODE_POOL.permissions,
        )
    )
    d.basis["node_pool_name"] = pool_name
    t = template.name
    # GKE needs no migration: a node keeps the pod block it got when it was created (docs/cloud-facts.md, "GKE
    # after an expansion"), so only new nodes need the new range, and the autoscaler adds them to the new pool.
    note = (
        f"cidrx does not drain {t}, and GKE needs no migration: {t}'s nodes keep their pod blocks and pods, and "
        f"cluster-autoscaler adds new nodes to {pool_name}. Pods pinned to {t} (nodeSelector "
        f"cloud.google.com/gke-nodepool) wait until {t} has room; to free {t}'s range, drain its nodes "
        "(kubectl drain --ignore-daemonsets) and lower its limits."
    )
    return finish(d, created_at, NAME, pool_name, note)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when what the plan relied on no longer holds (pod_range.range_drift), its
    template pool is gone, or a pool of its new pool's name exists that it did not create (its label says)."""
    problems = range_drift(plan, snapshot)
    gke = gke_section(snapshot)
    b = plan.basis
    pools = {p.name: p for p in gke.node_pools}
    if b["template_pool"] not in pools:
        problems.append(f"template node pool {b['template_pool']} no longer exists")
    other = pools.get(b.get("node_pool_name", ""))
    if other is not None and labels(other).get(PLAN_LABEL) != plan.plan_id:
        problems.append(f"a node pool named {b['node_pool_name']} was created by someone else")
    refuse_stale(problems)
