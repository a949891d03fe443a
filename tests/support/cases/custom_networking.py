"""Conformance case of EKS's `custom-networking`: the EKS incident (full node subnets) in moto, its cluster in
the fake Kubernetes API server."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases.eks_edits import associate_overlapping_cidr
from tests.support.cases.live import eks
from tests.support.estates.eks import build_incident

CASE = Case(
    "custom-networking",
    estate=eks(build_incident),
    stale=associate_overlapping_cidr,
    interrupt=Interrupt("aws", "CreateSubnet"),
)
