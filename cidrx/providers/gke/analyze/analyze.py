"""GKE diagnosis: how many more nodes each pod range can take, and why the cluster-autoscaler says
"IP space exhausted", as findings and capacity figures. A pure function of the snapshot, so it runs the
same online and offline.

Every node of a VPC-native cluster takes a whole pod block (2 x max pods, rounded up to a power of two)
from its node pool's pod range, so a range's capacity is counted in node blocks, not in pods
(cidrx.providers.gke.facts.pod_ranges counts them). Finding ids are stable (docs/findings.md lists them).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.model.findings import Capacity, Diagnosis, Finding, FindingKind, Severity, make_diagnosis, utilization
from cidrx.model.kube import KubeEvent, KubeSection, parse_time
from cidrx.model.snapshot import Snapshot
from cidrx.model.target import Target
from cidrx.providers.gke.facts.applied import AppliedPool, applied_pools
from cidrx.providers.gke.facts.node_subnet import NodeSubnetUse, node_subnet_use
from cidrx.providers.gke.facts.pod_ranges import (
    ROUTES_ROLE,
    RangeUse,
    pod_ranges,
    pool_max_nodes,
    pool_node_prefix,
    pool_range_key,
)
from cidrx.providers.gke.facts.pool_copy import pools_named
from cidrx.providers.gke.facts.space import network_space_capacity, route_only_spaces
from cidrx.providers.gke.model import GkeSection

GKE_POD_RANGE_EXHAUSTED = FindingKind.parse(
    """GKE-POD-RANGE-EXHAUSTED (critical): Every per-node block of a pod secondary range is taken: no new node
    using that range can be created, and cluster-autoscaler reports IP space exhausted."""
)

GKE_PLAN_APPLIED = FindingKind.parse(
    """GKE-PLAN-APPLIED (info): A node-pool plan cidrx applied (the pool carries its `cidrx-plan` label), with the
    room its pod range has left. GKE needs no migration afterwards: every node keeps the pod block it was given
    when it was created, so the nodes on the full range and their pods carry on, and cluster-autoscaler adds new
    nodes to the new pool while its range has room. The full range is then reported as info; it turns critical
    again only when the new range runs out too (or pods are pinned to the old pool), and `expand --plan` refuses
    another expansion while the new range has room."""
)

GKE_POD_RANGE_NEARLY_EXHAUSTED = FindingKind.parse(
    """GKE-POD-RANGE-NEARLY-EXHAUSTED (warning): A pod range has few per-node blocks left; scale-up will soon
    stop."""
)

GKE_AUTOSCALER_MAX_EXCEEDS_RANGE = FindingKind.parse(
    """GKE-AUTOSCALER-MAX-EXCEEDS-RANGE (warning): The node pools on a pod range may autoscale to more nodes
    than the range can hold, so scale-up will stop before the configured maximum."""
)

GKE_SCALE_UP_IP_EXHAUSTED = FindingKind.parse(
    """GKE-SCALE-UP-IP-EXHAUSTED (critical): cluster-autoscaler events say scale-up failed with IP space
    exhausted: pods are already Pending for lack of pod address space."""
)

GKE_MAX_PODS_OVERSIZED = FindingKind.parse(
    """GKE-MAX-PODS-OVERSIZED (warning or info): A node pool reserves a per-node block sized for far more pods
    than its nodes run; a smaller max pods per node on a new pool fits more nodes in the same range."""
)

GKE_NO_ADDITIONAL_POD_RANGES = FindingKind.parse(
    """GKE-NO-ADDITIONAL-POD-RANGES (info): The cluster has only its default pod range, with no additional
    cluster pod ranges or node-pool pod ranges to grow into."""
)

GKE_AUTOPILOT = FindingKind.parse(
    """GKE-AUTOPILOT (info): Autopilot cluster: GKE manages the node pools, so the only expansion is adding
    cluster pod ranges (`--strategy cluster-range`)."""
)

GKE_ROUTES_CIDR_EXHAUSTED = FindingKind.parse(
    """GKE-ROUTES-CIDR-EXHAUSTED (critical): A routes-based cluster's clusterIpv4Cidr has no free per-node block
    left (after the services /20 GKE takes from its end): no node can be added, and GKE cannot add pod ranges
    to a routes-based cluster."""
)

GKE_ROUTES_CIDR_NEARLY_EXHAUSTED = FindingKind.parse(
    """GKE-ROUTES-CIDR-NEARLY-EXHAUSTED (warning): A routes-based cluster's clusterIpv4Cidr has few per-node
    blocks left; plan the move to a VPC-native cluster before scale-up stops."""
)

GKE_ROUTES_BASED = FindingKind.parse(
    """GKE-ROUTES-BASED (info): Routes-based cluster (ipAllocationPolicy.useRoutes): pods come from
    clusterIpv4Cidr through one route per node, and there is no in-place expansion; `cidrx expand` refuses."""
)

GKE_NODE_SUBNET_EXHAUSTED = FindingKind.parse(
    """GKE-NODE-SUBNET-EXHAUSTED (critical): The primary range of the cluster's subnet has no free address: new
    nodes cannot get their VM address, and cluster-autoscaler reports IP space exhausted even though the pod
    ranges may have room."""
)

GKE_NODE_SUBNET_NEARLY_EXHAUSTED = FindingKind.parse(
    """GKE-NODE-SUBNET-NEARLY-EXHAUSTED (warning): The primary range of the cluster's subnet (node VMs, other VMs,
    internal load balancers, reserved internal addresses) is nearly full, or holds fewer nodes than the node
    pools may autoscale to."""
)

# What this module raises, for the findings catalogue (python -m tools.docgen).
KINDS = FindingKind.all_in(globals())


# GKE's Network Analyzer flags a pod range at 80% allocation (docs/cloud-facts.md, "GKE / Compute Engine").
NEARLY_FULL = 0.8
SCALE_UP_REASONS = ("FailedScaleUp", "NotTriggerScaleUp")
IP_EXHAUSTED_TEXTS = ("ip space exhausted", "ip_space_exhausted")
MAX_EVIDENCE = 6
# KUBE-UNREACHABLE as GKE words it: what was skipped, and how to include it.
UNREACHABLE = "in-cluster checks were skipped; node counts come from GKE's utilisation fields"
UNREACHABLE_FIX = "Pass --kubeconfig/--context to include nodes' podCIDRs, Pending pods and autoscaler events."
ROUTES_WAY_OUT = (
    "A routes-based cluster cannot get more pod address space in place: create a new VPC-native cluster "
    "(alias IPs) with room to grow and migrate the workloads to it, or move workloads to a cluster with room."
)


def target_flags(target: Target) -> str:
    """The TARGET options that point cidrx back at this cluster, for remediation text."""
    return target.flags()


def _range_note(r: RangeUse) -> str:
    per_node = f"/{r.node_prefix} per node"
    if len(r.prefixes) > 1:
        per_node = "per node " + ", ".join(f"/{p}" for p in r.prefixes)
    pools = ", ".join(r.pools) if r.pools else "no node pool yet"
    free = ", ".join(f"{n} x /{p}" for p, n in r.free_blocks)
    how = "from node podCIDRs" if r.exact else ("from GKE utilisation" if r.utilization_known else "usage unknown")
    if r.role == ROUTES_ROLE and not r.exact:
        how = "from the network's GKE node routes"
    return f"{r.role}; {per_node}; pools: {pools}; autoscaler max {r.autoscaler_max}; free blocks {free}; {how}"


def _range_capacity(ranges: list[RangeUse]) -> list[Capacity]:
    return [
        Capacity(
            kind="pod-range",
            name=r.name or r.role,
            cidr=r.cidr,
            size=r.size,
            used=r.used,
            free=max(0, r.size - r.used),
            utilization=utilization(r.used, r.size),
            max_nodes=r.max_nodes,
            nodes=r.nodes,
            nodes_fit=r.max_nodes - r.nodes,
            note=_range_note(r),
        )
        for r in ranges
    ]


def _pool_nodes(kube: KubeSection) -> dict[str, list[str]]:
    by_pool: dict[str, list[str]] = defaultdict(list)
    for n in kube.nodes:
        if n.pool:
            by_pool[n.pool].append(n.name)
    return by_pool


def _pool_capacity(gke: GkeSection, kube: KubeSection, ranges: list[RangeUse]) -> list[Capacity]:
    by_key = {r.name or r.cidr: r for r in ranges}
    by_pool = _pool_nodes(kube)
    out = []
    for p in gke.node_pools:
        r = by_key.get(pool_range_key(gke, p))
        names = by_pool.get(p.name, [])
        if kube.available:
            nodes = len(names)
        elif r is not None and len(r.pools) == 1:
            nodes = r.nodes
        else:
            nodes = p.initial_node_count * max(1, len(p.locations))
        used = sum(kube.pods_per_node.get(n, 0) + kube.host_network_pods_per_node.get(n, 0) for n in names)
        size = p.max_pods_per_node * nodes
        zones = ", ".join(p.locations)
        fit = r.free_for(pool_node_prefix(p)) if r is not None else None
        # A pool without nodes holds no pod slots yet: it is empty, not full (its room is the fit column).
        empty = "no nodes yet; " if nodes == 0 else ""
        out.append(
            Capacity(
                kind="node-pool",
                name=p.name,
                cidr=r.cidr if r else (p.pod_cidr or None),
                size=size,
                used=used,
                free=max(0, size - used),
                utilization=utilization(used, size) if size else 0.0,
                nodes=nodes,
                # Free blocks of the pool's own per-node size in its range (other pools may take them too).
                nodes_fit=fit,
                note=f"{empty}{p.max_pods_per_node} max pods/node, /{pool_node_prefix(p)} per node from "
                f"{r.label if r else p.pod_range}; {p.machine_type}; zones {zones}",
                # The autoscaler's limit, not room in the pod range (that is the pod-range row's max_nodes).
                extra={"autoscaling_max_nodes": pool_max_nodes(p)},
            )
        )
    return out


def _routes_findings(r: RangeUse, evidence: list[str]) -> list[Finding]:
    subject = f"pod range {r.label}"
    findings: list[Finding] = []
    if r.free_for(r.node_prefix) == 0:
        findings.append(
            GKE_ROUTES_CIDR_EXHAUSTED.finding(
                Severity.CRITICAL,
                subject,
                f"routes-based cluster range {r.cidr} is full: {r.nodes} of {r.max_nodes} node(s); no new node "
                f"can get a /{r.node_prefix}",
                tuple(evidence),
                ROUTES_WAY_OUT,
            )
        )
    elif r.node_utilization >= NEARLY_FULL:
        findings.append(
            GKE_ROUTES_CIDR_NEARLY_EXHAUSTED.finding(
                Severity.WARNING,
                subject,
                f"routes-based cluster range {r.cidr} is {r.node_utilization:.0%} allocated "
                f"({r.nodes} of {r.max_nodes} nodes)",
                tuple(evidence),
                ROUTES_WAY_OUT,
            )
        )
    if r.autoscaling and r.autoscaler_max > r.max_nodes:
        fix = f"Lower the pools' autoscaling limits to {r.max_nodes} in total. {ROUTES_WAY_OUT}"
        findings.append(_autoscaler_over_range(r, evidence, "", fix))
    return findings


def _autoscaler_over_range(r: RangeUse, evidence: list[str], failure: str, remediation: str) -> Finding:
    """GKE-AUTOSCALER-MAX-EXCEEDS-RANGE for range `r` (`failure`: how scale-ups past it fail, "" unsaid)."""
    return GKE_AUTOSCALER_MAX_EXCEEDS_RANGE.finding(
        Severity.WARNING,
        f"pod range {r.label}",
        f"node pools on {r.label} may autoscale to {r.autoscaler_max} nodes but the range holds "
        f"only {r.max_nodes}: scale-ups past that fail{failure}",
        (*evidence, f"autoscaler max across {', '.join(r.pools)}: {r.autoscaler_max} node(s)"),
        remediation,
    )


def _range_findings(ranges: list[RangeUse], flags: str, autopilot: bool) -> list[Finding]:
    findings: list[Finding] = []
    expand = f"`cidrx expand {flags} --plan{' --strategy cluster-range' if autopilot else ''}`"
    for r in ranges:
        if r.role == ROUTES_ROLE:
            blocks = r.size >> (32 - r.node_prefix)
            how = "counted from node podCIDRs" if r.exact else "counted from the network's GKE node routes"
            evidence = [
                f"{r.cidr} holds {blocks} per-node /{r.node_prefix} block(s) after the services range GKE takes "
                f"from its end",
                f"{r.nodes} node(s) hold blocks now; room for {r.free_for(r.node_prefix)} more ({how})",
            ]
            findings += _routes_findings(r, evidence)
            continue
        subject = f"pod range {r.label}"
        blocks = netmath.gke_max_nodes(netmath.parse_cidr(r.cidr).prefixlen, r.node_prefix)
        evidence = [
            f"{r.cidr} holds {blocks} per-node /{r.node_prefix} block(s) "
            f"({'pools: ' + ', '.join(r.pools) if r.pools else 'no node pool uses it yet'})",
            f"{r.nodes} node(s) hold blocks now; room for {r.free_for(r.node_prefix)} more "
            f"({'counted from node podCIDRs' if r.exact else 'estimated from GKE utilisation'})",
        ]
        if not r.exact and not r.utilization_known:
            continue
        if r.free_for(r.node_prefix) == 0:
            findings.append(
                GKE_POD_RANGE_EXHAUSTED.finding(
                    Severity.CRITICAL,
                    subject,
                    f"pod range {r.label} is full: {r.nodes} of {r.max_nodes} node(s); no new node of "
                    f"{', '.join(r.pools) or 'the cluster'} can get a /{r.node_prefix} pod block",
                    tuple(evidence),
                    f"Add pod address space: {expand} (adds a secondary range to the subnet, then "
                    + (
                        "to the cluster's additional pod ranges)."
                        if autopilot
                        else "a node pool that uses it; `--strategy cluster-range` adds it to the cluster instead)."
                    ),
                )
            )
        elif r.node_utilization >= NEARLY_FULL:
            findings.append(
                GKE_POD_RANGE_NEARLY_EXHAUSTED.finding(
                    Severity.WARNING,
                    subject,
                    f"pod range {r.label} is {r.node_utilization:.0%} allocated ({r.nodes} of {r.max_nodes} nodes)",
                    tuple(evidence),
                    f"Plan more pod address space before the next scale-up: {expand}.",
                )
            )
        if r.autoscaling and r.autoscaler_max > r.max_nodes:
            fix = (
                f"Add room for at least {r.autoscaler_max} nodes with {expand} (the default size covers the "
                "autoscaler max), or lower the pools' autoscaling limits."
            )
            findings.append(_autoscaler_over_range(r, evidence, " with IP space exhausted", fix))
    return findings


def _full_pod_ranges(ranges: list[RangeUse]) -> list[RangeUse]:
    """The pod ranges node pools take blocks from that have no block left (as far as the snapshot tells)."""
    return [r for r in ranges if r.pools and (r.exact or r.utilization_known) and r.free_for(r.node_prefix) == 0]


def _scale_up_events(
    gke: GkeSection, kube: KubeSection, roomy: list[AppliedPool], relieved_pools: set[str]
) -> tuple[list[KubeEvent], list[KubeEvent]]:
    """cluster-autoscaler's "IP space exhausted" events, as (those that count, those that no longer do).

    The API server keeps events for an hour by default (kube-apiserver --event-ttl), so they outlive the problem
    they reported: an event about a pod that is no longer waiting does not count, and once an applied plan's
    pool has room neither does one last seen before that pool's first node joined, nor one that names only
    instance groups of pools whose full range the new pool relieves (the autoscaler trying the old pool before
    it backs off from it and grows the new one), unless the pod is pinned to a pool the new one does not relieve."""
    waiting = {(p.namespace, p.name) for p in kube.waiting_pods}
    # A pod pinned to a pool the new one does not relieve (its nodeSelector names it) still waits on a full range.
    free_pools = relieved_pools | {a.pool.name for a in roomy}
    stuck = {(p.namespace, p.name) for p in kube.waiting_pods if p.node_pool and p.node_pool not in free_pools}
    since = min((t for a in roomy if (t := parse_time(a.first_node)) is not None), default=None)
    current: list[KubeEvent] = []
    stale: list[KubeEvent] = []
    for e in kube.events:
        if e.reason not in SCALE_UP_REASONS or not any(t in e.message.lower() for t in IP_EXHAUSTED_TEXTS):
            continue
        seen = parse_time(e.last_seen)
        named = pools_named(gke, e.message)
        gone = e.kind == "Pod" and (e.namespace, e.name) not in waiting
        before = since is not None and seen is not None and seen < since
        old_pool_only = bool(roomy) and bool(named) and named <= relieved_pools
        pinned = (e.namespace, e.name) in stuck
        (stale if gone or ((before or old_pool_only) and not pinned) else current).append(e)
    return current, stale


def _scale_up_findings(
    gke: GkeSection,
    kube: KubeSection,
    flags: str,
    ranges: list[RangeUse],
    subnet: NodeSubnetUse | None,
    hits: list[KubeEvent],
    relieved: dict[str, AppliedPool],
) -> list[Finding]:
    """GKE-SCALE-UP-IP-EXHAUSTED, blaming what is full: the autoscaler says "IP space exhausted" both when a pod
    range has no block left and when the subnet's primary range has no address left for the node VM
    (docs/cloud-facts.md), so the finding names the range the snapshot shows full, both when both are, and
    neither when neither reads full. `hits` are the events that count (`_scale_up_events`); a full range an
    applied plan's pool relieves (`relieved`) is not the cause any more."""
    if not hits:
        return []
    pending = [p for p in kube.waiting_pods if p.phase == "Pending"]
    total = sum(max(1, e.count) for e in hits)
    evidence = [f"{e.reason} {e.namespace}/{e.name}: {e.message}" for e in hits[:MAX_EVIDENCE]]
    evidence.append(f"{len(pending)} pod(s) Pending")
    full_pods = [r for r in _full_pod_ranges(ranges) if (r.name or r.cidr) not in relieved]
    subnet_full = subnet is not None and subnet.free == 0
    subnet_label = subnet.label if subnet is not None else ""
    evidence += [f"pod range {r.label}: no free /{r.node_prefix} block" for r in full_pods]
    if subnet is not None:
        evidence.append(
            f"{subnet.label}: {subnet.used} of {subnet.usable} usable addresses held, room for {subnet.free} more "
            "node(s)"
        )
    pod_fix = f"add a pod range with `cidrx expand {flags} --plan`"
    spare = _spare_cluster_ranges(ranges)
    if spare:  # a cluster-range plan's range: what is missing is a node pool on it, not more space
        pod_fix = (
            f"create a node pool (GKE gives a new pool its pod blocks from the most available cluster pod range; "
            f"{spare[0].label} has room and no pool yet)"
        )
    subnet_fix = f"expand the subnet's primary range with `cidrx expand {flags} --plan --strategy subnet-expand`"
    if gke.cluster.use_routes and not subnet_full:
        cause, fix = "", ROUTES_WAY_OUT
    elif subnet_full and full_pods:
        cause = f": both the pod range {full_pods[0].label} and the node subnet's {subnet_label} are full"
        fix = f"New nodes need a pod block and a node address: {pod_fix}, and {subnet_fix}; apply both."
    elif subnet_full:
        cause = f": the node subnet's {subnet_label} is full; the pod ranges have room"
        fix = f"New nodes need an address from the subnet's primary range: {subnet_fix} and apply it."
    elif relieved and not full_pods:
        a = next(iter(relieved.values()))
        cause = f", though node pool {a.pool.name} (plan {a.plan_id}) has room for {a.free_blocks} more node(s)"
        fix = (
            f"Check that node pool {a.pool.name} can take these pods: its autoscaling limit "
            f"({pool_max_nodes(a.pool)} nodes), its zones, and nodeSelectors or affinity that pin them to another pool."
        )
    elif full_pods or subnet is None:
        cause = f": pod range {full_pods[0].label} is full" if full_pods else ""
        fix = f"New nodes need a free pod block; {pod_fix} and apply it."
    else:
        cause = ": neither a pod range nor the node subnet's primary range reads full in this snapshot"
        fix = (
            "Compare the autoscaler's zones with the pod ranges and the subnet's primary range (on a Shared VPC, "
            "other service projects' VMs hold addresses cidrx cannot list); take a new snapshot and diagnose again."
        )
    return [
        GKE_SCALE_UP_IP_EXHAUSTED.finding(
            Severity.CRITICAL,
            f"cluster {gke.cluster.name}",
            f"cluster-autoscaler could not add nodes: IP space exhausted{cause} ({total} event(s), "
            f"{len(pending)} pod(s) Pending)",
            tuple(evidence),
            fix,
        )
    ]


def _node_subnet_capacity(use: NodeSubnetUse, shared_vpc: bool) -> Capacity:
    parts = [f"{use.nodes} node(s) of this cluster"]
    parts += [
        f"{n} {what}"
        for n, what in (
            (use.other_vms, "other VM(s)"),
            (use.forwarding_rules, "internal forwarding rule(s)"),
            (use.reserved, "reserved internal address(es)"),
        )
        if n
    ]
    note = (
        f"primary range of subnet {use.subnet}: {use.cidr.num_addresses} addresses less the 4 GCP reserves; held by "
        f"{', '.join(parts)}; room for {use.free} more node(s); autoscaler max {use.autoscaler_max}"
    )
    if shared_vpc:
        note += "; on Shared VPC, VMs of other service projects are not counted"
    return Capacity(
        kind="node-subnet",
        name=use.subnet.rsplit("/", 1)[-1],
        cidr=str(use.cidr),
        size=use.usable,
        used=use.used,
        free=use.free,
        utilization=use.utilization,
        max_nodes=use.max_nodes,
        nodes=use.nodes,
        note=note,
    )


def _node_subnet_findings(use: NodeSubnetUse, flags: str) -> list[Finding]:
    subject = f"subnet {use.subnet}"
    evidence = (
        f"{use.cidr} has {use.usable} usable addresses ({use.cidr.num_addresses} less the 4 GCP reserves)",
        f"held: {use.nodes} node(s) of this cluster, {use.other_vms} other VM(s), {use.forwarding_rules} internal "
        f"forwarding rule(s), {use.reserved} reserved internal address(es)",
        f"node pools may autoscale to {use.autoscaler_max} node(s); the range has room for {use.max_nodes}",
    )
    fix = f"Expand the subnet's primary range: `cidrx expand {flags} --plan --strategy subnet-expand`."
    if use.free == 0:
        return [
            GKE_NODE_SUBNET_EXHAUSTED.finding(
                Severity.CRITICAL,
                subject,
                f"{use.label} is full: {use.used} of {use.usable} usable addresses held; no new node can get "
                "its VM address",
                evidence,
                fix,
            )
        ]
    if use.utilization >= NEARLY_FULL or use.autoscaler_max > use.max_nodes:
        why = (
            f"is {use.utilization:.0%} used ({use.free} address(es) left)"
            if use.utilization >= NEARLY_FULL
            else f"has room for {use.max_nodes} node(s) but the node pools may autoscale to {use.autoscaler_max}"
        )
        return [
            GKE_NODE_SUBNET_NEARLY_EXHAUSTED.finding(Severity.WARNING, subject, f"{use.label} {why}", evidence, fix)
        ]
    return []


def suggested_max_pods(peak_pods: int) -> tuple[int, int]:
    """(max pods per node, per-node block prefix) that leave 2x headroom over the observed peak: the most
    pods the smallest sufficient block allows (GKE caps Standard pools at 110 on a /24)."""
    prefix = netmath.gke_pod_block_prefix(min(256, max(8, 2 * peak_pods)))
    return min(110, (1 << (32 - prefix)) // 2), prefix


def _max_pods_findings(gke: GkeSection, kube: KubeSection, tight: set[str]) -> list[Finding]:
    if not kube.available or gke.cluster.autopilot:  # Autopilot sets max pods itself
        return []
    by_pool = _pool_nodes(kube)
    findings = []
    for p in gke.node_pools:
        names = by_pool.get(p.name, [])
        if not names:
            continue
        peak = max(kube.pods_per_node.get(n, 0) + kube.host_network_pods_per_node.get(n, 0) for n in names)
        max_pods, prefix = suggested_max_pods(peak)
        current = pool_node_prefix(p)
        if prefix <= current or max_pods >= p.max_pods_per_node:
            continue
        factor = 1 << (prefix - current)
        findings.append(
            GKE_MAX_PODS_OVERSIZED.finding(
                Severity.WARNING if pool_range_key(gke, p) in tight else Severity.INFO,
                f"node pool {p.name}",
                f"node pool {p.name} reserves a /{current} per node for {p.max_pods_per_node} max pods, but its "
                f"busiest node runs {peak} pod(s)",
                (
                    f"peak pods per node (pod network + hostNetwork) over {len(names)} node(s): {peak}",
                    f"max pods {max_pods} gives a /{prefix} per node: {factor}x as many nodes per range",
                ),
                f"Create pools with --max-pods-per-node {max_pods} (e.g. `cidrx expand ... --plan "
                f"--max-pods-per-node {max_pods}`); max pods cannot be changed on an existing pool.",
            )
        )
    return findings


# What a full pod range means once an applied plan's pool has room (docs/cloud-facts.md, "GKE after an expansion").
NO_MIGRATION = (
    "Nothing to do: GKE needs no migration. Nodes on this range keep the pod block each got when it was created, "
    "and their pods keep running and scheduling up to max pods; the full range stops only new nodes, and "
    "cluster-autoscaler now adds those to node pool {pool} (pod range {range}, room for {free} more node(s)). "
    "Size the old pool down only if you want its range back."
)
# The range findings an applied pool with room answers: they are about new nodes the range cannot take.
RELIEVED_KINDS = frozenset(
    {GKE_POD_RANGE_EXHAUSTED.id, GKE_POD_RANGE_NEARLY_EXHAUSTED.id, GKE_AUTOSCALER_MAX_EXCEEDS_RANGE.id}
)


def _relieved(ranges: list[RangeUse], roomy: list[AppliedPool], kube: KubeSection) -> dict[str, AppliedPool]:
    """The pod ranges (by key) whose new nodes an applied plan's pool with room takes now, each with that pool:
    every range but the applied pools' own, except one whose pools a waiting pod is pinned to (its nodeSelector
    names the pool: the new pool's nodes carry their own pool label, so that pod cannot move)."""
    if not roomy:
        return {}
    best = max(roomy, key=lambda a: (a.free_blocks, a.plan_id))
    own = {a.range.name or a.range.cidr for a in roomy}
    pinned = {p.node_pool for p in kube.waiting_pods if p.node_pool}
    return {
        r.name or r.cidr: best
        for r in ranges
        if r.role != ROUTES_ROLE and (r.name or r.cidr) not in own and not set(r.pools) & pinned
    }


def _relieve(findings: list[Finding], ranges: list[RangeUse], relieved: dict[str, AppliedPool]) -> list[Finding]:
    """The range findings of relieved ranges as information: the full range is no incident any more."""
    by_subject = {f"pod range {r.label}": relieved[r.name or r.cidr] for r in ranges if (r.name or r.cidr) in relieved}
    out = []
    for f in findings:
        a = by_subject.get(f.subject)
        if a is not None and f.id in RELIEVED_KINDS:
            f = replace(
                f,
                severity=Severity.INFO,
                summary=f"{f.summary}; no migration needed: new nodes go to node pool {a.pool.name} (plan {a.plan_id})",
                remediation=NO_MIGRATION.format(pool=a.pool.name, range=a.range.label, free=a.free_blocks),
            )
        out.append(f)
    return out


def _spare_cluster_ranges(ranges: list[RangeUse]) -> list[RangeUse]:
    """Additional cluster pod ranges (a `cluster-range` plan's, or the user's) that no node pool uses yet and that
    have room: GKE gives node pools created from now on their pod blocks from the most available of them."""
    return [
        r
        for r in ranges
        if r.role == "cluster additional"
        and not r.pools
        and (r.exact or r.utilization_known)
        and r.free_for(r.node_prefix)
    ]


def _spare_range_fix(
    findings: list[Finding], ranges: list[RangeUse], relieved: dict[str, AppliedPool], autopilot: bool
) -> tuple[list[Finding], set[str]]:
    """A full range's findings when an additional cluster pod range has room but no pool uses it yet: on Autopilot
    GKE creates the next node pools itself from that range (info, no migration); on Standard a new node pool is
    what is missing, not another expansion. Returns the findings and the keys of the ranges made info."""
    spare = _spare_cluster_ranges(ranges)
    if not spare:
        return findings, set()
    best = max(spare, key=lambda r: (r.free_for(r.node_prefix), r.label))
    room = f"cluster pod range {best.label} (room for {best.free_for(best.node_prefix)} node(s))"
    keys = {f"pod range {r.label}": r.name or r.cidr for r in ranges if (r.name or r.cidr) not in relieved}
    keys = {subject: key for subject, key in keys.items() if key not in {r.name or r.cidr for r in spare}}
    out, eased = [], set()
    for f in findings:
        key = keys.get(f.subject)
        if key is not None and f.id in RELIEVED_KINDS:
            if autopilot:
                eased.add(key)
                f = replace(
                    f,
                    severity=Severity.INFO,
                    summary=f"{f.summary}; no migration needed: GKE creates new node pools from {room}",
                    remediation="Nothing to do: GKE needs no migration. Nodes on this range keep their pod blocks and "
                    f"pods; Autopilot creates the next node pools itself and gives them pod blocks from {room}.",
                )
            else:
                f = replace(
                    f,
                    remediation=f"No further expansion is needed: {room} is not used by any node pool yet. Create a "
                    "node pool (GKE gives a node pool created now its pod blocks from the most available cluster pod "
                    "range), or let node auto-provisioning create one; GKE needs no migration of the existing nodes.",
                )
        out.append(f)
    return out, eased


def _applied_findings(
    applied: list[AppliedPool], relieved: dict[str, AppliedPool], ranges: list[RangeUse], stale: list[KubeEvent]
) -> list[Finding]:
    """GKE-PLAN-APPLIED, one per node pool a cidrx plan created: what it relieves and the room it has left."""
    labels = {r.name or r.cidr: r.label for r in ranges}
    findings = []
    for a in applied:
        r, free = a.range, a.free_blocks
        since = f"; its first node joined {a.first_node}" if a.first_node else ""
        evidence = [
            f"node pool {a.pool.name} carries the label cidrx-plan={a.plan_id}",
            f"{r.label}: {r.nodes} node(s) hold blocks, room for {free} more /{a.node_prefix} block(s)",
        ]
        mine = sorted(labels[k] for k, by in relieved.items() if by == a)
        if mine:
            evidence.append(
                f"full or nearly full range(s) whose new nodes it takes: {', '.join(mine)} (GKE needs no migration: "
                "their nodes keep their pod blocks and pods)"
            )
        if stale and mine:
            evidence.append(
                f"{len(stale)} cluster-autoscaler 'IP space exhausted' event(s) no longer count: older than the "
                "pool's first node, about the old pool only, or about pods no longer waiting"
            )
        if free:
            summary = (
                f"plan {a.plan_id} applied: node pool {a.pool.name} takes new nodes from pod range {r.label}, "
                f"room for {free} more node(s){since}"
            )
            fix = (
                "Nothing to do: GKE needs no migration (see the range findings). While this range has room, "
                "cidrx expand --plan refuses another expansion (--force plans one anyway and records why)."
            )
        else:
            summary = f"plan {a.plan_id} applied: node pool {a.pool.name}'s pod range {r.label} is full too{since}"
            fix = "See the pod range findings: this pool's range needs more address space as well."
        findings.append(GKE_PLAN_APPLIED.finding(Severity.INFO, f"plan {a.plan_id}", summary, tuple(evidence), fix))
    return findings


def analyze(snapshot: Snapshot) -> Diagnosis:
    gke = snapshot.gke
    if gke is None:
        raise InvalidInput("this snapshot has no GKE section; it was taken for another provider")
    kube = snapshot.kube
    flags = target_flags(snapshot.target)
    ranges = pod_ranges(gke, kube)
    applied = applied_pools(gke, kube, ranges)
    roomy = [a for a in applied if a.free_blocks > 0]
    relieved = _relieved(ranges, roomy, kube)
    findings = _relieve(_range_findings(ranges, flags, gke.cluster.autopilot), ranges, relieved)
    # Every range finding says the range is tight (full, nearly full, or the autoscaler may outgrow it), unless
    # an applied plan's pool takes its new nodes now.
    findings, eased = _spare_range_fix(findings, ranges, relieved, gke.cluster.autopilot)
    tight = {r.name or r.cidr for r in ranges if any(f.subject == f"pod range {r.label}" for f in findings)}
    tight -= set(relieved) | eased
    subnet_use = node_subnet_use(gke, sum(pool_max_nodes(p) for p in gke.node_pools))
    if subnet_use is not None:
        findings += _node_subnet_findings(subnet_use, flags)
    relieved_pools = {p for r in ranges if (r.name or r.cidr) in relieved for p in r.pools}
    hits, stale = _scale_up_events(gke, kube, roomy, relieved_pools)
    findings += _scale_up_findings(gke, kube, flags, ranges, subnet_use, hits, relieved)
    findings += _max_pods_findings(gke, kube, tight)
    findings = _applied_findings(applied, relieved, ranges, stale) + findings
    c = gke.cluster
    own_ranges = {pool_range_key(gke, p) for p in gke.node_pools} - {c.pod_range_name or c.pod_cidr}
    if tight and not c.additional_pod_ranges and not own_ranges and not c.use_routes:
        findings.append(
            GKE_NO_ADDITIONAL_POD_RANGES.finding(
                Severity.INFO,
                f"cluster {c.name}",
                "the cluster has only its default pod range: no additional cluster pod ranges and no node pool "
                "with its own range",
                (f"default pod range {c.pod_range_name or '(unnamed)'} {c.pod_cidr}",),
                f"GKE can take pods from more ranges (discontiguous multi-pod CIDR): `cidrx expand {flags} --plan`.",
            )
        )
    if c.use_routes:
        findings.append(
            GKE_ROUTES_BASED.finding(
                Severity.INFO,
                f"cluster {c.name}",
                f"routes-based cluster: pods come from clusterIpv4Cidr {c.pod_cidr} through one route per node; "
                "cidrx cannot expand it",
                ("ipAllocationPolicy.useRoutes is true",),
                ROUTES_WAY_OUT,
            )
        )
    if c.autopilot:
        findings.append(
            GKE_AUTOPILOT.finding(
                Severity.INFO,
                f"cluster {c.name}",
                "Autopilot cluster: GKE manages node pools, so cidrx can only add cluster pod ranges",
                ("autopilot.enabled is true",),
                f"Use `cidrx expand {flags} --plan --strategy cluster-range`.",
            )
        )
    if not kube.available:
        from cidrx.model.findings import kube_unreachable

        findings.append(kube_unreachable(UNREACHABLE, UNREACHABLE_FIX, reason=kube.reason or "no Kubernetes access"))
    capacity = _range_capacity(ranges) + _pool_capacity(gke, kube, ranges)
    if subnet_use is not None:
        capacity.append(_node_subnet_capacity(subnet_use, gke.shared_vpc))
    # The address maps' unallocated rows, from integer intervals: the maps themselves are for HTML only.
    context = route_only_spaces(snapshot)  # routes to outside networks: not capacity the cluster used up
    capacity += [row for row in network_space_capacity(snapshot) if row.cidr not in context]
    return make_diagnosis(snapshot.target, snapshot.fingerprint, capacity, findings)
