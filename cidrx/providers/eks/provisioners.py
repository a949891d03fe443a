"""Who provisions an EKS cluster's nodes besides managed node groups, and what that means for pod
addresses: the subnets their nodes (and Auto Mode's pods) take addresses from, their max pods, their
capacity rows and findings. Pure: analysis and planning both read it.

Upstream rules followed here:
- Karpenter's max pods without `kubelet.maxPods` is the ENI formula less RESERVED_ENIS:
  (ENIs − RESERVED_ENIS) × (IPv4 per ENI − 1) + 2 (aws/karpenter-provider-aws
  pkg/providers/instancetype/types.go ENILimitedPods, pkg/operator/options/options.go RESERVED_ENIS default
  0, at 1d927085dd81a9df9301e613f371dac5b4d16bfe). With VPC CNI custom networking the primary ENI holds no
  pod addresses, so RESERVED_ENIS must be 1 or nodes advertise pods the CNI cannot address.
- EKS Auto Mode does pod networking itself: aws-node env and ENIConfigs do nothing for its nodes; pods take
  addresses from the NodeClass's podSubnetSelectorTerms subnets (else the node subnets), with /28 prefixes
  by default (EKS user guide, "Create a Node Class for Amazon EKS").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from cidrx.kube.model import KubeSection
from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.providers.eks.cni import CniConfig, max_pods
from cidrx.providers.eks.model import EksSection, InstanceType, Subnet
from cidrx.providers.eks.provisioner_model import (
    AUTO_NODE_CLASS,
    EC2_NODE_CLASS,
    NodeClass,
    NodeProvisioners,
    SelectorTerm,
)

EKS_KARPENTER_RESERVED_ENIS = FindingKind.parse(
    """EKS-KARPENTER-RESERVED-ENIS (warning): Custom networking is on but Karpenter's RESERVED_ENIS is not set,
    so Karpenter sizes nodes for pods on the primary ENI that the VPC CNI will not address: pods past the
    real limit stay in ContainerCreating."""
)

EKS_AUTO_MODE_CNI_SETTINGS_IGNORED = FindingKind.parse(
    """EKS-AUTO-MODE-CNI-SETTINGS-IGNORED (info): The cluster runs EKS Auto Mode, whose nodes ignore aws-node env
    and ENIConfigs; their pods take addresses from the NodeClass's podSubnetSelectorTerms."""
)

KINDS = FindingKind.all_in(globals())

BUILTIN_AUTO_NODE_CLASS = "default"  # the NodeClass EKS Auto Mode creates and manages itself


def provisioners(eks: EksSection) -> NodeProvisioners:
    return eks.provisioners or NodeProvisioners()


def term_matches(term: SelectorTerm, subnet: Subnet) -> bool:
    """A selector term ANDs its fields; a tag value `*` matches any value (ec2nodeclass.go SubnetSelectorTerm)."""
    if term.id and term.id != subnet.subnet_id:
        return False
    for key, value in term.tags.items():
        if key not in subnet.tags or (value != "*" and subnet.tags[key] != value):
            return False
    return bool(term.id or term.tags)


def resolve_subnets(terms: Iterable[SelectorTerm], subnets: Iterable[Subnet]) -> tuple[str, ...]:
    wanted = tuple(terms)
    return tuple(sorted(s.subnet_id for s in subnets if any(term_matches(t, s) for t in wanted)))


def node_class_subnets(eks: EksSection, c: NodeClass) -> tuple[str, ...]:
    """Where its nodes launch: status.subnets when the controller resolved them, else the selectors."""
    return c.subnets or resolve_subnets(c.subnet_terms, eks.subnets)


def pod_subnets(eks: EksSection, c: NodeClass) -> tuple[str, ...]:
    """Auto Mode: the subnets its pods take addresses from (none selected: the node subnets)."""
    return resolve_subnets(c.pod_subnet_terms, eks.subnets) if c.pod_subnet_terms else ()


def node_subnets(eks: EksSection) -> set[str]:
    """Subnets nodes of self-managed groups and node classes launch in."""
    p = provisioners(eks)
    ids = {sid for g in p.self_managed for sid in g.subnet_ids}
    for c in p.node_classes:
        ids |= set(node_class_subnets(eks, c))
    return ids


def auto_mode_pod_subnets(eks: EksSection) -> set[str]:
    return {sid for c in provisioners(eks).classes(AUTO_NODE_CLASS) for sid in pod_subnets(eks, c)}


def karpenter_max_pods(itype: InstanceType, reserved_enis: int) -> int:
    """Karpenter's ENI-limited max pods (ENILimitedPods): it knows nothing of the CNI's own settings."""
    usable = max(0, itype.max_enis - reserved_enis)
    return usable * (itype.ips_per_eni - 1) + 2 if usable else 0


def reserved_enis(p: NodeProvisioners) -> int:
    return (p.karpenter.reserved_enis or 0) if p.karpenter is not None else 0


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


def provisioner_capacity(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[Capacity]:
    """One row per self-managed group and per NodePool: its nodes, pod slots, and where nodes launch."""
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
        out.append(pod_slots("self-managed-group", g.name, size, used, count, note, g.max_size))
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
        out.append(pod_slots(kind, pool.name, size, used, len(nodes_by_pool.get(pool.name, [])), where))
    return out


def provisioner_findings(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[Finding]:
    p = provisioners(eks)
    findings: list[Finding] = []
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
