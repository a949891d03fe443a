"""The AKS address map: for each address space of the cluster's VNet, every subnet in it (the cluster's node
and pod subnets with their use, the others as taken), and the cluster's own ranges when they fall inside it
(pure, from a snapshot). The room left in a space is where `cidrx expand` puts a new subnet, which is what the
unallocated row and the HTML map show.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from cidrx.model.findings import Capacity
from cidrx.model.netmap import Area, NetworkMap, unallocated_capacity
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.facts.space import occupied, vnet_spaces
from cidrx.providers.aks.facts.subnets import AZURE_RESERVED_PER_SUBNET, subnet_uses

KIND = "vnet-address-space"


def address_maps(snapshot: Snapshot) -> tuple[NetworkMap, ...]:
    aks = snapshot.aks
    if aks is None or aks.vnet is None:
        return ()
    uses = {u.subnet.id.lower(): u for u in subnet_uses(aks)}
    out = []
    for space in vnet_spaces(aks):
        areas: list[Area] = []
        seen: set[str] = set()
        for net, where in occupied(aks):
            if not net.subnet_of(space) or str(net) in seen:
                continue
            seen.add(str(net))
            subnet = next(
                (s for s in aks.vnet.subnets if s.address_prefix and IPv4Network(s.address_prefix) == net), None
            )
            use = uses.get(subnet.id.lower()) if subnet is not None else None
            if subnet is not None and use is not None:
                areas.append(
                    Area(
                        str(net),
                        where,
                        use.role,
                        net.num_addresses,
                        used=use.used,
                        reserved=AZURE_RESERVED_PER_SUBNET,
                        exhausted=use.free < use.per_node,
                        detail=f"{use.mode}; pools {', '.join(p.name for p in use.pools)}",
                    )
                )
            elif subnet is not None:
                areas.append(
                    Area(
                        str(net),
                        where,
                        "subnet",
                        net.num_addresses,
                        used=subnet.ip_configurations,
                        reserved=AZURE_RESERVED_PER_SUBNET,
                    )
                )
            else:
                role = "services" if "service" in where else "pods" if "pod CIDR" in where else "other"
                areas.append(Area(str(net), where, role, net.num_addresses))
        areas.sort(key=lambda a: (int(IPv4Network(a.cidr).network_address), -a.size))
        title = f"VNet {aks.vnet.name}: {space}"
        out.append(NetworkMap(KIND, aks.vnet.name, str(space), tuple(areas), title=title))
    return tuple(out)


def network_space_capacity(snapshot: Snapshot) -> list[Capacity]:
    """One unallocated row per address space of the VNet."""
    return [unallocated_capacity(m) for m in address_maps(snapshot)]
