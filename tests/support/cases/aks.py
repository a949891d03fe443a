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
