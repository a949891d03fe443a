"""Cordon, the pods a drain moves, and eviction through KubeApi (real lightkube) against the fake API server's
eviction subresource and PodDisruptionBudgets: a budget that allows no disruption is a reason to try later,
never an error and never a delete; an allowed eviction removes the pod."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cidrx.kube.api import KubeApi
from cidrx.kube.drain import to_evict, why_left
from tests.support.fakes.kube_server import FakeKubeServer

pytest_plugins = ["tests.support.conftest_kube"]


@pytest.fixture
def api(kube_server: FakeKubeServer, kubeconfig_path: Path) -> Iterator[KubeApi]:
    with KubeApi.connect(str(kubeconfig_path), None) as connected:
        yield connected


def pod(name: str, node: str = "n1", phase: str = "Running", owner: str = "ReplicaSet", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": meta.pop("labels", {"app": "web"}),
            "annotations": meta.pop("annotations", {}),
            "ownerReferences": [
                {"kind": owner, "name": f"{name}-owner", "controller": True, "apiVersion": "v1", "uid": "u"}
            ],
        },
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def budget(min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": min_available},
    }


def test_the_pods_a_drain_moves() -> None:
    pods = [
        pod("web-1"),
        pod("ds-1", owner="DaemonSet"),
        pod("static", annotations={"kubernetes.io/config.mirror": "abc"}),
        pod("job-1", phase="Succeeded", owner="Job"),
    ]
    assert [why_left(p) for p in pods] == [None, "DaemonSet pod", "mirror pod", "finished"]
    assert to_evict(pods) == [("default", "web-1")]


def test_cordon_and_uncordon(api: KubeApi, kube_server: FakeKubeServer) -> None:
    kube_server.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {}})
    api.cordon("n1")
    assert kube_server.get("", "v1", "nodes", "n1")["spec"]["unschedulable"] is True  # type: ignore[index]
    api.cordon("n1")  # again: no change, no error
    api.cordon("n1", False)
    assert kube_server.get("", "v1", "nodes", "n1")["spec"]["unschedulable"] is False  # type: ignore[index]


def test_a_budget_refusal_is_a_reason_to_wait_and_an_allowed_eviction_removes_the_pod(
    api: KubeApi, kube_server: FakeKubeServer
) -> None:
    kube_server.put_many([pod("web-1"), pod("web-2", node="n2"), budget(2)])
    assert [p["metadata"]["name"] for p in api.pods_on("n1")] == ["web-1"]
    kube_server.reset_log()
    refused = api.evict("default", "web-1")
    assert refused is not None and "web" in refused
    assert kube_server.count("POST", path_contains="/eviction") == 1  # not retried as a throttle
    assert kube_server.count("DELETE") == 0 and kube_server.get("", "v1", "pods", "web-1", "default") is not None
    kube_server.put(budget(1))
    assert api.evict("default", "web-1") is None
    assert kube_server.evicted == [("default", "web-1")] and api.pods_on("n1") == []
    assert api.evict("default", "web-1") is None  # already gone
