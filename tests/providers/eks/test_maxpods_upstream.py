"""Upstream's max-pods and warm-pool tables replayed through cidrx (tests/support/cases/eks_maxpods_upstream.py).

Instance figures come from moto's own DescribeInstanceTypes data, read with the real EC2 client through
cidrx's adapter and collector, so the replay covers what a snapshot holds (default network card included).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from cidrx.providers.eks.api import EksApi
from cidrx.providers.eks.collect.vpc import instance_type_from
from cidrx.providers.eks.facts.cni import (
    CniConfig,
    max_pods,
    max_pods_allowed,
    node_ips_for_new_node,
    pod_ips_for_new_node,
    warm_pool,
)
from cidrx.providers.eks.model import InstanceType
from tests.support.cases import eks_maxpods_upstream as up

REGION = "us-east-1"
EC2_BATCH = 100  # DescribeInstanceTypes takes at most 100 InstanceTypes per call


@pytest.fixture(scope="module")
def types() -> Iterator[dict[str, InstanceType]]:
    with mock_aws():
        import boto3

        api = EksApi(REGION, session=boto3.Session(region_name=REGION))
        names = sorted(set(up.ENI_MAX_PODS) | {c.instance_type for c in up.CALCULATOR} | {"t3.small", "p3dn.24xlarge"})
        found: list[Any] = []
        for i in range(0, len(names), EC2_BATCH):
            found += api.describe_instance_types(names[i : i + EC2_BATCH])
        yield {t.name: t for t in map(instance_type_from, found)}


def cni(**kw: Any) -> CniConfig:
    base: dict[str, Any] = {
        "source": "aws-node",
        "custom_networking": False,
        "label_def": "",
        "prefix_delegation": False,
        "warm_eni_target": 1,
        "warm_ip_target": None,
        "minimum_ip_target": None,
        "warm_prefix_target": 0,
    }
    return CniConfig(**{**base, **kw})


def test_every_eni_max_pods_row_moto_knows(types: dict[str, InstanceType]) -> None:
    checked = {n: v for n, v in up.ENI_MAX_PODS.items() if n in types}
    assert len(checked) == 1368  # every row whose type moto knows (the other 23 rows name types moto lacks)
    got = {n: max_pods_allowed(types[n], cni()) for n in checked}
    differ = {n for n in checked if got[n] != checked[n]}
    assert differ == set(up.SPLIT_SINCE)  # 1364 of 1368 rows agree
    for name, (figure, all_cards) in up.SPLIT_SINCE.items():
        t = types[name]
        assert (t.max_enis, figure) == (all_cards, all_cards * (t.ips_per_eni - 1) + 2)
        assert got[name] == t.pod_enis * (t.ips_per_eni - 1) + 2 < figure


@pytest.mark.parametrize(
    "case",
    up.CALCULATOR,
    ids=lambda c: f"{c.instance_type}-pd{c.prefix_delegation:d}-cn{c.custom_networking:d}-max{c.max_eni}",
)
def test_calculator_cases(types: dict[str, InstanceType], case: up.CalculatorCase) -> None:
    c = cni(prefix_delegation=case.prefix_delegation, custom_networking=case.custom_networking, max_eni=case.max_eni)
    t = types[case.instance_type]
    assert (max_pods(t, c), max_pods_allowed(t, c)) == (case.recommended, case.allowed)


def _replay(row: up.WarmRow, t: InstanceType, prefix: bool) -> dict[str, int]:
    c = cni(
        prefix_delegation=prefix,
        warm_eni_target=row.warm if (row.warm is not None and not prefix) else 1,
        warm_prefix_target=row.warm if (row.warm is not None and prefix) else 0,
        warm_ip_target=row.warm_ip,
        minimum_ip_target=row.minimum_ip,
    )
    pool = warm_pool(t, c, row.pods)
    return {"enis": pool.enis, "held": sum(pool.slots), "unused": pool.pod_addresses - row.pods}


@pytest.mark.parametrize(
    ("row", "prefix"), [(r, False) for r in up.IP_TARGET_ROWS] + [(r, True) for r in up.PREFIX_TARGET_ROWS]
)
def test_warm_target_tables(types: dict[str, InstanceType], row: up.WarmRow, prefix: bool) -> None:
    got = _replay(row, types[row.instance_type], prefix)
    want = {"enis": row.enis, "held": row.held, "unused": row.unused}
    assert {k for k in want if got[k] != want[k]} == set(row.differs), row.why


def test_warm_table_counts() -> None:
    rows = up.IP_TARGET_ROWS + up.PREFIX_TARGET_ROWS
    assert (len(rows), sum(1 for r in rows if not r.differs)) == (36, 32)
    assert sum(3 - len(r.differs) for r in rows) == 103  # of 108 figures


def test_a_new_t3_small_takes_each_enis_primary_address(types: dict[str, InstanceType]) -> None:
    """eni-and-ip-target.md: WARM_IP_TARGET=2, MINIMUM_IP_TARGET=5, 0 pods -> 2 ENIs holding 5 secondary IPs."""
    t, c = types["t3.small"], cni(warm_ip_target=2, minimum_ip_target=5)
    assert node_ips_for_new_node(t, c) == 7  # 2 ENI primary addresses (one is the node's) + 5
    # Custom networking: the primary ENI holds no pods; the ENIConfig subnet gives 2 ENIs + 5 addresses.
    cn = cni(warm_ip_target=2, minimum_ip_target=5, custom_networking=True)
    assert (node_ips_for_new_node(t, cn), pod_ips_for_new_node(t, cn)) == (1, 7)
    # WARM_ENI_TARGET=1 (default) under custom networking: one secondary ENI full of addresses, plus its own.
    assert pod_ips_for_new_node(t, cni(custom_networking=True)) == 1 + 3


def test_max_eni_limits_the_warm_pool_and_max_pods(types: dict[str, InstanceType]) -> None:
    t = types["m5.large"]
    assert (max_pods(t, cni()), max_pods(t, cni(max_eni=2))) == (29, 20)
    assert warm_pool(t, cni(max_eni=1), pods=9).enis == 1  # a spare ENI would exceed MAX_ENI
    assert warm_pool(t, cni(), pods=9).enis == 2


def test_prefix_delegation_on_xen_falls_back_to_secondary_ips(types: dict[str, InstanceType]) -> None:
    t = types["m4.large"]
    pool = warm_pool(t, cni(prefix_delegation=True, warm_prefix_target=1))
    assert (pool.prefix_delegation, pool.pod_addresses) == (False, 9)


# --- the same rules where a snapshot is read -------------------------------------------------------------------


def test_the_default_card_is_found_by_its_index() -> None:
    """DescribeInstanceTypes' NetworkInfo (EC2 API reference, NetworkInfo / NetworkCardInfo): the default card is
    the one whose NetworkCardIndex is DefaultNetworkCardIndex, as nodeadm's GetInstanceInfo picks it."""
    d = {
        "InstanceType": "x.big",
        "VCpuInfo": {"DefaultVCpus": 96},
        "Hypervisor": "nitro",
        "NetworkInfo": {
            "MaximumNetworkInterfaces": 12,
            "Ipv4AddressesPerInterface": 50,
            "DefaultNetworkCardIndex": 1,
            "NetworkCards": [
                {"NetworkCardIndex": 1, "MaximumNetworkInterfaces": 4},
                {"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 8},
            ],
        },
    }
    t = instance_type_from(d)
    assert (t.max_enis, t.pod_enis, max_pods_allowed(t, cni())) == (12, 4, 4 * 49 + 2)
    single = instance_type_from({**d, "NetworkInfo": {**d["NetworkInfo"], "NetworkCards": [
        {"NetworkCardIndex": 1, "MaximumNetworkInterfaces": 12}]}})  # fmt: skip
    assert single.default_card_enis is None  # single card: the snapshot stays as it was


def test_karpenter_reserved_enis_and_max_eni_lower_the_headroom() -> None:
    import dataclasses

    from cidrx.providers.eks.facts import discovery
    from cidrx.providers.eks.model import KarpenterController, NodePool, NodeProvisioners
    from tests.support.cases import eks as cases

    snap = cases.subnet_discovery(enis=1)  # m5.large nodes (3 ENIs), one attached each
    c = cni()
    state = discovery.discovery_state(cases.eks_of(snap), snap.kube, c)
    assert {h.free_slots for h in discovery.node_headroom(cases.eks_of(snap), snap.kube, state)} == {2}
    capped = discovery.discovery_state(cases.eks_of(snap), snap.kube, cni(max_eni=2))
    assert {h.free_slots for h in discovery.node_headroom(cases.eks_of(snap), snap.kube, capped)} == {1}
    karpenter = NodeProvisioners(
        node_pools=(NodePool("default", "default", "EC2NodeClass"),),
        karpenter=KarpenterController("karpenter", "karpenter", "controller", reserved_enis=1),
    )
    nodes = tuple(dataclasses.replace(n, pool="default") for n in snap.kube.nodes)
    snap = cases.with_kube(cases.with_eks(snap, provisioners=karpenter), nodes=nodes)
    state = discovery.discovery_state(cases.eks_of(snap), snap.kube, c)
    assert {h.free_slots for h in discovery.node_headroom(cases.eks_of(snap), snap.kube, state)} == {1}
