"""VPCs whose CIDRs come from an AWS VPC IPAM pool: the association is planned from the pool (pool + netmask,
within its allocation rules), made by apply (the journal records the CIDR IPAM picked, the pod subnets are
carved from it), re-applied without change, checked for drift, and emitted as Terraform.

moto 5.2 does not model VPC IPAM: tests/support/fakes/ec2_ipam.py answers DescribeIpamPools,
GetIpamPoolAllocations, GetIpamPoolCidrs and AssociateVpcCidrBlock-from-a-pool in front of moto's stub (the
real EC2 client builds and parses every request; the allocated block is then associated by moto itself).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import replace
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest

from cidrx.app import apply as app_apply
from cidrx.app import plan as app_plan
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.collect.ipam_pools import pool_from
from cidrx.providers.eks.facts.ipam_pools import subnet_cidr
from cidrx.providers.eks.model import IpamPool
from cidrx.providers.eks.provider import PROVIDER
from tests.support.cases import eks as cases
from tests.support.cli import run
from tests.support.estates.eks_variants import POOL_CIDR, POOL_ID, POOL_TAGS, use_ipam_pool
from tests.support.fakes.ec2_ipam import FakeIpam
from tests.support.terraform_check import parse, resources

check_drift = PROVIDER.check_drift  # the strategy's drift check, through the provider


def make_plan(snapshot: Snapshot, opts: PlanOptions | None = None, created_at: str = "") -> Plan:
    """The plan of `opts.strategy` (custom networking when none is given), as its strategy makes it."""
    opts = opts or PlanOptions()
    return PROVIDER.make_plan(snapshot, replace(opts, strategy=opts.strategy or "custom-networking"), created_at)


pytestmark = pytest.mark.usefixtures("shared_botocore")

POOL = cases.eks_of(cases.ipam_pool()).ipam_pools[0]


def _snap(pool: IpamPool = POOL, *, tags: dict[str, str] | None = None) -> Any:
    snap = cases.example()
    eks = cases.eks_of(snap)
    vpc = dataclasses.replace(eks.vpc, tags={**eks.vpc.tags, **(POOL_TAGS if tags is None else tags)})
    return cases.with_eks(snap, vpc=vpc, ipam_pools=(pool,))


def test_pool_shape_from_the_api() -> None:
    pool = pool_from(
        {
            "IpamPoolId": POOL_ID,
            "State": "create-complete",
            "Locale": "ap-southeast-2",
            "AllocationMinNetmaskLength": 16,
            "AllocationMaxNetmaskLength": 22,
            "AllocationResourceTags": [{"Key": "env", "Value": "prod"}],
        },
        cidrs=[{"Cidr": POOL_CIDR, "State": "provisioned"}, {"Cidr": "10.9.0.0/16", "State": "pending-deprovision"}],
        allocations=[
            {"Cidr": "10.0.0.0/16", "ResourceId": "vpc-1", "ResourceType": "vpc"},
            {"Cidr": "10.1.0.0/16", "ResourceId": "vpc-2", "ResourceType": "vpc"},
        ],
        vpc_id="vpc-1",
    )
    assert (pool.min_netmask, pool.max_netmask, pool.resource_tags) == (16, 22, {"env": "prod"})
    assert pool.cidrs == (POOL_CIDR,) and pool.vpc_cidrs == ("10.0.0.0/16",)


def test_plan_associates_from_the_pool_and_carves_the_subnets_from_what_it_gives() -> None:
    plan = make_plan(_snap(), PlanOptions())
    first = plan.steps[0]
    assert (first.action, first.params) == (
        "eks.associate-vpc-cidr-from-ipam-pool",
        {"vpc_id": cases.VPC_ID, "ipam_pool_id": POOL_ID, "netmask_length": 20},
    )
    subnets = [s for s in plan.steps if s.action == "eks.create-subnet"]
    assert [s.params["carve"] for s in subnets] == [
        {"from": "${associate-vpc-cidr.cidr}", "parts": 2, "index": 0},
        {"from": "${associate-vpc-cidr.cidr}", "parts": 2, "index": 1},
    ]
    assert "cidr" not in plan.basis and (plan.basis["ipam_pool_id"], plan.basis["netmask_length"]) == (POOL_ID, 20)
    carved = [subnet_cidr({"carve": {**s.params["carve"], "from": "10.2.0.0/20"}}) for s in subnets]
    assert carved == ["10.2.0.0/21", "10.2.8.0/21"]
    assert any(f"IPAM pool {POOL_ID}" in n for n in plan.notes)


@pytest.mark.parametrize(
    ("pool", "tags", "why"),
    [
        (dataclasses.replace(POOL, min_netmask=26, max_netmask=28), None, "hands out /26 at most"),
        (POOL, {"env": "dev"}, "allocates only to resources tagged env=prod"),
        (dataclasses.replace(POOL, allocations=(POOL_CIDR,)), None, "has no free /"),
        (dataclasses.replace(POOL, state="delete-in-progress"), None, "is delete-in-progress"),
    ],
    ids=["netmask-rules", "resource-tags", "pool-full", "pool-state"],
)
def test_the_pool_rules_refuse_the_plan(pool: IpamPool, tags: dict[str, str] | None, why: str) -> None:
    with pytest.raises(InvalidInput, match=why) as err:
        make_plan(_snap(pool, tags=tags), PlanOptions())
    assert err.value.exit_code == 2


def test_the_pool_netmask_rules_bound_the_size() -> None:
    # cidrx would ask for a /20; a pool handing out /21 and smaller gives a /21, which still holds the pods.
    narrow = make_plan(_snap(dataclasses.replace(POOL, min_netmask=21)), PlanOptions())
    assert narrow.basis["netmask_length"] == 21


def test_an_explicit_cidr_skips_the_pool() -> None:
    plan = make_plan(_snap(), PlanOptions(cidr="100.64.0.0/20"))
    assert plan.steps[0].action == "eks.associate-vpc-cidr" and plan.basis["cidr"] == "100.64.0.0/20"


def test_pool_drift() -> None:
    plan = make_plan(_snap(), PlanOptions())
    check_drift(plan, _snap())
    with pytest.raises(StalePlan, match="hands out /19 at least, not /20"):
        check_drift(plan, _snap(dataclasses.replace(POOL, max_netmask=19)))
    with pytest.raises(StalePlan, match="no longer allocates"):
        check_drift(plan, cases.with_eks(_snap(), ipam_pools=()))


def test_terraform_uses_the_pool_and_cidrsubnet(tmp_path: Path) -> None:
    snapshot = tmp_path / "snap.json"
    from cidrx.model import codec

    snapshot.write_text(codec.dumps(_snap()))
    out = tmp_path / "plan.json"
    result = run("expand", "--snapshot", str(snapshot), "--plan", "--out", str(out), "--emit", "terraform")
    assert result.exit_code == 0, result.output
    res = resources(parse((tmp_path / "plan.tf").read_text()))
    assoc = res[("aws_vpc_ipv4_cidr_block_association", "pods")]
    assert (assoc["ipv4_ipam_pool_id"], assoc["ipv4_netmask_length"]) == (POOL_ID, 20)
    cidrs = sorted(str(b["cidr_block"]) for (t, _), b in res.items() if t == "aws_subnet")
    assert cidrs == [
        "${cidrsubnet(aws_vpc_ipv4_cidr_block_association.pods.cidr_block, 1, 0)}",
        "${cidrsubnet(aws_vpc_ipv4_cidr_block_association.pods.cidr_block, 1, 1)}",
    ]


# --- through the CLI against moto and the IPAM fake ------------------------------------------------------


def test_ipam_pool_vpc_plan_apply_reapply(eks: Callable[..., Any], tmp_path: Path) -> None:
    ipam = FakeIpam()
    with eks(ipam=ipam) as estate:
        use_ipam_pool(estate, ipam)
        out = tmp_path / "plan.json"
        planned = run("expand", *estate.target, "--plan", "--out", str(out))
        assert planned.exit_code == 0, planned.output
        plan = load_plan(out)
        assert plan.steps[0].params["ipam_pool_id"] == POOL_ID
        applied = run("expand", "--apply", str(out), "--yes", "--kubeconfig", estate.kubeconfig)
        assert applied.exit_code == 0, applied.output
        # IPAM gave the first free /20 of 10.0.0.0/14 (10.0.0.0/16 and 10.1.0.0/16 are allocated).
        (vpc,) = estate.ec2.describe_vpcs(VpcIds=[estate.world.vpc_id])["Vpcs"]
        assert "10.2.0.0/20" in [a["CidrBlock"] for a in vpc["CidrBlockAssociationSet"]]
        assert [a["Cidr"] for a in ipam.pools[POOL_ID].allocations][-1] == "10.2.0.0/20"
        mine = estate.ec2.describe_subnets(Filters=[{"Name": "tag:cidrx.io/plan", "Values": [plan.plan_id]}])["Subnets"]
        assert sorted(s["CidrBlock"] for s in mine) == ["10.2.0.0/21", "10.2.8.0/21"]
        journal = [json.loads(line) for line in Path(f"{out}.journal.jsonl").read_text().splitlines()]
        recorded = [
            e for e in journal if e.get("step") == "associate-vpc-cidr" and (e.get("outputs") or {}).get("cidr")
        ]
        assert recorded and recorded[-1]["outputs"]["cidr"] == "10.2.0.0/20"
        # Applying again changes nothing: the association is found, nothing is associated twice.
        calls_before = list(ipam.calls)
        again = run("expand", "--apply", str(out), "--yes", "--kubeconfig", estate.kubeconfig)
        assert again.exit_code == 0, again.output
        assert "AssociateVpcCidrBlock" not in ipam.calls[len(calls_before) :]
        (vpc,) = estate.ec2.describe_vpcs(VpcIds=[estate.world.vpc_id])["Vpcs"]
        assert sum(IPv4Network(a["CidrBlock"]).prefixlen == 20 for a in vpc["CidrBlockAssociationSet"]) == 1

        # Rollback takes back what the apply made: the carved subnets, then the CIDR the pool gave.
        rolled = run("rollback", str(out), "--yes", "--kubeconfig", estate.kubeconfig)
        assert rolled.exit_code == 0, rolled.output
        assert "from IPAM pool" in rolled.output + rolled.stderr
        mine = estate.ec2.describe_subnets(Filters=[{"Name": "tag:cidrx.io/plan", "Values": [plan.plan_id]}])["Subnets"]
        assert mine == []
        (vpc,) = estate.ec2.describe_vpcs(VpcIds=[estate.world.vpc_id])["Vpcs"]
        live = [a for a in vpc["CidrBlockAssociationSet"] if a["CidrBlockState"]["State"] == "associated"]
        assert [a["CidrBlock"] for a in live] == plan.basis["vpc_cidrs"]
        twice = run("rollback", str(out), "--yes", "--kubeconfig", estate.kubeconfig)
        assert twice.exit_code == 0, twice.output


def test_ipam_pool_vpc_with_the_journal_lost_and_after_a_rule_change(eks: Callable[..., Any], tmp_path: Path) -> None:
    ipam = FakeIpam()
    with eks(ipam=ipam) as estate:
        pool = use_ipam_pool(estate, ipam)
        out = tmp_path / "plan.json"
        assert run("expand", *estate.target, "--plan", "--out", str(out)).exit_code == 0
        # The pool's rules change between plan and apply: nothing is applied, exit 4.
        pool.max_netmask = 19
        stale = run("expand", "--apply", str(out), "--yes", "--kubeconfig", estate.kubeconfig)
        assert stale.exit_code == 4, stale.output
        assert "hands out /19 at least, not /20" in stale.output and "AssociateVpcCidrBlock" not in ipam.calls
        pool.max_netmask = 22
        assert run("expand", "--apply", str(out), "--yes", "--kubeconfig", estate.kubeconfig).exit_code == 0
        # With the journal gone, a re-apply finds the association IPAM made (associations carry no tags).
        Path(f"{out}.journal.jsonl").unlink()
        again = run("expand", "--apply", str(out), "--yes", "--kubeconfig", estate.kubeconfig)
        assert again.exit_code == 0, again.output
        assert ipam.calls.count("AssociateVpcCidrBlock") == 1


def test_subnet_discovery_on_an_ipam_vpc_takes_its_new_cidr_from_the_pool() -> None:
    """The default strategy of a v1.18+ cluster must honour the pool too (an SCP may require it)."""
    snap = cases.ipam_pool(cases.subnet_discovery(enis=1, free=3, tagged=False))
    plan = app_plan.make_plan(snap, PlanOptions(strategy="subnet-discovery", add_nodes=2000))
    first, *subnets = plan.steps
    assert first.action == "eks.associate-vpc-cidr-from-ipam-pool"
    assert first.params["ipam_pool_id"] == cases.IPAM_POOL_ID
    carved = [s.params["carve"] for s in subnets if s.action == "eks.create-subnet"]
    assert [c["index"] for c in carved] == [0, 1] and all("cidr" not in s.params for s in subnets)
    assert "0.0.0.0" not in json.dumps([s.description for s in plan.steps] + list(plan.notes))
    app_apply.check_drift(plan, snap)  # its own basis holds
