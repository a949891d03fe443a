"""What every GKE expand strategy plans alike: a new secondary range on the cluster's subnet, placed in space
that nothing in the network uses (every subnet in every region, peering routes, private services access, the
control plane) and that GCP accepts, then the firewall rules and the ip-masq-agent configuration that must
learn it; the plan's basis, summary and notes; and the drift checks of all of it.

Why a module of its own: the strategies (cidrx.providers.gke.strategies.node_pool and .cluster_range) differ
only in what uses the new range (a copied node pool, or the cluster's additional pod ranges); each calls these
phases in turn and adds its own step, checks and note. Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.actions.firewall import ADD_FIREWALL_RANGE
from cidrx.providers.gke.actions.ip_masq import ADD_IP_MASQ_CIDR
from cidrx.providers.gke.actions.subnet_ranges import ADD_SECONDARY_RANGE
from cidrx.providers.gke.facts.firewalls import note as firewall_note
from cidrx.providers.gke.facts.firewalls import review as review_firewalls
from cidrx.providers.gke.facts.masquerade import (
    CONFIG_KEY,
    IP_MASQ_AGENT,
    MasqReview,
    egress_nat_note,
    ip_masq_note,
    review_ip_masq,
)
from cidrx.providers.gke.facts.occupied import ROUTE_WHERE, occupied_space, range_label, short_region
from cidrx.providers.gke.facts.pod_ranges import RangeUse, pod_ranges, pool_node_prefix, pool_range_key
from cidrx.providers.gke.facts.pool_copy import choose_template
from cidrx.providers.gke.model import GkeSection, NodePool
from cidrx.registry import Action

RANGE_NAME_MAX = 63  # RFC 1035 label, as for every compute resource name


def gke_section(snapshot: Snapshot) -> GkeSection:
    """The snapshot's GKE section; InvalidInput when it was taken for another provider."""
    gke: GkeSection | None = snapshot.gke
    if gke is None:
        raise InvalidInput("this snapshot has no GKE section; it was taken for another provider")
    return gke


def template_pool(snapshot: Snapshot, gke: GkeSection, name: str | None) -> NodePool | None:
    """The node pool `name` (--template), else the pool a plan copies (facts.pool_copy.choose_template)."""
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


def firewall_steps(gke: GkeSection, cidr: IPv4Network) -> list[Step]:
    """One step per firewall rule that names a pod range and must learn `cidr` (cidrx.providers.gke.facts.firewalls)."""
    found = review_firewalls(gke, cidr)
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


def ip_masq_step(found: MasqReview | None, cidr: IPv4Network) -> Step | None:
    """The ConfigMap change when ip-masq-agent's own ConfigMap would SNAT traffic to the new range."""
    if found is None or found.config_map is None or found.covered or found.problem:
        return None
    cm = found.config_map
    return _add_to_list_step(
        "ip-masq-agent",
        ADD_IP_MASQ_CIDR,
        {"namespace": cm.namespace, "name": cm.name, "key": CONFIG_KEY},
        cidr,
        found.cidrs,
        f"add {cidr} to nonMasqueradeCIDRs of ConfigMap {cm.namespace}/{cm.name} (now {', '.join(found.cidrs)}), "
        "so traffic to pods in the new range keeps its pod source address",
    )


@dataclass(frozen=True)
class Start:
    """What a plan starts from: the GKE section, its pod ranges and the node pool whose settings it follows."""

    gke: GkeSection
    ranges: list[RangeUse]
    template: NodePool | None


def start(snapshot: Snapshot, opts: PlanOptions) -> Start:
    """Refuse what no strategy can expand (routes-based clusters), read the pod ranges and pick the template."""
    gke = gke_section(snapshot)
    c = gke.cluster
    if c.use_routes:
        raise InvalidInput(
            f"cluster {c.name} is routes-based (pods come from its clusterIpv4Cidr {c.pod_cidr or '(unknown)'} "
            "through one route per node): GKE cannot add pod ranges to it, so there is nothing cidrx can expand",
            hint="create a new VPC-native cluster (alias IPs) and migrate the workloads to it, or move workloads "
            "to another cluster with room",
        )
    if opts.add_nodes is not None and opts.add_nodes < 1:
        raise InvalidInput("--add-nodes must be at least 1")
    return Start(gke, pod_ranges(gke, snapshot.kube), template_pool(snapshot, gke, opts.template))


@dataclass(frozen=True)
class Sizing:
    """The range that is expanded (`old`), the per-node block the new range serves and how many nodes it should
    hold by default."""

    old: RangeUse
    max_pods: int
    node_prefix: int
    add_nodes: int


def sizing(found: Start, opts: PlanOptions) -> Sizing:
    """The range the plan expands (the template's, else the cluster default) and the new range's per-node block."""
    gke, template = found.gke, found.template
    c = gke.cluster
    old = _range_for(gke, found.ranges, template)
    if opts.max_pods_per_node is not None:
        max_pods = opts.max_pods_per_node
        node_prefix = netmath.gke_pod_block_prefix(max_pods)
    elif template is not None:
        max_pods, node_prefix = template.max_pods_per_node, pool_node_prefix(template)
    else:
        max_pods = c.default_max_pods_per_node
        node_prefix = netmath.gke_pod_block_prefix(max_pods)
    add_nodes = opts.add_nodes or max(2 * old.max_nodes, old.autoscaler_max, 1)
    return Sizing(old, max_pods, node_prefix, add_nodes)


@dataclass
class Draft:
    """A plan being made: the new range, the steps so far (the strategy appends its own, after `after`), its
    basis, and what the notes need."""

    snapshot: Snapshot
    found: Start
    size: Sizing
    cidr: IPv4Network
    new_max: int
    range_name: str
    masq: MasqReview | None
    masq_step: Step | None
    steps: list[Step] = field(default_factory=list)
    basis: dict[str, Any] = field(default_factory=dict)
    after: tuple[str, ...] = ()


def draft(snapshot: Snapshot, found: Start, size: Sizing, add_nodes: int, opts: PlanOptions) -> Draft:
    """The new secondary range (room for `add_nodes` nodes, or --cidr) and the firewall and ip-masq-agent steps
    that must learn it."""
    gke = found.gke
    c = gke.cluster
    node_prefix = size.node_prefix
    if opts.cidr:
        cidr = validate_cidr(gke, opts.cidr, node_prefix, opts.allow_class_e)
    else:
        cidr = choose_cidr(gke, _range_prefix(node_prefix, add_nodes), opts.allow_class_e)
    new_max = netmath.gke_max_nodes(cidr.prefixlen, node_prefix)
    range_name = _range_name(gke, size.old)
    subnet = gke.subnet
    region = short_region(subnet.region)
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
    template = found.template
    basis: dict[str, Any] = {
        "network": c.network,
        "subnet_region": region,
        "subnet": subnet.name,
        "subnet_ranges": {r.range_name: r.ip_cidr_range for r in subnet.secondary_ranges},
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
    masq = review_ip_masq(snapshot.kube, cidr)
    masq_step = ip_masq_step(masq, cidr)
    if masq_step is not None:
        steps.append(masq_step)
        basis["ip_masq_agent"] = list(masq_step.params["seen"])
    after = ("add-secondary-range", *(s.id for s in fw_steps), *([masq_step.id] if masq_step else []))
    return Draft(snapshot, found, size, cidr, new_max, range_name, masq, masq_step, steps, basis, after)


def finish(d: Draft, created_at: str, strategy: str, pool_name: str, strategy_note: str) -> Plan:
    """The sealed plan: `d`'s steps and basis, the summary, and the notes (`strategy_note`: the strategy's own,
    on what uses the new range)."""
    gke, ranges, template, old = d.found.gke, d.found.ranges, d.found.template, d.size.old
    cidr = d.cidr
    before = sum(r.max_nodes for r in ranges)
    summary = {
        "cidr": str(cidr),
        "range_name": d.range_name,
        "max_pods_per_node": d.size.max_pods,
        "per_node_prefix": d.size.node_prefix,
        "new_range_max_nodes": d.new_max,
        "expanded_range": {"name": old.name, "cidr": old.cidr, "max_nodes": old.max_nodes, "nodes": old.nodes},
        "capacity_before": {"max_nodes": before, "nodes": sum(r.nodes for r in ranges)},
        "capacity_after": {"max_nodes": before + d.new_max},
        "node_pool": pool_name,
        "template_pool": template.name if template else "",
    }
    fw_note = firewall_note(review_firewalls(gke, cidr), cidr, f"{old.cidr} ({old.name or old.role})")
    notes = [
        ip_masq_note(d.masq, cidr, d.masq_step is not None),
        f"NetworkPolicy ipBlocks that list the pod range {old.cidr} must list {cidr} too.",
        fw_note,
        strategy_note,
    ]
    egress = egress_nat_note(gke, d.snapshot.kube, cidr)
    if egress:
        notes.insert(1, egress)
    if gke.shared_vpc:
        notes.append(
            f"Shared VPC: step add-secondary-range writes to host project {gke.host_project} (a Shared VPC admin "
            f"or the host project's network admin must run it, or grant {', '.join(ADD_SECONDARY_RANGE.permissions)} "
            f"there); the other steps run in service project {gke.project}."
        )
    return seal_plan(d.snapshot, created_at, strategy, d.basis, d.steps, notes, summary)


def range_drift(plan: Plan, snapshot: Snapshot) -> list[str]:
    """What no longer holds of what every GKE plan relied on (InvalidInput for a snapshot of another target).

    What the plan already did (its range on the subnet with its CIDR, its range in the cluster's list) is
    progress, not drift; a new subnet fingerprint alone is not drift either, since the subnet step re-reads it.
    """
    gke = gke_section(snapshot)
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
    if subnet.name != b["subnet"] or short_region(subnet.region) != b["subnet_region"]:
        where = f"{short_region(subnet.region)}/{subnet.name}"
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
    return problems


def refuse_stale(problems: list[str]) -> None:
    """StalePlan (exit 4) naming every problem, when there are any."""
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
    found = review_ip_masq(snapshot.kube, netmath.parse_cidr(cidr))
    ns, name = IP_MASQ_AGENT
    if found is None or found.config_map is None:
        return [f"ConfigMap {ns}/{name} is gone"]
    if set(found.cidrs) - {cidr} != set(seen):
        return [f"ConfigMap {ns}/{name} now lists {', '.join(found.cidrs)}, not {', '.join(seen)}"]
    return []
