"""Tests of the loopback GCP fake, driven by the real google-cloud-container and google-cloud-compute clients.

They pin down what the production GKE code will rely on: the clients reach the fake over http:// with
anonymous credentials, operations are polled through the fake (including compute's ExtendedOperation
poller), the subnet fingerprint protocol (412 on a stale one), aggregated lists with warning-only scopes,
and that anything the real API would reject is caught by the discovery-document validation.
"""

# google-auth and google-api-core are untyped (AnonymousCredentials, ExtendedOperation.result/done).
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.api_core.retry import Retry
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1, container_v1

from tests.support.fakes.gcp_discovery import discovery_index
from tests.support.fakes.gcp_server import (
    DEMO_PROJECT,
    DEMO_REGION,
    FakeGcp,
    RequestRecord,
    compile_filter,
    compute_client,
    pod_block_prefix,
    seed_demo_ip,
)

P, R = DEMO_PROJECT, DEMO_REGION
CLUSTER = f"projects/{P}/locations/{R}/clusters/demo-ip"
JSON = dict[str, Any]


@pytest.fixture
def gcp() -> Iterator[FakeGcp]:
    """The fake with the incident's GKE world; fails the test at teardown on any violation or fake error."""
    with FakeGcp() as server:
        seed_demo_ip(server)
        yield server
    server.check()


@pytest.fixture
def gke(gcp: FakeGcp) -> container_v1.ClusterManagerClient:
    return container_v1.ClusterManagerClient(
        credentials=AnonymousCredentials(), transport="rest", client_options={"api_endpoint": gcp.url}
    )


@pytest.fixture
def subnets(gcp: FakeGcp) -> compute_v1.SubnetworksClient:
    return compute_client(compute_v1.SubnetworksClient, gcp)


def raw(gcp: FakeGcp, method: str, path: str, body: Any = None) -> tuple[int, JSON]:
    """A request without any client library, for things the clients cannot send."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(gcp.url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return int(resp.status), json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def stored(gcp: FakeGcp, name: str = "cluster") -> JSON:
    """The subnet as the fake stores it (the test's view of the cloud, not through a client)."""
    subnet = gcp.subnet(P, R, name)
    assert subnet is not None
    return subnet


def add_pod_range_2(gcp: FakeGcp) -> None:
    ranges = stored(gcp)["secondaryIpRanges"]
    gcp.update_subnet(
        P, R, "cluster", {"secondaryIpRanges": [*ranges, {"rangeName": "pod-range-2", "ipCidrRange": "192.168.0.0/22"}]}
    )


# ---- container ----------------------------------------------------------------------------------


def test_get_and_list_clusters_and_node_pools(gcp: FakeGcp, gke: container_v1.ClusterManagerClient) -> None:
    cluster = gke.get_cluster(name=CLUSTER)
    assert cluster.status == container_v1.Cluster.Status.RUNNING
    assert cluster.ip_allocation_policy.cluster_secondary_range_name == "pod-range"
    assert cluster.ip_allocation_policy.default_pod_ipv4_range_utilization == 1.0
    assert cluster.network_config.subnetwork == f"projects/{P}/regions/{R}/subnetworks/cluster"
    assert [(p.name, p.pod_ipv4_cidr_size, p.network_config.pod_range) for p in cluster.node_pools] == [
        ("original-nodepool", 27, "pod-range"),
        ("nodepool-2", 27, "pod-range"),
    ]

    assert [c.name for c in gke.list_clusters(parent=f"projects/{P}/locations/{R}").clusters] == ["demo-ip"]
    assert [c.name for c in gke.list_clusters(parent=f"projects/{P}/locations/-").clusters] == ["demo-ip"]
    assert gke.list_clusters(parent=f"projects/{P}/locations/us-central1").clusters == []
    pools = gke.list_node_pools(parent=CLUSTER).node_pools
    assert [p.name for p in pools] == ["original-nodepool", "nodepool-2"]
    pool = gke.get_node_pool(name=f"{CLUSTER}/nodePools/original-nodepool")
    assert pool.max_pods_constraint.max_pods_per_node == 16
    assert pool.network_config.pod_ipv4_cidr_block == "10.0.0.0/26"
    assert pool.autoscaling.max_node_count == 7

    with pytest.raises(gexc.NotFound):
        gke.get_cluster(name=f"projects/{P}/locations/{R}/clusters/nope", retry=None)
    clusters = "container.projects.locations.clusters"
    assert [r.method_id for r in gcp.request_log] == [
        f"{clusters}.get",
        *[f"{clusters}.list"] * 3,
        f"{clusters}.nodePools.list",
        f"{clusters}.nodePools.get",
        f"{clusters}.get",
    ]
    assert gcp.count("GET", "/clusters/demo-ip/nodePools") == 2


def test_create_node_pool_on_pod_range_2_then_poll_operation(
    gcp: FakeGcp, gke: container_v1.ClusterManagerClient
) -> None:
    add_pod_range_2(gcp)
    op = gke.create_node_pool(
        parent=CLUSTER,
        node_pool=container_v1.NodePool(
            name="new-nodepool",
            initial_node_count=1,
            max_pods_constraint=container_v1.MaxPodsConstraint(max_pods_per_node=32),
            network_config=container_v1.NodeNetworkConfig(pod_range="pod-range-2"),
        ),
    )
    assert op.status == container_v1.Operation.Status.RUNNING
    assert op.operation_type == container_v1.Operation.Type.CREATE_NODE_POOL
    sent = gcp.requests("POST", "/nodePools")[-1].body
    assert sent["nodePool"]["networkConfig"] == {"podRange": "pod-range-2"}

    # Until the operation is DONE the pool is provisioning and the cluster refuses another mutation.
    assert (gcp.node_pool(P, R, "demo-ip", "new-nodepool") or {}).get("status") == "PROVISIONING"
    assert gke.get_cluster(name=CLUSTER).status == container_v1.Cluster.Status.RECONCILING
    with pytest.raises(gexc.BadRequest, match="incompatible operation"):
        gke.create_node_pool(parent=CLUSTER, node_pool=container_v1.NodePool(name="other", initial_node_count=1))

    done = gke.get_operation(name=f"projects/{P}/locations/{R}/operations/{op.name}")
    assert done.status == container_v1.Operation.Status.DONE
    assert done.target_link.endswith("/clusters/demo-ip/nodePools/new-nodepool")
    pool = gke.get_node_pool(name=f"{CLUSTER}/nodePools/new-nodepool")
    assert pool.status == container_v1.NodePool.Status.RUNNING
    assert pool.pod_ipv4_cidr_size == 26  # 32 pods per node -> /26 blocks: 16 nodes fit in the /22
    assert pool.network_config.pod_ipv4_cidr_block == "192.168.0.0/22"
    assert gke.get_cluster(name=CLUSTER).status == container_v1.Cluster.Status.RUNNING


def test_create_node_pool_errors(gcp: FakeGcp, gke: container_v1.ClusterManagerClient) -> None:
    with pytest.raises(gexc.BadRequest, match="pod-range-2"):  # the subnet has no such range yet
        gke.create_node_pool(
            parent=CLUSTER,
            node_pool=container_v1.NodePool(
                name="new-nodepool", network_config=container_v1.NodeNetworkConfig(pod_range="pod-range-2")
            ),
        )
    with pytest.raises(gexc.Conflict):
        gke.create_node_pool(parent=CLUSTER, node_pool=container_v1.NodePool(name="nodepool-2"))
    assert gcp.node_pool(P, R, "demo-ip", "new-nodepool") is None


def test_failed_node_pool_operation_leaves_pool_in_error(gcp: FakeGcp, gke: container_v1.ClusterManagerClient) -> None:
    gcp.inject_operation_error(400, "IP_SPACE_EXHAUSTED: no room in pod-range", path_contains="/nodePools")
    op = gke.create_node_pool(parent=CLUSTER, node_pool=container_v1.NodePool(name="np3", initial_node_count=1))
    done = gke.get_operation(name=f"projects/{P}/locations/{R}/operations/{op.name}")
    assert done.status == container_v1.Operation.Status.DONE
    assert done.error.code == 3  # INVALID_ARGUMENT
    assert "IP_SPACE_EXHAUSTED" in done.status_message
    assert gke.get_node_pool(name=f"{CLUSTER}/nodePools/np3").status == container_v1.NodePool.Status.ERROR


def test_update_cluster_additional_pod_ranges(gcp: FakeGcp, gke: container_v1.ClusterManagerClient) -> None:
    add_pod_range_2(gcp)
    op = gke.update_cluster(
        name=CLUSTER,
        update=container_v1.ClusterUpdate(
            additional_pod_ranges_config=container_v1.AdditionalPodRangesConfig(pod_range_names=["pod-range-2"])
        ),
    )
    assert gcp.requests("PUT", "/clusters/demo-ip")[-1].body == {
        "update": {"additionalPodRangesConfig": {"podRangeNames": ["pod-range-2"]}}
    }
    # The change shows only once the operation is DONE.
    policy = (gcp.cluster(P, R, "demo-ip") or {})["ipAllocationPolicy"]
    assert "additionalPodRangesConfig" not in policy
    assert gcp.finish_operations() == 1
    assert gke.get_operation(name=f"projects/{P}/locations/{R}/operations/{op.name}").status.name == "DONE"
    cfg = gke.get_cluster(name=CLUSTER).ip_allocation_policy.additional_pod_ranges_config
    assert list(cfg.pod_range_names) == ["pod-range-2"]
    assert [(i.range_name, i.utilization) for i in cfg.pod_range_info] == [("pod-range-2", 0.0)]

    with pytest.raises(gexc.BadRequest, match="already used"):
        gke.update_cluster(
            name=CLUSTER,
            update=container_v1.ClusterUpdate(
                additional_pod_ranges_config=container_v1.AdditionalPodRangesConfig(pod_range_names=["pod-range-2"])
            ),
        )
    with pytest.raises(gexc.BadRequest, match="not found"):
        gke.update_cluster(
            name=CLUSTER,
            update=container_v1.ClusterUpdate(
                additional_pod_ranges_config=container_v1.AdditionalPodRangesConfig(pod_range_names=["nope"])
            ),
        )


# ---- compute: subnets ---------------------------------------------------------------------------


def test_subnet_patch_with_current_fingerprint_adds_a_range(
    gcp: FakeGcp, subnets: compute_v1.SubnetworksClient
) -> None:
    subnet = subnets.get(project=P, region=R, subnetwork="cluster")
    before = subnet.fingerprint
    ranges = [
        *subnet.secondary_ip_ranges,
        compute_v1.SubnetworkSecondaryRange(range_name="pod-range-2", ip_cidr_range="192.168.0.0/22"),
    ]
    op = subnets.patch_unary(
        project=P,
        region=R,
        subnetwork="cluster",
        subnetwork_resource=compute_v1.Subnetwork(fingerprint=before, secondary_ip_ranges=ranges),
    )
    assert op.status == compute_v1.Operation.Status.RUNNING
    sent = gcp.requests("PATCH", "/subnetworks/cluster")[-1].body
    assert sent["fingerprint"] == before
    assert [r["rangeName"] for r in sent["secondaryIpRanges"]] == ["pod-range", "svc-range", "pod-range-2"]
    assert len(stored(gcp)["secondaryIpRanges"]) == 2  # not DONE yet

    ops = compute_v1.RegionOperationsClient(
        credentials=AnonymousCredentials(), client_options={"api_endpoint": gcp.url}
    )
    assert ops.get(project=P, region=R, operation=op.name).status == compute_v1.Operation.Status.DONE
    after = subnets.get(project=P, region=R, subnetwork="cluster")
    assert [(r.range_name, r.ip_cidr_range) for r in after.secondary_ip_ranges] == [
        ("pod-range", "10.0.0.0/26"),
        ("svc-range", "172.16.0.0/20"),
        ("pod-range-2", "192.168.0.0/22"),
    ]
    assert after.fingerprint != before


def test_operations_finish_after_op_polls_gets_or_one_wait(gcp: FakeGcp, subnets: compute_v1.SubnetworksClient) -> None:
    ops = compute_v1.RegionOperationsClient(
        credentials=AnonymousCredentials(), client_options={"api_endpoint": gcp.url}
    )
    gcp.op_polls = 3
    first = subnets.patch_unary(
        project=P,
        region=R,
        subnetwork="cluster",
        subnetwork_resource=compute_v1.Subnetwork(fingerprint=stored(gcp)["fingerprint"], description="a"),
    )
    statuses = [ops.get(project=P, region=R, operation=first.name).status.name for _ in range(3)]
    assert statuses == ["RUNNING", "RUNNING", "DONE"]
    assert stored(gcp)["description"] == "a"

    second = subnets.patch_unary(
        project=P,
        region=R,
        subnetwork="cluster",
        subnetwork_resource=compute_v1.Subnetwork(fingerprint=stored(gcp)["fingerprint"], description="b"),
    )
    with pytest.raises(gexc.BadRequest, match="not ready"):  # GCE refuses a second change while one runs
        subnets.patch_unary(
            project=P,
            region=R,
            subnetwork="cluster",
            subnetwork_resource=compute_v1.Subnetwork(fingerprint=stored(gcp)["fingerprint"], description="c"),
        )
    assert ops.wait(project=P, region=R, operation=second.name).status == compute_v1.Operation.Status.DONE
    assert stored(gcp)["description"] == "b"

    gcp.op_polls = 0
    third = subnets.patch_unary(
        project=P,
        region=R,
        subnetwork="cluster",
        subnetwork_resource=compute_v1.Subnetwork(fingerprint=stored(gcp)["fingerprint"], description="c"),
    )
    assert third.status == compute_v1.Operation.Status.DONE
    assert gcp.count("POST", "/wait") == 1


def test_subnet_patch_with_stale_fingerprint_is_412(gcp: FakeGcp, subnets: compute_v1.SubnetworksClient) -> None:
    subnet = subnets.get(project=P, region=R, subnetwork="cluster")

    def concurrent_writer(record: RequestRecord) -> None:  # someone else edits the subnet in between
        if record.method == "PATCH":
            gcp.update_subnet(P, R, "cluster", {"description": "edited by someone else"})

    gcp.on_request = concurrent_writer
    ranges = [
        *subnet.secondary_ip_ranges,
        compute_v1.SubnetworkSecondaryRange(range_name="pod-range-2", ip_cidr_range="192.168.0.0/22"),
    ]
    with pytest.raises(gexc.PreconditionFailed) as caught:
        subnets.patch(
            project=P,
            region=R,
            subnetwork="cluster",
            subnetwork_resource=compute_v1.Subnetwork(fingerprint=subnet.fingerprint, secondary_ip_ranges=ranges),
        )
    assert caught.value.code == 412
    assert caught.value.errors[0]["reason"] == "conditionNotMet"
    assert [r["rangeName"] for r in stored(gcp)["secondaryIpRanges"]] == ["pod-range", "svc-range"]
    assert gcp.operations("compute") == []


def test_subnet_patch_rejections(gcp: FakeGcp, subnets: compute_v1.SubnetworksClient) -> None:
    gcp.add_subnet(P, "us-central1", {"name": "other", "network": "demo-ip", "ipCidrRange": "192.168.2.0/24"})
    subnet = subnets.get(project=P, region=R, subnetwork="cluster")
    kept = list(subnet.secondary_ip_ranges)

    def patch(ranges: list[compute_v1.SubnetworkSecondaryRange], fingerprint: str = subnet.fingerprint) -> None:
        subnets.patch_unary(
            project=P,
            region=R,
            subnetwork="cluster",
            subnetwork_resource=compute_v1.Subnetwork(fingerprint=fingerprint, secondary_ip_ranges=ranges),
        )

    new = compute_v1.SubnetworkSecondaryRange
    with pytest.raises(gexc.BadRequest, match="subnetwork 'other' in region 'us-central1'"):
        patch([*kept, new(range_name="pod-range-2", ip_cidr_range="192.168.0.0/22")])  # overlaps another region
    with pytest.raises(gexc.BadRequest, match="primary range"):
        patch([*kept, new(range_name="pod-range-2", ip_cidr_range="10.1.128.0/20")])
    with pytest.raises(gexc.BadRequest, match="reserved"):
        patch([*kept, new(range_name="pod-range-2", ip_cidr_range="169.254.0.0/20")])
    with pytest.raises(gexc.BadRequest, match="Invalid IPCidrRange"):
        patch([*kept, new(range_name="pod-range-2", ip_cidr_range="100.64.0.1/20")])  # host bits set
    with pytest.raises(gexc.BadRequest) as in_use:
        patch([kept[1]])  # drops pod-range, which the cluster uses
    assert in_use.value.errors[0]["reason"] == "resourceInUseByAnotherResource"
    gcp.secondary_range_limit = 2
    with pytest.raises(gexc.BadRequest, match="at most 2"):
        patch([*kept, new(range_name="pod-range-2", ip_cidr_range="100.64.0.0/20")])
    with pytest.raises(gexc.BadRequest, match="fingerprint"):
        patch(kept, fingerprint="")
    assert stored(gcp)["fingerprint"] == subnet.fingerprint


def test_list_and_aggregated_list_paginate_and_skip_warning_scopes(
    gcp: FakeGcp, subnets: compute_v1.SubnetworksClient
) -> None:
    gcp.add_subnet(P, R, {"name": "nodes-b", "network": "demo-ip", "ipCidrRange": "10.2.0.0/24"})
    gcp.add_subnet(P, "us-central1", {"name": "us", "network": "demo-ip", "ipCidrRange": "10.3.0.0/24"})

    names = [s.name for s in subnets.list(request={"project": P, "region": R, "max_results": 1})]
    assert names == ["cluster", "nodes-b"]
    assert gcp.count("GET", f"/regions/{R}/subnetworks") == 2

    pager = subnets.aggregated_list(request={"project": P, "max_results": 2})
    found = sorted((scope, s.name) for scope, scoped in pager for s in scoped.subnetworks)
    assert found == [(f"regions/{R}", "cluster"), (f"regions/{R}", "nodes-b"), ("regions/us-central1", "us")]
    pages = [r for r in gcp.requests("GET", "/aggregated/subnetworks")]
    assert len(pages) == 2 and pages[1].query["pageToken"]

    # The raw first page: every region appears, those without subnets on this page as warning-only scopes.
    status, first = raw(gcp, "GET", f"/compute/v1/projects/{P}/aggregated/subnetworks?maxResults=2")
    assert status == 200
    assert first["items"]["regions/europe-west1"] == {
        "warning": {
            "code": "NO_RESULTS_ON_PAGE",
            "message": "There are no results for scope 'regions/europe-west1' on this page.",
            "data": [{"key": "scope", "value": "regions/europe-west1"}],
        }
    }
    assert "warning" in first["items"]["regions/us-central1"]  # its subnet is on page 2
    assert [s["name"] for s in first["items"][f"regions/{R}"]["subnetworks"]] == ["cluster", "nodes-b"]


# ---- compute: network, peering, PSA -------------------------------------------------------------


def test_network_and_peering_routes(gcp: FakeGcp) -> None:
    psa = "servicenetworking-googleapis-com"
    gcp.add_peering_route(P, "demo-ip", psa, {"destRange": "10.10.0.0/24"})
    gcp.add_peering_route(P, "demo-ip", psa, {"destRange": "10.11.0.0/24"})
    gcp.add_peering_route(P, "demo-ip", psa, {"destRange": "10.1.0.0/16"}, direction="OUTGOING")
    networks = compute_client(compute_v1.NetworksClient, gcp)

    network = networks.get(project=P, network="demo-ip")
    assert [p.name for p in network.peerings] == [psa]
    assert network.subnetworks == [
        f"https://www.googleapis.com/compute/v1/projects/{P}/regions/{R}/subnetworks/cluster"
    ]
    routes = networks.list_peering_routes(
        request={
            "project": P,
            "network": "demo-ip",
            "direction": "INCOMING",
            "peering_name": psa,
            "region": R,
            "max_results": 1,
        }
    )
    assert [(r.dest_range, r.type_, r.imported) for r in routes] == [
        ("10.10.0.0/24", "SUBNET_PEERING_ROUTE", True),
        ("10.11.0.0/24", "SUBNET_PEERING_ROUTE", True),
    ]
    query = gcp.requests("GET", "/listPeeringRoutes")[0].query
    assert query["direction"] == "INCOMING" and query["peeringName"] == psa and query["region"] == R


def test_global_addresses_filter_vpc_peering(gcp: FakeGcp) -> None:
    gcp.add_global_address(
        P,
        {
            "name": "google-managed-services-demo-ip",
            "purpose": "VPC_PEERING",
            "address": "10.20.0.0",
            "prefixLength": 16,
            "network": "demo-ip",
        },
    )
    gcp.add_global_address(P, {"name": "lb-ip", "address": "34.1.2.3", "addressType": "EXTERNAL"})
    addresses = compute_client(compute_v1.GlobalAddressesClient, gcp)
    for expr in (
        'purpose="VPC_PEERING"',
        'purpose = "VPC_PEERING"',
        "(purpose = VPC_PEERING) (addressType = INTERNAL)",
    ):
        found = list(addresses.list(request={"project": P, "filter": expr}))
        assert [(a.name, a.address, a.prefix_length) for a in found] == [
            ("google-managed-services-demo-ip", "10.20.0.0", 16)
        ]
    assert len(list(addresses.list(project=P))) == 2
    assert gcp.requests("GET", "/global/addresses")[0].query["filter"] == 'purpose="VPC_PEERING"'

    # A PSA range also blocks a new secondary range (GCE checks every range routed in the network).
    subnets = compute_client(compute_v1.SubnetworksClient, gcp)
    subnet = subnets.get(project=P, region=R, subnetwork="cluster")
    ranges = [
        *subnet.secondary_ip_ranges,
        compute_v1.SubnetworkSecondaryRange(range_name="pod-range-2", ip_cidr_range="10.20.4.0/22"),
    ]
    with pytest.raises(gexc.BadRequest, match="allocated range 'google-managed-services-demo-ip'"):
        subnets.patch(
            project=P,
            region=R,
            subnetwork="cluster",
            subnetwork_resource=compute_v1.Subnetwork(fingerprint=subnet.fingerprint, secondary_ip_ranges=ranges),
        )


# ---- compute: ExtendedOperation -----------------------------------------------------------------


def test_extended_operation_result_polls_the_fake(gcp: FakeGcp, subnets: compute_v1.SubnetworksClient) -> None:
    subnet = subnets.get(project=P, region=R, subnetwork="cluster")
    ranges = [
        *subnet.secondary_ip_ranges,
        compute_v1.SubnetworkSecondaryRange(range_name="pod-range-2", ip_cidr_range="192.168.0.0/22"),
    ]
    op = subnets.patch(
        project=P,
        region=R,
        subnetwork="cluster",
        subnetwork_resource=compute_v1.Subnetwork(fingerprint=subnet.fingerprint, secondary_ip_ranges=ranges),
    )
    assert op.result(timeout=10) is None
    assert op.done()
    assert gcp.count("GET", f"/regions/{R}/operations/{op.name}") == 1
    assert "pod-range-2" in [r["rangeName"] for r in stored(gcp)["secondaryIpRanges"]]


def test_unwired_compute_client_would_poll_the_real_endpoint(gcp: FakeGcp) -> None:
    """Why compute_client() exists: the default poller ignores the endpoint override."""
    plain = compute_v1.SubnetworksClient(credentials=AnonymousCredentials(), client_options={"api_endpoint": gcp.url})
    assert plain._transport._host == gcp.url
    assert plain._transport._region_operations_client._transport._host == "https://compute.googleapis.com"
    wired = compute_client(compute_v1.SubnetworksClient, gcp)
    assert wired._transport._region_operations_client._transport._host == gcp.url


def test_extended_operation_error_raises(gcp: FakeGcp, subnets: compute_v1.SubnetworksClient) -> None:
    subnet = subnets.get(project=P, region=R, subnetwork="cluster")
    gcp.inject_operation_error(409, "The subnetwork is being updated by another operation", method="PATCH")
    op = subnets.patch(
        project=P,
        region=R,
        subnetwork="cluster",
        subnetwork_resource=compute_v1.Subnetwork(fingerprint=subnet.fingerprint, description="x"),
    )
    with pytest.raises(gexc.Conflict):
        op.result(timeout=10)
    assert op.http_error_status_code == 409
    assert stored(gcp)["fingerprint"] == subnet.fingerprint


def test_global_address_insert_polls_global_operations(gcp: FakeGcp) -> None:
    addresses = compute_client(compute_v1.GlobalAddressesClient, gcp)
    op = addresses.insert(
        project=P,
        address_resource=compute_v1.Address(
            name="psa-range",
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            address="10.30.0.0",
            prefix_length=20,
            network=f"projects/{P}/global/networks/demo-ip",
        ),
    )
    assert (gcp.global_address(P, "psa-range") or {}).get("status") == "RESERVING"
    op.result(timeout=10)
    assert gcp.count("GET", "/global/operations/") == 1
    assert addresses.get(project=P, address="psa-range").status == "RESERVED"


# ---- validation, faults, gaps -------------------------------------------------------------------


def test_wrong_requests_are_violations(gcp: FakeGcp) -> None:
    fingerprint = stored(gcp)["fingerprint"]
    status, body = raw(
        gcp,
        "PATCH",
        f"/compute/v1/projects/{P}/regions/{R}/subnetworks/cluster",
        {"fingerprint": fingerprint, "secondaryIpRange": [{"rangeName": "x", "ipCidrRange": "100.64.0.0/20"}]},
    )
    assert status == 400 and body["error"]["errors"][0]["reason"] == "invalid"
    status, body = raw(
        gcp,
        "POST",
        f"/v1/{CLUSTER}/nodePools",
        {"nodePool": {"name": "x", "status": "SPINNING", "initialNodeCount": "two", "autoscaling": {"enabled": "yes"}}},
    )
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT"
    status, _ = raw(gcp, "GET", f"/compute/v1/projects/{P}/regions/{R}/subnetworks?pageSize=5")
    assert status == 400
    # Through the real client: compute enums are plain strings, so nothing stops a bad value but the fake.
    networks = compute_client(compute_v1.NetworksClient, gcp)
    with pytest.raises(gexc.BadRequest):
        list(
            networks.list_peering_routes(
                request={"project": P, "network": "demo-ip", "direction": "SIDEWAYS", "peering_name": "x"}
            )
        )

    with pytest.raises(AssertionError, match="unknown field"):
        gcp.check()
    messages = [v.message for v in gcp.take_violations()]
    assert messages == [
        "body.secondaryIpRange: unknown field (not in schema Subnetwork)",
        "body.nodePool.status: 'SPINNING' is not one of the enum values "
        "['STATUS_UNSPECIFIED', 'PROVISIONING', 'RUNNING', 'RUNNING_WITH_ERROR', 'RECONCILING', 'STOPPING', 'ERROR']",
        "body.nodePool.initialNodeCount: expected an integer, got string 'two'",
        "body.nodePool.autoscaling.enabled: expected a boolean, got string 'yes'",
        "unknown query parameter 'pageSize' (not declared for compute.subnetworks.list)",
        "query parameter direction='SIDEWAYS': not one of ['INCOMING', 'OUTGOING']",
    ]
    assert gcp.node_pool(P, R, "demo-ip", "x") is None


def test_container_enum_numbers_are_checked_and_answered(gcp: FakeGcp) -> None:
    status, _ = raw(
        gcp,
        "POST",
        f"/v1/{CLUSTER}/nodePools?%24alt=json%3Benum-encoding%3Dint",
        {"nodePool": {"name": "x", "status": 17}},
    )
    assert status == 400
    assert [v.message for v in gcp.take_violations()] == [
        "body.nodePool.status: enum number 17 is not defined (known: [0, 1, 2, 3, 4, 5, 6])"
    ]
    _, numeric = raw(gcp, "GET", f"/v1/{CLUSTER}?%24alt=json%3Benum-encoding%3Dint")
    _, named = raw(gcp, "GET", f"/v1/{CLUSTER}")
    assert (numeric["status"], named["status"]) == (2, "RUNNING")
    assert numeric["nodePools"][0]["status"] == 2


def test_response_drift_is_a_violation(gcp: FakeGcp, subnets: compute_v1.SubnetworksClient) -> None:
    gcp.add_subnet(P, R, {"name": "typo", "network": "demo-ip", "ipCidrRange": "10.9.0.0/24", "secondaryRanges": []})
    assert subnets.get(project=P, region=R, subnetwork="typo").name == "typo"  # the client ignores it...
    [violation] = gcp.take_violations()  # ...the fake does not
    assert violation.direction == "response"
    assert violation.message == "response.secondaryRanges: unknown field (not in schema Subnetwork)"


def test_injected_faults_surface_as_api_exceptions(
    gcp: FakeGcp, gke: container_v1.ClusterManagerClient, subnets: compute_v1.SubnetworksClient
) -> None:
    gcp.inject(503, method="GET", path_contains="/clusters/demo-ip")
    with pytest.raises(gexc.ServiceUnavailable):
        gke.get_cluster(name=CLUSTER, retry=None)
    gcp.inject(503, path_contains="/subnetworks/cluster")
    with pytest.raises(gexc.ServiceUnavailable):
        subnets.get(project=P, region=R, subnetwork="cluster", retry=None)
    # GAPIC retries 503 on reads by default; a retry with a tiny delay shows the second attempt succeeds.
    gcp.inject(503, path_contains="/clusters/demo-ip")
    fast = Retry(initial=0.001, maximum=0.001, timeout=5, predicate=lambda e: isinstance(e, gexc.ServiceUnavailable))
    assert gke.get_cluster(name=CLUSTER, retry=fast).name == "demo-ip"
    assert gcp.count("GET", "/clusters/demo-ip") == 3
    gcp.inject(429, body={"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}})
    with pytest.raises(gexc.TooManyRequests, match="Quota exceeded"):
        gke.list_clusters(parent=f"projects/{P}/locations/{R}", retry=None)


def test_injected_retry_after_is_a_header(gcp: FakeGcp, gke: container_v1.ClusterManagerClient) -> None:
    gcp.inject(429, method="GET", path_contains="/clusters/demo-ip", retry_after=4)
    with pytest.raises(gexc.TooManyRequests) as caught:
        gke.get_cluster(name=CLUSTER, retry=None)
    assert caught.value.response.headers["Retry-After"] == "4"


@pytest.mark.parametrize(
    ("mode", "error", "carried_out"),
    [
        ("close", "Remote end closed connection without response", False),
        ("rst", "Connection reset by peer", False),
        ("partial", "IncompleteRead", True),
    ],
)
def test_injected_reset_drops_the_connection(
    gcp: FakeGcp, gke: container_v1.ClusterManagerClient, mode: str, error: str, carried_out: bool
) -> None:
    import requests

    gcp.inject_reset(mode, method="GET", path_contains="/clusters/demo-ip")
    with pytest.raises(requests.exceptions.RequestException, match=error):
        gke.get_cluster(name=CLUSTER, retry=None)
    assert gke.get_cluster(name=CLUSTER, retry=None).name == "demo-ip"  # answered, on a new connection
    assert gcp.count("GET", "/clusters/demo-ip") == 2

    gcp.inject_reset(mode, method="POST", path_contains="/nodePools")
    with pytest.raises(requests.exceptions.RequestException, match=error):
        gke.create_node_pool(parent=CLUSTER, node_pool=container_v1.NodePool(name="np3", initial_node_count=1))
    assert (gcp.node_pool(P, R, "demo-ip", "np3") is not None) is carried_out
    with pytest.raises(ValueError, match="reset mode"):
        gcp.inject_reset("hangup")


def test_unimplemented_method_is_reported_as_a_fake_gap(gcp: FakeGcp, gke: container_v1.ClusterManagerClient) -> None:
    with pytest.raises(gexc.MethodNotImplemented):
        gke.delete_cluster(name=CLUSTER)
    assert "container.projects.locations.clusters.delete" in str(gcp.errors.pop())
    assert gcp.cluster(P, R, "demo-ip") is not None


# ---- pieces -------------------------------------------------------------------------------------


def test_every_route_is_a_discovery_method() -> None:
    index = discovery_index()
    with FakeGcp() as fake:
        assert set(fake.implemented_methods) <= set(index.methods)
    assert discovery_index() is index  # loaded once per process


@pytest.mark.parametrize(
    ("max_pods", "prefix"), [(8, 28), (9, 27), (16, 27), (17, 26), (32, 26), (33, 25), (64, 25), (65, 24), (110, 24)]
)
def test_pod_block_prefix(max_pods: int, prefix: int) -> None:
    assert pod_block_prefix(max_pods) == prefix


def test_compute_filter_subset() -> None:
    obj = {"name": "pod-range-2", "purpose": "VPC_PEERING", "labels": {"team": "net"}, "enabled": True}
    assert compile_filter('purpose="VPC_PEERING"')(obj)
    assert not compile_filter("purpose != VPC_PEERING")(obj)
    assert compile_filter("name eq pod-range-.*")(obj)
    assert not compile_filter("name ne 'pod-range-.*'")(obj)
    assert compile_filter("(labels.team = net) AND (enabled = true)")(obj)
    assert compile_filter("labels.team:*")(obj)
    assert not compile_filter("labels.owner:*")(obj)


def test_routes_list_pages_filters_and_derives_subnet_routes(gcp: FakeGcp) -> None:
    """routes.list through the real RoutesClient: the network's default route, one local route per subnet
    range (as GCE lists them), stored routes; filtered by network, paged by name, every page validated."""
    gcp.add_network(P, {"name": "other"})
    for i in range(4):
        gcp.add_route(
            P, {"name": f"static-{i}", "network": "demo-ip", "destRange": f"10.50.{i}.0/24", "nextHopIp": "10.1.0.9"}
        )
    gcp.add_route(P, {"name": "elsewhere", "network": "other", "destRange": "10.60.0.0/16", "nextHopIp": "10.9.0.9"})
    routes = compute_client(compute_v1.RoutesClient, gcp)
    url = f"https://www.googleapis.com/compute/v1/projects/{P}/global/networks/demo-ip"
    listed = list(routes.list(request={"project": P, "filter": f'network="{url}"', "max_results": 2}, retry=None))
    by_dest = {r.dest_range: r for r in listed}
    # 3 subnet ranges of `cluster` + the default route + 4 static routes; `other`'s route and default left out.
    assert len(listed) == 8 and "10.60.0.0/16" not in by_dest
    assert by_dest["0.0.0.0/0"].next_hop_gateway.endswith("/global/gateways/default-internet-gateway")
    local = by_dest["10.0.0.0/26"]
    assert local.next_hop_network == url and local.priority == 0
    assert local.description == "Default local route to the subnetwork 10.0.0.0/26."
    assert by_dest["10.50.3.0/24"].next_hop_ip == "10.1.0.9"
    assert [r.name for r in listed] == sorted(r.name for r in listed)
    assert gcp.count("GET", "/global/routes") == 4  # ceil(8 / 2)
    assert routes.get(project=P, route="static-0", retry=None).dest_range == "10.50.0.0/24"
    with pytest.raises(gexc.NotFound):
        routes.get(project=P, route="nope", retry=None)
