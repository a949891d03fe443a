"""Address maps of Cilium's ranges (pure, from the snapshot's kube section), for the HTML map: each
cluster-pool entry or CiliumPodIPPool CIDR with the node CIDRs carved from it. Named by the package's `maps`
declaration; cidrx.ipam.netmap collects them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx.ipam.addresses import v4_network
from cidrx.ipam.cilium.analyze import node_cidrs_of, usable
from cidrx.ipam.cilium.model import CLUSTER_POOL, MULTI_POOL
from cidrx.model.netmap import Area, NetworkMap

if TYPE_CHECKING:
    from ipaddress import IPv4Network

    from cidrx.ipam.cilium.model import CiliumSection
    from cidrx.model.kube import KubeSection


def _map(
    kind: str, name: str, net: IPv4Network, mask: int, held: list[tuple[str, str]], kube: KubeSection, title: str
) -> NetworkMap:
    areas = []
    for node, text in held:
        cidr = v4_network(text)
        if cidr is None or not cidr.subnet_of(net):
            continue
        pods = kube.pods_per_node.get(node, 0) if kind == "cilium-cluster-pool" else None
        areas.append(
            Area(
                str(cidr),
                node,
                "block",
                cidr.num_addresses,
                used=None if pods is None else min(pods, cidr.num_addresses),
                exhausted=pods is not None and pods >= usable(cidr.prefixlen),
                detail=f"node CIDR {cidr} of {node}",
            )
        )
    areas.sort(key=lambda a: int(v4_network(a.cidr).network_address))  # type: ignore[union-attr]
    full = len(areas) >= node_cidrs_of(net, mask)
    return NetworkMap(kind, name, str(net), tuple(areas), title=title, exhausted=full)


def address_maps(section: CiliumSection | None, kube: KubeSection) -> list[NetworkMap]:
    """One map per cluster-pool entry (cluster-pool mode) or per CiliumPodIPPool CIDR (multi-pool mode)."""
    if section is None:
        return []
    out = []
    if section.config.mode == CLUSTER_POOL:
        mask = section.config.mask_size
        held = [(n.name, c) for n in section.nodes for c in n.v4_pod_cidrs]
        for text in section.config.cluster_pool:
            net = v4_network(text)
            if net is not None:
                title = f"Cilium cluster pool {net} (/{mask} per node)"
                out.append(_map("cilium-cluster-pool", "cluster-pool", net, mask, held, kube, title))
    elif section.config.mode == MULTI_POOL:
        for pool in section.ippools:
            held = [(n.name, c) for n in section.nodes for a in n.allocated if a.pool == pool.name for c in a.cidrs]
            for text in pool.cidrs:
                net = v4_network(text)
                if net is not None and pool.mask_size:
                    title = f"CiliumPodIPPool {pool.name} {net} (/{pool.mask_size} blocks)"
                    out.append(_map("cilium-pool", pool.name, net, pool.mask_size, held, kube, title))
    return out
