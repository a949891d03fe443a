"""Karpenter kept off full subnets: the EKS-KARPENTER-SUBNET-FULL finding and the karpenter-subnets plan, on the
example with Karpenter's EC2NodeClass selecting the two full public subnets (a new m5.large node takes 10
addresses: 1 primary + 9 warm) while the cluster's private subnets in the same zones have 26 free each."""

from __future__ import annotations

import dataclasses

import pytest

from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.analyze.diagnosis import analyze
from cidrx.providers.eks.model import SelectorTerm
from cidrx.providers.eks.strategies.karpenter_subnets import make_plan
from tests.support.cases import eks as cases
from tests.support.cases import eks_provisioners as kp

FINDING = "EKS-KARPENTER-SUBNET-FULL"


def with_class(snap: Snapshot, **changes: object) -> Snapshot:
    p = cases.eks_of(snap).provisioners
    assert p is not None
    (c,) = p.node_classes
    return cases.with_eks(snap, provisioners=dataclasses.replace(p, node_classes=(dataclasses.replace(c, **changes),)))


def test_full_selected_subnets_with_room_elsewhere_in_the_zone_are_critical() -> None:
    d = analyze(kp.karpenter())
    (f,) = [f for f in d.findings if f.id == FINDING]
    assert f.severity.value == "critical" and f.subject == "EC2NodeClass default"
    assert any(cases.PUBLIC_A in e and cases.PRIVATE_A in e and "needs 10" in e for e in f.evidence)


def test_a_selected_subnet_with_room_in_the_zone_makes_it_a_warning() -> None:
    snap = with_class(
        kp.karpenter(),
        subnet_terms=(SelectorTerm(id=cases.PUBLIC_A), SelectorTerm(id=cases.PRIVATE_A)),
        subnets=(cases.PUBLIC_A, cases.PRIVATE_A),
    )
    (f,) = [f for f in analyze(snap).findings if f.id == FINDING]
    assert f.severity.value == "warning"


def test_no_finding_when_the_selected_subnets_have_room() -> None:
    assert FINDING not in {f.id for f in analyze(kp.karpenter(cases.roomy())).findings}


def test_plan_narrows_to_subnets_with_room_and_says_which_nodes_roll() -> None:
    plan = make_plan(kp.karpenter(), PlanOptions(), "2026-01-01T00:00:00Z")
    (step,) = plan.steps
    assert step.action == "kube.update-ec2nodeclass"
    assert step.params == {"name": "default", "subnet_ids": sorted([cases.PRIVATE_A, cases.PRIVATE_B])}
    assert plan.basis["ec2nodeclasses"]["default"]["subnet_terms"] == [{"tags": kp.DISCOVERY}]
    assert plan.summary["node_classes"]["default"] == {
        "keep": sorted([cases.PRIVATE_A, cases.PRIVATE_B]),
        "nodes_rolled": 2,
        "nodes_in_left_out_subnets": 2,
    }
    assert any("drift replace its nodes" in n and "2 node(s)" in n for n in plan.notes)


def test_a_roomy_selected_subnet_is_kept_and_nothing_is_added() -> None:
    snap = with_class(
        kp.karpenter(),
        subnet_terms=(SelectorTerm(id=cases.PUBLIC_A), SelectorTerm(id=cases.PRIVATE_A)),
        subnets=(cases.PUBLIC_A, cases.PRIVATE_A),
    )
    (step,) = make_plan(snap, PlanOptions(), "2026-01-01T00:00:00Z").steps
    assert step.params["subnet_ids"] == [cases.PRIVATE_A]


def test_nothing_to_do_is_one_clear_refusal() -> None:
    with pytest.raises(InvalidInput, match="karpenter-subnets has nothing to do"):
        make_plan(kp.karpenter(cases.roomy()), PlanOptions(), "2026-01-01T00:00:00Z")
