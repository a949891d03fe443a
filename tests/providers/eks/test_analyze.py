"""EKS diagnosis from snapshots: the talk's incident as bundled, and one variant per finding.

Pure: analyze reads a Snapshot, so every case is the example changed by one thing (tests/support/cases/eks.py).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from cidrx.errors import InvalidInput
from cidrx.model import codec
from cidrx.model.findings import Capacity, Diagnosis, Finding, Severity
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.analyze.diagnosis import analyze
from cidrx.providers.eks.facts.cni import addon_env, cni_config, max_pods
from cidrx.providers.eks.facts.subnets import free_prefix_blocks
from cidrx.providers.eks.model import InstanceType
from tests.support.cases import eks as cases
from tests.support.cases.eks import (
    AZ_A,
    AZ_B,
    NODE_A,
    NODE_B,
    NODEGROUP,
    PRIVATE_A,
    PRIVATE_B,
    PUBLIC_A,
    PUBLIC_B,
    VPC_ID,
)


def ids(d: Diagnosis) -> list[str]:
    return [f.id for f in d.findings]


def found(d: Diagnosis, finding_id: str) -> list[Finding]:
    return [f for f in d.findings if f.id == finding_id]


def only(d: Diagnosis, finding_id: str) -> Finding:
    hits = found(d, finding_id)
    assert len(hits) == 1, (finding_id, ids(d))
    return hits[0]


def capacity(d: Diagnosis, kind: str) -> dict[str, Capacity]:
    return {(c.cidr or "") if kind == "subnet" else c.name: c for c in d.capacity if c.kind == kind}


@pytest.fixture(scope="module")
def incident() -> Diagnosis:
    return analyze(cases.example())


# --- the incident as bundled -------------------------------------------------------------------------


def test_full_public_subnets_are_exhausted_and_private_ones_are_not(incident: Diagnosis) -> None:
    hits = found(incident, "EKS-SUBNET-EXHAUSTED")
    assert sorted(f.subject for f in hits) == sorted(
        [f"{PUBLIC_A} (eks-demo-ip-vpc-stack-PublicSubnet01)", f"{PUBLIC_B} (eks-demo-ip-vpc-stack-PublicSubnet02)"]
    )
    assert all(f.severity is Severity.CRITICAL for f in hits)
    text = " ".join(f.summary for f in hits)
    assert "10.0.208.0/27" in text and "10.0.224.0/27" in text
    assert "10.0.186.0/27" not in text and "10.0.192.0/27" not in text
    assert any("0 of 27 usable addresses free (100% used)" in e for f in hits for e in f.evidence)
    for f in incident.findings:
        assert PRIVATE_A not in f.subject and PRIVATE_B not in f.subject
    assert not found(incident, "EKS-SUBNET-NEARLY-EXHAUSTED")


def test_both_azs_are_exhausted(incident: Diagnosis) -> None:
    hits = found(incident, "EKS-AZ-EXHAUSTED")
    assert sorted(f.subject for f in hits) == [AZ_A, AZ_B]
    assert all(f.severity is Severity.CRITICAL for f in hits)
    a = next(f for f in hits if f.subject == AZ_A)
    assert any(PUBLIC_A in e and "0 free" in e for e in a.evidence)


def test_pod_ip_assign_failure_carries_the_event(incident: Diagnosis) -> None:
    f = only(incident, "EKS-POD-IP-ASSIGN-FAILED")
    assert f.severity is Severity.CRITICAL
    assert f.subject == "cluster demo-ip"
    assert "9 time(s) across 1 pod(s)" in f.summary
    assert any(
        e.startswith("default/mydeploy-6bdbfc484d-2frv4:") and "failed to assign an IP address to container" in e
        for e in f.evidence
    )
    assert "1 pod(s) stuck in ContainerCreating" in f.evidence


def test_subnet_capacity_rows(incident: Diagnosis) -> None:
    rows = capacity(incident, "subnet")
    assert set(rows) == {"10.0.208.0/27", "10.0.224.0/27", "10.0.186.0/27", "10.0.192.0/27"}
    for cidr in ("10.0.208.0/27", "10.0.224.0/27"):
        r = rows[cidr]
        assert (r.size, r.used, r.free, r.utilization) == (27, 27, 0, 1.0)
    for cidr in ("10.0.186.0/27", "10.0.192.0/27"):
        r = rows[cidr]
        assert (r.size, r.used, r.free) == (27, 1, 26)
        assert r.utilization == pytest.approx(1 / 27, abs=1e-4)
    assert rows["10.0.208.0/27"].zone == AZ_A and rows["10.0.224.0/27"].zone == AZ_B
    assert rows["10.0.208.0/27"].name == f"{PUBLIC_A} (eks-demo-ip-vpc-stack-PublicSubnet01)"
    # A /27 never holds a free aligned /28: each half contains an AWS-reserved address.
    assert all("free /28: 0" in (r.note or "") for r in rows.values())


def test_nodegroup_and_vpc_capacity_rows(incident: Diagnosis) -> None:
    ng = capacity(incident, "nodegroup")[NODEGROUP]
    # m5.large: 3 ENIs x (10 - 1) + 2 = 29 pods per node, 2 nodes, 24 pods each.
    assert (ng.size, ng.used, ng.free, ng.nodes) == (58, 48, 10, 2)
    # The group's autoscaling max (4) is a scaling limit, not room in an address space.
    assert (ng.max_nodes, ng.extra["autoscaling_max_nodes"]) == (None, 4)
    assert ng.utilization == pytest.approx(48 / 58, abs=1e-4)
    assert ng.cidr is None
    assert "29 pods/node" in (ng.note or "")
    vpc = capacity(incident, "vpc-cidr-blocks")[VPC_ID]
    assert (vpc.cidr, vpc.size, vpc.used, vpc.free, vpc.utilization) == ("10.0.0.0/16", 5, 1, 4, 0.2)
    assert [c.kind for c in incident.capacity][-2:] == ["vpc-cidr-blocks", "vpc-cidr"]


def test_unallocated_vpc_space_is_a_capacity_row(incident: Diagnosis) -> None:
    """Four /27 subnets in 10.0.0.0/16: 128 of 65,536 addresses are in subnets, the rest is unallocated; of the
    128, two full subnets use 32 each (27 + 5 AWS reserves) and two others 6 each (1 + 5)."""
    block = capacity(incident, "vpc-cidr")[VPC_ID]
    assert (block.cidr, block.size, block.used, block.free) == ("10.0.0.0/16", 65536, 76, 65460)
    assert block.extra == {"unallocated": 65408, "free_in_subnets": 52}
    assert block.note == "128 in 4 subnet(s), 52 free in them; 65408 unallocated, largest free block /17"


def test_a_block_carved_into_subnets_is_allocated_not_used() -> None:
    """A /20 cut into two /21 subnets with nothing in them yet (what an expansion leaves): no unallocated space,
    but 4086 free addresses in its subnets. The row is not full and the verdict does not call it so."""
    from cidrx.model.netmap import Area, NetworkMap
    from cidrx.providers.eks.netmap import KIND, block_capacity
    from cidrx.render.table import is_out

    areas = tuple(Area(f"100.64.{i}.0/21", f"pods-{i}", "subnet", 2048, used=0, reserved=5) for i in (0, 8))
    row = block_capacity(NetworkMap(KIND, VPC_ID, "100.64.0.0/20", areas))
    assert (row.size, row.used, row.free, row.utilization) == (4096, 10, 4086, 0.0024)
    assert row.extra == {"unallocated": 0, "free_in_subnets": 4086}
    assert row.note == "4096 in 2 subnet(s), 4086 free in them; 0 unallocated"
    assert not is_out(row)
    full = tuple(dataclasses.replace(a, used=2043) for a in areas)
    assert is_out(block_capacity(NetworkMap(KIND, VPC_ID, "100.64.0.0/20", full)))  # carved and every subnet full


def test_findings_are_sorted_worst_first_and_counted(incident: Diagnosis) -> None:
    ranks = [f.severity.rank for f in incident.findings]
    assert ranks == sorted(ranks, reverse=True)
    assert incident.counts == {s.value: sum(1 for f in incident.findings if f.severity is s) for s in Severity}
    assert incident.counts["critical"] == 7  # 2 subnets, 2 AZs, the pod event, 2 control-plane subnets
    assert set(incident.counts) == {"info", "warning", "critical"}
    assert incident.snapshot_fingerprint == cases.example().fingerprint
    assert incident.target == cases.example().target


def test_diagnosis_is_deterministic(incident: Diagnosis) -> None:
    again = analyze(cases.example())
    assert again == incident
    assert codec.canonical_json(again) == codec.canonical_json(incident)
    assert json.loads(codec.dumps(again))["schema"] == "cidrx.diagnosis/v1"


def test_a_snapshot_without_an_eks_section_is_refused() -> None:
    snap: Snapshot = cases.example()
    with pytest.raises(InvalidInput) as err:
        analyze(dataclasses.replace(snap, eks=None))
    assert err.value.exit_code == 2


# --- each finding: fires when it should, silent when it should not -----------------------------------


def test_nearly_exhausted_when_room_for_one_more_node() -> None:
    d = analyze(cases.nearly_full(free=15))  # a new m5.large node needs 10 here; 15 is less than two nodes
    hits = found(d, "EKS-SUBNET-NEARLY-EXHAUSTED")
    assert sorted(f.subject.split()[0] for f in hits) == sorted([PUBLIC_A, PUBLIC_B])
    assert all(f.severity is Severity.WARNING for f in hits)
    assert "room for 1 more node(s)" in hits[0].summary
    assert not found(d, "EKS-SUBNET-EXHAUSTED") and not found(d, "EKS-AZ-EXHAUSTED")


def test_nearly_exhausted_is_silent_with_room() -> None:
    d = analyze(cases.roomy())
    assert not found(d, "EKS-SUBNET-NEARLY-EXHAUSTED")
    assert not found(d, "EKS-SUBNET-EXHAUSTED")
    assert not found(d, "EKS-AZ-EXHAUSTED")


def test_pod_ip_assign_failure_of_a_pod_no_longer_waiting_is_history() -> None:
    """The API server keeps events for --event-ttl (1h by default): once the pod started or is gone (a
    migration evicted it), its old FailedCreatePodSandBox event no longer makes the finding."""
    snap = cases.example()
    started = dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, waiting_pods=()))
    assert not found(analyze(started), "EKS-POD-IP-ASSIGN-FAILED")


def test_nodegroup_no_addresses_from_health_issue() -> None:
    d = analyze(cases.starved_nodegroup())
    f = only(d, "EKS-NODEGROUP-NO-ADDRESSES")
    assert f.severity is Severity.CRITICAL
    assert f.subject == f"nodegroup {NODEGROUP}"
    assert "node group health issue: InsufficientFreeAddresses" in f.evidence


def test_nodegroup_no_addresses_from_event() -> None:
    d = analyze(cases.short_event())
    f = only(d, "EKS-NODEGROUP-NO-ADDRESSES")
    assert f.subject == "cluster demo-ip"
    assert "InsufficientFreeAddressesInSubnet" in f.summary
    assert any(e.startswith("event kube-system/managed-ng-launch:") and PUBLIC_A in e for e in f.evidence)


def test_nodegroup_no_addresses_silent_without_signal(incident: Diagnosis) -> None:
    assert not found(incident, "EKS-NODEGROUP-NO-ADDRESSES")


def test_eniconfig_unused_when_custom_networking_is_off() -> None:
    d = analyze(cases.eniconfigs_only())
    f = only(d, "EKS-ENICONFIG-UNUSED")
    assert f.severity is Severity.WARNING
    assert "2 ENIConfig(s)" in f.summary
    assert not found(analyze(cases.custom_networking()), "EKS-ENICONFIG-UNUSED")
    assert not found(analyze(cases.example()), "EKS-ENICONFIG-UNUSED")


def test_eniconfig_subnet_missing() -> None:
    snap = cases.custom_networking(
        eniconfigs=(cases.eniconfig(AZ_A, "subnet-0deleted0000000000"), cases.eniconfig(AZ_B, PRIVATE_B))
    )
    f = only(analyze(snap), "EKS-ENICONFIG-SUBNET-MISSING")
    assert f.severity is Severity.CRITICAL
    assert f.subject == f"eniconfig {AZ_A}"
    assert "subnet-0deleted0000000000" in f.summary and VPC_ID in f.summary
    assert not found(analyze(cases.custom_networking()), "EKS-ENICONFIG-SUBNET-MISSING")


def test_eniconfig_wrong_az() -> None:
    snap = cases.custom_networking(
        eniconfigs=(cases.eniconfig(AZ_A, PRIVATE_A), cases.eniconfig(AZ_B, PRIVATE_A))  # 2b -> a subnet in 2a
    )
    f = only(analyze(snap), "EKS-ENICONFIG-WRONG-AZ")
    assert f.severity is Severity.CRITICAL
    assert f.subject == f"eniconfig {AZ_B}"
    assert PRIVATE_A in f.summary and AZ_A in f.summary
    assert not found(analyze(cases.custom_networking()), "EKS-ENICONFIG-WRONG-AZ")


def test_custom_networking_without_eniconfigs() -> None:
    f = only(analyze(cases.custom_networking(eniconfigs=())), "EKS-CUSTOM-NETWORKING-NO-ENICONFIG")
    assert f.severity is Severity.CRITICAL
    assert f"2 ENIConfig(s) that nodes would use do not exist ('{AZ_A}', '{AZ_B}')" in f.summary
    rule = "label topology.kubernetes.io/zone (ENI_CONFIG_LABEL_DEF)"
    assert set(f.evidence) == {
        f"node {NODE_A} ({AZ_A}) would use ENIConfig '{AZ_A}': {rule}",
        f"node {NODE_B} ({AZ_B}) would use ENIConfig '{AZ_B}': {rule}",
    }


def test_custom_networking_with_one_eniconfig_missing() -> None:
    snap = cases.custom_networking(eniconfigs=(cases.eniconfig(AZ_A, PRIVATE_A),))
    f = only(analyze(snap), "EKS-CUSTOM-NETWORKING-NO-ENICONFIG")
    assert f.evidence == (
        f"node {NODE_B} ({AZ_B}) would use ENIConfig '{AZ_B}': "
        "label topology.kubernetes.io/zone (ENI_CONFIG_LABEL_DEF)",
    )
    assert not found(analyze(cases.custom_networking()), "EKS-CUSTOM-NETWORKING-NO-ENICONFIG")
    assert not found(analyze(cases.example()), "EKS-CUSTOM-NETWORKING-NO-ENICONFIG")


def test_nodes_predating_their_eniconfig() -> None:
    d = analyze(cases.custom_networking())  # ENIConfigs made at 01:30, nodes joined at 00:12
    f = only(d, "EKS-NODES-PREDATE-ENICONFIG")
    assert f.severity is Severity.WARNING
    assert "2 node(s)" in f.summary
    assert any(e.startswith(NODE_A) for e in f.evidence) and any(e.startswith(NODE_B) for e in f.evidence)


def test_nodes_after_their_eniconfig_are_fine() -> None:
    snap = cases.nodes_created(cases.custom_networking(), "2023-11-04T02:00:00Z")
    assert not found(analyze(snap), "EKS-NODES-PREDATE-ENICONFIG")


def test_max_pods_above_eni_limit_with_custom_networking() -> None:
    # Nodes keep max-pods 29 from before; with custom networking m5.large can address 2 x 9 + 2 = 20.
    f = only(analyze(cases.custom_networking()), "EKS-MAX-PODS-ABOVE-ENI-LIMIT")
    assert f.severity is Severity.WARNING
    assert f.subject == "instance type m5.large"
    assert "accept 29 pods" in f.summary and "only 20" in f.summary
    assert set(f.evidence) == {NODE_A, NODE_B}


def test_max_pods_at_the_eni_limit_is_fine(incident: Diagnosis) -> None:
    assert not found(incident, "EKS-MAX-PODS-ABOVE-ENI-LIMIT")  # 29 == 3 x 9 + 2


def test_warm_pool_waste_is_a_warning_when_subnets_are_tight(incident: Diagnosis) -> None:
    f = only(incident, "EKS-WARM-POOL-WASTE")
    assert f.severity is Severity.WARNING
    assert "WARM_ENI_TARGET=1" in f.summary and "18 idle addresses on 2 node(s)" in f.summary  # 2 x 9


def test_warm_pool_waste_is_info_when_there_is_room() -> None:
    assert only(analyze(cases.roomy()), "EKS-WARM-POOL-WASTE").severity is Severity.INFO


def test_warm_pool_waste_is_silent_with_warm_ip_target() -> None:
    assert not found(analyze(cases.warm_ip_target()), "EKS-WARM-POOL-WASTE")
    assert not found(analyze(cases.with_env(cases.example(), WARM_IP_TARGET="2")), "EKS-WARM-POOL-WASTE")


def test_warm_ip_target_shrinks_what_a_new_node_needs() -> None:
    f = found(analyze(cases.warm_ip_target(target=3)), "EKS-SUBNET-EXHAUSTED")[0]
    # MINIMUM_IP_TARGET=10 dominates WARM_IP_TARGET=3: 10 pod addresses on an m5.large (9 per ENI) take
    # a second ENI, whose own primary address comes from the subnet too: 1 + 10 + 1.
    assert "needs 12" in f.summary


def test_prefix_no_free_block_when_prefix_delegation_is_on() -> None:
    d = analyze(cases.prefix_delegation())
    hits = found(d, "EKS-PREFIX-NO-FREE-BLOCK")
    assert sorted(f.subject.split()[0] for f in hits) == sorted([PUBLIC_A, PUBLIC_B])
    assert all(f.severity is Severity.CRITICAL for f in hits)
    assert not found(d, "EKS-PREFIX-DELEGATION-NOT-ENOUGH")


def test_prefix_no_free_block_silent_with_free_blocks() -> None:
    d = analyze(cases.prefix_delegation(cases.roomy()))
    assert not found(d, "EKS-PREFIX-NO-FREE-BLOCK")
    rows = capacity(d, "subnet")
    assert "free /28: 13" in (rows["10.0.208.0/24"].note or "")


def test_prefix_delegation_not_enough_on_the_incident(incident: Diagnosis) -> None:
    f = only(incident, "EKS-PREFIX-DELEGATION-NOT-ENOUGH")
    assert f.severity is Severity.INFO
    assert set(f.evidence) == {
        "10.0.208.0/27 (ap-southeast-2a): 0 free /28",
        "10.0.224.0/27 (ap-southeast-2b): 0 free /28",
    }


def test_prefix_delegation_not_enough_silent_without_exhaustion() -> None:
    assert not found(analyze(cases.roomy()), "EKS-PREFIX-DELEGATION-NOT-ENOUGH")
    assert not found(analyze(cases.nearly_full()), "EKS-PREFIX-DELEGATION-NOT-ENOUGH")


def test_prefix_delegation_not_enough_silent_when_a_full_subnet_still_has_a_free_28() -> None:
    """Big instances need 30 addresses per new node: a subnet with 20 free is full for them, yet 16 of
    those 20 form an aligned /28 that prefix delegation could use."""
    big = InstanceType(name="m5.4xlarge", vcpus=16, max_enis=8, ips_per_eni=30, hypervisor="nitro")
    snap = cases.with_eks(cases.example(), instance_types=(big,))
    snap = cases.with_nodegroup(snap, NODEGROUP, instance_types=("m5.4xlarge",))
    in_use = [f"10.0.208.{i}/32" for i in (*range(4, 96), *range(112, 127)) if i not in (40, 50, 60, 70)]
    snap = cases.resize_subnet(snap, PUBLIC_A, "10.0.208.0/25", used=tuple(in_use))
    snap = cases.resize_subnet(snap, PUBLIC_B, "10.0.224.0/25", used=tuple(u.replace("208", "224") for u in in_use))
    assert cases.subnet(snap, PUBLIC_A).available_ips == 20
    assert free_prefix_blocks(cases.subnet(snap, PUBLIC_A)) == 1  # 10.0.208.96/28
    d = analyze(snap)
    assert len(found(d, "EKS-SUBNET-EXHAUSTED")) == 2  # one more node needs 1 + 29 addresses
    assert not found(d, "EKS-PREFIX-DELEGATION-NOT-ENOUGH")


def test_vpc_cidr_quota_reached() -> None:
    d = analyze(cases.at_cidr_quota())
    f = only(d, "EKS-VPC-CIDR-QUOTA-REACHED")
    assert f.severity is Severity.WARNING
    assert f.subject == VPC_ID and "5 IPv4 CIDR blocks (quota 5)" in f.summary
    vpc = capacity(d, "vpc-cidr-blocks")[VPC_ID]
    assert (vpc.used, vpc.free, vpc.utilization) == (5, 0, 1.0)


def test_vpc_cidr_quota_silent_below_quota(incident: Diagnosis) -> None:
    assert not found(incident, "EKS-VPC-CIDR-QUOTA-REACHED")


def test_kube_unreachable_still_diagnoses_the_cloud_side() -> None:
    d = analyze(cases.no_kube(reason="--no-kube was given"))
    f = only(d, "KUBE-UNREACHABLE")
    assert f.severity is Severity.INFO
    assert f.evidence == ("--no-kube was given",)
    assert len(found(d, "EKS-SUBNET-EXHAUSTED")) == 2
    assert len(found(d, "EKS-AZ-EXHAUSTED")) == 2
    assert not found(d, "EKS-POD-IP-ASSIGN-FAILED")
    ng = capacity(d, "nodegroup")[NODEGROUP]
    assert (ng.nodes, ng.size, ng.used) == (2, 58, 0)  # desired size from EKS, pods unknown


def test_kube_unreachable_silent_with_access(incident: Diagnosis) -> None:
    assert not found(incident, "KUBE-UNREACHABLE")


def test_az_exhausted_with_custom_networking_when_node_subnets_are_full() -> None:
    """Pods would get addresses from the roomy ENIConfig subnets, but a new node also needs its own
    address from a node group subnet, and those are full: no node can join either AZ."""
    d = analyze(cases.custom_networking(cases.nodes_created(cases.example(), "2023-11-04T02:00:00Z")))
    assert sorted(f.subject for f in found(d, "EKS-AZ-EXHAUSTED")) == [AZ_A, AZ_B]
    exhausted = found(d, "EKS-SUBNET-EXHAUSTED")
    assert sorted(f.subject.split()[0] for f in exhausted) == sorted([PUBLIC_A, PUBLIC_B])
    assert all("needs 1" in f.summary for f in exhausted)  # only the node's own address


def test_az_not_exhausted_with_custom_networking_and_room_everywhere() -> None:
    d = analyze(cases.custom_networking(cases.roomy()))
    assert not found(d, "EKS-AZ-EXHAUSTED") and not found(d, "EKS-SUBNET-EXHAUSTED")


# --- where the CNI configuration comes from ----------------------------------------------------------


def test_addon_configuration_values_are_used_without_aws_node() -> None:
    snap = cases.managed_addon(configuration_values=json.dumps({"env": {"WARM_IP_TARGET": "5"}}))
    eks = cases.eks_of(snap)
    cni = cni_config(eks, snap.kube)
    assert (cni.source, cni.warm_ip_target) == ("addon", 5)
    assert not found(analyze(snap), "EKS-WARM-POOL-WASTE")


def test_addon_custom_networking_from_configuration_values() -> None:
    values = json.dumps({"env": {"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"}})
    d = analyze(cases.managed_addon(configuration_values=values))
    assert only(d, "EKS-CUSTOM-NETWORKING-NO-ENICONFIG").severity is Severity.CRITICAL


def test_addon_configuration_values_in_yaml() -> None:
    assert addon_env("env:\n  ENABLE_PREFIX_DELEGATION: 'true'\n  WARM_PREFIX_TARGET: 2\n") == {
        "ENABLE_PREFIX_DELEGATION": "true",
        "WARM_PREFIX_TARGET": "2",
    }
    assert addon_env("") == {} and addon_env("not: [valid") == {}


def test_aws_node_env_wins_over_the_addon() -> None:
    snap = cases.managed_addon(configuration_values=json.dumps({"env": {"WARM_IP_TARGET": "5"}}), keep_aws_node=True)
    assert cni_config(cases.eks_of(snap), snap.kube).source == "aws-node"
    assert only(analyze(snap), "EKS-WARM-POOL-WASTE").severity is Severity.WARNING


def test_addon_without_configuration_values_means_defaults() -> None:
    snap = cases.managed_addon(configuration_values="")
    cni = cni_config(cases.eks_of(snap), snap.kube)
    assert (cni.source, cni.custom_networking, cni.prefix_delegation, cni.warm_eni_target) == (
        "default",
        False,
        False,
        1,
    )


def test_max_pods_formulas() -> None:
    m5 = InstanceType(name="m5.large", vcpus=2, max_enis=3, ips_per_eni=10, hypervisor="nitro")
    base = cni_config(cases.eks_of(cases.example()), cases.example().kube)
    cn = cni_config(cases.eks_of(cases.custom_networking()), cases.custom_networking().kube)
    pd = cni_config(cases.eks_of(cases.prefix_delegation()), cases.prefix_delegation().kube)
    assert max_pods(m5, base) == 29  # 3 x (10 - 1) + 2
    assert max_pods(m5, cn) == 20  # (3 - 1) x (10 - 1) + 2
    assert max_pods(m5, pd) == 110  # 3 x 9 x 16 + 2 = 434, capped at 110 below 30 vCPUs
