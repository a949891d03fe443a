"""VPC CNI subnet discovery: the version rules ipamd follows, and what diagnosis makes of tagged subnets.

Pure: snapshots are the bundled incident changed by one thing (tests/support/cases/eks.py). The tag rules
replay aws/amazon-vpc-cni-k8s pkg/awsutils (awsutils.go `validTag` at v1.21.2, `isSubnetValidForENICreation`
and awsutils_test.go `TestValidSubnetTagsMatchingClusterName` at b52188387f2e2f10bf289ace929d6a63b176a4fa).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.findings import Diagnosis, Severity
from cidrx.model.kube import KubeSection
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, Plan
from cidrx.model.snapshot import Snapshot, load_snapshot, save_snapshot
from cidrx.providers.eks.analyze.diagnosis import analyze
from cidrx.providers.eks.facts import discovery
from cidrx.providers.eks.facts.cni import cni_config
from cidrx.providers.eks.model import Addon
from cidrx.providers.eks.provider import PROVIDER
from cidrx.providers.eks.strategies.default import default_strategy
from tests.support.cases import eks as cases
from tests.support.cases.eks import AZ_A, AZ_B, DISCOVERY_A, DISCOVERY_B, NODE_A, NODE_B, PUBLIC_A

check_drift = PROVIDER.check_drift  # the strategy's drift check, through the provider


def make_plan(snapshot: Snapshot, opts: PlanOptions | None = None, created_at: str = "") -> Plan:
    """The plan of `opts.strategy` (custom networking when none is given), as its strategy makes it."""
    opts = opts or PlanOptions()
    return PROVIDER.make_plan(snapshot, replace(opts, strategy=opts.strategy or "custom-networking"), created_at)


def ids(d: Diagnosis) -> list[str]:
    return [f.id for f in d.findings]


def state(version: str, cluster_name: str = "", env: str | None = None) -> discovery.DiscoveryState:
    return discovery.DiscoveryState(
        version=discovery.parse_version(version),
        version_from="test",
        env_value=env,
        custom_networking=False,
        cluster_name=cluster_name,
        max_eni=None,
        source="aws-node",
    )


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.18.1-eksbuild.1", (1, 18, 1)),
        ("v1.22.3-eksbuild.2", (1, 22, 3)),
        ("registry:5000/amazon-k8s-cni:v1.19.0@sha256:abc", (1, 19, 0)),
        ("amazon-k8s-cni:latest", None),
        ("", None),
    ],
)
def test_versions_come_from_image_tags_and_addon_versions(text: str, version: tuple[int, int, int] | None) -> None:
    assert discovery.parse_version(text) == version


# (tags, verdict at v1.18.1, v1.21.2, v1.22.0, v1.22.1, v1.23.1) with CLUSTER_NAME=my-cluster
TAG_TABLE = [
    ({}, (False, False, False, False, False)),
    ({"kubernetes.io/role/cni": "1"}, (True, True, True, True, True)),
    # v1.18-v1.21 count the key whatever its value; from v1.22 `0` excludes and "" is untagged
    ({"kubernetes.io/role/cni": "0"}, (True, True, False, False, False)),
    ({"kubernetes.io/role/cni": ""}, (True, True, False, False, False)),
    # the cluster restriction: v1.22.0 used the kubernetes.io/cluster/ prefix, v1.22.1+ cni.networking.k8s.aws/
    (
        {"kubernetes.io/role/cni": "1", "cni.networking.k8s.aws/cluster/other-cluster": "shared"},
        (True, True, True, False, False),
    ),
    (
        {"kubernetes.io/role/cni": "1", "kubernetes.io/cluster/other-cluster": "shared"},
        (True, True, False, True, True),
    ),
    (
        {
            "kubernetes.io/role/cni": "1",
            "cni.networking.k8s.aws/cluster/my-cluster": "shared",
            "cni.networking.k8s.aws/cluster/other-cluster": "shared",
        },
        (True, True, True, True, True),
    ),
]


@pytest.mark.parametrize(("tags", "verdicts"), TAG_TABLE)
def test_tag_rules_follow_the_installed_version(tags: dict[str, str], verdicts: tuple[bool, ...]) -> None:
    got = tuple(
        discovery.tag_verdict(tags, state(v, "my-cluster"))[0]
        for v in ("v1.18.1", "v1.21.2", "v1.22.0", "v1.22.1", "v1.23.1")
    )
    assert got == verdicts


@pytest.mark.parametrize(
    ("cluster_name", "tags", "want"),
    [
        ("", {"cni.networking.k8s.aws/cluster/some-cluster": "shared"}, True),
        ("my-cluster", {}, True),
        ("my-cluster", {"cni.networking.k8s.aws/cluster/my-cluster": "shared"}, True),
        ("my-cluster", {"cni.networking.k8s.aws/cluster/other-cluster": "shared"}, False),
    ],
)
def test_upstream_cluster_name_cases(cluster_name: str, tags: dict[str, str], want: bool) -> None:
    tagged = {"kubernetes.io/role/cni": "1", **tags}
    assert discovery.tag_verdict(tagged, state("v1.23.1", cluster_name))[0] is want


@pytest.mark.parametrize(
    ("value", "on"),
    [
        (None, True),
        ("true", True),
        ("1", True),
        ("T", True),
        ("false", False),
        ("0", False),
        ("F", False),
        ("no", True),
    ],
)
def test_enable_subnet_discovery_is_parsed_like_go_parse_bool(value: str | None, on: bool) -> None:
    assert state("v1.18.1", env=value).env_on is on


def test_the_running_image_wins_over_the_addon_version() -> None:
    snap = cases.managed_addon(cases.cni_version(cases.example(), "v1.19.0"), keep_aws_node=True)
    assert snap.eks is not None
    assert discovery.installed_version(snap.eks, snap.kube)[0] == (1, 19, 0)
    only_addon = cases.managed_addon()  # add-on v1.15.1, no aws-node in the snapshot
    assert only_addon.eks is not None
    assert discovery.installed_version(only_addon.eks, KubeSection(available=False))[0] == (1, 15, 1)


def test_an_image_without_a_version_tag_falls_back_to_aws_nodes_vpc_cni_version_env() -> None:
    import dataclasses

    from cidrx.model.kube import EnvVar

    snap = cases.managed_addon(cases.cni_version(cases.example(), "v1.19.0"), keep_aws_node=True)
    assert snap.eks is not None and snap.kube.aws_node is not None
    node = snap.kube.aws_node
    mirrored = dataclasses.replace(
        node,
        image="registry.internal/mirror/amazon-k8s-cni@sha256:" + "0" * 64,
        env=(*(v for v in node.env if v.name != "VPC_CNI_VERSION"), EnvVar("VPC_CNI_VERSION", "v1.20.3")),
    )
    kube = dataclasses.replace(snap.kube, aws_node=mirrored)
    assert discovery.installed_version(snap.eks, kube) == ((1, 20, 3), "aws-node env VPC_CNI_VERSION=v1.20.3")


def test_nodes_at_their_eni_limit_gain_nothing_from_tagged_subnets() -> None:
    d = analyze(cases.subnet_discovery(enis=3))  # m5.large: 3 ENIs at most, all attached
    hits = [f for f in d.findings if f.id == "EKS-SUBNET-DISCOVERY-NODES-AT-ENI-LIMIT"]
    assert sorted(f.subject for f in hits) == [AZ_A, AZ_B]
    assert all(f.severity is Severity.WARNING for f in hits)
    assert any(f"{NODE_A} (m5.large): 3 of 3 ENIs attached" in e for f in hits for e in f.evidence)
    tagged = {c.name.split()[0]: c for c in d.capacity if c.kind == "subnet" and "subnet discovery" in (c.note or "")}
    assert set(tagged) == {DISCOVERY_A, DISCOVERY_B}
    assert tagged[DISCOVERY_A].free == 248 and tagged[DISCOVERY_A].extra["pod_addresses_reachable"] == 0


def test_tagged_subnets_with_room_make_full_node_subnets_a_node_problem_only() -> None:
    plain = analyze(cases.subnet_discovery(version="v1.15.1", enis=1, free=3))
    assert ids(plain).count("EKS-SUBNET-EXHAUSTED") == 2  # without discovery a new node needs 10 addresses
    d = analyze(cases.subnet_discovery(enis=1, free=3))
    assert "EKS-SUBNET-EXHAUSTED" not in ids(d) and "EKS-AZ-EXHAUSTED" not in ids(d)
    assert "EKS-SUBNET-DISCOVERY-NODES-AT-ENI-LIMIT" not in ids(d)
    tagged = next(c for c in d.capacity if c.name.startswith(DISCOVERY_B))
    # one node with 2 free ENI slots of 9 secondary addresses each
    assert tagged.extra == {"nodes_with_free_eni_slots": 1.0, "pod_addresses_reachable": 18.0}
    full = analyze(cases.subnet_discovery(enis=1))  # node subnets at 0: new nodes still cannot launch
    exhausted = [f for f in full.findings if f.id == "EKS-SUBNET-EXHAUSTED"]
    assert exhausted and all("nodes subnet" in f.summary and "needs 1" in f.summary for f in exhausted)


def test_max_eni_lowers_the_limit() -> None:
    snap = cases.with_env(cases.subnet_discovery(enis=2), MAX_ENI="2")
    hits = [f for f in analyze(snap).findings if f.id == "EKS-SUBNET-DISCOVERY-NODES-AT-ENI-LIMIT"]
    assert len(hits) == 2 and "2 of 2 ENIs attached" in hits[0].evidence[0]


def test_discovery_turned_off_leaves_tagged_subnets_unused() -> None:
    d = analyze(cases.with_env(cases.subnet_discovery(enis=1), ENABLE_SUBNET_DISCOVERY="false"))
    off = next(f for f in d.findings if f.id == "EKS-SUBNET-DISCOVERY-OFF")
    assert off.severity is Severity.WARNING and "ENABLE_SUBNET_DISCOVERY=false" in off.summary
    assert ids(d).count("EKS-SUBNET-EXHAUSTED") == 2
    old = analyze(cases.subnet_discovery(version="v1.17.1"))
    assert next(f for f in old.findings if f.id == "EKS-SUBNET-DISCOVERY-OFF").severity is Severity.INFO


def test_tags_the_version_ignores_are_reported() -> None:
    empty = analyze(cases.subnet_discovery(version="v1.22.1", tags={"kubernetes.io/role/cni": ""}))
    hits = [f for f in empty.findings if f.id == "EKS-SUBNET-DISCOVERY-TAG-IGNORED"]
    assert len(hits) == 2 and "empty value" in hits[0].summary
    assert "EKS-SUBNET-DISCOVERY-NO-SUBNETS" in ids(empty)  # nothing usable, and the node subnets are full
    zero_old = analyze(cases.subnet_discovery(version="v1.21.2", tags={"kubernetes.io/role/cni": "0"}))
    assert any("uses it anyway" in f.summary for f in zero_old.findings)
    zero_new = analyze(cases.subnet_discovery(version="v1.22.1", tags={"kubernetes.io/role/cni": "0"}))
    assert not [f for f in zero_new.findings if f.id == "EKS-SUBNET-DISCOVERY-TAG-IGNORED"]  # obeyed as meant


def test_node_subnets_are_not_counted_twice_and_unknown_headroom_is_said() -> None:
    snap = cases.with_subnet(cases.subnet_discovery(), PUBLIC_A, tags={"kubernetes.io/role/cni": "1"})
    assert snap.eks is not None
    zones = discovery.by_zone(snap.eks, snap.kube, state("v1.18.1"), {PUBLIC_A, cases.PUBLIC_B})
    assert [s.subnet_id for z in zones for s in z.subnets] == [DISCOVERY_A, DISCOVERY_B]
    no_enis = cases.with_eks(cases.subnet_discovery(), instance_enis=())
    d = analyze(no_enis)
    assert "EKS-SUBNET-DISCOVERY-NODES-AT-ENI-LIMIT" not in ids(d)
    assert any("ENI headroom of the nodes unknown" in (c.note or "") for c in d.capacity)


def test_state_reads_cluster_name_and_env_from_aws_node() -> None:
    snap = cases.with_env(cases.subnet_discovery(), CLUSTER_NAME="demo-ip", ENABLE_SUBNET_DISCOVERY="true")
    assert snap.eks is not None
    s = discovery.discovery_state(snap.eks, snap.kube, cni_config(snap.eks, snap.kube))
    assert (s.cluster_name, s.env_value, s.active) == ("demo-ip", "true", True)
    assert NODE_B in {h.node for h in discovery.node_headroom(snap.eks, snap.kube, s)}


# --- the plan ---------------------------------------------------------------------------------------------


def plan_of(snap: Snapshot, **opts: Any) -> Plan:
    return make_plan(snap, PlanOptions(strategy="subnet-discovery", **opts), "2024-01-01T00:00:00Z")


def test_subnet_discovery_is_the_default_where_the_cni_supports_it() -> None:
    assert default_strategy(cases.subnet_discovery(), PlanOptions()) == "subnet-discovery"
    assert default_strategy(cases.example(), PlanOptions()) == "custom-networking"  # version unknown
    assert default_strategy(cases.cni_version(cases.example(), "v1.17.1"), PlanOptions()) == "custom-networking"
    cn = cases.custom_networking(cases.cni_version(cases.example(), "v1.19.0"))
    assert default_strategy(cn, PlanOptions()) == "custom-networking"
    asks_for_group = PlanOptions(pool_name="more")
    assert default_strategy(cases.subnet_discovery(), asks_for_group) == "custom-networking"


def test_plan_tags_and_routes_a_subnet_per_zone_in_free_vpc_space() -> None:
    plan = plan_of(cases.subnet_discovery(enis=1, free=3, tagged=False))
    assert [s.id for s in plan.steps] == [
        f"create-subnet-{AZ_A}",
        f"route-subnet-{AZ_A}",
        f"create-subnet-{AZ_B}",
        f"route-subnet-{AZ_B}",
    ]
    create = plan.steps[0]
    assert create.params["tags"]["kubernetes.io/role/cni"] == "1"
    assert create.params["tags"][f"cni.networking.k8s.aws/cluster/{cases.CLUSTER}"] == "shared"
    assert create.params["cidr"] == "10.0.0.0/24" and not create.depends_on  # inside 10.0.0.0/16: no association
    assert plan.steps[1].params["route_table_id"] == cases.PUBLIC_RT  # the node subnet's table, not the main one
    assert create.permissions == ("ec2:CreateSubnet", "ec2:CreateTags", "ec2:DescribeSubnets")
    text = " ".join(plan.notes)
    assert "room for 3 node(s)" in text and "2 existing node(s) can still attach ENIs" in text
    assert "nothing to change on aws-node" in text
    assert plan.summary["nodes_with_free_eni_slots"] == 2


def test_plan_associates_a_secondary_cidr_when_asked_and_turns_discovery_back_on() -> None:
    snap = cases.subnet_discovery_off()
    plan = plan_of(snap, cidr="100.65.0.0/20")
    assert plan.steps[0].action == "eks.associate-vpc-cidr" and plan.steps[0].params["cidr"] == "100.65.0.0/20"
    env = plan.steps[-1]
    assert (env.id, env.action, env.params["env"]) == (
        "enable-subnet-discovery",
        "kube.set-daemonset-env",
        {"ENABLE_SUBNET_DISCOVERY": "true"},
    )
    assert set(env.depends_on) == {f"route-subnet-{AZ_A}", f"route-subnet-{AZ_B}"}
    addon = Addon("vpc-cni", "v1.19.0-eksbuild.1", "ACTIVE", '{"env":{"ENABLE_SUBNET_DISCOVERY":"0"}}')
    managed = cases.with_kube(cases.with_eks(cases.subnet_discovery_off(), vpc_cni_addon=addon), aws_node=None)
    step = plan_of(managed).steps[-1]
    assert (step.action, step.params["env"]) == ("eks.update-addon-env", {"ENABLE_SUBNET_DISCOVERY": "true"})


def test_nodes_at_their_limit_and_full_node_subnets_make_the_strategy_refuse() -> None:
    with pytest.raises(InvalidInput, match=r"subnet discovery cannot help.*custom-networking"):
        plan_of(cases.subnet_discovery(enis=3, tagged=False))
    full_nodes_but_room = plan_of(cases.subnet_discovery(enis=3, free=4, tagged=False))
    assert "2 node(s) are at their ENI limit and gain nothing" in " ".join(full_nodes_but_room.notes)


def _without_version_env(snap: Snapshot) -> Snapshot:
    import dataclasses

    node = snap.kube.aws_node
    assert node is not None
    env = tuple(v for v in node.env if v.name != "VPC_CNI_VERSION")
    return cases.with_kube(snap, aws_node=dataclasses.replace(node, env=env))


@pytest.mark.parametrize(
    ("snap", "message"),
    [
        (_without_version_env(cases.example()), "cannot tell the installed VPC CNI version"),
        (cases.example(), r"this cluster runs v1\.15\.1 \(aws-node env VPC_CNI_VERSION=v1\.15\.1\)"),
        (cases.cni_version(cases.example(), "v1.17.1"), "needs VPC CNI v1.18 or later; this cluster runs v1.17.1"),
        (cases.custom_networking(cases.cni_version(cases.example(), "v1.18.1")), "custom networking is on"),
    ],
)
def test_refusals_name_the_way_out(snap: Snapshot, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        plan_of(snap)


def test_drift_a_subnet_in_the_planned_space_or_custom_networking_turned_on() -> None:
    snap = cases.subnet_discovery(enis=1, free=3, tagged=False)
    plan = plan_of(snap)
    check_drift(plan, snap)
    taken = cases.add_subnet(snap, cases.make_subnet("subnet-0ther", "10.0.0.0/26", AZ_A))
    with pytest.raises(StalePlan, match=r"10\.0\.0\.0/24 now overlaps subnet subnet-0ther"):
        check_drift(plan, taken)
    ours = cases.add_subnet(
        snap, cases.make_subnet("subnet-0urs", "10.0.0.0/24", AZ_A, tags={DIGEST_TAG: plan.plan_id})
    )
    check_drift(plan, ours)  # what an earlier run of this plan made is progress
    with pytest.raises(StalePlan, match="custom networking is now on"):
        check_drift(plan, cases.with_env(snap, AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true"))


# --- the bundled example --------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "eks-subnet-discovery.snapshot.json"


def test_bundled_example_is_the_case_builders_and_plans_subnet_discovery() -> None:
    snap = cases.discovery_example()
    if os.environ.get("CIDRX_UPDATE_EXAMPLES") == "1":
        save_snapshot(snap, EXAMPLE)
    assert load_snapshot(EXAMPLE) == snap  # also checks its fingerprint
    d = analyze(snap)
    exhausted = [f.subject for f in d.findings if f.id == "EKS-SUBNET-EXHAUSTED"]
    assert exhausted == [f"{cases.PUBLIC_B} (eks-demo-ip-vpc-stack-PublicSubnet02)"]  # 2a has a tagged subnet
    bare = next(f for f in d.findings if f.id == "EKS-SUBNET-DISCOVERY-NO-SUBNETS")
    assert AZ_B in bare.summary and AZ_A not in bare.summary
    made = make_plan(snap, PlanOptions(strategy=default_strategy(snap, PlanOptions())))
    assert made.strategy == "subnet-discovery"
    assert [s.id for s in made.steps] == [f"create-subnet-{AZ_B}", f"route-subnet-{AZ_B}"]
    text = " ".join(made.notes)
    assert "2 existing node(s) can still attach ENIs" in text and f"{AZ_A} already has tagged subnets" in text


def test_zones_whose_tagged_subnets_have_room_get_none_and_all_covered_refuses() -> None:
    with pytest.raises(InvalidInput, match="already have room"):
        plan_of(cases.subnet_discovery(enis=1, free=3))
