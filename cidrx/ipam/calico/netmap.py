"""Address maps of Calico IPPools (pure, from the snapshot's kube section), for the HTML map: each pool with
its per-node blocks, and inside each block the single addresses worth seeing: leaked ones (held
for a pod that is gone: stale) and borrowed ones (used by a pod on another node than the block's). Named by the
package's `maps` declaration; cidrx.ipam.netmap collects them."""

from __future__ import annotations

from ipaddress import ip_address
from typing import TYPE_CHECKING

from cidrx.ipam.addresses import v4_network
from cidrx.model.netmap import Area, NetworkMap

if TYPE_CHECKING:
    from cidrx.ipam.calico.model import CalicoSection
    from cidrx.model.kube import KubeSection


def address_maps(section: CalicoSection | None, kube: KubeSection) -> list[NetworkMap]:
    """One map per IPv4 pool of `section` (the kube section's `calico`; None: none). `kube` gives the pods that
    decide which addresses are leaked (none are marked when the cluster was not reachable)."""
    if section is None:
        return []
    from cidrx.ipam.calico.analyze import block_ip, borrowed_ips, leaked_ips, pool_of
    from cidrx.ipam.liveness import PodsByKey

    pods = PodsByKey(kube.ipam_pods)
    leaked = {(leak.cidr, leak.ip): leak for leak in leaked_ips(section, pods)} if kube.available else {}
    borrowed = {(b.cidr, block_ip(b.cidr, o)): a for b, o, a in borrowed_ips(section)}

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
            singles = [
                (ip, "stale", leak.pod or leak.handle_id or "no pod", leak.why)
                for (c, ip), leak in leaked.items()
                if c == b.cidr
            ]
            singles += [
                (ip, "borrowed", attr.pod_ref or attr.node, f"borrowed by a pod on {attr.node}, not {b.host}")
                for (c, ip), attr in borrowed.items()
                if c == b.cidr and (c, ip) not in leaked
            ]
            for ip, role, name, why in sorted(singles, key=lambda t: int(ip_address(t[0]))):
                areas.append(Area(f"{ip}/32", name, role, 1, used=1, detail=why))
        title = f"Calico IPPool {pool.name} {net} (/{pool.block_size} blocks)"
        blocks_total = 1 << max(0, pool.block_size - net.prefixlen)
        full = len(areas) >= blocks_total
        out.append(NetworkMap("calico-pool", pool.name, str(net), tuple(areas), title=title, exhausted=full))
    return out
