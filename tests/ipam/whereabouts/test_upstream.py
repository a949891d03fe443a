"""Whereabouts as upstream defines it: names (IPPoolName, NormalizeIP), the reconciler's own test table
replayed through `cidrx reclaim` on the fake API server, the named-network cluster, and the liveness rule
(no address an unfinished pod reports is ever planned or removed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cidrx.ipam.whereabouts.actions.delete_reservation import DELETE_RESERVATION
from cidrx.ipam.whereabouts.actions.release_allocations import RELEASE
from cidrx.ipam.whereabouts.analyze import analyze_whereabouts
from cidrx.ipam.whereabouts.model import (
    OverlappingReservation,
    go_ip_string,
    name_addresses,
    pool_name,
    reservation_name,
)
from cidrx.ipam.whereabouts.strategies.reclaim import make_plan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import load_plan
from cidrx.model.snapshot import load_snapshot
from tests.support.cases import whereabouts as wc
from tests.support.cases import whereabouts_upstream as uc
from tests.support.cli import run
from tests.support.fakes.crd_schemas import SCHEMAS
from tests.support.fakes.crd_schemas.structural import problems
from tests.support.fakes.kube_server import FakeKubeServer, is_lock

GROUP, VERSION = "whereabouts.cni.cncf.io", "v1alpha1"
NOW = "2024-12-09T03:45:00Z"


# ---- names exactly as upstream -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cidr", "network", "node", "name"),
    [  # pkg/storage/kubernetes/ipam_test.go TestIPPoolName @3a262bd, then IPv6 ranges through normalizeRange
        ("10.0.0.0/8", "", "", "10.0.0.0-8"),
        ("10.0.0.0/8", "test", "", "test-10.0.0.0-8"),
        ("10.0.0.0/8", "", "testnode", "testnode-10.0.0.0-8"),
        ("10.0.0.0/8", "testnetwork", "testnode", "testnetwork-testnode-10.0.0.0-8"),
        ("fd00:40::/64", "blue6", "", "blue6-fd00-40---64"),
    ],
)
def test_pool_names_as_upstream(cidr: str, network: str, node: str, name: str) -> None:
    assert pool_name(cidr, network, node) == name


@pytest.mark.parametrize(
    ("ip", "network", "name"),
    [
        ("10.40.0.5", "", "10.40.0.5"),
        ("10.40.0.5", "blue", "blue-10.40.0.5"),
        ("fd00:40::1:0:0:0", "blue6", "blue6-fd00-40-0-0-1--0"),  # ends in "::": NormalizeIP appends "0"
        ("fd00::", "", "fd00--0"),
        ("2001:1b74:0480:60b1:0000:0000:0000:0002", "", "2001-1b74-480-60b1--2"),  # Go prints RFC 5952
        ("::ffff:10.1.2.3", "n", "n-10.1.2.3"),  # Go prints an IPv4-mapped address as IPv4
    ],
)
def test_reservation_names_as_upstream_and_back(ip: str, network: str, name: str) -> None:
    assert reservation_name(ip, network) == name
    r = OverlappingReservation(name=name, namespace="kube-system", podref="a/b")
    assert r.ip == go_ip_string(ip)


def test_a_reservation_name_is_never_inverted_blindly() -> None:
    # Upstream's reconciler turns "blue-10.40.0.5" into "blue:10.40.0.5"; cidrx only accepts an address
    # whose forward name is the name's tail, and keeps every candidate when a network name could contain '-'.
    assert name_addresses("blue-10.40.0.5") == ("10.40.0.5",)
    assert name_addresses("net-fd00-1--5") == ("fd00:1::5", "1::5")
    assert name_addresses("2001:1b74:480:60b1::2") == ()  # not a NormalizeIP output: judged by nothing
    assert name_addresses("net-1-2-3-4") == ()


# ---- fixtures are upstream shapes ------------------------------------------------------------------


def test_every_fixture_has_the_upstream_crd_shape() -> None:
    objects = [
        *wc.crashed_node_objects(),
        *uc.named_network().objects,
        *(obj for case in uc.CASES for obj in case.objects),
    ]
    plurals = {"IPPool": "ippools", "OverlappingRangeIPReservation": "overlappingrangeipreservations"}
    checked = 0
    for obj in objects:
        if obj["kind"] in plurals:
            assert list(problems(obj, SCHEMAS[(GROUP, VERSION, plurals[obj["kind"]])])) == [], obj
            checked += 1
    assert checked > 20


def test_fake_refuses_a_pool_without_allocations_and_an_allocation_without_id(
    kube_server: FakeKubeServer, kubeconfig_path: Path
) -> None:
    from cidrx.kube.api import KubeApi

    with KubeApi(str(kubeconfig_path), None) as api:
        with pytest.raises(Exception, match="allocations: Required value"):
            api.create_custom(
                GROUP,
                VERSION,
                "ippools",
                "IPPool",
                {**wc.ippool("p", "10.0.0.0/24", {}), "spec": {"range": "10.0.0.0/24"}},
            )
        bad = wc.ippool("q", "10.0.0.0/24", {"1": {"podref": "a/b"}})
        with pytest.raises(Exception, match=r"allocations\.1\.id: Required value"):
            api.create_custom(GROUP, VERSION, "ippools", "IPPool", bad)
        assert kube_server.get(GROUP, VERSION, "ippools", "q", wc.POOL_NS) is None


# ---- the upstream reconciler's test table ------------------------------------------------------------


def _state(server: FakeKubeServer) -> tuple[set[tuple[str, str]], set[str]]:
    keys = {
        (p["metadata"]["name"], k) for p in server.objects_of("IPPool") for k in (p["spec"].get("allocations") or {})
    }
    names = {r["metadata"]["name"] for r in server.objects_of("OverlappingRangeIPReservation")}
    return keys, names


@pytest.mark.parametrize("case", uc.CASES, ids=[c.id for c in uc.CASES])
def test_upstream_reconciler_case(
    case: uc.UpstreamCase, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    kube_server.put_many([json.loads(json.dumps(o)) for o in case.objects])
    k8s = ["--k8s", "--kubeconfig", str(kubeconfig_path)]
    diagnosed = run("diagnose", *k8s, "-o", "json")
    assert diagnosed.exit_code in (0, 1, 3), diagnosed.output
    assert case.findings <= {f["id"] for f in json.loads(diagnosed.stdout)["findings"]}
    before_keys, before_names = _state(kube_server)
    plan_path = tmp_path / "r.json"
    made = run("reclaim", *k8s, "--ipam", "whereabouts", "--plan", "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    applied = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", str(kubeconfig_path))
    assert applied.exit_code == 0, applied.output
    after_keys, after_names = _state(kube_server)
    released, deleted = before_keys - after_keys, before_names - after_names
    assert (released, deleted) == (set(case.released), set(case.deleted))
    # Never less safe than upstream: cidrx removes a subset of what upstream's reconciler removes, and
    # exactly that when no difference is written down.
    assert released <= case.upstream_released and deleted <= case.upstream_deleted
    if not case.differs:
        assert (released, deleted) == (set(case.upstream_released), set(case.upstream_deleted))
    else:
        assert (released, deleted) != (set(case.upstream_released), set(case.upstream_deleted))


# ---- the named-network cluster -------------------------------------------------------------------------


def test_bundled_named_network_example() -> None:
    snap = load_snapshot(uc.NAMED_EXAMPLE)
    assert snap == uc.named_network_snapshot()
    section = snap.kube.whereabouts
    assert section is not None
    _, findings = analyze_whereabouts(section, {p.key: p for p in snap.kube.ipam_pods})
    stale = next(f for f in findings if f.id == "WHEREABOUTS-STALE-ALLOCATION" and "blue-10.40.0.0-24" in f.subject)
    assert len(stale.evidence) == 1 and "10.40.0.6" in stale.evidence[0]
    plan = make_plan(snap, PlanOptions(), NOW)
    _assert_named_plan(plan.steps)


def _assert_named_plan(steps: Any) -> None:
    world = uc.named_network()
    released = {
        (s.params["pool"], a["offset"]) for s in steps if s.action == RELEASE.name for a in s.params["allocations"]
    }
    planned_ips = {a["ip"] for s in steps if s.action == RELEASE.name for a in s.params["allocations"]}
    deleted = {s.params["name"] for s in steps if s.action == DELETE_RESERVATION.name}
    assert released == set(world.stale_keys)
    assert deleted == set(world.stale_reservations)
    assert not planned_ips & world.live
    assert "blue-10.40.0.5" not in deleted and "blue6-fd00-40-0-0-1--0" not in deleted


def test_named_network_diagnose_plan_and_apply(
    kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    world = uc.named_network()
    kube_server.put_many(world.objects)
    k8s = ["--k8s", "--kubeconfig", str(kubeconfig_path)]
    diagnosed = run("diagnose", *k8s, "-o", "json")
    assert diagnosed.exit_code in (0, 1), diagnosed.output
    ids = {f["id"] for f in json.loads(diagnosed.stdout)["findings"]}
    assert "WHEREABOUTS-STALE-ALLOCATION" in ids and "WHEREABOUTS-POOL-RANGE-HOST-BITS" not in ids
    plan_path = tmp_path / "r.json"
    made = run("reclaim", *k8s, "--ipam", "whereabouts", "--plan", "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    _assert_named_plan(load_plan(plan_path).steps)
    before_keys, before_names = _state(kube_server)
    applied = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", str(kubeconfig_path))
    assert applied.exit_code == 0, applied.output
    after_keys, after_names = _state(kube_server)
    assert before_keys - after_keys == set(world.stale_keys)
    assert before_names - after_names == set(world.stale_reservations)
    kube_server.reset_log()
    again = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", str(kubeconfig_path))
    assert again.exit_code == 0, again.output
    writes = ("PATCH", "DELETE", "PUT", "POST")
    assert [r for r in kube_server.requests() if r.method in writes and not is_lock(r)] == []


def test_named_network_example_through_the_cli() -> None:
    diagnosed = run("diagnose", "--snapshot", str(uc.NAMED_EXAMPLE), "-o", "json")
    assert diagnosed.exit_code in (0, 1), diagnosed.output
    planned = run("reclaim", "--snapshot", str(uc.NAMED_EXAMPLE), "--ipam", "whereabouts", "--plan", "--out", "-")
    assert planned.exit_code == 0, planned.output
    assert "blue-10.40.0.6" in planned.output and "blue-10.40.0.5" not in planned.output


def test_collector_keeps_a_pod_reporting_a_reservation_address_outside_every_range(
    kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    """The reservation's pool and NAD are gone, its pod too, but a Running pod of another name reports the
    address: the collector keeps that pod (the address is one the reservation's name spells), so the
    reservation is live and never planned."""
    kept = wc.orip("10.99.0.1", f"{wc.APP_NS}/gone-0", 1, network_name="green")
    dropped = wc.orip("10.99.0.2", f"{wc.APP_NS}/gone-1", 2, network_name="green")
    other = wc.ippool(pool_name("10.98.0.0/24", "green"), "10.98.0.0/24", {})
    kube_server.put_many([other, kept, dropped, wc.pod("svc-0", "Running", "lab-worker-1", ips=["10.99.0.1"])])
    plan_path = tmp_path / "r.json"
    made = run(
        "reclaim",
        "--k8s",
        "--kubeconfig",
        str(kubeconfig_path),
        "--ipam",
        "whereabouts",
        "--plan",
        "--out",
        str(plan_path),
    )
    assert made.exit_code == 0, made.output
    assert [s.params["name"] for s in load_plan(plan_path).steps] == ["green-10.99.0.2"]
