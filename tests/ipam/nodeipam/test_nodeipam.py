"""Kubernetes node IPAM: settings from the controller-manager static pod or kubeadm-config, capacity in nodes,
CIDRNotAvailable and podCIDR-less nodes; collection with the real client against the fake API server; the
plain-Kubernetes provider module.

The cluster is a kubeadm cluster with flannel: --cluster-cidr 10.244.0.0/16 cut into /24 node blocks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cidrx.errors import InvalidInput
from cidrx.ipam.calico.model import CalicoSection
from cidrx.ipam.nodeipam.analyze import (
    CIDR_NOT_AVAILABLE,
    EXHAUSTED_ID,
    NEARLY_EXHAUSTED_ID,
    NODES_WITHOUT_PODCIDR,
    analyze_node_ipam,
)
from cidrx.ipam.nodeipam.collect import collect_node_ipam, node_ipam_config_from, parse_flags
from cidrx.ipam.nodeipam.model import NodeIpamConfig
from cidrx.kube.api import KubeApi
from cidrx.kube.collect import collect_with
from cidrx.model.findings import Severity
from cidrx.model.kube import KubeEvent, KubeNode, KubeSection
from cidrx.model.options import PlanOptions
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target
from cidrx.providers.k8s import provider as k8s
from tests.support.fakes.kube_server import FakeKubeServer

KCM_POD = "kube-controller-manager-cp-1"
CIDR_MESSAGE = "Node worker-9 status is now: CIDRNotAvailable"


def kcm_pod(
    command: list[str] | None = None, args: list[str] | None = None, *, name: str = KCM_POD, label: bool = True
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "kube-controller-manager", "image": "registry.k8s.io/kube-controller-manager"}
    if command is not None:
        container["command"] = command
    if args is not None:
        container["args"] = args
    labels = {"component": "kube-controller-manager", "tier": "control-plane"} if label else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system", "labels": labels},
        "spec": {"nodeName": "cp-1", "hostNetwork": True, "containers": [container]},
        "status": {"phase": "Running"},
    }


def kubeadm_command(*flags: str) -> list[str]:
    return [
        "kube-controller-manager",
        "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
        "--bind-address=127.0.0.1",
        *flags,
        "--use-service-account-credentials=true",
    ]


def etcd_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "etcd-cp-1", "namespace": "kube-system", "labels": {"component": "etcd"}},
        "spec": {"containers": [{"name": "etcd", "command": ["etcd", "--cluster-cidr=192.168.0.0/16"]}]},
    }


def kubeadm_config(cluster_configuration: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kubeadm-config", "namespace": "kube-system"},
        "data": {"ClusterConfiguration": cluster_configuration},
    }


V1BETA3 = """\
apiServer: {}
apiVersion: kubeadm.k8s.io/v1beta3
controllerManager:
  extraArgs:
    node-cidr-mask-size: "26"
kind: ClusterConfiguration
kubernetesVersion: v1.28.2
networking:
  dnsDomain: cluster.local
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.96.0.0/12
"""

V1BETA4 = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
controllerManager:
  extraArgs:
  - name: node-cidr-mask-size-ipv4
    value: "25"
networking:
  podSubnet: 10.244.0.0/16,fd00:10:244::/56
"""


# ---- configuration parsing ----------------------------------------------------------------------------


def test_parse_flags_equals_split_and_bare_boolean() -> None:
    argv = ["kube-controller-manager", "--cluster-cidr", "10.244.0.0/16", "--allocate-node-cidrs", "--v=2"]
    assert parse_flags(argv) == {"cluster-cidr": "10.244.0.0/16", "allocate-node-cidrs": "true"}
    assert parse_flags(["--node-cidr-mask-size=25", "--allocate-node-cidrs=false"]) == {
        "node-cidr-mask-size": "25",
        "allocate-node-cidrs": "false",
    }
    # A value flag with no value (next word is another flag) is ignored; later occurrences win.
    assert parse_flags(["--cluster-cidr", "--v=2", "--cluster-cidr=10.1.0.0/16"]) == {"cluster-cidr": "10.1.0.0/16"}


def test_static_pod_with_equals_form_in_command() -> None:
    pod = kcm_pod(kubeadm_command("--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16"))
    assert node_ipam_config_from([etcd_pod(), pod], []) == NodeIpamConfig(
        cluster_cidrs=("10.244.0.0/16",),
        node_mask_v4=24,  # the kube-controller-manager default for IPv4
        source=f"pod kube-system/{KCM_POD}",
        allocate_node_cidrs=True,
    )


def test_static_pod_with_split_args_and_mask() -> None:
    pod = kcm_pod(
        ["kube-controller-manager"],
        ["--allocate-node-cidrs", "--cluster-cidr", "10.32.0.0/12", "--node-cidr-mask-size", "26"],
    )
    config = node_ipam_config_from([pod], [])
    assert config is not None
    assert (config.cluster_cidrs, config.node_mask_v4, config.allocate_node_cidrs) == (("10.32.0.0/12",), 26, True)


def test_dual_stack_cluster_cidr_and_ipv4_mask() -> None:
    pod = kcm_pod(
        kubeadm_command(
            "--allocate-node-cidrs=true",
            "--cluster-cidr=10.244.0.0/16,fd00::/48",
            "--node-cidr-mask-size-ipv4=25",
            "--node-cidr-mask-size-ipv6=64",
        )
    )
    config = node_ipam_config_from([pod], [])
    assert config is not None
    assert config.cluster_cidrs == ("10.244.0.0/16", "fd00::/48")
    assert config.node_mask_v4 == 25


def test_ipv6_only_cluster_has_no_ipv4_mask() -> None:
    config = node_ipam_config_from([kcm_pod(kubeadm_command("--allocate-node-cidrs", "--cluster-cidr=fd00::/48"))], [])
    assert config is not None and config.cluster_cidrs == ("fd00::/48",) and config.node_mask_v4 is None


def test_shell_wrapped_command_and_pod_found_by_name_without_labels() -> None:
    pod = kcm_pod(
        ["/bin/sh", "-c", "exec kube-controller-manager --allocate-node-cidrs=true --cluster-cidr=172.20.0.0/14"],
        label=False,
    )
    config = node_ipam_config_from([pod], [])
    assert config is not None and config.cluster_cidrs == ("172.20.0.0/14",)


def test_allocate_node_cidrs_defaults_to_false_in_the_pod() -> None:
    config = node_ipam_config_from([kcm_pod(kubeadm_command("--cluster-cidr=10.244.0.0/16"))], [])
    assert config is not None and config.allocate_node_cidrs is False


def test_kubeadm_config_v1beta3_map_extra_args() -> None:
    config = node_ipam_config_from([etcd_pod()], [kubeadm_config(V1BETA3)])
    assert config == NodeIpamConfig(("10.244.0.0/16",), 26, "configmap kube-system/kubeadm-config", True)


def test_kubeadm_config_v1beta4_list_extra_args_dual_stack() -> None:
    config = node_ipam_config_from([], [kubeadm_config(V1BETA4)])
    assert config is not None
    assert config.cluster_cidrs == ("10.244.0.0/16", "fd00:10:244::/56")
    assert config.node_mask_v4 == 25


def test_pod_without_cluster_cidr_falls_back_to_kubeadm_config() -> None:
    pod = kcm_pod(kubeadm_command())
    config = node_ipam_config_from([pod], [kubeadm_config(V1BETA3)])
    assert config is not None and config.source == "configmap kube-system/kubeadm-config"
    # Without a kubeadm-config, the pod still says node IPAM is off.
    only_pod = node_ipam_config_from([pod], [])
    assert only_pod is not None and only_pod.cluster_cidrs == () and only_pod.allocate_node_cidrs is False


def test_configmaps_are_not_read_when_the_pod_answers() -> None:
    def never() -> Iterator[dict[str, Any]]:
        raise AssertionError("kubeadm-config read although the pod named the cluster CIDR")
        yield {}

    pod = kcm_pod(kubeadm_command("--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16"))
    assert node_ipam_config_from([pod], never()) is not None


def test_nothing_visible_gives_none() -> None:
    broken = kubeadm_config("networking: [unclosed")
    assert node_ipam_config_from([etcd_pod()], [broken, kubeadm_config("kind: ClusterConfiguration\n")]) is None


# ---- analysis -----------------------------------------------------------------------------------------

CONFIG = NodeIpamConfig(("10.244.0.0/16",), 24, f"pod kube-system/{KCM_POD}", True)


def node(name: str, *pod_cidrs: str, ready: bool = True) -> KubeNode:
    return KubeNode(name, "", "", "2024-05-01T00:00:00Z", ready=ready, pod_cidrs=pod_cidrs)


def event(name: str, *, reason: str = "CIDRNotAvailable", type_: str = "Normal", count: int = 1134) -> KubeEvent:
    message = f"Node {name} status is now: {reason}"
    return KubeEvent("", "Node", name, reason, type_, message, count, "2024-05-02T10:00:00Z", "cidrAllocator")


def section(
    nodes: list[KubeNode], config: NodeIpamConfig | None = CONFIG, events: tuple[KubeEvent, ...] = ()
) -> KubeSection:
    return KubeSection(available=True, context="kind-demo", nodes=tuple(nodes), events=events, node_ipam=config)


def ids(findings: list[Any]) -> dict[str, Severity]:
    return {f.id: f.severity for f in findings}


def test_capacity_of_a_16_with_24_blocks_is_256_nodes() -> None:
    nodes = [node(f"worker-{i}", f"10.244.{i}.0/24") for i in range(3)]
    capacity, findings = analyze_node_ipam(section(nodes))
    assert findings == []
    (cap,) = capacity
    assert (cap.kind, cap.name, cap.cidr) == ("node-ipam", "cluster-cidr", "10.244.0.0/16")
    assert (cap.max_nodes, cap.nodes, cap.nodes_fit) == (256, 3, 253)
    assert (cap.size, cap.used, cap.free) == (65536, 768, 253 * 256)
    assert cap.utilization == round(3 / 256, 4)
    assert "/24 per node" in (cap.note or "")


def test_dual_stack_node_counts_by_its_ipv4_block_only() -> None:
    config = NodeIpamConfig(("10.244.0.0/16", "fd00::/48"), 24, "x", True)
    capacity, _ = analyze_node_ipam(section([node("a", "10.244.0.0/24", "fd00::/64")], config))
    assert [(c.cidr, c.nodes) for c in capacity] == [("10.244.0.0/16", 1)]


def test_nearly_exhausted_at_80_percent() -> None:
    config = dataclasses.replace(CONFIG, cluster_cidrs=("10.244.0.0/21",))  # 8 blocks of /24
    seven = [node(f"w{i}", f"10.244.{i}.0/24") for i in range(7)]
    capacity, findings = analyze_node_ipam(section(seven, config))
    assert capacity[0].max_nodes == 8 and capacity[0].utilization == 0.875
    assert ids(findings) == {NEARLY_EXHAUSTED_ID: Severity.WARNING}
    assert "1 of 8 node blocks left" in findings[0].summary
    assert "v1.29" in findings[0].remediation and "supernet" in findings[0].remediation
    _, six = analyze_node_ipam(section(seven[:6], config))  # 75%: nothing yet
    assert six == []


def test_full_range_is_critical_and_podcidr_less_node_too() -> None:
    config = dataclasses.replace(CONFIG, cluster_cidrs=("10.244.0.0/22",))  # 4 blocks
    nodes = [node(f"w{i}", f"10.244.{i}.0/24") for i in range(4)] + [node("w4", ready=False)]
    capacity, findings = analyze_node_ipam(section(nodes, config))
    assert (capacity[0].nodes, capacity[0].max_nodes, capacity[0].free) == (4, 4, 0)
    assert ids(findings) == {EXHAUSTED_ID: Severity.CRITICAL, NODES_WITHOUT_PODCIDR: Severity.CRITICAL}
    missing = next(f for f in findings if f.id == NODES_WITHOUT_PODCIDR)
    assert missing.summary.startswith("1 of 5 node(s) have no spec.podCIDR")
    assert missing.evidence[0].startswith("node w4 (not Ready)")
    assert "10.244.0.0/21 for 10.244.0.0/22" in missing.remediation


def test_cidr_not_available_events_matched_by_reason_not_type() -> None:
    nodes = [node("worker-1", "10.244.1.0/24"), node("worker-9")]
    events = (
        event("worker-9"),  # Normal, as the range allocator records it
        event("worker-7", type_="Warning", count=1),  # node deleted since
        event("worker-1", reason="RegisteredNode"),  # another reason: ignored
    )
    _, findings = analyze_node_ipam(section(nodes, events=events))
    assert ids(findings) == {CIDR_NOT_AVAILABLE: Severity.CRITICAL, NODES_WITHOUT_PODCIDR: Severity.CRITICAL}
    cna = findings[0]
    assert cna.id == CIDR_NOT_AVAILABLE and cna.subject == "10.244.0.0/16"
    assert cna.summary.startswith("2 node(s) were refused a pod CIDR")
    assert cna.evidence == (
        "node worker-7: Node worker-7 status is now: CIDRNotAvailable (cidrAllocator), last 2024-05-02T10:00:00Z; "
        "gone now",
        f"node worker-9: {CIDR_MESSAGE} (cidrAllocator) x1134, last 2024-05-02T10:00:00Z; still no podCIDR",
    )
    missing = findings[1]
    assert missing.evidence == ("node worker-9, created 2024-05-01T00:00:00Z; CIDRNotAvailable event seen",)


def test_events_without_config_say_the_settings_are_unknown() -> None:
    _, findings = analyze_node_ipam(section([node("worker-9")], config=None, events=(event("worker-9"),)))
    cna = next(f for f in findings if f.id == CIDR_NOT_AVAILABLE)
    assert cna.subject == "the cluster CIDR"
    assert cna.evidence[-1].startswith("cluster CIDR and node mask unknown")


def test_new_node_without_podcidr_is_a_warning() -> None:
    _, findings = analyze_node_ipam(section([node("a", "10.244.0.0/24"), node("b")]))
    assert ids(findings) == {NODES_WITHOUT_PODCIDR: Severity.WARNING}
    assert findings[0].remediation.startswith("A node that has just joined")


def test_podcidr_less_nodes_ignored_when_the_cni_does_not_use_podcidr() -> None:
    # EKS/Calico-style cluster: no node has a podCIDR and node IPAM is off (or unknown).
    assert analyze_node_ipam(section([node("a"), node("b")], config=None)) == ([], [])
    off = NodeIpamConfig((), None, "pod kube-system/x", False)
    assert analyze_node_ipam(section([node("a")], config=off)) == ([], [])
    # Node IPAM on but no node got a block yet: that matters.
    _, findings = analyze_node_ipam(section([node("a")]))
    assert ids(findings) == {NODES_WITHOUT_PODCIDR: Severity.WARNING}


def test_calico_clusters_get_a_warning_only() -> None:
    kube = dataclasses.replace(
        section([node("a", "10.244.0.0/24"), node("b")], events=(event("b"),)), calico=CalicoSection()
    )
    _, findings = analyze_node_ipam(kube)
    missing = next(f for f in findings if f.id == NODES_WITHOUT_PODCIDR)
    assert missing.severity is Severity.WARNING and "Calico IPAM does not read spec.podCIDR" in missing.summary


def test_unavailable_cluster_gives_nothing() -> None:
    assert analyze_node_ipam(KubeSection(available=False, reason="--no-kube")) == ([], [])


# ---- collection against the fake API server -----------------------------------------------------------


def test_collect_reads_the_static_pod_with_one_list(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    kube_server.put(etcd_pod())
    kube_server.put(kcm_pod(kubeadm_command("--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16")))
    kube_server.put({**kcm_pod(kubeadm_command("--cluster-cidr=10.9.0.0/16")), "metadata": {"name": KCM_POD}})
    kube_server.put(kubeadm_config(V1BETA3))
    kube_server.reset_log()
    with KubeApi.connect(str(kubeconfig_path), None) as api:
        config = collect_node_ipam(api)
    # The look-alike in namespace "default" is not read: the list is of kube-system only.
    assert config == NodeIpamConfig(("10.244.0.0/16",), 24, f"pod kube-system/{KCM_POD}", True)
    assert [(r.method, r.path) for r in kube_server.request_log] == [("GET", "/api/v1/namespaces/kube-system/pods")]


def test_collect_falls_back_to_kubeadm_config(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    kube_server.put(etcd_pod())
    kube_server.put(kubeadm_config(V1BETA3))
    kube_server.reset_log()
    with KubeApi.connect(str(kubeconfig_path), None) as api:
        config = collect_node_ipam(api)
    assert config is not None and config.source == "configmap kube-system/kubeadm-config"
    assert len(kube_server.request_log) == 2
    assert kube_server.request_log[1].path == "/api/v1/namespaces/kube-system/configmaps/kubeadm-config"


def test_collect_when_forbidden_or_absent(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    kube_server.put(kcm_pod(kubeadm_command("--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16")))
    kube_server.inject(403, path_contains="/namespaces/kube-system/pods")
    with KubeApi.connect(str(kubeconfig_path), None) as api:
        assert collect_node_ipam(api) is None  # pods forbidden, no kubeadm-config: unknown, not an error
        assert collect_node_ipam(api) is not None  # the fault was for one request only


@pytest.mark.parametrize("kube_server", [{"crds": False}], indirect=True)
def test_collect_with_k8s_provider_fills_node_ipam(kube_server: FakeKubeServer, kubeconfig_path: Path) -> None:
    kube_server.put(kcm_pod(kubeadm_command("--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/22")))
    for i in range(4):
        kube_server.put(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"w{i}"}, "spec": {"podCIDR": f"10.244.{i}.0/24"}}
        )
    kube_server.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w4"}, "spec": {}})
    kube_server.put(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "w4.17c", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": "w4"},
            "reason": "CIDRNotAvailable",
            "type": "Normal",
            "message": "Node w4 status is now: CIDRNotAvailable",
            "count": 12,
            "source": {"component": "cidrAllocator"},
        }
    )
    with KubeApi.connect(str(kubeconfig_path), None) as api:
        kube = collect_with(api, provider="k8s")
    assert kube.node_ipam is not None and kube.node_ipam.cluster_cidrs == ("10.244.0.0/22",)
    d = k8s.analyze(seal(Snapshot(Target("k8s", "kind-demo", context="fake"), "2024-05-02T10:00:00Z", kube)))
    assert [(c.kind, c.nodes, c.max_nodes) for c in d.capacity] == [("node-ipam", 4, 4)]
    assert {f.id for f in d.findings} == {CIDR_NOT_AVAILABLE, NODES_WITHOUT_PODCIDR, EXHAUSTED_ID}
    assert d.counts["critical"] == 3


# ---- the plain-Kubernetes provider --------------------------------------------------------------------

TARGET = Target("k8s", "kind-demo", context="kind-demo")


def test_provider_reports_an_unreachable_cluster_as_info() -> None:
    snap = seal(Snapshot(TARGET, "2024-05-02T10:00:00Z", KubeSection(available=False, reason="connection refused")))
    d = k8s.analyze(snap)
    assert d.capacity == ()
    (f,) = d.findings
    assert (f.id, f.severity, f.subject) == ("KUBE-UNREACHABLE", Severity.INFO, "kind-demo")
    assert f.evidence == ("connection refused",)  # why, as the evidence (the summary says what was skipped)
    assert d.snapshot_fingerprint == snap.fingerprint


def test_provider_entry_points() -> None:
    kube = section([node("a", "10.244.0.0/24")])
    snap = k8s.collect(TARGET, None, kube, "2024-05-02T10:00:00Z")  # type: ignore[arg-type]
    assert (snap.target, snap.kube, snap.eks, snap.gke) == (TARGET, kube, None, None)
    from cidrx import registry

    spec = registry.provider_spec("k8s")
    assert spec is not None and spec.strategies == ()
    assert k8s.apis(None, None, None).kube is None  # type: ignore[arg-type]
    from cidrx.app.plan import make_plan

    with pytest.raises(InvalidInput, match=r"plain Kubernetes clusters \(--k8s\) have no expand strategy"):
        make_plan(snap, PlanOptions())
