"""Cilium IPAM as a plugin: its declaration (`SPEC`, `STRATEGIES`), read by cidrx.registry."""

from __future__ import annotations

from cidrx.registry import IpamSpec, Strategy

# A CiliumPodIPPool is named like any cluster-scoped object: a DNS-1123 subdomain.
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
POOL_NAME = (
    rf"{_LABEL}(\.{_LABEL})*",
    253,
    "the name of an existing CiliumPodIPPool (lowercase letters, digits, '-' and '.', at most 253 characters)",
)

SPEC = IpamSpec(
    name="cilium",
    title="Cilium",
    api_groups=("cilium.io",),
    finding_prefix="CILIUM-",
    collect="cidrx.ipam.cilium.collect",
    ipam="cidrx.ipam.cilium.ipam:IPAM",
    field="cilium",
    section="cidrx.ipam.cilium.model:CiliumSection",
    # What cidrx.ipam.cilium.collect reads: the mode and cluster pool, the nodes' and pools' CIDRs, which
    # CiliumPodIPPool version is served, the Service ranges a new range stays clear of, the operator Deployment.
    kube_reads=(
        "kubernetes: configmaps get in kube-system named cilium-config",
        "kubernetes: ciliumnodes.cilium.io list",
        "kubernetes: ciliumpodippools.cilium.io list",
        "kubernetes: customresourcedefinitions.apiextensions.k8s.io get named ciliumpodippools.cilium.io",
        "kubernetes: services get in default named kubernetes",
        "kubernetes: servicecidrs.networking.k8s.io list",
        "kubernetes: deployments.apps get in kube-system named cilium-operator",
    ),
    maps="cidrx.ipam.cilium.netmap:address_maps",
    ignores_node_pod_cidr="cidrx.ipam.cilium.collect:ignores_node_pod_cidr",
    # `expand --plan --emit helm`: the chart values that keep an appended cluster-pool range.
    emits=(("helm", ".helm-values.yaml", "cidrx.ipam.cilium.helm:values"),),
)

STRATEGIES = (
    Strategy(
        "cilium-pool",
        "cilium",
        "append a CIDR to Cilium's cluster pool (and restart cilium-operator), or add one to a CiliumPodIPPool",
        "cidrx.ipam.cilium.strategies.pool:ACTIONS",
        plan="cidrx.ipam.cilium.strategies.pool:make_plan",
        drift="cidrx.ipam.cilium.strategies.pool:check_drift",
        basis="cidrx.ipam.cilium.strategies.pool:read_basis",
        options=frozenset({"cidr", "add_nodes", "pool_name"}),
        pool_name=POOL_NAME,
    ),
)
