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
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke import firewalls, masquerade
from cidrx.providers.gke.analyze import RangeUse, pod_ranges, pool_node_prefix, pool_range_key
from cidrx.providers.gke.model import GkeSection, NodePool, Subnetwork
from cidrx.providers.gke.pool_copy import PLAN_LABEL, choose_template, differences, node_pool_json
from cidrx.providers.gke.pool_copy import initial_nodes as _initial_nodes
from cidrx.providers.gke.pool_copy import labels as _labels
from cidrx.registry import Action

STRATEGIES = ("node-pool", "cluster-range")
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
# firewalls.patch needs compute.firewalls.update and, on the rule's network, compute.networks.updatePolicy
# (Compute Engine IAM reference of firewalls.patch); the rule is re-read before the patch (firewalls.get).
ADD_FIREWALL_RANGE = Action(
    "gke.add-firewall-range",
    (
        "compute.firewalls.get",
        "compute.firewalls.update",
        "compute.networks.updatePolicy",
        "compute.globalOperations.get",
    ),
    f"{_STEPS}:AddFirewallRange",
    undo=f"{_UNDO}:UndoFirewallRange",
    undo_permissions=(
        "compute.firewalls.get",
        "compute.firewalls.update",
        "compute.networks.updatePolicy",
        "compute.globalOperations.get",
    ),
)
ADD_IP_MASQ_CIDR = Action(
    "kube.add-ip-masq-cidr",
    ("kubernetes: configmaps get,patch in kube-system",),
    f"{_STEPS}:AddIpMasqCidr",
    undo=f"{_UNDO}:UndoIpMasqCidr",
    undo_permissions=("kubernetes: configmaps get,patch in kube-system",),
)
NODE_POOL_ACTIONS = (ADD_SECONDARY_RANGE, ADD_FIREWALL_RANGE, ADD_IP_MASQ_CIDR, CREATE_NODE_POOL)
CLUSTER_RANGE_ACTIONS = (ADD_SECONDARY_RANGE, ADD_FIREWALL_RANGE, ADD_IP_MASQ_CIDR, ADD_CLUSTER_POD_RANGES)
ACTIONS = (ADD_SECONDARY_RANGE, CREATE_NODE_POOL, ADD_CLUSTER_POD_RANGES, ADD_FIREWALL_RANGE, ADD_IP_MASQ_CIDR)


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
    gke: GkeSection | None = snapshot.gke
    if gke is None:
        raise InvalidInput("this snapshot has no GKE section; it was taken for another provider")
    return gke


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


ROUTE_WHERE = "network route "  # how occupied_space names a route of the network (see route_where)


def route_where(name: str, dest: str, hop: str) -> str:
    return f"{ROUTE_WHERE}{name} to {dest}" + (f" (next hop: {hop})" if hop else "")


def occupied_entries(gke: GkeSection) -> Iterator[tuple[str, str]]:
    """(CIDR text as the snapshot has it, where it comes from) of everything a new range must not overlap in
    the cluster's network: every subnet's primary and secondary ranges (all regions), routes imported over
    peerings, private services access allocations, the cluster's own pod, services and control-plane ranges,
    every route of the network (GKE node routes, static routes, VPN/interconnect routes) and the whole
    clusterIpv4Cidr of routes-based clusters on the network. Unparsed: see occupied_space."""
    for s in _all_subnets(gke):
        yield s.ip_cidr_range, f"subnet {_short(s.region)}/{s.name}"
        for r in s.secondary_ranges:
            yield r.ip_cidr_range, range_label(s, r.range_name)
    for route in gke.peering_routes:
        yield route.dest_range, f"route {route.dest_range} imported over peering {route.peering}"
    for rr in gke.reserved_ranges:
        yield rr.cidr, f"private services access range {rr.name}"
    c = gke.cluster
    yield c.pod_cidr, f"pod range of cluster {c.name}"
    yield c.services_cidr, f"services range of cluster {c.name}"
    yield c.master_ipv4_cidr_block, f"control plane range of cluster {c.name}"
    for rc in gke.routes_clusters or ():
        yield rc.cluster_ipv4_cidr, f"pod range of routes-based cluster {rc.project}/{rc.location}/{rc.name}"
    for nr in gke.routes or ():
        yield nr.dest_range, route_where(nr.name, nr.dest_range, nr.next_hop)


def occupied_space(gke: GkeSection) -> list[tuple[IPv4Network, str]]:
    """occupied_entries as IPv4 networks; IPv6 and unparsable entries left out, and /0 (a default route
    imported over peering blocks nothing)."""
    out: list[tuple[IPv4Network, str]] = []
    for text, where in occupied_entries(gke):
        net = _net(text)
        if net is not None and net.prefixlen > 0:
            out.append((net, where))
    return out


def _template(snapshot: Snapshot, gke: GkeSection, name: str | None) -> NodePool | None:
    if name:
        for p in gke.node_pools:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in gke.node_pools) or "none"
        raise InvalidInput(f"node pool {name!r} not found in cluster {gke.cluster.name} (known: {known})")
    return choose_template(snapshot, gke)


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
            if where.startswith(ROUTE_WHERE) and net != occ and net.subnet_of(occ):
                # GCE itself only refuses a subnet range that contains or equals a route
                # (allowSubnetCidrRoutesOverlap, docs/cloud-facts.md); a range inside a broader route
                # (often one to on-premises) would be accepted, and its traffic split between the two.
                raise InvalidInput(
                    f"{net} lies inside {occ} ({where}); GCE would accept it, but cidrx refuses ranges inside "
                    "a route by its own safety policy: traffic to that space may be meant for the route's next hop",
                    hint="pick a range outside every route or leave --cidr out",
                )
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


def _gpus(pool: NodePool) -> str:
    accelerators = pool.config.get("accelerators")
    if not isinstance(accelerators, list) or not accelerators:
        return ""
    kinds = ", ".join(f"{a.get('acceleratorCount', '?')} x {a.get('acceleratorType', '?')}" for a in accelerators)
    return f", {kinds}"


def firewall_steps(gke: GkeSection, cidr: IPv4Network) -> list[Step]:
    """One step per firewall rule that names a pod range and must learn `cidr` (cidrx.providers.gke.firewalls)."""
    found = firewalls.review(gke, cidr)
    if found is None:
        return []
    return [
        _add_to_list_step(
            f"widen-firewall-{r.name}",
            ADD_FIREWALL_RANGE,
            {"project": r.project, "firewall": r.name, "field": r.ranges_field},
            cidr,
            r.ranges,
            f"add {cidr} to {r.ranges_field} of firewall rule {r.name} (project {r.project}; "
            f"{r.action} {r.direction.lower()}{', disabled' if r.disabled else ''}), which names the pod range "
            f"today ({', '.join(r.ranges)})",
        )
        for r in found.widen
    ]


def _add_to_list_step(
    step_id: str, action: Action, where: dict[str, Any], cidr: IPv4Network, seen: tuple[str, ...], text: str
) -> Step:
    """A step that adds `cidr` to a list of ranges (a firewall rule's, ip-masq-agent's) it saw as `seen`."""
    return Step(
        id=step_id,
        action=action.name,
        params={**where, "cidr": str(cidr), "seen": list(seen)},
        description=text,
        permissions=action.permissions,
    )


def ip_masq_step(found: masquerade.MasqReview | None, cidr: IPv4Network) -> Step | None:
    """The ConfigMap change when ip-masq-agent's own ConfigMap would SNAT traffic to the new range."""
    if found is None or found.config_map is None or found.covered or found.problem:
        return None
    cm = found.config_map
    return _add_to_list_step(
        "ip-masq-agent",
        ADD_IP_MASQ_CIDR,
        {"namespace": cm.namespace, "name": cm.name, "key": masquerade.CONFIG_KEY},
        cidr,
        found.cidrs,
        f"add {cidr} to nonMasqueradeCIDRs of ConfigMap {cm.namespace}/{cm.name} (now {', '.join(found.cidrs)}), "
        "so traffic to pods in the new range keeps its pod source address",
    )


def _notes(
    strategy: str, old: RangeUse, cidr: IPv4Network, range_name: str, pool: str, template: str, firewall_note: str
) -> list[str]:
    notes = [
        f"ip-masq-agent: if kube-system/ip-masq-agent sets nonMasqueradeCIDRs, add {cidr} there, or traffic "
        "from pods in the new range is SNATed to node addresses.",
        f"NetworkPolicy ipBlocks that list the pod range {old.cidr} must list {cidr} too.",
        firewall_note,
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
    if c.use_routes:
        raise InvalidInput(
            f"cluster {c.name} is routes-based (pods come from its clusterIpv4Cidr {c.pod_cidr or '(unknown)'} "
            "through one route per node): GKE cannot add pod ranges to it, so there is nothing cidrx can expand",
            hint="create a new VPC-native cluster (alias IPs) and migrate the workloads to it, or move workloads "
            "to another cluster with room",
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
    host_note = ""
    if gke.shared_vpc:
        host_note = (
            f" in Shared VPC host project {gke.host_project} (needs the host project's network admin: "
            f"{', '.join(ADD_SECONDARY_RANGE.permissions)} there)"
        )
    steps = [
        Step(
            id="add-secondary-range",
            action=ADD_SECONDARY_RANGE.name,
            params={
                "project": gke.host_project,
                "region": region,
                "subnet": subnet.name,
                "range_name": range_name,
                "cidr": str(cidr),
            },
            description=f"add secondary range {range_name} {cidr} to subnet {region}/{subnet.name}{host_note} "
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
    if gke.shared_vpc:  # only then, so plans of other clusters keep their digests
        basis["network_project"] = gke.host_project
    fw_steps = firewall_steps(gke, cidr)
    steps += fw_steps
    if fw_steps:
        basis["firewalls"] = {s.params["firewall"]: list(s.params["seen"]) for s in fw_steps}
    masq = masquerade.review_ip_masq(snapshot.kube, cidr)
    masq_step = ip_masq_step(masq, cidr)
    if masq_step is not None:
        steps.append(masq_step)
        basis["ip_masq_agent"] = list(masq_step.params["seen"])
    after = ("add-secondary-range", *(s.id for s in fw_steps), *([masq_step.id] if masq_step else []))
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
        changed = differences(template, node_pool, c.version)
        steps.append(
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
                f"{_gpus(template)}, max pods {max_pods}) taking pod blocks from {range_name}; it differs only in: "
                + "; ".join(changed),
                depends_on=after,
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
                depends_on=after,
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
    fw_note = firewalls.note(firewalls.review(gke, cidr), cidr, f"{old.cidr} ({old.name or old.role})")
    notes = _notes(opts.strategy, old, cidr, range_name, pool_name, template.name if template else "", fw_note)
    notes[0] = masquerade.ip_masq_note(masq, cidr, masq_step is not None)
    egress = masquerade.egress_nat_note(gke, snapshot.kube, cidr)
    if egress:
        notes.insert(1, egress)
    if gke.shared_vpc:
        notes.append(
            f"Shared VPC: step add-secondary-range writes to host project {gke.host_project} (a Shared VPC admin "
            f"or the host project's network admin must run it, or grant {', '.join(ADD_SECONDARY_RANGE.permissions)} "
            f"there); the other steps run in service project {gke.project}."
        )
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
    if (gke.network_project or "") != b.get("network_project", ""):
        was = b.get("network_project") or plan.target.project
        problems.append(f"the cluster's network now belongs to project {gke.host_project}, not {was}")
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
    problems += firewall_drift(b.get("firewalls") or {}, gke, str(planned))
    problems += ip_masq_drift(b.get("ip_masq_agent"), snapshot, str(planned))
    pools = {p.name: p for p in gke.node_pools}
    if plan.strategy == "node-pool":
        if b["template_pool"] not in pools:
            problems.append(f"template node pool {b['template_pool']} no longer exists")
        other = pools.get(b.get("node_pool_name", ""))
        if other is not None and _labels(other).get(PLAN_LABEL) != plan.plan_id:
            problems.append(f"a node pool named {b['node_pool_name']} was created by someone else")
    if problems:
        raise StalePlan("the plan is stale: " + "; ".join(problems) + ". Nothing was applied; make a new plan")


def firewall_drift(seen: dict[str, list[str]], gke: GkeSection, cidr: str) -> list[str]:
    """Firewall rules the plan widens that are gone, or whose ranges changed other than by gaining `cidr`.
    Firewalls carry no fingerprint, so their ranges are what the plan compares."""
    if not seen or gke.firewalls is None:
        return []
    now = {r.name: r for r in gke.firewalls}
    problems: list[str] = []
    for name, ranges in seen.items():
        rule = now.get(name)
        if rule is None:
            problems.append(f"firewall rule {name} is gone")
        elif set(rule.ranges) - {cidr} != set(ranges):
            problems.append(
                f"firewall rule {name} now has ranges {', '.join(rule.ranges) or 'none'}, not {', '.join(ranges)}"
            )
    return problems


def ip_masq_drift(seen: list[str] | None, snapshot: Snapshot, cidr: str) -> list[str]:
    """The ip-masq-agent ConfigMap the plan changes is gone, or lists other CIDRs than it did (a new
    resourceVersion alone is not drift: the step re-reads it)."""
    if seen is None or snapshot.kube.config_maps is None:
        return []
    found = masquerade.review_ip_masq(snapshot.kube, netmath.parse_cidr(cidr))
    ns, name = masquerade.IP_MASQ_AGENT
    if found is None or found.config_map is None:
        return [f"ConfigMap {ns}/{name} is gone"]
    if set(found.cidrs) - {cidr} != set(seen):
        return [f"ConfigMap {ns}/{name} now lists {', '.join(found.cidrs)}, not {', '.join(seen)}"]
    return []
