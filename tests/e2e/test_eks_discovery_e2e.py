"""Subnet discovery end to end through the CLI, against moto and the fake API server (in process).

The estate is tests/support/estates/eks_discovery.py: VPC CNI v1.18.1, nodes with a free ENI slot, node subnets
too tight for another node's warm pool. moto models subnets, tags and route table associations; it does not
model the EKS add-on API, so vpc-cni as a managed add-on (DescribeAddon, UpdateAddon, DescribeUpdate and
DescribeAddonConfiguration with its configuration schema) is the project's botocore fake
(tests/support/fakes/eks_addons.py), which also validates UpdateAddon against that schema as EKS does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from cidrx.model.plan import DIGEST_TAG, load_plan
from tests.support.cli import run
from tests.support.estates.eks_discovery import build_discovery, build_discovery_off
from tests.support.estates.eks_live import EksEstate

pytestmark = pytest.mark.usefixtures("shared_botocore")

Estate = Callable[..., AbstractContextManager[EksEstate]]
ROLE = "kubernetes.io/role/cni"


def tagged_subnets(estate: EksEstate) -> dict[str, dict[str, Any]]:
    found = estate.ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [estate.world.vpc_id]}, {"Name": "tag-key", "Values": [ROLE]}]
    )["Subnets"]
    return {s["AvailabilityZone"]: s for s in found}


def route_table_of(estate: EksEstate, subnet_id: str) -> str | None:
    tables = estate.ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}])
    return tables["RouteTables"][0]["RouteTableId"] if tables["RouteTables"] else None


def diagnosis(estate: EksEstate) -> dict[str, Any]:
    done = run("diagnose", *estate.target, "-o", "json", "--fail-on", "never")
    assert done.exit_code == 0, done.output
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_diagnose_plan_apply_reapply(eks: Estate, tmp_path: Path) -> None:
    with eks(builder=build_discovery) as estate:
        before = diagnosis(estate)
        ids = [f["id"] for f in before["findings"]]
        assert ids.count("EKS-SUBNET-EXHAUSTED") == 2  # 7 free, a new node's warm pool needs 10
        assert "EKS-SUBNET-DISCOVERY-NO-SUBNETS" in ids

        plan_path = tmp_path / "plan.json"
        made = run("expand", *estate.target, "--plan", "--out", str(plan_path))
        assert made.exit_code == 0, made.output
        plan = load_plan(plan_path)
        assert plan.strategy == "subnet-discovery"  # the default on VPC CNI v1.18+
        assert [s.action for s in plan.steps] == ["eks.create-subnet", "eks.associate-route-table"] * 2
        assert "room for 7 node(s)" in " ".join(plan.notes)

        applied = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", estate.kubeconfig)
        assert applied.exit_code == 0, applied.output
        subnets = tagged_subnets(estate)
        assert sorted(subnets) == [f"{estate.world.region}a", f"{estate.world.region}b"]
        for az, s in subnets.items():
            tags = {t["Key"]: t["Value"] for t in s["Tags"]}
            assert tags[ROLE] == "1" and tags[DIGEST_TAG] == plan.plan_id
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", tags["cidrx.io/applied-at"])  # when it was made
            assert s["CidrBlock"] == plan.summary["subnets"][az]
            assert route_table_of(estate, s["SubnetId"]) == estate.world.public_route_table_id  # like the nodes'
        assert estate.kube.count("PUT", "daemonsets") == 0  # discovery is on by default: aws-node untouched

        listing = estate.ec2.describe_subnets()["Subnets"]
        again = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", estate.kubeconfig)
        assert again.exit_code == 0, again.output
        assert estate.ec2.describe_subnets()["Subnets"] == listing

        after = diagnosis(estate)
        assert "EKS-SUBNET-EXHAUSTED" not in [f["id"] for f in after["findings"]]
        tagged = [c for c in after["capacity"] if "subnet discovery" in (c.get("note") or "")]
        assert len(tagged) == 2 and all(c["extra"]["nodes_with_free_eni_slots"] == 1 for c in tagged)


def test_managed_addon_gets_discovery_back_on_through_a_validated_update(eks: Estate, tmp_path: Path) -> None:
    before = {"env": {"ENABLE_SUBNET_DISCOVERY": "false", "WARM_IP_TARGET": "5"}}
    with eks(builder=build_discovery_off, addon=True, addon_config=before) as estate:
        assert estate.addons is not None
        plan_path = tmp_path / "plan.json"
        made = run("expand", *estate.target, "--plan", "--out", str(plan_path), "--cidr", "100.64.0.0/20")
        assert made.exit_code == 0, made.output
        plan = load_plan(plan_path)
        assert plan.steps[0].id == "associate-vpc-cidr"
        assert plan.steps[-1].action == "eks.update-addon-env"
        assert "DescribeAddonConfiguration" in estate.addons.calls  # the schema came with the snapshot

        applied = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", estate.kubeconfig)
        assert applied.exit_code == 0, applied.output
        addon = estate.addons.addon(estate.cluster)
        assert addon is not None
        assert json.loads(addon["configurationValues"]) == {
            "env": {"ENABLE_SUBNET_DISCOVERY": "true", "WARM_IP_TARGET": "5"}
        }
        cidrs = estate.ec2.describe_vpcs(VpcIds=[estate.world.vpc_id])["Vpcs"][0]["CidrBlockAssociationSet"]
        assert "100.64.0.0/20" in {c["CidrBlock"] for c in cidrs}
        assert {s["CidrBlock"] for s in tagged_subnets(estate).values()} == {"100.64.0.0/21", "100.64.8.0/21"}


def test_apply_stops_before_an_addon_update_the_current_schema_rejects(eks: Estate, tmp_path: Path) -> None:
    before = {"env": {"ENABLE_SUBNET_DISCOVERY": "false"}}
    with eks(builder=build_discovery_off, addon=True, addon_config=before) as estate:
        assert estate.addons is not None
        plan_path = tmp_path / "plan.json"
        assert run("expand", *estate.target, "--plan", "--out", str(plan_path)).exit_code == 0
        # Someone rolls the add-on back to a version whose schema has no ENABLE_SUBNET_DISCOVERY.
        addon = estate.addons.addon(estate.cluster)
        assert addon is not None
        addon["addonVersion"] = "v1.17.1-eksbuild.1"
        addon["configurationValues"] = "{}"
        applied = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", estate.kubeconfig)
        assert applied.exit_code == 5, applied.output  # stopped at the add-on step, after the subnets
        assert "rejects the configuration" in applied.output and "ENABLE_SUBNET_DISCOVERY" in applied.output
        assert "UpdateAddon" not in estate.addons.calls
