"""Conformance case of EKS's `subnet-discovery`: VPC CNI v1.18 with subnet discovery switched off, in moto."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases.eks_edits import subnet_in_planned_space
from tests.support.cases.live import eks
from tests.support.estates.eks_discovery import build_discovery_off

CASE = Case(
    "subnet-discovery",
    estate=eks(build_discovery_off),
    stale=subnet_in_planned_space,
    interrupt=Interrupt("aws", "CreateSubnet"),
)
