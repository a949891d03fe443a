"""Calico collect and apply with the real KubeApi against the fake API server: leaked addresses released
with the block's invariants kept, empty blocks released, compare-and-swap conflicts re-decided, live pods
and tunnel addresses never touched, a second apply changes nothing, the new IPPool made once."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cidrx.engine.apply import ApplyResult, run_plan
from cidrx.engine.executor import StepContext
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.errors import ApplyInterrupted, StalePlan
from cidrx.ipam.calico.collect import GROUP, VERSION, collect_calico
from cidrx.ipam.calico.ipam import IPAM
from cidrx.ipam.calico.strategies import pool as pool_strategy
from cidrx.ipam.calico.strategies import reclaim
from cidrx.kube.api import KubeApi
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, Plan, Step, seal
from cidrx.model.snapshot import Snapshot
from cidrx.render.progress import NullProgress
from tests.support.cases import calico as cases
from tests.support.fakes.kube_server import FakeKubeServer, RequestRecord

CREATED = "2024-05-01T10:05:00Z"
BLOCK_A = "10-0-0-0-26"


@pytest.fixture
def api(calico_incident_api: KubeApi) -> KubeApi:
    return calico_incident_api


def snapshot_from(api: KubeApi) -> Snapshot:
    """The incident world's snapshot, with the Calico section as collected from the server."""
    snap = cases.incident().snapshot()
    kube = dataclasses.replace(snap.kube, calico=collect_calico(api))
    return dataclasses.replace(snap, kube=kube)


def apply(plan: Plan, api: KubeApi, tmp_path: Path) -> ApplyResult:
    ctx = StepContext(
        plan=plan, apis=SimpleNamespace(kube=api), waiter=Waiter(sleep=lambda _: None), progress=NullProgress()
    )
    return run_plan(plan, IPAM.executors(), ctx, Journal.open(tmp_path / "plan.json", plan))


def block(server: FakeKubeServer, name: str) -> dict[str, Any] | None:
    return server.get(GROUP, VERSION, "ipamblocks", name)


def handle(server: FakeKubeServer, handle_id: str) -> dict[str, Any] | None:
    return server.get(GROUP, VERSION, "ipamhandles", handle_id.lower())


def assert_invariants(spec: dict[str, Any]) -> None:
    allocations, attributes = spec["allocations"], spec["attributes"]
    assert sorted(spec["unallocated"]) == [o for o, a in enumerate(allocations) if a is None]
    assert len(set(spec["unallocated"])) == len(spec["unallocated"])
    referenced = {a for a in allocations if a is not None}
    assert referenced == set(range(len(attributes)))  # every attribute used, every index valid


def holder(spec: dict[str, Any], ordinal: int) -> str | None:
    index = spec["allocations"][ordinal]
    return None if index is None else str(spec["attributes"][index]["handle_id"])


def writes(server: FakeKubeServer) -> int:
    return sum(server.count(m) for m in ("PUT", "PATCH", "DELETE", "POST"))


def test_collect_is_list_calls_only(api: KubeApi, kube_server: FakeKubeServer) -> None:
    kube_server.reset_log()
    section = collect_calico(api)
    assert {r.method for r in kube_server.request_log} == {"GET"}
    for plural in ("ippools", "ipamblocks", "blockaffinities", "ipamhandles", "ipamconfigs"):
        assert kube_server.count("GET", plural) == 1
    assert all(not r.path.rstrip("/").endswith(("26", "ippool")) for r in kube_server.request_log)
    expected = cases.incident().calico()
    strip = lambda s: [dataclasses.replace(b, resource_version="") for b in s]  # noqa: E731
    assert strip(section.blocks) == strip(expected.blocks)
    assert [h.blocks for h in section.handles] == [h.blocks for h in expected.handles]
    assert section.pools == expected.pools and section.config is None


def test_reclaim_releases_leaks_keeping_invariants(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = reclaim.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    result = apply(plan, api, tmp_path)
    assert [s.status for s in result.steps] == ["done", "done", "done"]
    assert result.outputs("release-ips-10-0-0-0-26")["released"] == ["10.0.0.44"]

    a = block(kube_server, BLOCK_A)
    assert a is not None
    spec = a["spec"]
    assert_invariants(spec)
    # No IPAMConfig, so ipCooldownSeconds 0: the ordinal is back in `unallocated` in the same write, as
    # upstream's release() + garbageCollect(0) leave it; one update, so sequenceNumber + 1.
    assert spec["allocations"][44] is None and 44 in spec["unallocated"]
    assert "44" not in spec["sequenceNumberForAllocation"]
    assert spec["sequenceNumber"] == 1
    assert len(spec["attributes"]) == 45  # 46 before: the released pod's entry is gone, the rest renumbered
    assert holder(spec, 0) == "ipip-tunnel-addr-node-1"  # tunnel address kept
    assert holder(spec, 43) == "k8s-pod-network.default.app-2"
    assert holder(spec, 45) == "k8s-pod-network.default.web-pending"  # Pending pod kept
    assert handle(kube_server, "k8s-pod-network.default.web-gone") is None  # count 0: handle deleted

    b = block(kube_server, "10-0-0-64-26")
    assert b is not None
    assert_invariants(b["spec"])
    assert b["spec"]["allocations"][10] is None
    assert handle(kube_server, "k8s-pod-network.default.replaced") is None
    # default/moved exists (now with 10.0.0.159): an allocation naming an existing pod is live, never released
    assert holder(b["spec"], 11) == "k8s-pod-network.default.moved"
    moved = handle(kube_server, "k8s-pod-network.default.moved")
    assert moved is not None and moved["spec"]["block"] == {"10.0.0.64/26": 1, "10.0.0.128/26": 1}

    assert block(kube_server, "10-0-0-192-26") is None
    assert kube_server.get(GROUP, VERSION, "blockaffinities", "node-2-10-0-0-192-26") is None
    assert kube_server.get(GROUP, VERSION, "blockaffinities", "node-2-10-0-0-128-26") is not None


def test_second_apply_changes_nothing(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = reclaim.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    apply(plan, api, tmp_path)
    kube_server.reset_log()
    again = apply(plan, api, tmp_path)
    assert [s.status for s in again.steps] == ["skipped", "skipped", "skipped"]
    assert writes(kube_server) == 0


def test_stale_resource_version_is_reread_and_redecided(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    plan = reclaim.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    raced: list[str] = []

    def calico_allocates(rec: RequestRecord) -> None:
        # calico-ipam on node-1 hands out ordinal 46 just as cidrx writes the block
        if rec.method == "PUT" and rec.path.endswith(f"/ipamblocks/{BLOCK_A}") and not raced:
            raced.append(rec.path)
            current = kube_server.get(GROUP, VERSION, "ipamblocks", BLOCK_A)
            assert current is not None
            spec = current["spec"]
            spec["attributes"].append(cases.pod_attr("default", "fresh", "node-1"))
            spec["allocations"][46] = len(spec["attributes"]) - 1
            spec["unallocated"].remove(46)
            kube_server.put(current)

    kube_server.on_request = calico_allocates
    apply(plan, api, tmp_path)
    assert raced and kube_server.count("PUT", "ipamblocks", path_contains=BLOCK_A) == 2
    spec = block(kube_server, BLOCK_A)["spec"]  # type: ignore[index]
    assert_invariants(spec)
    assert spec["allocations"][44] is None
    assert holder(spec, 46) == "k8s-pod-network.default.fresh"  # the concurrent allocation survived


def test_pod_live_again_is_never_released(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = reclaim.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    kube_server.put(cases.pod("default", "web-gone", "node-1", None, phase="Pending"))  # back, being set up
    result = apply(plan, api, tmp_path)
    step = result.outputs("release-ips-10-0-0-0-26")
    assert step["kept"] == [{"ip": "10.0.0.44", "why": "live: pod default/web-gone exists"}]
    spec = block(kube_server, BLOCK_A)["spec"]  # type: ignore[index]
    assert holder(spec, 44) == "k8s-pod-network.default.web-gone"
    assert handle(kube_server, "k8s-pod-network.default.web-gone") is not None


def test_block_that_got_an_address_is_kept(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = reclaim.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    kube_server.put(cases.ipamblock("10.0.0.192/26", "node-2", {0: cases.pod_attr("shop", "new", "node-2")}))
    result = apply(plan, api, tmp_path)
    assert result.outputs("release-empty-block-10-0-0-192-26")["kept"] == "block now holds 1 address(es)"
    assert block(kube_server, "10-0-0-192-26") is not None
    assert kube_server.get(GROUP, VERSION, "blockaffinities", "node-2-10-0-0-192-26") is not None


def test_tunnel_address_is_never_released(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    # A hand-made step naming node-1's tunnel address: apply re-reads and refuses.
    snap = snapshot_from(api)
    entry = {"ordinal": 0, "ip": "10.0.0.0", "handle_id": "ipip-tunnel-addr-node-1", "handle": "", "pod": None}
    step = Step("t", "calico.release-ips", {"block": BLOCK_A, "cidr": "10.0.0.0/26", "ips": [entry]}, "t")
    plan = seal(Plan(snap.target, CREATED, snap.fingerprint, "calico-reclaim", {}, (step,)))
    apply(plan, api, tmp_path)
    assert holder(block(kube_server, BLOCK_A)["spec"], 0) == "ipip-tunnel-addr-node-1"  # type: ignore[index]
    assert kube_server.count("PUT", "ipamblocks") == 0


def test_pool_created_once_with_plan_label(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = pool_strategy.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    assert [s.status for s in apply(plan, api, tmp_path).steps] == ["done"]
    pool = kube_server.get(GROUP, VERSION, "ippools", "cidrx-10-0-2-0-23")
    assert pool is not None
    assert pool["metadata"]["labels"] == {DIGEST_TAG: plan.plan_id}
    assert pool["spec"] == {
        "allowedUses": ["Workload", "Tunnel"],
        "assignmentMode": "Automatic",
        "cidr": "10.0.2.0/23",
        "blockSize": 26,
        "natOutgoing": True,
        "nodeSelector": "all()",
        "disabled": False,
        "ipipMode": "Always",
    }
    kube_server.reset_log()
    assert [s.status for s in apply(plan, api, tmp_path).steps] == ["skipped"]
    assert writes(kube_server) == 0


def test_pool_name_taken_by_someone_else_is_stale(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = pool_strategy.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    kube_server.put(cases.ippool("cidrx-10-0-2-0-23", "10.0.2.0/23"))
    with pytest.raises(StalePlan):
        apply(plan, api, tmp_path)


def test_a_block_that_never_settles_stops_resumably(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = reclaim.make_plan(snapshot_from(api), PlanOptions(), CREATED)
    kube_server.inject(409, method="PUT", path_contains=BLOCK_A, times=None, reason="Conflict")
    with pytest.raises(ApplyInterrupted, match="kept changing"):
        apply(plan, api, tmp_path)
    kube_server.clear_faults()
    result = apply(plan, api, tmp_path)  # the same command again finishes the job
    assert result.outputs("release-ips-10-0-0-0-26")["released"] == ["10.0.0.44"]
