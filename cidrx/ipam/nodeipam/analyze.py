"""Kubernetes node IPAM, analysis: how many nodes the cluster CIDR still has room for, and which got none.

Why it exists: every Node takes one block of `--cluster-cidr` and keeps it until the Node object is deleted.
When the range is used up, new nodes join without `spec.podCIDR`, the CNI on them (flannel, kubenet,
Cilium in kubernetes IPAM mode) cannot start pods, and the only trace is a node event with reason
`CIDRNotAvailable`. Nothing alerts before that. Pure: capacity and findings from a KubeSection.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from cidrx import registry
from cidrx.ipam.nodeipam.collect import DEFAULT_NODE_MASK_V4, networks
from cidrx.ipam.nodeipam.model import NodeIpamConfig
from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.model.kube import KubeEvent, KubeNode, KubeSection

CAPACITY_KIND = "node-ipam"
NEARLY_EXHAUSTED = 0.8
MAX_EVIDENCE = 10
EVENT_REASON = "CIDRNotAvailable"

NODE_IPAM_CIDR_NOT_AVAILABLE = FindingKind.parse(
    """NODE-IPAM-CIDR-NOT-AVAILABLE (critical): Node events with reason CIDRNotAvailable:
    kube-controller-manager had no free per-node block in --cluster-cidr for these nodes."""
)

NODE_IPAM_NODES_WITHOUT_PODCIDR = FindingKind.parse(
    """NODE-IPAM-NODES-WITHOUT-PODCIDR (critical or warning): Nodes have no spec.podCIDR; with a CNI that uses
    it, their pods cannot get addresses."""
)

NODE_IPAM_EXHAUSTED = FindingKind.parse(
    """NODE-IPAM-EXHAUSTED (critical): Every per-node block of a cluster CIDR is assigned: the next node joins
    without a podCIDR."""
)

NODE_IPAM_NEARLY_EXHAUSTED = FindingKind.parse(
    """NODE-IPAM-NEARLY-EXHAUSTED (warning): A cluster CIDR has few per-node blocks left."""
)

# What this module raises, for the findings catalogue (python -m tools.docgen).
KINDS = FindingKind.all_in(globals())
# The ids by their earlier names (tests compare findings' ids with them).
CIDR_NOT_AVAILABLE = NODE_IPAM_CIDR_NOT_AVAILABLE.id
NODES_WITHOUT_PODCIDR = NODE_IPAM_NODES_WITHOUT_PODCIDR.id
NEARLY_EXHAUSTED_ID = NODE_IPAM_NEARLY_EXHAUSTED.id
EXHAUSTED_ID = NODE_IPAM_EXHAUSTED.id

# Facts behind the advice (checked against upstream): the in-tree range allocator takes one --cluster-cidr
# per IP family; a node's block is released when its Node object is deleted; the ClusterCIDR API
# (networking.k8s.io/v1alpha1, MultiCIDRRangeAllocator) that would have added ranges was alpha only and was
# removed in v1.29 (kubernetes/kubernetes#121229); kubernetes-sigs/node-ipam-controller carries it out of
# tree and needs the in-tree allocator off (--allocate-node-cidrs=false).
REMEDIATION = (
    "The in-tree allocator cuts --cluster-cidr into fixed /{mask} blocks, one per Node object, and frees a "
    "block only when that Node object is deleted. Realistic fixes, cheapest first: (1) delete the Node "
    "objects of machines that are gone (long NotReady), which returns their blocks; (2) restart "
    "kube-controller-manager with a --cluster-cidr that is a supernet of the current one (e.g. {supernet}, "
    "only if that space is unused in your network), so every existing podCIDR stays inside it, and widen "
    "the CNI's pod network setting (e.g. flannel's net-conf.json Network) and kube-proxy's --cluster-cidr "
    "to match; (3) a longer --node-cidr-mask-size (e.g. /25, which still fits the kubelet's default 110 "
    "pods) gives twice as many blocks, but only to nodes that join afterwards. A second, disjoint range "
    "cannot be added in-tree: ClusterCIDR / MultiCIDRRangeAllocator was alpha only and was removed in "
    "Kubernetes v1.29; kubernetes-sigs/node-ipam-controller implements it out of tree, with "
    "--allocate-node-cidrs=false on kube-controller-manager."
)


def _v4_pod_cidrs(node: KubeNode) -> list[ipaddress.IPv4Network]:
    return [n for n in networks(",".join(node.pod_cidrs)) if isinstance(n, ipaddress.IPv4Network)]


def _listed(lines: list[str], limit: int = MAX_EVIDENCE) -> tuple[str, ...]:
    if len(lines) <= limit:
        return tuple(lines)
    return (*lines[:limit], f"... and {len(lines) - limit} more")


def _supernet_hint(cidr: ipaddress.IPv4Network | None) -> str:
    if cidr is None or cidr.prefixlen == 0:
        return "a /15 around a /16"
    return f"{cidr.supernet()} for {cidr}"


def _remediation(config: NodeIpamConfig | None, cidr: ipaddress.IPv4Network | None) -> str:
    mask = config.node_mask_v4 if config and config.node_mask_v4 else DEFAULT_NODE_MASK_V4
    return REMEDIATION.format(mask=mask, supernet=_supernet_hint(cidr))


def _v4_cluster_cidrs(config: NodeIpamConfig | None) -> list[ipaddress.IPv4Network]:
    if config is None:
        return []
    return [n for n in networks(",".join(config.cluster_cidrs)) if isinstance(n, ipaddress.IPv4Network)]


def _capacity(kube: KubeSection, config: NodeIpamConfig) -> list[tuple[ipaddress.IPv4Network, Capacity]]:
    mask = config.node_mask_v4
    rows: list[tuple[ipaddress.IPv4Network, Capacity]] = []
    if mask is None:
        return rows
    for cidr in _v4_cluster_cidrs(config):
        if not cidr.prefixlen <= mask <= 32:
            continue  # kube-controller-manager refuses such a configuration; nothing to count
        max_nodes = 2 ** (mask - cidr.prefixlen)
        inside = sum(1 for n in kube.nodes if any(p.subnet_of(cidr) for p in _v4_pod_cidrs(n)))
        outside = sum(
            1 for n in kube.nodes if (cidrs := _v4_pod_cidrs(n)) and not any(p.subnet_of(cidr) for p in cidrs)
        )
        block = 2 ** (32 - mask)
        note = f"/{mask} per node; from {config.source}"
        if outside:
            note += f"; {outside} node(s) hold a podCIDR outside it"
        cap = Capacity(
            kind=CAPACITY_KIND,
            name="cluster-cidr",
            cidr=str(cidr),
            size=cidr.num_addresses,
            used=min(inside * block, cidr.num_addresses),
            free=max(0, (max_nodes - inside) * block),
            utilization=utilization(inside, max_nodes),
            max_nodes=max_nodes,
            nodes=inside,
            nodes_fit=max(0, max_nodes - inside),
            note=note,
        )
        rows.append((cidr, cap))
    return rows


def _event_line(e: KubeEvent, current: Mapping[str, KubeNode]) -> str:
    node = current.get(e.name)
    state = (
        "gone now"
        if node is None
        else ("has podCIDR " + ",".join(node.pod_cidrs) if node.pod_cidrs else "still no podCIDR")
    )
    times = f" x{e.count}" if e.count > 1 else ""
    when = f", last {e.last_seen}" if e.last_seen else ""
    source = f" ({e.source})" if e.source else ""
    return f"node {e.name}: {e.message or EVENT_REASON}{source}{times}{when}; {state}"


def ignored_by(kube: KubeSection) -> str:
    """Why Node.spec.podCIDR says nothing about this cluster's pod addresses: an IPAM found in it that declares
    it hands addresses out of its own ranges (`ignores_node_pod_cidr`); "" when none does."""
    for spec in registry.ipams():
        section = getattr(kube, spec.field, None) if spec.ignores_node_pod_cidr else None
        if section is not None and (why := registry.load(spec.ignores_node_pod_cidr)(section)):
            return str(why)
    return ""


def analyze_node_ipam(kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
    """Capacity of the cluster CIDR in nodes, and findings for nodes that got (or will get) no podCIDR; nothing
    when the cluster's IPAM does not use Node.spec.podCIDR (its own analysis reports its ranges)."""
    if not kube.available or ignored_by(kube):
        return [], []
    config = kube.node_ipam
    current = {n.name: n for n in kube.nodes}
    capacity_rows = _capacity(kube, config) if config is not None else []
    capacity = [c for _, c in capacity_rows]
    first_cidr = capacity_rows[0][0] if capacity_rows else next(iter(_v4_cluster_cidrs(config)), None)
    fix = _remediation(config, first_cidr)
    where = ", ".join(config.cluster_cidrs) if config and config.cluster_cidrs else "the cluster CIDR"
    unknown = (
        ()
        if config is not None
        else ("cluster CIDR and node mask unknown: the kube-controller-manager pod and kubeadm-config are not visible",)
    )
    full = [(cidr, c) for cidr, c in capacity_rows if c.max_nodes is not None and (c.nodes or 0) >= c.max_nodes]
    findings: list[Finding] = []

    events = sorted((e for e in kube.events if e.reason == EVENT_REASON), key=lambda e: (e.name, e.last_seen))
    if events:
        failing = sorted({e.name for e in events})
        findings.append(
            NODE_IPAM_CIDR_NOT_AVAILABLE.finding(
                severity=Severity.CRITICAL,
                subject=where,
                summary=(
                    f"{len(failing)} node(s) were refused a pod CIDR (event reason {EVENT_REASON}): "
                    f"{where} has no free /{config.node_mask_v4 if config and config.node_mask_v4 else '?'} "
                    "block left, so pods on these nodes cannot get addresses"
                ),
                evidence=_listed([_event_line(e, current) for e in events]) + unknown,
                remediation=fix,
            )
        )

    uses_pod_cidr = any(n.pod_cidrs for n in kube.nodes) or bool(
        config and config.allocate_node_cidrs and config.cluster_cidrs
    )
    missing = [n for n in kube.nodes if not n.pod_cidrs]
    if uses_pod_cidr and missing:
        refused = {e.name for e in events}
        calico = getattr(kube, "calico", None) is not None
        critical = not calico and (bool(refused & {n.name for n in missing}) or bool(full))
        why = (
            "Calico IPAM does not read spec.podCIDR, so pods still start; other components that do (kube-proxy "
            "--cluster-cidr masquerading, some CNIs) are affected"
            if calico
            else "the CNI assigns pod addresses from spec.podCIDR, so pods scheduled there stay in ContainerCreating"
        )
        findings.append(
            NODE_IPAM_NODES_WITHOUT_PODCIDR.finding(
                severity=Severity.CRITICAL if critical else Severity.WARNING,
                subject=where,
                summary=f"{len(missing)} of {len(kube.nodes)} node(s) have no spec.podCIDR: {why}",
                evidence=_listed(
                    [
                        f"node {n.name}{' (not Ready)' if not n.ready else ''}, created {n.created or '?'}"
                        + (f"; {EVENT_REASON} event seen" if n.name in refused else "")
                        for n in missing
                    ]
                )
                + unknown,
                remediation=fix
                if critical or refused
                else "A node that has just joined gets its podCIDR within seconds; if these stay empty, check "
                "the kube-controller-manager log and events for CIDRNotAvailable. " + fix,
            )
        )

    for cidr, c in capacity_rows:
        assert c.max_nodes is not None and c.nodes is not None
        if c.nodes >= c.max_nodes:
            kind, severity = NODE_IPAM_EXHAUSTED, Severity.CRITICAL
            summary = (
                f"cluster CIDR {cidr} is full: all {c.max_nodes} /{config.node_mask_v4 if config else '?'} "
                "node blocks are taken, the next node will join without a podCIDR"
            )
        elif c.utilization >= NEARLY_EXHAUSTED:
            kind, severity = NODE_IPAM_NEARLY_EXHAUSTED, Severity.WARNING
            summary = (
                f"cluster CIDR {cidr} is {c.utilization * 100:.1f}% used: {c.max_nodes - c.nodes} of "
                f"{c.max_nodes} node blocks left"
            )
        else:
            continue
        findings.append(
            kind.finding(
                severity=severity,
                subject=str(cidr),
                summary=summary,
                evidence=(f"{c.nodes} node(s) hold a podCIDR in {cidr}; room for {c.max_nodes}",),
                remediation=_remediation(config, cidr),
            )
        )
    return capacity, findings
