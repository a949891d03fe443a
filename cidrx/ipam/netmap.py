"""Address maps of in-cluster IPAM pools (pure, from the snapshot's kube section): a Calico IPPool with
its per-node blocks, a Whereabouts pool with each reservation (stale ones marked), for the HTML map."""

from __future__ import annotations

from ipaddress import IPv4Network, ip_address

from cidrx.kube.model import KubeSection
from cidrx.model.netmap import Area, NetworkMap


def _v4(text: str) -> IPv4Network | None:
    try:
        net = IPv4Network(text, strict=False)
    except ValueError:
        return None
    return net


def calico_maps(kube: KubeSection) -> list[NetworkMap]:
    if kube.calico is None:
        return []
    from cidrx.ipam.calico.analyze import pool_of

    out = []
    for pool in kube.calico.pools:
        net = _v4(pool.cidr)
        if net is None:
            continue
        areas = []
        blocks = [(bnet, b) for b in kube.calico.blocks if (bnet := _v4(b.cidr)) is not None]
        for bnet, b in sorted(blocks, key=lambda t: int(t[0].network_address)):
            if pool_of(b, [pool]) is None:
                continue
            areas.append(
                Area(
                    str(bnet),
                    b.host or "no node",
                    "block",
                    bnet.num_addresses,
                    used=b.used,
                    exhausted=b.used >= bnet.num_addresses,
                    detail=f"block {bnet}, affinity {b.affinity or 'none'}",
                )
            )
        title = f"Calico IPPool {pool.name} {net} (/{pool.block_size} blocks)"
        blocks_total = 1 << max(0, pool.block_size - net.prefixlen)
        full = len(areas) >= blocks_total
        out.append(NetworkMap("calico-pool", pool.name, str(net), tuple(areas), title=title, exhausted=full))
    return out


def whereabouts_maps(kube: KubeSection) -> list[NetworkMap]:
    if kube.whereabouts is None:
        return []
    from cidrx.ipam.whereabouts.analyze import pool_space, stale_allocations

    pods = {p.key: p for p in kube.ipam_pods}
    stale = (
        {(id(s.pool), s.allocation.ip) for s in stale_allocations(kube.whereabouts, pods)} if kube.available else set()
    )
    out = []
    for pool in kube.whereabouts.pools:
        net = _v4(pool.range)
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
        space = pool_space(pool, kube.whereabouts.ranges)
        held = {a.ip for a in pool.allocations if a.ip and space.contains(a.ip)}
        full = space.size > 0 and len(held) >= space.size
        out.append(NetworkMap("whereabouts-pool", pool.key, str(net), tuple(areas), title=title, exhausted=full))
    return out


def address_maps(kube: KubeSection) -> tuple[NetworkMap, ...]:
    return (*calico_maps(kube), *whereabouts_maps(kube))
