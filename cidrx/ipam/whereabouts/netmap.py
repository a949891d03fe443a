"""Address maps of Whereabouts pools (pure, from the snapshot's kube section), for the HTML map: each pool
with every reservation, the stale ones (their pod is gone) marked, and the network and broadcast addresses
Whereabouts never hands out. Named by the package's `maps` declaration; cidrx.ipam.netmap collects them."""

from __future__ import annotations

from ipaddress import IPv4Network, ip_address
from typing import TYPE_CHECKING

from cidrx.ipam.addresses import v4_network
from cidrx.model.netmap import Area, NetworkMap

if TYPE_CHECKING:
    from cidrx.ipam.whereabouts.model import WhereaboutsSection
    from cidrx.model.kube import KubeSection


def address_maps(section: WhereaboutsSection | None, kube: KubeSection) -> list[NetworkMap]:
    """One map per IPv4 pool of `section` (the kube section's `whereabouts`; None: none). `kube` gives the
    pods that decide which reservations are stale (none are marked when the cluster was not reachable)."""
    if section is None:
        return []
    from cidrx.ipam.liveness import PodsByKey
    from cidrx.ipam.whereabouts.analyze import pool_space, stale_allocations

    pods = PodsByKey(kube.ipam_pods)
    stale = {(id(s.pool), s.allocation.ip) for s in stale_allocations(section, pods)} if kube.available else set()
    out = []
    for pool in section.pools:
        net = v4_network(pool.range)
        if net is None:
            continue
        areas = []
        # Whereabouts never hands out the range's network and broadcast addresses: "Valid IPs are contained
        # within the ipnet, excluding the network and broadcast address" (k8snetworkplumbingwg/whereabouts
        # pkg/allocate/allocate.go, commit 3a262bd0cd873e13d9b379342f8251b852a89b8f).
        if net.prefixlen < 31:
            for edge, what in ((net.network_address, "network"), (net.broadcast_address, "broadcast")):
                areas.append(Area(f"{edge}/32", f"{edge} ({what})", "reserved", 1, used=0, reserved=1))
        for a in sorted((a for a in pool.allocations if a.ip), key=lambda a: int(ip_address(a.ip))):
            gone = (id(pool), a.ip) in stale
            areas.append(
                Area(
                    f"{a.ip}/32",
                    a.podref or "no pod",
                    "stale" if gone else "address",
                    1,
                    used=1,
                    detail="reserved for a pod that is gone" if gone else "reserved for a running pod",
                )
            )
        areas.sort(key=lambda area: int(IPv4Network(area.cidr).network_address))
        title = f"Whereabouts pool {pool.namespace}/{pool.name} {net}"
        # Full when every address the NetworkAttachmentDefinitions let it hand out is held (range_start /
        # range_end / exclude narrow a pool below its CIDR).
        space = pool_space(pool, section.ranges)
        held = {a.ip for a in pool.allocations if a.ip and space.contains(a.ip)}
        full = space.size > 0 and len(held) >= space.size
        out.append(NetworkMap("whereabouts-pool", pool.key, str(net), tuple(areas), title=title, exhausted=full))
    return out
