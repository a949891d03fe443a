"""Conformance case of EKS's `control-plane-subnets`: the incident's cluster lists its full node subnets, and
each of its zones has another subnet with room (tests/support/estates/eks_variants.py `build_control_plane_room`),
in moto behind the UpdateClusterConfig fake (tests/support/fakes/eks_cluster_config.py)."""

from __future__ import annotations

from typing import Any

from tests.support.cases import Case, Interrupt, PlanDoc
from tests.support.cases.live import eks
from tests.support.estates.eks import REGION
from tests.support.estates.eks_variants import build_control_plane_room
from tests.support.fakes.eks_cluster_config import FakeClusterConfig


def delete_added_subnet(live: Any, plan: PlanDoc) -> list[str]:
    """Someone deletes a subnet the plan would add to the cluster."""
    sid = sorted(plan.basis["added"])[0]
    live.estate.ec2.delete_subnet(SubnetId=sid)
    return [f"subnet {sid}", "gone or changed"]


CASE = Case(
    "control-plane-subnets",
    estate=eks(build_control_plane_room, wrap_moto=lambda stub: FakeClusterConfig(REGION).wrap(stub)),
    stale=delete_added_subnet,
    interrupt=Interrupt("aws", "UpdateClusterConfig"),
)
