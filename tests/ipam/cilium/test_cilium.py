"""Cilium through the public CLI against the fake API server (with its cilium-operator simulation): detection,
diagnosis of cluster-pool and multi-pool clusters and of the modes whose addresses come from elsewhere, the
`cilium-pool` plan, apply verified by the operator handing the waiting node a CIDR, and rollback refused while
that CIDR is held. The estates' Cilium objects are checked against the compact CRD schemas first."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cases.live import Live
from tests.support.cli import one_line_error, run
from tests.support.estates import cilium
from tests.support.fakes.cilium_operator import CiliumKubeServer
from tests.support.fakes.crd_schemas import SCHEMAS
from tests.support.fakes.crd_schemas.structural import problems

JSON = dict[str, Any]


def live(objects: Callable[[], list[JSON]], tmp: Path, mp: pytest.MonkeyPatch, **kw: Any) -> Any:
    return cilium.k8s(objects, **kw)(tmp, mp)


@pytest.fixture
def incident(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Live]:
    with live(cilium.cluster_pool_incident, tmp_path, monkeypatch) as estate:
        yield estate


def diagnose(estate: Live) -> tuple[int, JSON]:
    result = run("diagnose", *estate.target, "-o", "json")
    assert "Traceback" not in result.output, result.output
    return result.exit_code, json.loads(result.stdout)


def ids(doc: JSON) -> dict[str, JSON]:
    return {f["id"]: f for f in doc["findings"]}


def plan(estate: Live, *extra: str) -> JSON:
    made = run(
        "expand", *estate.target, "--strategy", "cilium-pool", "--plan", "--out", str(estate.tmp / "p.json"), *extra
    )
    assert made.exit_code == 0, made.output
    doc: JSON = json.loads((estate.tmp / "p.json").read_text())
    return doc


def config_list(estate: Live) -> str:
    assert estate.kube is not None
    cm = estate.kube.get("", "v1", "configmaps", "cilium-config", "kube-system")
    assert cm is not None
    return str(cm["data"]["cluster-pool-ipv4-cidr"])


def ciliumnode(estate: Live, name: str) -> JSON:
    assert estate.kube is not None
    found = estate.kube.get("cilium.io", "v2", "ciliumnodes", name)
    assert found is not None
    return found


@pytest.mark.parametrize(
    "objects",
    [
        cilium.cluster_pool_incident,
        cilium.cluster_pool_full,
        cilium.multi_pool_incident,
        lambda: cilium.multi_pool_incident("v2"),
    ],
)
def test_the_estates_cilium_objects_fit_upstreams_schemas(objects: Callable[[], list[JSON]]) -> None:
    checked = 0
    for obj in objects():
        group, _, version = obj["apiVersion"].rpartition("/")
        plural = {"CiliumNode": "ciliumnodes", "CiliumPodIPPool": "ciliumpodippools"}.get(obj["kind"])
        if group == "cilium.io" and plural:
            assert list(problems(obj, SCHEMAS[(group, version, plural)])) == [], obj
            checked += 1
    assert checked
    # and a wrong shape is refused: a v2 pool entry written as v2alpha1's string
    bad = cilium.pool("p", ["10.1.0.0/16"], 24, "v2alpha1")
    assert list(problems(bad, SCHEMAS[("cilium.io", "v2", "ciliumpodippools")]))


def test_cluster_pool_exhaustion_is_reported_from_ciliumnodes_not_node_podcidr(incident: Live) -> None:
    code, doc = diagnose(incident)
    assert code == 3
    found = ids(doc)
    full = found["CILIUM-CLUSTER-POOL-EXHAUSTED"]
    assert full["severity"] == "critical"
    assert "CiliumNode node-5: allocator full; node NotReady" in full["evidence"]
    assert "cilium-pool" in full["remediation"] and "clusterPoolIPv4PodCIDRList" in full["remediation"]
    node = found["CILIUM-NODE-CIDR-FULL"]
    assert node["severity"] == "critical"
    assert any("node node-1: 255 pods on 10.0.0.0/24 (254 usable addresses)" in e for e in node["evidence"])
    assert any("range is full" in e for e in node["evidence"])
    # Node.spec.podCIDR (10.244.x.0/24 from kube-controller-manager) is not Cilium's: node IPAM defers.
    assert not [i for i in found if i.startswith("NODE-IPAM-")]
    rows = [c for c in doc["capacity"] if c["kind"] == "cilium-cluster-pool"]
    assert [(r["cidr"], r["max_nodes"], r["nodes"], r["free"]) for r in rows] == [("10.0.0.0/22", 4, 4, 0)]


def test_prometheus_has_the_remaining_node_cidrs_and_ips_per_pool(incident: Live) -> None:
    result = run("diagnose", *incident.target, "-o", "prometheus", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert (
        'cidrx_capacity_node_cidrs_free{target="k8s:fake",kind="cilium-cluster-pool",name="cluster-pool",cidr="10.0.0.0/22"'
        in text
    )
    assert "cidrx_capacity_pod_ips_free{" in text


@pytest.mark.parametrize("version", ["v2alpha1", "v2"])
def test_multi_pool_reads_the_served_pool_version(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with live(lambda: cilium.multi_pool_incident(version), tmp_path, monkeypatch, pool_versions=(version,)) as estate:
        code, doc = diagnose(estate)
        assert code == 3
        full = ids(doc)["CILIUM-POOL-EXHAUSTED"]
        assert "CiliumNode node-3: requests 20 addresses, holds 0" in full["evidence"]
        row = next(c for c in doc["capacity"] if c["kind"] == "cilium-pool")
        assert (row["name"], row["cidr"], row["max_nodes"], row["nodes"]) == ("default", "10.20.0.0/26", 2, 2)


@pytest.mark.parametrize(("mode", "pointer"), [("eni", "cidrx diagnose --eks"), ("kubernetes", "node IPAM")])
def test_modes_whose_addresses_come_from_elsewhere_point_there(
    mode: str, pointer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = [o for o in cilium.cluster_pool_incident() if o["kind"] != "ConfigMap"] + [cilium.config(mode)]
    with live(lambda: objects, tmp_path, monkeypatch) as estate:
        _, doc = diagnose(estate)
        info = ids(doc)["CILIUM-ADDRESSES-ELSEWHERE"]
        assert info["severity"] == "info" and pointer in info["remediation"]
        assert "CILIUM-CLUSTER-POOL-EXHAUSTED" not in ids(doc)
        refused = run(
            "expand", *estate.target, "--strategy", "cilium-pool", "--plan", "--out", str(tmp_path / "p.json")
        )
        assert refused.exit_code == 2
        assert "no cilium IP pools found" in one_line_error(refused)


def test_a_cluster_without_cilium_config_is_not_cilium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [o for o in cilium.cluster_pool_incident() if o["kind"] != "ConfigMap"]
    with live(lambda: objects, tmp_path, monkeypatch) as estate:
        _, doc = diagnose(estate)
        assert not [i for i in ids(doc) if i.startswith("CILIUM-")]


def test_apply_appends_restarts_and_the_waiting_node_gets_a_cidr_then_rollback_is_refused(incident: Live) -> None:
    doc = plan(incident)
    cidr = doc["basis"]["cidr"]
    # 1 waiting + 5 nodes' worth of /24s, clear of the pool, the Service range and the node networks
    assert cidr == "10.0.8.0/21"
    assert any("ipam.operator.clusterPoolIPv4PodCIDRList" in n and cidr in n for n in doc["notes"])
    applied = run("expand", "--apply", str(incident.tmp / "p.json"), "--yes", *incident.access)
    assert applied.exit_code == 0, applied.output
    assert config_list(incident) == f"10.0.0.0/22 {cidr}"
    node5 = ciliumnode(incident, "node-5")
    assert node5["spec"]["ipam"]["podCIDRs"] == ["10.0.8.0/24"]
    assert "operator-status" not in node5.get("status", {}).get("ipam", {})
    assert isinstance(incident.kube, CiliumKubeServer) and incident.kube.restarts == 1
    _, after = diagnose(incident)
    assert "CILIUM-CLUSTER-POOL-EXHAUSTED" not in ids(after)
    # again: nothing written
    incident.reset_log()
    again = run("expand", "--apply", str(incident.tmp / "p.json"), "--yes", *incident.access)
    assert again.exit_code == 0 and incident.writes() == []
    # no second expansion while the applied one still has room
    second = run("expand", *incident.target, "--strategy", "cilium-pool", "--plan", "--out", "-")
    assert second.exit_code == 2 and "already appended" in one_line_error(second)
    # rollback: node-5 holds 10.0.8.0/24 of the appended range
    refused = run("rollback", str(incident.tmp / "p.json"), "--yes", *incident.access)
    assert refused.exit_code == 4, refused.output
    assert "CiliumNode node-5 holds 10.0.8.0/24" in refused.output
    assert config_list(incident) == f"10.0.0.0/22 {cidr}"


@pytest.mark.parametrize(
    ("cidr", "says"),
    [
        ("10.0.16.0/25", "smaller than one node CIDR (/24)"),
        ("10.100.0.0/16", "overlaps ServiceCIDR (10.96.0.0/12)"),
        ("10.0.2.0/23", "overlaps cluster-pool-ipv4-cidr entry (10.0.0.0/22)"),
    ],
)
def test_a_given_cidr_is_checked(cidr: str, says: str, incident: Live) -> None:
    made = run("expand", *incident.target, "--strategy", "cilium-pool", "--plan", "--cidr", cidr, "--out", "-")
    assert made.exit_code == 2
    assert says in one_line_error(made)


@pytest.mark.parametrize("version", ["v2alpha1", "v2"])
def test_multi_pool_apply_adds_a_cidr_in_the_served_shape_and_rollback_waits_for_it_to_be_free(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with live(lambda: cilium.multi_pool_incident(version), tmp_path, monkeypatch, pool_versions=(version,)) as estate:
        doc = plan(estate)
        cidr = doc["basis"]["cidr"]
        assert doc["steps"][0]["action"] == "cilium.add-pool-cidr"
        applied = run("expand", "--apply", str(tmp_path / "p.json"), "--yes", *estate.access)
        assert applied.exit_code == 0, applied.output
        assert estate.kube is not None
        stored = estate.kube.get("cilium.io", version, "ciliumpodippools", "default")
        assert stored is not None
        items = stored["spec"]["ipv4"]["cidrs"]
        assert items == (
            ["10.20.0.0/26", cidr] if version == "v2alpha1" else [{"cidr": "10.20.0.0/26"}, {"cidr": cidr}]
        )
        node3 = ciliumnode(estate, "node-3")
        assert node3["spec"]["ipam"]["pools"]["allocated"] == [
            {"pool": "default", "cidrs": [f"{cidr.split('/')[0]}/27"]}
        ]
        refused = run("rollback", str(tmp_path / "p.json"), "--yes", *estate.access)
        assert refused.exit_code == 4, refused.output
        # the node gives its block back (it scaled down): now the CIDR can go
        estate.kube.patch("cilium.io", "v2", "ciliumnodes", "node-3", {"spec": {"ipam": {"pools": {"allocated": []}}}})
        undone = run("rollback", str(tmp_path / "p.json"), "--yes", *estate.access)
        assert undone.exit_code == 0, undone.output
        stored = estate.kube.get("cilium.io", version, "ciliumpodippools", "default")
        assert stored is not None and len(stored["spec"]["ipv4"]["cidrs"]) == 1


EXAMPLE = Path(__file__).parents[3] / "examples" / "cilium-cluster-pool.snapshot.json"
MULTI_EXAMPLE = EXAMPLE.with_name("cilium-multi-pool.snapshot.json")


def test_emit_helm_writes_the_values_that_keep_the_appended_range(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    made = run(
        "expand", "--snapshot", str(EXAMPLE), "--strategy", "cilium-pool", "--plan", "--out", str(out), "--emit", "helm"
    )
    assert made.exit_code == 0, made.output
    values = (tmp_path / "plan.helm-values.yaml").read_text()
    assert values.endswith(
        'ipam:\n  operator:\n    clusterPoolIPv4PodCIDRList:\n      - "10.0.0.0/22"\n      - "10.0.8.0/21"\n'
    )
    assert json.loads(out.read_text())["basis"]["cidr"] == "10.0.8.0/21"
    refused = run(
        "expand",
        "--snapshot",
        str(MULTI_EXAMPLE),
        "--strategy",
        "cilium-pool",
        "--plan",
        "--out",
        "-",
        "--emit",
        "helm",
    )
    assert refused.exit_code == 2 and "no Cilium chart value holds" in one_line_error(refused)
    elsewhere = run("expand", "--apply", str(out), "--yes", "--emit", "helm")
    assert elsewhere.exit_code == 2 and "--emit helm only works with --plan" in one_line_error(elsewhere)


def test_the_html_map_draws_the_cluster_pool_with_its_node_cidrs() -> None:
    result = run("diagnose", "--snapshot", str(EXAMPLE), "-o", "html", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    assert "Cilium cluster pool 10.0.0.0/22 (/24 per node)" in result.stdout
    assert "node CIDR 10.0.0.0/24 of node-1" in result.stdout


def test_node_ipam_defers_to_an_ipam_that_ignores_node_podcidr() -> None:
    """A node without Node.spec.podCIDR is node IPAM's finding, unless the cluster's IPAM (Cilium in cluster-pool
    mode) hands out its own ranges; in `kubernetes` mode Cilium uses podCIDR and node IPAM speaks again."""
    from dataclasses import replace

    from cidrx.ipam.cilium.collect import config_from
    from cidrx.ipam.cilium.model import CiliumSection
    from cidrx.ipam.nodeipam.analyze import analyze_node_ipam
    from cidrx.model.kube import KubeNode, KubeSection

    nodes = (KubeNode("a", "z", "t", "", pod_cidrs=("10.244.0.0/24",)), KubeNode("b", "z", "t", ""))
    kube = KubeSection(available=True, nodes=nodes)
    assert [f.id for f in analyze_node_ipam(kube)[1]] == ["NODE-IPAM-NODES-WITHOUT-PODCIDR"]
    pool = config_from(cilium.config())
    assert pool is not None
    assert analyze_node_ipam(replace(kube, cilium=CiliumSection(pool))) == ([], [])
    host_scope = config_from(cilium.config("kubernetes"))
    assert host_scope is not None
    assert analyze_node_ipam(replace(kube, cilium=CiliumSection(host_scope)))[1]


def test_a_writer_racing_the_append_makes_apply_decide_again_and_refuse(incident: Live) -> None:
    """helm upgrade rewrites the list between apply's read and its write: the resourceVersion guard fails the
    patch, apply reads again, sees another list than planned and stops (exit 4) without touching theirs."""
    plan(incident)
    server = incident.kube
    assert server is not None
    theirs = "10.0.0.0/22 172.20.0.0/16"

    def helm_upgrade(record: Any) -> None:
        if record.method == "PATCH" and record.path.endswith("/configmaps/cilium-config"):
            server.on_request = None
            server.put(cilium.config(cidrs=theirs))

    server.on_request = helm_upgrade
    result = run("expand", "--apply", str(incident.tmp / "p.json"), "--yes", *incident.access)
    assert result.exit_code == 4, result.output
    assert "cluster-pool-ipv4-cidr is now '10.0.0.0/22 172.20.0.0/16'" in result.output
    assert config_list(incident) == theirs
    assert isinstance(server, CiliumKubeServer) and server.restarts == 0


@pytest.mark.parametrize(
    ("example", "cloud_ranges"),
    [("gke-demo-ip", ["10.8.0.0/24", "10.4.0.0/22", "10.100.0.0/16"]), ("eks-demo-ip", ["10.0.0.0/16"])],
)
def test_on_a_cloud_target_the_new_range_stays_clear_of_the_clouds_space(example: str, cloud_ranges: list[str]) -> None:
    """Cilium in cluster-pool mode on a cloud's cluster: the cloud's ranges (the address maps' areas, and a VPC's
    own block) are occupied too, not only what the cluster shows."""
    from dataclasses import replace
    from ipaddress import IPv4Network

    from cidrx.ipam.cilium.collect import config_from
    from cidrx.ipam.cilium.model import CiliumSection
    from cidrx.ipam.cilium.strategies import pool as strategy
    from cidrx.model.options import PlanOptions
    from cidrx.model.snapshot import load_snapshot

    snap = load_snapshot(EXAMPLE.with_name(f"{example}.snapshot.json"))
    config = config_from(cilium.config(cidrs="192.168.0.0/24"))
    assert config is not None
    section = CiliumSection(config, operator="kube-system/cilium-operator")
    snap = replace(snap, kube=replace(snap.kube, cilium=section))
    made = strategy.make_plan(snap, PlanOptions(strategy="cilium-pool", add_nodes=1000), "2024-05-01T10:00:00Z")
    net = IPv4Network(made.basis["cidr"])
    assert net.prefixlen == 14
    assert not [c for c in cloud_ranges if net.overlaps(IPv4Network(c))]


def test_a_multi_pool_plan_is_stale_when_another_pool_takes_its_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with live(cilium.multi_pool_incident, tmp_path, monkeypatch) as estate:
        doc = plan(estate)
        cidr = doc["basis"]["cidr"]
        assert estate.kube is not None
        estate.kube.put(cilium.pool("team", [cidr], 27))
        estate.reset_log()
        result = run("expand", "--apply", str(tmp_path / "p.json"), "--yes", *estate.access)
        assert result.exit_code == 4, result.output
        assert f"{cidr} now overlaps CiliumPodIPPool team ({cidr})" in result.output
        assert estate.writes() == []


@pytest.mark.parametrize("provider", ["k8s", "eks", "gke"])
def test_the_cluster_role_allows_every_call_of_a_cilium_collect_and_apply(provider: str, incident: Live) -> None:
    """The ClusterRole `cidrx permissions` writes (derived from the package's reads and its actions) allows every
    request a Cilium cluster's collection makes, by name where it names one; and the apply's writes too."""
    from cidrx.app.permissions import allows, allows_path
    from cidrx.kube.api import KubeApi
    from cidrx.kube.collect import collect_with
    from tests.support.permissions import printed, request_to_rbac

    server = incident.kube
    assert server is not None
    server.reset_log()
    with KubeApi.connect(incident.access[1], None) as api:
        assert collect_with(api, provider=provider).cilium is not None
    rules = printed(provider, "diagnose")["cluster_role"]["rules"]
    seen = set()
    for rec in server.request_log:
        rbac = request_to_rbac(server, rec.method, rec.path)
        if rbac is None:
            assert allows_path(rules, "get", rec.path), rec.path
            continue
        verb, group, resource, name = rbac
        assert allows(rules, verb, group, resource, name), f"{rec.method} {rec.path} ({verb} {resource}.{group} {name})"
        seen.add((verb, resource))
    assert {("get", "configmaps"), ("list", "ciliumnodes"), ("get", "services"), ("list", "servicecidrs")} <= seen
    if provider != "k8s":
        return
    plan(incident)
    server.reset_log()
    applied = run("expand", "--apply", str(incident.tmp / "p.json"), "--yes", *incident.access)
    assert applied.exit_code == 0, applied.output
    rules = printed(provider, "apply")["cluster_role"]["rules"]
    for rec in server.request_log:
        rbac = request_to_rbac(server, rec.method, rec.path)
        if rbac is not None:
            verb, group, resource, name = rbac
            assert allows(rules, verb, group, resource, name), f"{rec.method} {rec.path}"


def test_a_rollback_stopped_between_removal_and_restart_restarts_when_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with live(cilium.cluster_pool_full, tmp_path, monkeypatch) as estate:
        doc = plan(estate)
        applied = run("expand", "--apply", str(tmp_path / "p.json"), "--yes", *estate.access)
        assert applied.exit_code == 0, applied.output
        server = estate.kube
        assert isinstance(server, CiliumKubeServer) and server.restarts == 1
        estate.interrupt_after("kube", "PATCH", "/configmaps/cilium-config")
        stopped = run("rollback", str(tmp_path / "p.json"), "--yes", *estate.access)
        assert stopped.exit_code == 5, stopped.output
        assert config_list(estate) == "10.0.0.0/22" and server.restarts == 1
        resumed = run("rollback", str(tmp_path / "p.json"), "--yes", *estate.access)
        assert resumed.exit_code == 0, resumed.output
        assert server.restarts == 2
        deployment = server.get("apps", "v1", "deployments", "cilium-operator", "kube-system")
        assert deployment is not None
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["cidrx.io/plan"] == f"{doc['digest'][:16]}-rollback"
