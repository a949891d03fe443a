"""KubeApi with the real lightkube client against the fake API server: reads, guarded writes, error mapping,
kubeconfig resolution."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cidrx.errors import EXIT_ACCESS, EXIT_RETRY_LATER, AccessDenied, RetriesExhausted
from cidrx.kube.api import KubeApi
from cidrx.kube.errors import AlreadyExists, Conflict, KubeUnavailable, PatchTestFailed
from tests.support.fakes.kube_server import FakeKubeServer
from tests.support.ports import refused_port

ENI = ("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs")
WB = ("whereabouts.cni.cncf.io", "v1alpha1", "ippools")
DS = ("apps", "v1", "daemonsets")
SUBNET_A, SUBNET_NEW = "subnet-0c1f7e2a9b3d4e5f6", "subnet-0e9d8c7b6a5f4e3d2"
SG = "sg-0f1e2d3c4b5a69788"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def api(kube_server: FakeKubeServer, kubeconfig_path: Path) -> Iterator[KubeApi]:
    with KubeApi.connect(str(kubeconfig_path), None) as connected:
        yield connected


def eniconfig_body(name: str, subnet: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"cidrx.io/plan": "3f9a1c2b4d5e6f70"}}, "spec": {"subnet": subnet}}


def aws_node_ds() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "aws-node", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": "aws-node"}},
            "template": {
                "metadata": {"labels": {"k8s-app": "aws-node"}},
                "spec": {"containers": [{"name": "aws-node", "env": [{"name": "WARM_ENI_TARGET", "value": "1"}]}]},
            },
        },
    }


def stored(server: FakeKubeServer, group: str, version: str, plural: str, name: str, ns: str | None = None) -> Any:
    obj = server.get(group, version, plural, name, ns)
    assert obj is not None, f"{plural} {name} is not stored"
    return obj


def env_of(ds: dict[str, Any]) -> dict[str, str]:
    container = ds["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


# ---- reads ----------------------------------------------------------------------------------------


def test_import_does_not_load_lightkube() -> None:
    code = (
        "import sys, cidrx.kube.api, cidrx.kube.collect;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('lightkube', 'httpx2', 'yaml')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_api_groups_is_one_discovery_request(api: KubeApi, kube_server: FakeKubeServer) -> None:
    groups = api.api_groups()
    assert {"apps", "crd.k8s.amazonaws.com", "whereabouts.cni.cncf.io", "crd.projectcalico.org"} <= groups
    assert [(r.method, r.path) for r in kube_server.request_log] == [("GET", "/apis")]


def test_pods_are_trimmed_and_selected(api: KubeApi, kube_server: FakeKubeServer) -> None:
    status = '[{"name":"macvlan-conf","interface":"net1","ips":["192.168.2.205"]}]'
    kube_server.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "app-0",
                "namespace": "team-a",
                "labels": {"app": "web"},
                "annotations": {
                    "k8s.v1.cni.cncf.io/network-status": status,
                    "kubectl.kubernetes.io/last-applied-configuration": "x" * 5000,
                },
            },
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx", "env": []}]},
            "status": {"phase": "Running", "podIP": "10.0.208.8", "podIPs": [{"ip": "10.0.208.8"}]},
        }
    )
    kube_server.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done"}, "status": {"phase": "Failed"}})

    pods = list(api.iter_pods("status.phase!=Succeeded,status.phase!=Failed"))

    assert [p["metadata"]["name"] for p in pods] == ["app-0"]
    only = pods[0]
    assert set(only["metadata"]) == {"name", "namespace", "uid", "creationTimestamp", "annotations"}
    assert only["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/network-status": status}
    assert only["spec"] == {"nodeName": "node-1"}
    assert only["status"] == {"phase": "Running", "podIP": "10.0.208.8", "podIPs": [{"ip": "10.0.208.8"}]}
    (request,) = kube_server.requests("GET", "pods")
    assert request.path == "/api/v1/pods"
    assert request.query == {"limit": "500", "fieldSelector": "status.phase!=Failed,status.phase!=Succeeded"}


def test_iter_custom_cluster_wide_and_in_a_namespace(api: KubeApi, kube_server: FakeKubeServer) -> None:
    for ns in ("default", "kube-system"):
        kube_server.put(
            {
                "apiVersion": "whereabouts.cni.cncf.io/v1alpha1",
                "kind": "IPPool",
                "metadata": {"name": "192.168.2.0-24", "namespace": ns},
                "spec": {"range": "192.168.2.0/24", "allocations": {"5": {"id": "abc", "podref": f"{ns}/app-0"}}},
            }
        )

    everywhere = list(api.iter_custom(*WB))
    in_system = list(api.iter_custom(*WB, namespace="kube-system"))

    assert [p["metadata"]["namespace"] for p in everywhere] == ["default", "kube-system"]
    assert type(everywhere[0]) is dict
    assert everywhere[0]["spec"]["allocations"]["5"]["podref"] == "default/app-0"  # whole objects
    assert [p["metadata"]["namespace"] for p in in_system] == ["kube-system"]
    paths = [r.path for r in kube_server.requests("GET", "ippools")]
    assert paths == [
        "/apis/whereabouts.cni.cncf.io/v1alpha1/ippools",
        "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools",
    ]


# ---- writes ---------------------------------------------------------------------------------------


def test_create_and_replace_eniconfig(api: KubeApi, kube_server: FakeKubeServer) -> None:
    created = api.create_custom(*ENI, "ENIConfig", eniconfig_body("ap-southeast-2a", SUBNET_A))

    first = stored(kube_server, *ENI, "ap-southeast-2a")
    assert first["spec"] == {"subnet": SUBNET_A}
    assert first["kind"] == "ENIConfig" and first["metadata"]["labels"] == {"cidrx.io/plan": "3f9a1c2b4d5e6f70"}
    assert created["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    with pytest.raises(AlreadyExists) as again:
        api.create_custom(*ENI, "ENIConfig", eniconfig_body("ap-southeast-2a", SUBNET_A))
    assert isinstance(again.value, Conflict)

    current = api.get_custom(*ENI, "ap-southeast-2a")
    assert current is not None
    current["spec"] = {"subnet": SUBNET_NEW, "securityGroups": [SG]}
    replaced = api.replace_custom(*ENI, current)

    second = stored(kube_server, *ENI, "ap-southeast-2a")
    assert second["spec"] == {"subnet": SUBNET_NEW, "securityGroups": [SG]}
    assert replaced["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]

    current["spec"] = {"subnet": SUBNET_A}  # still carries the resourceVersion read before the replace
    with pytest.raises(Conflict):
        api.replace_custom(*ENI, current)
    assert stored(kube_server, *ENI, "ap-southeast-2a")["spec"]["subnet"] == SUBNET_NEW


def test_replace_daemonset_is_guarded(api: KubeApi, kube_server: FakeKubeServer) -> None:
    kube_server.put(aws_node_ds())
    ds = api.get_daemonset("kube-system", "aws-node")
    assert ds is not None and api.get_daemonset("kube-system", "calico-node") is None
    # another writer (kubectl set env) changes it between our read and our write
    kube_server.patch("apps", "v1", "daemonsets", "aws-node", {"metadata": {"labels": {"x": "y"}}}, "kube-system")
    ds["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "value": "true"}
    )

    with pytest.raises(Conflict):
        api.replace_daemonset(ds)
    assert "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG" not in env_of(stored(kube_server, *DS, "aws-node", "kube-system"))

    fresh = api.get_daemonset("kube-system", "aws-node")
    assert fresh is not None
    fresh["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "value": "true"}
    )
    updated = api.replace_daemonset(fresh)
    after = stored(kube_server, *DS, "aws-node", "kube-system")
    assert env_of(after) == {"WARM_ENI_TARGET": "1", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"}
    assert after["metadata"]["labels"] == {"x": "y"}  # the other writer's change survives
    assert updated["metadata"]["generation"] == after["metadata"]["generation"] == 2

    del fresh["metadata"]["resourceVersion"]
    with pytest.raises(ValueError, match="resourceVersion"):
        api.replace_daemonset(fresh)


def test_json_patch_with_failing_test_op(api: KubeApi, kube_server: FakeKubeServer) -> None:
    created = api.create_custom(*ENI, "ENIConfig", eniconfig_body("ap-southeast-2b", SUBNET_A))
    rv = created["metadata"]["resourceVersion"]
    swap = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "replace", "path": "/spec/subnet", "value": SUBNET_NEW},
    ]

    patched = api.json_patch(*ENI, "ap-southeast-2b", swap)
    assert patched["spec"]["subnet"] == SUBNET_NEW

    stale = [{**swap[0]}, {"op": "replace", "path": "/spec/subnet", "value": SUBNET_A}]  # rv moved on
    with pytest.raises(PatchTestFailed) as caught:
        api.json_patch(*ENI, "ap-southeast-2b", stale)
    assert isinstance(caught.value, Conflict)
    assert "cannot patch eniconfigs.crd.k8s.amazonaws.com" in str(caught.value)
    assert stored(kube_server, *ENI, "ap-southeast-2b")["spec"]["subnet"] == SUBNET_NEW


def test_delete_custom_with_precondition(api: KubeApi, kube_server: FakeKubeServer) -> None:
    created = api.create_custom(*ENI, "ENIConfig", eniconfig_body("ap-southeast-2a", SUBNET_A))
    kube_server.patch(*ENI, "ap-southeast-2a", {"spec": {"subnet": SUBNET_NEW}})

    with pytest.raises(Conflict):
        api.delete_custom(*ENI, "ap-southeast-2a", resource_version=created["metadata"]["resourceVersion"])
    assert kube_server.get(*ENI, "ap-southeast-2a") is not None

    current = api.get_custom(*ENI, "ap-southeast-2a")
    assert current is not None
    assert api.delete_custom(*ENI, "ap-southeast-2a", resource_version=current["metadata"]["resourceVersion"])
    assert kube_server.get(*ENI, "ap-southeast-2a") is None
    assert api.delete_custom(*ENI, "ap-southeast-2a") is False  # already gone: nothing to do


# ---- error mapping --------------------------------------------------------------------------------


def test_server_errors_map_to_cidrx_errors(api: KubeApi, kube_server: FakeKubeServer) -> None:
    from cidrx.transport import retry

    kube_server.inject(503, method="GET", path_contains="/nodes", message="etcdserver: request timed out", times=None)
    with pytest.raises(RetriesExhausted) as failed:
        list(api.iter_nodes())
    kube_server.clear_faults()
    assert kube_server.count("GET", "nodes") == retry.default_policy().max_attempts  # retried, then given up
    assert failed.value.exit_code == EXIT_RETRY_LATER  # kept failing: retry later, nothing wrong with the input
    assert str(failed.value).startswith(f"the Kubernetes API at {kube_server.url} failed to list nodes at cluster")
    assert "etcdserver: request timed out" in str(failed.value)

    kube_server.inject(401, path_contains="/daemonsets", message="Unauthorized")
    with pytest.raises(AccessDenied, match=r"unauthorized: .* rejected the credentials of context fake") as denied:
        api.get_daemonset("kube-system", "aws-node")
    assert denied.value.exit_code == EXIT_ACCESS

    kube_server.inject(403, method="PUT", path_contains="/eniconfigs/")
    with pytest.raises(AccessDenied, match=r'forbidden: cannot update eniconfigs\.crd\.k8s\.amazonaws\.com "a"'):
        api.replace_custom(*ENI, {"metadata": {"name": "a", "resourceVersion": "1"}, "spec": {}})


def closed_port() -> int:
    return refused_port()


def kubeconfig(
    path: Path, server: str, context: str, *, current: bool = True, user: bool = True, ca: str | None = None
) -> Path:
    cluster: dict[str, Any] = {"server": server}
    if ca:
        cluster["certificate-authority"] = ca
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"{context}-cluster", "cluster": cluster}],
        "contexts": [
            {"name": context, "context": {"cluster": f"{context}-cluster", **({"user": "u"} if user else {})}}
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    if current:
        doc["current-context"] = context
    path.write_text(yaml.safe_dump(doc))
    return path


def test_unreachable_server_is_kube_unavailable(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{closed_port()}"
    config = kubeconfig(tmp_path / "kc", server, "eks-demo")
    with KubeApi.connect(str(config), None) as api, pytest.raises(KubeUnavailable) as caught:
        api.api_groups()
    assert f"cannot reach the Kubernetes API at {server} (context eks-demo)" in str(caught.value)
    assert caught.value.exit_code == EXIT_ACCESS


def test_kubeconfig_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kube_server: FakeKubeServer) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(KubeUnavailable, match="kubeconfig /nonexistent/kc not found"):
        KubeApi.connect("/nonexistent/kc", None)

    # $KUBECONFIG is a path list merged like kubectl: the first file to define a name wins
    first = kubeconfig(tmp_path / "a.yaml", "http://127.0.0.1:1", "staging")
    second = kubeconfig(tmp_path / "b.yaml", kube_server.url, "eks-demo", current=False, user=False)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing.yaml'}:{first}:{second}")
    with KubeApi.connect(None, "eks-demo") as api:  # a context without a user: no credentials sent
        assert api.context == "eks-demo" and api.server == kube_server.url
        assert "apps" in api.api_groups()
    with KubeApi.connect(None, None) as api:
        assert api.context == "staging"  # current-context from the first file
    with pytest.raises(AccessDenied, match=r"context prod not found in kubeconfig .*a\.yaml:.*b\.yaml"):
        KubeApi.connect(None, "prod")

    no_current = kubeconfig(tmp_path / "c.yaml", kube_server.url, "eks-demo", current=False)
    with pytest.raises(KubeUnavailable, match="has no current-context"):
        KubeApi.connect(str(no_current), None)

    relative_ca = kubeconfig(tmp_path / "d.yaml", "https://example.invalid", "eks-demo", ca="missing-ca.crt")
    with pytest.raises(KubeUnavailable, match=r"context eks-demo: .*No such file"):
        KubeApi.connect(str(relative_ca), None)  # relative to the kubeconfig's directory, like kubectl
