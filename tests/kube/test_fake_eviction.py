"""The fake API server's eviction subresource and PodDisruptionBudgets, driven by the real client (lightkube):
the answers a migration relies on (429 while a budget allows no disruption, the pod deleted otherwise, 500
for a pod two budgets select), and budget status as the disruption controller computes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget

from tests.support.fakes.disruption import budget_status
from tests.support.fakes.kube_server import FakeKubeServer

pytest_plugins = ["tests.support.conftest_kube"]


@pytest.fixture
def client(kubeconfig_path: Path) -> Iterator[Client]:
    with Client(config=KubeConfig.from_file(kubeconfig_path)) as c:
        yield c


def pod(name: str, ready: bool = True, phase: str = "Running", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pdb(name: str, selector: dict[str, Any], **budget: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector, **budget},
    }


def evict(client: Client, name: str) -> None:
    client.create(Pod.Eviction(metadata=ObjectMeta(name=name, namespace="default")), name=name, namespace="default")


def test_a_budget_that_allows_no_disruption_refuses_the_eviction_with_429(
    client: Client, kube_server: FakeKubeServer
) -> None:
    kube_server.put_many(
        [pod("web-1", app="web"), pod("web-2", app="web"), pdb("web", {"matchLabels": {"app": "web"}}, minAvailable=2)]
    )
    status = client.get(PodDisruptionBudget, "web", namespace="default").status
    assert (status.expectedPods, status.currentHealthy, status.desiredHealthy, status.disruptionsAllowed) == (
        2,
        2,
        2,
        0,
    )
    with pytest.raises(ApiError) as refused:
        evict(client, "web-1")
    assert refused.value.status.code == 429 and refused.value.status.reason == "TooManyRequests"
    assert kube_server.get("", "v1", "pods", "web-1", "default") is not None
    assert kube_server.evicted == []


def test_an_allowed_eviction_deletes_the_pod_and_the_budget_follows(
    client: Client, kube_server: FakeKubeServer
) -> None:
    kube_server.put_many(
        [
            pod("web-1", app="web"),
            pod("web-2", app="web"),
            pod("web-3", app="web"),
            pdb("web", {"matchLabels": {"app": "web"}}, maxUnavailable=1),
        ]
    )
    assert client.get(PodDisruptionBudget, "web", namespace="default").status.disruptionsAllowed == 1
    evict(client, "web-1")
    assert kube_server.get("", "v1", "pods", "web-1", "default") is None
    assert kube_server.evicted == [("default", "web-1")]
    # No controller replaces the pod: 2 pods are left, 1 may be unavailable, so 1 must stay healthy.
    status = client.get(PodDisruptionBudget, "web", namespace="default").status
    assert (status.expectedPods, status.desiredHealthy, status.disruptionsAllowed) == (2, 1, 1)


def test_unbudgeted_finished_and_doubly_budgeted_pods(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put_many(
        [
            pod("free"),
            pod("done", phase="Succeeded", app="db"),
            pod("twice", app="db"),
            pdb("db-a", {"matchLabels": {"app": "db"}}, minAvailable="100%"),
            pdb("db-b", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}, minAvailable=1),
        ]
    )
    evict(client, "free")
    evict(client, "done")  # a finished pod is always evicted
    with pytest.raises(ApiError) as refused:
        evict(client, "twice")
    assert refused.value.status.code == 500
    assert kube_server.evicted == [("default", "free"), ("default", "done")]


def test_the_eviction_subresource_takes_only_post_of_an_eviction(kube_server: FakeKubeServer) -> None:
    kube_server.put(pod("p"))
    assert kube_server.handle("GET", "/api/v1/namespaces/default/pods/p/eviction", "", b"").status == 405
    bad = kube_server.handle(
        "POST", "/api/v1/namespaces/default/pods/p/eviction", "application/json", b'{"kind": "Pod"}'
    )
    assert bad.status == 400
    assert (
        kube_server.handle(
            "POST",
            "/api/v1/namespaces/default/pods/nope/eviction",
            "application/json",
            b'{"apiVersion": "policy/v1", "kind": "Eviction"}',
        ).status
        == 404
    )


@pytest.mark.parametrize(
    ("budget", "pods", "ready", "want"),
    [
        # (budget, pods selected, of them Ready) -> (desiredHealthy, disruptionsAllowed)
        ({"minAvailable": 2}, 3, 3, (2, 1)),
        ({"minAvailable": 2}, 3, 2, (2, 0)),
        ({"minAvailable": "50%"}, 3, 3, (2, 1)),  # a percentage of minAvailable rounds up
        ({"maxUnavailable": 1}, 3, 3, (2, 1)),
        ({"maxUnavailable": "50%"}, 3, 3, (1, 2)),  # and so does one of maxUnavailable
        ({"maxUnavailable": 0}, 3, 3, (3, 0)),
        ({"minAvailable": 0}, 2, 0, (0, 0)),
    ],
)
def test_budget_status(budget: dict[str, Any], pods: int, ready: int, want: tuple[int, int]) -> None:
    selected = [pod(f"p{i}", ready=i < ready, app="x") for i in range(pods)]
    status = budget_status(pdb("b", {"matchLabels": {"app": "x"}}, **budget), [*selected, pod("other")])
    assert (status["desiredHealthy"], status["disruptionsAllowed"]) == want
    assert status["expectedPods"] == pods and status["currentHealthy"] == ready


def test_a_null_selector_selects_nothing_and_an_empty_one_everything() -> None:
    pods = [pod("a", app="x"), pod("b")]
    assert budget_status(pdb("n", None, minAvailable=1), pods)["expectedPods"] == 0
    assert budget_status(pdb("e", {}, minAvailable=1), pods)["expectedPods"] == 2
