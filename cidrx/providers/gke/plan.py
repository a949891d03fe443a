"""GKE expansion planning: turn a snapshot into the steps that give a full pod range's pools more room.

Two strategies, both starting with a new secondary range on the cluster's subnet, placed in space that
nothing in the network uses (every subnet in every region, peering routes, private services access,
the control plane) and that GCP accepts. `node-pool` (default, what the incident write-up does by hand)
then creates a node pool like an existing one whose nodes take their pod blocks from the new range
(network_config.pod_range). `cluster-range` adds the range to the cluster's additional pod ranges, from
which GKE serves node pools created afterwards (Autopilot included).

Pure: no I/O. `check_drift` compares a plan's basis with a fresh snapshot before apply.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.analyze import RangeUse, pod_ranges, pool_max_nodes, pool_node_prefix, pool_range_key
from cidrx.providers.gke.model import GkeSection, NodePool, Subnetwork
from cidrx.registry import Action

STRATEGIES = ("node-pool", "cluster-range")
# GCE label keys allow only [a-z0-9_-], so the plan id label is not DIGEST_TAG ("cidrx.io/plan").
PLAN_LABEL = "cidrx-plan"
POOL_NAME_MAX = 40  # GKE node pool names: at most 40 characters
RANGE_NAME_MAX = 63  # RFC 1035 label, as for every compute resource name

# Each step action, declared once: the step builders attach its name and permissions to their Steps, `cidrx
# permissions` prints them without making a plan (cidrx.permissions), apply runs its executor (steps.py).
_STEPS = "cidrx.providers.gke.steps"
_UNDO = "cidrx.providers.gke.undo"  # how `cidrx rollback` takes each back (cidrx.engine.undo)
ADD_SECONDARY_RANGE = Action(
    "gke.add-secondary-range",
    ("compute.subnetworks.get", "compute.subnetworks.update", "compute.regionOperations.get"),
    f"{_STEPS}:AddSecondaryRange",
    undo=f"{_UNDO}:UndoSecondaryRange",
    undo_permissions=(
        "compute.subnetworks.get",
        "compute.subnetworks.update",
        "compute.regionOperations.get",
        "container.clusters.get",
        "kubernetes: pods list",
    ),
)
# nodePools.create is authorised by container.clusters.update, nodePools.get/list by container.clusters.get
# (GKE "API permissions" reference); actAs is for the node service account the pool runs as.
CREATE_NODE_POOL = Action(
    "gke.create-node-pool",
    ("container.clusters.get", "container.clusters.update", "container.operations.get", "iam.serviceAccounts.actAs"),
    f"{_STEPS}:CreateNodePool",
    undo=f"{_UNDO}:UndoNodePool",
    undo_permissions=(
        "container.clusters.get",
        "container.clusters.update",
        "container.operations.get",
        "kubernetes: nodes list",
    ),
)
ADD_CLUSTER_POD_RANGES = Action(
    "gke.add-cluster-pod-ranges",
    ("container.clusters.get", "container.clusters.update", "container.operations.get"),
    f"{_STEPS}:AddClusterPodRanges",
    undo=f"{_UNDO}:UndoClusterPodRanges",
    undo_permissions=(
        "container.clusters.get",
        "container.clusters.update",
        "container.operations.get",
        "kubernetes: pods list",
    ),
)
NODE_POOL_ACTIONS = (ADD_SECONDARY_RANGE, CREATE_NODE_POOL)
CLUSTER_RANGE_ACTIONS = (ADD_SECONDARY_RANGE, ADD_CLUSTER_POD_RANGES)
ACTIONS = (ADD_SECONDARY_RANGE, CREATE_NODE_POOL, ADD_CLUSTER_POD_RANGES)


@dataclass(frozen=True)
class GkePlanOptions:
    strategy: str = "node-pool"
    cidr: str | None = None
    add_nodes: int | None = None
    max_pods_per_node: int | None = None
    pool_name: str | None = None
    template_pool: str | None = None
    allow_class_e: bool = False
    created_at: str = ""


def _gke(snapshot: Snapshot) -> GkeSection:
    if snapshot.gke is None:
        raise InvalidInput("this snapshot has no GKE section; it was taken for another provider")
    return snapshot.gke


def _short(region: str) -> str:
    return region.rstrip("/").rsplit("/", 1)[-1]


def _net(text: str) -> IPv4Network | None:
    if not text or ":" in text:
        return None
    try:
        return IPv4Network(text.strip(), strict=False)
    except ValueError:
        return None


def range_label(subnet: Subnetwork, range_name: str) -> str:
    return f"secondary range {range_name} of subnet {_short(subnet.region)}/{subnet.name}"


def _all_subnets(gke: GkeSection) -> list[Subnetwork]:
    key = (gke.subnet.name, _short(gke.subnet.region))
    listed = list(gke.subnets)
    if all((s.name, _short(s.region)) != key for s in listed):
        listed.insert(0, gke.subnet)
    return listed


def occupied_space(gke: GkeSection) -> list[tuple[IPv4Network, str]]:
    """Everything a new range must not overlap in the cluster's network, each with where it comes from:
    every subnet's primary and secondary ranges (all regions), routes imported over peerings, private
    services access allocations, and the cluster's own pod, services and control-plane ranges."""
    out: list[tuple[IPv4Network, str]] = []

    def add(text: str, where: str) -> None:
        net = _net(text)
        if net is not None and net.prefixlen > 0:  # a default route imported over peering blocks nothing
            out.append((net, where))

    for s in _all_subnets(gke):
        add(s.ip_cidr_range, f"subnet {_short(s.region)}/{s.name}")
        for r in s.secondary_ranges:
            add(r.ip_cidr_range, range_label(s, r.range_name))
    for route in gke.peering_routes:
        add(route.dest_range, f"route {route.dest_range} imported over peering {route.peering}")
    for rr in gke.reserved_ranges:
        add(rr.cidr, f"private services access range {rr.name}")
    c = gke.cluster
    add(c.pod_cidr, f"pod range of cluster {c.name}")
    add(c.services_cidr, f"services range of cluster {c.name}")
    add(c.master_ipv4_cidr_block, f"control plane range of cluster {c.name}")
    return out


def _pool_nodes(snapshot: Snapshot, pool: NodePool) -> int:
    return sum(1 for n in snapshot.kube.nodes if n.pool == pool.name)


def _template(snapshot: Snapshot, gke: GkeSection, name: str | None) -> NodePool | None:
    if name:
        for p in gke.node_pools:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in gke.node_pools) or "none"
        raise InvalidInput(f"node pool {name!r} not found in cluster {gke.cluster.name} (known: {known})")
    if not gke.node_pools:
        return None
    # Prefer pools cidrx did not make, so re-planning after an apply copies the user's own pool; then the
    # pool with most nodes, then the largest autoscaling limit.
    return max(
        gke.node_pools,
        key=lambda p: (PLAN_LABEL not in _labels(p), _pool_nodes(snapshot, p), pool_max_nodes(p), p.name),
    )


def _labels(pool: NodePool) -> dict[str, str]:
    labels = dict(pool.resource_labels)
    extra = pool.config.get("resourceLabels")
    if isinstance(extra, dict):
        labels.update({str(k): str(v) for k, v in extra.items()})
    return labels


def _range_for(gke: GkeSection, ranges: list[RangeUse], template: NodePool | None) -> RangeUse:
    key = pool_range_key(gke, template) if template else (gke.cluster.pod_range_name or gke.cluster.pod_cidr)
    for r in ranges:
        if (r.name or r.cidr) == key:
            return r
    if not ranges:
        raise InvalidInput(f"cluster {gke.cluster.name} has no pod range cidrx can read (is it VPC-native?)")
    return ranges[0]


def _range_prefix(node_prefix: int, add_nodes: int) -> int:
    prefix = node_prefix - math.ceil(math.log2(add_nodes)) if add_nodes > 1 else node_prefix
    if prefix < 8:
        raise InvalidInput(f"{add_nodes} nodes of /{node_prefix} pod blocks need more than a /8; lower --add-nodes")
    return prefix


def choose_cidr(gke: GkeSection, prefix: int, allow_class_e: bool) -> IPv4Network:
    """The first free /prefix in the allowed spaces, RFC 1918 first, then 100.64.0.0/10 (and 198.18.0.0/15),
    class E only when allowed."""
    occupied = [net for net, _ in occupied_space(gke)]
    found = netmath.first_free_block(prefix, netmath.gcp_allowed_spaces(allow_class_e), occupied)
    if found is None:
        spaces = ", ".join(str(s) for s in netmath.gcp_allowed_spaces(allow_class_e))
        hint = "lower --add-nodes or --max-pods-per-node, or pass --cidr"
        if not allow_class_e:
            hint += "; --allow-class-e also searches 240.0.0.0/4"
        raise InvalidInput(f"no free /{prefix} for a pod range in network {gke.cluster.network} ({spaces})", hint=hint)
    return found


def validate_cidr(gke: GkeSection, text: str, node_prefix: int, allow_class_e: bool) -> IPv4Network:
    """A user-given range: aligned, in space GCP accepts, big enough for one node, overlapping nothing."""
    net = netmath.parse_cidr(text)
    netmath.gcp_check_allowed(net, allow_class_e)
    if net.prefixlen > node_prefix:
        raise InvalidInput(
            f"{net} cannot hold even one /{node_prefix} per-node pod block; use a /{node_prefix} or larger"
        )
    for occ, where in occupied_space(gke):
        if netmath.overlaps(net, occ):
            raise InvalidInput(f"{net} overlaps {occ} ({where})", hint="pick a free range or leave --cidr out")
    return net


def _range_name(gke: GkeSection, base_range: RangeUse) -> str:
    taken = {r.range_name for r in gke.subnet.secondary_ranges}
    taken |= {i.range_name for i in gke.cluster.additional_pod_ranges}
    base = re.sub(r"-\d+$", "", base_range.name or "pods") or "pods"
    n = 2
    while True:
        suffix = f"-{n}"
        name = base[: RANGE_NAME_MAX - len(suffix)] + suffix
        if name not in taken:
            return name
        n += 1


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


def _autoscaling_json(pool: NodePool) -> dict[str, Any]:
    a = pool.autoscaling
    if not a.enabled:
        return {}
    out: dict[str, Any] = {"enabled": True}
    if a.total_max_node_count:
        out["totalMinNodeCount"] = a.total_min_node_count
        out["totalMaxNodeCount"] = a.total_max_node_count
    else:
        out["minNodeCount"] = a.min_node_count
        out["maxNodeCount"] = a.max_node_count
    if a.location_policy:
        out["locationPolicy"] = a.location_policy
    return out


def _initial_nodes(pool: NodePool) -> int:
    """Per zone: one node where the template autoscales (room for Pending pods at once), else its size."""
    a = pool.autoscaling
    if not a.enabled:
        return pool.initial_node_count
    start = max(1, a.min_node_count)
    return min(start, a.max_node_count) if a.max_node_count else start


def node_pool_json(template: NodePool, name: str, range_name: str, max_pods: int) -> dict[str, Any]:
    """REST NodePool for the new pool: the template's machine, config, zones, autoscaling and management,
    with its own max pods and pod range. The plan-id label is added at apply time."""
    config = dict(template.config)
    if template.machine_type:
        config["machineType"] = template.machine_type
    labels = {k: v for k, v in _labels(template).items() if k != PLAN_LABEL}
    config.pop("resourceLabels", None)
    if labels:
        config["resourceLabels"] = labels
    pool: dict[str, Any] = {
        "name": name,
        "config": config,
        "initialNodeCount": _initial_nodes(template),
        "locations": list(template.locations),
        "maxPodsConstraint": {"maxPodsPerNode": max_pods},
        "networkConfig": {"podRange": range_name},
    }
    autoscaling = _autoscaling_json(template)
    if autoscaling:
        pool["autoscaling"] = autoscaling
    if template.management:
        pool["management"] = dict(template.management)
    return pool


def _notes(strategy: str, old: RangeUse, cidr: IPv4Network, range_name: str, pool: str, template: str) -> list[str]:
    notes = [
        f"ip-masq-agent: if kube-system/ip-masq-agent sets nonMasqueradeCIDRs, add {cidr} there, or traffic "
        "from pods in the new range is SNATed to node addresses.",
        f"NetworkPolicy ipBlocks that list the pod range {old.cidr} must list {cidr} too.",
        f"Firewall rules (and on-premises ACLs) naming the pod range {old.cidr} ({old.name or old.role}) need "
        f"{cidr} as well.",
    ]
    if strategy == "node-pool":
        notes.append(
            f"cidrx does not drain {template}: its nodes keep their pods; new capacity comes from {pool}. "
            f"Pods pinned to {template} (nodeSelector cloud.google.com/gke-nodepool) cannot move; to move the "
            f"rest, cordon and drain {template}'s nodes (kubectl drain --ignore-daemonsets) and lower its limits."
        )
    else:
        notes.append(
            f"Existing node pools keep their pod range; GKE serves node pools created after this change (by you "
            f"or node auto-provisioning) from the least used cluster range, {range_name} included. On Standard "
            "clusters, create a node pool afterwards to get nodes in it."
        )
    return notes


def make_plan(snapshot: Snapshot, opts: GkePlanOptions) -> Plan:
    gke = _gke(snapshot)
    c = gke.cluster
    if opts.strategy not in STRATEGIES:
        raise InvalidInput(f"unknown GKE strategy {opts.strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if opts.strategy == "node-pool" and c.autopilot:
        raise InvalidInput(
            f"cluster {c.name} is Autopilot: GKE manages its node pools, so cidrx cannot create one; "
            "use --strategy cluster-range"
        )
    if opts.add_nodes is not None and opts.add_nodes < 1:
        raise InvalidInput("--add-nodes must be at least 1")
    ranges = pod_ranges(gke, snapshot.kube)
    template = _template(snapshot, gke, opts.template_pool)
    if opts.strategy == "node-pool" and template is None:
        raise InvalidInput(f"cluster {c.name} has no node pool to copy; use --strategy cluster-range")
    old = _range_for(gke, ranges, template)
    if opts.max_pods_per_node is not None:
        max_pods = opts.max_pods_per_node
        node_prefix = netmath.gke_pod_block_prefix(max_pods)
    elif template is not None:
        max_pods, node_prefix = template.max_pods_per_node, pool_node_prefix(template)
    else:
        max_pods = c.default_max_pods_per_node
        node_prefix = netmath.gke_pod_block_prefix(max_pods)
    add_nodes = opts.add_nodes or max(2 * old.max_nodes, old.autoscaler_max, 1)
    if opts.strategy == "node-pool" and template is not None:
        # The new pool starts with initialNodeCount nodes in each of its zones: the range must hold them.
        add_nodes = max(add_nodes, _initial_nodes(template) * max(1, len(template.locations)))
    if opts.cidr:
        cidr = validate_cidr(gke, opts.cidr, node_prefix, opts.allow_class_e)
    else:
        cidr = choose_cidr(gke, _range_prefix(node_prefix, add_nodes), opts.allow_class_e)
    new_max = netmath.gke_max_nodes(cidr.prefixlen, node_prefix)
    range_name = _range_name(gke, old)
    subnet = gke.subnet
    region = _short(subnet.region)
    steps = [
        Step(
            id="add-secondary-range",
            action=ADD_SECONDARY_RANGE.name,
            params={
                "project": gke.project,
                "region": region,
                "subnet": subnet.name,
                "range_name": range_name,
                "cidr": str(cidr),
            },
            description=f"add secondary range {range_name} {cidr} to subnet {region}/{subnet.name} "
            f"(room for {new_max} nodes of /{node_prefix})",
            permissions=ADD_SECONDARY_RANGE.permissions,
        )
    ]
    basis: dict[str, Any] = {
        "network": c.network,
        "subnet_region": region,
        "subnet": subnet.name,
        "subnet_ranges": {r.range_name: r.ip_cidr_range for r in subnet.secondary_ranges},
        "subnet_fingerprint": subnet.fingerprint,
        "cidr": str(cidr),
        "range_name": range_name,
        "template_pool": template.name if template else "",
        "cluster_pod_ranges": [i.range_name for i in c.additional_pod_ranges],
    }
    pool_name = ""
    if opts.strategy == "node-pool":
        assert template is not None
        pool_name = _pool_name(gke, template, opts.pool_name)
        node_pool = node_pool_json(template, pool_name, range_name, max_pods)
        starting = node_pool["initialNodeCount"] * max(1, len(template.locations))
        if starting > new_max:
            raise InvalidInput(
                f"{cidr} holds {new_max} node(s) of /{node_prefix}, but {pool_name} starts with {starting}; "
                "use a larger --cidr"
            )
        steps.append(
            Step(
                id="create-node-pool",
                action=CREATE_NODE_POOL.name,
                params={"project": gke.project, "location": c.location, "cluster": c.name, "node_pool": node_pool},
                description=f"create node pool {pool_name} like {template.name} ({template.machine_type}, "
                f"max pods {max_pods}) taking pod blocks from {range_name}",
                depends_on=("add-secondary-range",),
                permissions=CREATE_NODE_POOL.permissions,
            )
        )
        basis["node_pool_name"] = pool_name
    else:
        steps.append(
            Step(
                id="add-cluster-pod-ranges",
                action=ADD_CLUSTER_POD_RANGES.name,
                params={"project": gke.project, "location": c.location, "cluster": c.name, "range_names": [range_name]},
                description=f"add {range_name} to cluster {c.name}'s additional pod ranges",
                depends_on=("add-secondary-range",),
                permissions=ADD_CLUSTER_POD_RANGES.permissions,
            )
        )
    before = sum(r.max_nodes for r in ranges)
    summary = {
        "cidr": str(cidr),
        "range_name": range_name,
        "max_pods_per_node": max_pods,
        "per_node_prefix": node_prefix,
        "new_range_max_nodes": new_max,
        "expanded_range": {"name": old.name, "cidr": old.cidr, "max_nodes": old.max_nodes, "nodes": old.nodes},
        "capacity_before": {"max_nodes": before, "nodes": sum(r.nodes for r in ranges)},
        "capacity_after": {"max_nodes": before + new_max},
        "node_pool": pool_name,
        "template_pool": template.name if template else "",
    }
    notes = _notes(opts.strategy, old, cidr, range_name, pool_name, template.name if template else "")
    return seal_plan(snapshot, opts.created_at, opts.strategy, basis, steps, notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot) -> None:
    """Refuse (StalePlan, exit 4) when what the plan relied on no longer holds.

    What the plan already did (its range on the subnet with its CIDR, its node pool with its label, its
    range in the cluster's list) is progress, not drift; a new subnet fingerprint alone is not drift
    either, since the subnet step re-reads it.
    """
    gke = _gke(snapshot)
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    b = plan.basis
    c = gke.cluster
    problems: list[str] = []
    subnet = gke.subnet
    if c.network != b["network"]:
        problems.append(f"the cluster now uses network {c.network}, not {b['network']}")
    if subnet.name != b["subnet"] or _short(subnet.region) != b["subnet_region"]:
        where = f"{_short(subnet.region)}/{subnet.name}"
        problems.append(f"the cluster now uses subnet {where}, not {b['subnet_region']}/{b['subnet']}")
    now = {r.range_name: r.ip_cidr_range for r in subnet.secondary_ranges}
    for name, cidr in b["subnet_ranges"].items():
        if name not in now:
            problems.append(f"secondary range {name} ({cidr}) is gone from subnet {b['subnet']}")
        elif now[name] != cidr:
            problems.append(f"secondary range {name} changed from {cidr} to {now[name]}")
    planned = netmath.parse_cidr(b["cidr"])
    range_name = b["range_name"]
    mine = range_label(subnet, range_name)
    if range_name in now and now[range_name] != str(planned) and range_name not in b["subnet_ranges"]:
        problems.append(f"a secondary range named {range_name} now exists with {now[range_name]}, not {planned}")
    for net, where in occupied_space(gke):
        if net == planned and (where == mine or now.get(range_name) == str(planned)):
            continue  # our own range from an earlier run, or the cluster/pool ranges that name it
        if netmath.overlaps(net, planned):
            problems.append(f"{planned} now overlaps {net} ({where})")
    pools = {p.name: p for p in gke.node_pools}
    if plan.strategy == "node-pool":
        if b["template_pool"] not in pools:
            problems.append(f"template node pool {b['template_pool']} no longer exists")
        other = pools.get(b.get("node_pool_name", ""))
        if other is not None and _labels(other).get(PLAN_LABEL) != plan.plan_id:
            problems.append(f"a node pool named {b['node_pool_name']} was created by someone else")
    if problems:
        raise StalePlan("the plan is stale: " + "; ".join(problems) + ". Nothing was applied; make a new plan")
