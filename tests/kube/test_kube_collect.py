"""Collection of the in-cluster section with the real lightkube client against the fake API server.

The cluster is the EKS incident of the talk: nodes in ap-southeast-2a/2b, pods stuck in ContainerCreating
with the aws-cni "failed to assign an IP address to container" sandbox error, aws-node's env, ENIConfigs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cidrx.errors import EXIT_ACCESS, AccessDenied
from cidrx.kube.api import KubeApi
from cidrx.kube.collect import (
    EVENT_REASONS,
    collect_kube,
    collect_with,
    event_from,
    section_from,
    waiting_pod_from,
    workload_env_from,
)
from cidrx.kube.errors import KubeUnavailable
from cidrx.model.codec import canonical_json
from cidrx.model.kube import KubeNode, KubePod
from cidrx.providers.eks.collect.cluster import EniConfig
from tests.support.estates.eks_cluster import SANDBOX_MESSAGE
from tests.support.estates.kube_objects import (
    CLUSTER_SG,
    NODE_A,
    NODE_B,
    NODE_OLD,
    PLAN_LABEL,
    SUBNET_A,
    SUBNET_B,
    aws_node,
    pod,
    seed_eks_cluster,
)
from tests.support.fakes.kube_server import FakeKubeServer
from tests.support.ports import refused_port


def test_collect_eks_cluster(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    seed_eks_cluster(kube_server)

    section = collect_kube(str(kubeconfig_path), None, provider="eks")

    assert section.available and section.reason == ""
    assert section.context == "fake"
    assert list(section.api_groups) == sorted(section.api_groups)
    assert {"apps", "crd.k8s.amazonaws.com"} <= set(section.api_groups)

    assert [n.name for n in section.nodes] == [NODE_A, NODE_OLD, NODE_B]  # sorted by name
    nodes = {n.name: n for n in section.nodes}
    assert nodes[NODE_A] == KubeNode(
        name=NODE_A,
        zone="ap-southeast-2a",
        instance_type="m5.large",
        created="2024-03-01T02:10:00Z",
        ready=True,
        pod_cidrs=(),
        internal_ip="10.0.208.27",
        allocatable_pods=29,
        pool="managed-ng",
    )
    assert nodes[NODE_B].zone == "ap-southeast-2b"
    old = nodes[NODE_OLD]
    assert (old.zone, old.instance_type, old.pool) == ("ap-southeast-2a", "t3.medium", "ng-legacy")
    assert (old.ready, old.pod_cidrs, old.allocatable_pods) == (False, ("10.244.3.0/24",), 17)

    # hostNetwork DaemonSet pods and the finished Job pod take no pod address
    assert section.pods_per_node == {NODE_A: 2, NODE_B: 1}  # coredns + the ContainerCreating pod; web
    assert section.waiting_pods == (
        KubePod("default", "mydeploy-6bdbfc484d-2frv4", "Pending", NODE_A, "ContainerCreating", "2024-03-01T02:52:41Z"),
        KubePod("default", "mydeploy-6bdbfc484d-x7k2p", "Pending", "", "Unschedulable", "2024-03-01T02:52:41Z"),
    )

    events = {e.reason: e for e in section.events}
    assert set(events) == {"FailedCreatePodSandBox", "FailedScheduling", "CIDRNotAvailable"}  # not "Scheduled"
    sandbox = events["FailedCreatePodSandBox"]
    assert sandbox.message == SANDBOX_MESSAGE
    assert (sandbox.namespace, sandbox.kind, sandbox.name) == ("default", "Pod", "mydeploy-6bdbfc484d-2frv4")
    assert (sandbox.type, sandbox.count, sandbox.last_seen, sandbox.source) == (
        "Warning",
        12,
        "2024-03-01T03:00:07Z",
        "kubelet",
    )
    scheduling = events["FailedScheduling"]
    assert (scheduling.count, scheduling.last_seen, scheduling.source) == (
        7,
        "2024-03-01T03:01:15.000000Z",
        "default-scheduler",
    )
    cidr = events["CIDRNotAvailable"]
    assert (cidr.namespace, cidr.kind, cidr.name, cidr.type, cidr.count) == ("", "Node", NODE_OLD, "Normal", 3)

    assert section.aws_node is not None
    stored = kube_server.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert stored is not None
    assert (section.aws_node.namespace, section.aws_node.name, section.aws_node.container) == (
        "kube-system",
        "aws-node",
        "aws-node",
    )
    assert section.aws_node.resource_version == stored["metadata"]["resourceVersion"]
    assert section.aws_node.get("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG") == "false"
    assert section.aws_node.get("WARM_ENI_TARGET") == "1"
    assert section.aws_node.get("MY_NODE_NAME") == ""  # valueFrom: recorded, value unknown
    assert section.aws_node.get("DISABLE_TCP_EARLY_DEMUX") is None  # init container, not aws-node

    assert section.eniconfigs == (
        EniConfig("ap-southeast-2a", SUBNET_A, (CLUSTER_SG,), "2024-03-01T04:00:00Z", PLAN_LABEL),
        EniConfig("ap-southeast-2b", SUBNET_B, (CLUSTER_SG,), "2024-03-01T04:00:00Z", {}),
    )
    canonical_json(section)  # serialisable as part of a snapshot


def test_pagination_and_list_calls_only(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    seed_eks_cluster(kube_server)
    whole = collect_kube(str(kubeconfig_path), None, provider="eks")
    kube_server.reset_log()

    with KubeApi.connect(str(kubeconfig_path), None, chunk_size=2) as api:
        paged = collect_with(api, provider="eks")

    assert paged == whole
    pod_pages = kube_server.requests("GET", "pods")
    assert len(pod_pages) == 5  # 9 unfinished pods, 2 per page
    assert all(r.query["limit"] == "2" for r in pod_pages)
    assert "continue" not in pod_pages[0].query and all(r.query.get("continue") for r in pod_pages[1:])
    assert {r.query["fieldSelector"] for r in pod_pages} == {"status.phase!=Failed,status.phase!=Succeeded"}
    assert len(kube_server.requests("GET", "nodes")) == 2
    assert len(kube_server.requests("GET", "eniconfigs")) == 1
    event_lists = kube_server.requests("GET", "events")
    assert sorted(r.query["fieldSelector"] for r in event_lists) == sorted(f"reason={r}" for r in EVENT_REASONS)
    # list calls only: every request is discovery or a collection, except the one aws-node read
    assert all(r.method == "GET" for r in kube_server.request_log)
    collections = {r.path for r in kube_server.request_log if r.path.endswith(f"/{kube_server.plural_of(r.path)}")}
    others = [r.path for r in kube_server.request_log if r.path not in collections]
    assert others == ["/apis", "/apis/apps/v1/namespaces/kube-system/daemonsets/aws-node"]


def test_other_providers_do_not_read_aws_node(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    seed_eks_cluster(kube_server)
    section = collect_kube(str(kubeconfig_path), None, provider="gke")
    assert section.available and section.aws_node is None
    assert kube_server.count(plural="daemonsets") == 0
    # ENIConfigs are the AWS VPC CNI's: only EKS targets read them, even where the CRD group is served.
    assert section.eniconfigs == () and kube_server.count(plural="eniconfigs") == 0


@pytest.mark.parametrize("kube_server", [{"crds": False}], indirect=True)
def test_crd_group_absent(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    seed_eks_cluster(kube_server, eniconfigs=False)

    section = collect_kube(str(kubeconfig_path), None, provider="eks")

    assert section.available and section.eniconfigs == ()
    assert "crd.k8s.amazonaws.com" not in section.api_groups
    assert kube_server.count(path_contains="eniconfigs") == 0  # never asked for
    assert len(section.nodes) == 3
    with KubeApi.connect(str(kubeconfig_path), None) as api:  # asked anyway: absent is not an error
        assert list(api.iter_custom("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs")) == []
        assert api.get_custom("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs", "ap-southeast-2a") is None


# ---- failures -------------------------------------------------------------------------------------


def test_forbidden_pods_list_is_access_denied(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    seed_eks_cluster(kube_server)
    kube_server.inject(
        403,
        method="GET",
        path_contains="/api/v1/pods",
        times=None,
        message='pods is forbidden: User "arn:aws:sts::123456789012:assumed-role/ci/cidrx" cannot list resource\n'
        '"pods" in API group "" at the cluster scope',
    )

    with pytest.raises(AccessDenied) as caught:
        collect_kube(str(kubeconfig_path), None, provider="eks")

    err = caught.value
    assert not isinstance(err, KubeUnavailable)
    assert err.exit_code == EXIT_ACCESS == 6
    text = str(err)
    assert "\n" not in text
    assert text.startswith("forbidden: cannot list pods at cluster scope")
    assert "grant verb list on resource pods" in text and "context fake" in text


def closed_port() -> int:
    return refused_port()


def write_kubeconfig(path: Path, server: str, *, context: str = "eks-demo") -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "current-context": context,
            }
        )
    )
    return path


def test_unreachable_server_is_unavailable(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{closed_port()}"
    config = write_kubeconfig(tmp_path / "kubeconfig", server)

    section = collect_kube(str(config), None, provider="eks")

    assert not section.available
    assert server in section.reason and "cannot reach the Kubernetes API" in section.reason
    assert section.context == "eks-demo"
    assert section.nodes == () and section.aws_node is None


def test_no_configuration_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))

    section = collect_kube(None, None, provider="eks")

    assert not section.available
    assert section.reason.startswith("no Kubernetes configuration")


def test_unknown_context_is_access_denied(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    with pytest.raises(AccessDenied) as caught:
        collect_kube(str(kubeconfig_path), "prod-eks", provider="eks")
    assert type(caught.value) is AccessDenied
    assert str(caught.value).startswith(f"context prod-eks not found in kubeconfig {kubeconfig_path}")
    assert kube_server.request_log == []


def test_default_kubeconfig_resolution_uses_env(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    seed_eks_cluster(kube_server)  # kubeconfig_path is exported as $KUBECONFIG
    section = collect_kube(None, None, provider="eks")
    assert section.available and len(section.nodes) == 3


# ---- pure converters ------------------------------------------------------------------------------


def test_converters_on_plain_dicts() -> None:
    creating = pod("p", node_name=NODE_A, phase="", waiting="ContainerCreating")
    assert waiting_pod_from(creating) == KubePod(
        "default", "p", "", NODE_A, "ContainerCreating", "2024-03-01T02:52:41Z"
    )
    assert waiting_pod_from(pod("r", node_name=NODE_A)) is None
    bare = waiting_pod_from({"metadata": {"name": "q", "namespace": "ns"}, "status": {"phase": "Pending"}})
    assert bare is not None and bare.reason == "Pending"

    once = event_from({"reason": "FailedScaleUp", "involvedObject": {"kind": "Pod", "name": "x"}, "eventTime": "t"})
    assert (once.count, once.last_seen, once.source) == (1, "t", "")

    assert workload_env_from(aws_node(), "no-such-container") is None

    section = section_from(["b", "a", "a"], [], [], [], "ctx")
    assert section.api_groups == ("a", "b") and section.available and section.context == "ctx"


def test_a_pending_pods_gke_node_pool_selector_is_kept(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    # What lets a GKE plan copy the pool the starving pods wait for (cidrx/providers/gke/pool_copy.py).
    pinned = pod("trainer", phase="Pending", scheduled={"type": "PodScheduled", "status": "False"})
    pinned["spec"]["nodeSelector"] = {"cloud.google.com/gke-nodepool": "gpu-pool", "kubernetes.io/os": "linux"}
    kube_server.put_many([pinned, pod("free", phase="Pending")])
    section = collect_kube(str(kubeconfig_path), None, provider="gke")
    assert {p.name: p.node_pool for p in section.waiting_pods} == {"trainer": "gpu-pool", "free": None}
