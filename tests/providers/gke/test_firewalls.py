"""Firewall rules that must learn a new GKE pod range (cidrx/providers/gke/facts/firewalls.py, the
gke.add-firewall-range step): which rules a plan widens, what it only reports, drift, and the step against
the loopback fake (firewalls.list/get/patch checked against the compute discovery document).
"""

from __future__ import annotations

import json
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest

from cidrx.errors import StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.collect.collect import firewall_from
from cidrx.providers.gke.facts.firewalls import pod_cidrs, review
from cidrx.providers.gke.model import FirewallRule
from cidrx.providers.gke.provider import PROVIDER
from tests.support.cases import gke as cases
from tests.support.cli import run
from tests.support.estates.gke import CLUSTER, FIREWALL_ALL, LOCATION, POD_CIDR, PROJECT, SUBNET_CIDR
from tests.support.fakes.gcp_server import FakeGcp, RequestRecord

TARGET = ["--gke", "--project", PROJECT, "--location", LOCATION, "--cluster", CLUSTER, "--no-kube"]


def plan_of(snap: Snapshot, created_at: str = "", **opts: Any) -> Plan:
    """A plan as `expand --plan` makes it (node-pool unless `strategy` says otherwise)."""
    return PROVIDER.make_plan(snap, PlanOptions(**{"strategy": "node-pool", **opts}), created_at)


def test_converter_reads_a_real_shaped_rule() -> None:
    # The shape of GKE's -all rule in gcpdiag's dump (see tests/support/gke_world.incident_firewalls).
    rule = firewall_from(
        {
            "kind": "compute#firewall",
            "name": "gke-gke2-12cd17cd-all",
            "network": "https://www.googleapis.com/compute/v1/projects/p/global/networks/default",
            "priority": 1000,
            "sourceRanges": ["10.4.0.0/14"],
            "targetTags": ["gke-gke2-12cd17cd-node"],
            "allowed": [{"IPProtocol": "icmp"}, {"IPProtocol": "tcp"}],
            "direction": "INGRESS",
            "disabled": False,
        },
        "p",
    )
    assert rule == FirewallRule(
        "gke-gke2-12cd17cd-all", "p", "INGRESS", ("10.4.0.0/14",), (), "allow", False, 1000, ("gke-gke2-12cd17cd-node",)
    )
    deny = firewall_from(
        {"name": "d", "direction": "EGRESS", "destinationRanges": ["10.4.0.0/14"], "denied": [{}]}, "p"
    )
    assert (deny.action, deny.ranges_field, deny.ranges) == ("deny", "destinationRanges", ("10.4.0.0/14",))


def test_the_plan_widens_the_rule_naming_the_pod_range_and_leaves_broad_ones() -> None:
    plan = plan_of(cases.with_firewalls(cases.incident()))
    cidr = plan.basis["cidr"]
    assert [s.id for s in plan.steps] == [
        "add-secondary-range",
        f"widen-firewall-{cases.FIREWALL_ALL}",
        "create-node-pool",
    ]
    step = plan.steps[1]
    assert step.action == "gke.add-firewall-range"
    assert step.params == {
        "project": cases.PROJECT,
        "firewall": cases.FIREWALL_ALL,
        "field": "sourceRanges",
        "cidr": cidr,
        "seen": [cases.POD_CIDR],
    }
    assert plan.steps[2].depends_on == ("add-secondary-range", step.id)
    assert plan.basis["firewalls"] == {cases.FIREWALL_ALL: [cases.POD_CIDR]}
    notes = "\n".join(plan.notes)
    assert f"cidrx adds {cidr} to the firewall rules that name a pod range: {cases.FIREWALL_ALL}." in notes
    # allow-internal (10.0.0.0/8) already covers the new 10.x range: neither widened nor reported.
    assert "allow-internal" not in notes


def test_a_broad_rule_that_misses_the_new_range_is_reported_not_widened() -> None:
    snap = cases.with_firewalls(cases.incident())
    plan = plan_of(snap, cidr="100.64.0.0/19")
    assert [s.params["firewall"] for s in plan.steps if s.action == "gke.add-firewall-range"] == [cases.FIREWALL_ALL]
    notes = "\n".join(plan.notes)
    assert (
        "Firewall rule allow-internal (allow, INGRESS, 10.0.0.0/8) covers today's pods but not 100.64.0.0/19" in notes
    )
    assert "gcloud compute firewall-rules update allow-internal --project p1 --source-ranges=" in notes


def test_deny_egress_and_node_pool_ranges_count_and_other_rules_do_not() -> None:
    extra = "10.4.0.0/24"  # inside the pod range: a rule for part of the pods names pods too
    rules = (
        FirewallRule("deny-pods-egress", cases.PROJECT, "EGRESS", destination_ranges=(extra,), action="deny"),
        FirewallRule("nodes-only", cases.PROJECT, source_ranges=("10.0.0.0/24",)),
        FirewallRule("ssh", cases.PROJECT, source_ranges=("35.235.240.0/20",)),
    )
    snap = cases.with_firewalls(cases.incident(), rules)
    found = review(cases.gke_of(snap), IPv4Network("10.64.0.0/19"))
    assert found is not None
    assert [r.name for r in found.widen] == ["deny-pods-egress"]
    assert (found.broad, found.covered) == ((), ())
    step = next(s for s in plan_of(snap).steps if s.action == "gke.add-firewall-range")
    assert step.params["field"] == "destinationRanges"


def test_pod_cidrs_are_every_pod_range_of_the_cluster() -> None:
    assert [str(n) for n in pod_cidrs(cases.gke_of(cases.incident()))] == [cases.POD_CIDR]


def test_a_snapshot_without_firewalls_keeps_the_old_advice_and_steps() -> None:
    plan = plan_of(cases.incident())
    assert [s.id for s in plan.steps] == ["add-secondary-range", "create-node-pool"]
    assert "firewalls" not in plan.basis
    assert any("this snapshot holds no firewall rules" in n for n in plan.notes)


def test_drift_when_the_rule_changes_or_goes_and_not_when_it_gained_the_range() -> None:
    snap = cases.with_firewalls(cases.incident())
    plan = plan_of(snap)
    cidr = plan.basis["cidr"]
    PROVIDER.check_drift(plan, snap)
    all_rule, *rest = cases.firewalls()
    gained = cases.with_firewalls(
        snap, (FirewallRule(all_rule.name, cases.PROJECT, source_ranges=(cases.POD_CIDR, cidr)), *rest)
    )
    PROVIDER.check_drift(plan, gained)  # progress, not drift
    changed = cases.with_firewalls(
        snap, (FirewallRule(all_rule.name, cases.PROJECT, source_ranges=("10.9.0.0/16",)), *rest)
    )
    with pytest.raises(StalePlan, match=f"firewall rule {all_rule.name} now has ranges 10.9.0.0/16"):
        PROVIDER.check_drift(plan, changed)
    with pytest.raises(StalePlan, match=f"firewall rule {all_rule.name} is gone"):
        PROVIDER.check_drift(plan, cases.with_firewalls(snap, tuple(rest)))


# --- against the fake ----------------------------------------------------------------------------------


def _plan(tmp_path: Path, *extra: str) -> tuple[Path, Plan]:
    plan_path = tmp_path / "plan.json"
    made = run("expand", *TARGET, "--plan", "--out", str(plan_path), *extra)
    assert made.exit_code == 0, made.output
    return plan_path, load_plan(plan_path)


def test_apply_adds_the_range_to_gkes_rule_and_a_second_apply_changes_nothing(gcp: FakeGcp, tmp_path: Path) -> None:
    before = {name: gcp.firewall(PROJECT, name) for name in ("demo-vpc-allow-internal", "other-vpc-allow-pods")}
    plan_path, plan = _plan(tmp_path)
    cidr = plan.basis["cidr"]
    assert plan.basis["firewalls"] == {FIREWALL_ALL: [POD_CIDR]}
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 0, applied.output
    rule = gcp.firewall(PROJECT, FIREWALL_ALL)
    assert rule is not None and rule["sourceRanges"] == [POD_CIDR, cidr]
    assert {name: gcp.firewall(PROJECT, name) for name in before} == before  # untouched
    patch = next(r for r in gcp.request_log if r.method_id == "compute.firewalls.patch")
    assert patch.body == {"sourceRanges": [POD_CIDR, cidr]}

    gcp.reset_log()
    again = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert again.exit_code == 0, again.output
    assert [r for r in gcp.request_log if r.method in ("POST", "PATCH", "PUT", "DELETE")] == []


def test_a_rule_changed_after_the_plan_is_not_overwritten(gcp: FakeGcp, tmp_path: Path) -> None:
    plan_path, _ = _plan(tmp_path)
    gcp.add_firewall(
        PROJECT, {**(gcp.firewall(PROJECT, FIREWALL_ALL) or {}), "sourceRanges": [POD_CIDR, "10.77.0.0/16"]}
    )
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube", "-o", "json")
    assert applied.exit_code == 4, applied.output
    assert f"firewall rule {FIREWALL_ALL} now has ranges" in applied.output
    rule = gcp.firewall(PROJECT, FIREWALL_ALL)
    assert rule is not None and rule["sourceRanges"] == [POD_CIDR, "10.77.0.0/16"]
    assert gcp.count("PATCH") == 0


def test_the_vms_rule_of_the_node_range_is_left_alone(gcp: FakeGcp, tmp_path: Path) -> None:
    _, plan = _plan(tmp_path)
    assert not any(s.params.get("firewall", "").endswith("-vms") for s in plan.steps)
    vms = gcp.firewall(PROJECT, f"gke-{CLUSTER}-5f2c9a7e-vms")
    assert vms is not None and vms["sourceRanges"] == [SUBNET_CIDR]


def test_permissions_name_the_firewall_update_and_network_policy() -> None:
    result = run("permissions", "--gke", "-o", "json")
    assert result.exit_code == 0, result.output
    text = json.dumps(json.loads(result.stdout))
    for permission in ("compute.firewalls.list", "compute.firewalls.update", "compute.networks.updatePolicy"):
        assert permission in text


def test_a_rule_changed_between_the_steps_check_and_its_patch_is_refused(gcp: FakeGcp, tmp_path: Path) -> None:
    # Firewalls have no fingerprint: the step's re-read right before the patch is the only guard.
    plan_path, _ = _plan(tmp_path)
    reads: list[str] = []

    def meddle(record: RequestRecord) -> None:
        if record.method_id == "compute.firewalls.get":
            reads.append(record.path)
            if len(reads) == 2:  # the step's own re-read in act, after check and the drift check passed
                rule = gcp.firewall(PROJECT, FIREWALL_ALL) or {}
                gcp.add_firewall(PROJECT, {**rule, "sourceRanges": [POD_CIDR, "10.77.0.0/16"]})

    gcp.on_request = meddle
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    gcp.on_request = None
    assert applied.exit_code == 4, applied.output
    assert f"firewall rule {FIREWALL_ALL} changed since the plan was made" in applied.output
    assert gcp.count("PATCH", "/firewalls/") == 0
