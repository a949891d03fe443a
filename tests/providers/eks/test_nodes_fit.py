"""Nodes that still fit, per subnet, zone and node group: worked out by hand from the example's m5.large
(3 ENIs x 10 IPv4 each), whose new node takes 1 primary address + 9 warm pod addresses (WARM_ENI_TARGET=1)."""

from __future__ import annotations

import pytest

from cidrx.model.findings import Capacity, Diagnosis
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.analyze.diagnosis import analyze
from tests.support.cases import eks as cases
from tests.support.cases.eks import AZ_A, AZ_B, NODEGROUP, PRIVATE_A, PUBLIC_A, PUBLIC_B


def row(d: Diagnosis, kind: str, name_start: str) -> Capacity:
    return next(c for c in d.capacity if c.kind == kind and c.name.startswith(name_start))


@pytest.mark.parametrize(
    ("snapshot", "subnet_fit", "zone_fit", "group_fit"),
    [
        (cases.example(), 0, 0, 0),  # both node subnets are full
        (cases.nearly_full(free=25), 2, 2, 4),  # 25 // 10 per subnet, one subnet per zone
        (cases.roomy(), 22, 22, 44),  # /24: 224 free // 10
        (cases.prefix_delegation(cases.roomy()), 13, 13, 26),  # 224 // 17, and 13 free /28s
        # Custom networking: a node takes 1 address from its subnet, the warm pool from the zone's ENIConfig
        # subnet (26 free // 9 = 2), so the zone fits the scarcer side.
        (cases.custom_networking(cases.roomy()), 224, 2, 4),
    ],
    ids=["full", "nearly-full", "roomy", "prefix-delegation", "custom-networking"],
)
def test_nodes_fit_by_subnet_zone_and_group(snapshot: Snapshot, subnet_fit: int, zone_fit: int, group_fit: int) -> None:
    d = analyze(snapshot)
    assert row(d, "subnet", PUBLIC_A).nodes_fit == subnet_fit
    assert row(d, "subnet", PUBLIC_B).nodes_fit == subnet_fit
    assert row(d, "zone", AZ_A).nodes_fit == zone_fit
    assert row(d, "zone", AZ_B).nodes_fit == zone_fit
    assert row(d, "nodegroup", NODEGROUP).nodes_fit == group_fit


def test_subnets_nodes_never_use_have_no_nodes_fit() -> None:
    d = analyze(cases.roomy())
    assert row(d, "subnet", PRIVATE_A).nodes_fit is None
    assert all(c.nodes_fit is None for c in d.capacity if c.kind.startswith("vpc"))
