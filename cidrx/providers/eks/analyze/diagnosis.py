"""EKS diagnosis: why pods on this cluster cannot get addresses from the AWS VPC CNI, as findings and
capacity figures. A pure function of the snapshot, so it runs the same online and offline.

Finding ids are stable (docs/findings.md lists them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from cidrx.errors import InvalidInput
from cidrx.model.findings import Capacity, Diagnosis, Finding, FindingKind, Severity, make_diagnosis, utilization
from cidrx.model.kube import KubeSection
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.analyze import control_plane
from cidrx.providers.eks.analyze.discovery import capacity as discovery_capacity
from cidrx.providers.eks.analyze.discovery import findings as discovery_findings
from cidrx.providers.eks.analyze.provisioners import (
    pod_slots,
    provisioner_capacity,
    provisioner_findings,
    with_fit,
)
from cidrx.providers.eks.collect.cluster import ENICONFIG_DEFAULT_KEY
from cidrx.providers.eks.facts import discovery
from cidrx.providers.eks.facts.cni import (
    LABEL_DEF,
    ZONE_LABEL,
    CniConfig,
    cni_config,
    max_pods,
    max_pods_allowed,
)
from cidrx.providers.eks.facts.discovery import ROLE_TAG, DiscoveryState
from cidrx.providers.eks.facts.eniconfig import (
    DEFAULT_ENICONFIG,
    Selection,
    new_node_selection,
    node_selection,
    zone_named_unselected,
)
from cidrx.providers.eks.facts.routing import unreadable_routes
from cidrx.providers.eks.facts.subnets import (
    SubnetUse,
    free_prefix_blocks,
    largest_type,
    node_subnet_ids,
    nodes_fit_in,
    subnet_label,
    subnet_nodes_fit,
    subnet_uses,
    types_by_name,
)
from cidrx.providers.eks.model import EksSection, Nodegroup

EKS_SUBNET_EXHAUSTED = FindingKind.parse(
    """EKS-SUBNET-EXHAUSTED (critical): A subnet the cluster's nodes or pods use has no free address (or too few
    for one more node's ENIs): new pods stay in ContainerCreating and new nodes cannot launch there."""
)

EKS_PLAN_MIGRATION_PENDING = FindingKind.parse(
    """EKS-PLAN-MIGRATION-PENDING (warning): A plan cidrx applied (its pod subnets carry the plan tag) still has
    room, while nodes in the full subnets keep running their pods: the fix is moving the workloads (cordon and
    drain those nodes so new ones join with the new space), not another expansion."""
)

EKS_SUBNET_NEARLY_EXHAUSTED = FindingKind.parse(
    """EKS-SUBNET-NEARLY-EXHAUSTED (warning): A subnet the cluster uses is close to full; the next few nodes or
    pods will exhaust it."""
)

EKS_AZ_EXHAUSTED = FindingKind.parse(
    """EKS-AZ-EXHAUSTED (critical): No subnet the cluster uses in this Availability Zone can take another node,
    so scale-up in that zone fails even if other zones have room."""
)

EKS_POD_IP_ASSIGN_FAILED = FindingKind.parse(
    """EKS-POD-IP-ASSIGN-FAILED (critical): Pod events show the VPC CNI's `failed to assign an IP address to
    container` for pods that are still waiting: they are stuck because the node's ENIs cannot get more
    addresses (events of pods since started or gone are history and do not count)."""
)

EKS_NODEGROUP_NO_ADDRESSES = FindingKind.parse(
    """EKS-NODEGROUP-NO-ADDRESSES (critical): A node group cannot launch nodes because its subnets have no free
    addresses (or EKS reported InsufficientFreeAddressesInSubnet)."""
)

EKS_ENICONFIG_UNUSED = FindingKind.parse(
    """EKS-ENICONFIG-UNUSED (warning): ENIConfig objects exist but custom networking is off in aws-node, so pods
    still take addresses from the node subnets."""
)

EKS_ENICONFIG_SUBNET_MISSING = FindingKind.parse(
    """EKS-ENICONFIG-SUBNET-MISSING (critical): An ENIConfig names a subnet that is not in the cluster's VPC;
    nodes in that zone cannot attach pod ENIs."""
)

EKS_ENICONFIG_WRONG_AZ = FindingKind.parse(
    """EKS-ENICONFIG-WRONG-AZ (critical): Nodes use an ENIConfig (picked by ipamd's rule: external label,
    annotation, ENI_CONFIG_LABEL_DEF label, else `default`) whose subnet is in another zone; their pod ENIs fail."""
)

EKS_CUSTOM_NETWORKING_NO_ENICONFIG = FindingKind.parse(
    """EKS-CUSTOM-NETWORKING-NO-ENICONFIG (critical): Custom networking is on but the ENIConfig ipamd picks for
    some nodes (external label, annotation, ENI_CONFIG_LABEL_DEF label, else `default`) does not exist, so
    those nodes get no pod addresses."""
)

EKS_NODES_PREDATE_ENICONFIG = FindingKind.parse(
    """EKS-NODES-PREDATE-ENICONFIG (warning): Nodes joined before their zone's ENIConfig existed and still hand
    out addresses from the node subnet; only replaced nodes use the pod subnet."""
)

EKS_MAX_PODS_ABOVE_ENI_LIMIT = FindingKind.parse(
    """EKS-MAX-PODS-ABOVE-ENI-LIMIT (warning): Nodes accept more pods (kubelet max-pods) than the VPC CNI can
    address with the instance type's ENIs, so the extra pods never get an IP."""
)

EKS_WARM_POOL_WASTE = FindingKind.parse(
    """EKS-WARM-POOL-WASTE (warning or info): WARM_ENI_TARGET makes every node hold a spare ENI's worth of
    addresses no pod uses; warning when subnets are tight, info otherwise."""
)

EKS_PREFIX_NO_FREE_BLOCK = FindingKind.parse(
    """EKS-PREFIX-NO-FREE-BLOCK (critical): Prefix delegation is on but the subnet has no free aligned /28, so
    nodes cannot get prefixes even though single addresses may be free (fragmentation)."""
)

EKS_PREFIX_DELEGATION_NOT_ENOUGH = FindingKind.parse(
    """EKS-PREFIX-DELEGATION-NOT-ENOUGH (info): Switching to prefix delegation would not help: the full subnets
    have no free aligned /28 blocks. Use custom networking with a secondary CIDR."""
)

EKS_VPC_CIDR_QUOTA_REACHED = FindingKind.parse(
    """EKS-VPC-CIDR-QUOTA-REACHED (warning): The VPC already holds as many IPv4 CIDR blocks as its quota allows,
    so a secondary CIDR cannot be added until the quota is raised."""
)

EKS_ROUTES_UNREADABLE = FindingKind.parse(
    """EKS-ROUTES-UNREADABLE (warning): A transit gateway route table or managed prefix list the VPC routes
    through could not be read (often a TGW shared by another account): ranges routed there are unknown, so a
    secondary CIDR cidrx picks could already be in use elsewhere."""
)

# What this module raises, for the findings catalogue (python -m tools.docgen).
KINDS = FindingKind.all_in(globals())


NEARLY_FULL = 0.8
# KUBE-UNREACHABLE as EKS words it: what was skipped, and how to include it.
UNREACHABLE = "in-cluster checks were skipped"
UNREACHABLE_FIX = "Pass --kubeconfig/--context to include events, nodes and the aws-node configuration."
IP_ASSIGN_TEXT = "failed to assign an ip address to container"
MAX_EVIDENCE = 6

# Where a remediation names the expand command; `analyze` fills in this cluster's full command line.
EXPAND = "{EXPAND}"


def _relieved(
    uses: list[SubnetUse], zones: list[discovery.ZoneDiscovery], disc: discovery.DiscoveryState
) -> list[SubnetUse]:
    """Node subnets of zones whose tagged discovery subnets have room: a new node needs only its own address."""
    by_az = {z.az: z for z in zones}
    out = []
    for u in uses:
        need, roles = discovery.relieved_need(u.need_node, u.roles, by_az.get(u.subnet.az), disc)
        out.append(replace(u, need_node=need, roles=roles) if need != u.need_node else u)
    return out


def uses_now(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[SubnetUse]:
    """The cluster's subnets as diagnose weighs them: with subnet discovery, a node subnet whose zone has tagged
    subnets with room needs only the node's own address (what the migration planner reads too)."""
    disc = discovery.discovery_state(eks, kube, cni)
    return _relieved(subnet_uses(eks, kube, cni), discovery.by_zone(eks, kube, disc, node_subnet_ids(eks)), disc)


def _subnet_findings(uses: list[SubnetUse], cni: CniConfig) -> list[Finding]:
    findings: list[Finding] = []
    by_az: dict[str, list[SubnetUse]] = defaultdict(list)
    for u in uses:
        if u.need == 0:
            continue
        by_az[u.subnet.az].append(u)
        free = u.subnet.available_ips
        util = utilization(u.used, u.size)
        what = "/".join(r for r in u.roles if r != "cluster")
        evidence = (
            f"{u.subnet.cidr} in {u.subnet.az}: {free} of {u.size} usable addresses free ({util:.0%} used)",
            f"one more node needs {u.need} address(es) here ({_need_text(u, cni)})",
        )
        if free < u.need:
            findings.append(
                EKS_SUBNET_EXHAUSTED.finding(
                    Severity.CRITICAL,
                    subnet_label(u.subnet),
                    f"{what} subnet {u.subnet.cidr} in {u.subnet.az} is out of addresses "
                    f"({free} free, a new node needs {u.need})",
                    evidence,
                    "Add pod address space: `{EXPAND}` (secondary VPC CIDR, a subnet per "
                    "AZ, ENIConfigs, custom networking and a new node group).",
                )
            )
        elif util >= NEARLY_FULL or free < 2 * u.need:
            findings.append(
                EKS_SUBNET_NEARLY_EXHAUSTED.finding(
                    Severity.WARNING,
                    subnet_label(u.subnet),
                    f"{what} subnet {u.subnet.cidr} in {u.subnet.az} is {util:.0%} used "
                    f"(room for {free // max(1, u.need)} more node(s))",
                    evidence,
                    "Plan more pod address space before the next scale-up: `{EXPAND}`.",
                )
            )
    for az, az_uses in sorted(by_az.items()):
        # A new node needs both its own address (node subnets) and, with custom networking, pod addresses
        # from its zone's ENIConfig subnet: the AZ is stuck when either side has no subnet with room.
        node_side = [u for u in az_uses if u.need_node]
        pod_side = [u for u in az_uses if not u.need_node]
        if any(side and all(u.subnet.available_ips < u.need for u in side) for side in (node_side, pod_side)):
            findings.append(
                EKS_AZ_EXHAUSTED.finding(
                    Severity.CRITICAL,
                    az,
                    f"no subnet the cluster uses in {az} can take another node",
                    tuple(f"{subnet_label(u.subnet)}: {u.subnet.available_ips} free" for u in az_uses),
                    "New nodes and pods in this AZ will fail until address space is added.",
                )
            )
    return findings


def _migration_findings(snapshot: Snapshot, uses: list[SubnetUse], findings: list[Finding]) -> list[Finding]:
    """One finding per plan cidrx applied whose new subnets have room while nodes in full subnets still run
    pods: N nodes, M pods."""
    from ipaddress import ip_address, ip_network

    from cidrx.providers.eks.facts.applied import applied_at, applied_plans

    roomy = [a for a in applied_plans(snapshot) if a.free > 0]
    when = applied_at(snapshot)
    full = {f.subject for f in findings if f.id in (EKS_SUBNET_EXHAUSTED.id, EKS_SUBNET_NEARLY_EXHAUSTED.id)}
    nets = [ip_network(u.subnet.cidr) for u in uses if subnet_label(u.subnet) in full and "nodes" in u.roles]
    kube = snapshot.kube
    stuck = [n for n in kube.nodes if n.internal_ip and any(ip_address(n.internal_ip) in net for net in nets)]
    pods = sum(kube.pods_per_node.get(n.name, 0) for n in stuck)
    if not roomy or not stuck or pods == 0:
        return []  # nothing left to move: empty nodes wait only for their group's scale-down
    names = ", ".join(n.name for n in stuck[:5]) + (" …" if len(stuck) > 5 else "")
    return [
        EKS_PLAN_MIGRATION_PENDING.finding(
            Severity.WARNING,
            f"plan {a.plan_id}",
            f"plan {a.plan_id} applied{' ' + when[a.plan_id] if a.plan_id in when else ''}, migration pending: "
            f"{len(stuck)} node(s) in full subnets still run {pods} pod(s)",
            (f"{a.space}: {a.free} of {a.size} addresses free", f"nodes in full subnets: {names}"),
            "Move the workloads with a migration plan (it cordons the nodes in the full subnets, evicts their pods "
            "honouring PodDisruptionBudgets so replacements join with the new space, then scales their old groups "
            f"down; rollback undoes it): `{EXPAND} --strategy eks-migrate`. Do not expand again: `expand --plan` "
            "refuses while this plan's space has room.",
        )
        for a in roomy
    ]


def _left_behind(snapshot: Snapshot, uses: list[SubnetUse], cni: CniConfig, findings: list[Finding]) -> list[Finding]:
    """Once an applied plan's space takes the new nodes, a full subnet that holds none of the cluster's nodes is
    no incident of the cluster's (info): nothing of it is left there to grow. A subnet pods of other nodes use
    (an ENIConfig's, with custom networking) keeps its severity: its pods' addresses are not in the snapshot."""
    from ipaddress import ip_address, ip_network

    from cidrx.providers.eks.facts.applied import applied_plans

    roomy = [a for a in applied_plans(snapshot) if a.free > 0]
    if not roomy or not snapshot.kube.available:
        return findings
    a = roomy[0]
    nets = {
        subnet_label(u.subnet): ip_network(u.subnet.cidr)
        for u in uses
        if "pods" not in u.roles or not cni.custom_networking
    }
    ips = [ip_address(n.internal_ip) for n in snapshot.kube.nodes if n.internal_ip]
    out = []
    for f in findings:
        net = nets.get(f.subject)
        if f.id in (EKS_SUBNET_EXHAUSTED.id, EKS_SUBNET_NEARLY_EXHAUSTED.id) and net and not any(i in net for i in ips):
            f = replace(
                f,
                severity=Severity.INFO,
                summary=f"{f.summary}; none of the cluster's nodes are left in it",
                remediation=f"Nothing to move: new nodes take addresses from plan {a.plan_id}'s {a.space}.",
            )
        out.append(f)
    return out


def _need_text(u: SubnetUse, cni: CniConfig) -> str:
    parts = []
    if u.need_node:
        parts.append("node primary address" + (" + warm pod pool" if u.need_node > 1 else ""))
    if u.need_pods:
        parts.append(f"{u.need_pods} pod addresses for the warm pool")
    mode = "prefix delegation" if cni.prefix_delegation else f"WARM_ENI_TARGET={cni.warm_eni_target}"
    if cni.warm_ip_target is not None or cni.minimum_ip_target is not None:
        mode = f"WARM_IP_TARGET={cni.warm_ip_target}, MINIMUM_IP_TARGET={cni.minimum_ip_target}"
    return ", ".join(parts) + f"; {mode}"


def _event_findings(eks: EksSection, kube: KubeSection) -> list[Finding]:
    findings: list[Finding] = []
    # Only failures of pods that are still waiting count: the API server keeps events for an hour by default
    # (kube-apiserver --event-ttl), so after a fix (or a migration that evicted the pod) the old event outlives
    # the problem it reported.
    waiting = {(p.namespace, p.name) for p in kube.waiting_pods}
    failed = [
        e
        for e in kube.events
        if e.reason == "FailedCreatePodSandBox"
        and IP_ASSIGN_TEXT in e.message.lower()
        and (e.kind != "Pod" or (e.namespace, e.name) in waiting)
    ]
    if failed:
        total = sum(max(1, e.count) for e in failed)
        creating = [p for p in kube.waiting_pods if p.reason == "ContainerCreating"]
        evidence = [f"{e.namespace}/{e.name}: {e.message}" for e in failed[:MAX_EVIDENCE]]
        if creating:
            evidence.append(f"{len(creating)} pod(s) stuck in ContainerCreating")
        findings.append(
            EKS_POD_IP_ASSIGN_FAILED.finding(
                Severity.CRITICAL,
                f"cluster {eks.cluster.name}",
                f"the VPC CNI failed to assign pod IPs {total} time(s) across {len(failed)} pod(s)",
                tuple(evidence),
                "Pods cannot start until the node's subnet (or ENIConfig subnet) has free addresses; see the "
                "subnet findings and `{EXPAND}`.",
            )
        )
    short = [e for e in kube.events if e.reason == "InsufficientFreeAddressesInSubnet"]
    short_evidence = tuple(f"event {e.namespace}/{e.name}: {e.message}" for e in short[:MAX_EVIDENCE])
    starved = [ng for ng in eks.nodegroups if any("InsufficientFreeAddresses" in c for c in ng.health_issues)]
    for ng in starved:
        findings.append(
            EKS_NODEGROUP_NO_ADDRESSES.finding(
                Severity.CRITICAL,
                f"nodegroup {ng.name}",
                f"node group {ng.name} cannot launch nodes: its subnets have no free addresses",
                tuple(f"node group health issue: {c}" for c in ng.health_issues) + short_evidence,
                "Give the node group subnets with room (the expand plan adds a node group in subnets that have space).",
            )
        )
    if short and not starved:
        findings.append(
            EKS_NODEGROUP_NO_ADDRESSES.finding(
                Severity.CRITICAL,
                f"cluster {eks.cluster.name}",
                "nodes could not be launched: InsufficientFreeAddressesInSubnet",
                short_evidence,
                "Give the node groups subnets with room; see `{EXPAND}`.",
            )
        )
    return findings


def _custom_networking_findings(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[Finding]:
    findings: list[Finding] = []
    subnets = {s.subnet_id: s for s in eks.subnets}
    by_name = {e.name: e for e in kube.eniconfigs}
    if not cni.custom_networking:
        if kube.eniconfigs:
            findings.append(
                EKS_ENICONFIG_UNUSED.finding(
                    Severity.WARNING,
                    "aws-node",
                    f"{len(kube.eniconfigs)} ENIConfig(s) exist but custom networking is off",
                    (f"aws-node {cni_source(cni)}: AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG is not 'true'",),
                    "Set AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true and ENI_CONFIG_LABEL_DEF="
                    "topology.kubernetes.io/zone on aws-node (or the vpc-cni add-on), then replace the nodes.",
                )
            )
        return findings
    for cfg in kube.eniconfigs:
        if cfg.subnet not in subnets:
            findings.append(
                EKS_ENICONFIG_SUBNET_MISSING.finding(
                    Severity.CRITICAL,
                    f"eniconfig {cfg.name}",
                    f"ENIConfig {cfg.name} points at subnet {cfg.subnet or '(none)'}, which is not in {eks.vpc.vpc_id}",
                    (f"spec.subnet={cfg.subnet!r}",),
                    "Point the ENIConfig at a subnet of the cluster VPC in the same AZ.",
                )
            )
    missing: dict[str, list[str]] = defaultdict(list)  # ENIConfig name -> "who would use it, and why"
    wrong: dict[str, list[str]] = defaultdict(list)
    for who, zone, sel in _selections(eks, kube, cni):
        e = by_name.get(sel.name)
        if e is None:
            missing[sel.name].append(f"{who} ({zone or 'zone unknown'}) would use ENIConfig {sel.name!r}: {sel.rule}")
        elif e.subnet in subnets and zone and subnets[e.subnet].az != zone:
            wrong[sel.name].append(f"{who} in {zone} uses it ({sel.rule})")
    for name, users in sorted(wrong.items()):
        s = subnets[by_name[name].subnet]
        findings.append(
            EKS_ENICONFIG_WRONG_AZ.finding(
                Severity.CRITICAL,
                f"eniconfig {name}",
                f"ENIConfig {name} uses subnet {s.subnet_id} in {s.az}, but {len(users)} node(s) in other zones use "
                "it: their pod ENIs cannot be created (an ENI's subnet must be in the instance's zone)",
                (f"{subnet_label(s)} is in {s.az}", *users[:MAX_EVIDENCE]),
                f"Point ENIConfig {name} at a subnet in the nodes' zone, or give those nodes another ENIConfig.",
            )
        )
    if missing:
        zone_hint: tuple[str, ...] = ()
        names = sorted(by_name)
        zones = sorted({n.zone for n in kube.nodes if n.zone} | _zones_in_use(eks, kube))
        if DEFAULT_ENICONFIG in missing and zone_named_unselected(names, zones, cni):
            zone_hint = (
                f"ENIConfigs named after zones ({', '.join(n for n in names if n in zones)}) are never read: ipamd "
                f"looks for the label {cni.label_def or ENICONFIG_DEFAULT_KEY}, not {ZONE_LABEL}, then falls back "
                f"to {DEFAULT_ENICONFIG!r}",
            )
        evidence = [line for name in sorted(missing) for line in missing[name][:MAX_EVIDENCE]]
        findings.append(
            EKS_CUSTOM_NETWORKING_NO_ENICONFIG.finding(
                Severity.CRITICAL,
                "aws-node",
                f"custom networking is on but {len(missing)} ENIConfig(s) that nodes would use do not exist "
                f"({', '.join(repr(n) for n in sorted(missing))})",
                (*zone_hint, *evidence),
                "Create the ENIConfigs the nodes ask for (spec.subnet in the node's zone, spec.securityGroups = "
                f"the cluster security group), or set {LABEL_DEF}={ZONE_LABEL} on aws-node so each node uses the "
                "ENIConfig named after its zone.",
            )
        )
    chosen = {n.name: node_selection(kube, n, cni).name for n in kube.nodes}
    stale = [
        n for n in kube.nodes if chosen[n.name] in by_name and n.created and n.created < by_name[chosen[n.name]].created
    ]
    if stale:
        findings.append(
            EKS_NODES_PREDATE_ENICONFIG.finding(
                Severity.WARNING,
                "nodes",
                f"{len(stale)} node(s) joined before their ENIConfig and still give pods addresses "
                "from the node subnet",
                tuple(
                    f"{n.name} ({n.zone}) created {n.created}, before ENIConfig {chosen[n.name]}"
                    for n in stale[:MAX_EVIDENCE]
                ),
                "Cordon and drain these nodes so replacements pick up the ENIConfig.",
            )
        )
    return findings


def _zones_in_use(eks: EksSection, kube: KubeSection) -> set[str]:
    subnets = {s.subnet_id: s for s in eks.subnets}
    return {subnets[sid].az for sid in node_subnet_ids(eks) if sid in subnets}


def _selections(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[tuple[str, str, Selection]]:
    """(who, zone, the ENIConfig ipamd picks) for every node, and for a node that would join each zone the
    cluster uses but no node runs in yet (with the labels of the node groups there)."""
    out = [(f"node {n.name}", n.zone, node_selection(kube, n, cni)) for n in kube.nodes]
    seen = {n.zone for n in kube.nodes if n.zone}
    subnets = {s.subnet_id: s for s in eks.subnets}
    for zone in sorted(_zones_in_use(eks, kube) - seen):
        groups = [g for g in eks.nodegroups if any(subnets[i].az == zone for i in g.subnet_ids if i in subnets)]
        for labels, who in [(g.labels, f"a new node of {g.name}") for g in groups] or [({}, "a new node")]:
            out.append((who, zone, new_node_selection(zone, labels, cni)))
    return out


def cni_source(cni: CniConfig) -> str:
    return {"aws-node": "DaemonSet env", "addon": "add-on configurationValues"}.get(cni.source, "defaults")


def _max_pods_findings(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[Finding]:
    types = types_by_name(eks)
    over: dict[str, list[str]] = defaultdict(list)
    limits: dict[str, tuple[int, int]] = {}
    for n in kube.nodes:
        t = types.get(n.instance_type)
        if t is None or n.allocatable_pods is None:
            continue
        limit = max_pods_allowed(t, cni)
        if n.allocatable_pods > limit:
            over[t.name].append(n.name)
            limits[t.name] = (n.allocatable_pods, limit)
    findings = []
    for tname, nodes in sorted(over.items()):
        allowed, limit = limits[tname]
        findings.append(
            EKS_MAX_PODS_ABOVE_ENI_LIMIT.finding(
                Severity.WARNING,
                f"instance type {tname}",
                f"{len(nodes)} {tname} node(s) accept {allowed} pods but the VPC CNI can address only {limit}",
                tuple(nodes[:MAX_EVIDENCE]),
                "Pods scheduled past the ENI limit sit in ContainerCreating; set max pods to the ENI formula "
                "(or enable prefix delegation on Nitro instances).",
            )
        )
    return findings


def _warm_pool_finding(eks: EksSection, kube: KubeSection, cni: CniConfig, tight: bool) -> list[Finding]:
    if cni.prefix_delegation or cni.warm_ip_targets:
        return []
    if cni.warm_eni_target < 1 or not kube.nodes:
        return []
    types = types_by_name(eks)
    idle = 0
    for n in kube.nodes:
        t = types.get(n.instance_type)
        if t is not None:
            idle += (t.ips_per_eni - 1) * cni.warm_eni_target
    if idle == 0:
        return []
    return [
        EKS_WARM_POOL_WASTE.finding(
            Severity.WARNING if tight else Severity.INFO,
            "aws-node",
            f"WARM_ENI_TARGET={cni.warm_eni_target} keeps up to {idle} idle addresses on {len(kube.nodes)} node(s)",
            (
                f"WARM_IP_TARGET and MINIMUM_IP_TARGET unset ({cni_source(cni)})",
                "each node holds a whole spare ENI of secondary addresses that no pod uses",
            ),
            "Set MINIMUM_IP_TARGET to the usual pods per node and WARM_IP_TARGET to a small number (2-5); "
            "this costs more EC2 API calls on pod churn.",
        )
    ]


def _prefix_findings(uses: list[SubnetUse], cni: CniConfig, exhausted: bool) -> list[Finding]:
    pods = [u for u in uses if u.need]
    if cni.prefix_delegation:
        return [
            EKS_PREFIX_NO_FREE_BLOCK.finding(
                Severity.CRITICAL,
                subnet_label(u.subnet),
                f"prefix delegation is on but {u.subnet.cidr} has no free aligned /28 "
                f"({u.subnet.available_ips} single addresses free)",
                (f"{u.subnet.cidr}: 0 free /28 blocks; scattered addresses cannot form a prefix",),
                "Reserve space for prefixes with a subnet CIDR reservation (type prefix) or add a new subnet.",
            )
            for u in pods
            if u.free_28 == 0
        ]
    full = [u for u in pods if u.subnet.available_ips < u.need]
    if not exhausted or any(u.free_28 for u in full):
        return []
    return [
        EKS_PREFIX_DELEGATION_NOT_ENOUGH.finding(
            Severity.INFO,
            "prefix delegation",
            "prefix delegation alone would not help: the full subnets have no free aligned /28 blocks",
            tuple(f"{u.subnet.cidr} ({u.subnet.az}): {u.free_28} free /28" for u in pods),
            "Use custom networking with a secondary CIDR (the default expand strategy).",
        )
    ]


def _quota_findings(eks: EksSection) -> list[Finding]:
    active = [c for c in eks.vpc.cidrs if c.state in ("associated", "associating")]
    if len(active) < eks.vpc_cidr_quota:
        return []
    return [
        EKS_VPC_CIDR_QUOTA_REACHED.finding(
            Severity.WARNING,
            eks.vpc.vpc_id,
            f"{eks.vpc.vpc_id} already has {len(active)} IPv4 CIDR blocks (quota {eks.vpc_cidr_quota})",
            tuple(c.cidr for c in active),
            "Request a higher 'IPv4 CIDR blocks per VPC' quota (L-83CA0A9D) before adding a secondary CIDR.",
        )
    ]


def _routes_findings(eks: EksSection) -> list[Finding]:
    lines = unreadable_routes(eks)
    if not lines:
        return []
    return [
        EKS_ROUTES_UNREADABLE.finding(
            Severity.WARNING,
            eks.vpc.vpc_id,
            f"{len(lines)} transit gateway route table(s) or prefix list(s) of {eks.vpc.vpc_id} could not be read: "
            "the ranges routed there are not known to cidrx",
            tuple(lines[:MAX_EVIDENCE]),
            "Grant ec2:SearchTransitGatewayRoutes / ec2:GetManagedPrefixListEntries in the account that owns them, "
            "or check the network team's IP plan and pass a free range with --cidr.",
        )
    ]


def nodegroup_capacity(
    eks: EksSection, kube: KubeSection, cni: CniConfig, fit: Callable[[set[str]], int | None] = lambda _: None
) -> list[Capacity]:
    """One row per managed node group; `fit` says how many more nodes fit in a set of subnets."""
    types = types_by_name(eks)
    nodes_by_group: dict[str, list[str]] = defaultdict(list)
    for n in kube.nodes:
        if n.pool:
            nodes_by_group[n.pool].append(n.name)
    out = []
    for ng in eks.nodegroups:
        t = largest_type(ng.instance_types, types)
        per_node = max_pods(t, cni) if t else 0
        names = nodes_by_group.get(ng.name, [])
        nodes = len(names) if kube.available else ng.desired_size
        used = sum(kube.pods_per_node.get(n, 0) for n in names)
        size = per_node * nodes
        note = f"{per_node} pods/node ({', '.join(ng.instance_types)})" if t else "instance type unknown"
        row = pod_slots("nodegroup", ng.name, size, used, nodes, note, ng.max_size)
        out.append(with_fit(row, fit(set(ng.subnet_ids))))
    return out


def _subnet_capacity(uses: list[SubnetUse], prefix_delegation: bool) -> list[Capacity]:
    return [
        Capacity(
            kind="subnet",
            name=subnet_label(u.subnet),
            cidr=u.subnet.cidr,
            size=u.size,
            used=u.used,
            free=u.subnet.available_ips,
            utilization=utilization(u.used, u.size),
            nodes_fit=subnet_nodes_fit(u, prefix_delegation),
            zone=u.subnet.az,
            note=f"{', '.join(u.roles)}; free /28: {u.free_28}",
        )
        for u in uses
    ]


def _zone_capacity(uses: list[SubnetUse], kube: KubeSection, prefix_delegation: bool) -> list[Capacity]:
    """One row per Availability Zone the cluster's nodes launch in: the addresses of its node and pod subnets
    and how many more nodes the zone takes (the scarcer of node and pod subnets, as EKS-AZ-EXHAUSTED reads it)."""
    out = []
    for az in sorted({u.subnet.az for u in uses if u.need_node}):
        mine = [u for u in uses if u.subnet.az == az and u.need > 0]
        size, used = sum(u.size for u in mine), sum(u.used for u in mine)
        out.append(
            Capacity(
                kind="zone",
                name=az,
                cidr=None,
                size=size,
                used=used,
                free=sum(u.subnet.available_ips for u in mine),
                utilization=utilization(used, size),
                nodes=sum(1 for n in kube.nodes if n.zone == az) if kube.available else None,
                nodes_fit=nodes_fit_in(mine, None, prefix_delegation),
                zone=az,
                note="subnets " + ", ".join(u.subnet.subnet_id for u in mine),
            )
        )
    return out


def _vpc_capacity(eks: EksSection) -> Capacity:
    active = [c for c in eks.vpc.cidrs if c.state in ("associated", "associating")]
    return Capacity(
        kind="vpc-cidr-blocks",
        unit="blocks",  # CIDR blocks of the VPC (its quota), not addresses
        name=eks.vpc.vpc_id,
        cidr=eks.vpc.primary_cidr,
        size=eks.vpc_cidr_quota,
        used=len(active),
        free=max(0, eks.vpc_cidr_quota - len(active)),
        utilization=utilization(len(active), eks.vpc_cidr_quota),
        note=", ".join(c.cidr for c in active),
    )


def analyze(snapshot: Snapshot) -> Diagnosis:
    eks = snapshot.eks
    if eks is None:
        raise InvalidInput("this snapshot has no EKS section; it was taken for another provider")
    kube = snapshot.kube
    cni = cni_config(eks, kube)
    disc = discovery.discovery_state(eks, kube, cni)
    zones = discovery.by_zone(eks, kube, disc, node_subnet_ids(eks))
    uses = _relieved(subnet_uses(eks, kube, cni), zones, disc)
    findings = _subnet_findings(uses, cni)
    exhausted = any(f.id == EKS_SUBNET_EXHAUSTED.id for f in findings)
    tight = exhausted or any(f.id == EKS_SUBNET_NEARLY_EXHAUSTED.id for f in findings)
    findings += _event_findings(eks, kube)
    findings += _custom_networking_findings(eks, kube, cni)
    findings += _max_pods_findings(eks, kube, cni)
    findings += _warm_pool_finding(eks, kube, cni, tight)
    findings += _prefix_findings(uses, cni, exhausted)
    findings += _quota_findings(eks)
    expand = f"cidrx expand {snapshot.target.flags()} --plan --out plan.json"
    findings = reworded(findings, disc) + discovery_findings(eks, kube, disc, zones, tight, expand)
    findings += _routes_findings(eks)
    findings += provisioner_findings(eks, kube, cni)
    findings += control_plane.findings(eks, expand)
    if not kube.available:
        from cidrx.model.findings import kube_unreachable

        findings.append(kube_unreachable(UNREACHABLE, UNREACHABLE_FIX, reason=kube.reason or "no Kubernetes access"))
    from cidrx.providers.eks.netmap import address_maps, block_capacity

    pd = cni.prefix_delegation

    def fit(ids: set[str]) -> int | None:
        return nodes_fit_in(uses, ids, pd)

    capacity = _subnet_capacity(uses, pd) + _zone_capacity(uses, kube, pd) + nodegroup_capacity(eks, kube, cni, fit)
    capacity += [*provisioner_capacity(eks, kube, cni, fit), _vpc_capacity(eks)]
    free_28 = {s.subnet_id: free_prefix_blocks(s) for z in zones for s in z.subnets}
    capacity += discovery_capacity(zones, free_28, disc, cni.prefix_delegation)
    capacity += [block_capacity(m) for m in address_maps(snapshot)]
    pending = _migration_findings(snapshot, uses, findings)
    findings = _left_behind(snapshot, uses, cni, findings)
    if pending:
        # The space is there already: the exhausted subnets' fix is the migration, not another expansion.
        migrate = "Move the workloads onto the new space (finding " + EKS_PLAN_MIGRATION_PENDING.id + ")."
        findings = [replace(f, remediation=f.remediation.replace(f"`{EXPAND}`", migrate)) for f in findings]
        findings = [*pending, *findings]
    findings = [replace(f, remediation=f.remediation.replace(EXPAND, expand)) for f in findings]
    return make_diagnosis(snapshot.target, snapshot.fingerprint, capacity, findings)


def nodegroup_by_name(eks: EksSection, name: str) -> Nodegroup | None:
    return next((ng for ng in eks.nodegroups if ng.name == name), None)


def reworded(findings: list[Finding], state: DiscoveryState) -> list[Finding]:
    """Where subnet discovery is the default strategy, remediations that name the expand plan describe it."""
    from cidrx.providers.eks.analyze.diagnosis import EKS_PREFIX_DELEGATION_NOT_ENOUGH, EKS_SUBNET_EXHAUSTED

    if not state.supported or state.custom_networking:
        return findings
    fixes = {
        EKS_SUBNET_EXHAUSTED.id: "Add pod address space: `{EXPAND}` (subnet discovery: a subnet per AZ tagged "
        f"{ROLE_TAG}=1 for new ENIs; new nodes still need a free address in their node subnet).",
        EKS_PREFIX_DELEGATION_NOT_ENOUGH.id: "Add tagged subnets for subnet discovery (the default expand strategy "
        "here), or use custom networking with a secondary CIDR.",
    }
    return [replace(f, remediation=fixes.get(f.id, f.remediation)) for f in findings]
