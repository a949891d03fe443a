"""Calico's own release, cooldown and garbage-collection cases (tests/support/cases/calico_upstream.py) replayed
on cidrx: the block arithmetic, apply through the real client against the fake API server (whose writes
are checked against the upstream CRD schemas), and the liveness rule against kube-controllers' GC."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cidrx.engine.apply import run_plan
from cidrx.engine.executor import StepContext
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.ipam.calico.actions.blockmath import garbage_collect, release_ordinals
from cidrx.ipam.calico.analyze import leak_reason
from cidrx.ipam.calico.collect import attribute_from, collect_calico
from cidrx.ipam.calico.ipam import IPAM
from cidrx.ipam.liveness import AddressHolders
from cidrx.kube.api import KubeApi
from cidrx.model.kube import PodState
from cidrx.model.plan import Plan, Step, seal
from cidrx.render.progress import NullProgress
from tests.support.cases import calico as cases
from tests.support.cases import calico_upstream as up
from tests.support.fakes.kube_server import FakeKubeServer

GROUP, VERSION = "crd.projectcalico.org", "v1"


def _with_cooldowns(case: up.BlockCase) -> dict[str, Any]:
    obj = up.block(case.allocs)
    spec = obj["spec"]
    for ordinal, when in sorted(case.extra_cooldown.items()):
        entry = {"releasedAt": when}
        if entry not in spec["attributes"]:
            spec["attributes"].append(entry)
        spec["allocations"][ordinal] = spec["attributes"].index(entry)
        spec["unallocated"].remove(ordinal)
    return obj


@pytest.mark.parametrize("case", up.BLOCK_CASES, ids=lambda c: c.upstream)
def test_block_release_as_upstream(case: up.BlockCase) -> None:
    before = _with_cooldowns(case)
    after = release_ordinals(before, set(case.release), case.cooldown, up.NOW)["spec"]
    allocated = tuple(o for o, a in enumerate(after["allocations"]) if a is not None)
    assert allocated == case.allocated_after, case.upstream_decides
    assert len(after["attributes"]) == case.attributes_after
    assert after["sequenceNumber"] == 8  # exactly one more than before: one block update
    assert sorted(after["unallocated"]) == [o for o, a in enumerate(after["allocations"]) if a is None]
    for o in case.release:
        if o in allocated:  # in cooldown: points at an attribute holding only releasedAt, sequence recorded
            assert after["attributes"][after["allocations"][o]] == {"releasedAt": up.NOW}
            assert after["sequenceNumberForAllocation"][str(o)] == 7
        else:
            assert str(o) not in after["sequenceNumberForAllocation"]


def _apply(server: FakeKubeServer, kubeconfig: Path, tmp_path: Path, step: Step) -> dict[str, Any]:
    snap = cases.incident().snapshot()
    plan = seal(Plan(snap.target, "2024-05-01T10:05:00Z", snap.fingerprint, "calico-reclaim", {}, (step,)))
    with KubeApi.connect(str(kubeconfig), None) as api:
        ctx = StepContext(
            plan=plan, apis=SimpleNamespace(kube=api), waiter=Waiter(sleep=lambda _: None), progress=NullProgress()
        )
        result = run_plan(plan, IPAM.executors(), ctx, Journal.open(tmp_path / "plan.json", plan))
        return dict(result.outputs(step.id) or {})


@pytest.mark.parametrize("case", up.APPLY_CASES, ids=lambda c: c.upstream)
def test_refused_release_writes_nothing(
    case: up.ApplyCase, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    allocs = {100: up.handle("newstuff")} if case.planned_handle else {}
    kube_server.put(up.block(allocs))
    ordinal = 100 if case.planned_handle else 13
    entry = {
        "ordinal": ordinal,
        "ip": f"100.64.0.{ordinal}",
        "handle_id": case.planned_handle or "unlucky",
        "handle": "",
        "pod": f"default/{case.planned_handle or 'unlucky'}",
    }
    _apply(kube_server, kubeconfig_path, tmp_path, Step("r", "calico.release-ips", {"block": "b", "ips": [entry]}, ""))
    assert kube_server.count("PUT", "ipamblocks") == 0, case.cidrx_decides
    assert kube_server.get(GROUP, VERSION, "ipamblocks", "b") is not None


def test_release_with_cooldown_keeps_the_ordinal_out_of_unallocated(
    kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    """ipCooldownSeconds 300: upstream's release() points the ordinal at a {releasedAt} attribute and only
    garbageCollect returns it to `unallocated` once the cooldown has passed."""
    kube_server.put(up.block({13: up.handle("unlucky"), 14: up.handle("web")}))
    kube_server.put(cases.pod("default", "web", "node-1", "100.64.0.14"))
    config = cases.ipamconfig()
    config["spec"]["ipCooldownSeconds"] = 300
    kube_server.put(config)
    handle = {"apiVersion": cases.API, "kind": "IPAMHandle", "metadata": {"name": "unlucky"}}
    kube_server.put({**handle, "spec": {"handleID": "unlucky", "block": {up.CIDR: 1}}})
    entry = {"ordinal": 13, "ip": "100.64.0.13", "handle_id": "unlucky", "handle": "unlucky", "pod": "default/unlucky"}
    out = _apply(
        kube_server, kubeconfig_path, tmp_path, Step("r", "calico.release-ips", {"block": "b", "ips": [entry]}, "")
    )
    assert out["released"] == ["100.64.0.13"]
    spec = kube_server.get(GROUP, VERSION, "ipamblocks", "b")["spec"]  # type: ignore[index]
    assert 13 not in spec["unallocated"]
    released = spec["attributes"][spec["allocations"][13]]
    assert set(released) == {"releasedAt"}
    assert spec["sequenceNumberForAllocation"]["13"] == 7 and spec["sequenceNumber"] == 8
    assert spec["attributes"][spec["allocations"][14]]["handle_id"] == "web"
    assert kube_server.get(GROUP, VERSION, "ipamhandles", "unlucky") is None  # its only address: deleted


def _pod(ref: str, phase: str, ip: str | None) -> PodState:
    ns, _, name = ref.partition("/")
    return PodState(ns, name, phase, "node-1", (ip,) if ip else ())


@pytest.mark.parametrize("case", up.LIVENESS_CASES, ids=lambda c: c.upstream)
def test_liveness_against_kube_controllers(case: up.LivenessCase) -> None:
    raw: dict[str, Any] = {"handle_id": "h", "secondary": case.secondary}
    if case.alternate is not None:
        raw["alternateOwnerAttrs"] = case.alternate
    pods = {ref: _pod(ref, phase, ip) for ref, phase, ip in case.pods}
    leak = leak_reason(attribute_from(raw), up.IP, pods, AddressHolders.of(pods.values())) is not None
    assert leak == case.cidrx_leak, case.why_differs
    assert case.cidrx_leak <= case.upstream_leak  # never less safe than upstream
    if case.cidrx_leak != case.upstream_leak:
        assert case.why_differs


def test_collect_keeps_the_owner_fields_liveness_needs(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    case = next(c for c in up.LIVENESS_CASES if c.alternate is not None)
    kube_server.put(
        up.block({13: {"handle_id": "vm", "secondary": case.secondary, "alternateOwnerAttrs": case.alternate}})
    )
    with KubeApi.connect(str(kubeconfig_path), None) as api:
        section = collect_calico(api)
    attr = section.blocks[0].attribute(13)
    assert attr is not None
    assert attr.pod_refs == ("vms/virt-launcher-a-old", "vms/virt-launcher-a-new")
    assert attr.vmi_name == "vm-a"
    assert dataclasses.replace(attr, alternate=None).pod_refs == ("vms/virt-launcher-a-old",)


@pytest.mark.parametrize(("cooldown", "collected"), [(30, True), (100000, False)])
def test_garbage_collect_cold_ips_as_upstream(cooldown: int, collected: bool) -> None:
    """libcalico-go/lib/ipam/garbage_collect_test.go GarbageCollectColdIPs: an ordinal released an hour
    ago is returned to `unallocated` (its attribute dropped) under a 30 s cooldown, kept under 100000 s;
    the live allocation is untouched either way. cidrx runs the same collection in each release write."""
    cold = {"handle_id": "cold", "releasedAt": "2024-05-01T09:00:00Z"}
    obj = up.block({31: cold, 52: up.handle("live")})
    spec = obj["spec"]
    garbage_collect(spec, cooldown, up.NOW)
    assert (spec["allocations"][31] is None) is collected and (31 in spec["unallocated"]) is collected
    assert spec["allocations"][52] is not None
    assert len(spec["attributes"]) == (1 if collected else 2)
