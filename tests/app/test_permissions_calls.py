"""The printed permissions against the calls cidrx really makes: every operation a real diagnose, plan and
apply send must be granted by what `cidrx permissions --for diagnose` (diagnose, plan) or `--for apply`
(apply) prints; and the other way round, every permission printed for diagnose and every permission the
applied plan's steps declare must be needed by some call, or be named here as used only elsewhere.

Why it exists: the read lists (`COLLECT_PERMISSIONS` in cidrx/providers/eks/api.py and
cidrx/providers/gke/api.py) and the step declarations (the `Action`s in the plan modules) are written
by hand; a collector or executor that starts calling something new would fail in production under the
printed policy and nowhere else.

How the calls are recorded, with the real clients: AWS operations (and their parameters) through a
botocore `before-parameter-build` handler in botocore's BUILTIN_HANDLERS (every session cidrx makes for
itself starts with it), against moto (`mock_aws`) and the project's EKS add-on fake; Google Cloud REST
methods from the GCP fake's request log (each record carries the discovery method id); Kubernetes requests
from the fake API server's log, read the way the API server's authorizer reads them. Calls become
permissions through the explicit tables below.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from cidrx.app.permissions import allows, allows_path
from cidrx.providers.eks.api import FLEET_PERMISSIONS as EKS_FLEET
from cidrx.providers.gke.api import FLEET_PERMISSIONS as GKE_FLEET
from tests.support.cases import calico as calico_cases
from tests.support.cases import whereabouts as wc
from tests.support.cli import run as cli_run
from tests.support.estates import gke as gw
from tests.support.estates.eks import REGION, World, build_incident
from tests.support.estates.eks_cluster import build_prefix_world
from tests.support.estates.eks_discovery import build_discovery_off
from tests.support.estates.eks_live import eks_estate
from tests.support.estates.eks_variants import build_control_plane_room
from tests.support.fakes.eks_cluster_config import FakeClusterConfig
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer
from tests.support.permissions import iam_actions, printed, request_to_rbac

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

CLUSTER = "demo"

# --- AWS: botocore operation -> IAM action -------------------------------------------------------------

# IAM's service prefix for each botocore service cidrx calls (Service Authorization Reference, "Actions,
# resources, and condition keys for <service>": ec2, eks, servicequotas, sts, autoscaling). A service
# missing here fails the test: add its prefix after checking that reference.
IAM_PREFIX = {"ec2": "ec2", "eks": "eks", "service-quotas": "servicequotas", "sts": "sts", "autoscaling": "autoscaling"}
# Actions AWS authorises along with an operation, beyond the operation's own: CreateNodegroup passes the
# node role to EKS, which needs iam:PassRole (EKS User Guide, "Amazon EKS node IAM role").
IAM_ALSO = {"eks:CreateNodegroup": ("iam:PassRole",)}
# An EC2 create call that tags what it creates (TagSpecifications) also needs ec2:CreateTags (EC2 User
# Guide, "Grant permission to tag Amazon EC2 resources during creation"); no CreateTags request is sent.
TAG_ON_CREATE = ("ec2", "TagSpecifications", "ec2:CreateTags")
# Printed for diagnose but not called by every collect: DescribeSecurityGroups only when EKS does not
# report the cluster security group (docs/permissions.md says so); the fleet listing only by fleet mode
# (`diagnose --all-clusters`), not by a run on one cluster.
# Read only for clusters with self-managed groups (launch templates), or nodes outside any tagged group.
SELF_MANAGED_READS = {
    "ec2:DescribeLaunchTemplateVersions",
    "autoscaling:DescribeAutoScalingInstances",
    "ec2:DescribeInstances",
}
# DescribeAddonConfiguration is only called when the VPC CNI is a managed add-on; SearchTransitGatewayRoutes
# only for a VPC attached to a transit gateway, GetManagedPrefixListEntries only when a route refers to a prefix
# list (tests/test_eks_routes.py reads both).
AWS_OPTIONAL_READS = {
    "ec2:DescribeSecurityGroups",
    "eks:DescribeAddonConfiguration",
    "ec2:SearchTransitGatewayRoutes",
    "ec2:GetManagedPrefixListEntries",
    # Only for an IPAM pool that allocated the VPC's CIDRs (tests/test_eks_ipam.py).
    "ec2:GetIpamPoolAllocations",
    "ec2:GetIpamPoolCidrs",
    *EKS_FLEET,
    *SELF_MANAGED_READS,
}


class AwsCalls:
    """botocore `before-parameter-build` handler: every operation any session makes, as the IAM actions it
    needs."""

    def __init__(self) -> None:
        self.actions: list[str] = []

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        service = model.service_model.service_name
        assert service in IAM_PREFIX, f"cidrx called {service}:{model.name}; add the service's IAM prefix"
        self.actions.append(f"{IAM_PREFIX[service]}:{model.name}")
        tag_service, tag_param, tag_action = TAG_ON_CREATE
        if service == tag_service and params.get(tag_param):
            self.actions.append(tag_action)

    def needed(self) -> set[str]:
        return {x for a in self.actions for x in (a, *IAM_ALSO.get(a, ()))}

    def take(self) -> set[str]:
        out = self.needed()
        self.actions.clear()
        return out


# --- Google Cloud: REST method (discovery id) -> IAM permission --------------------------------------------

# Compute Engine: the "IAM Permissions" section of each method's REST reference page
# (https://cloud.google.com/compute/docs/reference/rest/v1/<resource>/<method>): aggregatedList needs the
# list permission, patch the update permission, and waiting on an operation the operation's get.
# GKE: "API permissions" (https://cloud.google.com/kubernetes-engine/docs/reference/api-permissions): node
# pools are read with container.clusters.get and created with container.clusters.update.
GCP_PERMISSION = {
    "compute.subnetworks.get": "compute.subnetworks.get",
    "compute.subnetworks.list": "compute.subnetworks.list",
    "compute.subnetworks.aggregatedList": "compute.subnetworks.list",
    "compute.subnetworks.patch": "compute.subnetworks.update",
    "compute.networks.get": "compute.networks.get",
    "compute.networks.listPeeringRoutes": "compute.networks.listPeeringRoutes",
    "compute.globalAddresses.list": "compute.globalAddresses.list",
    "compute.routes.list": "compute.routes.list",
    "container.projects.locations.clusters.list": "container.clusters.list",
    "compute.firewalls.list": "compute.firewalls.list",
    "compute.firewalls.get": "compute.firewalls.get",
    "compute.firewalls.patch": "compute.firewalls.update",
    "compute.globalOperations.get": "compute.globalOperations.get",
    "compute.globalOperations.wait": "compute.globalOperations.get",
    "compute.regionOperations.get": "compute.regionOperations.get",
    "compute.regionOperations.wait": "compute.regionOperations.get",
    "container.projects.locations.clusters.get": "container.clusters.get",
    "container.projects.locations.clusters.update": "container.clusters.update",
    "container.projects.locations.clusters.nodePools.get": "container.clusters.get",
    "container.projects.locations.clusters.nodePools.list": "container.clusters.get",
    "container.projects.locations.clusters.nodePools.create": "container.clusters.update",
    "container.projects.locations.operations.get": "container.operations.get",
    "compute.instances.aggregatedList": "compute.instances.list",
    "compute.instances.list": "compute.instances.list",
    "compute.addresses.list": "compute.addresses.list",
    "compute.forwardingRules.list": "compute.forwardingRules.list",
    "compute.subnetworks.expandIpCidrRange": "compute.subnetworks.expandIpCidrRange",
}
# Not a REST call cidrx makes, but checked by GKE when a node pool is created: acting as its service account.
GCP_ALSO = {
    "container.projects.locations.clusters.nodePools.create": ("iam.serviceAccounts.actAs",),
    # firewalls.patch also checks the rule's network (Compute Engine IAM reference of firewalls.patch).
    "compute.firewalls.patch": ("compute.networks.updatePolicy",),
}
# Printed for diagnose but not called by every collect: subnetworks.get only when the cluster's subnet is not
# in the project's aggregated list (a Shared VPC subnet of another project).
GCP_OPTIONAL_READS = {"compute.subnetworks.get", *GKE_FLEET}


def gcp_needed(fake: FakeGcp) -> set[str]:
    out: set[str] = set()
    for rec in fake.request_log:
        assert rec.method_id in GCP_PERMISSION, f"{rec.method} {rec.path} ({rec.method_id}): add it to the table"
        out |= {GCP_PERMISSION[rec.method_id], *GCP_ALSO.get(rec.method_id, ())}
    fake.reset_log()
    return out


# --- Kubernetes: request -> RBAC check ------------------------------------------------------------------


Rbac = tuple[str, str, str, str | None]  # verb, API group, resource, object name


def assert_kube_granted(server: FakeKubeServer, rules: list[dict[str, Any]], what: str) -> set[Rbac]:
    """Every request in `server`'s log is allowed by `rules`; returns them as RBAC sees them."""
    seen: set[Rbac] = set()
    for rec in server.request_log:
        rbac = request_to_rbac(server, rec.method, rec.path)
        if rbac is None:
            assert allows_path(rules, "get", rec.path), f"{what}: GET {rec.path} is not granted"
            continue
        verb, group, resource, name = rbac
        assert allows(rules, verb, group, resource, name), (
            f"{what}: {rec.method} {rec.path} ({verb} {resource}.{group} {name or ''}) is not granted"
        )
        seen.add(rbac)
    server.reset_log()
    return seen


def verbs_on(seen: set[Rbac]) -> set[tuple[str, str]]:
    return {(verb, resource) for verb, _group, resource, _name in seen}


# Declared for a branch these runs do not take: the ENIConfig step replaces an ENIConfig only when one of
# its own plan exists with other content (cidrx/providers/eks/steps.py ApplyEniConfig).
BRANCH_ONLY = {("kube.apply-eniconfig", "update")}


def assert_declarations_used(plan_path: Path, cloud: set[str], kube: set[Rbac]) -> None:
    """The other way round: each permission the applied plan's steps declare was needed by some call of the
    apply (a declaration nothing uses is a grant wider than needed)."""
    from cidrx.app.permissions import parse_kube
    from cidrx.model.plan import load_plan

    kube_used = {(verb, group, resource) for verb, group, resource, _name in kube}
    for step in load_plan(plan_path).steps:
        for perm in step.permissions:
            if not perm.startswith("kubernetes:"):
                assert perm in cloud, f"{step.id} declares {perm}, which no call of the apply needed"
                continue
            g = parse_kube(perm)
            for verb in g.verbs:
                if (step.action, verb) in BRANCH_ONLY:
                    continue
                assert (verb, g.group, g.resource) in kube_used, f"{step.id} declares {verb} {g.resource}, unused"


def run(*args: str) -> Result:
    result = cli_run(*args)
    assert "Traceback" not in result.output, result.output
    return result


# ========================================================================================================
# EKS: moto in-process, the add-on fake, the incident cluster in the fake Kubernetes API server
# ========================================================================================================


@dataclass
class Eks:
    world: World
    kube: FakeKubeServer
    kubeconfig: str
    aws: AwsCalls


@contextlib.contextmanager
def eks_env(
    builder: Callable[..., World], tmp: Path, mp: pytest.MonkeyPatch, *, addon: bool, wrap_moto: Any = None
) -> Iterator[Eks]:
    aws = AwsCalls()
    handlers = [("before-parameter-build", aws)]
    with eks_estate(tmp, mp, builder=builder, handlers=handlers, addon=addon, wrap_moto=wrap_moto) as estate:
        aws.actions.clear()
        yield Eks(estate.world, estate.kube, estate.kubeconfig, aws)


EKS_RUNS = [
    pytest.param(build_incident, "custom-networking", False, id="custom-networking-aws-node"),
    pytest.param(build_prefix_world, "prefix-delegation", True, id="prefix-delegation-vpc-cni-addon"),
    pytest.param(build_discovery_off, "subnet-discovery", True, id="subnet-discovery-vpc-cni-addon"),
    pytest.param(build_control_plane_room, "control-plane-subnets", False, id="control-plane-subnets"),
]
# The cluster operations moto lacks, answered in front of it (tests/support/fakes/eks_cluster_config.py).
EKS_FAKES: dict[str, Callable[[Any], Any]] = {
    "control-plane-subnets": lambda stub: FakeClusterConfig(REGION).wrap(stub),
}


@pytest.mark.parametrize(("builder", "strategy", "addon"), EKS_RUNS)
def test_eks_calls_of_diagnose_plan_and_apply_are_granted(
    builder: Callable[..., World], strategy: str, addon: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = printed("eks", "diagnose")
    write = printed("eks", "apply")
    read_actions, apply_actions = iam_actions(read["iam_policy"]), iam_actions(write["iam_policy"])
    with eks_env(builder, tmp_path, monkeypatch, addon=addon, wrap_moto=EKS_FAKES.get(strategy)) as env:
        target = ["--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", env.kubeconfig]
        diagnosed = run("diagnose", *target, "-o", "json", "--fail-on", "never")
        assert diagnosed.exit_code == 0, diagnosed.output
        used = env.aws.take()
        assert used <= read_actions, f"diagnose called {sorted(used - read_actions)}, not in --for diagnose"
        assert read_actions - used <= AWS_OPTIONAL_READS, f"printed, never called: {read_actions - used}"
        kube_seen = verbs_on(assert_kube_granted(env.kube, read["cluster_role"]["rules"], "diagnose"))
        assert ("get", "daemonsets") in kube_seen and ("list", "pods") in kube_seen

        path = tmp_path / "plan.json"
        made = run("expand", *target, "--plan", "--strategy", strategy, "--out", str(path))
        assert made.exit_code == 0, made.output
        planned = env.aws.take()
        assert planned <= read_actions, f"--plan called {sorted(planned - read_actions)}"
        assert_kube_granted(env.kube, read["cluster_role"]["rules"], "plan")

        applied = run("expand", "--apply", str(path), "--yes", "--kubeconfig", env.kubeconfig)
        assert applied.exit_code == 0, applied.output
        used = env.aws.take()
        assert used <= apply_actions, f"apply called {sorted(used - apply_actions)}, not in --for apply"
        kube_calls = assert_kube_granted(env.kube, write["cluster_role"]["rules"], "apply")
        assert_declarations_used(path, used, kube_calls)
        kube_seen = verbs_on(kube_calls)
        if strategy == "custom-networking":
            assert {"ec2:AssociateVpcCidrBlock", "ec2:CreateSubnet", "eks:CreateNodegroup", "iam:PassRole"} <= used
            assert {("create", "eniconfigs"), ("update", "daemonsets")} <= kube_seen
        elif strategy == "subnet-discovery":
            assert {"ec2:CreateSubnet", "ec2:CreateTags", "ec2:AssociateRouteTable", "eks:UpdateAddon"} <= used
            assert "eks:DescribeAddonConfiguration" in used  # the add-on update is checked against its schema
            assert ("update", "daemonsets") not in kube_seen
        elif strategy == "control-plane-subnets":
            assert {"eks:UpdateClusterConfig", "eks:DescribeUpdate"} <= used
        else:
            assert {"ec2:CreateSubnetCidrReservation", "eks:UpdateAddon", "eks:DescribeUpdate"} <= used
            assert ("update", "daemonsets") not in kube_seen  # EKS owns aws-node: the add-on is updated


# ========================================================================================================
# GKE: the loopback GCP fake (--no-kube; the Kubernetes side is the in-cluster tests' and test_permissions')
# ========================================================================================================

GKE_TARGET = ["--gke", "--project", gw.PROJECT, "--location", gw.LOCATION, "--cluster", gw.CLUSTER, "--no-kube"]


@pytest.mark.parametrize("strategy", ["node-pool", "cluster-range"])
def test_gke_calls_of_diagnose_plan_and_apply_are_granted(strategy: str, gcp: FakeGcp, tmp_path: Path) -> None:
    read = set(printed("gke", "diagnose")["gcp_permissions"])
    write = set(printed("gke", "apply")["gcp_permissions"])
    gcp.reset_log()
    diagnosed = run("diagnose", *GKE_TARGET, "-o", "json", "--fail-on", "never")
    assert diagnosed.exit_code == 0, diagnosed.output
    used = gcp_needed(gcp)
    assert used <= read, f"diagnose needs {sorted(used - read)}, not in --for diagnose"
    assert read - used <= GCP_OPTIONAL_READS, f"printed for diagnose, never used: {sorted(read - used)}"

    path = tmp_path / "plan.json"
    made = run("expand", *GKE_TARGET, "--plan", "--strategy", strategy, "--out", str(path))
    assert made.exit_code == 0, made.output
    assert gcp_needed(gcp) <= read

    applied = run("expand", "--apply", str(path), "--yes", "--no-kube")
    assert applied.exit_code == 0, applied.output
    used = gcp_needed(gcp)
    assert used <= write, f"apply needs {sorted(used - write)}, not in --for apply"
    assert_declarations_used(path, used, set())
    assert {"compute.subnetworks.update", "compute.regionOperations.get", "container.clusters.update"} <= used
    if strategy == "node-pool":
        assert "iam.serviceAccounts.actAs" in used


# ========================================================================================================
# In-cluster IPAM plans: the fake Kubernetes API server
# ========================================================================================================

IPAM_RUNS = {
    "whereabouts-reclaim": ("reclaim", "--ipam", "whereabouts"),
    "calico-reclaim": ("reclaim", "--ipam", "calico"),
    "calico-pool": ("expand", "--strategy", "calico-pool"),
}
IPAM_WRITES = {
    "whereabouts-reclaim": {("patch", "ippools"), ("delete", "overlappingrangeipreservations")},
    "calico-reclaim": {("update", "ipamblocks"), ("delete", "ipamhandles")},
    "calico-pool": {("create", "ippools")},
}
NODE_IPAM_READ = ("", "configmaps")  # the --k8s collector's own read (kubeadm-config), not a step's


@pytest.mark.parametrize("kind", list(IPAM_RUNS))
def test_in_cluster_calls_of_diagnose_plan_and_apply_are_granted(
    kind: str, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_"):
            monkeypatch.delenv(name)
    objects = wc.crashed_node_objects() if kind == "whereabouts-reclaim" else calico_cases.incident().objects()
    kube_server.put_many(objects)
    kube_server.reset_log()
    target = ["--k8s", "--kubeconfig", str(kubeconfig_path)]
    read = printed("k8s", "diagnose")["cluster_role"]["rules"]
    write = printed("k8s", "apply")["cluster_role"]["rules"]

    diagnosed = run("diagnose", *target, "-o", "json", "--fail-on", "never")
    assert diagnosed.exit_code == 0, diagnosed.output
    assert_kube_granted(kube_server, read, "diagnose")

    command, *plan_args = IPAM_RUNS[kind]
    path = tmp_path / "plan.json"
    made = run(command, *target, *plan_args, "--plan", "--out", str(path))
    assert made.exit_code == 0, made.output
    assert_kube_granted(kube_server, read, "plan")

    applied = run(command, "--apply", str(path), "--yes", "--kubeconfig", str(kubeconfig_path))
    assert applied.exit_code == 0, applied.output
    seen = assert_kube_granted(kube_server, write, "apply")
    assert_declarations_used(path, set(), seen)
    assert IPAM_WRITES[kind] <= verbs_on(seen), seen
    # The same in-cluster plans run on EKS and GKE targets: their ClusterRoles grant the apply's calls too.
    for provider in ("eks", "gke"):
        rules = printed(provider, "apply")["cluster_role"]["rules"]
        for verb, group, resource, name in seen:
            if (group, resource) != NODE_IPAM_READ:
                assert allows(rules, verb, group, resource, name), (provider, verb, group, resource, name)


# ========================================================================================================
# The mapping tables can fail
# ========================================================================================================


@dataclass(frozen=True)
class _Service:
    service_name: str


@dataclass(frozen=True)
class _Operation:
    """What the handler reads of botocore's OperationModel."""

    service_model: _Service
    name: str


def test_an_unmapped_aws_service_fails_the_recording() -> None:
    with pytest.raises(AssertionError, match="iam:GetRole"):
        AwsCalls()({}, _Operation(_Service("iam"), "GetRole"))


def test_the_recording_adds_what_aws_authorises_along_and_would_catch_a_write_in_diagnose() -> None:
    calls = AwsCalls()
    calls({"VpcIds": ["vpc-1"]}, _Operation(_Service("ec2"), "DescribeVpcs"))
    calls({"TagSpecifications": [{"ResourceType": "subnet"}]}, _Operation(_Service("ec2"), "CreateSubnet"))
    calls({}, _Operation(_Service("eks"), "CreateNodegroup"))
    needed = calls.needed()
    assert needed == {"ec2:DescribeVpcs", "ec2:CreateSubnet", "ec2:CreateTags", "eks:CreateNodegroup", "iam:PassRole"}
    assert needed - iam_actions(printed("eks", "diagnose")["iam_policy"]) == needed - {"ec2:DescribeVpcs"}
    assert needed <= iam_actions(printed("eks", "apply")["iam_policy"])
