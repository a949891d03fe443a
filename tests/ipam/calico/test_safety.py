"""The Calico write rules of libcalico-go (cited in cidrx.ipam.calico.actions and docs/cloud-facts.md), each shown
on the fake API server through the real client: a BlockAffinity that is not `confirmed` is never touched,
an empty block younger than a minute is kept, a block is released in upstream's order (affinity
pendingDeletion, block marked deleted without a sequence bump, block deleted, affinity deleted), apply
re-reads the pods (any pod reporting the address, or named as alternate owner, keeps it), pools count by
use, the fake refuses the shapes upstream's CRDs refuse, and the v1/v3 API choice is libcalico-go's."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cidrx.engine.apply import ApplyResult, run_plan
from cidrx.engine.executor import StepContext
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.errors import CloudError
from cidrx.ipam.calico.analyze import analyze_calico
from cidrx.ipam.calico.collect import calico_api, collect_calico
from cidrx.ipam.calico.ipam import IPAM
from cidrx.ipam.calico.strategies import reclaim
from cidrx.kube.api import KubeApi
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan
from cidrx.render.progress import NullProgress
from tests.support.cases import calico as cases
from tests.support.fakes.kube_server import FakeKubeServer, RequestRecord

GROUP, VERSION = "crd.projectcalico.org", "v1"
CREATED = "2024-05-01T10:05:00Z"
EMPTY = "10-0-0-192-26"  # node-2's spare empty block in the incident
EMPTY_AFFINITY = "node-2-10-0-0-192-26"


@pytest.fixture
def api(calico_incident_api: KubeApi) -> KubeApi:
    return calico_incident_api


def plan_from(api: KubeApi, taken_at: str = cases.TAKEN_AT) -> Plan:
    snap = cases.incident().snapshot()
    kube = snap.kube.__class__(**{**snap.kube.__dict__, "calico": collect_calico(api)})
    fresh = snap.__class__(**{**snap.__dict__, "kube": kube, "taken_at": taken_at})
    return reclaim.make_plan(fresh, PlanOptions(), CREATED)


def apply(plan: Plan, api: KubeApi, tmp_path: Path) -> ApplyResult:
    ctx = StepContext(
        plan=plan, apis=SimpleNamespace(kube=api), waiter=Waiter(sleep=lambda _: None), progress=NullProgress()
    )
    return run_plan(plan, IPAM.executors(), ctx, Journal.open(tmp_path / "plan.json", plan))


def step_ids(plan: Plan) -> list[str]:
    return [s.id for s in plan.steps]


def _affinity_state(server: FakeKubeServer, state: str) -> None:
    obj = server.get(GROUP, VERSION, "blockaffinities", EMPTY_AFFINITY)
    assert obj is not None
    obj["spec"]["state"] = state
    server.put(obj)


@pytest.mark.parametrize("state", ["pending", "pendingDeletion"])
def test_an_affinity_not_confirmed_is_never_planned(
    state: str, api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    _affinity_state(kube_server, state)
    assert f"release-empty-block-{EMPTY}" not in step_ids(plan_from(api))


def test_a_node_mid_claim_at_apply_keeps_its_block(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = plan_from(api)
    assert f"release-empty-block-{EMPTY}" in step_ids(plan)
    _affinity_state(kube_server, "pending")  # node-2 is claiming it again right now
    out = apply(plan, api, tmp_path).outputs(f"release-empty-block-{EMPTY}")
    assert out["released"] is False and "pending" in out["kept"]
    assert kube_server.get(GROUP, VERSION, "ipamblocks", EMPTY) is not None
    assert kube_server.get(GROUP, VERSION, "blockaffinities", EMPTY_AFFINITY)["spec"]["state"] == "pending"  # type: ignore[index]


def _claimed_at(server: FakeKubeServer, when: str) -> None:
    block = server.get(GROUP, VERSION, "ipamblocks", EMPTY)
    assert block is not None
    block["spec"]["affinityClaimTime"] = when
    server.put(block)


def test_an_empty_block_younger_than_a_minute_is_kept(api: KubeApi, kube_server: FakeKubeServer) -> None:
    _claimed_at(kube_server, "2024-05-01T09:59:30Z")  # 30 s before the snapshot (10:00:00)
    assert f"release-empty-block-{EMPTY}" not in step_ids(plan_from(api))
    _claimed_at(kube_server, "2024-05-01T09:58:59Z")  # 61 s before
    assert f"release-empty-block-{EMPTY}" in step_ids(plan_from(api))


def test_block_released_in_upstreams_order(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = plan_from(api)
    seen: list[tuple[str, str, Any, Any, Any]] = []

    def record(rec: RequestRecord) -> None:
        if rec.method in ("PUT", "DELETE") and ("blockaffinities" in rec.path or "ipamblocks/" + EMPTY in rec.path):
            block = kube_server.get(GROUP, VERSION, "ipamblocks", EMPTY)
            affinity = kube_server.get(GROUP, VERSION, "blockaffinities", EMPTY_AFFINITY)
            seen.append(
                (
                    rec.method,
                    rec.path.rsplit("/", 2)[1],
                    None if block is None else block["spec"].get("deleted"),
                    None if block is None else block["spec"].get("sequenceNumber", 0),
                    None if affinity is None else affinity["spec"]["state"],
                )
            )

    kube_server.on_request = record
    apply(plan, api, tmp_path)
    # (write, resource, state before it: block deleted, block sequenceNumber, affinity state)
    assert seen == [
        ("PUT", "blockaffinities", False, 0, "confirmed"),
        ("PUT", "ipamblocks", False, 0, "pendingDeletion"),
        ("DELETE", "ipamblocks", True, 0, "pendingDeletion"),  # marked deleted, no sequence bump
        ("DELETE", "blockaffinities", None, None, "pendingDeletion"),
    ]
    assert kube_server.get(GROUP, VERSION, "blockaffinities", EMPTY_AFFINITY) is None


def test_any_pod_reporting_the_address_at_apply_keeps_it(
    api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    plan = plan_from(api)
    kube_server.put(cases.pod("default", "squatter", "node-1", "10.0.0.44"))  # not the pod the allocation names
    out = apply(plan, api, tmp_path).outputs("release-ips-10-0-0-0-26")
    assert out["released"] == []
    assert out["kept"] == [{"ip": "10.0.0.44", "why": "live: held by default/squatter (Running)"}]
    spec = kube_server.get(GROUP, VERSION, "ipamblocks", "10-0-0-0-26")["spec"]  # type: ignore[index]
    assert spec["allocations"][44] is not None


def test_an_alternate_owner_at_apply_keeps_it(api: KubeApi, kube_server: FakeKubeServer, tmp_path: Path) -> None:
    plan = plan_from(api)
    block = kube_server.get(GROUP, VERSION, "ipamblocks", "10-0-0-0-26")
    assert block is not None
    spec = block["spec"]
    attr = spec["attributes"][spec["allocations"][44]]
    attr["alternateOwnerAttrs"] = {"namespace": "default", "pod": "web-target", "node": "node-2"}
    kube_server.put(block)
    kube_server.put(cases.pod("default", "web-target", "node-2", None, phase="Pending"))
    out = apply(plan, api, tmp_path).outputs("release-ips-10-0-0-0-26")
    assert out["released"] == [] and out["kept"] == [{"ip": "10.0.0.44", "why": "live: pod default/web-target exists"}]


# ---- pools by use -------------------------------------------------------------------------------


def starving_world(other_pool: dict[str, Any]) -> cases.World:
    """node-1 holds the only block of a /26 workload pool; node-2 holds none and borrows nothing."""
    w = cases.World()
    w.pools = [cases.ippool("pods", "10.0.0.0/26"), other_pool]
    w.nodes = [cases.node("node-1", "10.10.0.11"), cases.node("node-2", "10.10.0.12")]
    w.blocks = [cases.ipamblock("10.0.0.0/26", "node-1", {})]
    w.affinities = [cases.affinity("node-1", "10.0.0.0/26")]
    return w


@pytest.mark.parametrize(
    "spec",
    [
        {"allowedUses": ["LoadBalancer"]},
        {"allowedUses": ["Tunnel"]},
        {"assignmentMode": "Manual"},
        {"disabled": True},
    ],
    ids=["loadbalancer-only", "tunnel-only", "manual", "disabled"],
)
def test_a_pool_not_for_pods_neither_satisfies_nor_hides_a_starving_node(spec: dict[str, Any]) -> None:
    w = starving_world(cases.ippool("other", "10.1.0.0/24", **spec))
    w.blocks.append(cases.ipamblock("10.1.0.0/26", "node-2", {}))  # node-2's block of that pool gives pods nothing
    _, findings = analyze_calico(w.calico(), w.pod_states(), w.kube_nodes())
    starving = [f for f in findings if f.id == "CALICO-NODE-WITHOUT-BLOCK"]
    assert [f.subject for f in starving] == ["nodes node-2"]
    assert not any(f.id == "CALICO-POOL-BLOCKS-EXHAUSTED" and "other" in f.subject for f in findings)


def test_a_workload_pool_with_room_means_no_starving_node() -> None:
    w = starving_world(cases.ippool("more", "10.1.0.0/24"))
    _, findings = analyze_calico(w.calico(), w.pod_states(), w.kube_nodes())
    assert not [f for f in findings if f.id == "CALICO-NODE-WITHOUT-BLOCK"]


# ---- upstream shapes and API choice -------------------------------------------------------------


def test_the_fake_refuses_what_upstreams_crds_refuse(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    bad_block = cases.ipamblock("10.9.0.0/30", None, {})
    bad_block["spec"]["affinity"] = None  # a string in the CRD, not nullable
    bad_affinity = cases.affinity("n", "10.9.0.0/30")
    bad_affinity["spec"]["deleted"] = False  # v1 types it as a string
    with KubeApi.connect(str(kubeconfig_path), None) as api:
        for plural, kind, obj in (
            ("ipamblocks", "IPAMBlock", bad_block),
            ("blockaffinities", "BlockAffinity", bad_affinity),
        ):
            with pytest.raises(CloudError, match="is invalid: spec"):
                api.create_custom(GROUP, VERSION, plural, kind, obj)
    assert kube_server.get(GROUP, VERSION, "ipamblocks", "10-9-0-0-30") is None


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ({"crd.projectcalico.org"}, "crd.projectcalico.org/v1"),
        ({"crd.projectcalico.org", "projectcalico.org"}, "crd.projectcalico.org/v1"),  # v3 API server over v1
        ({"projectcalico.org"}, "projectcalico.org/v3"),
        ({"whereabouts.cni.cncf.io"}, None),
    ],
)
def test_api_choice_is_libcalico_gos(groups: set[str], expected: str | None) -> None:
    assert calico_api(groups) == expected
