"""The fake Kubernetes API server, driven by the real client (lightkube) as production code drives a cluster."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, Client, operators
from lightkube.config.kubeconfig import KubeConfig
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.models.apps_v1 import DaemonSetSpec
from lightkube.models.core_v1 import Container, EnvVar, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Event, Node, Pod
from lightkube.types import PatchType

from tests.support.fakes.kube_server import (
    FakeKubeServer,
    PatchFailed,
    json_patch,
    merge_patch,
    parse_field_selector,
    parse_label_selector,
    strategic_merge_patch,
)

pytest_plugins = ["tests.support.conftest_kube"]

ENIConfig = create_global_resource("crd.k8s.amazonaws.com", "v1alpha1", "ENIConfig", "eniconfigs")
WhereaboutsIPPool = create_namespaced_resource("whereabouts.cni.cncf.io", "v1alpha1", "IPPool", "ippools")


@pytest.fixture
def client(kubeconfig_path: Path) -> Iterator[Client]:
    with Client(config=KubeConfig.from_file(kubeconfig_path)) as c:
        yield c


def pod(name: str, namespace: str = "default", **kw: Any) -> dict[str, Any]:
    labels = kw.pop("labels", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": kw.pop("node", ""), "containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": kw.pop("phase", "Running")},
    }


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def raw(server: FakeKubeServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """A raw HTTP call, for what lightkube has no API for (discovery, DeleteOptions bodies)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# ---- CRUD through lightkube -----------------------------------------------------------------------


def test_create_get_list_nodes_and_pods(client: Client, kube_server: FakeKubeServer) -> None:
    created = client.create(Node(metadata=ObjectMeta(name="ip-10-0-1-5.ec2.internal", labels={"z": "a"})))
    assert created.metadata.uid and created.metadata.creationTimestamp is not None
    assert created.metadata.generation == 1
    rv1 = int(created.metadata.resourceVersion)
    p = client.create(
        Pod(
            metadata=ObjectMeta(name="web-1", namespace="prod"),
            spec=PodSpec(containers=[Container(name="web", image="nginx")], nodeName="ip-10-0-1-5.ec2.internal"),
        )
    )
    assert int(p.metadata.resourceVersion) > rv1

    assert client.get(Node, "ip-10-0-1-5.ec2.internal").metadata.labels == {"z": "a"}
    got = client.get(Pod, "web-1", namespace="prod")
    assert got.spec.nodeName == "ip-10-0-1-5.ec2.internal"
    assert [n.metadata.name for n in client.list(Node)] == ["ip-10-0-1-5.ec2.internal"]
    assert [x.metadata.name for x in client.list(Pod, namespace="*")] == ["web-1"]
    assert list(client.list(Pod, namespace="default")) == []
    assert kube_server.get("", "v1", "pods", "web-1", "prod")["spec"]["containers"][0]["image"] == "nginx"
    assert kube_server.count("POST") == 2
    assert kube_server.count("GET", "pods") == 3
    assert ("GET", "/api/v1/pods", {}) in kube_server.request_log


def test_create_existing_is_409_already_exists(client: Client) -> None:
    client.create(Node(metadata=ObjectMeta(name="n1")))
    with pytest.raises(ApiError) as err:
        client.create(Node(metadata=ObjectMeta(name="n1")))
    assert err.value.status.code == 409
    assert err.value.status.reason == "AlreadyExists"
    assert err.value.response.status_code == 409


def test_create_rejects_invalid_names_with_422(client: Client) -> None:
    with pytest.raises(ApiError) as err:
        client.create(Node(metadata=ObjectMeta(name="Not_Valid")))
    assert err.value.status.code == 422
    assert err.value.status.reason == "Invalid"


def test_delete_then_get_is_404(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(pod("p1"))
    client.delete(Pod, "p1", namespace="default")
    with pytest.raises(ApiError) as err:
        client.get(Pod, "p1", namespace="default")
    assert err.value.status.code == 404
    assert err.value.status.reason == "NotFound"
    with pytest.raises(ApiError) as err:
        client.delete(Pod, "p1", namespace="default")
    assert err.value.status.code == 404


def test_delete_preconditions_conflict(kube_server: FakeKubeServer) -> None:
    stored = kube_server.put(node("n1"))
    status, body = raw(kube_server, "DELETE", "/api/v1/nodes/n1", {"preconditions": {"resourceVersion": "999"}})
    assert (status, body["reason"]) == (409, "Conflict")
    assert kube_server.get("", "v1", "nodes", "n1") is not None
    rv = stored["metadata"]["resourceVersion"]
    status, body = raw(kube_server, "DELETE", "/api/v1/nodes/n1", {"preconditions": {"resourceVersion": rv}})
    assert (status, body["status"]) == (200, "Success")
    assert kube_server.get("", "v1", "nodes", "n1") is None


# ---- lists --------------------------------------------------------------------------------------


def test_chunked_list_paginates_with_limit_and_continue(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put_many(pod(f"p{i:04d}", f"ns{i % 3}") for i in range(1234))
    kube_server.reset_log()

    names = [(p.metadata.namespace, p.metadata.name) for p in client.list(Pod, namespace="*", chunk_size=100)]

    assert len(names) == 1234 and len(set(names)) == 1234
    assert names == sorted(names)
    lists = kube_server.requests("GET", "pods")
    assert len(lists) == 13
    assert all(r.query["limit"] == "100" for r in lists)
    assert "continue" not in lists[0].query
    assert all(r.query.get("continue") for r in lists[1:])

    kube_server.reset_log()
    in_ns1 = [p.metadata.name for p in client.list(Pod, namespace="ns1", chunk_size=200)]
    assert len(in_ns1) == 411
    assert kube_server.count("GET", "pods", path_contains="/namespaces/ns1/") == 3


def test_list_metadata_and_item_kinds(kube_server: FakeKubeServer) -> None:
    kube_server.put_many([pod("a"), pod("b"), pod("c")])
    status, body = raw(kube_server, "GET", "/api/v1/namespaces/default/pods?limit=2")
    assert status == 200
    assert (body["kind"], body["apiVersion"]) == ("PodList", "v1")
    assert body["metadata"]["resourceVersion"] == kube_server.resource_version
    assert body["metadata"]["remainingItemCount"] == 1
    assert all((i["kind"], i["apiVersion"]) == ("Pod", "v1") for i in body["items"])
    token = body["metadata"]["continue"]
    status, body = raw(kube_server, "GET", f"/api/v1/namespaces/default/pods?limit=2&continue={token}")
    assert [i["metadata"]["name"] for i in body["items"]] == ["c"]
    assert "continue" not in body["metadata"]
    status, body = raw(kube_server, "GET", "/api/v1/pods?continue=garbage")
    assert (status, body["reason"]) == (400, "BadRequest")


def test_label_selectors(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put_many(
        [
            node("a", pool="blue", zone="1a"),
            node("b", pool="green", zone="1b"),
            node("c", zone="1c"),
            node("d", pool="blue", zone="1b", spot="true"),
        ]
    )

    def names(labels: Any) -> list[str]:
        return [n.metadata.name for n in client.list(Node, labels=labels)]

    assert names({"pool": "blue"}) == ["a", "d"]
    assert names({"pool": operators.not_equal("blue")}) == ["b", "c"]
    assert names({"zone": operators.in_(["1a", "1c"])}) == ["a", "c"]
    assert names({"pool": operators.not_in(["blue"])}) == ["b", "c"]
    assert names({"spot": operators.exists()}) == ["d"]
    assert names({"pool": operators.not_exists()}) == ["c"]
    assert names({"pool": "blue", "zone": "1b"}) == ["d"]
    assert kube_server.requests("GET", "nodes")[-1].query["labelSelector"] == "pool=blue,zone=1b"


def test_field_selectors(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put_many(
        [
            pod("a", node="n1", phase="Running"),
            pod("b", node="n1", phase="Pending"),
            pod("c", node="", phase="Pending"),
            pod("d", "kube-system", node="n2", phase="Running"),
        ]
    )

    def names(fields: Any, namespace: str = "*") -> list[str]:
        return [p.metadata.name for p in client.list(Pod, namespace=namespace, fields=fields)]

    assert names({"spec.nodeName": "n1"}) == ["a", "b"]
    assert names({"status.phase": "Pending", "spec.nodeName": ""}) == ["c"]
    assert names({"status.phase": operators.not_equal("Running")}) == ["b", "c"]
    assert names({"status.phase": operators.not_in(["Running", "Failed"])}) == ["b", "c"]
    assert names({"metadata.namespace": "kube-system"}) == ["d"]
    assert names({"metadata.name": "a"}, namespace="default") == ["a"]
    with pytest.raises(ApiError) as err:  # as on a real apiserver: only some fields are selectable
        names({"spec.containers": "x"})
    assert err.value.status.code == 400


def test_event_field_selectors(client: Client, kube_server: FakeKubeServer) -> None:
    def event(name: str, kind: str, obj: str, reason: str, type_: str = "Warning") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": kind, "name": obj, "namespace": "default"},
            "reason": reason,
            "type": type_,
            "message": "failed to assign an IP address to container",
        }

    kube_server.put_many(
        [
            event("e1", "Pod", "p1", "FailedCreatePodSandBox"),
            event("e2", "Pod", "p2", "Scheduled", "Normal"),
            event("e3", "Node", "n1", "FailedCreatePodSandBox"),
        ]
    )
    got = client.list(Event, namespace="*", fields={"involvedObject.kind": "Pod", "reason": "FailedCreatePodSandBox"})
    assert [e.metadata.name for e in got] == ["e1"]
    assert [e.metadata.name for e in client.list(Event, fields={"type": "Normal"})] == ["e2"]
    assert [e.metadata.name for e in client.list(Event, fields={"involvedObject.name": "n1"})] == ["e3"]


# ---- writes and conflicts -------------------------------------------------------------------------


def test_replace_with_stale_resource_version_is_409(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1", pool="a"))
    current = client.get(Node, "n1")
    kube_server.patch("", "v1", "nodes", "n1", {"metadata": {"labels": {"pool": "b"}}})  # another writer

    current.metadata.labels["pool"] = "mine"
    with pytest.raises(ApiError) as err:
        client.replace(current)
    assert err.value.status.code == 409
    assert err.value.status.reason == "Conflict"
    assert kube_server.get("", "v1", "nodes", "n1")["metadata"]["labels"] == {"pool": "b"}

    fresh = client.get(Node, "n1")
    fresh.metadata.labels["pool"] = "mine"
    replaced = client.replace(fresh)
    assert int(replaced.metadata.resourceVersion) > int(fresh.metadata.resourceVersion)
    assert replaced.metadata.uid == fresh.metadata.uid

    fresh.metadata.resourceVersion = None  # unconditional update
    fresh.metadata.labels["pool"] = "forced"
    assert client.replace(fresh).metadata.labels == {"pool": "forced"}


def test_concurrent_writer_between_read_and_put(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1"))

    def writer(rec: Any) -> None:
        if rec.method == "PUT":
            kube_server.patch("", "v1", "nodes", "n1", {"metadata": {"annotations": {"touched": "yes"}}})

    current = client.get(Node, "n1")
    kube_server.on_request = writer
    with pytest.raises(ApiError) as err:
        client.replace(current)
    assert err.value.status.code == 409


def test_json_patch_failed_test_is_422_and_object_unchanged(client: Client, kube_server: FakeKubeServer) -> None:
    before = kube_server.put(node("n1", pool="a"))
    patch = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/pool", "value": "b"},
    ]
    with pytest.raises(ApiError) as err:
        client.patch(Node, "n1", patch, patch_type=PatchType.JSON)
    assert err.value.status.code == 422
    assert err.value.status.reason == "Invalid"
    assert kube_server.get("", "v1", "nodes", "n1") == before

    with pytest.raises(ApiError) as err:
        client.patch(Node, "n1", [{"op": "remove", "path": "/spec/missing"}], patch_type=PatchType.JSON)
    assert err.value.status.code == 422
    assert kube_server.get("", "v1", "nodes", "n1") == before


def test_json_patch_success_bumps_resource_version(client: Client, kube_server: FakeKubeServer) -> None:
    before = kube_server.put(node("n1", pool="a"))
    rv = before["metadata"]["resourceVersion"]
    patched = client.patch(
        Node,
        "n1",
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/metadata/labels/pool", "value": "b"},
            {"op": "add", "path": "/metadata/annotations", "value": {"cidrx/x": "1"}},
            {"op": "add", "path": "/spec", "value": {"podCIDRs": ["10.0.0.0/24"]}},
            {"op": "add", "path": "/spec/podCIDRs/-", "value": "10.0.1.0/24"},
        ],
        patch_type=PatchType.JSON,
    )
    assert int(patched.metadata.resourceVersion) > int(rv)
    assert patched.metadata.labels == {"pool": "b"}
    assert patched.metadata.annotations == {"cidrx/x": "1"}
    assert patched.spec.podCIDRs == ["10.0.0.0/24", "10.0.1.0/24"]
    assert patched.metadata.uid == before["metadata"]["uid"]
    assert patched.metadata.generation == 2  # spec changed


def test_merge_patch(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1", pool="a", gone="x"))
    patched = client.patch(
        Node,
        "n1",
        {
            "metadata": {"labels": {"gone": None, "new": "y"}},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        },
        patch_type=PatchType.MERGE,
    )
    assert patched.metadata.labels == {"pool": "a", "new": "y"}
    assert patched.spec.taints[0].key == "k"


def test_merge_patch_with_stale_resource_version_is_409(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1"))
    with pytest.raises(ApiError) as err:
        client.patch(
            Node, "n1", {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}}, patch_type=PatchType.MERGE
        )
    assert err.value.status.code == 409


def test_strategic_merge_patch_of_daemonset_env_keeps_other_containers(
    client: Client, kube_server: FakeKubeServer
) -> None:
    ds = DaemonSet(
        metadata=ObjectMeta(name="aws-node", namespace="kube-system"),
        spec=DaemonSetSpec(
            selector=LabelSelector(matchLabels={"k8s-app": "aws-node"}),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels={"k8s-app": "aws-node"}),
                spec=PodSpec(
                    containers=[
                        Container(
                            name="aws-node",
                            image="amazon-k8s-cni:v1.18",
                            env=[
                                EnvVar(name="WARM_ENI_TARGET", value="1"),
                                EnvVar(name="AWS_VPC_K8S_CNI_LOGLEVEL", value="DEBUG"),
                            ],
                        ),
                        Container(name="aws-eks-nodeagent", image="aws-network-policy-agent:v1.1"),
                    ]
                ),
            ),
        ),
    )
    client.create(ds)
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "aws-node",
                            "env": [
                                {"name": "WARM_ENI_TARGET", "value": "0"},
                                {"name": "WARM_IP_TARGET", "value": "5"},
                            ],
                        }
                    ]
                }
            }
        }
    }
    patched = client.patch(DaemonSet, "aws-node", patch, namespace="kube-system")  # lightkube default: strategic

    containers = patched.spec.template.spec.containers
    assert [c.name for c in containers] == ["aws-node", "aws-eks-nodeagent"]
    assert containers[0].image == "amazon-k8s-cni:v1.18"
    assert {e.name: e.value for e in containers[0].env} == {
        "WARM_ENI_TARGET": "0",
        "AWS_VPC_K8S_CNI_LOGLEVEL": "DEBUG",
        "WARM_IP_TARGET": "5",
    }
    assert containers[1].image == "aws-network-policy-agent:v1.1"
    assert patched.metadata.generation == 2


def test_server_side_apply_is_415(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1"))
    with pytest.raises(ApiError) as err:
        client.patch(Node, "n1", {"metadata": {"labels": {"a": "b"}}}, patch_type=PatchType.APPLY, field_manager="t")
    assert err.value.status.code == 415


def test_status_subresource_writes_only_status(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1", pool="a"))
    patched = client.patch(
        Node.Status,
        "n1",
        {"metadata": {"labels": {"pool": "ignored"}}, "status": {"allocatable": {"pods": "17"}}},
        patch_type=PatchType.MERGE,
    )
    assert patched.status.allocatable == {"pods": "17"}
    assert kube_server.get("", "v1", "nodes", "n1")["metadata"]["labels"] == {"pool": "a"}


def test_main_resource_writes_keep_status(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(pod("p1", phase="Running"))
    patched = client.patch(
        Pod, "p1", {"status": {"phase": "Failed"}, "metadata": {"labels": {"a": "b"}}}, namespace="default"
    )
    assert patched.status.phase == "Running"  # as on a real apiserver: .status only changes through /status
    assert patched.metadata.labels == {"a": "b"}
    current = client.get(Pod, "p1", namespace="default")
    current.status.phase = "Succeeded"
    assert client.replace(current).status.phase == "Running"
    with pytest.raises(ApiError) as err:  # ENIConfig has no status subresource
        client.patch(ENIConfig.Status, "x", {"status": {}}, patch_type=PatchType.MERGE)
    assert err.value.status.code == 404


def test_delete_collection(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put_many([pod("a", labels={"app": "x"}), pod("b"), pod("c", "other"), pod("d", "other")])
    status, _ = raw(kube_server, "DELETE", "/api/v1/namespaces/default/pods?labelSelector=app%3Dx")
    assert status == 200
    assert [p["metadata"]["name"] for p in kube_server.list("", "v1", "pods")] == ["b", "c", "d"]
    client.deletecollection(Pod, namespace="other")  # lightkube sends no selector here
    assert [p["metadata"]["name"] for p in kube_server.list("", "v1", "pods")] == ["b"]


# ---- custom resources ----------------------------------------------------------------------------


def test_generic_global_resource_eniconfig(client: Client, kube_server: FakeKubeServer) -> None:
    created = client.create(
        ENIConfig(metadata={"name": "us-east-1a"}, spec={"subnet": "subnet-0abc", "securityGroups": ["sg-1"]})
    )
    assert created.metadata.resourceVersion
    client.create(ENIConfig(metadata={"name": "us-east-1b"}, spec={"subnet": "subnet-0def"}))
    listed = list(client.list(ENIConfig))
    assert [e.metadata.name for e in listed] == ["us-east-1a", "us-east-1b"]
    assert listed[0]["spec"]["subnet"] == "subnet-0abc"
    assert kube_server.requests("GET", "eniconfigs")[0].path == "/apis/crd.k8s.amazonaws.com/v1alpha1/eniconfigs"

    with pytest.raises(ApiError) as err:  # lightkube's default (strategic) is refused for custom resources
        client.patch(ENIConfig, "us-east-1a", {"spec": {"subnet": "subnet-0new"}})
    assert err.value.status.code == 415
    patched = client.patch(ENIConfig, "us-east-1a", {"spec": {"subnet": "subnet-0new"}}, patch_type=PatchType.MERGE)
    assert patched["spec"] == {"subnet": "subnet-0new", "securityGroups": ["sg-1"]}
    client.delete(ENIConfig, "us-east-1b")
    assert [e["kind"] for e in kube_server.objects_of("ENIConfig")] == ["ENIConfig"]


def test_generic_namespaced_resource_whereabouts_ippool(client: Client, kube_server: FakeKubeServer) -> None:
    pool = WhereaboutsIPPool(
        metadata={"name": "10.10.0.0-16", "namespace": "kube-system"},
        spec={"range": "10.10.0.0/16", "allocations": {"1": {"id": "abc", "podref": "default/p1"}}},
    )
    client.create(pool)
    assert [p.metadata.name for p in client.list(WhereaboutsIPPool, namespace="*")] == ["10.10.0.0-16"]
    assert list(client.list(WhereaboutsIPPool, namespace="default")) == []
    patched = client.patch(
        WhereaboutsIPPool,
        "10.10.0.0-16",
        {"spec": {"allocations": {"2": {"id": "def", "podref": "default/p2"}}}},
        namespace="kube-system",
        patch_type=PatchType.MERGE,
    )
    assert sorted(patched["spec"]["allocations"]) == ["1", "2"]
    client.delete(WhereaboutsIPPool, "10.10.0.0-16", namespace="kube-system")
    assert kube_server.list("whereabouts.cni.cncf.io", "v1alpha1", "ippools") == []
    # Calico's IPPool is a different, cluster-scoped resource with the same kind.
    assert kube_server.objects_of("IPPool", group="crd.projectcalico.org") == []


@pytest.mark.parametrize("kube_server", [{"crds": False}], indirect=True)
def test_absent_crd_is_404(client: Client, kube_server: FakeKubeServer) -> None:
    with pytest.raises(ApiError) as err:
        list(client.list(ENIConfig))
    assert err.value.status.code == 404
    assert kube_server.objects_of("CustomResourceDefinition") == []


# ---- discovery ----------------------------------------------------------------------------------


def test_discovery_lists_registered_crd_groups(kube_server: FakeKubeServer) -> None:
    status, body = raw(kube_server, "GET", "/apis")
    assert status == 200 and body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in body["groups"]}
    assert {"apps", "crd.k8s.amazonaws.com", "whereabouts.cni.cncf.io", "k8s.cni.cncf.io"} <= set(groups)
    assert groups["crd.projectcalico.org"]["preferredVersion"]["groupVersion"] == "crd.projectcalico.org/v1"

    status, body = raw(kube_server, "GET", "/apis/crd.projectcalico.org/v1")
    by_name = {r["name"]: r for r in body["resources"]}
    assert by_name["ipamblocks"]["kind"] == "IPAMBlock"
    assert by_name["ipamblocks"]["namespaced"] is False
    assert "list" in by_name["blockaffinities"]["verbs"]

    status, body = raw(kube_server, "GET", "/api/v1")
    by_name = {r["name"]: r for r in body["resources"]}
    assert by_name["pods"]["namespaced"] and not by_name["nodes"]["namespaced"]
    assert raw(kube_server, "GET", "/version")[1]["major"] == "1"
    assert raw(kube_server, "GET", "/api")[1]["versions"] == ["v1"]
    assert raw(kube_server, "GET", "/openapi/v2")[0] == 404
    crd = kube_server.get("apiextensions.k8s.io", "v1", "customresourcedefinitions", "eniconfigs.crd.k8s.amazonaws.com")
    assert crd is not None and crd["spec"]["scope"] == "Cluster"


@pytest.mark.parametrize("kube_server", [{"crds": {"crd.k8s.amazonaws.com"}}], indirect=True)
def test_discovery_omits_crd_groups_left_out(kube_server: FakeKubeServer) -> None:
    names = {g["name"] for g in raw(kube_server, "GET", "/apis")[1]["groups"]}
    assert "crd.k8s.amazonaws.com" in names and "apps" in names
    assert not names & {"whereabouts.cni.cncf.io", "k8s.cni.cncf.io", "crd.projectcalico.org"}
    assert raw(kube_server, "GET", "/apis/crd.projectcalico.org/v1")[0] == 404


def test_register_and_unregister_a_resource_type(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.unregister("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs")
    with pytest.raises(ApiError):
        list(client.list(ENIConfig))
    kube_server.register("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs", "ENIConfig", namespaced=False)
    assert list(client.list(ENIConfig)) == []


def test_concurrent_clients_get_unique_resource_versions(client: Client, kube_server: FakeKubeServer) -> None:
    def create(worker: int) -> list[int]:
        return [
            int(client.create(Node(metadata=ObjectMeta(name=f"n{worker}-{i}"))).metadata.resourceVersion)
            for i in range(25)
        ]

    with ThreadPoolExecutor(max_workers=8) as pool:
        rvs = [rv for chunk in pool.map(create, range(8)) for rv in chunk]
    assert len(set(rvs)) == 200
    assert len(list(client.list(Node, chunk_size=33))) == 200
    assert max(rvs) <= int(kube_server.resource_version)


# ---- fault injection ----------------------------------------------------------------------------


def test_injected_429_and_500_surface_as_api_error(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1"))
    kube_server.inject(429, retry_after=2)
    with pytest.raises(ApiError) as err:
        client.get(Node, "n1")
    assert err.value.status.code == 429
    assert err.value.status.reason == "TooManyRequests"
    assert err.value.status.details.retryAfterSeconds == 2
    assert err.value.response.headers["Retry-After"] == "2"
    assert client.get(Node, "n1").metadata.name == "n1"

    kube_server.inject(500, method="GET", path_contains="/nodes", times=2)
    client.create(Node(metadata=ObjectMeta(name="n2")))  # POST does not match
    for _ in range(2):
        with pytest.raises(ApiError) as err:
            list(client.list(Node))
        assert err.value.response.status_code == 500
    assert len(list(client.list(Node))) == 2


def test_injected_fault_mid_pagination(client: Client, kube_server: FakeKubeServer) -> None:
    kube_server.put_many(pod(f"p{i}") for i in range(30))
    seen: list[str] = []

    def fail_second_page(rec: Any) -> None:
        if "continue" in rec.query and not seen:
            seen.append(rec.query["continue"])
            kube_server.inject(503)

    kube_server.on_request = fail_second_page
    with pytest.raises(ApiError) as err:
        list(client.list(Pod, chunk_size=10))
    assert err.value.status.code == 503


@pytest.mark.parametrize(
    ("mode", "error", "carried_out"),
    [
        ("close", "Server disconnected without sending a response", False),
        ("rst", "Connection reset by peer", False),
        ("partial", "peer closed connection without sending complete message body", True),
    ],
)
def test_injected_reset_drops_the_connection(
    client: Client, kube_server: FakeKubeServer, mode: str, error: str, carried_out: bool
) -> None:
    import httpx2

    kube_server.put(node("n1"))
    kube_server.inject_reset(mode, method="GET", path_contains="/nodes/n1")
    with pytest.raises(httpx2.TransportError, match=error):
        client.get(Node, "n1")
    again = client.get(Node, "n1")  # the next request is answered, on a new connection
    assert again.metadata is not None and again.metadata.name == "n1"
    assert kube_server.count("GET", "nodes") == 2

    kube_server.inject_reset(mode, method="POST")
    with pytest.raises(httpx2.TransportError, match=error):
        client.create(Node(metadata=ObjectMeta(name="n2")))
    assert (kube_server.get("", "v1", "nodes", "n2") is not None) is carried_out
    with pytest.raises(ValueError, match="reset mode"):
        kube_server.inject_reset("hangup")


def test_hook_exception_is_a_500_and_recorded(client: Client, kube_server: FakeKubeServer) -> None:
    def broken(rec: Any) -> None:
        raise RuntimeError("hook bug")

    kube_server.on_request = broken
    with pytest.raises(ApiError) as err:
        client.get(Node, "n1")
    assert err.value.status.code == 500
    assert [str(e) for e in kube_server.errors] == ["hook bug"]
    kube_server.errors.clear()  # or the fixture re-raises it at teardown


# ---- plugin fixtures ----------------------------------------------------------------------------


def test_kubeconfig_fixture_sets_env_for_default_client(kubeconfig_path: Path, kube_server: FakeKubeServer) -> None:
    kube_server.put(node("n1"))
    with Client() as c:  # KUBECONFIG from the environment, as production code loads it
        assert [n.metadata.name for n in c.list(Node)] == ["n1"]
        assert c.namespace == "default"


def test_kubeconfig_named_context_and_namespace(tmp_path: Path, kube_server: FakeKubeServer) -> None:
    path = kube_server.kubeconfig(tmp_path / "kc", context="prod-eks", namespace="kube-system")
    config = KubeConfig.from_file(path)
    assert config.current_context == "prod-eks"
    with Client(config=config) as c:
        assert c.namespace == "kube-system"
        kube_server.put(pod("p1", "kube-system"))
        assert c.get(Pod, "p1").metadata.namespace == "kube-system"


# ---- pure helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/a/1", "value": 9}], {"a": [1, 9, 2], "b": {"c": "d"}}),
        ([{"op": "remove", "path": "/a/0"}], {"a": [2], "b": {"c": "d"}}),
        ([{"op": "move", "from": "/b/c", "path": "/e"}], {"a": [1, 2], "b": {}, "e": "d"}),
        ([{"op": "copy", "from": "/b", "path": "/f"}], {"a": [1, 2], "b": {"c": "d"}, "f": {"c": "d"}}),
        ([{"op": "add", "path": "/b/x~1y", "value": 1}], {"a": [1, 2], "b": {"c": "d", "x/y": 1}}),
        ([{"op": "test", "path": "/a", "value": [1, 2]}], {"a": [1, 2], "b": {"c": "d"}}),
    ],
)
def test_json_patch_ops(ops: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert json_patch({"a": [1, 2], "b": {"c": "d"}}, ops) == expected


@pytest.mark.parametrize(
    "op",
    [
        {"op": "test", "path": "/a/0", "value": True},  # JSON true is not 1
        {"op": "replace", "path": "/missing", "value": 1},
        {"op": "add", "path": "/a/5", "value": 1},
        {"op": "move", "from": "/b", "path": "/b/c/d"},
    ],
)
def test_json_patch_failures(op: dict[str, Any]) -> None:
    with pytest.raises(PatchFailed):
        json_patch({"a": [1, 2], "b": {"c": "d"}}, [op])


def test_merge_and_strategic_patch_helpers() -> None:
    target = {"a": {"b": 1, "c": 2}, "l": [{"name": "x", "v": 1}, {"name": "y", "v": 2}]}
    assert merge_patch(target, {"a": {"b": None}, "l": [{"name": "z"}]}) == {"a": {"c": 2}, "l": [{"name": "z"}]}
    assert strategic_merge_patch(target, {"l": [{"name": "y", "v": 3}, {"name": "z"}]})["l"] == [
        {"name": "x", "v": 1},
        {"name": "y", "v": 3},
        {"name": "z"},
    ]
    assert strategic_merge_patch(target, {"l": [{"name": "x", "$patch": "delete"}]})["l"] == [{"name": "y", "v": 2}]
    assert strategic_merge_patch(target, {"a": {"$patch": "replace", "z": 0}})["a"] == {"z": 0}
    assert target["a"] == {"b": 1, "c": 2}  # inputs are not mutated


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", {"w1", "w2"}),
        ("app==web,tier!=db", {"w1", "w2"}),
        ("tier in (db, cache)", {"d1"}),
        ("tier notin (db)", {"w1", "w2", "n"}),
        ("!app", {"n"}),
        ("app,!tier", {"w1", "w2"}),
        ("rank>1", {"w2"}),
    ],
)
def test_label_selector_grammar(selector: str, expected: set[str]) -> None:
    objs = [
        {"metadata": {"name": "w1", "labels": {"app": "web", "rank": "1"}}},
        {"metadata": {"name": "w2", "labels": {"app": "web", "rank": "2"}}},
        {"metadata": {"name": "d1", "labels": {"app": "db", "tier": "db"}}},
        {"metadata": {"name": "n"}},
    ]
    match = parse_label_selector(selector)
    assert match is not None
    assert {o["metadata"]["name"] for o in objs if match(o)} == expected


def test_field_selector_booleans_and_missing_fields() -> None:
    match = parse_field_selector("spec.unschedulable=true,spec.nodeName=")
    assert match is not None
    assert match({"spec": {"unschedulable": True}})
    assert not match({"spec": {"unschedulable": False}})
