"""The drift catalogue: for every plan kind, a change someone else makes between `--plan` and `--apply`.

Each row is one test. A change that invalidates the plan must be caught by the drift check on the fresh
snapshot, before any write: exit 4 through the real CLI (`expand --apply` / `reclaim --apply`), a message
that names what changed, no write request in the fake's log (AWS calls are recorded with a botocore
`before-call` handler every session cidrx makes picks up; the GCP and Kubernetes fakes log every request)
and no journal. A change the plan can live with must not block it: exit 0. For the in-cluster reclaim
plans, an address re-used by another pod, or whose pod came back, is drift too (exit 4, nothing released);
a change that lands after the drift check, while apply runs, is re-decided per entry instead
(tests/test_whereabouts_apply.py, tests/test_calico_apply.py).

Worlds: EKS in moto (`mock_aws`, in-process) with the incident cluster in the fake Kubernetes API server;
GKE in the loopback GCP fake (--no-kube); Whereabouts and Calico in the fake Kubernetes API server.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any, Literal

import pytest
from click.testing import Result

from cidrx.ipam.whereabouts.model import GROUP as WB_GROUP
from cidrx.ipam.whereabouts.model import POOLS as WB_POOLS
from cidrx.ipam.whereabouts.model import RESERVATIONS as WB_RESERVATIONS
from cidrx.ipam.whereabouts.model import VERSION as WB_VERSION
from cidrx.model.plan import DIGEST_TAG, Plan, load_plan
from tests.support.cases import calico as calico_cases
from tests.support.cases import whereabouts as wc
from tests.support.cli import run
from tests.support.estates import gke as gw
from tests.support.estates.eks import REGION, AwsCalls, World, build_incident
from tests.support.estates.eks_cluster import build_prefix_world
from tests.support.estates.eks_discovery import build_discovery_off
from tests.support.estates.eks_live import ADDON_BEFORE, EksEstate, eks_estate
from tests.support.estates.eks_variants import tgw_route_table
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer, is_lock

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

JSON = dict[str, Any]
Outcome = Literal["stale", "ok"]
KUBE_WRITES = ("POST", "PUT", "PATCH", "DELETE")


def kube_writes(server: FakeKubeServer) -> list[str]:
    return [f"{r.method} {r.path}" for r in server.requests() if r.method in KUBE_WRITES and not is_lock(r)]


def statuses(result: Result, plan: Plan) -> dict[str, str]:
    ids = {s.id for s in plan.steps}
    return {row[0]: row[1] for row in (line.split() for line in result.stdout.splitlines()) if row and row[0] in ids}


def assert_stale(result: Result, fragments: list[str], plan_path: Path) -> None:
    assert result.exit_code == 4, result.output
    assert "the plan is stale" in result.output
    for fragment in fragments:
        assert fragment in result.output
    assert "Nothing was applied" in result.output
    assert "Traceback" not in result.output
    assert not Path(f"{plan_path}.journal.jsonl").exists()


@dataclass(frozen=True)
class Row:
    """One catalogue row: `change(env, plan)` plays the other writer and returns the message fragments the
    refusal must contain (stale; empty for ok)."""

    id: str
    kind: str
    outcome: Outcome
    change: Callable[[Any, Plan], list[str]]


def params(rows: list[Row]) -> list[Any]:
    return [pytest.param(r, id=f"{r.kind}-{r.id}") for r in rows]


# ========================================================================================================
# EKS (moto in-process + fake Kubernetes API server)
# ========================================================================================================

CLUSTER = "demo"
ZONES = (f"{REGION}a", f"{REGION}b")
NODE_ROLE = "arn:aws:iam::123456789012:role/someone-elses-role"


@dataclass
class Eks(EksEstate):
    """The estate, the AWS calls it saw, and where plans go."""

    aws: AwsCalls = field(default_factory=AwsCalls)
    tmp: Path = Path()

    def plan(self, strategy: str) -> tuple[Plan, Path]:
        path = self.tmp / "plan.json"
        made = run("expand", *self.target, "--plan", "--strategy", strategy, "--out", str(path))
        assert made.exit_code == 0, made.output
        return load_plan(path), path

    def apply(self, path: Path) -> Result:
        return run("expand", "--apply", str(path), "--yes", "--kubeconfig", self.kubeconfig)


@contextlib.contextmanager
def eks_world(
    builder: Callable[..., World], tmp: Path, mp: pytest.MonkeyPatch, *, addon: bool = False
) -> Iterator[Eks]:
    """The world `builder` makes; with `addon`, vpc-cni is an EKS managed add-on (tests/support/fakes/eks_addons.py)
    configured with ADDON_BEFORE."""
    aws = AwsCalls()
    handlers = [("before-call", aws)]
    with eks_estate(tmp, mp, builder=builder, handlers=handlers, addon=addon, addon_config=ADDON_BEFORE) as estate:
        yield Eks(**{f.name: getattr(estate, f.name) for f in fields(EksEstate)}, aws=aws, tmp=tmp)


def _associate_overlap(env: Eks, plan: Plan) -> list[str]:
    theirs = str(list(IPv4Network(plan.basis["cidr"]).subnets(new_prefix=24))[-1])
    env.ec2.associate_vpc_cidr_block(VpcId=env.world.vpc_id, CidrBlock=theirs)
    return [f"{plan.basis['cidr']} now overlaps VPC {env.world.vpc_id} CIDR {theirs}"]


def _tgw_route_over_planned_cidr(env: Eks, plan: Plan) -> list[str]:
    rt = tgw_route_table(env.ec2, env.world.tgw_id)
    env.ec2.create_transit_gateway_route(
        TransitGatewayRouteTableId=rt, DestinationCidrBlock=plan.basis["cidr"], Blackhole=True
    )
    tgw = env.world.tgw_id
    return [f"{plan.basis['cidr']} now overlaps static route in transit gateway route table {rt} ({tgw}), blackhole"]


def _prefix_list_entry_over_planned_cidr(env: Eks, plan: Plan) -> list[str]:
    theirs = str(next(IPv4Network(plan.basis["cidr"]).subnets(new_prefix=24)))
    pl = env.ec2.create_managed_prefix_list(
        PrefixListName="on-prem", AddressFamily="IPv4", MaxEntries=2, Entries=[{"Cidr": theirs}]
    )["PrefixList"]["PrefixListId"]
    rt = env.world.private_route_table_id
    env.ec2.create_route(RouteTableId=rt, DestinationPrefixListId=pl, TransitGatewayId=env.world.tgw_id)
    return [f"{plan.basis['cidr']} now overlaps prefix list {pl} (routed by {rt})"]


def _unrelated_tgw_route(env: Eks, plan: Plan) -> list[str]:
    rt = tgw_route_table(env.ec2, env.world.tgw_id)
    env.ec2.create_transit_gateway_route(
        TransitGatewayRouteTableId=rt, DestinationCidrBlock="192.0.2.0/24", Blackhole=True
    )
    return []


def _delete_route_table(env: Eks, plan: Plan) -> list[str]:
    az, rt = sorted(plan.basis["route_tables"].items())[0]
    (table,) = env.ec2.describe_route_tables(RouteTableIds=[rt])["RouteTables"]
    for assoc in table["Associations"]:
        env.ec2.disassociate_route_table(AssociationId=assoc["RouteTableAssociationId"])
    env.ec2.delete_route_table(RouteTableId=rt)
    return [f"route table {rt} for {az} no longer exists"]


def _create_same_named_nodegroup(env: Eks, plan: Plan) -> list[str]:
    name = plan.basis["nodegroup_name"]
    env.eks.create_nodegroup(
        clusterName=CLUSTER,
        nodegroupName=name,
        subnets=[env.world.private_subnet_a],
        nodeRole=NODE_ROLE,
        scalingConfig={"minSize": 1, "maxSize": 1, "desiredSize": 1},
        tags={"owner": "someone-else"},
    )
    return [f"a node group named {name} was created by someone else"]


def _delete_template_nodegroup(env: Eks, plan: Plan) -> list[str]:
    env.eks.delete_nodegroup(clusterName=CLUSTER, nodegroupName=plan.basis["template_nodegroup"])
    return [f"template node group {plan.basis['template_nodegroup']} no longer exists"]


def _create_foreign_eniconfig(env: Eks, plan: Plan) -> list[str]:
    env.kube.put(
        {
            "apiVersion": "crd.k8s.amazonaws.com/v1alpha1",
            "kind": "ENIConfig",
            "metadata": {"name": ZONES[0]},
            "spec": {"subnet": env.world.private_subnet_a, "securityGroups": [env.world.cluster_security_group_id]},
        }
    )
    return [f"ENIConfig {ZONES[0]} was created by someone else (subnet {env.world.private_subnet_a})"]


def _reserve_in_block(env: Eks, plan: Plan) -> list[str]:
    step = next(s for s in plan.steps if s.action == "eks.reserve-subnet-cidr")
    theirs = str(next(IPv4Network(step.params["cidr"]).subnets(new_prefix=28)))
    env.ec2.create_subnet_cidr_reservation(SubnetId=step.params["subnet_id"], Cidr=theirs, ReservationType="explicit")
    return [f"{theirs} was reserved in {step.params['subnet_id']} and overlaps the planned {step.params['cidr']}"]


def _use_address_in_block(env: Eks, plan: Plan) -> list[str]:
    step = next(s for s in plan.steps if s.action == "eks.reserve-subnet-cidr")
    sid = step.params["subnet_id"]
    ip = str(IPv4Network(step.params["cidr"]).network_address + 7)
    filters = [{"Name": "subnet-id", "Values": [sid]}]
    eni = env.ec2.describe_network_interfaces(Filters=filters)["NetworkInterfaces"][0]["NetworkInterfaceId"]
    env.ec2.assign_private_ip_addresses(NetworkInterfaceId=eni, PrivateIpAddresses=[ip])
    return [f"{ip}/32 in {sid} now sit inside the planned {step.params['cidr']}"]


def _tag_vpc(env: Eks, plan: Plan) -> list[str]:
    env.ec2.create_tags(Resources=[env.world.vpc_id], Tags=[{"Key": "cost-center", "Value": "net-1234"}])
    return []


def _unrelated_subnet_in_vpc(env: Eks, plan: Plan) -> list[str]:
    env.ec2.create_subnet(VpcId=env.world.vpc_id, CidrBlock="10.0.50.0/24", AvailabilityZone=ZONES[0])
    return []


def _eniconfig_for_another_az(env: Eks, plan: Plan) -> list[str]:
    env.kube.put(
        {
            "apiVersion": "crd.k8s.amazonaws.com/v1alpha1",
            "kind": "ENIConfig",
            "metadata": {"name": f"{REGION}c"},
            "spec": {"subnet": "subnet-0123456789abcdef0", "securityGroups": [env.world.cluster_security_group_id]},
        }
    )
    return []


def _addon_configured_by_someone_else(env: Eks, plan: Plan) -> list[str]:
    # Someone tunes the vpc-cni add-on between plan and apply: the add-on step merges, so theirs stays.
    assert env.addons is not None
    addon = env.addons.addon(CLUSTER)
    assert addon is not None
    theirs = {**ADDON_BEFORE, "env": {**ADDON_BEFORE["env"], "MINIMUM_IP_TARGET": "10"}}
    addon["configurationValues"] = json.dumps(theirs)
    return []


def _subnet_in_planned_space(env: Eks, plan: Plan) -> list[str]:
    az, piece = sorted(plan.basis["subnets"].items())[0]
    theirs = str(next(IPv4Network(piece).subnets(new_prefix=26)))
    sid = env.ec2.create_subnet(VpcId=env.world.vpc_id, CidrBlock=theirs, AvailabilityZone=az)["Subnet"]["SubnetId"]
    return [f"{piece} now overlaps subnet {sid}"]


def _custom_networking_turned_on(env: Eks, plan: Plan) -> list[str]:
    ds = env.kube.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert ds is not None
    container = ds["spec"]["template"]["spec"]["containers"][0]
    name = "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"
    container["env"] = [*(e for e in container["env"] if e["name"] != name), {"name": name, "value": "true"}]
    env.kube.put(ds)
    return ["custom networking is now on"]


CN, PD, SD = "custom-networking", "prefix-delegation", "subnet-discovery"
CNA = "custom-networking-managed-addon"  # vpc-cni as an EKS add-on: the env step is eks.update-addon-env
STRATEGY = {CN: CN, PD: PD, CNA: CN, SD: SD}
EKS_ROWS = [
    Row("overlapping-vpc-cidr-associated", CN, "stale", _associate_overlap),
    Row("route-table-deleted", CN, "stale", _delete_route_table),
    Row("nodegroup-name-taken", CN, "stale", _create_same_named_nodegroup),
    Row("template-nodegroup-deleted", CN, "stale", _delete_template_nodegroup),
    Row("eniconfig-created-by-someone-else", CN, "stale", _create_foreign_eniconfig),
    Row("unrelated-vpc-tag", CN, "ok", _tag_vpc),
    Row("tgw-route-over-the-planned-cidr", CN, "stale", _tgw_route_over_planned_cidr),
    Row("prefix-list-entry-over-the-planned-cidr", CN, "stale", _prefix_list_entry_over_planned_cidr),
    Row("unrelated-tgw-route", CN, "ok", _unrelated_tgw_route),
    Row("unrelated-subnet-in-the-vpc", CN, "ok", _unrelated_subnet_in_vpc),
    Row("eniconfig-for-an-az-the-plan-does-not-use", CN, "ok", _eniconfig_for_another_az),
    Row("block-reserved-meanwhile", PD, "stale", _reserve_in_block),
    Row("address-assigned-inside-block", PD, "stale", _use_address_in_block),
    Row("unrelated-vpc-tag", PD, "ok", _tag_vpc),
    Row("nodegroup-name-taken", CNA, "stale", _create_same_named_nodegroup),
    Row("addon-configured-by-someone-else", CNA, "ok", _addon_configured_by_someone_else),
    # subnet discovery (tests/support/estates/eks_discovery.py, ENABLE_SUBNET_DISCOVERY=false on aws-node)
    Row("subnet-created-in-the-planned-space", SD, "stale", _subnet_in_planned_space),
    Row("route-table-deleted", SD, "stale", _delete_route_table),
    Row("custom-networking-turned-on", SD, "stale", _custom_networking_turned_on),
    Row("unrelated-subnet-in-the-vpc", SD, "ok", _unrelated_subnet_in_vpc),
]


@pytest.mark.parametrize("row", params(EKS_ROWS))
def test_eks_drift(row: Row, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builder = {PD: build_prefix_world, SD: build_discovery_off}.get(row.kind, build_incident)
    with eks_world(builder, tmp_path, monkeypatch, addon=row.kind == CNA) as env:
        plan, path = env.plan(STRATEGY[row.kind])
        if row.kind == CNA:
            assert "eks.update-addon-env" in {s.action for s in plan.steps}
        fragments = row.change(env, plan)
        env.aws.calls.clear()
        env.kube.reset_log()
        result = env.apply(path)
        if row.outcome == "stale":
            assert_stale(result, fragments, path)
            assert env.aws.writes() == [], env.aws.writes()
            assert env.aws.calls  # the fresh snapshot was read through the recorded sessions
            assert kube_writes(env.kube) == []
            tagged = [{"Name": f"tag:{DIGEST_TAG}", "Values": [plan.plan_id]}]
            assert env.ec2.describe_subnets(Filters=tagged)["Subnets"] == []
        else:
            assert result.exit_code == 0, result.output
            assert set(statuses(result, plan).values()) == {"done"}
            assert env.aws.writes()
        if env.addons is not None:
            addon = env.addons.addon(CLUSTER)
            assert addon is not None
            env_now = json.loads(addon["configurationValues"])["env"]
            assert env.aws.writes().count("eks:UpdateAddon") == (0 if row.outcome == "stale" else 1)
            if row.outcome == "ok":  # ours added, theirs kept
                assert env_now["MINIMUM_IP_TARGET"] == "10" and env_now["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] == "true"
            else:
                assert "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG" not in env_now


# ========================================================================================================
# GKE (loopback GCP fake, --no-kube)
# ========================================================================================================

GKE_TARGET = ["--gke", "--project", gw.PROJECT, "--location", gw.LOCATION, "--cluster", gw.CLUSTER, "--no-kube"]


def gcp_writes(fake: FakeGcp) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.request_log if r.method in ("POST", "PATCH", "PUT", "DELETE")]


def _secondary(fake: FakeGcp, region: str, subnet: str) -> list[JSON]:
    found = fake.subnet(gw.PROJECT, region, subnet)
    assert found is not None
    return list(found.get("secondaryIpRanges", []))


def _overlap_on_another_subnet(fake: FakeGcp, plan: Plan) -> list[str]:
    region, _primary, _ = gw.OTHER_SUBNETS["us-workloads"]
    theirs = str(
        next(IPv4Network(plan.basis["cidr"]).subnets(new_prefix=IPv4Network(plan.basis["cidr"]).prefixlen + 1))
    )
    ranges = [*_secondary(fake, region, "us-workloads"), {"rangeName": "batch-pods", "ipCidrRange": theirs}]
    fake.update_subnet(gw.PROJECT, region, "us-workloads", {"secondaryIpRanges": ranges})
    return [
        f"{plan.basis['cidr']} now overlaps {theirs} (secondary range batch-pods of subnet us-central1/us-workloads)"
    ]


def _remove_basis_range(fake: FakeGcp, plan: Plan) -> list[str]:
    kept = [r for r in _secondary(fake, gw.REGION, gw.SUBNET) if r["rangeName"] != gw.SERVICES_RANGE]
    fake.update_subnet(gw.PROJECT, gw.REGION, gw.SUBNET, {"secondaryIpRanges": kept})
    return [f"secondary range {gw.SERVICES_RANGE} ({gw.SERVICES_CIDR}) is gone from subnet {gw.SUBNET}"]


def _same_named_pool(fake: FakeGcp, plan: Plan) -> list[str]:
    name = plan.basis["node_pool_name"]
    fake.add_node_pool(
        gw.PROJECT,
        gw.LOCATION,
        gw.CLUSTER,
        {"name": name, "config": {"machineType": "e2-medium"}, "initialNodeCount": 1, "locations": [gw.ZONES[0]]},
    )
    return [f"a node pool named {name} was created by someone else"]


def _delete_template_pool(fake: FakeGcp, plan: Plan) -> list[str]:
    # The fake has no nodePools.delete; remove it from its store as a finished deletion would.
    with fake._lock:
        del fake._pools[(gw.PROJECT, gw.LOCATION, gw.CLUSTER)][plan.basis["template_pool"]]
    return [f"template node pool {plan.basis['template_pool']} no longer exists"]


def _range_name_taken(fake: FakeGcp, plan: Plan) -> list[str]:
    theirs = "10.9.0.0/24"
    assert not IPv4Network(theirs).overlaps(IPv4Network(plan.basis["cidr"]))
    ranges = [*_secondary(fake, gw.REGION, gw.SUBNET), {"rangeName": plan.basis["range_name"], "ipCidrRange": theirs}]
    fake.update_subnet(gw.PROJECT, gw.REGION, gw.SUBNET, {"secondaryIpRanges": ranges})
    return [f"a secondary range named {plan.basis['range_name']} now exists with {theirs}, not {plan.basis['cidr']}"]


def _unrelated_subnet(fake: FakeGcp, plan: Plan) -> list[str]:
    theirs = "192.168.50.0/24"
    assert not IPv4Network(theirs).overlaps(IPv4Network(plan.basis["cidr"]))
    fake.add_subnet(gw.PROJECT, "asia-east1", {"name": "new-team", "network": gw.NETWORK, "ipCidrRange": theirs})
    return []


def _overlap_on_our_subnet(fake: FakeGcp, plan: Plan) -> list[str]:
    net = IPv4Network(plan.basis["cidr"])
    theirs = str(list(net.subnets(new_prefix=net.prefixlen + 2))[-1])
    ranges = [*_secondary(fake, gw.REGION, gw.SUBNET), {"rangeName": "team-pods", "ipCidrRange": theirs}]
    fake.update_subnet(gw.PROJECT, gw.REGION, gw.SUBNET, {"secondaryIpRanges": ranges})
    return [f"{plan.basis['cidr']} now overlaps {theirs} (secondary range team-pods of subnet {gw.REGION}/{gw.SUBNET})"]


def _unrelated_subnet_edit(fake: FakeGcp, plan: Plan) -> list[str]:
    # A new fingerprint alone: the subnet step re-reads it and patches with the current one.
    fake.update_subnet(gw.PROJECT, gw.REGION, gw.SUBNET, {"privateIpGoogleAccess": False})
    return []


def _unrelated_pool(fake: FakeGcp, plan: Plan) -> list[str]:
    pool = {"name": "batch", "config": {"machineType": "e2-medium"}, "initialNodeCount": 1, "locations": [gw.ZONES[1]]}
    fake.add_node_pool(gw.PROJECT, gw.LOCATION, gw.CLUSTER, pool)
    return []


NP, CR = "node-pool", "cluster-range"
GKE_ROWS = [
    *(Row("overlapping-range-on-another-subnet", s, "stale", _overlap_on_another_subnet) for s in (NP, CR)),
    *(Row("basis-secondary-range-removed", s, "stale", _remove_basis_range) for s in (NP, CR)),
    Row("node-pool-name-taken", NP, "stale", _same_named_pool),
    Row("template-pool-deleted", NP, "stale", _delete_template_pool),
    *(Row("range-name-taken-with-another-cidr", s, "stale", _range_name_taken) for s in (NP, CR)),
    *(Row("overlapping-range-added-to-our-subnet", s, "stale", _overlap_on_our_subnet) for s in (NP, CR)),
    *(Row("unrelated-subnet-in-the-network", s, "ok", _unrelated_subnet) for s in (NP, CR)),
    *(Row("subnet-fingerprint-changed-by-unrelated-edit", s, "ok", _unrelated_subnet_edit) for s in (NP, CR)),
    Row("unrelated-node-pool-added", NP, "ok", _unrelated_pool),
]


@pytest.mark.parametrize("row", params(GKE_ROWS))
def test_gke_drift(row: Row, gcp: FakeGcp, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    made = run("expand", *GKE_TARGET, "--plan", "--strategy", row.kind, "--out", str(path))
    assert made.exit_code == 0, made.output
    plan = load_plan(path)
    fragments = row.change(gcp, plan)
    gcp.reset_log()
    result = run("expand", "--apply", str(path), "--yes", "--no-kube")
    if row.outcome == "stale":
        assert_stale(result, fragments, path)
        assert gcp_writes(gcp) == []
        assert gcp.request_log  # the fresh snapshot was read
    else:
        assert result.exit_code == 0, result.output
        assert set(statuses(result, plan).values()) == {"done"}
        assert gcp_writes(gcp)


# ========================================================================================================
# In-cluster IPAMs (fake Kubernetes API server)
# ========================================================================================================

WB_POOL = (WB_GROUP, WB_VERSION, WB_POOLS, wc.POOL)
CALICO = ("crd.projectcalico.org", "v1")


def _wb_allocations(server: FakeKubeServer) -> dict[str, JSON]:
    pool = server.get(*WB_POOL, wc.POOL_NS)
    assert pool is not None
    found: dict[str, JSON] = pool["spec"].get("allocations", {})
    return found


def _wb_range_changed(server: FakeKubeServer, plan: Plan) -> list[str]:
    server.patch(*WB_POOL, {"spec": {"range": "10.10.0.0/27"}}, wc.POOL_NS)
    return [f"IPPool {wc.POOL_NS}/{wc.POOL} now has range 10.10.0.0/27, not {wc.RANGE}"]


def _wb_allocation_reused(server: FakeKubeServer, plan: Plan) -> list[str]:
    # db-3's offset 12 was freed by hand and Whereabouts gave it to a new pod, which runs with it.
    new = {"id": wc.cid(77), "podref": f"{wc.APP_NS}/api-0", "ifname": "net1"}
    server.patch(*WB_POOL, {"spec": {"allocations": {"12": new}}}, wc.POOL_NS)
    server.put(wc.orip(wc.ip_of(12), f"{wc.APP_NS}/api-0", 77))
    server.put(wc.pod("api-0", "Running", wc.LIVE_NODES[0], ips=[wc.ip_of(12)]))
    return [
        f"IPPool {wc.POOL_NS}/{wc.POOL}: {wc.ip_of(12)} (offset 12), planned for release from {wc.db(12)}, "
        f"is now held by {wc.APP_NS}/api-0, container {wc.cid(77)[:12]}",
        f"OverlappingRangeIPReservation {wc.POOL_NS}/{wc.ip_of(12)}, planned for deletion from {wc.db(12)}, "
        f"is now reserved for {wc.APP_NS}/api-0",
    ]


def _wb_pod_recreated_pending(server: FakeKubeServer, plan: Plan) -> list[str]:
    # The StatefulSet re-creates db-0 before apply: Pending, no network-status yet (the duplicate-IP race).
    server.put(wc.pod("db-0", "Pending", wc.LIVE_NODES[0]))
    return [
        f"{wc.ip_of(9)} (offset 9), planned for release from {wc.db(9)}, "
        f"is in use: its pod {wc.db(9)} is live again (Pending)"
    ]


def _wb_pod_back_with_another_address(server: FakeKubeServer, plan: Plan) -> list[str]:
    # db-1 is back and Running, with another address: gone when planned, so the plan no longer describes it.
    server.put(wc.pod("db-1", "Running", wc.LIVE_NODES[1], ips=["10.10.0.200"]))
    return [f"its pod {wc.db(10)} exists again (Running)"]


def _wb_reservation_moved(server: FakeKubeServer, plan: Plan) -> list[str]:
    server.put(wc.orip(wc.ip_of(13), f"{wc.APP_NS}/other", 90))
    return [
        f"OverlappingRangeIPReservation {wc.POOL_NS}/{wc.ip_of(13)}, planned for deletion from {wc.db(13)}, "
        f"is now reserved for {wc.APP_NS}/other"
    ]


def _wb_unrelated_label(server: FakeKubeServer, plan: Plan) -> list[str]:
    server.patch(*WB_POOL, {"metadata": {"labels": {"team": "network"}}}, wc.POOL_NS)
    return []


def _wb_released_by_someone_else(server: FakeKubeServer, plan: Plan) -> list[str]:
    # Someone freed db-0's address by hand (a JSON patch removing its key): one entry less to do.
    server.patch(*WB_POOL, [{"op": "remove", "path": "/spec/allocations/9"}], wc.POOL_NS, patch_type="json")
    return []


def _calico_pool_name_taken(server: FakeKubeServer, plan: Plan) -> list[str]:
    name = plan.basis["pool_name"]
    server.put(calico_cases.ippool(name, "10.0.8.0/24"))
    return [f"an IPPool named {name} was created by someone else (10.0.8.0/24)"]


def _calico_overlapping_pool(server: FakeKubeServer, plan: Plan) -> list[str]:
    theirs = str(next(IPv4Network(plan.basis["cidr"]).subnets(new_prefix=26)))
    server.put(calico_cases.ippool("team-pool", theirs))
    return [f"{plan.basis['cidr']} now overlaps IPPool team-pool ({theirs})"]


def _calico_node_joined_inside(server: FakeKubeServer, plan: Plan) -> list[str]:
    ip = str(IPv4Network(plan.basis["cidr"]).network_address + 10)
    server.put(calico_cases.node("node-4", ip))
    return [f"now overlaps network of node node-4 ({ip}"]


def _calico_block_inside(server: FakeKubeServer, plan: Plan) -> list[str]:
    # A block left inside the planned range (e.g. by a pool someone created and deleted again meanwhile):
    # a node still holds addresses of it, so a pool there would hand them out twice.
    cidr = str(next(IPv4Network(plan.basis["cidr"]).subnets(new_prefix=26)))
    server.put(calico_cases.ipamblock(cidr, "node-3", {1: calico_cases.pod_attr("shop", "late", "node-3")}))
    return [f"{plan.basis['cidr']} now overlaps IPAMBlock {calico_cases.block_name(cidr)} ({cidr})"]


CALICO_LEAK = (
    "10.0.0.44 of IPAMBlock 10-0-0-0-26, planned for release from handle k8s-pod-network.default.web-gone "
    "(default/web-gone),"
)


def _calico_block(server: FakeKubeServer, name: str) -> JSON:
    found = server.get(*CALICO, "ipamblocks", name)
    assert found is not None
    return found


def _calico_pod_back(server: FakeKubeServer, plan: Plan) -> list[str]:
    server.put(calico_cases.pod("default", "web-gone", "node-1", "10.0.0.44"))
    return [f"{CALICO_LEAK} is in use: its pod default/web-gone is live again (Running)"]


def _calico_pod_back_with_another_address(server: FakeKubeServer, plan: Plan) -> list[str]:
    server.put(calico_cases.pod("default", "web-gone", "node-3", "10.0.1.7"))
    return [f"{CALICO_LEAK} is in use: its pod default/web-gone exists again (Running)"]


def _calico_allocation_reassigned(server: FakeKubeServer, plan: Plan) -> list[str]:
    # Someone released 10.0.0.44 and calico-ipam gave the ordinal to a new pod (a new handle) at once.
    block = _calico_block(server, "10-0-0-0-26")
    spec = block["spec"]
    spec["attributes"][spec["allocations"][44]] = calico_cases.pod_attr("default", "api-new", "node-1")
    server.put(block)
    server.put(calico_cases.pod("default", "api-new", "node-1", "10.0.0.44"))
    return [f"{CALICO_LEAK} is now allocated to handle k8s-pod-network.default.api-new (default/api-new)"]


def _calico_block_claimed_by_another_node(server: FakeKubeServer, plan: Plan) -> list[str]:
    # node-2's spare empty block was released by hand and node-3 claimed the same CIDR (same name).
    server.delete(*CALICO, "blockaffinities", "node-2-10-0-0-192-26")
    server.put(calico_cases.ipamblock(calico_cases.BLOCK_D, "node-3", {}))
    server.put(calico_cases.affinity("node-3", calico_cases.BLOCK_D))
    return ["IPAMBlock 10-0-0-192-26 (10.0.0.192/26) now belongs to host:node-3, not host:node-2"]


def _calico_empty_block_used(server: FakeKubeServer, plan: Plan) -> list[str]:
    server.put(
        calico_cases.ipamblock(calico_cases.BLOCK_D, "node-2", {0: calico_cases.pod_attr("shop", "new", "node-2")})
    )
    return ["IPAMBlock 10-0-0-192-26 (10.0.0.192/26), planned for release as empty, now holds 1 address(es)"]


def _calico_new_pod_in_planned_block(server: FakeKubeServer, plan: Plan) -> list[str]:
    # calico-ipam hands a free ordinal of a block the plan writes to a new pod: the plan's entries hold.
    block = _calico_block(server, "10-0-0-0-26")
    spec = block["spec"]
    spec["attributes"].append(calico_cases.pod_attr("default", "fresh", "node-1"))
    spec["allocations"][50] = len(spec["attributes"]) - 1
    spec["unallocated"].remove(50)
    server.put(block)
    server.put(calico_cases.pod("default", "fresh", "node-1", "10.0.0.50"))
    return []


def _calico_unrelated_label(server: FakeKubeServer, plan: Plan) -> list[str]:
    server.patch(*CALICO, "ippools", "default-ipv4-ippool", {"metadata": {"labels": {"team": "network"}}})
    return []


WR, CRC, CP = "whereabouts-reclaim", "calico-reclaim", "calico-pool"
IPAM_ROWS = [
    Row("pool-range-changed", WR, "stale", _wb_range_changed),
    Row("allocation-reused-by-a-new-pod", WR, "stale", _wb_allocation_reused),
    Row("stale-pod-recreated-pending", WR, "stale", _wb_pod_recreated_pending),
    Row("stale-pod-back-with-another-address", WR, "stale", _wb_pod_back_with_another_address),
    Row("reservation-now-names-another-pod", WR, "stale", _wb_reservation_moved),
    Row("unrelated-label-on-ippool", WR, "ok", _wb_unrelated_label),
    Row("stale-entry-released-by-someone-else", WR, "ok", _wb_released_by_someone_else),
    Row("pool-name-taken", CP, "stale", _calico_pool_name_taken),
    Row("overlapping-pool-created", CP, "stale", _calico_overlapping_pool),
    Row("node-joined-inside-the-planned-range", CP, "stale", _calico_node_joined_inside),
    Row("block-claimed-inside-the-planned-range", CP, "stale", _calico_block_inside),
    Row("unrelated-label-on-ippool", CP, "ok", _calico_unrelated_label),
    Row("leaked-ip-pod-came-back", CRC, "stale", _calico_pod_back),
    Row("leaked-ip-pod-back-with-another-address", CRC, "stale", _calico_pod_back_with_another_address),
    Row("leaked-ip-reassigned-to-another-handle", CRC, "stale", _calico_allocation_reassigned),
    Row("empty-block-released-and-claimed-by-another-node", CRC, "stale", _calico_block_claimed_by_another_node),
    Row("empty-block-now-holds-an-address", CRC, "stale", _calico_empty_block_used),
    Row("unrelated-label-on-ippool", CRC, "ok", _calico_unrelated_label),
    Row("new-pod-in-a-block-the-plan-writes", CRC, "ok", _calico_new_pod_in_planned_block),
]
IPAM_PLAN = {
    WR: ("reclaim", "--ipam", "whereabouts"),
    CRC: ("reclaim", "--ipam", "calico"),
    CP: ("expand", "--strategy", "calico-pool"),
}


def _assert_ipam_end_state(row: Row, server: FakeKubeServer, plan: Plan) -> None:
    """What each ok row must leave: every planned entry released, someone else's changes kept."""
    if row.kind == WR:
        held = _wb_allocations(server)
        assert not [o for o in (str(i) for i in wc.STALE_OFFSETS) if o in held]
        assert sorted(held, key=int) == [str(i) for i in wc.LIVE_OFFSETS]
        names = {o["metadata"]["name"] for o in server.list(WB_GROUP, WB_VERSION, WB_RESERVATIONS)}
        assert names == {wc.ip_of(i) for i in wc.LIVE_OFFSETS}
    elif row.kind == CRC:
        a = _calico_block(server, "10-0-0-0-26")
        b = _calico_block(server, "10-0-0-64-26")
        assert a["spec"]["allocations"][44] is None and b["spec"]["allocations"][10] is None
        assert server.get(*CALICO, "ipamhandles", "k8s-pod-network.default.web-gone") is None
        assert server.get(*CALICO, "ipamblocks", "10-0-0-192-26") is None  # the spare empty block, released
        if row.id == "new-pod-in-a-block-the-plan-writes":
            index = a["spec"]["allocations"][50]
            assert a["spec"]["attributes"][index]["handle_id"] == "k8s-pod-network.default.fresh"
    else:
        pool = server.get(*CALICO, "ippools", "cidrx-10-0-2-0-23")
        assert pool is not None and pool["metadata"]["labels"] == {DIGEST_TAG: plan.plan_id}
        assert pool["spec"]["cidr"] == plan.basis["cidr"]
        other = server.get(*CALICO, "ippools", "default-ipv4-ippool")
        assert other is not None and other["metadata"]["labels"] == {"team": "network"}


@pytest.mark.parametrize("row", params(IPAM_ROWS))
def test_in_cluster_ipam_drift(
    row: Row, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_"):
            monkeypatch.delenv(name)
    kube_server.put_many(wc.crashed_node_objects() if row.kind == WR else calico_cases.incident().objects())
    command, *plan_args = IPAM_PLAN[row.kind]
    path = tmp_path / "plan.json"
    made = run(command, "--k8s", "--kubeconfig", str(kubeconfig_path), *plan_args, "--plan", "--out", str(path))
    assert made.exit_code == 0, made.output
    plan = load_plan(path)
    fragments = row.change(kube_server, plan)
    kube_server.reset_log()
    result = run(command, "--apply", str(path), "--yes", "--kubeconfig", str(kubeconfig_path))
    if row.outcome == "stale":
        assert_stale(result, fragments, path)
        assert kube_writes(kube_server) == []
        return
    assert result.exit_code == 0, result.output
    assert fragments == []
    assert set(statuses(result, plan).values()) == {"done"}, result.output
    assert kube_writes(kube_server)
    _assert_ipam_end_state(row, kube_server, plan)


# ========================================================================================================
# The catalogue itself
# ========================================================================================================

PLAN_KINDS = (CN, PD, CNA, NP, CR, WR, CRC, CP)


def test_every_plan_kind_has_a_breaking_row_and_a_harmless_one() -> None:
    rows = [*EKS_ROWS, *GKE_ROWS, *IPAM_ROWS]
    assert len({(r.kind, r.id) for r in rows}) == len(rows)
    for kind in PLAN_KINDS:
        outcomes = {r.outcome for r in rows if r.kind == kind}
        assert outcomes == {"stale", "ok"}, kind
