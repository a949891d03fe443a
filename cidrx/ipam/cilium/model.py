"""Compact records of Cilium's IPAM state: the `cilium-config` settings, CiliumNodes and CiliumPodIPPools.

Why it exists: Cilium hands out pod addresses from its own ranges, not from `Node.spec.podCIDR`. In
cluster-pool mode cilium-operator carves the space-separated `cluster-pool-ipv4-cidr` list into per-node
CIDRs of `cluster-pool-ipv4-mask-size` and writes each into CiliumNode `spec.ipam.podCIDRs`; in multi-pool
mode nodes request addresses per CiliumPodIPPool (`spec.ipam.pools.requested`) and the operator answers with
CIDRs of the pool (`spec.ipam.pools.allocated`). These frozen records keep only what analysis and planning
read (sources in docs/cloud-facts.md, "Cilium").
"""

from __future__ import annotations

from dataclasses import dataclass

CONFIG_NAMESPACE, CONFIG_NAME = "kube-system", "cilium-config"
OPERATOR_NAME = "cilium-operator"  # the Deployment the Helm chart installs beside cilium-config
# cilium-config keys (pkg/option/config.go, pkg/ipam/option/option.go) and the operator's defaults when a key is
# absent (Helm chart values.yaml: clusterPoolIPv4PodCIDRList ["10.0.0.0/8"], clusterPoolIPv4MaskSize 24).
MODE_KEY = "ipam"
CIDR_KEY = "cluster-pool-ipv4-cidr"
MASK_KEY = "cluster-pool-ipv4-mask-size"
DEFAULT_MODE = "cluster-pool"
DEFAULT_CLUSTER_POOL = ("10.0.0.0/8",)
DEFAULT_MASK = 24
CLUSTER_POOL, MULTI_POOL, KUBERNETES = "cluster-pool", "multi-pool", "kubernetes"
# Modes whose addresses come from the cloud network (ENIs, Azure interfaces, Alibaba Cloud ENIs).
CLOUD_MODES = {"eni": "eks", "azure": "aks", "alibabacloud": ""}
# The Helm value that writes `cluster-pool-ipv4-cidr` (joined with " " by templates/cilium-configmap.yaml).
HELM_VALUE = "ipam.operator.clusterPoolIPv4PodCIDRList"
POOL_GROUP = "cilium.io"
POOL_VERSIONS = ("v2", "v2alpha1")  # CiliumPodIPPool: v2 where served (items {cidr}), else v2alpha1 (strings)


@dataclass(frozen=True)
class CiliumConfig:
    """What `cilium-config` says about IPAM. `cluster_pool_raw` is the key's value exactly as written
    (None: absent, the operator's default applies): apply appends to it and never rewrites the rest."""

    mode: str
    cluster_pool: tuple[str, ...] = DEFAULT_CLUSTER_POOL
    mask_size: int = DEFAULT_MASK
    cluster_pool_raw: str | None = None
    resource_version: str = ""
    plan_label: str = ""  # metadata.annotations["cidrx.io/plan"]: the plan that appended to the list


@dataclass(frozen=True)
class PoolAllocation:
    pool: str
    cidrs: tuple[str, ...] = ()


@dataclass(frozen=True)
class PoolRequest:
    pool: str
    ipv4_addrs: int = 0


@dataclass(frozen=True)
class CiliumNode:
    """A CiliumNode (cilium.io/v2): its per-node CIDRs (cluster-pool), its multi-pool requests and
    allocations, and the error cilium-operator recorded for it (`status.ipam.operator-status.error`)."""

    name: str
    pod_cidrs: tuple[str, ...] = ()
    operator_error: str = ""
    requested: tuple[PoolRequest, ...] = ()
    allocated: tuple[PoolAllocation, ...] = ()

    @property
    def v4_pod_cidrs(self) -> tuple[str, ...]:
        return tuple(c for c in self.pod_cidrs if ":" not in c)


@dataclass(frozen=True)
class PodIPPool:
    """A CiliumPodIPPool's IPv4 side (multi-pool mode)."""

    name: str
    cidrs: tuple[str, ...] = ()
    mask_size: int | None = None
    resource_version: str = ""
    plan_label: str = ""  # metadata.annotations["cidrx.io/plan"]: the plan that last added a CIDR


@dataclass(frozen=True)
class CiliumSection:
    """Cilium as read from the cluster. `pool_api` is the CiliumPodIPPool apiVersion read ("" when none is
    served); `service_cidrs` are the ServiceCIDR objects' ranges and `kubernetes_service_ip` the ClusterIP of
    the `kubernetes` Service (the first address of the primary Service range); `operator` is
    "namespace/name" of the cilium-operator Deployment ("" when not found)."""

    config: CiliumConfig
    nodes: tuple[CiliumNode, ...] = ()
    ippools: tuple[PodIPPool, ...] = ()
    pool_api: str = ""
    service_cidrs: tuple[str, ...] = ()
    kubernetes_service_ip: str = ""
    operator: str = ""

    @property
    def pools(self) -> tuple[str, ...]:
        """The names of the ranges Cilium hands addresses out of (what `cidrx expand` can extend): the cluster
        pool in cluster-pool mode, the CiliumPodIPPools in multi-pool mode."""
        if self.config.mode == CLUSTER_POOL:
            return ("cluster-pool",)
        if self.config.mode == MULTI_POOL:
            return tuple(p.name for p in self.ippools)
        return ()

    def pool(self, name: str) -> PodIPPool | None:
        return next((p for p in self.ippools if p.name == name), None)
