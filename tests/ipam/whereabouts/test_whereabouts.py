"""Whereabouts diagnosis and planning from plain objects (no server): NAD config parsing, capacity,
findings and the reclaim plan, on the KB's crashed-node pool and variants of it."""

from __future__ import annotations

import dataclasses

import pytest

from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.whereabouts.actions.delete_reservation import DELETE_RESERVATION
from cidrx.ipam.whereabouts.actions.release_allocations import RELEASE, pointer_token
from cidrx.ipam.whereabouts.analyze import analyze_whereabouts, pool_space
from cidrx.ipam.whereabouts.collect import pod_refs, ranges_from_nad
from cidrx.ipam.whereabouts.model import NetworkRange, WhereaboutsPool
from cidrx.ipam.whereabouts.strategies.reclaim import check_drift, make_plan
from cidrx.model.findings import Capacity, Finding, Severity
from cidrx.model.options import PlanOptions
from cidrx.model.snapshot import load_snapshot
from tests.support.cases import whereabouts as wc

NOW = "2024-12-09T03:45:00Z"


def by_id(findings: list[Finding], fid: str) -> list[Finding]:
    return [f for f in findings if f.id == fid]


def analyze(objs: list[wc.JSON]) -> tuple[list[Capacity], list[Finding]]:
    section = wc.section_of(objs)
    return analyze_whereabouts(section, wc.pods_of(objs, section))


# ---- NetworkAttachmentDefinition config ------------------------------------------------------------


def nad_ranges(ipam: wc.JSON) -> list[NetworkRange]:
    ranges, config = ranges_from_nad(wc.nad("n", wc.macvlan(ipam)))
    assert config is not None and not config.problem, config
    return ranges


def usable(ipam: wc.JSON, pool_range: str) -> int:
    ranges = nad_ranges(ipam)
    name = ranges[0].pool_name
    return pool_space(WhereaboutsPool(name, wc.POOL_NS, pool_range), ranges).size


def test_cidr_range_excludes_network_and_broadcast() -> None:
    [r] = nad_ranges(wc.whereabouts(range="10.0.0.0/24"))
    assert (r.range, r.pool_name, r.range_start, r.range_end) == ("10.0.0.0/24", "10.0.0.0-24", "", "")
    assert usable(wc.whereabouts(range="10.0.0.0/24"), "10.0.0.0/24") == 254


def test_host_bits_in_range_are_masked_like_whereabouts() -> None:
    # Whereabouts' own README example: 192.168.2.225/28 is the network 192.168.2.224/28.
    ipam = wc.whereabouts(range="192.168.2.225/28", exclude=["192.168.2.229/30", "192.168.2.236/32"])
    [r] = nad_ranges(ipam)
    assert r.range == "192.168.2.224/28" and r.exclude == ("192.168.2.228/30", "192.168.2.236/32")
    assert usable(ipam, "192.168.2.224/28") == 14 - 4 - 1


def test_dash_forms() -> None:
    [short] = nad_ranges(wc.whereabouts(range="192.168.2.225-192.168.2.230/28"))
    assert (short.range, short.range_start, short.range_end) == ("192.168.2.224/28", "192.168.2.225", "192.168.2.230")
    assert usable(wc.whereabouts(range="192.168.2.225-192.168.2.230/28"), "192.168.2.224/28") == 6
    [bare] = nad_ranges(wc.whereabouts(range="10.0.0.10-10.0.0.20"))
    assert (bare.range, bare.range_start, bare.range_end) == ("10.0.0.0/27", "10.0.0.10", "10.0.0.20")
    assert usable(wc.whereabouts(range="10.0.0.10-10.0.0.20"), "10.0.0.0/27") == 11


def test_range_start_end_like_the_kb() -> None:
    ipam = wc.whereabouts(range="172.18.178.192/27", range_start="172.18.178.196", range_end="172.18.178.200")
    assert usable(ipam, "172.18.178.192/27") == 5


def test_ip_ranges_network_name_and_plugin_chains() -> None:
    config = {
        "cniVersion": "0.4.0",
        "name": "chain",
        "plugins": [
            {
                "type": "macvlan",
                "ipam": wc.whereabouts(
                    network_name="net-a",
                    ipRanges=[{"range": "10.1.0.0/30"}, {"range": "fd00::/125", "exclude": ["fd00::4/126"]}],
                ),
            },
            {"type": "tuning"},
        ],
    }
    ranges, cfg = ranges_from_nad(wc.nad("chain", config))
    assert cfg is not None and not cfg.problem
    assert [r.pool_name for r in ranges] == ["net-a-10.1.0.0-30", "net-a-fd00---125"]
    pool4 = WhereaboutsPool("net-a-10.1.0.0-30", wc.POOL_NS, "10.1.0.0/30")
    pool6 = WhereaboutsPool("net-a-fd00---125", wc.POOL_NS, "fd00::/125")
    assert pool4.network_name == "net-a"
    assert pool_space(pool4, ranges).size == 2
    assert pool_space(pool6, ranges).size == 8 - 1 - 4  # IPv6: no broadcast, network address kept out


def test_bad_configs_are_recorded_not_raised() -> None:
    ranges, cfg = ranges_from_nad(wc.nad("broken", '{"type": "macvlan", "ipam": {'))
    assert ranges == [] and cfg is not None and "not valid JSON" in cfg.problem
    ranges, cfg = ranges_from_nad(wc.nad("bad-range", wc.macvlan(wc.whereabouts(range="10.0.0.0", exclude=["x"]))))
    assert cfg is not None and "not a CIDR" in cfg.problem and "exclude 'x'" in cfg.problem
    assert ranges_from_nad(wc.nad("other", wc.macvlan({"type": "host-local", "subnet": "10.9.0.0/24"}))) == ([], None)
    objs = [wc.nad("broken", "{nope"), *wc.crashed_node_objects()]
    _, findings = analyze(objs)
    [bad] = by_id(findings, "WHEREABOUTS-NAD-CONFIG-INVALID")
    assert bad.subject.endswith(f"{wc.APP_NS}/broken")


def test_allocation_offsets_decode_to_addresses() -> None:
    section = wc.section_of(wc.crashed_node_objects())
    [pool] = section.pools
    assert [(a.offset, a.ip) for a in pool.allocations][:2] == [("1", "10.10.0.1"), ("2", "10.10.0.2")]
    assert pod_refs(section) == {wc.web(i) for i in wc.LIVE_OFFSETS} | {wc.db(i) for i in wc.STALE_OFFSETS}


# ---- the crashed node -----------------------------------------------------------------------------


def test_crashed_node_pool_is_full_with_six_stale() -> None:
    capacity, findings = analyze(wc.crashed_node_objects())
    [cap] = capacity
    assert (cap.kind, cap.name, cap.cidr, cap.size, cap.used, cap.free) == (
        "whereabouts-pool",
        f"{wc.POOL_NS}/{wc.POOL}",
        wc.RANGE,
        14,
        14,
        0,
    )
    assert cap.utilization == 1.0 and cap.note is not None and cap.note.startswith("stale=6;")
    [full] = by_id(findings, "WHEREABOUTS-POOL-FULL")
    assert full.severity is Severity.CRITICAL and "6 of them stale" in full.summary
    assert "cidrx reclaim --k8s --ipam whereabouts --plan" in full.remediation
    [stale] = by_id(findings, "WHEREABOUTS-STALE-ALLOCATION")
    assert stale.severity is Severity.WARNING
    assert stale.evidence[0] == f"offset 9 (10.10.0.9) held by {wc.db(9)}: pod {wc.db(9)} no longer exists"
    assert len(stale.evidence) == 6
    assert not by_id(findings, "WHEREABOUTS-ORPHAN-RESERVATION")
    assert not by_id(findings, "WHEREABOUTS-DUPLICATE-IP")


def test_nearly_full_by_ratio_or_few_free() -> None:
    objs = wc.crashed_node_objects()
    pool = next(o for o in objs if o["kind"] == "IPPool")
    for off in ("13", "14"):
        del pool["spec"]["allocations"][off]
    _, findings = analyze(objs)  # 12 of 14 used: 85.7% but only 2 left
    [nearly] = by_id(findings, "WHEREABOUTS-POOL-NEARLY-FULL")
    assert "12 of 14" in nearly.summary and not by_id(findings, "WHEREABOUTS-POOL-FULL")


def test_pending_or_unannotated_pods_are_never_stale() -> None:
    objs = wc.crashed_node_objects()
    # db-0 is being re-created by its StatefulSet: Pending, network-status not written yet (the race).
    objs.append(wc.pod("db-0", "Pending", "lab-worker-1"))
    # db-1 runs but Multus has not annotated it yet: unknown, so live.
    objs.append(wc.pod("db-1", "Running", "lab-worker-2"))
    # db-2 runs on another address: its old reservation is stale.
    objs.append(wc.pod("db-2", "Running", "lab-worker-2", ips=["10.10.0.99"]))
    # db-3 runs and does hold its address: live.
    objs.append(wc.pod("db-3", "Running", "lab-worker-1", ips=["10.10.0.12"]))
    _, findings = analyze(objs)
    [stale] = by_id(findings, "WHEREABOUTS-STALE-ALLOCATION")
    held = [line.split(" held by ")[1].split(":")[0] for line in stale.evidence]
    assert held == [f"{wc.APP_NS}/db-2", f"{wc.APP_NS}/db-4", f"{wc.APP_NS}/db-5"]
    assert "10.10.0.99, not 10.10.0.11" in stale.evidence[0]


def test_nothing_is_stale_when_pods_were_not_read() -> None:
    section = wc.section_of(wc.crashed_node_objects())
    capacity, findings = analyze_whereabouts(section, {}, available=False)
    assert not by_id(findings, "WHEREABOUTS-STALE-ALLOCATION")
    assert capacity[0].note is not None and "staleness unknown" in capacity[0].note


# ---- corrupt keys, duplicates, orphans ------------------------------------------------------------


def test_corrupt_keys_and_a_non_canonical_duplicate() -> None:
    allocations = {
        "3": wc.alloc(wc.web(1), 1),
        "abc": wc.alloc(wc.web(2), 2),
        "-4": wc.alloc(wc.web(3), 3),
        "16": wc.alloc(wc.web(4), 4),  # a /28 has offsets 0..15
        "03": wc.alloc(wc.web(5), 5),  # decimal, but the same address as "3"
    }
    objs = [wc.ippool(wc.POOL, wc.RANGE, allocations), *(wc.pod(f"web-{i}", "Running", "n", ips=[]) for i in range(5))]
    capacity, findings = analyze(objs)
    [corrupt] = by_id(findings, "WHEREABOUTS-CORRUPT-KEY")
    assert corrupt.evidence == (
        f"key '16' (past the end of {wc.RANGE}) held by {wc.web(4)}",  # decimal keys first, in numeric order
        f"key '-4' (negative) held by {wc.web(3)}",
        f"key 'abc' (not an integer) held by {wc.web(2)}",
    )
    [dup] = by_id(findings, "WHEREABOUTS-DUPLICATE-IP")
    assert dup.severity is Severity.CRITICAL and dup.subject == "address 10.10.0.3"
    assert capacity[0].used == 1  # one address, however many keys name it


def test_duplicates_across_overlapping_pools_but_not_across_networks() -> None:
    objs = [
        wc.ippool("10.20.0.0-24", "10.20.0.0/24", {"7": wc.alloc("a/p1", 1)}),
        wc.ippool("10.20.0.0-25", "10.20.0.0/25", {"7": wc.alloc("a/p2", 2)}),
        wc.ippool("blue-10.20.0.0-24", "10.20.0.0/24", {"7": wc.alloc("a/p3", 3)}),
    ]
    _, findings = analyze(objs)
    [dup] = by_id(findings, "WHEREABOUTS-DUPLICATE-IP")
    assert dup.subject == "address 10.20.0.7" and "a/p1, a/p2" in dup.summary and "p3" not in dup.summary


def test_orphan_reservations() -> None:
    objs = wc.crashed_node_objects()
    objs.append(wc.orip("10.10.0.200", f"{wc.APP_NS}/gone", 40))  # pod gone, nothing allocates it
    objs.append(wc.orip("10.10.0.201", f"{wc.APP_NS}/starting", 41))  # Pending pod mid-allocation: kept
    objs.append(wc.pod("starting", "Pending", "lab-worker-1"))
    _, findings = analyze(objs)
    [orphan] = by_id(findings, "WHEREABOUTS-ORPHAN-RESERVATION")
    assert len(orphan.evidence) == 2
    assert (
        "10.10.0.200 (10.10.0.200) for nstest/gone: no pool allocates the address; pod nstest/gone no longer exists"
        in (orphan.evidence[0])
    )
    plan = make_plan(wc.snapshot_of(objs), PlanOptions(), NOW)
    unreserve = {s.params["name"]: s for s in plan.steps if s.action == DELETE_RESERVATION.name}
    assert "10.10.0.200" in unreserve and "10.10.0.201" not in unreserve
    assert unreserve["10.10.0.200"].depends_on == ()


# ---- the plan -------------------------------------------------------------------------------------


def test_plan_lists_exactly_the_stale_entries() -> None:
    snap = wc.example_snapshot()
    plan = make_plan(snap, PlanOptions(), NOW)
    assert plan.strategy == "whereabouts-reclaim" and plan.target == wc.TARGET
    release = [s for s in plan.steps if s.action == RELEASE.name]
    [step] = release
    assert step.id == "release-kube-system-10-10-0-0-28"
    assert step.params["namespace"] == wc.POOL_NS and step.params["pool"] == wc.POOL
    assert [(e["offset"], e["ip"], e["podref"]) for e in step.params["allocations"]] == [
        (str(i), wc.ip_of(i), wc.db(i)) for i in wc.STALE_OFFSETS
    ]
    assert all(e["why"].endswith("no longer exists") for e in step.params["allocations"])
    unreserve = [s for s in plan.steps if s.action == DELETE_RESERVATION.name]
    assert [s.params["name"] for s in unreserve] == [wc.ip_of(i) for i in wc.STALE_OFFSETS]
    assert all(s.depends_on == (step.id,) for s in unreserve)
    pool_basis = plan.basis["pools"][f"{wc.POOL_NS}/{wc.POOL}"]
    assert pool_basis["range"] == wc.RANGE and len(pool_basis["stale"]) == 6
    assert plan.summary == {"pools": 1, "allocations": 6, "reservations": 6}
    assert plan.digest and plan.snapshot_fingerprint == snap.fingerprint


def test_empty_plan_when_nothing_is_stale() -> None:
    objs = [
        o
        for o in wc.crashed_node_objects()
        if not (o["kind"] == "OverlappingRangeIPReservation" and "db-" in o["spec"]["podref"])
    ]
    pool = next(o for o in objs if o["kind"] == "IPPool")
    pool["spec"]["allocations"] = {k: v for k, v in pool["spec"]["allocations"].items() if "web-" in v["podref"]}
    plan = make_plan(wc.snapshot_of(objs), PlanOptions(), NOW)
    assert plan.steps == () and "nothing to reclaim" in plan.notes[0]


def test_plan_needs_whereabouts_and_the_api() -> None:
    snap = wc.example_snapshot()
    with pytest.raises(InvalidInput, match="no Whereabouts"):
        make_plan(dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, whereabouts=None)), PlanOptions(), NOW)
    with pytest.raises(InvalidInput, match="not reachable"):
        make_plan(dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, available=False)), PlanOptions(), NOW)


def test_drift_on_a_changed_range_or_a_reused_allocation() -> None:
    objs = wc.crashed_node_objects()
    plan = make_plan(wc.snapshot_of(objs), PlanOptions(), NOW)
    pool = next(o for o in objs if o["kind"] == "IPPool")
    pool["metadata"]["resourceVersion"] = "999"
    del pool["spec"]["allocations"]["9"]  # released by someone else: fine, nothing left to do
    check_drift(plan, wc.snapshot_of(objs))
    pool["spec"]["allocations"]["10"]["podref"] = f"{wc.APP_NS}/new"  # re-used by a new pod: the plan is stale
    with pytest.raises(StalePlan, match=rf"10\.10\.0\.10 \(offset 10\).* is now held by {wc.APP_NS}/new"):
        check_drift(plan, wc.snapshot_of(objs))
    step = next(s.id for s in plan.steps if s.action == RELEASE.name)
    check_drift(plan, wc.snapshot_of(objs), begun={step})  # unless this plan's own apply began releasing
    pool["spec"]["range"] = "10.10.0.0/27"
    with pytest.raises(StalePlan, match=r"now has range 10\.10\.0\.0/27"):
        check_drift(plan, wc.snapshot_of(objs))


def test_pointer_tokens_escape_per_rfc6901() -> None:
    assert pointer_token("12") == "12"
    assert pointer_token("a/b~c") == "a~1b~0c"


def test_bundled_example_is_the_crashed_node() -> None:
    snap = load_snapshot(wc.EXAMPLE)
    assert snap == wc.example_snapshot()
    assert snap.kube.whereabouts is not None
    _, findings = analyze_whereabouts(snap.kube.whereabouts, {p.key: p for p in snap.kube.ipam_pods})
    assert {f.id for f in findings} == {"WHEREABOUTS-POOL-FULL", "WHEREABOUTS-STALE-ALLOCATION"}
