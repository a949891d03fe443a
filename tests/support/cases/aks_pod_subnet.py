"""Conformance case of AKS's `aks-pod-subnet`: the dynamic pod-subnet cluster whose pod subnet is exhausted, in
the loopback ARM fake."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases.aks_edits import overlapping_subnet
from tests.support.cases.live import aks

CASE = Case(
    "aks-pod-subnet",
    estate=aks("pod-subnet"),
    stale=overlapping_subnet,
    interrupt=Interrupt("arm", "PUT", "/subnets/"),
)
