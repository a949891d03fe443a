"""GKE as organisations run it, end to end through the CLI against the loopback GCP fake (real google-cloud
clients): a cluster in a service project on a Shared VPC network of a host project, a network full of routes
(on-premises, VPN, GKE node routes) and a routes-based cluster next to it (tests/support/estates/gke_shared_vpc.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from ipaddress import ip_network
from pathlib import Path

import pytest

from cidrx.errors import CloudError
from cidrx.model.plan import load_plan
from cidrx.model.snapshot import load_snapshot, save_snapshot
from cidrx.providers.gke.api import GkeApi
from cidrx.providers.gke.collect.collect import collect_gke
from cidrx.providers.gke.model import Route, RoutesCluster
from tests.support.cli import one_line_error, run
from tests.support.estates import gke_shared_vpc as se
from tests.support.fakes.gcp_server import FakeGcp

TARGET = ["--gke", "--project", se.SERVICE, "--location", se.LOCATION, "--cluster", se.CLUSTER, "--no-kube"]
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gke-shared-vpc.snapshot.json"
LEGACY_TARGET = ["--gke", "--project", se.HOST, "--location", se.LEGACY_LOCATION, "--cluster", se.LEGACY, "--no-kube"]


@pytest.fixture
def estate(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGcp]:
    with se.shared_vpc_estate(monkeypatch) as fake:
        yield fake


def host_ranges(fake: FakeGcp) -> dict[str, str]:
    subnet = fake.subnet(se.HOST, se.REGION, se.SUBNET)
    assert subnet is not None
    return {r["rangeName"]: r["ipCidrRange"] for r in subnet.get("secondaryIpRanges", [])}


def writes(fake: FakeGcp) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.request_log if r.method in ("POST", "PATCH", "PUT", "DELETE")]


def test_collect_reads_the_network_from_the_host_project(estate: FakeGcp) -> None:
    gke = collect_gke(GkeApi(se.SERVICE, se.LOCATION), se.CLUSTER)
    assert (gke.project, gke.network_project, gke.shared_vpc) == (se.SERVICE, se.HOST, True)
    assert gke.subnet.name == se.SUBNET and gke.subnet.fingerprint == se.SUBNET_FINGERPRINT
    assert {s.name for s in gke.subnets} == {se.SUBNET, se.LEGACY_SUBNET}
    # Every routed range, but neither the default route nor the subnets' own local routes.
    assert {r.dest_range for r in gke.routes or ()} == {
        se.ONPREM_ROUTE[1],
        *(c for _, c in se.VPN_ROUTES),
        *se.LEGACY_NODE_BLOCKS,
    }
    assert Route("10.16.0.0/12", "to-onprem", "ip") in (gke.routes or ())
    assert gke.routes_clusters == (RoutesCluster(se.HOST, se.LEGACY_LOCATION, se.LEGACY, se.LEGACY_CIDR),)
    compute = [r.path for r in estate.request_log if r.path.startswith("/compute/")]
    # The network is read in the host project; what holds addresses of its subnet in both (GKE nodes and
    # internal load balancers live in the service project).
    node_reads = ("/aggregated/instances", "/forwardingRules", "/addresses")
    assert compute and all(f"/projects/{se.HOST}/" in p for p in compute if not p.endswith(node_reads))
    assert {p for p in compute if p.endswith(node_reads) and f"/projects/{se.SERVICE}/" in p}
    listed = {r.path for r in estate.request_log if r.method_id == "container.projects.locations.clusters.list"}
    assert listed == {f"/v1/projects/{p}/locations/-/clusters" for p in (se.HOST, se.SERVICE)}


def test_shared_vpc_incident_diagnose_plan_apply_and_reapply(estate: FakeGcp, tmp_path: Path) -> None:
    diagnosed = run("diagnose", *TARGET, "-o", "json")
    assert diagnosed.exit_code == 3, diagnosed.output
    assert "GKE-POD-RANGE-EXHAUSTED" in {f["id"] for f in json.loads(diagnosed.stdout)["findings"]}

    plan_path = tmp_path / "plan.json"
    made = run("expand", *TARGET, "--plan", "--out", str(plan_path), "--emit", "terraform")
    assert made.exit_code == 0, made.output
    plan = load_plan(plan_path)
    cidr = ip_network(plan.basis["cidr"])
    assert plan.basis["network_project"] == se.HOST
    for taken in (*se.ROUTED, se.POD_CIDR, se.SERVICES_CIDR, se.SUBNET_CIDR, se.LEGACY_MIXED_RANGE[1]):
        assert not cidr.overlaps(ip_network(taken)), (cidr, taken)
    subnet_step, pool_step = plan.steps
    assert subnet_step.params["project"] == se.HOST and pool_step.params["project"] == se.SERVICE
    assert f"Shared VPC host project {se.HOST}" in subnet_step.description
    assert "network admin" in subnet_step.description
    tf = (tmp_path / "plan.tf").read_text()
    host_part, service_part = tf.split("===== Part 2 of 2")
    assert f"Part 1 of 2: Shared VPC HOST project {se.HOST}" in host_part and "secondary_ip_range" in host_part
    assert f"SERVICE project {se.SERVICE}" in service_part and "google_container_node_pool" in service_part

    estate.reset_log()
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 0, applied.output
    patch = next(r for r in estate.request_log if r.method == "PATCH")
    assert patch.path == f"/compute/v1/projects/{se.HOST}/regions/{se.REGION}/subnetworks/{se.SUBNET}"
    assert patch.body["fingerprint"] == se.SUBNET_FINGERPRINT
    assert host_ranges(estate) == {
        se.POD_RANGE: se.POD_CIDR,
        se.SERVICES_RANGE: se.SERVICES_CIDR,
        plan.basis["range_name"]: str(cidr),
    }
    pool = estate.node_pool(se.SERVICE, se.LOCATION, se.CLUSTER, plan.basis["node_pool_name"])
    assert pool is not None and pool["networkConfig"]["podRange"] == plan.basis["range_name"]
    assert pool["config"]["serviceAccount"] == f"gke-nodes@{se.SERVICE}.iam.gserviceaccount.com"
    assert pool["config"]["taints"] == [{"key": "dedicated", "value": "shop", "effect": "NO_SCHEDULE"}]
    assert pool["config"]["labels"] == {"team": "shop"}
    template = estate.node_pool(se.SERVICE, se.LOCATION, se.CLUSTER, se.POOL)
    assert template is not None and pool["config"]["accelerators"] == template["config"]["accelerators"]
    assert pool["config"]["accelerators"][0]["acceleratorType"] == "nvidia-tesla-t4"
    assert not [p for p in writes(estate) if f"/projects/{se.SERVICE}/" in p and "/compute/" in p]

    estate.reset_log()
    again = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert again.exit_code == 0, again.output
    assert writes(estate) == []


def test_a_cidr_inside_a_broader_route_is_refused_by_cidrx_policy(estate: FakeGcp, tmp_path: Path) -> None:
    out = str(tmp_path / "p.json")
    inside = run("expand", *TARGET, "--plan", "--cidr", "10.17.0.0/20", "--out", out)
    assert inside.exit_code == 2, inside.output
    line = one_line_error(inside)
    assert "to-onprem" in line and "GCE would accept it" in line and "cidrx refuses" in line
    containing = run("expand", *TARGET, "--plan", "--cidr", "10.12.0.0/20", "--out", out)
    assert containing.exit_code == 2
    assert "GCE would accept" not in containing.output  # a range over a route: GCE refuses it too


def test_the_fake_refuses_a_range_containing_a_route_but_not_one_inside(estate: FakeGcp) -> None:
    api = GkeApi(se.SERVICE, se.LOCATION)
    subnet = api.get_subnetwork(se.REGION, se.SUBNET, se.HOST)
    ranges = [{"rangeName": r["rangeName"], "ipCidrRange": r["ipCidrRange"]} for r in subnet["secondaryIpRanges"]]
    over = [*ranges, {"rangeName": "over-nodes", "ipCidrRange": "10.12.0.0/23"}]
    with pytest.raises(CloudError, match="gke-legacy-8e1d3c2a-0000"):
        api.patch_subnetwork_secondary_ranges(se.REGION, se.SUBNET, subnet["fingerprint"], over, se.HOST)
    inside = [*ranges, {"rangeName": "inside-onprem", "ipCidrRange": "10.17.0.0/20"}]
    op = api.patch_subnetwork_secondary_ranges(se.REGION, se.SUBNET, subnet["fingerprint"], inside, se.HOST)
    assert op["project"] == se.HOST
    estate.finish_operations()
    assert host_ranges(estate)["inside-onprem"] == "10.17.0.0/20"


def test_a_routes_based_cluster_reports_capacity_and_expand_refuses(estate: FakeGcp, tmp_path: Path) -> None:
    diagnosed = run("diagnose", *LEGACY_TARGET, "-o", "json")
    assert diagnosed.exit_code in (0, 3), diagnosed.output
    d = json.loads(diagnosed.stdout)
    row = next(c for c in d["capacity"] if c["kind"] == "pod-range" and c["cidr"] == se.LEGACY_CIDR)
    # A /14 of /24 node blocks less the services /20 GKE takes from its end: gcloud's "at most 1008 node(s)".
    assert (row["max_nodes"], row["nodes"]) == (1008, 3)  # nodes counted from the GKE node routes
    assert "GKE-ROUTES-BASED" in {f["id"] for f in d["findings"]}
    # The VPC-native pool on its own range stays a range of its own, not folded into the cluster CIDR.
    assert any(c["kind"] == "pod-range" and c["cidr"] == se.LEGACY_MIXED_RANGE[1] for c in d["capacity"])

    refused = run("expand", *LEGACY_TARGET, "--plan", "--out", str(tmp_path / "p.json"))
    assert refused.exit_code == 2, refused.output
    line = one_line_error(refused)
    assert "routes-based" in line and se.LEGACY_CIDR in line
    assert "VPC-native" in refused.stderr and "migrate" in refused.stderr
    assert not (tmp_path / "p.json").exists()


def test_example_snapshot_is_the_collected_shared_vpc(estate: FakeGcp, tmp_path: Path) -> None:
    """examples/gke-shared-vpc.snapshot.json is this estate as collected (CIDRX_UPDATE_EXAMPLES=1 rewrites
    it), and works offline: diagnose exits 3, the plan patches the host project and creates the pool in
    the service project."""
    snap = se.shared_vpc_snapshot(collect_gke(GkeApi(se.SERVICE, se.LOCATION), se.CLUSTER))
    if os.environ.get("CIDRX_UPDATE_EXAMPLES") == "1":
        save_snapshot(snap, EXAMPLE)
    assert load_snapshot(EXAMPLE) == snap
    diagnosed = run("diagnose", "--snapshot", str(EXAMPLE), "-o", "json")
    assert diagnosed.exit_code == 3, diagnosed.output
    out = tmp_path / "plan.json"
    assert run("expand", "--snapshot", str(EXAMPLE), "--plan", "--out", str(out)).exit_code == 0
    steps = load_plan(out).steps
    assert [s.params["project"] for s in steps] == [se.HOST, se.SERVICE]
