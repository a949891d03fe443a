"""Diagnosis after an AKS plan was applied, per plan kind, on the bundled examples with the applied pool added (pure:
no fake): what the applied plan relieves, what still has to move, and when the full subnet counts again."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from cidrx.model.findings import Diagnosis, Finding, Severity
from cidrx.model.kube import KubePod
from cidrx.model.snapshot import Snapshot, seal, with_sections
from cidrx.providers.aks.analyze.analyze import analyze
from cidrx.providers.aks.collect.collect import pool_from
from cidrx.providers.aks.facts.applied import applied_plans
from cidrx.providers.aks.model import AgentPool, Subnet
from tests.support.cases import aks as cases
from tests.support.estates import aks as aw

PLAN = "b7c1d2e3f4a50617"
CREATED = "2025-03-14T10:00:00Z"  # after every event of the examples


def with_applied(snap: Snapshot, template: str, subnet: Subnet, pods: bool, created: str = CREATED) -> Snapshot:
    """`snap` with a copy of pool `template` that a cidrx plan created on `subnet` (its pod subnet when `pods`)."""
    aks = snap.aks
    assert aks is not None and aks.vnet is not None
    base = aks.pool(template)
    assert base is not None
    where = {"pod_subnet_id": subnet.id} if pods else {"vnet_subnet_id": subnet.id}
    pool = dataclasses.replace(base, name=f"{template}2", count=1, tags={"cidrx-plan": PLAN}, **where)
    vnet = dataclasses.replace(aks.vnet, subnets=(*aks.vnet.subnets, subnet))
    aks = dataclasses.replace(
        aks, agent_pools=(*aks.agent_pools, pool), vnet=vnet, pools_created_at={pool.name: created} if created else {}
    )
    return seal(with_sections(snap, aks=aks))


def only(d: Diagnosis, finding_id: str) -> Finding:
    (found,) = [f for f in d.findings if f.id == finding_id]
    return found


def test_pod_subnet_plan_relieves_the_pod_subnet_but_says_the_old_nodes_must_move() -> None:
    new = Subnet(aw.subnet_id(aw.POD_VNET, "workers2-pods"), "workers2-pods", "10.30.2.0/23", ip_configurations=16)
    d = analyze(with_applied(cases.pod_subnet(), "workers", new, pods=True))
    applied = only(d, "AKS-PLAN-APPLIED")
    assert applied.severity == Severity.WARNING
    # 507 usable (sized for the template's 6 nodes x 64), one node's first batch of 16 taken: 491 free, 30 batches.
    assert applied.summary == (
        f"plan {PLAN} applied {CREATED}: agent pool workers2 takes pod addresses from pod subnet workers2-pods "
        "(10.30.2.0/23), 491 addresses free, room for 30 more batch(es); migration pending"
    )
    old = only(d, "AKS-POD-SUBNET-EXHAUSTED")
    assert (old.subject, old.severity) == ("subnet pods", Severity.WARNING)
    assert "pods placed on the nodes of workers still fail until they move" in old.summary
    assert (
        "--plan --out plan.json --strategy aks-migrate`" in old.remediation and "cidrx expand --aks" in old.remediation
    )
    assert [f for f in d.findings if f.severity == Severity.CRITICAL] == []  # the sandbox errors predate the pool
    snap = with_applied(cases.pod_subnet(), "workers", new, pods=True)
    [plan] = applied_plans(snap)
    assert (plan.plan_id, plan.size, plan.free) == (PLAN, 507, 491)
    assert plan.space == "agent pool workers2 (pod subnet workers2-pods 10.30.2.0/23)"


def test_a_full_new_subnet_relieves_nothing_and_the_old_one_is_critical_again() -> None:
    new = Subnet(aw.subnet_id(aw.NODE_VNET, "nodepool12-nodes"), "nodepool12-nodes", "10.10.3.0/27", 27)
    snap = with_applied(cases.node_subnet(), "nodepool1", new, pods=False)
    d = analyze(snap)
    applied = only(d, "AKS-PLAN-APPLIED")
    assert applied.severity == Severity.INFO
    assert (
        applied.summary == f"plan {PLAN} applied {CREATED}: agent pool nodepool12's subnet nodepool12-nodes is full too"
    )
    assert {f.subject for f in d.findings if f.id == "AKS-SUBNET-FULL" and f.severity == Severity.CRITICAL} == {
        "subnet aks-nodes",
        "subnet nodepool12-nodes",
    }
    assert only(d, "AKS-SUBNET-ERRORS-SEEN").severity == Severity.CRITICAL  # no pool with room: the errors count
    [plan] = applied_plans(snap)
    assert (plan.size, plan.free) == (27, 0)  # `expand --plan` may stack another expansion


def test_a_pod_pinned_to_the_old_pool_keeps_its_subnet_critical() -> None:
    new = Subnet(aw.subnet_id(aw.NODE_VNET, "nodepool12-nodes"), "nodepool12-nodes", "10.10.3.0/24", 31)
    snap = with_applied(cases.node_subnet(), "nodepool1", new, pods=False)
    pinned = KubePod("default", "batch-1", "Pending", "", "Unschedulable", CREATED, node_pool="nodepool1")
    snap = seal(dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, waiting_pods=(pinned,))))
    d = analyze(snap)
    assert only(d, "AKS-SUBNET-FULL").severity == Severity.CRITICAL
    assert only(d, "AKS-PLAN-APPLIED").severity == Severity.INFO


def test_without_a_creation_time_old_errors_still_count() -> None:
    new = Subnet(aw.subnet_id(aw.NODE_VNET, "nodepool12-nodes"), "nodepool12-nodes", "10.10.3.0/24", 31)
    d = analyze(with_applied(cases.node_subnet(), "nodepool1", new, pods=False, created=""))
    assert only(d, "AKS-SUBNET-FULL").severity == Severity.INFO
    assert only(d, "AKS-SUBNET-ERRORS-SEEN").severity == Severity.CRITICAL
    assert only(d, "AKS-PLAN-APPLIED").summary.startswith(f"plan {PLAN} applied: agent pool nodepool12 takes new")


def test_collect_reads_the_pools_creation_time_from_system_data() -> None:
    from cidrx.providers.aks.collect.collect import _created_at

    assert _created_at({"systemData": {"createdAt": "2026-11-29T00:10:00Z"}}) == "2026-11-29T00:10:00Z"
    assert _created_at({"systemData": {"createdAt": datetime(2026, 11, 29, 0, 10, tzinfo=UTC)}}) == (
        "2026-11-29T00:10:00Z"
    )
    assert _created_at({}) is None
    assert isinstance(pool_from(aw.pool_json("p", count=1, maxPods=30)), AgentPool)


def test_each_plan_says_in_its_notes_whether_anything_moves_after_the_apply() -> None:
    from cidrx.app import plan as app_plan
    from cidrx.model.options import PlanOptions

    node = app_plan.make_plan(cases.node_subnet(), PlanOptions())
    assert node.notes[0].startswith("Nothing has to move after the apply: nodepool1's nodes keep the addresses")
    pods = app_plan.make_plan(cases.pod_subnet(), PlanOptions())
    assert pods.notes[0].startswith("After the apply, move the workloads: workers's nodes still take pod addresses")
    assert "--plan --out migrate.json --strategy aks-migrate" in pods.notes[0]


def test_expand_plan_refuses_a_second_expansion_while_the_applied_one_has_room() -> None:
    from cidrx.app import plan as app_plan
    from cidrx.errors import InvalidInput
    from cidrx.model.options import PlanOptions

    new = Subnet(aw.subnet_id(aw.POD_VNET, "workers2-pods"), "workers2-pods", "10.30.2.0/23", ip_configurations=16)
    snap = with_applied(cases.pod_subnet(), "workers", new, pods=True)
    try:
        app_plan.make_plan(snap, PlanOptions())
    except InvalidInput as exc:
        assert (
            f"plan {PLAN}" in str(exc)
            and "still has room in its new space" in str(exc)
            and "agent pool workers2" in str(exc)
        )
    else:
        raise AssertionError("a second expansion was planned")
    forced = app_plan.make_plan(snap, PlanOptions(force=True))
    assert any(f"plan {PLAN} (agent pool workers2" in n for n in forced.notes)


def test_a_new_subnet_running_low_warns_while_the_old_one_stays_relieved() -> None:
    # /25: 123 usable, the new node's 31 taken, 92 free: room for 2 more nodes of 31, but the copied autoscaler
    # range needs (5 + 1) x 31 = 186 up front.
    new = Subnet(aw.subnet_id(aw.NODE_VNET, "nodepool12-nodes"), "nodepool12-nodes", "10.10.3.0/25", 31)
    d = analyze(with_applied(cases.node_subnet(), "nodepool1", new, pods=False))
    assert {(f.id, f.subject, f.severity) for f in d.findings if f.severity != Severity.INFO} == {
        ("AKS-SUBNET-TOO-SMALL", "subnet nodepool12-nodes", Severity.WARNING)
    }
    assert "room for 2 more node(s)" in only(d, "AKS-PLAN-APPLIED").summary
