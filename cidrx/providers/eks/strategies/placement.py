"""Where a plan puts what it adds: the availability zones the cluster uses, the route table a new subnet in a
zone copies (never the main table by accident), and the managed node group a new one is modelled on.
"""

from __future__ import annotations

from cidrx.errors import InvalidInput
from cidrx.model.plan import DIGEST_TAG
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.facts.subnets import node_subnet_ids
from cidrx.providers.eks.model import EksSection, Nodegroup


def template_nodegroup(eks: EksSection, name: str | None) -> Nodegroup:
    if not eks.nodegroups:
        raise InvalidInput(
            f"cluster {eks.cluster.name} has no managed node groups to copy"
            + (f" (--template-nodegroup {name})" if name else "")
            + ", and no self-managed group, Karpenter node class or Auto Mode was found: add nodes by hand"
        )
    if name:
        for ng in eks.nodegroups:
            if ng.name == name:
                return ng
        known = ", ".join(ng.name for ng in eks.nodegroups)
        raise InvalidInput(f"node group {name!r} not found in cluster {eks.cluster.name} (known: {known})")
    # Prefer groups cidrx did not make, so re-planning after an apply copies the user's own group.
    return max(eks.nodegroups, key=lambda ng: (DIGEST_TAG not in ng.tags, ng.desired_size, ng.max_size, ng.name))


def zones_in_use(eks: EksSection, snapshot: Snapshot) -> list[str]:
    subnets = {s.subnet_id: s for s in eks.subnets}
    zones = {subnets[sid].az for sid in node_subnet_ids(eks) if sid in subnets}
    zones |= {n.zone for n in snapshot.kube.nodes if n.zone}
    if not zones:
        raise InvalidInput(f"cannot tell which availability zones cluster {eks.cluster.name} uses")
    return sorted(zones)


def route_table_for(eks: EksSection, az: str, placed: str | None) -> tuple[str, str]:
    """Route table for the new pod subnet in `az`: that of the subnet the new nodes live in, else of the
    current node subnet there (never the main table by accident), and the subnet it was copied from."""
    by_id = {s.subnet_id: s for s in eks.subnets}
    if placed and by_id[placed].route_table_id:
        return str(by_id[placed].route_table_id), placed
    node_ids = node_subnet_ids(eks)
    candidates = sorted((s for s in eks.subnets if s.az == az and s.subnet_id in node_ids), key=lambda s: s.subnet_id)
    if not candidates:
        candidates = sorted((s for s in eks.subnets if s.az == az and s.route_table_id), key=lambda s: s.subnet_id)
    for s in candidates:
        if s.route_table_id:
            return s.route_table_id, s.subnet_id
    raise InvalidInput(f"no subnet of the cluster in {az} has a route table to copy")
