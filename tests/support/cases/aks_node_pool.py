"""Conformance case of AKS's `aks-node-pool`: the Azure CNI node-subnet cluster with a full subnet, in the
loopback ARM fake."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases.aks_edits import overlapping_subnet
from tests.support.cases.live import aks

CASE = Case(
    "aks-node-pool",
    estate=aks("node-subnet"),
    stale=overlapping_subnet,
    interrupt=Interrupt("arm", "PUT", "/subnets/"),
)
