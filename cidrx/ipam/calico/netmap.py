"""Address maps of Calico IPPools (pure, from the snapshot's kube section), for the HTML map: each pool with
its per-node blocks. Named by the package's `maps` declaration; cidrx.ipam.netmap collects them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx.ipam.addresses import v4_network
from cidrx.model.netmap import Area, NetworkMap

if TYPE_CHECKING:
    from cidrx.ipam.calico.model import CalicoSection
    from cidrx.model.kube import KubeSection


def address_maps(section: CalicoSection | None, kube: KubeSection) -> list[NetworkMap]:
    """One map per IPv4 pool of `section` (the kube section's `calico`; None: none); `kube` is not read."""
    if section is None:
        return []
    from cidrx.ipam.calico.analyze import pool_of

    out = []
    for pool in section.pools:
        net = v4_network(pool.cidr)
        if net is None:
            continue
        areas = []
        blocks = [(bnet, b) for b in section.blocks if (bnet := v4_network(b.cidr)) is not None]
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
