"""Clusters whose nodes do not come from managed node groups (Karpenter, EKS Auto Mode, self-managed Auto
Scaling groups): capacity rows, findings, the plans' follow-up per provisioner, and drift. Pure cases on the
bundled incident with its nodes handed to another provisioner (tests/support/cases/eks_provisioners.py)."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import pytest

from cidrx.app import apply as app_apply
from cidrx.app import diagnose as app_diagnose
from cidrx.app import plan as app_plan
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, Plan, load_plan
from cidrx.model.snapshot import Snapshot, load_snapshot
from cidrx.providers.eks.collect.provisioners import (
    karpenter_from,
    max_pods_from_user_data,
    node_class_from,
    node_pool_from,
    self_managed_from,
)
from cidrx.providers.eks.model import AUTO_NODE_CLASS, EC2_NODE_CLASS, NodeProvisioners
from tests.support.cases import eks as cases
from tests.support.cases import eks_provisioners as pc
from tests.support.cli import run

CN = PlanOptions(strategy="custom-networking")
PD = PlanOptions(strategy="prefix-delegation")


def _plan(snap: Snapshot, opts: PlanOptions = CN) -> Plan:
    return app_plan.make_plan(snap, opts)


def _actions(plan: Plan) -> list[str]:
    return [s.action for s in plan.steps]


def _ids(snap: Snapshot) -> set[str]:
    return {f.id for f in app_diagnose.analyze(snap).findings}


# --- capacity -----------------------------------------------------------------------------------------


def test_karpenter_nodepool_is_a_capacity_row_with_its_subnets_and_pod_slots() -> None:
    rows = {c.kind: c for c in app_diagnose.analyze(pc.karpenter()).capacity}
    row = rows["karpenter-nodepool"]
    assert (row.name, row.nodes) == (pc.NODE_POOL, 2)
    # The nodes report allocatable pods 29 (m5.large, ENI formula) each.
    assert row.size == sum(n.allocatable_pods or 0 for n in pc.karpenter().kube.nodes) == 58
    assert cases.PUBLIC_A in (row.note or "") and "RESERVED_ENIS=0" in (row.note or "")
    assert "nodegroup" not in rows


def test_auto_mode_nodepool_row_names_its_pod_subnets_or_the_node_subnets() -> None:
    rows = [c for c in app_diagnose.analyze(pc.auto_mode()).capacity if c.kind == "auto-mode-nodepool"]
    assert {r.name for r in rows} == {"general-purpose", "system", pc.AUTO_POOL}
    own = next(r for r in rows if r.name == pc.AUTO_POOL)
    assert own.nodes == 2 and "pods in the node subnets" in (own.note or "")


def test_self_managed_group_row_counts_its_instances_and_reads_max_pods_from_user_data() -> None:
    row = next(c for c in app_diagnose.analyze(pc.self_managed(max_pods=17)).capacity if c.kind == "self-managed-group")
    assert (row.name, row.nodes, row.size) == (pc.ASG, 2, 34)
    assert "--max-pods in user data" in (row.note or "") and "v4" in (row.note or "")


def test_a_karpenter_only_cluster_counts_nodeclass_subnets_as_node_subnets() -> None:
    notes = {c.name: c.note for c in app_diagnose.analyze(pc.karpenter()).capacity if c.kind == "subnet"}
    assert "nodes" in (notes[f"{cases.PUBLIC_A} (eks-demo-ip-vpc-stack-PublicSubnet01)"] or "")


# --- findings -------------------------------------------------------------------------------------------


def test_reserved_enis_finding_when_custom_networking_and_karpenter_without_it() -> None:
    unset = cases.with_env(pc.karpenter(), AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true")
    assert "EKS-KARPENTER-RESERVED-ENIS" in _ids(unset)
    assert "EKS-KARPENTER-RESERVED-ENIS" not in _ids(
        cases.with_env(pc.karpenter(reserved_enis=1), AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true")
    )
    assert "EKS-KARPENTER-RESERVED-ENIS" not in _ids(pc.karpenter())  # custom networking off


def test_auto_mode_says_eniconfigs_do_nothing_there() -> None:
    with_eniconfigs = cases.with_kube(pc.auto_mode(), eniconfigs=(cases.eniconfig(cases.AZ_A, cases.PRIVATE_A),))
    assert "EKS-AUTO-MODE-CNI-SETTINGS-IGNORED" in _ids(with_eniconfigs)
    assert "EKS-AUTO-MODE-CNI-SETTINGS-IGNORED" not in _ids(pc.auto_mode())


# --- plans ----------------------------------------------------------------------------------------------


def test_karpenter_only_cluster_gets_a_custom_networking_plan_without_a_node_group() -> None:
    plan = _plan(pc.karpenter(max_pods=29))
    assert "eks.create-nodegroup" not in _actions(plan)
    assert plan.step("karpenter-reserved-enis").params["env"] == {"RESERVED_ENIS": "1"}
    step = plan.step(f"ec2nodeclass-{pc.NODE_CLASS}")
    # The full public subnets cannot take the new nodes' own addresses: the private ones with room can.
    assert step.params["subnet_ids"] == [cases.PRIVATE_A, cases.PRIVATE_B]
    assert step.params["max_pods"] == 20  # (3 - 1) x (10 - 1) + 2: RESERVED_ENIS=1
    assert {"enable-custom-networking", "karpenter-reserved-enis"} <= set(step.depends_on)
    assert any("settings.reservedENIs" in n for n in plan.notes)
    assert any("drift" in n and pc.NODE_CLASS in n for n in plan.notes)
    assert plan.basis["template_nodegroup"] is None and plan.basis["ec2nodeclasses"] == {pc.NODE_CLASS: "7"}


def test_karpenter_with_reserved_enis_already_set_gets_no_controller_step() -> None:
    plan = _plan(pc.karpenter(reserved_enis=1))
    assert "kube.set-deployment-env" not in _actions(plan)
    assert "max_pods" not in plan.step(f"ec2nodeclass-{pc.NODE_CLASS}").params  # maxPods was not set


def test_auto_mode_plan_has_no_eniconfig_or_aws_node_step_and_sets_pod_subnets() -> None:
    plan = _plan(pc.auto_mode())
    actions = _actions(plan)
    assert not {"kube.apply-eniconfig", "kube.set-daemonset-env", "eks.update-addon-env"} & set(actions)
    assert "eks.create-nodegroup" not in actions
    step = plan.step(f"auto-nodeclass-{pc.AUTO_CLASS}")
    assert step.params["pod_subnets"] == [f"${{create-subnet-{az}.subnet_id}}" for az in (cases.AZ_A, cases.AZ_B)]
    assert step.params["pod_security_groups"] == [cases.CLUSTER_SG]
    # Its nodes' own addresses: the full public subnets cannot take them, the private ones can.
    assert step.params["subnets"] == [cases.PRIVATE_A, cases.PRIVATE_B]
    assert any("ignores aws-node env and ENIConfigs" in n for n in plan.notes)


def test_auto_mode_with_only_the_builtin_nodeclass_creates_its_own() -> None:
    plan = _plan(pc.auto_mode(builtin_only=True))
    step = plan.step("auto-nodeclass-cidrx-pod-subnets")
    assert step.params["create"] is True and step.params["role"] == "AmazonEKSAutoNodeRole"
    assert step.params["subnets"] == [cases.PRIVATE_A, cases.PRIVATE_B]  # the built-in's are full
    assert not any(s.id == "auto-nodeclass-default" for s in plan.steps)


def test_auto_mode_keeps_node_subnets_that_have_room() -> None:
    roomy = pc.auto_mode(cases.roomy())
    plan = _plan(roomy)
    assert "subnets" not in plan.step(f"auto-nodeclass-{pc.AUTO_CLASS}").params
    assert plan.step("auto-nodeclass-cidrx-pod-subnets").params["subnets"] == [cases.PUBLIC_A, cases.PUBLIC_B]


def test_prefix_delegation_is_refused_on_an_auto_mode_only_cluster() -> None:
    with pytest.raises(InvalidInput, match="Auto Mode"):
        _plan(cases.roomy(pc.auto_mode()), PD)


def test_prefix_delegation_gives_karpenter_nodeclasses_max_pods() -> None:
    plan = _plan(pc.karpenter(cases.roomy()), PD)
    step = plan.step(f"ec2nodeclass-{pc.NODE_CLASS}")
    assert step.params["max_pods"] == 110  # m5.large with prefixes: 434 by the formula, capped for 2 vCPUs
    assert step.depends_on == ("enable-prefix-delegation",)


def test_self_managed_plan_writes_a_launch_template_version_and_says_how_to_roll() -> None:
    plan = _plan(pc.self_managed())
    step = plan.step(f"launch-template-{pc.ASG}")
    assert step.params == {
        "template_id": "lt-0a1b2c3d4e5f60718",
        "source_version": 4,
        "max_pods_from": 29,
        "max_pods_to": 20,
    }
    assert "enable-custom-networking" in step.depends_on
    # The group launches $Latest: the new version is used without pointing the group at it.
    assert "eks.set-group-launch-template" not in _actions(plan)
    note = next(n for n in plan.notes if pc.ASG in n)
    assert "start-instance-refresh" in note and "eks.create-nodegroup" not in _actions(plan)


def test_a_group_pinned_to_a_version_is_pointed_at_the_new_one() -> None:
    plan = _plan(pc.self_managed(version="4"))
    step = plan.step(f"group-launch-template-{pc.ASG}")
    assert step.params["version"] == f"${{launch-template-{pc.ASG}.version}}"
    assert step.depends_on == (f"launch-template-{pc.ASG}",)


def test_unreadable_max_pods_gives_a_note_not_a_step() -> None:
    plan = _plan(pc.self_managed(max_pods=None))
    assert "eks.create-launch-template-version" not in _actions(plan)
    assert any("Make sure its nodes' kubelet --max-pods is 20" in n for n in plan.notes)


def test_prefix_delegation_raises_a_self_managed_groups_max_pods() -> None:
    plan = _plan(pc.self_managed(cases.roomy(), version="4"), PD)
    assert plan.step(f"launch-template-{pc.ASG}").params["max_pods_to"] == 110
    assert plan.step(f"group-launch-template-{pc.ASG}").action == "eks.set-group-launch-template"


def test_rewrite_max_pods_changes_only_the_figure_cidrx_read() -> None:
    from cidrx.providers.eks.actions.launch_template import rewrite_max_pods

    text = "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--max-pods=29 --node-labels=a=b'\n"
    encoded = base64.b64encode(text.encode()).decode()
    again = rewrite_max_pods(encoded, 29, 20)
    assert again is not None
    assert base64.b64decode(again).decode() == text.replace("--max-pods=29", "--max-pods=20")
    assert rewrite_max_pods(encoded, 17, 20) is None  # it no longer says what the plan read


def test_a_cluster_with_no_provisioner_at_all_still_refuses() -> None:
    bare = cases.with_eks(pc.karpenter(), provisioners=None)
    with pytest.raises(InvalidInput, match="no managed node groups"):
        _plan(bare)


# --- drift ----------------------------------------------------------------------------------------------


def test_drift_when_the_ec2nodeclass_is_gone() -> None:
    snap = pc.karpenter()
    plan = _plan(snap)
    found = cases.eks_of(snap).provisioners
    assert found is not None
    gone = cases.with_eks(snap, provisioners=dataclasses.replace(found, node_classes=()))
    with pytest.raises(StalePlan, match="EC2NodeClass default no longer exists"):
        app_apply.check_drift(plan, gone)
    app_apply.check_drift(plan, snap)  # nothing changed: no drift


def test_drift_when_someone_else_made_cidrxs_nodeclass() -> None:
    snap = pc.auto_mode(builtin_only=True)
    plan = _plan(snap)
    found = cases.eks_of(snap).provisioners
    assert found is not None
    theirs = dataclasses.replace(found.node_classes[0], name="cidrx-pod-subnets", labels={"team": "net"})
    ours = dataclasses.replace(theirs, labels={DIGEST_TAG: plan.plan_id})
    for nc, stale in ((theirs, True), (ours, False)):
        other = cases.with_eks(snap, provisioners=dataclasses.replace(found, node_classes=(*found.node_classes, nc)))
        if stale:
            with pytest.raises(StalePlan, match="created by someone else"):
                app_apply.check_drift(plan, other)
        else:
            app_apply.check_drift(plan, other)


def test_drift_when_auto_mode_was_turned_off() -> None:
    snap = pc.auto_mode()
    plan = _plan(snap)
    found = cases.eks_of(snap).provisioners
    assert found is not None
    off = cases.with_eks(snap, provisioners=dataclasses.replace(found, auto_mode=False))
    with pytest.raises(StalePlan, match="Auto Mode was turned off"):
        app_apply.check_drift(plan, off)


# --- converters, from upstream-shaped objects ----------------------------------------------------------


def test_node_class_and_pool_from_upstream_shaped_objects() -> None:
    ec2nc = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default", "resourceVersion": "42"},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}, {"id": "subnet-0abc"}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "kubelet": {"maxPods": 58},
        },
        "status": {"subnets": [{"id": "subnet-0abc", "zone": "us-west-2a", "zoneID": "usw2-az1"}]},
    }
    nc = node_class_from(ec2nc, EC2_NODE_CLASS)
    assert (nc.name, nc.resource_version, nc.max_pods, nc.subnets) == ("default", "42", 58, ("subnet-0abc",))
    assert nc.subnet_terms[0].tags == {"karpenter.sh/discovery": "demo"} and nc.subnet_terms[1].id == "subnet-0abc"
    auto = node_class_from(
        {
            "metadata": {"name": "private"},
            "spec": {"podSubnetSelectorTerms": [{"tags": {"kubernetes.io/role/cni": "1"}}]},
        },
        AUTO_NODE_CLASS,
    )
    assert auto.pod_subnet_terms[0].tags == {"kubernetes.io/role/cni": "1"}
    pool = node_pool_from(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
                }
            },
        }
    )
    assert (pool.node_class, pool.node_class_kind) == ("default", EC2_NODE_CLASS)


def test_karpenter_controller_env() -> None:
    deploy = {
        "metadata": {"name": "karpenter", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "controller", "env": [{"name": "RESERVED_ENIS", "value": "1"}]}]}
            }
        },
    }
    found = karpenter_from(deploy)
    assert found is not None and found.reserved_enis == 1
    deploy["spec"]["template"]["spec"]["containers"][0]["env"] = []  # type: ignore[index]
    again = karpenter_from(deploy)
    assert again is not None and again.reserved_enis is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#!/bin/bash\n/etc/eks/bootstrap.sh demo --use-max-pods false --kubelet-extra-args '--max-pods=17'\n", 17),
        (
            "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 58\n",
            58,
        ),
        ("#!/bin/bash\n/etc/eks/bootstrap.sh demo\n", None),
    ],
)
def test_max_pods_from_user_data(text: str, expected: int | None) -> None:
    assert max_pods_from_user_data(base64.b64encode(text.encode()).decode()) == expected


def test_gzip_or_garbage_user_data_is_left_alone() -> None:
    import gzip

    assert max_pods_from_user_data(base64.b64encode(gzip.compress(b"--max-pods=17")).decode()) is None
    assert max_pods_from_user_data("not base64 at all!") is None


def test_self_managed_group_from_describe_output() -> None:
    group = {
        "AutoScalingGroupName": "ng-1",
        "MinSize": 1,
        "MaxSize": 3,
        "DesiredCapacity": 2,
        "VPCZoneIdentifier": "subnet-b,subnet-a",
        "LaunchTemplate": {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "ng-1", "Version": "$Latest"},
        "Instances": [
            {"InstanceId": "i-1", "LifecycleState": "InService"},
            {"InstanceId": "i-2", "LifecycleState": "Terminating"},
        ],
        "Tags": [{"Key": "kubernetes.io/cluster/demo", "Value": "owned"}],
    }
    version = {"VersionNumber": 4, "LaunchTemplateData": {"InstanceType": "m5.large"}}
    g = self_managed_from(group, version, ["node-1"])
    assert (g.subnet_ids, g.instance_types, g.instances, g.nodes) == (
        ("subnet-a", "subnet-b"),
        ("m5.large",),
        1,
        ("node-1",),
    )
    assert g.launch_template == {"id": "lt-1", "name": "ng-1", "version": "$Latest"} and g.launch_template_version == 4


def test_snapshots_of_managed_node_group_clusters_are_unchanged() -> None:
    """The new section is None unless something was found, so old snapshots keep their fingerprints."""
    assert cases.eks_of(cases.example()).provisioners is None
    assert NodeProvisioners() == NodeProvisioners()


# --- the bundled Karpenter example ---------------------------------------------------------------------


def test_bundled_karpenter_example_is_the_case_and_gets_a_plan(tmp_path: Path) -> None:
    """examples/eks-karpenter.snapshot.json is `karpenter()` (regenerate it with save_snapshot)."""
    example = Path(__file__).resolve().parents[3] / "examples" / "eks-karpenter.snapshot.json"
    assert load_snapshot(example).fingerprint == pc.karpenter().fingerprint
    diag = run("diagnose", "--snapshot", str(example), "-o", "json")
    assert diag.exit_code == 3, diag.output
    kinds = {c["kind"] for c in json.loads(diag.stdout)["capacity"]}
    assert "karpenter-nodepool" in kinds and "nodegroup" not in kinds
    out = tmp_path / "plan.json"
    made = run("expand", "--snapshot", str(example), "--plan", "--out", str(out))
    assert made.exit_code == 0, made.output
    actions = [s.action for s in load_plan(out).steps]
    assert "kube.update-ec2nodeclass" in actions and "eks.create-nodegroup" not in actions


# --- Terraform -----------------------------------------------------------------------------------------


def test_terraform_of_an_auto_mode_plan_creates_cidrxs_nodeclass() -> None:
    from cidrx.render.terraform import render_terraform
    from tests.support.terraform_check import parse, resources

    pytest.importorskip("hcl2")
    plan = _plan(pc.auto_mode(builtin_only=True))
    doc = resources(parse(render_terraform(plan)))
    manifest = doc[("kubernetes_manifest", "nodeclass_cidrx_pod_subnets")]["manifest"]
    assert manifest["kind"] == "NodeClass" and manifest["metadata"]["labels"][DIGEST_TAG] == plan.plan_id
    pod_subnets = [str(t["id"]) for t in manifest["spec"]["podSubnetSelectorTerms"]]
    assert pod_subnets == ["${aws_subnet.pods_ap_southeast_2a.id}", "${aws_subnet.pods_ap_southeast_2b.id}"]
    assert not any(t == "kubernetes_env" for t, _ in doc)  # Auto Mode: no aws-node env


def test_terraform_refuses_a_partial_edit_of_an_existing_node_class() -> None:
    from cidrx.render.terraform import render_terraform

    with pytest.raises(InvalidInput, match=r"EC2NodeClass default.*no resource for that"):
        render_terraform(_plan(pc.karpenter()))
