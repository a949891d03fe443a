"""The EKS control plane's subnets: findings from a snapshot (pure), DescribeCluster's health issues collected
through the real client, and the `control-plane-subnets` plan (steps, refusals, drift, Terraform). Its apply,
resume and rollback run in tests/conformance (tests/support/cases/control_plane_subnets.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.findings import Diagnosis, Finding, Severity
from cidrx.model.options import PlanOptions
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.analyze.diagnosis import analyze
from cidrx.providers.eks.collect.vpc import cluster_from
from cidrx.providers.eks.model import ClusterIssue
from cidrx.providers.eks.provider import PROVIDER
from cidrx.render.terraform import extract_snippets, render_terraform
from tests.support.cases import eks as cases
from tests.support.cases.eks import AZ_A, AZ_B, PRIVATE_A, PUBLIC_A, PUBLIC_B
from tests.support.cli import run
from tests.support.estates.eks_live import EksEstate, eks_estate
from tests.support.estates.eks_variants import CONTROL_PLANE_ROOM, build_control_plane_room
from tests.support.fakes.eks_cluster_config import FakeClusterConfig

ROOM_A, ROOM_B = "subnet-0aaa000000000000a", "subnet-0bbb000000000000b"
LOW, HEALTH = "EKS-CONTROL-PLANE-SUBNET-LOW", "EKS-CLUSTER-HEALTH-ISSUE"


def found(d: Diagnosis, finding_id: str) -> list[Finding]:
    return [f for f in d.findings if f.id == finding_id]


def with_room(snap: Snapshot | None = None) -> Snapshot:
    """The incident plus one /27 per zone that nothing uses (27 free each)."""
    snap = snap or cases.example()
    snap = cases.add_subnet(snap, cases.make_subnet(ROOM_A, "10.0.240.0/27", AZ_A))
    return cases.add_subnet(snap, cases.make_subnet(ROOM_B, "10.0.240.32/27", AZ_B))


def plan(snap: Snapshot) -> Any:
    return PROVIDER.make_plan(snap, PlanOptions(strategy="control-plane-subnets"), "2026-11-28T00:00:00Z")


def test_full_cluster_subnets_are_critical_and_roomy_ones_are_silent() -> None:
    hits = found(analyze(cases.example()), LOW)
    assert sorted(f.subject.split()[0] for f in hits) == sorted([PUBLIC_A, PUBLIC_B])
    assert {f.severity for f in hits} == {Severity.CRITICAL}
    assert "0 free addresses (EKS needs 6, recommends 16)" in hits[0].summary


@pytest.mark.parametrize(("free", "severity"), [(5, Severity.CRITICAL), (6, Severity.WARNING), (15, Severity.WARNING)])
def test_thresholds(free: int, severity: Severity) -> None:
    snap = cases.with_subnet(cases.example(), PRIVATE_A, available_ips=free)
    (hit,) = [f for f in found(analyze(snap), LOW) if f.subject.startswith(PRIVATE_A)]
    assert hit.severity is severity


def test_sixteen_free_is_enough() -> None:
    snap = cases.with_subnet(cases.example(), PRIVATE_A, available_ips=16)
    assert not [f for f in found(analyze(snap), LOW) if f.subject.startswith(PRIVATE_A)]


def test_the_fix_names_the_subnets_the_plan_would_add() -> None:
    (hit, _) = found(analyze(with_room()), LOW)
    assert "--strategy control-plane-subnets" in hit.remediation
    assert ROOM_A in hit.remediation and ROOM_B in hit.remediation


def test_health_issues_are_findings() -> None:
    issue = ClusterIssue("InsufficientFreeAddresses", "Subnets have too few free addresses", (PUBLIC_A, PUBLIC_B))
    eks = cases.eks_of(cases.example())
    snap = cases.with_eks(cases.example(), cluster=dataclasses.replace(eks.cluster, health_issues=(issue,)))
    (hit,) = found(analyze(snap), HEALTH)
    assert hit.severity is Severity.CRITICAL
    assert hit.summary == "EKS reports InsufficientFreeAddresses: Subnets have too few free addresses"
    assert f"resources: {PUBLIC_A}, {PUBLIC_B}" in hit.evidence


def test_describe_cluster_health_is_read() -> None:
    """DescribeCluster's `cluster.health` (EKS API reference: ClusterHealth.issues[] of ClusterIssue)."""
    d = {
        "name": "demo",
        "resourcesVpcConfig": {"subnetIds": ["subnet-1"], "vpcId": "vpc-1"},
        "health": {"issues": [{"code": "InsufficientFreeAddresses", "message": "m", "resourceIds": ["subnet-1"]}]},
    }
    assert cluster_from(d).health_issues == (ClusterIssue("InsufficientFreeAddresses", "m", ("subnet-1",)),)
    assert cluster_from({"name": "demo"}).health_issues == ()


def test_plan_adds_a_subnet_with_room_per_zone() -> None:
    p = plan(with_room())
    (step,) = p.steps
    assert step.action == "eks.update-cluster-subnets"
    assert step.params["previous"] == list(cases.eks_of(cases.example()).cluster.subnet_ids)
    assert step.params["subnet_ids"] == [*step.params["previous"], ROOM_A, ROOM_B]
    assert set(step.permissions) >= {"eks:UpdateClusterConfig", "eks:DescribeUpdate"}
    assert p.basis["added"] == {
        ROOM_A: {"az": AZ_A, "cidr": "10.0.240.0/27"},
        ROOM_B: {"az": AZ_B, "cidr": "10.0.240.32/27"},
    }


def test_plan_refuses_without_a_subnet_to_add_or_a_need() -> None:
    with pytest.raises(InvalidInput, match="no other subnet in the cluster's zones"):
        plan(cases.example())
    roomy = cases.roomy(with_room())  # node subnets /24 with room: every cluster subnet has 16 free or more
    with pytest.raises(InvalidInput, match="needs no more subnets"):
        plan(roomy)


def test_drift_when_an_added_subnet_fills_or_the_cluster_changes() -> None:
    snap = with_room()
    p = plan(snap)
    PROVIDER.check_drift(p, snap)
    with pytest.raises(StalePlan, match=f"subnet {ROOM_A} now has 3 free"):
        PROVIDER.check_drift(p, cases.with_subnet(snap, ROOM_A, available_ips=3))
    eks = cases.eks_of(snap)
    changed = cases.with_eks(snap, cluster=dataclasses.replace(eks.cluster, subnet_ids=(PUBLIC_A, PUBLIC_B)))
    with pytest.raises(StalePlan, match="now has subnets"):
        PROVIDER.check_drift(p, changed)
    done = cases.with_eks(
        snap, cluster=dataclasses.replace(eks.cluster, subnet_ids=tuple(p.steps[0].params["subnet_ids"]))
    )
    PROVIDER.check_drift(p, done)  # the plan's own change is progress, not drift


def test_terraform_is_a_snippet_for_the_teams_cluster() -> None:
    p = plan(with_room())
    text = render_terraform(p)
    (snip,) = extract_snippets(text)
    assert "vpc_config {" in snip and ROOM_A in snip and ROOM_B in snip
    assert not [line for line in text.splitlines() if "aws_eks_cluster" in line and not line.startswith("#")]


# --- live: moto behind the UpdateClusterConfig fake --------------------------------------------------------


@pytest.fixture
def room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EksEstate, FakeClusterConfig]]:
    fakes: list[FakeClusterConfig] = []

    def wrap(stub: Any) -> Any:
        fakes.append(FakeClusterConfig("ap-southeast-2"))
        return fakes[-1].wrap(stub)

    with eks_estate(tmp_path, monkeypatch, builder=build_control_plane_room, wrap_moto=wrap) as estate:
        yield estate, fakes[0]


def _subnet_id(estate: EksEstate, cidr: str) -> str:
    (s,) = estate.ec2.describe_subnets(Filters=[{"Name": "cidr-block", "Values": [cidr]}])["Subnets"]
    return str(s["SubnetId"])


def test_live_health_issue_and_plan(room: tuple[EksEstate, FakeClusterConfig], tmp_path: Path) -> None:
    estate, fake = room
    full = estate.world.public_subnet_a
    fake.put_issue(estate.cluster, "InsufficientFreeAddresses", "not enough free addresses", [full])
    target = [*estate.target, "--kubeconfig", estate.kubeconfig]
    diag = run("diagnose", *target, "-o", "json")
    assert diag.exit_code == 3, diag.output
    assert '"EKS-CLUSTER-HEALTH-ISSUE"' in diag.stdout and f"resources: {full}" in diag.stdout
    made = run("expand", *target, "--strategy", "control-plane-subnets", "--plan", "--out", str(tmp_path / "p.json"))
    assert made.exit_code == 0, made.output
    added = {_subnet_id(estate, c) for c in CONTROL_PLANE_ROOM.values()}
    assert all(sid in (tmp_path / "p.json").read_text() for sid in added)


def test_fake_refuses_a_subnet_outside_the_clusters_zones(room: tuple[EksEstate, FakeClusterConfig]) -> None:
    """EKS: subnets added later must be in the zones the cluster was created with."""
    from botocore.exceptions import ClientError

    estate, _ = room
    eks = estate.session.client("eks")
    other = estate.ec2.create_subnet(
        VpcId=estate.world.vpc_id, CidrBlock="10.0.250.0/27", AvailabilityZone="ap-southeast-2c"
    )["Subnet"]["SubnetId"]
    current = eks.describe_cluster(name=estate.cluster)["cluster"]["resourcesVpcConfig"]["subnetIds"]
    with pytest.raises(ClientError, match="InvalidParameterException"):
        eks.update_cluster_config(name=estate.cluster, resourcesVpcConfig={"subnetIds": [*current, other]})
    update = eks.update_cluster_config(
        name=estate.cluster, resourcesVpcConfig={"subnetIds": [*current, _subnet_id(estate, "10.0.240.0/27")]}
    )["update"]
    assert (update["type"], update["status"]) == ("VpcConfigUpdate", "InProgress")
    cfg = eks.describe_cluster(name=estate.cluster)["cluster"]["resourcesVpcConfig"]
    assert len(cfg["subnetIds"]) == len(current) + 1 and cfg.get("securityGroupIds")  # merged, not replaced
    assert eks.describe_update(name=estate.cluster, updateId=update["id"])["update"]["status"] == "Successful"
