"""End to end, the way users and CI run it: `python -m cidrx` in a real process against moto's server (AWS, via
AWS_ENDPOINT_URL) and the fake Kubernetes API server (via --kubeconfig), both holding the incident of the talk.

diagnose -> snapshot -> expand --plan -> expand --apply -> apply again -> diagnose, then the end state is
read back with boto3 and from the API server: what the plan promised, nothing more, nothing twice. The
Terraform adoption story: `--emit terraform` on the plan, on an apply stopped partway (exit 5), on the
resumed apply and on a re-apply with the journal gone, parsed back with python-hcl2 (and `terraform fmt`
when it is installed), the import blocks carrying the ids boto3 reads back. Also:
apply refuses a plan the estate moved away from (exit 4, nothing created); the prefix-delegation plan on a
/24 world, with another writer changing aws-node between our read and our write; and the managed vpc-cni
add-on path, in process (its fake hooks botocore's events, which a child process cannot share).

moto does not enforce subnet exhaustion, CIDR restrictions or prefix delegation: the worlds reproduce the
addresses in use with real ENIs and the checks are cidrx's own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network, ip_network
from pathlib import Path
from typing import Any

import pytest

from cidrx.model import codec
from cidrx.model.findings import Diagnosis
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import load_snapshot
from tests.support.cli import run
from tests.support.estates.eks import REGION, World, build_incident, moto_server
from tests.support.estates.eks_cluster import (
    AWS_NODE_PATH,
    PLAN_TAG,
    SANDBOX_MESSAGE,
    DaemonSetController,
    Hooks,
    aws_node_env_of,
    build_prefix_world,
    env_values,
    incident_server,
)
from tests.support.estates.eks_live import clean_env, eks_estate
from tests.support.fakes.kube_server import FakeKubeServer, RequestRecord, is_lock
from tests.support.terraform_check import fmt_check, imports, needs_terraform, parse, resources

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

CLUSTER = "demo"
ZONES = ("ap-southeast-2a", "ap-southeast-2b")
CUSTOM_NETWORK = "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"
LABEL_DEF = "ENI_CONFIG_LABEL_DEF"
ZONE_LABEL = "topology.kubernetes.io/zone"
SHARED_ADDRESS_SPACE = IPv4Network("100.64.0.0/10")


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """moto's server on a free loopback port; this process (and its children) reach it via AWS_ENDPOINT_URL."""
    with moto_server() as url, pytest.MonkeyPatch.context() as mp:
        clean_env(mp, AWS_ENDPOINT_URL=url)
        yield url


@dataclass
class Live:
    url: str
    session: Any
    world: World
    kube: FakeKubeServer
    hooks: Hooks
    controller: DaemonSetController
    kubeconfig: str
    tmp: Path

    @property
    def target(self) -> list[str]:
        return ["--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", self.kubeconfig]

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "cidrx", *args],
            cwd=self.tmp,
            env={**os.environ, "COLUMNS": "200"},  # wide enough for one table row per line
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def cidrx(self, *args: str) -> subprocess.CompletedProcess[str]:
        return finish(self.start(*args))

    def client(self, service: str) -> Any:
        return self.session.client(service)

    def plan(self, *extra: str) -> Plan:
        proc = self.cidrx("expand", *self.target, "--plan", "--out", "plan.json", *extra)
        assert proc.returncode == 0, proc.stderr
        return load_plan(self.tmp / "plan.json")

    def apply(self) -> subprocess.CompletedProcess[str]:
        return self.cidrx("expand", "--apply", "plan.json", "--yes", "--kubeconfig", self.kubeconfig)


def finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def build_live(moto_url: str, tmp: Path, builder: Callable[..., World] = build_incident) -> Live:
    """Reset moto, build a world in it and the matching cluster in a fresh fake API server with a DaemonSet
    controller running (the caller stops the server)."""
    import boto3
    import requests

    requests.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
    session = boto3.Session(region_name=REGION)
    world = builder(session.client("ec2"), session.client("eks"), region=REGION, cluster=CLUSTER)
    server, hooks, controller = incident_server(world)
    kubeconfig = str(server.kubeconfig(tmp / "kubeconfig"))
    return Live(moto_url, session, world, server, hooks, controller, kubeconfig, tmp)


def stop(server: FakeKubeServer) -> None:
    server.stop()
    if server.errors:
        raise server.errors[0]


@pytest.fixture
def make_live(moto_url: str, tmp_path: Path) -> Iterator[Callable[..., Live]]:
    """Live worlds (the incident by default), their servers stopped and checked at teardown."""
    servers: list[FakeKubeServer] = []

    def make(builder: Callable[..., World] = build_incident) -> Live:
        live = build_live(moto_url, tmp_path, builder)
        servers.append(live.kube)
        return live

    yield make
    for server in servers:
        stop(server)


# --- helpers ------------------------------------------------------------------------------------------


def assert_diagnosis_v1(doc: Mapping[str, Any]) -> None:
    """The cidrx.diagnosis/v1 shape (docs/schemas): every key present, types and ranges right, counts add up."""
    assert set(doc) == {"schema", "target", "snapshot_fingerprint", "capacity", "findings", "counts", "taken_at"}
    assert doc["schema"] == "cidrx.diagnosis/v1"
    assert doc["target"] == {
        "provider": "eks",
        "cluster": CLUSTER,
        "region": REGION,
        "project": None,
        "location": None,
        "context": None,
        "subscription": None,
        "resource_group": None,
    }
    assert isinstance(doc["snapshot_fingerprint"], str) and len(doc["snapshot_fingerprint"]) == 64
    for c in doc["capacity"]:
        figures = {"kind", "name", "cidr", "size", "used", "free", "utilization", "max_nodes", "nodes", "nodes_fit"}
        assert set(c) == figures | {"zone", "note", "extra", "unit"}
        assert all(isinstance(c[k], int) and c[k] >= 0 for k in ("size", "used", "free"))
        assert 0.0 <= c["utilization"] <= 1.0
        if c["kind"] == "subnet":
            assert c["used"] + c["free"] == c["size"] and ip_network(c["cidr"])
    for f in doc["findings"]:
        assert set(f) == {"id", "severity", "subject", "summary", "evidence", "remediation"}
        assert f["severity"] in ("critical", "warning", "info") and f["id"].isupper()
        assert all(isinstance(e, str) for e in f["evidence"])
    assert doc["counts"] == {
        s: sum(f["severity"] == s for f in doc["findings"]) for s in ("critical", "warning", "info")
    }
    codec.loads(json.dumps(doc), Diagnosis, what="diagnosis")  # and it decodes into the model


def findings(doc: Mapping[str, Any], finding_id: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["id"] == finding_id]


def subnet_rows(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"].split()[0]: c for c in doc["capacity"] if c["kind"] == "subnet"}


def result_statuses(stdout: str, plan: Plan) -> dict[str, str]:
    ids = {s.id for s in plan.steps}
    return {row[0]: row[1] for row in (line.split() for line in stdout.splitlines()) if len(row) > 1 and row[0] in ids}


def estate(live: Live) -> dict[str, Any]:
    """Counts of everything an apply may create."""
    ec2, eks = live.client("ec2"), live.client("eks")
    vpc_filter = [{"Name": "vpc-id", "Values": [live.world.vpc_id]}]
    vpc = ec2.describe_vpcs(VpcIds=[live.world.vpc_id])["Vpcs"][0]
    tables = ec2.describe_route_tables(Filters=vpc_filter)["RouteTables"]
    aws_node = live.kube.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert aws_node is not None
    return {
        "vpc_cidrs": sorted(a["CidrBlock"] for a in vpc["CidrBlockAssociationSet"]),
        "subnets": sorted(s["SubnetId"] for s in ec2.describe_subnets(Filters=vpc_filter)["Subnets"]),
        "route_table_associations": sorted(a["RouteTableAssociationId"] for t in tables for a in t["Associations"]),
        "nodegroups": sorted(eks.list_nodegroups(clusterName=CLUSTER)["nodegroups"]),
        "eniconfigs": sorted(e["metadata"]["name"] for e in live.kube.objects_of("ENIConfig")),
        "aws_node_resource_version": aws_node["metadata"]["resourceVersion"],
    }


def resolve(value: Any, subnet_by_az: Mapping[str, str]) -> Any:
    """A plan parameter with `${create-subnet-<az>.subnet_id}` references replaced by the created subnet."""
    if isinstance(value, list):
        return [resolve(v, subnet_by_az) for v in value]
    if isinstance(value, str) and value.startswith("${create-subnet-"):
        return subnet_by_az[value.removeprefix("${create-subnet-").removesuffix(".subnet_id}")]
    return value


# --- diagnose and snapshot ------------------------------------------------------------------------------


def test_diagnose_names_both_full_subnets_and_the_snapshot_diagnoses_the_same(make_live: Callable[..., Live]) -> None:
    live = make_live()
    w = live.world
    full = {w.public_subnet_a: "10.0.208.0/27", w.public_subnet_b: "10.0.224.0/27"}
    running = [
        live.start("diagnose", *live.target),
        live.start("diagnose", *live.target, "-o", "json"),
        live.start("snapshot", *live.target, "--out", "snap.json"),
    ]
    table, as_json, snap = (finish(p) for p in running)

    assert table.returncode == 3, table.stderr
    assert table.stderr == ""
    for subnet_id, cidr in full.items():
        row = next(line for line in table.stdout.splitlines() if line.startswith("subnet") and subnet_id in line)
        assert cidr in row and "100.0%" in row
        assert f"EKS-SUBNET-EXHAUSTED  {subnet_id} (eks-demo-ip-vpc-stack-PublicSubnet0" in table.stdout
    assert "EKS-POD-IP-ASSIGN-FAILED  cluster demo" in table.stdout
    assert "failed to assign an IP address to container" in table.stdout

    assert as_json.returncode == 3, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert_diagnosis_v1(doc)
    rows = subnet_rows(doc)
    assert {sid: (rows[sid]["cidr"], rows[sid]["free"]) for sid in full} == {sid: (c, 0) for sid, c in full.items()}
    assert {f["subject"].split()[0] for f in findings(doc, "EKS-SUBNET-EXHAUSTED")} == set(full)
    assert {f["subject"] for f in findings(doc, "EKS-AZ-EXHAUSTED")} == set(ZONES)
    (failed,) = findings(doc, "EKS-POD-IP-ASSIGN-FAILED")
    assert f"default/mydeploy-6bdbfc484d-2frv4: {SANDBOX_MESSAGE}" in failed["evidence"]
    assert failed["severity"] == "critical"

    assert snap.returncode == 0, snap.stderr
    assert snap.stdout == "" and "snapshot of eks:ap-southeast-2/demo written to snap.json" in snap.stderr
    saved = load_snapshot(live.tmp / "snap.json")
    assert saved.kube.available and saved.eks is not None and saved.eks.vpc.vpc_id == w.vpc_id
    offline = live.cidrx("diagnose", "--snapshot", "snap.json", "-o", "json")
    assert offline.returncode == 3, offline.stderr
    offline_doc = json.loads(offline.stdout)
    assert offline_doc["snapshot_fingerprint"] == saved.fingerprint
    assert offline_doc["capacity"] == doc["capacity"]
    # The same findings; only the fix commands plan from the file instead of the live cluster.
    live_flags = f"--eks --region {REGION} --cluster {CLUSTER}"
    online = [
        {**f, "remediation": f["remediation"].replace(live_flags, "--snapshot snap.json")} for f in doc["findings"]
    ]
    assert offline_doc["findings"] == online
    assert any("cidrx expand --snapshot snap.json --plan" in f["remediation"] for f in offline_doc["findings"])


# --- plan, apply, apply again ------------------------------------------------------------------------


def test_plan_apply_and_apply_again_leave_exactly_the_fix(make_live: Callable[..., Live]) -> None:
    live = make_live()
    w = live.world
    ec2, eks = live.client("ec2"), live.client("eks")
    vpc_filter = [{"Name": "vpc-id", "Values": [w.vpc_id]}]
    before_subnets = {s["SubnetId"]: s["CidrBlock"] for s in ec2.describe_subnets(Filters=vpc_filter)["Subnets"]}
    before_routes = {
        r["DestinationCidrBlock"]
        for t in ec2.describe_route_tables(Filters=vpc_filter)["RouteTables"]
        for r in t["Routes"]
        if r.get("DestinationCidrBlock") not in (None, "0.0.0.0/0")
    }
    peer = ec2.describe_vpcs(VpcIds=[w.peer_vpc_id])["Vpcs"][0]["CidrBlock"]
    env_before = env_values(aws_node_env_of(live.kube))
    template = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=w.nodegroup)["nodegroup"]

    made = live.cidrx("expand", *live.target, "--plan", "--out", "plan.json")
    assert made.returncode == 0, made.stderr
    plan = load_plan(live.tmp / "plan.json")
    assert made.stdout.startswith(f"cidrx plan {plan.plan_id} for eks:ap-southeast-2/demo")
    for i, step in enumerate(plan.steps, start=1):
        assert any(line.split()[:3] == [str(i), step.id, f"({step.action})"] for line in made.stdout.splitlines()), (
            step.id
        )
    assert "written to plan.json; review it, then: cidrx expand --apply plan.json" in made.stderr

    applied = live.apply()
    assert applied.returncode == 0, applied.stderr
    total = len(plan.steps)
    for i, step in enumerate(plan.steps, start=1):
        assert f"[{i}/{total}] {step.id}: started: {step.description}" in applied.stderr
        assert f"[{i}/{total}] {step.id}: done" in applied.stderr
    assert result_statuses(applied.stdout, plan) == {s.id: "done" for s in plan.steps}
    assert f"{total} step(s) changed something, 0 were already done" in applied.stdout

    # The secondary CIDR: associated, in 100.64.0.0/10, clear of everything that was there.
    cidr = IPv4Network(plan.basis["cidr"])
    vpc = ec2.describe_vpcs(VpcIds=[w.vpc_id])["Vpcs"][0]
    states = {a["CidrBlock"]: a["CidrBlockState"]["State"] for a in vpc["CidrBlockAssociationSet"]}
    assert states == {"10.0.0.0/16": "associated", str(cidr): "associated"}
    assert cidr.subnet_of(SHARED_ADDRESS_SPACE)
    taken = [*before_subnets.values(), *before_routes, peer]
    assert not [t for t in taken if ip_network(t).overlaps(cidr)]

    # One new subnet per AZ inside it, tagged, routed by the table the plan named.
    after = ec2.describe_subnets(Filters=vpc_filter)["Subnets"]
    new = [s for s in after if s["SubnetId"] not in before_subnets]
    assert sorted(s["AvailabilityZone"] for s in new) == list(ZONES)
    subnet_by_az = {s["AvailabilityZone"]: s["SubnetId"] for s in new}
    tables = ec2.describe_route_tables(Filters=vpc_filter)["RouteTables"]
    table_of = {a["SubnetId"]: t["RouteTableId"] for t in tables for a in t["Associations"] if a.get("SubnetId")}
    for s in new:
        assert IPv4Network(s["CidrBlock"]).subnet_of(cidr)
        tags = {t["Key"]: t["Value"] for t in s["Tags"]}
        assert tags[PLAN_TAG] == plan.plan_id and tags[f"kubernetes.io/cluster/{CLUSTER}"] == "shared"
        assert table_of[s["SubnetId"]] == plan.basis["route_tables"][s["AvailabilityZone"]]
    assert not ip_network(new[0]["CidrBlock"]).overlaps(ip_network(new[1]["CidrBlock"]))

    # The apply ends with what a fresh snapshot says: capacity before -> after of what it touched, the
    # findings it resolved and those still open, on stdout and in the journal.
    said = " ".join(applied.stdout.split())
    assert "After the apply" in said
    assert f"vpc-cidr-blocks {w.vpc_id} 10.0.0.0/16: 1/5 used, 4 free (20.0%) -> 2/5 used, 3 free (40.0%)" in said
    for s in new:
        row = rf"subnet {s['SubnetId']} \([^)]*\) {s['CidrBlock']}: new: 0/2043 used, 2043 free \(0\.0%\)"
        assert re.search(row, said), row
    # The new block is carved entirely into the two subnets: allocated, not used (only AWS's 5 per subnet are).
    assert f"vpc-cidr {w.vpc_id} {cidr}: new: 10/4096 used, 4086 free (0.2%)" in said
    assert f"nodegroup {plan.basis['nodegroup_name']}: new: no nodes yet" in said
    resolved = said.split("Findings resolved (")[1].split("Still open (")[0]
    assert "EKS-AZ-EXHAUSTED (critical) ap-southeast-2a" in resolved and "EKS-SUBNET-EXHAUSTED" not in resolved
    still = said.split("Still open (")[1].split("New (")[0]
    assert all(f"EKS-SUBNET-EXHAUSTED (critical) {sid}" in still for sid in w.public_subnets)
    journal = [json.loads(line) for line in (live.tmp / "plan.json.journal.jsonl").read_text().splitlines()]
    verified = journal[-1]
    assert (verified["step"], verified["event"]) == ("(after-apply)", "verified")
    quota = next(c for c in verified["outputs"]["capacity"] if c["kind"] == "vpc-cidr-blocks")
    assert (quota["before"]["used"], quota["after"]["used"]) == (1, 2)
    assert {f["id"] for f in verified["outputs"]["resolved"]} >= {"EKS-AZ-EXHAUSTED"}
    assert verified["outputs"]["by_hand"] == list(plan.notes)

    # The node group: tagged, a copy of the template, in the subnets the plan chose (ones with room).
    step = next(s for s in plan.steps if s.action == "eks.create-nodegroup")
    ng = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=plan.basis["nodegroup_name"])["nodegroup"]
    assert ng["tags"][PLAN_TAG] == plan.plan_id
    assert ng["instanceTypes"] == template["instanceTypes"] == ["m5.large"]
    identity = "alpha.eksctl.io/nodegroup-name"  # the template's own name is not copied
    assert ng["nodeRole"] == template["nodeRole"] and identity in template["labels"]
    assert ng["labels"] == {k: v for k, v in template["labels"].items() if k != identity}
    assert sorted(ng["subnets"]) == sorted(resolve(step.params["subnets"], subnet_by_az))
    free = {s["SubnetId"]: s["AvailableIpAddressCount"] for s in after}
    assert all(free[s] > 0 for s in ng["subnets"]) and not set(ng["subnets"]) & set(w.public_subnets)

    # The cluster side: an ENIConfig per AZ and custom networking on aws-node, its other env kept.
    eniconfigs = {e["metadata"]["name"]: e for e in live.kube.objects_of("ENIConfig")}
    assert sorted(eniconfigs) == list(ZONES)
    for az, e in eniconfigs.items():
        assert e["spec"] == {"subnet": subnet_by_az[az], "securityGroups": [w.cluster_security_group_id]}
        assert e["metadata"]["labels"][PLAN_TAG] == plan.plan_id
    env_after = env_values(aws_node_env_of(live.kube))
    assert env_after[CUSTOM_NETWORK] == "true" and env_after[LABEL_DEF] == ZONE_LABEL
    assert {k: v for k, v in env_after.items() if k not in (CUSTOM_NETWORK, LABEL_DEF)} == {
        k: v for k, v in env_before.items() if k != CUSTOM_NETWORK
    }
    assert live.controller.rollouts == 1  # the apply waited for the DaemonSet to roll out

    # Applying the same plan again finds everything done and changes nothing.
    counts = estate(live)
    live.kube.reset_log()
    again = live.apply()
    assert again.returncode == 0, again.stderr
    assert result_statuses(again.stdout, plan) == {s.id: "skipped" for s in plan.steps}
    assert f"0 step(s) changed something, {total} were already done" in again.stdout
    assert again.stderr.count("skipped (already done)") == total
    assert estate(live) == counts
    changes = [r for r in live.kube.requests() if r.method in ("PUT", "POST") and not is_lock(r)]
    assert changes == []  # only the plan's lock (its Lease) was written

    # A new diagnosis: no AZ is stuck any more, but the old node group's subnets are still full.
    rediagnosed = live.cidrx("diagnose", *live.target, "-o", "json")
    assert rediagnosed.returncode == 3, rediagnosed.stderr
    doc = json.loads(rediagnosed.stdout)
    assert_diagnosis_v1(doc)
    assert findings(doc, "EKS-AZ-EXHAUSTED") == []
    assert findings(doc, "EKS-CUSTOM-NETWORKING-NO-ENICONFIG") == []
    exhausted = findings(doc, "EKS-SUBNET-EXHAUSTED")
    assert {f["subject"].split()[0] for f in exhausted} == set(w.public_subnets)
    assert all("nodes subnet" in f["summary"] and "a new node needs 1" in f["summary"] for f in exhausted)
    rows = subnet_rows(doc)
    for sid in subnet_by_az.values():
        assert rows[sid]["note"].startswith("pods;") and rows[sid]["free"] > 1000
    for sid in ng["subnets"]:
        assert rows[sid]["note"].startswith("nodes")
    block = next(c for c in doc["capacity"] if c["kind"] == "vpc-cidr" and c["cidr"] == str(cidr))
    assert (block["used"], block["free"], block["extra"]) == (10, 4086, {"unallocated": 0, "free_in_subnets": 4086})
    empty = next(c for c in doc["capacity"] if c["name"] == plan.basis["nodegroup_name"])
    assert (empty["size"], empty["utilization"]) == (0, 0.0) and empty["nodes_fit"] > 0  # empty, not full
    assert empty["note"].startswith("no nodes yet")
    verdict = live.cidrx("diagnose", *live.target).stdout.splitlines()[0]
    assert verdict.startswith("CRITICAL: 2 subnets full") and "vpc-cidr" not in verdict, verdict
    (predate,) = findings(doc, "EKS-NODES-PREDATE-ENICONFIG")
    assert predate["severity"] == "warning" and "2 node(s)" in predate["summary"]


# --- Terraform: what --emit terraform writes before, during and after an apply ----------------------------


@dataclass(frozen=True)
class Emitted:
    """One run of the adoption story, read back: the HCL written at each point and what really exists."""

    plan: Plan
    planned: str  # `expand --plan --emit terraform`, before anything was applied
    partial: subprocess.CompletedProcess[str]  # `--apply --emit terraform`, stopped at the first ENIConfig
    partial_tf: str
    partial_ids: dict[str, str]  # import address -> id of what existed when it stopped (read with boto3)
    applied: subprocess.CompletedProcess[str]  # the same command again, resuming to the end
    applied_tf: str
    applied_ids: dict[str, str]
    adopted: subprocess.CompletedProcess[str]  # once more, with the journal and the .tf gone
    adopted_tf: str
    estate_unchanged: bool


def created_ids(live: Live, plan: Plan) -> dict[str, str]:
    """What the Terraform import blocks must say, from the cloud and the cluster rather than the journal."""
    from cidrx.render.terraform import tf_name

    ec2, eks = live.client("ec2"), live.client("eks")
    ids: dict[str, str] = {}
    vpc = ec2.describe_vpcs(VpcIds=[live.world.vpc_id])["Vpcs"][0]
    for a in vpc["CidrBlockAssociationSet"]:
        if a["CidrBlock"] == plan.basis["cidr"]:
            ids["aws_vpc_ipv4_cidr_block_association.pods"] = a["AssociationId"]
    tagged = ec2.describe_subnets(Filters=[{"Name": f"tag:{PLAN_TAG}", "Values": [plan.plan_id]}])["Subnets"]
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [live.world.vpc_id]}])["RouteTables"]
    table_of = {a["SubnetId"]: t["RouteTableId"] for t in tables for a in t["Associations"] if a.get("SubnetId")}
    for subnet in tagged:
        az, sid = tf_name(subnet["AvailabilityZone"]), subnet["SubnetId"]
        ids[f"aws_subnet.pods_{az}"] = sid
        if sid in table_of:
            ids[f"aws_route_table_association.pods_{az}"] = f"{sid}/{table_of[sid]}"
    for e in live.kube.objects_of("ENIConfig"):
        name = e["metadata"]["name"]
        ids[f"kubernetes_manifest.eniconfig_{tf_name(name)}"] = (
            f"apiVersion=crd.k8s.amazonaws.com/v1alpha1,kind=ENIConfig,name={name}"
        )
    name = plan.basis["nodegroup_name"]
    if name in eks.list_nodegroups(clusterName=CLUSTER)["nodegroups"]:
        ids[f"aws_eks_node_group.{tf_name(name)}"] = f"{CLUSTER}:{name}"
    return ids


@pytest.fixture(scope="module")
def emitted(moto_url: str, tmp_path_factory: pytest.TempPathFactory) -> Emitted:
    """plan --emit -> apply --emit stopped partway (an admission webhook rejects ENIConfigs: exit 5) ->
    the same apply again, to the end -> once more with the journal and the .tf deleted (adoption of a plan
    applied long ago). Run once for the tests below, which read what it recorded."""
    live = build_live(moto_url, tmp_path_factory.mktemp("emit"))
    tf = live.tmp / "plan.tf"
    try:
        made = live.cidrx("expand", *live.target, "--plan", "--out", "plan.json", "--emit", "terraform")
        assert made.returncode == 0, made.stderr
        plan = load_plan(live.tmp / "plan.json")
        planned = tf.read_text()
        apply = ["expand", "--apply", "plan.json", "--yes", "--kubeconfig", live.kubeconfig, "--emit", "terraform"]

        live.kube.inject(400, method="POST", path_contains="/eniconfigs", times=None, message="denied by a webhook")
        partial = live.cidrx(*apply)
        partial_tf, partial_ids = tf.read_text(), created_ids(live, plan)
        live.kube.clear_faults()

        applied = live.cidrx(*apply)
        applied_tf, applied_ids = tf.read_text(), created_ids(live, plan)

        tf.unlink()
        (live.tmp / "plan.json.journal.jsonl").unlink()
        counts = estate(live)
        adopted = live.cidrx(*apply)
        adopted_tf = tf.read_text() if tf.exists() else ""
        unchanged = estate(live) == counts
    finally:
        stop(live.kube)
    return Emitted(
        plan,
        planned,
        partial,
        partial_tf,
        partial_ids,
        applied,
        applied_tf,
        applied_ids,
        adopted,
        adopted_tf,
        estate_unchanged=unchanged,
    )


def test_plan_emits_the_fix_as_terraform_without_imports(emitted: Emitted) -> None:
    doc = parse(emitted.planned)
    assert "import" not in doc
    assert emitted.planned.startswith(f"# cidrx plan {emitted.plan.plan_id} (custom-networking)")
    assert resources(doc) == resources(parse(emitted.applied_tf))  # the apply only adds import blocks
    # The time tag the apply writes is not in the configuration: Terraform leaves it alone after the import.
    created = [
        b for body in doc["resource"] for k in ("aws_subnet", "aws_eks_node_group") for b in body.get(k, {}).values()
    ]
    assert len(created) == 3  # two subnets, the node group
    for block in created:
        assert any('tags["cidrx.io/applied-at"]' in str(x) for x in block["lifecycle"][0]["ignore_changes"])


def test_apply_that_stops_partway_still_writes_imports_for_what_it_created(emitted: Emitted) -> None:
    run = emitted.partial
    assert run.returncode == 5, run.stderr
    assert run.stderr.rstrip().splitlines()[-1].startswith("cidrx: error: step eniconfig-ap-southeast-2a")
    assert "Terraform with import blocks for what was applied so far written to plan.tf" in run.stderr
    # It stopped at the first ENIConfig: the CIDR, the first zone's subnet and its route were made.
    assert sorted(emitted.partial_ids) == [
        "aws_route_table_association.pods_ap_southeast_2a",
        "aws_subnet.pods_ap_southeast_2a",
        "aws_vpc_ipv4_cidr_block_association.pods",
    ]
    assert imports(parse(emitted.partial_tf)) == emitted.partial_ids


def test_apply_emits_imports_with_the_real_ids_of_what_it_created(emitted: Emitted) -> None:
    assert emitted.applied.returncode == 0, emitted.applied.stderr
    found = imports(parse(emitted.applied_tf))
    assert found == emitted.applied_ids
    assert len(found) == 8  # association, 2 subnets, 2 route associations, 2 ENIConfigs, node group
    assert found["aws_vpc_ipv4_cidr_block_association.pods"].startswith("vpc-cidr-assoc-")
    for az in ("ap_southeast_2a", "ap_southeast_2b"):
        sid = found[f"aws_subnet.pods_{az}"]
        assert sid.startswith("subnet-")
        assert found[f"aws_route_table_association.pods_{az}"].startswith(f"{sid}/rtb-")
    assert found[f"aws_eks_node_group.{emitted.plan.basis['nodegroup_name'].replace('-', '_')}"] == (
        f"{CLUSTER}:{emitted.plan.basis['nodegroup_name']}"
    )


def test_adopting_an_applied_plan_changes_nothing_and_writes_the_same_imports(emitted: Emitted) -> None:
    run = emitted.adopted
    assert run.returncode == 0, run.stderr
    assert result_statuses(run.stdout, emitted.plan) == {s.id: "skipped" for s in emitted.plan.steps}
    assert emitted.estate_unchanged
    # The journal was gone: every step found its own earlier work by the plan tag and recorded its ids.
    assert imports(parse(emitted.adopted_tf)) == emitted.applied_ids


@needs_terraform
def test_emitted_terraform_is_fmt_clean(emitted: Emitted, tmp_path: Path) -> None:
    for name in ("planned", "partial_tf", "applied_tf", "adopted_tf"):
        (tmp_path / f"{name}.tf").write_text(getattr(emitted, name))
    result = fmt_check(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# --- refusals and other paths ------------------------------------------------------------------------


def test_apply_refuses_a_plan_whose_space_was_taken_and_creates_nothing(make_live: Callable[..., Live]) -> None:
    live = make_live()
    w = live.world
    plan = live.plan()
    env_before = aws_node_env_of(live.kube)
    # Meanwhile someone follows the talk by hand: the same secondary CIDR, and a subnet in it.
    ec2 = live.client("ec2")
    ec2.associate_vpc_cidr_block(VpcId=w.vpc_id, CidrBlock=plan.basis["cidr"])
    theirs = ec2.create_subnet(VpcId=w.vpc_id, CidrBlock="100.64.1.0/24", AvailabilityZone=ZONES[0])["Subnet"]
    counts = estate(live)

    applied = live.apply()
    assert applied.returncode == 4, applied.stderr
    assert applied.stdout == ""
    error = applied.stderr.strip().splitlines()[-1]
    assert error.startswith("cidrx: error: the plan is stale:")
    assert f"{plan.basis['cidr']} now overlaps subnet {theirs['SubnetId']}" in error
    assert "Nothing was applied; make a new plan" in error
    assert estate(live) == counts
    assert ec2.describe_subnets(Filters=[{"Name": f"tag:{PLAN_TAG}", "Values": [plan.plan_id]}])["Subnets"] == []
    assert aws_node_env_of(live.kube) == env_before
    assert not (live.tmp / "plan.json.journal.jsonl").exists()


def test_prefix_delegation_reserves_prefixes_and_survives_a_concurrent_aws_node_writer(
    make_live: Callable[..., Live],
) -> None:
    live = make_live(build_prefix_world)
    w = live.world
    plan = live.plan("--strategy", "prefix-delegation")
    reserve = [s for s in plan.steps if s.action == "eks.reserve-subnet-cidr"]
    assert sorted(s.params["subnet_id"] for s in reserve) == sorted(w.public_subnets)

    # Another controller (say, a GitOps sync) changes aws-node between our read and our write.
    puts: list[RequestRecord] = []

    def other_writer(record: RequestRecord) -> None:
        if record.method == "PUT" and record.path == AWS_NODE_PATH:
            puts.append(record)
            if len(puts) == 1:
                live.kube.patch(
                    "apps",
                    "v1",
                    "daemonsets",
                    "aws-node",
                    [
                        {
                            "op": "add",
                            "path": "/spec/template/spec/containers/0/env/-",
                            "value": {"name": "AWS_VPC_K8S_CNI_CONFIGURE_RPFILTER", "value": "false"},
                        },
                        {"op": "add", "path": "/metadata/annotations", "value": {"gitops/synced": "yes"}},
                    ],
                    "kube-system",
                    patch_type="json",
                )

    live.hooks.add(other_writer)
    applied = live.apply()
    assert applied.returncode == 0, applied.stderr
    assert result_statuses(applied.stdout, plan) == {s.id: "done" for s in plan.steps}
    assert len(puts) == 2  # the first replace hit 409 Conflict; the step re-read and wrote again

    ec2 = live.client("ec2")
    for step in reserve:
        (r,) = ec2.get_subnet_cidr_reservations(SubnetId=step.params["subnet_id"])["SubnetIpv4CidrReservations"]
        # (moto keeps a reservation's tags to itself, so its plan tag cannot be read back here)
        assert (r["Cidr"], r["ReservationType"]) == (step.params["cidr"], "prefix")
        subnet = ec2.describe_subnets(SubnetIds=[step.params["subnet_id"]])["Subnets"][0]
        block = IPv4Network(r["Cidr"])
        assert block.subnet_of(IPv4Network(subnet["CidrBlock"])) and block.prefixlen <= 28
    ds = live.kube.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert ds is not None and ds["metadata"]["annotations"] == {"gitops/synced": "yes"}
    env = aws_node_env_of(live.kube)
    values = env_values(env)  # also: no name twice
    assert values["ENABLE_PREFIX_DELEGATION"] == "true" and values["WARM_PREFIX_TARGET"] == "1"
    assert values["AWS_VPC_K8S_CNI_CONFIGURE_RPFILTER"] == "false"  # the other writer's change survived ours
    assert values[CUSTOM_NETWORK] == "false"

    again = live.apply()
    assert again.returncode == 0, again.stderr
    assert result_statuses(again.stdout, plan) == {s.id: "skipped" for s in plan.steps}
    for step in reserve:
        assert (
            len(ec2.get_subnet_cidr_reservations(SubnetId=step.params["subnet_id"])["SubnetIpv4CidrReservations"]) == 1
        )


def test_prefix_plan_is_stale_when_its_block_was_reserved_meanwhile(make_live: Callable[..., Live]) -> None:
    from click.testing import CliRunner

    from cidrx.cli import cli

    live = make_live(build_prefix_world)  # in process this time: AWS_ENDPOINT_URL points it at the server too
    plan_path = str(live.tmp / "plan.json")
    plan_args = ["--plan", "--out", plan_path, "--strategy", "prefix-delegation"]
    made = CliRunner().invoke(cli, ["expand", *live.target, *plan_args])
    assert made.exit_code == 0, made.output
    step = load_plan(plan_path).steps[0]
    assert step.action == "eks.reserve-subnet-cidr"
    block = IPv4Network(step.params["cidr"])
    # Someone reserves part of the planned block in the meantime.
    live.client("ec2").create_subnet_cidr_reservation(
        SubnetId=step.params["subnet_id"], Cidr=str(next(block.subnets(new_prefix=28))), ReservationType="explicit"
    )
    applied = CliRunner().invoke(cli, ["expand", "--apply", plan_path, "--yes", "--kubeconfig", live.kubeconfig])
    assert applied.exit_code == 4, applied.output


# --- exclusive apply: the plan's lock -------------------------------------------------------------------

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def test_two_applies_of_one_plan_started_together_one_proceeds_the_other_refuses(
    make_live: Callable[..., Live],
) -> None:
    """Both start at once; whichever takes the lock first is held (by the fake API server) right after, until
    the other has ended: it must have refused at once, exit 8, naming the lock, and changed nothing."""
    import threading

    live = make_live()
    plan = live.plan()
    before = estate(live)
    holding, release = threading.Event(), threading.Event()
    lease_path = f"{LEASES}/cidrx-plan-{plan.plan_id}"

    def hold_the_winner(record: RequestRecord) -> None:
        # Only the run holding the file lock reaches past the Lease: the other one only reads the Lease.
        if holding.is_set() or record.path.startswith(LEASES):
            return
        if live.kube.get("coordination.k8s.io", "v1", "leases", f"cidrx-plan-{plan.plan_id}", "kube-system"):
            holding.set()
            assert release.wait(60)

    live.hooks.add(hold_the_winner)
    args = ("expand", "--apply", "plan.json", "--yes", "--kubeconfig", live.kubeconfig)
    runs = [live.start(*args), live.start(*args)]
    try:
        assert holding.wait(60)
        lease = live.kube.get("coordination.k8s.io", "v1", "leases", f"cidrx-plan-{plan.plan_id}", "kube-system")
        assert lease is not None
        winner_pid = int(re.search(r"/pid (\d+)/", lease["spec"]["holderIdentity"])[1])  # type: ignore[index]
        winner = next(p for p in runs if p.pid == winner_pid)
        loser = finish(next(p for p in runs if p.pid != winner_pid))
    finally:
        release.set()
    assert loser.returncode == 8, loser.stderr
    assert f"another run holds the lock of plan {plan.plan_id}" in loser.stderr
    assert f"pid {winner_pid}/plan {plan.plan_id}" in loser.stderr and "plan.json.lock" in loser.stderr
    won = finish(winner)
    assert won.returncode == 0, won.stderr
    after = estate(live)
    assert len(after["subnets"]) == len(before["subnets"]) + 2 and len(after["nodegroups"]) == 2
    assert live.kube.get("coordination.k8s.io", "v1", "leases", f"cidrx-plan-{plan.plan_id}", "kube-system") is None
    assert lease_path not in [r.path for r in live.kube.requests() if r.method == "PUT"]  # never fought over


def test_an_apply_takes_over_the_expired_lease_of_a_run_that_died(make_live: Callable[..., Live]) -> None:
    live = make_live()
    plan = live.plan()
    live.kube.put(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": f"cidrx-plan-{plan.plan_id}", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": f"ci-runner-3/pid 4242/plan {plan.plan_id}",
                "leaseDurationSeconds": 60,
                "acquireTime": "2026-01-01T00:00:00.000000Z",
                "renewTime": "2026-01-01T00:10:00.000000Z",
            },
        }
    )
    applied = live.apply()
    assert applied.returncode == 0, applied.stderr
    assert f"took over Lease kube-system/cidrx-plan-{plan.plan_id} from ci-runner-3/pid 4242" in applied.stderr
    assert len(estate(live)["nodegroups"]) == 2


def test_an_apply_refuses_while_a_live_lease_is_held_elsewhere_and_changes_nothing(
    make_live: Callable[..., Live],
) -> None:
    from datetime import UTC, datetime

    live = make_live()
    plan = live.plan()
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    holder = f"ci-runner-9/pid 77/plan {plan.plan_id}"
    live.kube.put(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": f"cidrx-plan-{plan.plan_id}", "namespace": "kube-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 3600, "acquireTime": now, "renewTime": now},
        }
    )
    before = estate(live)
    refused = live.apply()
    assert refused.returncode == 8, refused.stderr
    assert f"{holder} since {now}" in refused.stderr and "--wait-for-lock" in refused.stderr
    assert estate(live) == before


def test_managed_vpc_cni_addon_is_configured_through_update_addon_keeping_its_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before: dict[str, dict[str, Any]] = {
        "env": {"WARM_IP_TARGET": "5", "MINIMUM_IP_TARGET": "10"},
        "init": {"env": {"DISABLE_TCP_EARLY_DEMUX": "true"}},
    }

    with eks_estate(tmp_path, monkeypatch, cluster=CLUSTER, addon=True, addon_config=before) as estate:
        addons, kube, kubeconfig = estate.addons, estate.kube, estate.kubeconfig
        assert addons is not None
        plan_path = str(tmp_path / "plan.json")
        made = run("expand", *estate.target, "--plan", "--out", plan_path)
        assert made.exit_code == 0, made.output
        plan = load_plan(plan_path)
        step = next(s for s in plan.steps if s.id == "enable-custom-networking")
        assert step.action == "eks.update-addon-env" and step.params["addon"] == "vpc-cni"

        apply = ["expand", "--apply", plan_path, "--yes", "--kubeconfig", kubeconfig]
        applied = run(*apply)
        assert applied.exit_code == 0, applied.output
        assert result_statuses(applied.stdout, plan) == {s.id: "done" for s in plan.steps}
        addon = addons.addon(CLUSTER)
        assert addon is not None and addon["status"] == "ACTIVE"
        after = json.loads(addon["configurationValues"])
        assert after == {
            "env": {**before["env"], CUSTOM_NETWORK: "true", LABEL_DEF: ZONE_LABEL},
            "init": before["init"],
        }
        (update,) = addons.updates.values()
        assert update["update"]["status"] == "Successful"  # the step waited for it (DescribeUpdate)
        assert {"type": "ResolveConflicts", "value": "PRESERVE"} in update["update"]["params"]
        assert addons.calls.count("UpdateAddon") == 1 and "DescribeUpdate" in addons.calls
        assert kube.count("PUT", "daemonsets") == 0  # EKS owns aws-node here; cidrx leaves it alone

        again = run(*apply)
        assert again.exit_code == 0, again.output
        assert result_statuses(again.stdout, plan) == {s.id: "skipped" for s in plan.steps}
        assert addons.calls.count("UpdateAddon") == 1
    # eks_estate re-raises anything the fake API server failed on while serving
