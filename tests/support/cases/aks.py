"""Pure AKS cases: the bundled example snapshots, and variants of them (a VNet with no room left), for analyze
and plan tests that need no fake."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cidrx.model.snapshot import Snapshot, load_snapshot, seal, with_sections

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def node_subnet() -> Snapshot:
    return load_snapshot(EXAMPLES / "aks-cni-node-subnet.snapshot.json")


def pod_subnet() -> Snapshot:
    return load_snapshot(EXAMPLES / "aks-dynamic-pod-subnet.snapshot.json")


def overlay() -> Snapshot:
    return load_snapshot(EXAMPLES / "aks-overlay-pod-cidr.snapshot.json")


def full_vnet(snap: Snapshot | None = None, space: str = "10.10.0.0/23") -> Snapshot:
    """A cluster (default: the node-subnet one) with its VNet shrunk to `space` (subnets outside it gone): no
    room is left for the new subnet, so a plan adds an address space first."""
    from ipaddress import IPv4Network

    snap = snap or node_subnet()
    aks = snap.aks
    assert aks is not None and aks.vnet is not None
    subnets = tuple(s for s in aks.vnet.subnets if IPv4Network(s.address_prefix).subnet_of(IPv4Network(space)))
    vnet = dataclasses.replace(aks.vnet, address_prefixes=(space,), subnets=subnets)
    return seal(with_sections(snap, aks=dataclasses.replace(aks, vnet=vnet)))


def pod_subnet_expanded(mode: str = "User") -> Snapshot:
    """The pod-subnet cluster after an `aks-pod-subnet` plan was applied: a new pod subnet with room and a copy of
    pool `workers` (mode `mode`) on it carrying the plan's tag; `workers`' nodes still take pod addresses from the
    full pod subnet."""
    from cidrx.providers.aks.facts.pool_copy import PLAN_TAG
    from cidrx.providers.aks.model import Subnet

    snap = pod_subnet()
    aks = snap.aks
    assert aks is not None and aks.vnet is not None
    old = next(p for p in aks.agent_pools if p.name == "workers")
    pods = next(s for s in aks.vnet.subnets if s.id.lower() == old.pod_subnet_id.lower())
    new = Subnet(pods.id.rsplit("/", 1)[0] + "/pods2", "pods2", "10.30.8.0/22", delegations=pods.delegations)
    copy = dataclasses.replace(
        old, name="workers2", count=1, pod_subnet_id=new.id, tags={PLAN_TAG: "0123456789abcdef"}, etag=""
    )
    pools = tuple(dataclasses.replace(p, mode=mode) if p.name == "workers" else p for p in aks.agent_pools)
    vnet = dataclasses.replace(aks.vnet, subnets=(*aks.vnet.subnets, new))
    return seal(with_sections(snap, aks=dataclasses.replace(aks, vnet=vnet, agent_pools=(*pools, copy))))
