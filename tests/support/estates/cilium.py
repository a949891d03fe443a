"""Cilium estates as plain Kubernetes objects (dicts), and the live cluster that serves them.

`cluster_pool_incident()` is the cluster-pool incident of docs/cloud-facts.md ("Cilium") in small: the cluster
pool is 10.0.0.0/22 with /24 per node (4 node CIDRs); node-1..node-4 hold one each; node-5 joined later, its
CiliumNode holds none and cilium-operator recorded "allocator full" on it, so it stays NotReady. Meanwhile
kube-controller-manager gave every Node a Node.spec.podCIDR from 10.244.0.0/16, which Cilium ignores in this mode
(node IPAM alone would call this cluster healthy). node-1's own /24 is full: its pods' sandboxes fail with the
agent's "range is full". `cluster_pool_full()` is the same cluster before node-5 joined (every CIDR held, nobody
waiting). `multi_pool_incident()` is multi-pool mode: pool `default` (10.20.0.0/26, /27 blocks: 2 blocks) is
fully allocated and node-3 requests addresses it cannot get.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cases.live import Live, clean_env
from tests.support.fakes.cilium_operator import CiliumKubeServer

JSON = dict[str, Any]
GROUP = "cilium.io"
# What the kubelet reports when the Cilium CNI plugin gets the agent's ipallocator.ErrFull.
RANGE_FULL_EVENT = (
    'Failed to create pod sandbox: plugin type="cilium-cni" failed (add): unable to allocate IP via local cilium '
    "agent: [POST /ipam][502] postIpamFailure  range is full"
)


def config(mode: str = "cluster-pool", cidrs: str | None = "10.0.0.0/22", mask: int = 24) -> JSON:
    data = {"ipam": mode, "cluster-pool-ipv4-mask-size": str(mask)}
    if cidrs is not None:
        data["cluster-pool-ipv4-cidr"] = cidrs
    meta = {"name": "cilium-config", "namespace": "kube-system"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def node(name: str, ip: str, pod_cidr: str | None = None, ready: bool = True) -> JSON:
    spec = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]} if pod_cidr else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "lab-a"}},
        "spec": spec,
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "addresses": [{"type": "InternalIP", "address": ip}],
            "allocatable": {"pods": "110"},
        },
    }


def cilium_node(name: str, pod_cidrs: list[str] = (), error: str = "", **ipam: Any) -> JSON:  # type: ignore[assignment]
    spec_ipam: JSON = {"podCIDRs": list(pod_cidrs)} if pod_cidrs else {}
    spec_ipam.update(ipam)
    body: JSON = {
        "apiVersion": f"{GROUP}/v2",
        "kind": "CiliumNode",
        "metadata": {"name": name},
        "spec": {"ipam": spec_ipam},
    }
    if error:
        body["status"] = {"ipam": {"operator-status": {"error": error}}}
    return body


def pool(name: str, cidrs: list[str], mask: int, version: str = "v2alpha1") -> JSON:
    items: list[Any] = list(cidrs) if version == "v2alpha1" else [{"cidr": c} for c in cidrs]
    spec = {"ipv4": {"cidrs": items, "maskSize": mask}}
    return {"apiVersion": f"{GROUP}/{version}", "kind": "CiliumPodIPPool", "metadata": {"name": name}, "spec": spec}


def pod(ns: str, name: str, node_name: str, ip: str | None, phase: str = "Running") -> JSON:
    status: JSON = {"phase": phase}
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"nodeName": node_name},
        "status": status,
    }


def services() -> list[JSON]:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default"},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 443}]},
    }
    cidr = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes"},
        "spec": {"cidrs": ["10.96.0.0/12"]},
    }
    return [svc, cidr]


def operator() -> JSON:
    template = {
        "metadata": {"labels": {"name": "cilium-operator"}},
        "spec": {"containers": [{"name": "cilium-operator"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cilium-operator", "namespace": "kube-system"},
        "spec": {"replicas": 1, "template": template},
    }


def sandbox_event(pod_name: str, node_name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod_name}.range-full", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod_name},
        "reason": "FailedCreatePodSandBox",
        "type": "Warning",
        "message": RANGE_FULL_EVENT,
        "count": 3,
        "source": {"component": "kubelet", "host": node_name},
        "lastTimestamp": "2024-05-01T09:58:00Z",
    }


def _cluster(nodes: int, waiting: bool) -> list[JSON]:
    objects: list[JSON] = [config(), operator(), *services()]
    for i in range(1, nodes + 1):
        name = f"node-{i}"
        objects.append(node(name, f"192.168.10.{i}", f"10.244.{i}.0/24", ready=i <= 4))
        if i <= 4:
            objects.append(cilium_node(name, [f"10.0.{i - 1}.0/24"]))
        elif waiting:
            objects.append(cilium_node(name, error="allocator full"))
    # node-1's /24 is full (254 usable addresses); the others run a few pods.
    for j in range(254):
        objects.append(pod("default", f"web-{j}", "node-1", f"10.0.0.{j + 1}"))
    for i in range(2, 5):
        objects += [pod("default", f"api-{i}-{j}", f"node-{i}", f"10.0.{i - 1}.{j + 10}") for j in range(5)]
    if waiting:
        objects.append(pod("default", "web-254", "node-1", None, phase="Pending"))
        objects.append(sandbox_event("web-254", "node-1"))
    return objects


def cluster_pool_incident() -> list[JSON]:
    return _cluster(5, waiting=True)


def cluster_pool_full() -> list[JSON]:
    return _cluster(4, waiting=False)


def multi_pool_incident(version: str = "v2alpha1") -> list[JSON]:
    requested = [{"pool": "default", "needed": {"ipv4-addrs": 20}}]
    objects: list[JSON] = [
        config("multi-pool", cidrs=None),
        operator(),
        *services(),
        pool("default", ["10.20.0.0/26"], 27, version),
    ]
    for i in range(1, 4):
        name = f"node-{i}"
        objects.append(node(name, f"192.168.10.{i}"))
        allocated = [{"pool": "default", "cidrs": [f"10.20.0.{(i - 1) * 32}/27"]}] if i <= 2 else []
        error = (
            'failed to allocate ipv4 address for node "node-3" from pool "default": no free /27 left' if i == 3 else ""
        )
        objects.append(cilium_node(name, error=error, pools={"requested": requested, "allocated": allocated}))
    return objects


def k8s(
    objects: Callable[[], list[JSON]], pool_versions: tuple[str, ...] = ("v2alpha1",)
) -> Callable[[Path, pytest.MonkeyPatch], contextlib.AbstractContextManager[Live]]:
    """A plain cluster running Cilium, holding `objects()`, with the operator simulation."""

    @contextlib.contextmanager
    def make(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Live]:
        clean_env(mp)
        with CiliumKubeServer(pool_versions=pool_versions) as server:
            server.put_many(objects())
            kubeconfig = str(server.kubeconfig(tmp / "kubeconfig"))
            access = ["--kubeconfig", kubeconfig]
            yield Live(tmp, ["--k8s", *access], access, access, kube=server)
        if server.errors:
            raise server.errors[0]

    return make
