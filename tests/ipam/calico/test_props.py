"""Property: for random Calico IPAM states, no reclaim plan contains an address the liveness rule calls
live, and applying the plan (real client, fake API server) never leaves an address a pod reports free to
be handed to another pod."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cidrx.engine.apply import run_plan
from cidrx.engine.executor import StepContext
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.ipam.calico.analyze import leak_reason
from cidrx.ipam.calico.collect import collect_calico
from cidrx.ipam.calico.ipam import IPAM
from cidrx.ipam.calico.strategies import reclaim
from cidrx.ipam.liveness import AddressHolders
from cidrx.kube.api import KubeApi
from cidrx.model.options import PlanOptions
from cidrx.render.progress import NullProgress
from tests.support.cases import calico as cases
from tests.support.fakes.kube_server import FakeKubeServer

CIDR = "10.0.0.0/28"
NAMES = ("a", "b", "c", "d")
PHASES = ("Running", "Pending", "Succeeded", "Failed")

attr_st = st.one_of(
    st.builds(lambda p: cases.pod_attr("default", p, "node-1"), st.sampled_from(NAMES)),
    st.builds(
        lambda p, q: {
            **cases.pod_attr("default", p, "node-1"),
            "alternateOwnerAttrs": {"namespace": "default", "pod": q},
        },
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
    ),
    st.just(cases.tunnel_attr("node-1")),
    st.just({"handle_id": "lb", "secondary": {"namespace": "default", "service": "web", "type": "LoadBalancer"}}),
    st.just({"handle_id": "bare"}),
)
state_st = st.tuples(
    st.dictionaries(st.integers(0, 15), attr_st, max_size=8),
    st.dictionaries(st.sampled_from(NAMES), st.tuples(st.sampled_from(PHASES), st.none() | st.integers(0, 15))),
)


def world(allocs: dict[int, Any], pods: dict[str, tuple[str, int | None]]) -> cases.World:
    w = cases.World()
    w.pools = [cases.ippool("p", "10.0.0.0/24", block_size=28)]
    w.nodes = [cases.node("node-1", "10.10.0.11")]
    w.blocks = [cases.ipamblock(CIDR, "node-1", allocs)]
    w.affinities = [cases.affinity("node-1", CIDR)]
    w.pods = [
        cases.pod("default", n, "node-1", None if o is None else f"10.0.0.{o}", phase=ph) for n, (ph, o) in pods.items()
    ]
    return w


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(state_st)
def test_no_plan_releases_a_live_address(state: tuple[dict[int, Any], dict[str, tuple[str, int | None]]]) -> None:
    allocs, pod_spec = state
    w = world(allocs, pod_spec)
    snap = w.snapshot()
    plan = reclaim.make_plan(snap, PlanOptions(), "2024-05-01T10:05:00Z")
    pods = {p.key: p for p in snap.kube.ipam_pods if p.phase not in ("Succeeded", "Failed")}
    holders = AddressHolders.of(pods.values())
    block = snap.kube.calico.blocks[0]  # type: ignore[union-attr]
    for step in plan.steps:
        for entry in step.params.get("ips", []):
            attr = block.attribute(entry["ordinal"])
            assert attr is not None
            assert not holders.is_live(entry["ip"])
            assert leak_reason(attr, entry["ip"], pods, holders) is not None

    tmp = Path(tempfile.mkdtemp(prefix="cidrx-calico-props-"))
    with FakeKubeServer() as server:
        server.put_many(w.objects())
        kubeconfig = server.kubeconfig(tmp / "kubeconfig.yaml")
        with KubeApi.connect(str(kubeconfig), None) as api:
            live = dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, calico=collect_calico(api)))
            plan = reclaim.make_plan(live, PlanOptions(), "2024-05-01T10:05:00Z")
            ctx = StepContext(
                plan=plan, apis=SimpleNamespace(kube=api), waiter=Waiter(sleep=lambda _: None), progress=NullProgress()
            )
            run_plan(plan, IPAM.executors(), ctx, Journal.open(tmp / "plan.json", plan))
        after = server.get("crd.projectcalico.org", "v1", "ipamblocks", cases.block_name(CIDR))
        assert after is not None
        spec = after["spec"]
        for ip in holders.by_ip:  # every address an unfinished pod reports is still allocated
            ordinal = int(ip.rsplit(".", 1)[1])
            if allocs.get(ordinal) is not None:
                assert spec["allocations"][ordinal] is not None, ip
                assert ordinal not in spec["unallocated"]
    shutil.rmtree(tmp, ignore_errors=True)
