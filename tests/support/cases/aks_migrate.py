"""Conformance case of AKS's `aks-migrate`: the dynamic pod-subnet incident (pod subnet `pods` exhausted) after an
`aks-pod-subnet` expansion was applied (its new pod subnet has room; the old pool's nodes still take pod addresses
from the full one), in the loopback ARM fake with the cluster side in the fake API server. The migration cordons
those nodes, evicts their pods and scales the old agent pool to 0."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cases import Case, Interrupt, PlanDoc
from tests.support.cases.live import AksLive, Live, clean_env
from tests.support.cli import run
from tests.support.estates import aks as aw
from tests.support.estates.kube_objects import pod
from tests.support.fakes.kube_server import FakeKubeServer

POOL_LABEL = "kubernetes.azure.com/agentpool"
APP_PODS = 2  # per node (the plan evicts them); each node also runs a DaemonSet pod, which stays


def node_object(name: str, pool: str, ip: str, created: str, max_pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {POOL_LABEL: pool}, "creationTimestamp": created},
        "spec": {"providerID": f"azure:///subscriptions/{aw.SUB}/virtualMachineScaleSets/{pool}/{name[-1]}"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}],
            "allocatable": {"pods": str(max_pods)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_subnet_objects() -> list[dict[str, Any]]:
    """The pod-subnet estate's cluster side (aw.pod_subnet_kube()): its nodes, app pods and a DaemonSet pod on
    each node."""
    objs: list[dict[str, Any]] = []
    for n in aw.pod_subnet_kube().nodes:
        objs.append(node_object(n.name, n.pool, n.internal_ip, n.created, n.allocatable_pods))
        for i in range(APP_PODS):
            objs.append(pod(f"cart-{n.name[-1]}-{i}", "shop", node_name=n.name))
        ds = pod(f"azure-cns-{n.name[-1]}", "kube-system", node_name=n.name)
        ds["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "azure-cns", "uid": "ds-1", "controller": True}
        ]
        objs.append(ds)
    return objs


@contextlib.contextmanager
def after_expansion(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[AksLive]:
    clean_env(mp)
    with aw.aks_estate(mp, aw.build_pod_subnet) as arm, FakeKubeServer() as kube:
        kube.put_many(pod_subnet_objects())
        access = ["--kubeconfig", str(kube.kubeconfig(tmp / "kubeconfig"))]
        live = AksLive(tmp, [*aw.target_flags(aw.POD_CLUSTER), *access], access, access, kube=kube, arm=arm)
        plan = tmp / "expansion.json"
        made = run("expand", *live.target, "--strategy", "aks-pod-subnet", "--plan", "--out", str(plan))
        assert made.exit_code == 0, made.output
        applied = run("expand", "--apply", str(plan), "--yes", *access)
        assert applied.exit_code == 0, applied.output
        live.reset_log()
        yield live
    if kube.errors:
        raise kube.errors[0]


def resize_old_pool(live: Any, plan: PlanDoc) -> list[str]:
    """Someone scales the old agent pool up between plan and apply."""
    name = sorted(plan.basis["agent_pools"])[0]
    props = live.arm.pools[(aw.SUB, aw.RG, aw.POD_CLUSTER, name)]["properties"]
    props["count"] += 1
    props["maxCount"] = max(props.get("maxCount") or 0, props["count"])
    return [f"agent pool {name}"]


def _estate(tmp: Path, mp: pytest.MonkeyPatch) -> contextlib.AbstractContextManager[Live]:
    return after_expansion(tmp, mp)


CASE = Case(
    "aks-migrate",
    estate=_estate,
    stale=resize_old_pool,
    interrupt=Interrupt("kube", "PATCH", "/nodes/"),
    skip={
        "rollback": "evicted pods are not put back (their controllers recreate them on other nodes; the fake API "
        "server runs no controllers), so the estate cannot return to its state before; rollback's uncordon and "
        "scale-back are checked in tests/e2e/test_aks_life.py"
    },
)
