"""Property: for random Whereabouts states, no reclaim plan contains an address the liveness rule calls
live, and applying a plan (the real client against the fake API server) never frees an address a pod
still reports, so no new pod can be handed an address another pod uses.

States mix networks with and without `network_name` (one with a '-' in it), IPv4 and IPv6 pools whose
addresses collide across networks, reservations named as NormalizeIP names them, and pods of every phase
(or gone) that report arbitrary addresses in status.podIPs or Multus network-status (or have none yet).
"""

from __future__ import annotations

import ipaddress
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cidrx.engine.apply import run_plan
from cidrx.engine.executor import StepContext
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.ipam.liveness import AddressHolders, canonical_ip
from cidrx.ipam.whereabouts.actions.delete_reservation import DELETE_RESERVATION
from cidrx.ipam.whereabouts.actions.release_allocations import RELEASE
from cidrx.ipam.whereabouts.collect import collect_whereabouts
from cidrx.ipam.whereabouts.ipam import IPAM
from cidrx.ipam.whereabouts.model import name_addresses, pool_name
from cidrx.ipam.whereabouts.strategies.reclaim import check_drift, make_plan
from cidrx.kube.api import KubeApi, KubeApis
from cidrx.kube.collect import pod_state_from
from cidrx.model.kube import KubeSection
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, save_plan
from cidrx.model.snapshot import Snapshot, seal
from cidrx.render.progress import NullProgress
from tests.support.cases import whereabouts as wc
from tests.support.fakes.kube_server import FakeKubeServer

JSON = dict[str, Any]
NETWORKS = ("", "blue", "net-a")
RANGES = ("10.60.0.0/28", "fd00:60::/124")
PODS = tuple(f"p{i}" for i in range(8))
PHASES = ("Running", "Pending", "Succeeded", "Failed", "", None)  # None: the pod does not exist
ADDRESSES = tuple(str(ip) for cidr in RANGES for ip in ipaddress.ip_network(cidr))
NOW = "2024-12-09T03:45:00Z"


@st.composite
def states(draw: st.DrawFn) -> list[JSON]:
    objects: list[JSON] = []
    for network in NETWORKS:
        for cidr in draw(st.lists(st.sampled_from(RANGES), unique=True, max_size=2)):
            size = ipaddress.ip_network(cidr).num_addresses
            keys = draw(st.lists(st.integers(0, size - 1), unique=True, max_size=6))
            allocations = {str(k): wc.alloc(f"{wc.APP_NS}/{draw(st.sampled_from(PODS))}", k) for k in keys}
            objects.append(wc.ippool(pool_name(cidr, network), cidr, allocations))
    for n, ip in enumerate(draw(st.lists(st.sampled_from(ADDRESSES), unique=True, max_size=6))):
        podref = f"{wc.APP_NS}/{draw(st.sampled_from(PODS))}"
        objects.append(wc.orip(ip, podref, n, network_name=draw(st.sampled_from(NETWORKS))))
    for name in PODS:
        phase = draw(st.sampled_from(PHASES))
        if phase is None:
            continue
        ips = draw(st.none() | st.lists(st.sampled_from(ADDRESSES), max_size=2))
        pod = wc.pod(name, phase, "lab-worker-1", ips=ips)
        if not phase:
            del pod["status"]["phase"]
        objects.append(pod)
    return objects


def live_addresses(objects: list[JSON]) -> set[str]:
    """What the liveness rule calls live, from every pod in the cluster (not only those cidrx kept)."""
    pods = [pod_state_from(o) for o in objects if o["kind"] == "Pod"]
    holders = AddressHolders.of(pods)
    return set(holders.by_ip)


def planned_addresses(plan: Plan) -> set[str]:
    found: set[str] = set()
    for step in plan.steps:
        if step.action == RELEASE.name:
            found |= {canonical_ip(a["ip"]) for a in step.params["allocations"]}
        elif step.action == DELETE_RESERVATION.name:
            found |= {canonical_ip(ip) for ip in name_addresses(step.params["name"])}
    return found


@settings(max_examples=60, derandomize=True, deadline=None)
@given(states())
def test_no_plan_contains_a_live_address(objects: list[JSON]) -> None:
    plan = make_plan(wc.snapshot_of(objects), PlanOptions(), NOW)
    assert not planned_addresses(plan) & live_addresses(objects)


def _snapshot(api: KubeApi) -> Snapshot:
    section = collect_whereabouts(api)
    pods = tuple(wc.kept_pods(api.iter_pods(), section))
    kube = KubeSection(available=True, context="lab", ipam_pods=pods, whereabouts=section)
    return seal(Snapshot(target=wc.TARGET, taken_at=NOW, kube=kube))


def _holdings(server: FakeKubeServer) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(pool, address) of every allocation and (reservation, address) of every reservation in the server."""
    allocated: set[tuple[str, str]] = set()
    for pool in server.objects_of("IPPool"):
        net = ipaddress.ip_network(pool["spec"]["range"])
        for key in pool["spec"]["allocations"]:
            allocated.add((pool["metadata"]["name"], str(net.network_address + int(key))))
    reserved = {
        (r["metadata"]["name"], ip)
        for r in server.objects_of("OverlappingRangeIPReservation")
        for ip in name_addresses(r["metadata"]["name"])
    }
    return allocated, reserved


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states())
def test_applying_a_plan_never_frees_a_live_address(objects: list[JSON]) -> None:
    live = live_addresses(objects)
    with FakeKubeServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.put_many(objects)
        config = server.kubeconfig(Path(tmp) / "kubeconfig.yaml")
        with KubeApi(str(config), None) as api:
            plan = make_plan(_snapshot(api), PlanOptions(), NOW)
            path = Path(tmp) / "plan.json"
            save_plan(plan, path)
            allocated, reserved = _holdings(server)
            ctx = StepContext(
                plan=plan, apis=KubeApis(kube=api), waiter=Waiter(sleep=lambda s: None), progress=NullProgress()
            )
            journal = Journal.open(path, plan)
            run_plan(plan, IPAM.executors(), ctx, journal, preflight=lambda: check_drift(plan, _snapshot(api)))
            after_allocated, after_reserved = _holdings(server)
        assert not server.errors
    freed = {canonical_ip(ip) for _, ip in allocated - after_allocated}
    unreserved = {canonical_ip(ip) for _, ip in reserved - after_reserved}
    assert not freed & live and not unreserved & live
    # What apply removed is exactly what the plan listed (nothing else changed under it here).
    assert freed | unreserved <= planned_addresses(plan)
