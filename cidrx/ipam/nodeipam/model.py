"""Kubernetes node IPAM, model: the controller-manager settings its section of the snapshot holds."""

from __future__ import annotations

from dataclasses import dataclass

from cidrx.model.validation import IpCidr


@dataclass(frozen=True)
class NodeIpamConfig:
    """How kube-controller-manager hands out node podCIDRs (`--allocate-node-cidrs`), where known.

    `cluster_cidrs`: `--cluster-cidr`, one per IP family; `node_mask_v4`: the IPv4 per-node prefix length;
    `source`: where cidrx read it (the static pod or the kubeadm-config ConfigMap).
    """

    cluster_cidrs: tuple[IpCidr, ...]
    node_mask_v4: int | None
    source: str
    allocate_node_cidrs: bool = True
