"""Whereabouts reclaim end to end on the fake Kubernetes API server with the real client: collect, plan,
apply (check -> act -> verify through the apply engine), and the races of
whereabouts issues 162 and 207 (docs/cloud-facts.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cidrx.engine.apply import ApplyResult, run_plan
from cidrx.engine.executor import StepContext
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.errors import StalePlan
from cidrx.ipam.whereabouts.actions.release_allocations import RELEASE
from cidrx.ipam.whereabouts.analyze import analyze_whereabouts
from cidrx.ipam.whereabouts.collect import collect_whereabouts
from cidrx.ipam.whereabouts.ipam import IPAM
from cidrx.ipam.whereabouts.model import GROUP, POOLS, RESERVATIONS, VERSION
from cidrx.ipam.whereabouts.strategies.reclaim import check_drift, make_plan
from cidrx.kube.api import KubeApi, KubeApis
from cidrx.model.kube import KubeSection
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan, save_plan
from cidrx.model.snapshot import Snapshot, seal
from cidrx.render.progress import NullProgress
from tests.support.cases import whereabouts as wc
from tests.support.fakes.kube_server import FakeKubeServer, RequestRecord, is_lock

NOW = "2024-12-09T03:45:00Z"
POOL_KEY = (GROUP, VERSION, POOLS, wc.POOL, wc.POOL_NS)


@pytest.fixture
def api(kube_server: FakeKubeServer, kubeconfig_path: Path) -> Any:
    kube_server.put_many(wc.crashed_node_objects())
    with KubeApi(str(kubeconfig_path), None) as client:
        yield client


def snapshot(api: KubeApi) -> Snapshot:
    """What the collector builds: the section, then the pods its records name and every unfinished pod
    reporting one of its addresses."""
    section = collect_whereabouts(api)
    kube = KubeSection(
        available=True,
        context="lab",
        ipam_pods=tuple(wc.kept_pods(api.iter_pods(), section)),
        whereabouts=section,
    )
    return seal(Snapshot(target=wc.TARGET, taken_at=NOW, kube=kube))


def plan_file(api: KubeApi, tmp_path: Path) -> Path:
    path = tmp_path / "reclaim.json"
    save_plan(make_plan(snapshot(api), PlanOptions(), NOW), path)
    return path


def apply(api: KubeApi, path: Path) -> ApplyResult:
    plan: Plan = load_plan(path)
    ctx = StepContext(plan=plan, apis=KubeApis(kube=api), waiter=Waiter(sleep=lambda s: None), progress=NullProgress())
    executors = IPAM.executors()
    return run_plan(plan, executors, ctx, Journal.open(path, plan), preflight=lambda: check_drift(plan, snapshot(api)))


def allocations(server: FakeKubeServer) -> dict[str, dict[str, Any]]:
    pool = server.get(*POOL_KEY)
    assert pool is not None
    result: dict[str, dict[str, Any]] = pool["spec"].get("allocations", {})
    return result


def pool_rv(server: FakeKubeServer) -> str:
    pool = server.get(*POOL_KEY)
    assert pool is not None
    return str(pool["metadata"]["resourceVersion"])


def reservations(server: FakeKubeServer) -> set[str]:
    return {o["metadata"]["name"] for o in server.list(GROUP, VERSION, RESERVATIONS)}


def release_outputs(result: ApplyResult) -> dict[str, Any]:
    return result.outputs(next(s.step_id for s in result.steps if s.action == RELEASE.name))


def test_crashed_node_reclaimed_then_idempotent(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    before = snapshot(api)
    assert before.kube.whereabouts is not None
    _, findings = analyze_whereabouts(before.kube.whereabouts, {p.key: p for p in before.kube.ipam_pods})
    assert {f.id for f in findings} == {"WHEREABOUTS-POOL-FULL", "WHEREABOUTS-STALE-ALLOCATION"}

    path = plan_file(api, tmp_path)
    kube_server.reset_log()
    result = apply(api, path)
    assert result.done == 7  # one pool patch, six reservations
    assert [e["ip"] for e in release_outputs(result)["released"]] == [wc.ip_of(i) for i in wc.STALE_OFFSETS]
    assert sorted(allocations(kube_server), key=int) == [str(i) for i in wc.LIVE_OFFSETS]
    assert reservations(kube_server) == {wc.ip_of(i) for i in wc.LIVE_OFFSETS}
    patches = kube_server.requests("PATCH", POOLS)
    assert len(patches) == 1  # all six in one guarded JSON patch

    after = snapshot(api)
    assert after.kube.whereabouts is not None
    capacity, findings = analyze_whereabouts(after.kube.whereabouts, {p.key: p for p in after.kube.ipam_pods})
    assert (capacity[0].used, capacity[0].free) == (8, 6) and not findings
    # A new pod can get an address again: the lowest free offset of the pool is usable.
    free = [o for o in range(1, 15) if str(o) not in allocations(kube_server)]
    assert free[0] == wc.STALE_OFFSETS[0]

    rv = pool_rv(kube_server)
    kube_server.reset_log()
    again = apply(api, path)
    assert again.done == 0 and again.skipped == 7
    assert kube_server.count("PATCH") == 0 and kube_server.count("DELETE") == 0
    assert pool_rv(kube_server) == rv


def writes(server: FakeKubeServer) -> list[str]:
    writing = ("POST", "PUT", "PATCH", "DELETE")
    return [f"{r.method} {r.path}" for r in server.requests() if r.method in writing and not is_lock(r)]


def after_the_drift_check(server: FakeKubeServer, change: Callable[[], None]) -> None:
    """Play `change` once, when the release step first reads its IPPool by name: the drift check (list
    calls only) has passed, the step has not decided yet. What a change landing mid-apply looks like."""
    fired: list[bool] = []

    def hook(rec: RequestRecord) -> None:
        if rec.method == "GET" and rec.path.endswith(f"/{POOLS}/{wc.POOL}") and not fired:
            fired.append(True)
            change()

    server.on_request = hook


def _pods_back(server: FakeKubeServer) -> None:
    # The StatefulSet re-creates db-0: Pending, no network-status yet (the race's web-2).
    server.put(wc.pod("db-0", "Pending", "lab-worker-1"))
    # db-1 comes back Running and Multus reports its old address: live again.
    server.put(wc.pod("db-1", "Running", "lab-worker-2", ips=[wc.ip_of(10)]))


def test_pods_back_before_apply_are_refused_before_any_write(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    path = plan_file(api, tmp_path)
    _pods_back(kube_server)
    before = allocations(kube_server)
    kube_server.reset_log()
    with pytest.raises(StalePlan) as refused:
        apply(api, path)
    message = refused.value.message
    assert f"{wc.ip_of(9)} (offset 9), planned for release from {wc.db(9)}, is in use" in message
    assert f"its pod {wc.db(9)} is live again (Pending)" in message
    assert f"its pod {wc.db(10)} is live again (Running)" in message
    assert f"OverlappingRangeIPReservation {wc.POOL_NS}/{wc.ip_of(9)}" in message
    assert "Nothing was applied; make a new plan" in message
    assert writes(kube_server) == []
    assert allocations(kube_server) == before
    assert not Path(f"{path}.journal.jsonl").exists()


def test_pending_pod_recreated_while_apply_runs_is_never_reclaimed(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    path = plan_file(api, tmp_path)
    after_the_drift_check(kube_server, lambda: _pods_back(kube_server))
    result = apply(api, path)
    out = release_outputs(result)
    kept = {e["podref"]: e["why"] for e in out["kept"]}
    assert kept == {
        wc.db(9): f"pod {wc.db(9)} is live (Pending); not removed",
        wc.db(10): f"pod {wc.db(10)} is live (Running); not removed",
    }
    assert {"9", "10"} <= set(allocations(kube_server))
    assert [e["podref"] for e in out["released"]] == [wc.db(i) for i in wc.STALE_OFFSETS[2:]]
    assert {wc.ip_of(9), wc.ip_of(10)} <= reservations(kube_server)  # their reservations stay too


def _reuse_offset_12(server: FakeKubeServer) -> dict[str, Any]:
    # Someone released offset 12 and Whereabouts gave it to a new pod, which is Running with it.
    new = {"id": wc.cid(77), "podref": f"{wc.APP_NS}/api-0", "ifname": "net1"}
    server.patch(*POOL_KEY[:4], {"spec": {"allocations": {"12": new}}}, wc.POOL_NS)
    server.put(wc.pod("api-0", "Running", "lab-worker-1", ips=[wc.ip_of(12)]))
    return new


def test_allocation_reused_between_plan_and_apply_is_refused_before_any_write(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    path = plan_file(api, tmp_path)
    new = _reuse_offset_12(kube_server)
    kube_server.reset_log()
    with pytest.raises(StalePlan) as refused:
        apply(api, path)
    assert refused.value.exit_code == 4
    assert (
        f"IPPool {wc.POOL_NS}/{wc.POOL}: {wc.ip_of(12)} (offset 12), planned for release from {wc.db(12)}, "
        f"is now held by {wc.APP_NS}/api-0, container {wc.cid(77)[:12]}"
    ) in refused.value.message
    assert writes(kube_server) == []
    assert allocations(kube_server)["12"] == new
    assert len(allocations(kube_server)) == 14  # the other five stale entries are still there too


def test_allocation_changed_while_apply_runs_is_kept(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    path = plan_file(api, tmp_path)
    reused: list[dict[str, Any]] = []
    after_the_drift_check(kube_server, lambda: reused.append(_reuse_offset_12(kube_server)))
    result = apply(api, path)
    out = release_outputs(result)
    assert [e["offset"] for e in out["kept"]] == ["12"]
    assert "allocation changed since the plan: now held by nstest/api-0" in out["kept"][0]["why"]
    assert allocations(kube_server)["12"] == reused[0]
    assert [e["offset"] for e in out["released"]] == ["9", "10", "11", "13", "14"]


def test_concurrent_writer_causes_422_then_redecided(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    path = plan_file(api, tmp_path)
    writes: list[str] = []

    def whereabouts_allocates(rec: RequestRecord) -> None:
        # Between our read and our patch, Whereabouts' reconciler freed offset 14 and handed it at once to a
        # new pod that is still Pending: the pool's resourceVersion moves and our `test` op must fail.
        if rec.method == "PATCH" and POOLS in rec.path and not writes:
            writes.append(rec.path)
            entry = {"id": wc.cid(88), "podref": f"{wc.APP_NS}/web-9", "ifname": "net1"}
            kube_server.patch(*POOL_KEY[:4], {"spec": {"allocations": {"14": entry}}}, wc.POOL_NS)
            kube_server.put(wc.pod("web-9", "Pending", "lab-worker-2"))

    kube_server.on_request = whereabouts_allocates
    kube_server.reset_log()
    result = apply(api, path)
    assert kube_server.count("PATCH", POOLS) == 2  # 422, re-read, decided again, patched
    out = release_outputs(result)
    assert [e["offset"] for e in out["released"]] == ["9", "10", "11", "12", "13"]
    assert [e["offset"] for e in out["kept"]] == ["14"]
    held = allocations(kube_server)
    assert held["14"]["podref"] == f"{wc.APP_NS}/web-9"
    assert sorted(held, key=int) == [*(str(i) for i in wc.LIVE_OFFSETS), "14"]


def test_reservation_moved_before_apply_is_refused(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    path = plan_file(api, tmp_path)
    kube_server.put(wc.orip(wc.ip_of(13), f"{wc.APP_NS}/other", 90))
    kube_server.reset_log()
    with pytest.raises(StalePlan) as refused:
        apply(api, path)
    assert (
        f"OverlappingRangeIPReservation {wc.POOL_NS}/{wc.ip_of(13)}, planned for deletion from {wc.db(13)}, "
        f"is now reserved for {wc.APP_NS}/other"
    ) in refused.value.message
    assert writes(kube_server) == []
    assert len(reservations(kube_server)) == 14


def test_reservation_deleted_only_while_it_names_the_same_pod(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    """The reservation moves to another pod between the step's read and its delete: the delete's
    resourceVersion precondition fails (409), the step reads again and keeps it."""
    path = plan_file(api, tmp_path)
    moved: list[bool] = []

    def hook(rec: RequestRecord) -> None:
        if rec.method == "DELETE" and rec.path.endswith(f"/{RESERVATIONS}/{wc.ip_of(13)}") and not moved:
            moved.append(True)
            kube_server.put(wc.orip(wc.ip_of(13), f"{wc.APP_NS}/other", 90))

    kube_server.on_request = hook
    kube_server.reset_log()
    result = apply(api, path)
    step = next(s for s in result.steps if s.step_id.endswith("10-10-0-13"))
    assert step.outputs == {"deleted": False, "why": f"now reserved for {wc.APP_NS}/other; kept"}
    assert kube_server.count("DELETE", RESERVATIONS, path_contains=wc.ip_of(13)) == 1  # refused by precondition
    found = kube_server.get(GROUP, VERSION, RESERVATIONS, wc.ip_of(13), wc.POOL_NS)
    assert found is not None and found["spec"]["podref"] == f"{wc.APP_NS}/other"


def test_collect_survives_bad_nads_and_reads_each_kind_once(api: KubeApi, kube_server: FakeKubeServer) -> None:
    kube_server.put(wc.nad("broken", '{"type": "macvlan", "ipam": {"type": "whereabouts", "range": '))
    kube_server.put(wc.nad("sriov", wc.macvlan({"type": "host-local", "subnet": "10.9.0.0/24"})))
    kube_server.reset_log()
    section = collect_whereabouts(api)
    assert kube_server.count("GET") == 3  # one list each: ippools, reservations, NADs
    assert [(n.name, bool(n.problem)) for n in section.nads] == [("broken", True), (wc.NAD, False)]
    assert [r.pool_name for r in section.ranges] == [wc.POOL]
    assert len(section.pools[0].allocations) == 14 and len(section.overlapping) == 14


def test_address_reported_by_another_pod_while_apply_runs_is_kept(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    """The liveness rule at apply: db-2 is gone, but after the drift check a pod of another name starts
    reporting db-2's address (say an overlapping pool handed it out). The step re-lists the pods, keeps
    the allocation and the reservation, and says who holds the address."""
    path = plan_file(api, tmp_path)
    held = wc.ip_of(11)
    after_the_drift_check(
        kube_server, lambda: kube_server.put(wc.pod("cache-0", "Running", "lab-worker-1", ips=[held]))
    )
    result = apply(api, path)
    out = release_outputs(result)
    kept = {e["ip"]: e["why"] for e in out["kept"]}
    assert kept == {held: f"{held} is live: held by {wc.APP_NS}/cache-0 (Running); not removed"}
    assert "11" in allocations(kube_server) and held in reservations(kube_server)
    step = next(s for s in result.steps if s.step_id.endswith("10-10-0-11"))
    assert step.outputs["deleted"] is False


def test_pod_reporting_the_address_before_apply_is_refused(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    path = plan_file(api, tmp_path)
    kube_server.put(wc.pod("cache-0", "Pending", "lab-worker-1", ips=[wc.ip_of(12)]))
    kube_server.reset_log()
    with pytest.raises(StalePlan) as refused:
        apply(api, path)
    assert f"{wc.ip_of(12)} is held by {wc.APP_NS}/cache-0 (Pending)" in refused.value.message
    assert writes(kube_server) == []
