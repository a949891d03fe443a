"""Capacity rows and findings of the node provisioners besides managed node groups (self-managed groups,
Karpenter, EKS Auto Mode): their nodes and pod slots, Karpenter's RESERVED_ENIS under custom networking, and
VPC CNI settings that Auto Mode nodes ignore (the facts are cidrx.providers.eks.facts.provisioners').
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace

from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.model.kube import KubeSection
from cidrx.providers.eks.facts.cni import CniConfig, max_pods
from cidrx.providers.eks.facts.karpenter import placements
from cidrx.providers.eks.facts.provisioners import (
    karpenter_max_pods,
    node_class_subnets,
    pod_subnets,
    provisioners,
    reserved_enis,
)
from cidrx.providers.eks.model import AUTO_NODE_CLASS, EC2_NODE_CLASS, EksSection, InstanceType

EKS_KARPENTER_RESERVED_ENIS = FindingKind.parse(
    """EKS-KARPENTER-RESERVED-ENIS (warning): Custom networking is on but Karpenter's RESERVED_ENIS is not set,
    so Karpenter sizes nodes for pods on the primary ENI that the VPC CNI will not address: pods past the
    real limit stay in ContainerCreating."""
)


EKS_AUTO_MODE_CNI_SETTINGS_IGNORED = FindingKind.parse(
    """EKS-AUTO-MODE-CNI-SETTINGS-IGNORED (info): The cluster runs EKS Auto Mode, whose nodes ignore aws-node env
    and ENIConfigs; their pods take addresses from the NodeClass's podSubnetSelectorTerms."""
)


EKS_KARPENTER_SUBNET_FULL = FindingKind.parse(
    """EKS-KARPENTER-SUBNET-FULL (critical or warning): An EC2NodeClass selects a subnet that cannot take one more
    node while another subnet in the same zone (selected, or one of the cluster's own) has room. Critical when
    no selected subnet of that zone has room: Karpenter launches into the one with the most free addresses,
    however few, and the new nodes' pods get no address."""
)

KINDS = FindingKind.all_in(globals())


def _types(eks: EksSection) -> dict[str, InstanceType]:
    return {t.name: t for t in eks.instance_types}


def _label(eks: EksSection, ids: Iterable[str]) -> str:
    names = {s.subnet_id: s.tags.get("Name", "") for s in eks.subnets}
    return ", ".join(f"{i} ({names[i]})" if names.get(i) else i for i in ids) or "none resolved"


def pod_slots(
    kind: str, name: str, size: int, used: int, nodes: int, note: str, autoscaling_max: int | None = None
) -> Capacity:
    """A consumer of pod slots (not an address space): `max_nodes` stays unset, the autoscaling limit is extra."""
    extra: dict[str, float] = {"autoscaling_max_nodes": autoscaling_max} if autoscaling_max is not None else {}
    return Capacity(
        kind=kind,
        name=name,
        cidr=None,
        size=size,
        used=used,
        free=max(0, size - used),
        utilization=utilization(used, size),
        nodes=nodes,
        note=note,
        extra=extra,
    )


def with_fit(row: Capacity, nodes_fit: int | None) -> Capacity:
    """A pod-slot row with how many more nodes fit. A group with no nodes has no slots yet: it is empty, not full,
    unless no node fits in its subnets either (its utilisation then stays 1)."""
    if row.size > 0 or row.used > 0 or nodes_fit == 0:
        return replace(row, nodes_fit=nodes_fit)
    return replace(row, nodes_fit=nodes_fit, utilization=0.0, note=f"no nodes yet; {row.note}")


def provisioner_capacity(
    eks: EksSection, kube: KubeSection, cni: CniConfig, fit: Callable[[set[str]], int | None] = lambda _: None
) -> list[Capacity]:
    """One row per self-managed group and per NodePool: its nodes, pod slots, and where nodes launch;
    `fit` says how many more nodes fit in a set of subnets (the group's or the NodeClass's)."""
    p = provisioners(eks)
    types = _types(eks)
    out: list[Capacity] = []
    by_name = {n.name: n for n in kube.nodes}
    for g in p.self_managed:
        t = max((types[n] for n in g.instance_types if n in types), key=lambda x: x.ips_per_eni, default=None)
        per_node = g.max_pods or (max_pods(t, cni) if t else 0)
        nodes = [by_name[n] for n in g.nodes if n in by_name]
        count = len(nodes) if kube.available and nodes else g.instances
        used = sum(kube.pods_per_node.get(n.name, 0) for n in nodes)
        size = per_node * count
        lt = g.launch_template
        where = f"launch template {lt.get('name') or lt.get('id')} v{g.launch_template_version or lt.get('version')}"
        source = "--max-pods in user data" if g.max_pods else f"{', '.join(g.instance_types) or 'type unknown'}"
        note = f"{per_node} pods/node ({source}); {where if lt else 'no launch template'}; "
        note += f"subnets {_label(eks, g.subnet_ids)}"
        row = pod_slots("self-managed-group", g.name, size, used, count, note, g.max_size)
        out.append(with_fit(row, fit(set(g.subnet_ids))))
    classes = {(c.kind, c.name): c for c in p.node_classes}
    nodes_by_pool: dict[str, list[str]] = defaultdict(list)
    for n in kube.nodes:
        if n.pool:
            nodes_by_pool[n.pool].append(n.name)
    by_name = {n.name: n for n in kube.nodes}
    reserved = reserved_enis(p)
    for pool in p.node_pools:
        c = classes.get((pool.node_class_kind, pool.node_class))
        auto = pool.node_class_kind == AUTO_NODE_CLASS
        size = used = 0
        for name in nodes_by_pool.get(pool.name, []):
            node = by_name[name]
            t = types.get(node.instance_type)
            if node.allocatable_pods is not None:
                size += node.allocatable_pods
            elif c is not None and c.max_pods:
                size += c.max_pods
            elif t is not None:
                size += max_pods(t, cni) if auto else karpenter_max_pods(t, reserved)
            used += kube.pods_per_node.get(name, 0)
        if c is None:
            where = f"{pool.node_class_kind} {pool.node_class} not found"
        else:
            where = f"{c.kind} {c.name}: nodes in {_label(eks, node_class_subnets(eks, c))}"
            if auto:
                where += f"; pods in {_label(eks, pod_subnets(eks, c)) if c.pod_subnet_terms else 'the node subnets'}"
            elif c.max_pods:
                where += f"; kubelet maxPods {c.max_pods}"
            else:
                where += f"; RESERVED_ENIS={reserved}"
        kind = "auto-mode-nodepool" if auto else "karpenter-nodepool"
        row = pod_slots(kind, pool.name, size, used, len(nodes_by_pool.get(pool.name, [])), where)
        out.append(with_fit(row, fit(set(node_class_subnets(eks, c))) if c is not None else None))
    return out


def placement_findings(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[Finding]:
    findings: list[Finding] = []
    for cp in placements(eks, kube, cni):
        stuck = [z for z in cp.zones if z.stuck]
        evidence = []
        for z in cp.zones:
            full = ", ".join(f"{s.subnet_id} ({s.available_ips} free)" for s in z.full)
            room = ", ".join(f"{s.subnet_id} ({s.available_ips} free)" for s in (*z.roomy, *z.selectable))
            evidence.append(f"{z.zone}: a new node needs {z.need} address(es); full: {full}; room: {room}")
        where = ", ".join(z.zone for z in (stuck or cp.zones))
        findings.append(
            EKS_KARPENTER_SUBNET_FULL.finding(
                Severity.CRITICAL if stuck else Severity.WARNING,
                f"EC2NodeClass {cp.node_class.name}",
                f"EC2NodeClass {cp.node_class.name} selects subnets in {where} that cannot take another node "
                + ("and no selected subnet there has room" if stuck else "(another selected subnet there has room)"),
                tuple(evidence),
                "Narrow its subnetSelectorTerms to subnets with room: `{EXPAND} --strategy karpenter-subnets` "
                f"(Karpenter replaces the {len(cp.nodes_leaving)} node(s) in the subnets left out).",
            )
        )
    return findings


def provisioner_findings(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[Finding]:
    p = provisioners(eks)
    findings: list[Finding] = placement_findings(eks, kube, cni)
    ec2_classes = p.classes(EC2_NODE_CLASS)
    unbounded = [c.name for c in ec2_classes if not c.max_pods]
    if cni.custom_networking and unbounded and reserved_enis(p) < 1:
        where = f"Deployment {p.karpenter.namespace}/{p.karpenter.name}" if p.karpenter else "the Karpenter controller"
        findings.append(
            EKS_KARPENTER_RESERVED_ENIS.finding(
                Severity.WARNING,
                "karpenter",
                "custom networking is on but Karpenter's RESERVED_ENIS is not 1: its nodes advertise pods on the "
                "primary ENI, which the VPC CNI does not address",
                (
                    f"{where}: RESERVED_ENIS={reserved_enis(p)}",
                    f"EC2NodeClass(es) without kubelet.maxPods: {', '.join(unbounded)}",
                ),
                "Set RESERVED_ENIS=1 (Helm value settings.reservedENIs) on the Karpenter controller, then let "
                "Karpenter replace its nodes.",
            )
        )
    if p.auto_mode and (kube.eniconfigs or cni.custom_networking):
        evidence = []
        if kube.eniconfigs:
            evidence.append(f"{len(kube.eniconfigs)} ENIConfig(s): {', '.join(e.name for e in kube.eniconfigs)}")
        if cni.custom_networking:
            evidence.append("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true")
        findings.append(
            EKS_AUTO_MODE_CNI_SETTINGS_IGNORED.finding(
                Severity.INFO,
                f"cluster {eks.cluster.name}",
                "EKS Auto Mode nodes ignore aws-node env and ENIConfigs: they only apply to other nodes",
                tuple(evidence),
                "For Auto Mode nodes, select pod subnets with the NodeClass's podSubnetSelectorTerms "
                "(and podSecurityGroupSelectorTerms).",
            )
        )
    return findings
