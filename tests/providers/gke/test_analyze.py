"""GKE diagnosis from snapshots built in code: the talk's incident and one variant per finding.

Pure: analyze reads a Snapshot, so every case is the incident changed by one thing (tests/support/cases/gke.py).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from cidrx.errors import InvalidInput
from cidrx.model import codec
from cidrx.model.findings import Capacity, Diagnosis, Finding, Severity
from cidrx.model.snapshot import Snapshot, snapshot_type
from cidrx.providers.gke.analyze.analyze import analyze, suggested_max_pods
from tests.support.cases import gke as cases
from tests.support.cases.gke import FLAGS, POD_CIDR, POOL, SCALE_UP_MESSAGE


def ids(d: Diagnosis) -> list[str]:
    return [f.id for f in d.findings]


def only(d: Diagnosis, finding_id: str) -> Finding:
    hits = [f for f in d.findings if f.id == finding_id]
    assert len(hits) == 1, (finding_id, ids(d))
    return hits[0]


def capacity(d: Diagnosis, kind: str) -> dict[str, Capacity]:
    return {c.name: c for c in d.capacity if c.kind == kind}


@pytest.fixture(scope="module")
def incident() -> Diagnosis:
    return analyze(cases.incident())


# --- the incident -----------------------------------------------------------------------------------


def test_incident_pod_range_holds_four_nodes_and_has_four(incident: Diagnosis) -> None:
    r = capacity(incident, "pod-range")["pods"]
    assert (r.cidr, r.size, r.used, r.free, r.utilization) == (POD_CIDR, 1024, 1024, 0, 1.0)
    assert (r.max_nodes, r.nodes) == (4, 4)
    assert "/24 per node" in (r.note or "") and "autoscaler max 21" in (r.note or "")


def test_incident_network_space_rows_show_unallocated_space(incident: Diagnosis) -> None:
    """Every private space the network uses is a row: addresses its ranges take, and what is left."""
    rows = [c for c in incident.capacity if c.kind == "network-space"]
    assert rows and all(c.size == c.used + c.free for c in rows)
    ten = next(c for c in rows if c.cidr == "10.0.0.0/8")
    assert ten.size == 1 << 24 and 0 < ten.used < ten.size
    # The cluster's own pod range is one of the ranges taking space in it.
    assert ten.used >= 1024


def test_incident_services_range_is_not_a_pod_range(incident: Diagnosis) -> None:
    assert list(capacity(incident, "pod-range")) == ["pods"]


def test_incident_node_pool_row(incident: Diagnosis) -> None:
    p = capacity(incident, "node-pool")[POOL]
    # 4 nodes x 110 pods; used = pod-network + hostNetwork pods (104+98+101+97 + 4x3)
    assert (p.cidr, p.size, p.used, p.nodes) == (POD_CIDR, 440, 412, 4)
    # 21 is the autoscaler's limit, not room in the pod range: the pod-range row carries that.
    assert (p.max_nodes, p.extra["autoscaling_max_nodes"]) == (None, 21)


def test_incident_findings_and_severities(incident: Diagnosis) -> None:
    assert sorted(ids(incident)) == sorted(
        [
            "GKE-POD-RANGE-EXHAUSTED",
            "GKE-SCALE-UP-IP-EXHAUSTED",
            "GKE-AUTOSCALER-MAX-EXCEEDS-RANGE",
            "GKE-NO-ADDITIONAL-POD-RANGES",
        ]
    )
    assert only(incident, "GKE-POD-RANGE-EXHAUSTED").severity is Severity.CRITICAL
    assert only(incident, "GKE-SCALE-UP-IP-EXHAUSTED").severity is Severity.CRITICAL
    assert only(incident, "GKE-AUTOSCALER-MAX-EXCEEDS-RANGE").severity is Severity.WARNING
    assert only(incident, "GKE-NO-ADDITIONAL-POD-RANGES").severity is Severity.INFO
    assert incident.counts == {"info": 1, "warning": 1, "critical": 2}
    assert incident.findings[0].severity is Severity.CRITICAL


def test_exhausted_names_the_range_and_the_command(incident: Diagnosis) -> None:
    f = only(incident, "GKE-POD-RANGE-EXHAUSTED")
    assert f.subject == f"pod range pods ({POD_CIDR})"
    assert "4 of 4 node(s)" in f.summary
    assert f"cidrx expand {FLAGS} --plan" in f.remediation


def test_scale_up_failure_quotes_the_event_and_counts_pending(incident: Diagnosis) -> None:
    f = only(incident, "GKE-SCALE-UP-IP-EXHAUSTED")
    assert any(SCALE_UP_MESSAGE in e for e in f.evidence)
    assert "3 pod(s) Pending" in f.evidence
    # NotTriggerScaleUp "in backoff" does not mention IP space: only the FailedScaleUp event counts (x2).
    assert "(2 event(s), 3 pod(s) Pending)" in f.summary
    assert "cidrx expand" in f.remediation


def test_ip_space_exhausted_enum_form_in_not_trigger_scale_up_counts() -> None:
    event = dataclasses.replace(
        cases.incident_kube().events[1],
        message="pod didn't trigger scale-up: 1 node(s) had IP_SPACE_EXHAUSTED",
    )
    snap = cases.with_kube(cases.incident(), events=(event,))
    f = only(analyze(snap), "GKE-SCALE-UP-IP-EXHAUSTED")
    assert f.evidence[0].startswith("NotTriggerScaleUp default/")


def test_autoscaler_finding_counts_per_zone_max_times_zones(incident: Diagnosis) -> None:
    f = only(incident, "GKE-AUTOSCALER-MAX-EXCEEDS-RANGE")
    assert "21 nodes" in f.summary and "only 4" in f.summary


def test_diagnosis_is_json_serialisable(incident: Diagnosis) -> None:
    doc = json.loads(codec.dumps(incident))
    assert doc["schema"] == "cidrx.diagnosis/v1"
    assert doc["capacity"][0]["kind"] == "pod-range"


# --- variants -----------------------------------------------------------------------------------------


def test_nearly_exhausted_at_seven_of_eight() -> None:
    d = analyze(cases.nearly_exhausted())
    r = capacity(d, "pod-range")["pods"]
    assert (r.max_nodes, r.nodes, r.used, r.size) == (8, 7, 1792, 2048)
    f = only(d, "GKE-POD-RANGE-NEARLY-EXHAUSTED")
    assert f.severity is Severity.WARNING and "88%" in f.summary
    assert "GKE-POD-RANGE-EXHAUSTED" not in ids(d)
    # total max 8 fits the range: no latent outage
    assert "GKE-AUTOSCALER-MAX-EXCEEDS-RANGE" not in ids(d)


def test_below_eighty_percent_is_quiet() -> None:
    snap = cases.nearly_exhausted()
    snap = cases.with_nodes(snap, cases.nodes(6, "10.4.0.0/21"))  # 6 of 8 = 75%
    d = analyze(snap)
    assert not [i for i in ids(d) if i.startswith("GKE-POD-RANGE")]
    assert "GKE-NO-ADDITIONAL-POD-RANGES" not in ids(d)  # only reported when a range is tight


def test_autoscaler_max_above_range_capacity_is_a_latent_outage() -> None:
    d = analyze(cases.autoscaler_over_range())
    r = capacity(d, "pod-range")["pods"]
    assert (r.max_nodes, r.nodes) == (16, 4)
    f = only(d, "GKE-AUTOSCALER-MAX-EXCEEDS-RANGE")
    assert f.severity is Severity.WARNING
    assert "21 nodes" in f.summary and "only 16" in f.summary
    assert "GKE-POD-RANGE-EXHAUSTED" not in ids(d)
    assert "GKE-POD-RANGE-NEARLY-EXHAUSTED" not in ids(d)


def test_additional_pod_range_has_its_own_row() -> None:
    d = analyze(cases.additional_ranges())
    rows = capacity(d, "pod-range")
    assert list(rows) == ["pods", cases.EXTRA_RANGE]
    extra = rows[cases.EXTRA_RANGE]
    assert (extra.cidr, extra.size, extra.used, extra.max_nodes, extra.nodes) == (cases.EXTRA_CIDR, 2048, 512, 8, 2)
    assert "cluster additional" in (extra.note or "")
    assert "GKE-NO-ADDITIONAL-POD-RANGES" not in ids(d)
    assert only(d, "GKE-POD-RANGE-EXHAUSTED").subject == f"pod range pods ({POD_CIDR})"


def test_pools_with_different_block_sizes_share_a_range_exactly() -> None:
    d = analyze(cases.shared_range())
    r = capacity(d, "pod-range")["pods"]
    # 3 x /24 + 4 x /26 = 1024 of 2048; 4 whole /24s left (10.4.4-7.0/24), or 16 /26s
    assert (r.size, r.used, r.nodes, r.max_nodes) == (2048, 1024, 7, 11)
    assert "free blocks 4 x /24, 16 x /26" in (r.note or "")
    f = only(d, "GKE-AUTOSCALER-MAX-EXCEEDS-RANGE")
    assert "27 nodes" in f.summary and "only 11" in f.summary  # 7x3 + 2x3
    pools = capacity(d, "node-pool")
    assert (pools[POOL].nodes, pools["small-pool"].nodes) == (3, 4)
    assert "/26 per node" in (pools["small-pool"].note or "")


def test_fragmented_range_counts_only_whole_blocks() -> None:
    # Two /26 nodes in different /24s of a /22 leave only 2 whole /24s: max nodes for /24 pools = 2 + 2.
    snap = cases.shared_range()
    snap = cases.with_pod_range(snap, POD_CIDR, None)
    small = next(p for p in cases.gke_of(snap).node_pools if p.name == "small-pool")
    snap = cases.with_pools(snap, cases.default_pool(), dataclasses.replace(small, pod_cidr=POD_CIDR))
    a = cases.nodes(1, "10.4.0.0/26", pool="small-pool", prefix=26)
    b = cases.nodes(1, "10.4.1.64/26", pool="small-pool", prefix=26, first=1)
    r = capacity(analyze(cases.with_nodes(snap, a + b)), "pod-range")["pods"]
    assert (r.used, r.nodes, r.max_nodes) == (128, 2, 4)


def test_pool_with_its_own_pod_range() -> None:
    d = analyze(cases.own_pod_range())
    rows = capacity(d, "pod-range")
    batch = rows[cases.BATCH_RANGE]
    assert (batch.cidr, batch.size, batch.used, batch.max_nodes, batch.nodes) == (cases.BATCH_CIDR, 1024, 192, 16, 3)
    assert "node pool; /26 per node" in (batch.note or "")
    assert "autoscaler max 10" in (batch.note or "")
    # the batch range is fine; the default one is still full
    subjects = {f.subject for f in d.findings if f.id.startswith("GKE-POD-RANGE") or f.id.startswith("GKE-AUTO")}
    assert subjects == {f"pod range pods ({POD_CIDR})"}
    assert "GKE-NO-ADDITIONAL-POD-RANGES" not in ids(d)
    assert "GKE-MAX-PODS-OVERSIZED" not in ids(d)


def test_no_kube_estimates_from_gke_utilisation() -> None:
    d = analyze(cases.no_kube())
    r = capacity(d, "pod-range")["pods"]
    assert (r.used, r.nodes, r.max_nodes) == (1024, 4, 4)
    assert "from GKE utilisation" in (r.note or "")
    assert "GKE-POD-RANGE-EXHAUSTED" in ids(d)
    assert "GKE-SCALE-UP-IP-EXHAUSTED" not in ids(d)
    f = only(d, "KUBE-UNREACHABLE")
    assert f.severity is Severity.INFO and f.evidence == ("--no-kube",)


def test_no_kube_half_used_range() -> None:
    snap = cases.with_pod_range(cases.no_kube(), "10.4.0.0/21", 0.5)
    r = capacity(analyze(snap), "pod-range")["pods"]
    assert (r.used, r.nodes, r.max_nodes) == (1024, 4, 8)


def test_no_kube_without_utilisation_reports_no_range_findings() -> None:
    snap = cases.with_pod_range(cases.no_kube(), POD_CIDR, None)
    d = analyze(snap)
    r = capacity(d, "pod-range")["pods"]
    assert (r.nodes, r.max_nodes) == (0, 4)
    assert "usage unknown" in (r.note or "")
    assert "GKE-POD-RANGE-EXHAUSTED" not in ids(d)


def test_max_pods_oversized_suggests_32_and_a_26() -> None:
    d = analyze(cases.oversized())
    f = only(d, "GKE-MAX-PODS-OVERSIZED")
    assert f.subject == f"node pool {POOL}"
    assert f.severity is Severity.WARNING  # its range is full
    assert "busiest node runs 10 pod(s)" in f.summary
    assert "max pods 32 gives a /26 per node: 4x as many nodes per range" in f.evidence
    assert "--max-pods-per-node 32" in f.remediation


def test_max_pods_oversized_is_info_when_the_range_has_room() -> None:
    d = analyze(cases.oversized(roomy=True))
    assert ids(d) == ["GKE-MAX-PODS-OVERSIZED"]
    assert only(d, "GKE-MAX-PODS-OVERSIZED").severity is Severity.INFO


@pytest.mark.parametrize(
    ("peak", "expected"),
    [
        (1, (8, 28)),
        (4, (8, 28)),
        (5, (16, 27)),
        (10, (32, 26)),
        (16, (32, 26)),
        (23, (64, 25)),
        (30, (64, 25)),
        (60, (110, 24)),
    ],
)
def test_suggested_max_pods(peak: int, expected: tuple[int, int]) -> None:
    assert suggested_max_pods(peak) == expected


def test_autopilot_is_reported() -> None:
    f = only(analyze(cases.autopilot()), "GKE-AUTOPILOT")
    assert f.severity is Severity.INFO
    assert "--strategy cluster-range" in f.remediation


def test_non_gke_snapshot_is_refused() -> None:
    snap = dataclasses.replace(cases.incident(), gke=None)
    with pytest.raises(InvalidInput, match="no GKE section"):
        analyze(snap)


def test_snapshot_round_trips_through_json() -> None:
    snap = cases.incident()
    again = codec.loads(codec.dumps(snap).encode(), snapshot_type(), what="snapshot")
    assert analyze(again) == analyze(snap)


def test_autopilot_remediation_points_at_cluster_range() -> None:
    d = analyze(cases.with_cluster(cases.oversized(), autopilot=True))
    assert "--strategy cluster-range" in only(d, "GKE-POD-RANGE-EXHAUSTED").remediation
    assert "GKE-MAX-PODS-OVERSIZED" not in ids(d)


def test_nodes_without_pod_cidrs_fall_back_to_gke_utilisation() -> None:
    snap = cases.incident()
    bare = tuple(dataclasses.replace(n, pod_cidrs=()) for n in snap.kube.nodes)
    r = capacity(analyze(cases.with_kube(snap, nodes=bare)), "pod-range")["pods"]
    assert (r.used, r.nodes, r.max_nodes) == (1024, 4, 4)
    assert "from GKE utilisation" in (r.note or "")


# --- a per-node block larger than the range -------------------------------------------------------------


def test_a_block_larger_than_the_range_fits_no_node() -> None:
    """A /26 pod range with a /24 per node (110 max pods) holds 0 nodes, not 1 (netmath.gke_max_nodes)."""
    snap = cases.with_pod_range(cases.no_kube(), "10.4.0.0/26", 0.0)
    d = analyze(snap)
    r = capacity(d, "pod-range")["pods"]
    assert (r.cidr, r.size, r.nodes, r.max_nodes) == ("10.4.0.0/26", 64, 0, 0)
    assert "/24 per node" in (r.note or "") and "free blocks 0 x /24" in (r.note or "")
    f = only(d, "GKE-POD-RANGE-EXHAUSTED")
    assert "0 of 0 node(s)" in f.summary
    assert "10.4.0.0/26 holds 0 per-node /24 block(s)" in f.evidence[0]


def test_a_block_larger_than_the_range_fits_no_node_counted_from_nodes() -> None:
    """The same counted exactly from nodes' podCIDRs (the cluster's nodes hold blocks elsewhere)."""
    snap = cases.with_pod_range(cases.incident(), "10.4.0.0/26", None)
    snap = cases.with_nodes(snap, cases.nodes(2, "10.9.0.0/23"))
    r = capacity(analyze(snap), "pod-range")["pods"]
    assert (r.nodes, r.max_nodes, r.used) == (0, 0, 0)


# --- the node subnet's primary range ------------------------------------------------------------------------


def test_node_subnet_row_counts_usable_addresses_less_four() -> None:
    """A /24 primary range: 256 - 4 = 252 usable; 4 nodes, 1 VM, 1 ILB, 1 reserved address held."""
    snap = cases.with_node_subnet(cases.incident(), "10.0.0.0/24", cases.subnet_addresses("10.0.0.0/24", 4, 1, 1, 1))
    row = capacity(analyze(snap), "node-subnet")[cases.SUBNET]
    assert (row.cidr, row.size, row.used, row.free, row.nodes, row.max_nodes) == ("10.0.0.0/24", 252, 7, 245, 4, 249)
    assert "less the 4 GCP reserves" in (row.note or "") and "room for 245 more node(s)" in (row.note or "")


def test_an_address_named_twice_or_reserved_by_gcp_counts_once_or_not_at_all() -> None:
    from cidrx.providers.gke.model import SubnetAddress

    held = (
        SubnetAddress("10.0.0.5", "address", "ilb-ip", cases.PROJECT),
        SubnetAddress("10.0.0.5", "forwarding-rule", "ilb", cases.PROJECT),
        SubnetAddress("10.0.0.1", "address", "gateway-ish", cases.PROJECT),  # GCP's gateway: never usable
        SubnetAddress("10.0.1.7", "instance", "elsewhere", cases.PROJECT),  # outside the range
    )
    row = capacity(analyze(cases.with_node_subnet(cases.incident(), "10.0.0.0/24", held)), "node-subnet")
    assert row[cases.SUBNET].used == 1 and "1 internal forwarding rule(s)" in (row[cases.SUBNET].note or "")


def test_full_node_subnet_is_blamed_and_the_pod_range_is_not() -> None:
    d = analyze(cases.node_subnet_full())
    row = capacity(d, "node-subnet")[cases.SUBNET]
    assert (row.size, row.used, row.free, row.nodes, row.max_nodes) == (12, 12, 0, 4, 4)
    f = only(d, "GKE-NODE-SUBNET-EXHAUSTED")
    assert f.severity is Severity.CRITICAL and "primary range 10.0.0.0/28" in f.summary
    assert "--strategy subnet-expand" in f.remediation
    scale = only(d, "GKE-SCALE-UP-IP-EXHAUSTED")
    assert "node subnet's primary range 10.0.0.0/28" in scale.summary and "pod ranges have room" in scale.summary
    assert "--strategy subnet-expand" in scale.remediation and "add a pod range" not in scale.remediation
    assert not [i for i in ids(d) if i.startswith("GKE-POD-RANGE")]


def test_full_pod_range_is_blamed_and_the_node_subnet_is_not() -> None:
    snap = cases.with_node_subnet(cases.incident(), "10.0.0.0/24", cases.subnet_addresses("10.0.0.0/24", 4))
    d = analyze(snap)
    scale = only(d, "GKE-SCALE-UP-IP-EXHAUSTED")
    assert f"pod range pods ({POD_CIDR}) is full" in scale.summary
    assert "add a pod range" in scale.remediation and "subnet-expand" not in scale.remediation
    assert not [i for i in ids(d) if i.startswith("GKE-NODE-SUBNET")]
    assert any("room for 248 more node(s)" in e for e in scale.evidence)


def test_both_full_names_both_fixes() -> None:
    snap = cases.with_node_subnet(
        cases.incident(), cases.NODE_SUBNET_SMALL, cases.subnet_addresses(cases.NODE_SUBNET_SMALL, 4, 8)
    )
    scale = only(analyze(snap), "GKE-SCALE-UP-IP-EXHAUSTED")
    assert "both the pod range" in scale.summary
    assert "add a pod range" in scale.remediation and "--strategy subnet-expand" in scale.remediation


def test_neither_full_blames_neither() -> None:
    snap = cases.with_pod_range(cases.incident(), "10.4.0.0/21", 0.5)
    snap = cases.with_nodes(snap, cases.nodes(4, "10.4.0.0/21"))
    snap = cases.with_kube(snap, events=cases.incident_kube().events)
    snap = cases.with_node_subnet(snap, "10.0.0.0/24", cases.subnet_addresses("10.0.0.0/24", 4))
    scale = only(analyze(snap), "GKE-SCALE-UP-IP-EXHAUSTED")
    assert "neither a pod range nor the node subnet's primary range reads full" in scale.summary


def test_node_subnet_smaller_than_the_autoscaler_max_warns() -> None:
    # /27: 28 usable, 4 nodes + 20 VMs held: room for 8 nodes, the pool may grow to 21.
    snap = cases.with_node_subnet(
        cases.calm(cases.incident()), "10.0.0.0/27", cases.subnet_addresses("10.0.0.0/27", 4, 20)
    )
    f = only(analyze(snap), "GKE-NODE-SUBNET-NEARLY-EXHAUSTED")
    assert f.severity is Severity.WARNING and "86% used" in f.summary


def test_old_snapshots_have_no_node_subnet_row(incident: Diagnosis) -> None:
    assert not capacity(incident, "node-subnet")


def _applied_batch_pool() -> Snapshot:
    """own_pod_range with its batch pool created by a cidrx node-pool plan (the pool carries the plan label)."""
    snap = cases.own_pod_range()
    pools = tuple(
        dataclasses.replace(p, resource_labels={"cidrx-plan": "0123456789abcdef"}) if p.name == "batch-pool" else p
        for p in cases.gke_of(snap).node_pools
    )
    return cases.with_pools(snap, *pools)


def _joined_later(snap: Snapshot, when: str = "2023-11-03T08:00:00Z") -> Snapshot:
    """`snap` with the batch pool's nodes created at `when` (after the incident's autoscaler events)."""
    moved = tuple(dataclasses.replace(n, created=when) if n.pool == "batch-pool" else n for n in snap.kube.nodes)
    return cases.with_kube(snap, nodes=moved)


def test_an_applied_pool_with_room_makes_the_full_range_information_gke_needs_no_migration() -> None:
    d = analyze(_joined_later(_applied_batch_pool()))
    applied = only(d, "GKE-PLAN-APPLIED")
    assert applied.severity is Severity.INFO and applied.subject == "plan 0123456789abcdef"
    assert applied.summary == (
        "plan 0123456789abcdef applied: node pool batch-pool takes new nodes from pod range batch-pods "
        "(192.168.0.0/22), room for 13 more node(s); its first node joined 2023-11-03T08:00:00Z"
    )
    assert any("no longer count" in e for e in applied.evidence), applied.evidence
    full = only(d, "GKE-POD-RANGE-EXHAUSTED")
    assert (
        full.severity is Severity.INFO and "no migration needed: new nodes go to node pool batch-pool" in full.summary
    )
    assert (
        full.remediation.startswith("Nothing to do: GKE needs no migration.") and "cidrx expand" not in full.remediation
    )
    # The autoscaler's events are older than the new pool's first node: nothing critical or warning is left.
    assert "GKE-SCALE-UP-IP-EXHAUSTED" not in ids(d)
    assert [f.id for f in d.findings if f.severity is not Severity.INFO] == [], d.findings


def test_autoscaler_events_after_the_new_pools_first_node_still_count() -> None:
    d = analyze(_applied_batch_pool())  # batch nodes created 06:00, the events are from 07:08
    scale = only(d, "GKE-SCALE-UP-IP-EXHAUSTED")
    assert scale.severity is Severity.CRITICAL
    assert "though node pool batch-pool (plan 0123456789abcdef) has room for 13 more node(s)" in scale.summary
    assert "cidrx expand" not in scale.remediation and "batch-pool" in scale.remediation
    assert only(d, "GKE-POD-RANGE-EXHAUSTED").severity is Severity.INFO


def test_events_naming_only_the_old_pools_instance_group_do_not_count() -> None:
    """After the apply the autoscaler may still try the old pool once (and back off from it): an event naming only
    the old pool's instance group is no sign that the new pool cannot grow."""
    snap = _applied_batch_pool()  # the events are newer than the batch pool's first node
    group = f"gke-demo-ip-{POOL}-5f6c2a1d-grp"
    events = tuple(dataclasses.replace(e, message=f"{e.message} ({group})") for e in snap.kube.events)
    d = analyze(cases.with_kube(snap, events=events))
    assert "GKE-SCALE-UP-IP-EXHAUSTED" not in ids(d)


def test_events_of_pods_no_longer_waiting_do_not_count() -> None:
    snap = cases.with_kube(cases.incident(), waiting_pods=())
    assert "GKE-SCALE-UP-IP-EXHAUSTED" not in ids(analyze(snap))


def test_a_pod_pinned_to_the_old_pool_keeps_its_full_range_critical() -> None:
    snap = _joined_later(_applied_batch_pool())
    pinned = tuple(dataclasses.replace(p, node_pool=POOL) for p in snap.kube.waiting_pods)
    d = analyze(cases.with_kube(snap, waiting_pods=pinned))
    assert only(d, "GKE-POD-RANGE-EXHAUSTED").severity is Severity.CRITICAL
    assert "GKE-SCALE-UP-IP-EXHAUSTED" in ids(d)


def test_once_the_new_range_is_full_too_the_old_one_is_critical_again() -> None:
    snap = _applied_batch_pool()
    batch = cases.nodes(16, "192.168.0.0/22", pool="batch-pool", prefix=26)
    snap = cases.with_nodes(snap, cases.nodes(4, POD_CIDR) + batch)
    d = analyze(snap)
    assert {f.severity for f in d.findings if f.id == "GKE-POD-RANGE-EXHAUSTED"} == {Severity.CRITICAL}
    assert "is full too" in only(d, "GKE-PLAN-APPLIED").summary


def test_an_empty_applied_pool_is_room_not_a_full_row() -> None:
    snap = _applied_batch_pool()
    snap = cases.with_kube(snap, nodes=tuple(n for n in snap.kube.nodes if n.pool != "batch-pool"))
    d = analyze(snap)
    row = capacity(d, "node-pool")["batch-pool"]
    assert (row.nodes, row.utilization, row.nodes_fit) == (0, 0.0, 16) and row.note.startswith("no nodes yet")
    assert capacity(d, "pod-range")["batch-pods"].nodes_fit == 16


def _spare_cluster_range(autopilot: bool) -> Snapshot:
    """The incident after a cluster-range plan: an additional cluster pod range with room, no pool on it yet."""
    snap = cases.additional_ranges()
    snap = cases.with_pools(snap, *(p for p in cases.gke_of(snap).node_pools if p.name != "extra-pool"))
    snap = cases.with_kube(snap, nodes=tuple(n for n in snap.kube.nodes if n.pool != "extra-pool"))
    return cases.with_cluster(snap, autopilot=autopilot)


def test_a_spare_cluster_range_on_standard_asks_for_a_node_pool_not_another_expansion() -> None:
    full = only(analyze(_spare_cluster_range(autopilot=False)), "GKE-POD-RANGE-EXHAUSTED")
    assert full.severity is Severity.CRITICAL  # nothing takes new nodes until a node pool uses the new range
    assert full.remediation.startswith(f"No further expansion is needed: cluster pod range {cases.EXTRA_RANGE}")
    assert "cidrx expand" not in full.remediation and "Create a node pool" in full.remediation
    scale = only(analyze(_spare_cluster_range(autopilot=False)), "GKE-SCALE-UP-IP-EXHAUSTED")
    assert "cidrx expand" not in scale.remediation and "create a node pool" in scale.remediation


def test_a_spare_cluster_range_on_autopilot_needs_nothing() -> None:
    full = only(analyze(_spare_cluster_range(autopilot=True)), "GKE-POD-RANGE-EXHAUSTED")
    assert full.severity is Severity.INFO
    assert f"GKE creates new node pools from cluster pod range {cases.EXTRA_RANGE}" in full.summary
    assert full.remediation.startswith("Nothing to do: GKE needs no migration.")


def test_no_plan_is_applied_without_the_label() -> None:
    assert "GKE-PLAN-APPLIED" not in ids(analyze(cases.own_pod_range()))
