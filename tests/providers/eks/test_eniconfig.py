"""ENIConfig selection as ipamd does it, and the security groups of the ENIConfigs cidrx writes.

Cases: upstream's own selection table (tests/support/cases/eniconfig_upstream.py), the env rules (unset and
empty both mean the default key), and the analysis findings that follow from the rule. Fakes: a cluster whose
nodes pick their ENIConfigs by annotation, diagnosed through the CLI against moto and the fake API server.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from cidrx.errors import InvalidInput
from cidrx.kube.collect import section_from
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.analyze.diagnosis import analyze
from cidrx.providers.eks.collect.cluster import READS, EniConfig, Read
from cidrx.providers.eks.facts.eniconfig import security_groups, select
from cidrx.providers.eks.provider import PROVIDER
from tests.support.cases import eks as cases
from tests.support.cases.eks import AZ_A, AZ_B, CLUSTER_SG, NODE_A, NODE_B, PRIVATE_A, PRIVATE_B
from tests.support.cases.eniconfig_upstream import CASES, UpstreamCase
from tests.support.cli import run
from tests.support.estates.eks_variants import ANNOTATION, annotate_node, use_annotated_eniconfigs

check_drift = PROVIDER.check_drift  # the strategy's drift check, through the provider


def make_plan(snapshot: Snapshot, opts: PlanOptions | None = None, created_at: str = "") -> Plan:
    """The plan of `opts.strategy` (custom networking when none is given), as its strategy makes it."""
    opts = opts or PlanOptions()
    return PROVIDER.make_plan(snapshot, replace(opts, strategy=opts.strategy or "custom-networking"), created_at)


pytestmark = pytest.mark.usefixtures("shared_botocore")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_upstream_selection_table(case: UpstreamCase) -> None:
    picked = select(case.labels, case.annotations, annotation_def=case.annotation_def, label_def=case.label_def)
    assert (picked.name if picked.name in case.eniconfigs else None) == case.want


def test_unset_and_empty_env_both_mean_the_default_key() -> None:
    labels = {"k8s.amazonaws.com/eniConfig": "by-label", "topology.kubernetes.io/zone": AZ_A}
    assert select(labels, {}).name == "by-label"
    assert select(labels, {}, label_def="").name == "by-label"
    assert select(labels, {}, label_def="topology.kubernetes.io/zone").name == AZ_A
    assert select({"topology.kubernetes.io/zone": AZ_A}, {}).name == "default"  # the zone label is not the default


def test_a_key_present_with_an_empty_value_is_taken_as_is() -> None:
    # Go's `name, ok := labels[key]`: present means chosen, even empty (ipamd then finds no ENIConfig "").
    picked = select({"vpc.amazonaws.com/externalEniConfig": ""}, {"k8s.amazonaws.com/eniConfig": "x"})
    assert picked.name == "" and "externalEniConfig" in picked.rule


def test_node_records_keep_only_the_keys_ipamd_reads() -> None:
    node = {
        "metadata": {
            "name": "n1",
            "labels": {"topology.kubernetes.io/zone": AZ_A, "team": "x", "my/eni": "cfg-label"},
            "annotations": {"my/annotation": "cfg-ann", "k8s.amazonaws.com/eniConfig": "ann", "other": "y"},
        }
    }
    env = [
        {"name": "ENI_CONFIG_LABEL_DEF", "value": "my/eni"},
        {"name": "ENI_CONFIG_ANNOTATION_DEF", "value": "my/annotation"},
    ]
    aws_node = {
        "metadata": {"name": "aws-node", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "aws-node", "env": env}]}}},
    }
    kube = section_from([], [node, {"metadata": {"name": "bare"}}], [], [], "ctx", reads=(READS, Read(aws_node)))
    assert kube.node_eniconfig_labels == {"n1": {"my/eni": "cfg-label"}}
    assert kube.node_eniconfig_annotations == {"n1": {"my/annotation": "cfg-ann", "k8s.amazonaws.com/eniConfig": "ann"}}


def _annotated(**env: str | None) -> Any:
    """Custom networking with ENI_CONFIG_LABEL_DEF unset, nodes annotated with ENIConfigs pods-a / pods-b."""
    snap = cases.with_env(cases.example(), AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true", **env)
    annotations = {
        name: {"k8s.amazonaws.com/eniConfig": pick} for name, pick in ((NODE_A, "pods-a"), (NODE_B, "pods-b"))
    }
    enis = (
        EniConfig("pods-a", PRIVATE_A, (CLUSTER_SG,), "2023-11-03T23:00:00Z"),
        EniConfig("pods-b", PRIVATE_B, (CLUSTER_SG,), "2023-11-03T23:00:00Z"),
    )
    return cases.with_kube(snap, node_eniconfig_annotations=annotations, eniconfigs=enis)


def ids(snap: Any) -> set[str]:
    return {f.id for f in analyze(snap).findings}


def test_annotated_nodes_have_their_eniconfigs_no_false_critical() -> None:
    found = ids(_annotated())
    assert "EKS-CUSTOM-NETWORKING-NO-ENICONFIG" not in found and "EKS-ENICONFIG-WRONG-AZ" not in found


def test_an_annotation_naming_an_absent_eniconfig_names_the_node() -> None:
    snap = _annotated()
    annotations = {**snap.kube.node_eniconfig_annotations, NODE_B: {"k8s.amazonaws.com/eniConfig": "gone"}}
    snap = cases.with_kube(snap, node_eniconfig_annotations=annotations)
    (f,) = [f for f in analyze(snap).findings if f.id == "EKS-CUSTOM-NETWORKING-NO-ENICONFIG"]
    assert "'gone'" in f.summary
    assert f.evidence == (f"node {NODE_B} ({AZ_B}) would use ENIConfig 'gone': annotation k8s.amazonaws.com/eniConfig",)


def test_zone_named_eniconfigs_with_the_label_unset_fall_back_to_default() -> None:
    # The classic mistake: ENIConfigs named after zones, ENI_CONFIG_LABEL_DEF not set: ipamd wants "default".
    snap = cases.custom_networking(cases.with_env(cases.example(), ENI_CONFIG_LABEL_DEF=None))
    snap = cases.with_env(snap, ENI_CONFIG_LABEL_DEF=None)
    (f,) = [f for f in analyze(snap).findings if f.id == "EKS-CUSTOM-NETWORKING-NO-ENICONFIG"]
    assert "('default')" in f.summary
    assert f.evidence[0].startswith(f"ENIConfigs named after zones ({AZ_A}, {AZ_B}) are never read")
    assert any(e.startswith(f"node {NODE_A} ({AZ_A}) would use ENIConfig 'default': no label") for e in f.evidence)
    assert "ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone" in f.remediation


def test_a_default_eniconfig_in_one_zone_is_wrong_for_the_other_zone() -> None:
    snap = cases.with_env(cases.example(), AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true")
    snap = cases.with_kube(snap, eniconfigs=(EniConfig("default", PRIVATE_A, (CLUSTER_SG,), "2023-11-03T23:00:00Z"),))
    found = [f for f in analyze(snap).findings if f.id.startswith("EKS-ENICONFIG") or "NO-ENICONFIG" in f.id]
    assert [(f.id, f.subject) for f in found] == [("EKS-ENICONFIG-WRONG-AZ", "eniconfig default")]
    assert any(e.startswith(f"node {NODE_B} in {AZ_B} uses it") for e in found[0].evidence)


def test_zones_without_nodes_are_judged_for_a_node_that_would_join() -> None:
    snap = cases.custom_networking(eniconfigs=(cases.eniconfig(AZ_A, PRIVATE_A),))
    snap = cases.with_kube(snap, nodes=tuple(n for n in snap.kube.nodes if n.zone == AZ_A))
    (f,) = [f for f in analyze(snap).findings if f.id == "EKS-CUSTOM-NETWORKING-NO-ENICONFIG"]
    assert f.evidence == (
        f"a new node of managed-ng ({AZ_B}) would use ENIConfig '{AZ_B}': label topology.kubernetes.io/zone "
        "(ENI_CONFIG_LABEL_DEF)",
    )


# --- the security groups of ENIConfigs cidrx writes ----------------------------------------------------


def _without_cluster_sg(snap: Any, *, listed: tuple[str, ...] = (), nodes: tuple[str, ...] = ()) -> Any:
    eks = cases.eks_of(snap)
    cluster = dataclasses.replace(eks.cluster, cluster_security_group_id="", security_group_ids=listed)
    return cases.with_eks(snap, cluster=cluster, node_security_groups=nodes)


def _eniconfig_groups(snap: Any) -> list[list[str]]:
    plan = make_plan(snap, PlanOptions())
    return [s.params["security_groups"] for s in plan.steps if s.action == "kube.apply-eniconfig"]


@pytest.mark.parametrize(
    ("change", "want"),
    [
        (lambda s: s, [CLUSTER_SG]),
        (lambda s: _without_cluster_sg(s, listed=("sg-b", "sg-a")), ["sg-a", "sg-b"]),
        (lambda s: _without_cluster_sg(s, nodes=("sg-node",)), ["sg-node"]),
    ],
    ids=["cluster-sg", "cluster-security-groups", "node-primary-eni-groups"],
)
def test_eniconfig_security_groups_fall_back_in_order(change: Callable[[Any], Any], want: list[str]) -> None:
    assert _eniconfig_groups(change(cases.example())) == [want, want]


def test_no_security_group_anywhere_refuses_to_plan() -> None:
    snap = _without_cluster_sg(cases.example())
    with pytest.raises(InvalidInput, match="cannot tell which security groups"):
        make_plan(snap, PlanOptions())
    with pytest.raises(InvalidInput):
        security_groups(cases.eks_of(snap))


def test_a_changed_security_group_fallback_is_drift() -> None:
    from cidrx.errors import StalePlan

    snap = _without_cluster_sg(cases.example(), listed=("sg-a",))
    plan = make_plan(snap, PlanOptions())
    assert plan.basis["eniconfig_security_groups"] == ["sg-a"]
    check_drift(plan, snap)
    with pytest.raises(StalePlan, match="security groups for the ENIConfigs changed"):
        check_drift(plan, _without_cluster_sg(cases.example(), listed=("sg-z",)))


# --- through the CLI, against moto and the fake API server ---------------------------------------------


def _diagnose(estate: Any) -> dict[str, Any]:
    result = run("diagnose", *estate.target, "-o", "json", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_annotation_based_cluster_through_the_cli(eks: Callable[..., Any]) -> None:
    with eks() as estate:
        chosen = use_annotated_eniconfigs(estate)
        doc = _diagnose(estate)
        assert not [
            f for f in doc["findings"] if f["id"] in ("EKS-CUSTOM-NETWORKING-NO-ENICONFIG", "EKS-ENICONFIG-WRONG-AZ")
        ]
        # One node loses its annotation: ipamd falls back to "default", which does not exist.
        annotate_node(estate, estate.world.node_ips[1], {ANNOTATION: None})
        doc = _diagnose(estate)
        (f,) = [f for f in doc["findings"] if f["id"] == "EKS-CUSTOM-NETWORKING-NO-ENICONFIG"]
        lost = sorted(chosen)[1]
        assert f["evidence"][-1].startswith(f"node {lost} (ap-southeast-2b) would use ENIConfig 'default'")


def test_plan_without_a_reported_cluster_security_group_uses_the_clusters_groups(
    eks: Callable[..., Any], tmp_path: Any
) -> None:
    # moto reports no clusterSecurityGroupId and cidrx looks the group up by its aws:eks:cluster-name tag; with
    # that tag gone the ENIConfigs carry the cluster's own security groups, never [''].
    with eks() as estate:
        estate.ec2.delete_tags(
            Resources=[estate.world.cluster_security_group_id], Tags=[{"Key": "aws:eks:cluster-name"}]
        )
        out = tmp_path / "plan.json"
        result = run("expand", *estate.target, "--plan", "--out", str(out))
        assert result.exit_code == 0, result.output
        plan = json.loads(out.read_text())
        groups = [s["params"]["security_groups"] for s in plan["steps"] if s["action"] == "kube.apply-eniconfig"]
        assert groups == [[estate.world.control_plane_security_group_id]] * 2
