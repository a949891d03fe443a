"""Conformance case of EKS's `prefix-delegation`: node subnets too fragmented for /28 prefixes, in moto."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases.eks_edits import reserve_in_planned_block
from tests.support.cases.live import eks
from tests.support.estates.eks_cluster import build_prefix_world

CASE = Case(
    "prefix-delegation",
    estate=eks(build_prefix_world),
    stale=reserve_in_planned_block,
    interrupt=Interrupt("aws", "CreateSubnetCidrReservation"),
)
