"""EKS expansion plans from snapshots: custom networking (the talk's manual fix, as steps), prefix
delegation, `--cidr` validation, and the drift check apply runs before it touches anything.

Pure: make_plan and check_drift read Snapshots (tests/support/cases/eks.py builds the variants).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import replace
from ipaddress import IPv4Network
from typing import Any

import pytest

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, Plan, Step, digest_of
from cidrx.model.snapshot import Snapshot
from cidrx.model.target import Target
from cidrx.providers.eks.provider import PROVIDER
from cidrx.providers.eks.strategies.space import occupied_space
from tests.support.cases import eks as cases
from tests.support.cases.eks import (
    AZ_A,
    AZ_B,
    CLUSTER_SG,
    NODEGROUP,
    PRIVATE_A,
    PRIVATE_B,
    PRIVATE_RT,
    PUBLIC_A,
    PUBLIC_B,
    PUBLIC_RT,
    VPC_ID,
)

check_drift = PROVIDER.check_drift  # the strategy's drift check, through the provider


def make_plan(snapshot: Snapshot, opts: PlanOptions | None = None, created_at: str = "") -> Plan:
    """The plan of `opts.strategy` (custom networking when none is given), as its strategy makes it."""
    opts = opts or PlanOptions()
    return PROVIDER.make_plan(snapshot, replace(opts, strategy=opts.strategy or "custom-networking"), created_at)


CREATED_AT = "2023-11-04T01:15:00Z"
CGNAT = IPv4Network("100.64.0.0/10")
REF = re.compile(r"^\$\{([^.}]+)\.([^}]+)\}$")


def plan_for(snap: Snapshot, **opts: Any) -> Plan:
    return make_plan(snap, PlanOptions(**opts), CREATED_AT)


def refused(snap: Snapshot, **opts: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as err:
        plan_for(snap, **opts)
    assert err.value.exit_code == 2
    return err.value


def stale(plan: Plan, snap: Snapshot) -> StalePlan:
    with pytest.raises(StalePlan) as err:
        check_drift(plan, snap)
    assert err.value.exit_code == 4
    return err.value


def steps_by_action(plan: Plan, action: str) -> list[Step]:
    return [s for s in plan.steps if s.action == action]


def plan_cidr(plan: Plan) -> IPv4Network:
    return IPv4Network(plan.step("associate-vpc-cidr").params["cidr"])


def refs(value: Any) -> list[str]:
    """Step ids referenced by `${step.key}` strings anywhere in `value`."""
    if isinstance(value, str):
        m = REF.match(value)
        return [m.group(1)] if m else []
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs(v)]
    if isinstance(value, list | tuple):
        return [r for v in value for r in refs(v)]
    return []


def raw_occupied(snap: Snapshot) -> list[tuple[IPv4Network, str]]:
    """Every VPC CIDR, subnet, peered CIDR and route destination (but 0.0.0.0/0), read from the snapshot
    directly rather than through the code under test."""
    eks = cases.eks_of(snap)
    out = [(IPv4Network(c.cidr), f"vpc {c.cidr}") for c in eks.vpc.cidrs]
    out += [(IPv4Network(s.cidr), f"subnet {s.subnet_id}") for s in eks.subnets]
    out += [(IPv4Network(c), f"peering {p.peering_id}") for p in eks.peerings for c in p.cidrs]
    out += [(IPv4Network(d), f"route {rt.route_table_id}") for rt in eks.route_tables for d in rt.destinations]
    return [(net, what) for net, what in out if net.prefixlen > 0]


def assert_free_cgnat_block(cidr: IPv4Network, snap: Snapshot) -> None:
    assert cidr.subnet_of(CGNAT)
    for net, what in raw_occupied(snap):
        assert not netmath.overlaps(cidr, net), f"{cidr} overlaps {what} ({net})"
    for net, where in occupied_space(cases.eks_of(snap)):
        assert not netmath.overlaps(cidr, net), f"{cidr} overlaps {where}"


@pytest.fixture(scope="module")
def incident_plan() -> Plan:
    return plan_for(cases.example())


# --- custom networking on the incident --------------------------------------------------------------


def test_cidr_is_free_cgnat_space(incident_plan: Plan) -> None:
    cidr = plan_cidr(incident_plan)
    assert cidr == IPv4Network("100.64.0.0/20")  # what the talk associates by hand
    assert_free_cgnat_block(cidr, cases.example())
    assert incident_plan.basis["cidr"] == str(cidr)
    assert incident_plan.summary["cidr"] == str(cidr)


def test_cidr_avoids_peerings_and_routes() -> None:
    snap = cases.busy_network()  # peering 10.1.0.0/16, routes to 172.20.0.0/16 and 100.64.0.0/18
    cidr = plan_cidr(plan_for(snap))
    assert_free_cgnat_block(cidr, snap)
    assert not cidr.overlaps(IPv4Network("100.64.0.0/18"))


@pytest.mark.parametrize("variant", [cases.cgnat_peered, cases.cgnat_routed], ids=["peering", "route"])
def test_occupied_100_64_0_0_16_pushes_the_choice_elsewhere(variant: Any) -> None:
    snap = variant()
    cidr = plan_cidr(plan_for(snap))
    assert not cidr.overlaps(IPv4Network("100.64.0.0/16"))
    assert_free_cgnat_block(cidr, snap)
    assert cidr.prefixlen == 20


def test_one_disjoint_subnet_per_az_inside_the_cidr(incident_plan: Plan) -> None:
    cidr = plan_cidr(incident_plan)
    creates = steps_by_action(incident_plan, "eks.create-subnet")
    assert [s.params["az"] for s in creates] == [AZ_A, AZ_B]
    pieces = [IPv4Network(s.params["cidr"]) for s in creates]
    assert all(p.subnet_of(cidr) for p in pieces)
    assert not pieces[0].overlaps(pieces[1])
    assert all(s.params["vpc_id"] == VPC_ID for s in creates)
    assert all(s.params["tags"]["kubernetes.io/cluster/demo-ip"] == "shared" for s in creates)
    assert all(s.depends_on == ("associate-vpc-cidr",) for s in creates)
    assert incident_plan.summary["subnets"] == {AZ_A: str(pieces[0]), AZ_B: str(pieces[1])}


def test_route_tables_follow_where_the_new_nodes_live(incident_plan: Plan) -> None:
    # The public node subnets are full, so the new nodes go to the private subnets (room for them):
    # the pod subnets are routed like those, not like the full subnets and not by the main table.
    ng = incident_plan.step("create-nodegroup")
    assert ng.params["subnets"] == [PRIVATE_A, PRIVATE_B]
    for az in (AZ_A, AZ_B):
        route = incident_plan.step(f"route-subnet-{az}")
        assert route.action == "eks.associate-route-table"
        assert route.params["route_table_id"] == PRIVATE_RT
        assert route.params["subnet_id"] == f"${{create-subnet-{az}.subnet_id}}"
    assert incident_plan.basis["route_tables"] == {AZ_A: PRIVATE_RT, AZ_B: PRIVATE_RT}
    assert any(PRIVATE_A in n and AZ_A in n for n in incident_plan.notes)


def test_route_tables_follow_the_template_subnets_when_they_have_room() -> None:
    plan = plan_for(cases.roomy())
    assert plan.step("create-nodegroup").params["subnets"] == [PUBLIC_A, PUBLIC_B]
    assert {plan.step(f"route-subnet-{az}").params["route_table_id"] for az in (AZ_A, AZ_B)} == {PUBLIC_RT}


def test_new_nodes_use_the_new_subnet_when_no_subnet_has_room() -> None:
    snap = cases.with_subnet(cases.with_subnet(cases.example(), PRIVATE_A, available_ips=2), PRIVATE_B, available_ips=2)
    plan = plan_for(snap)
    assert plan.step("create-nodegroup").params["subnets"] == [
        f"${{create-subnet-{AZ_A}.subnet_id}}",
        f"${{create-subnet-{AZ_B}.subnet_id}}",
    ]
    # routed like the template's own node subnet of that AZ (never the main table by accident)
    assert {plan.step(f"route-subnet-{az}").params["route_table_id"] for az in (AZ_A, AZ_B)} == {PUBLIC_RT}
    assert any("egress" in n for n in plan.notes)


def test_eniconfig_per_az_with_the_cluster_security_group(incident_plan: Plan) -> None:
    enis = steps_by_action(incident_plan, "kube.apply-eniconfig")
    assert [s.params["name"] for s in enis] == [AZ_A, AZ_B]
    for s in enis:
        az = s.params["name"]
        assert s.params["subnet"] == f"${{create-subnet-{az}.subnet_id}}"
        assert s.params["security_groups"] == [CLUSTER_SG]
        assert f"create-subnet-{az}" in s.depends_on


def test_env_step_targets_the_daemonset_without_an_addon(incident_plan: Plan) -> None:
    env = incident_plan.step("enable-custom-networking")
    assert env.action == "kube.set-daemonset-env"
    assert env.params == {
        "namespace": "kube-system",
        "name": "aws-node",
        "container": "aws-node",
        "env": {
            "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true",
            "ENI_CONFIG_LABEL_DEF": "topology.kubernetes.io/zone",
        },
    }
    assert set(env.depends_on) == {f"eniconfig-{AZ_A}", f"eniconfig-{AZ_B}"}


def test_env_step_targets_the_managed_addon() -> None:
    plan = plan_for(cases.managed_addon(configuration_values='{"env":{"WARM_ENI_TARGET":"1"}}'))
    env = plan.step("enable-custom-networking")
    assert env.action == "eks.update-addon-env"
    assert env.params["cluster"] == "demo-ip" and env.params["addon"] == "vpc-cni"
    assert env.params["env"]["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] == "true"
    assert "eks:UpdateAddon" in env.permissions
    assert plan.basis["cni_source"] == "addon"
    # the add-on wins even when the DaemonSet env was read too: the next add-on update would undo a DaemonSet edit
    both = plan_for(cases.managed_addon(keep_aws_node=True))
    assert both.step("enable-custom-networking").action == "eks.update-addon-env"


def test_nodegroup_copies_the_template(incident_plan: Plan) -> None:
    template = next(ng for ng in cases.eks_of(cases.example()).nodegroups if ng.name == NODEGROUP)
    step = incident_plan.step("create-nodegroup")
    p = step.params
    assert step.action == "eks.create-nodegroup"
    assert p["cluster"] == "demo-ip"
    assert p["name"] == "managed-ng-cn" != NODEGROUP
    assert p["instance_types"] == list(template.instance_types) == ["m5.large"]
    assert p["node_role"] == template.node_role
    # Everything but the template's identity (eksctl's nodegroup-name label and tags) is copied, and the
    # plan says what it left out.
    identity = {"alpha.eksctl.io/nodegroup-name", "alpha.eksctl.io/nodegroup-type"}
    assert identity & (set(template.labels) | set(template.tags))
    assert p["labels"] == {k: v for k, v in template.labels.items() if k not in identity}
    assert (p["ami_type"], p["capacity_type"], p["disk_size"]) == ("AL2_x86_64", "ON_DEMAND", 80)
    assert p["tags"] == {k: v for k, v in template.tags.items() if k not in identity} and DIGEST_TAG not in p["tags"]
    dropped = next(n for n in incident_plan.notes if "does not copy" in n)
    assert all(k in dropped for k in identity & (set(template.labels) | set(template.tags)))
    assert p["scaling"]["desiredSize"] == template.desired_size
    assert p["scaling"]["minSize"] <= p["scaling"]["desiredSize"] <= p["scaling"]["maxSize"]
    # one subnet per AZ the template spans, in the same AZs
    by_id = {s.subnet_id: s for s in cases.eks_of(cases.example()).subnets}
    assert [by_id[s].az for s in p["subnets"]] == sorted(by_id[s].az for s in template.subnet_ids)
    assert "iam:PassRole" in step.permissions
    assert incident_plan.basis["template_nodegroup"] == NODEGROUP
    assert incident_plan.basis["nodegroup_name"] == "managed-ng-cn"


def test_nodegroup_with_launch_template_copies_it_instead_of_instance_types() -> None:
    lt = {"id": "lt-0abc1234def567890", "version": "3"}
    plan = plan_for(cases.with_nodegroup(cases.example(), NODEGROUP, launch_template=lt))
    p = plan.step("create-nodegroup").params
    assert p["launch_template"] == lt
    assert "instance_types" not in p and "disk_size" not in p


def test_nodegroup_name_options() -> None:
    assert plan_for(cases.example(), pool_name="pods-cgnat").step("create-nodegroup").params["name"] == ("pods-cgnat")
    taken = cases.nodegroup_named(cases.example(), "managed-ng-cn")
    # (the copy has the template's sizes, so name the template: the default picks the largest group)
    assert plan_for(taken, template=NODEGROUP).step("create-nodegroup").params["name"] == "managed-ng-cn-2"
    refused(cases.example(), pool_name=NODEGROUP)


def test_references_point_at_earlier_steps_and_dependencies_are_valid(incident_plan: Plan) -> None:
    order = [s.id for s in incident_plan.steps]
    assert len(set(order)) == len(order)
    deps = {s.id: set(s.depends_on) for s in incident_plan.steps}

    def ancestors(step_id: str) -> set[str]:
        seen: set[str] = set()
        todo = list(deps[step_id])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(deps[d])
        return seen

    seen_refs = 0
    for i, s in enumerate(incident_plan.steps):
        for d in s.depends_on:
            assert d in order[:i], f"{s.id} depends on {d}, which is not an earlier step"
        for r in refs(s.params):
            seen_refs += 1
            assert r in order[:i], f"{s.id} refers to {r}, which is not an earlier step"
            assert r in ancestors(s.id), f"{s.id} refers to {r} without depending on it"
    assert seen_refs >= 4  # route + ENIConfig per AZ
    assert order[0] == "associate-vpc-cidr" and order[-1] == "create-nodegroup"
    assert set(ancestors("create-nodegroup")) == set(order) - {"create-nodegroup"}


def test_every_step_says_what_it_needs(incident_plan: Plan) -> None:
    for s in incident_plan.steps:
        assert s.description and s.permissions


def test_digest_is_stable_and_covers_the_steps(incident_plan: Plan) -> None:
    again = plan_for(cases.example())
    assert again == incident_plan
    assert again.digest == incident_plan.digest == digest_of(incident_plan)
    assert len(incident_plan.digest) == 64 and incident_plan.plan_id == incident_plan.digest[:16]
    assert incident_plan.snapshot_fingerprint == cases.example().fingerprint
    assert incident_plan.created_at == CREATED_AT
    # created_at, notes and summary are sealed too: they are what a reviewer reads
    assert make_plan(cases.example(), PlanOptions(), "later").digest != incident_plan.digest
    assert digest_of(dataclasses.replace(incident_plan, notes=("all good",))) != incident_plan.digest
    assert digest_of(dataclasses.replace(incident_plan, summary={"cidr": "10.0.0.0/8"})) != incident_plan.digest
    first = incident_plan.steps[0]
    changed_params = dataclasses.replace(first, params={**first.params, "cidr": "100.64.16.0/20"})
    tampered = dataclasses.replace(incident_plan, steps=(changed_params, *incident_plan.steps[1:]))
    assert digest_of(tampered) != incident_plan.digest
    reordered = dataclasses.replace(incident_plan, steps=tuple(reversed(incident_plan.steps)))
    assert digest_of(reordered) != incident_plan.digest
    assert plan_for(cases.example(), cidr="100.64.16.0/20").digest != incident_plan.digest


def test_basis_records_what_the_plan_relies_on(incident_plan: Plan) -> None:
    b = incident_plan.basis
    assert b["vpc_id"] == VPC_ID and b["primary_cidr"] == "10.0.0.0/16" and b["vpc_cidrs"] == ["10.0.0.0/16"]
    assert b["cluster_security_group"] == CLUSTER_SG
    assert b["eniconfigs"] == [] and b["cni_source"] == "aws-node"
    assert incident_plan.strategy == "custom-networking"
    assert incident_plan.target == cases.example().target
    assert incident_plan.summary["pods_per_node"] == 20  # m5.large with custom networking


# --- --cidr, --add-nodes and refusals -----------------------------------------------------------------


def test_a_given_cidr_is_used_and_split() -> None:
    plan = plan_for(cases.example(), cidr="100.64.0.0/22")
    assert plan_cidr(plan) == IPv4Network("100.64.0.0/22")
    assert [s.params["cidr"] for s in steps_by_action(plan, "eks.create-subnet")] == ["100.64.0.0/23", "100.64.2.0/23"]


@pytest.mark.parametrize(
    ("cidr", "message"),
    [
        ("10.0.0.0/16", "overlaps 10.0.0.0/16"),  # the VPC's own primary
        ("10.0.208.0/24", "overlaps 10.0.0.0/16"),
        ("172.16.0.0/16", "does not allow 172.16.0.0/16"),  # restricted for a 10/8 primary
        ("192.168.0.0/16", "does not allow"),
        ("100.64.0.0/28", "too small"),  # two AZs of /29: not even one node's pods
        ("169.254.0.0/16", "link-local"),
        ("100.64.0.0/12", "/16 to /28"),
        ("not-a-cidr", "not a valid IPv4 CIDR"),
    ],
)
def test_bad_cidr_is_invalid_input(cidr: str, message: str) -> None:
    err = refused(cases.example(), cidr=cidr)
    assert message in str(err)


def test_non_aligned_cidr_suggests_the_aligned_one() -> None:
    err = refused(cases.example(), cidr="100.64.1.0/20")
    assert "host bits" in str(err) and "100.64.0.0/20" in str(err)


def test_cidr_overlapping_a_peering_or_route_is_refused() -> None:
    assert "10.1.0.0/16" in str(refused(cases.busy_network(), cidr="10.1.0.0/16"))
    assert "routed" in str(refused(cases.busy_network(), cidr="100.64.0.0/20"))
    assert "routed" in str(refused(cases.cgnat_peered(), cidr="100.64.4.0/22"))


def test_cidr_too_small_for_aws_subnets_even_with_tiny_instances() -> None:
    """t3.micro needs 3 pod addresses per node with custom networking, so a /29 would hold one node's
    pods, but AWS subnets are /16 to /28: a /28 cannot be split into two subnets."""
    err = refused(cases.tiny_instances(), cidr="100.64.0.0/28")
    assert "too small" in str(err)
    assert plan_for(cases.tiny_instances(), cidr="100.64.0.0/27").summary["subnets"] == {
        AZ_A: "100.64.0.0/28",
        AZ_B: "100.64.0.16/28",
    }


def test_quota_reached_is_refused() -> None:
    err = refused(cases.at_cidr_quota())
    assert "quota" in str(err) and "L-83CA0A9D" in str(err)


def test_quota_reached_is_refused_with_a_given_cidr_too() -> None:
    err = refused(cases.at_cidr_quota(), cidr="100.64.0.0/20")
    assert "quota" in str(err)


def test_unknown_template_nodegroup_is_refused() -> None:
    err = refused(cases.example(), template="no-such-ng")
    assert "no-such-ng" in str(err) and NODEGROUP in str(err)
    assert plan_for(cases.example(), template=NODEGROUP).basis["template_nodegroup"] == NODEGROUP


def test_no_nodegroups_is_refused() -> None:
    refused(cases.with_eks(cases.example(), nodegroups=()))


def test_unknown_strategy_is_refused() -> None:
    assert "unknown EKS strategy" in str(refused(cases.example(), strategy="magic"))


def test_add_nodes_must_be_positive() -> None:
    refused(cases.example(), add_nodes=0)


def test_add_nodes_sizes_the_cidr_up() -> None:
    small = plan_cidr(plan_for(cases.example(), add_nodes=4))
    big = plan_cidr(plan_for(cases.example(), add_nodes=2000))
    assert small.prefixlen == 20
    assert big.prefixlen < 20
    # 2000 nodes x 20 pods, twice over: needs more than a /17
    assert big.num_addresses >= 2000 * 20
    assert_free_cgnat_block(big, cases.example())
    plan = plan_for(cases.example(), add_nodes=2000)
    assert plan.step("create-nodegroup").params["scaling"]["maxSize"] >= 2000


def test_no_kube_plans_from_the_cloud_side_alone() -> None:
    plan = plan_for(cases.no_kube())
    assert plan_cidr(plan) == IPv4Network("100.64.0.0/20")
    assert [s.params["az"] for s in steps_by_action(plan, "eks.create-subnet")] == [AZ_A, AZ_B]


def test_a_snapshot_without_eks_is_refused() -> None:
    refused(dataclasses.replace(cases.example(), eks=None))


# --- prefix delegation ----------------------------------------------------------------------------------


def test_prefix_delegation_refused_for_non_nitro() -> None:
    err = refused(cases.non_nitro(cases.roomy()), strategy="prefix-delegation")
    assert "m4.large" in str(err) and "Nitro" in str(err)


def test_prefix_delegation_refused_without_free_28s() -> None:
    err = refused(cases.example(), strategy="prefix-delegation")
    assert "no pod subnet has a free aligned /28" in str(err)
    assert "10.0.208.0/27" in str(err) and "custom-networking" in str(err)


def test_prefix_delegation_refuses_cidr() -> None:
    refused(cases.roomy(), strategy="prefix-delegation", cidr="100.64.0.0/20")


def test_prefix_delegation_on_subnets_with_free_28s() -> None:
    snap = cases.roomy()
    plan = plan_for(snap, strategy="prefix-delegation")
    assert plan.strategy == "prefix-delegation"
    reserves = steps_by_action(plan, "eks.reserve-subnet-cidr")
    assert {s.params["subnet_id"] for s in reserves} == {PUBLIC_A, PUBLIC_B}
    for s in reserves:
        sub = cases.subnet(snap, s.params["subnet_id"])
        block = IPv4Network(s.params["cidr"])
        assert s.params["type"] == "prefix"
        assert block.subnet_of(IPv4Network(sub.cidr))
        assert block.prefixlen <= 28 and int(block.network_address) % block.num_addresses == 0
        in_use = [IPv4Network(u) for u in sub.used]
        reserved = netmath.aws_reserved_addresses(IPv4Network(sub.cidr))
        assert not netmath.overlapping(block, [*in_use, *reserved])
    assert plan.step(f"reserve-prefixes-{PUBLIC_A}").params["cidr"] == "10.0.208.64/26"
    env = plan.step("enable-prefix-delegation")
    assert env.action == "kube.set-daemonset-env"
    assert env.params["env"]["ENABLE_PREFIX_DELEGATION"] == "true"
    assert plan.summary["free_28"] == {PUBLIC_A: 13, PUBLIC_B: 13}
    assert any("110 pods" in n for n in plan.notes)
    assert plan == plan_for(snap, strategy="prefix-delegation")


def test_prefix_delegation_env_goes_to_the_addon_when_managed() -> None:
    plan = plan_for(cases.managed_addon(cases.roomy()), strategy="prefix-delegation")
    assert plan.step("enable-prefix-delegation").action == "eks.update-addon-env"


# --- drift ----------------------------------------------------------------------------------------------


def test_unchanged_snapshot_passes(incident_plan: Plan) -> None:
    check_drift(incident_plan, cases.example())


def test_unrelated_tag_change_passes(incident_plan: Plan) -> None:
    s = cases.subnet(cases.example(), PRIVATE_A)
    check_drift(incident_plan, cases.with_subnet(cases.example(), PRIVATE_A, tags={**s.tags, "team": "platform"}))


def test_overlapping_subnet_added_by_someone_else_is_stale(incident_plan: Plan) -> None:
    intruder = cases.make_subnet("subnet-0intruder00000000", "100.64.4.0/24", AZ_A, tags={"Name": "someone-elses"})
    err = stale(incident_plan, cases.add_subnet(cases.example(), intruder))
    assert "subnet-0intruder00000000" in str(err) and "100.64.0.0/20" in str(err)
    assert "Nothing was applied" in str(err)


def test_overlapping_peering_added_later_is_stale(incident_plan: Plan) -> None:
    assert "100.64.0.0/16" not in str(incident_plan.basis)
    err = stale(incident_plan, cases.cgnat_peered())
    assert "pcx-0a1b2c3d4e5f60718" in str(err)


def test_nodegroup_with_the_plans_name_not_tagged_by_it_is_stale(incident_plan: Plan) -> None:
    snap = cases.nodegroup_named(cases.example(), "managed-ng-cn")
    err = stale(incident_plan, snap)
    assert "managed-ng-cn" in str(err)


def test_nodegroup_with_the_plans_name_tagged_by_it_passes(incident_plan: Plan) -> None:
    snap = cases.nodegroup_named(cases.example(), "managed-ng-cn", tags={DIGEST_TAG: incident_plan.plan_id})
    check_drift(incident_plan, snap)


def test_template_nodegroup_deleted_is_stale(incident_plan: Plan) -> None:
    snap = cases.with_eks(cases.example(), nodegroups=())
    assert NODEGROUP in str(stale(incident_plan, snap))


def test_route_table_deleted_is_stale(incident_plan: Plan) -> None:
    eks = cases.eks_of(cases.example())
    snap = cases.with_eks(
        cases.example(), route_tables=tuple(rt for rt in eks.route_tables if rt.route_table_id != PRIVATE_RT)
    )
    assert PRIVATE_RT in str(stale(incident_plan, snap))


def test_quota_reached_since_planning_is_stale(incident_plan: Plan) -> None:
    assert "quota" in str(stale(incident_plan, cases.at_cidr_quota()))


def test_resume_after_a_partial_apply_passes(incident_plan: Plan) -> None:
    """An interrupted apply associated the CIDR (AWS then adds a local route for it to every route table)
    and created the per-AZ subnets tagged with the plan id: none of that is drift."""
    snap = cases.partially_applied(
        cases.example(), incident_plan.plan_id, str(plan_cidr(incident_plan)), incident_plan.summary["subnets"]
    )
    check_drift(incident_plan, snap)
    # ... and the node group it made, tagged with the plan id
    check_drift(incident_plan, cases.nodegroup_named(snap, "managed-ng-cn", tags={DIGEST_TAG: incident_plan.plan_id}))


def test_resume_still_sees_subnets_that_are_not_ours(incident_plan: Plan) -> None:
    snap = cases.partially_applied(
        cases.example(), "0123456789abcdef", str(plan_cidr(incident_plan)), {AZ_A: "100.64.0.0/21"}
    )
    err = stale(incident_plan, snap)
    assert "subnet-0cidrx00000000000" in str(err)


def test_eniconfig_made_by_someone_else_is_stale(incident_plan: Plan) -> None:
    snap = cases.with_kube(cases.example(), eniconfigs=(cases.eniconfig(AZ_A, PRIVATE_A),))
    assert f"ENIConfig {AZ_A}" in str(stale(incident_plan, snap))
    ours = cases.with_kube(
        cases.example(), eniconfigs=(cases.eniconfig(AZ_A, PRIVATE_A, labels={DIGEST_TAG: incident_plan.plan_id}),)
    )
    check_drift(incident_plan, ours)


def test_plan_for_another_target_is_invalid_input(incident_plan: Plan) -> None:
    other = dataclasses.replace(incident_plan, target=Target("eks", "other-cluster", region="ap-southeast-2"))
    with pytest.raises(InvalidInput) as err:
        check_drift(other, cases.example())
    assert err.value.exit_code == 2
    assert "other-cluster" in str(err.value)


def test_prefix_delegation_drift() -> None:
    snap = cases.roomy()
    plan = plan_for(snap, strategy="prefix-delegation")
    check_drift(plan, snap)
    assert PUBLIC_A in str(stale(plan, cases.resize_subnet(snap, PUBLIC_A, "10.0.209.0/24")))
    eks = cases.eks_of(snap)
    gone = cases.with_eks(snap, subnets=tuple(s for s in eks.subnets if s.subnet_id != PUBLIC_B))
    assert PUBLIC_B in str(stale(plan, gone))


@pytest.mark.parametrize("strategy", ["custom-networking", "prefix-delegation"])
def test_a_change_in_how_the_vpc_cni_is_managed_is_drift(strategy: str) -> None:
    """The CNI step targets the managed add-on or the aws-node DaemonSet. If the cluster moved from one to
    the other since planning, the change would fail halfway or be overwritten by EKS: refuse first."""
    plain = cases.roomy() if strategy == "prefix-delegation" else cases.example()
    managed = cases.managed_addon(plain)
    addon_plan, daemonset_plan = plan_for(managed, strategy=strategy), plan_for(plain, strategy=strategy)
    assert any(s.action == "eks.update-addon-env" for s in addon_plan.steps)
    assert any(s.action == "kube.set-daemonset-env" for s in daemonset_plan.steps)
    check_drift(addon_plan, managed)
    check_drift(daemonset_plan, plain)
    assert "no longer the EKS add-on vpc-cni" in str(stale(addon_plan, plain))
    assert "now the managed EKS add-on vpc-cni" in str(stale(daemonset_plan, managed))
