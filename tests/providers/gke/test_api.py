"""Tests of the GKE adapter (cidrx/providers/gke/api.py) with the real google-cloud clients against the loopback fake.

They pin what collect and the apply steps rely on: the endpoint overrides and anonymous mode, REST JSON
dicts out, error translation to cidrx errors and exit codes, paging, and the operation-handle protocol.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cidrx.errors import (
    EXIT_ACCESS,
    EXIT_RETRY_LATER,
    EXIT_USAGE,
    AccessDenied,
    CloudError,
    InvalidInput,
    RetriesExhausted,
)
from cidrx.providers.gke.api import (
    ANONYMOUS_ENV,
    COMPUTE_ENDPOINT_ENV,
    CONTAINER_ENDPOINT_ENV,
    AlreadyExists,
    ClusterBusy,
    GkeApi,
    StaleFingerprint,
    compute_operation_state,
    container_operation_state,
    proto_json,
    to_json,
)
from tests.support.estates.gke import (
    CLUSTER,
    LOCATION,
    NETWORK,
    PEERING,
    PEERING_ROUTE,
    POD_CIDR,
    POD_RANGE,
    PROJECT,
    PSA_NAME,
    REGION,
    SERVICES_CIDR,
    SERVICES_RANGE,
    SUBNET,
)
from tests.support.fakes.gcp_server import FakeGcp

# The world's fixtures, used by name below (tests.support.estates.gke documents them).

REPO = Path(__file__).resolve().parents[3]
JSON = dict[str, Any]


def ranges_plus(api: GkeApi, name: str, cidr: str) -> tuple[str, list[JSON]]:
    subnet = api.get_subnetwork(REGION, SUBNET)
    return subnet["fingerprint"], [*subnet["secondaryIpRanges"], {"rangeName": name, "ipCidrRange": cidr}]


# ---- client factory -------------------------------------------------------------------------------


def test_clients_use_the_overrides_and_the_poller_too(gcp: FakeGcp, gke_api: GkeApi) -> None:
    assert gke_api.get_cluster(CLUSTER)["name"] == CLUSTER
    assert gke_api.get_network(NETWORK)["name"] == NETWORK
    assert gcp.count("GET", f"/clusters/{CLUSTER}") == 1
    assert gcp.count("GET", f"/networks/{NETWORK}") == 1
    gke_api.get_subnetwork(REGION, SUBNET)
    subnets = gke_api._clients["SubnetworksClient"]
    # compute's ExtendedOperation poller would default to compute.googleapis.com (see gcp_server.py).
    assert subnets._transport._region_operations_client._transport._host == gcp.url
    assert gke_api._clients["container-session"][1] == gcp.url  # container reads: REST JSON on the override
    # Created once per GkeApi.
    gke_api.get_subnetwork(REGION, SUBNET)
    assert gke_api._clients["SubnetworksClient"] is subnets


def test_constructor_does_no_io_and_no_sdk_import() -> None:
    code = (
        "import sys\n"
        "from cidrx.providers.gke.api import GkeApi\n"
        "import cidrx.providers.gke.collect.collect\n"
        "api = GkeApi('p1', 'australia-southeast1')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('google.cloud', 'google.auth', 'google.api_core')))\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_anonymous_is_refused_without_an_override(gcp: FakeGcp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(COMPUTE_ENDPOINT_ENV)
    api = GkeApi(PROJECT, LOCATION)
    assert api.get_cluster(CLUSTER)["name"] == CLUSTER  # container still has its override
    with pytest.raises(InvalidInput, match=f"{ANONYMOUS_ENV}=1 is only allowed") as caught:
        api.get_network(NETWORK)
    assert caught.value.exit_code == EXIT_USAGE
    assert COMPUTE_ENDPOINT_ENV in str(caught.value)


def test_missing_adc_is_access_denied(gcp: FakeGcp, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ANONYMOUS_ENV)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(AccessDenied, match="credentials") as caught:
        GkeApi(PROJECT, LOCATION).get_cluster(CLUSTER)
    assert caught.value.exit_code == EXIT_ACCESS
    assert "gcloud auth application-default login" in str(caught.value)
    assert gcp.request_log == []


def test_missing_sdk_says_how_to_install(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'google.cloud.compute_v1':\n"
        "            raise ModuleNotFoundError(\"No module named 'google.cloud.compute_v1'\", name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from cidrx.providers.gke.api import GkeApi\n"
        "try:\n"
        "    GkeApi('p1', 'l').get_firewall('n')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc.exit_code, exc)\n"
    )
    env = {**os.environ, CONTAINER_ENDPOINT_ENV: "http://127.0.0.1:9", COMPUTE_ENDPOINT_ENV: "http://127.0.0.1:9"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env, check=True)
    assert out.stdout.startswith(f"InvalidInput {EXIT_USAGE} ")
    assert "reinstall cidrx" in out.stdout and "pip install" not in out.stdout and "[gke]" not in out.stdout
    assert "google.cloud.compute_v1" in out.stdout


def test_reads_do_not_import_compute_v1() -> None:
    """compute reads go over REST JSON: importing compute_v1 alone costs about 110 MB (docs/performance.md)."""
    code = (
        "import sys\n"
        "from cidrx.providers.gke.api import GkeApi\n"
        "try:\n"
        "    GkeApi('p1', 'l').get_network('n')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
        "print('google.cloud.compute_v1' in sys.modules)\n"
    )
    env = {**os.environ, CONTAINER_ENDPOINT_ENV: "http://127.0.0.1:9", COMPUTE_ENDPOINT_ENV: "http://127.0.0.1:9"}
    env[ANONYMOUS_ENV] = "1"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env, check=True)
    assert out.stdout.splitlines()[-1] == "False", out.stdout + out.stderr


def test_collect_does_not_import_the_sdk_clients(gcp: FakeGcp) -> None:
    """A whole GKE collect reads over REST JSON: container_v1 and the gRPC/proto-plus stack it imports held
    about 23 MB of the collect's peak (docs/performance.md, round seven); compute_v1 about 110 MB."""
    code = (
        "import sys\n"
        "from cidrx.providers.gke.api import GkeApi\n"
        "from cidrx.providers.gke.collect.collect import collect_gke\n"
        f"section = collect_gke(GkeApi({PROJECT!r}, {LOCATION!r}), {CLUSTER!r})\n"
        "print(section.cluster.name, len(section.node_pools))\n"
        "sdk = ('google.cloud.container_v1', 'google.cloud.compute_v1', 'proto')\n"
        "print(sorted(m for m in sdk if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [f"{CLUSTER} 1", "[]"], out.stdout + out.stderr


def test_proto_json_is_what_the_container_client_made_of_the_answer() -> None:
    """Container reads skip the client; its view of an answer holding explicit defaults is the reference."""
    from google.cloud import container_v1

    answer = {
        "name": "c1",
        "status": "STATUS_UNSPECIFIED",
        "currentNodeCount": 0,
        "description": "",
        "enableKubernetesAlpha": False,
        "locations": [],
        "resourceLabels": {"team": "", "env": "prod"},
        "defaultMaxPodsConstraint": {"maxPodsPerNode": "110"},
        "ipAllocationPolicy": {
            "useIpAliases": True,
            "additionalPodRangesConfig": {
                "podRangeNames": ["extra"],
                "podRangeInfo": [{"rangeName": "extra", "utilization": 0}],
            },
        },
        "networkConfig": {"enableFqdnNetworkPolicy": False, "datapathProvider": "DATAPATH_PROVIDER_UNSPECIFIED"},
        "autopilot": {},
        "nodePools": [
            {
                "name": "p1",
                "config": {"accelerators": [], "diskSizeGb": 0, "labels": {}, "metadata": {"k": ""}},
                "autoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 3},
                "management": {"autoUpgrade": False, "autoRepair": True},
                "networkConfig": {"enablePrivateNodes": False, "podRange": ""},
            }
        ],
    }
    parsed = container_v1.Cluster.from_json(json.dumps(answer), ignore_unknown_fields=True)
    assert proto_json(answer) == to_json(parsed)


def test_unreachable_endpoint_is_access_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeGcp() as fake:
        url = fake.url
    monkeypatch.setenv(CONTAINER_ENDPOINT_ENV, url)  # the port is closed now
    monkeypatch.setenv(ANONYMOUS_ENV, "1")
    with pytest.raises(AccessDenied, match="cannot reach") as caught:
        GkeApi(PROJECT, LOCATION).get_cluster(CLUSTER)
    assert CONTAINER_ENDPOINT_ENV in str(caught.value)


# ---- reads ----------------------------------------------------------------------------------------


def test_reads_return_rest_json(gcp: FakeGcp, gke_api: GkeApi) -> None:
    cluster = gke_api.get_cluster(CLUSTER)
    assert cluster["status"] == "RUNNING"  # enum names, not the numbers the container client asks for
    assert cluster["ipAllocationPolicy"]["clusterSecondaryRangeName"] == POD_RANGE
    assert cluster["defaultMaxPodsConstraint"] == {"maxPodsPerNode": "110"}  # int64 as in REST JSON
    [pool] = gke_api.list_node_pools(CLUSTER)
    assert (pool["name"], pool["podIpv4CidrSize"], pool["networkConfig"]["podRange"]) == ("default-pool", 24, "pods")
    subnet = gke_api.get_subnetwork(REGION, SUBNET)
    assert subnet["secondaryIpRanges"] == [
        {"rangeName": POD_RANGE, "ipCidrRange": POD_CIDR},
        {"rangeName": SERVICES_RANGE, "ipCidrRange": SERVICES_CIDR},
    ]
    assert subnet["fingerprint"] == (gcp.subnet(PROJECT, REGION, SUBNET) or {})["fingerprint"]
    assert [p["name"] for p in gke_api.get_network(NETWORK)["peerings"]] == [PEERING]


def test_aggregated_list_pages_and_skips_warning_scopes(gcp: FakeGcp, gke_api: GkeApi) -> None:
    for i in range(5):
        gcp.add_subnet(
            PROJECT, "asia-east1", {"name": f"extra-{i}", "network": NETWORK, "ipCidrRange": f"10.9.{i}.0/24"}
        )
    gke_api.page_size = 2
    subnets = list(gke_api.iter_subnetworks())
    names = sorted((s["region"].rsplit("/", 1)[-1], s["name"]) for s in subnets)
    assert len(names) == 9 == len(set(names))
    assert ("asia-east1", "extra-4") in names and ("australia-southeast1", "elsewhere") in names
    assert all("fingerprint" in s for s in subnets)  # no per-subnet GET needed for the fingerprint
    pages = gcp.requests("GET", "/aggregated/subnetworks")
    assert len(pages) == 5  # ceil(9 / 2)
    assert [p.query.get("maxResults") for p in pages] == ["2"] * 5
    assert all(p.query.get("pageToken") for p in pages[1:])


def test_peering_routes_are_incoming_for_the_region(gcp: FakeGcp, gke_api: GkeApi) -> None:
    gcp.add_peering_route(PROJECT, NETWORK, PEERING, {"destRange": "10.1.0.0/16"}, direction="OUTGOING")
    gcp.add_peering_route(PROJECT, NETWORK, PEERING, {"destRange": "10.101.0.0/16"})
    gke_api.page_size = 1
    routes = list(gke_api.iter_peering_routes(NETWORK, PEERING, REGION))
    assert [r["destRange"] for r in routes] == [PEERING_ROUTE, "10.101.0.0/16"]
    first = gcp.requests("GET", "/listPeeringRoutes")[0].query
    assert (first["direction"], first["peeringName"], first["region"]) == ("INCOMING", PEERING, REGION)
    assert gcp.count("GET", "/listPeeringRoutes") == 2


def test_global_addresses_only_vpc_peering(gcp: FakeGcp, gke_api: GkeApi) -> None:
    found = list(gke_api.iter_global_addresses())
    assert [(a["name"], a["address"], a["prefixLength"]) for a in found] == [(PSA_NAME, "10.200.0.0", 16)]
    assert gcp.requests("GET", "/global/addresses")[0].query["filter"] == 'purpose="VPC_PEERING"'


# ---- error translation ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_are_access_denied(gcp: FakeGcp, gke_api: GkeApi, status: int) -> None:
    gcp.inject(status, path_contains=f"/clusters/{CLUSTER}")
    with pytest.raises(AccessDenied) as caught:
        gke_api.get_cluster(CLUSTER)
    text = str(caught.value)
    assert caught.value.exit_code == EXIT_ACCESS
    assert "\n" not in text
    if status == 403:
        assert text.startswith("permission denied for container.clusters.get on GKE cluster 'demo-ip' in p1/")
    else:
        assert "gcloud auth application-default login" in text


def test_compute_403_names_the_permission(gcp: FakeGcp, gke_api: GkeApi) -> None:
    gcp.inject(403, path_contains="/aggregated/subnetworks")
    with pytest.raises(AccessDenied, match=r"permission denied for compute\.subnetworks\.list on project p1"):
        list(gke_api.iter_subnetworks())


def test_not_found_is_access_denied_with_what_to_check(gcp: FakeGcp, gke_api: GkeApi) -> None:
    with pytest.raises(AccessDenied) as caught:
        gke_api.get_cluster("nope")
    assert str(caught.value).startswith("GKE cluster 'nope' in p1/australia-southeast1 not found")
    assert "--cluster" in str(caught.value)
    with pytest.raises(AccessDenied, match="subnetwork 'nope' in p1/us-central1 not found"):
        gke_api.get_subnetwork("us-central1", "nope")


def test_stale_fingerprint_on_412(gcp: FakeGcp, gke_api: GkeApi) -> None:
    fingerprint, ranges = ranges_plus(gke_api, "pods-2", "100.64.0.0/20")
    gcp.update_subnet(PROJECT, REGION, SUBNET, {"description": "edited by someone else"})
    with pytest.raises(StaleFingerprint) as caught:
        gke_api.patch_subnetwork_secondary_ranges(REGION, SUBNET, fingerprint, ranges)
    assert isinstance(caught.value, CloudError)
    assert "changed since it was read" in str(caught.value)
    assert [r["rangeName"] for r in (gcp.subnet(PROJECT, REGION, SUBNET) or {})["secondaryIpRanges"]] == [
        POD_RANGE,
        SERVICES_RANGE,
    ]


def test_conflict_is_already_exists(gcp: FakeGcp, gke_api: GkeApi) -> None:
    with pytest.raises(AlreadyExists, match="already exists") as caught:
        gke_api.create_node_pool(CLUSTER, {"name": "default-pool", "initialNodeCount": 1})
    assert isinstance(caught.value, CloudError)


def test_bad_request_carries_the_api_message_on_one_line(gcp: FakeGcp, gke_api: GkeApi) -> None:
    fingerprint, ranges = ranges_plus(gke_api, "pods-2", "10.5.0.0/20")  # us-pods in us-central1 has it
    with pytest.raises(CloudError) as caught:
        gke_api.patch_subnetwork_secondary_ranges(REGION, SUBNET, fingerprint, ranges)
    text = str(caught.value)
    assert type(caught.value) is CloudError
    assert text.startswith("Google Cloud rejected compute.subnetworks.update on subnetwork 'demo-ip-subnet'")
    assert "conflicts with range 'us-pods' of subnetwork 'us-workloads' in region 'us-central1'" in text
    assert "http://" not in text  # api_core's "PATCH http://...: " prefix is dropped


def test_server_errors_are_cloud_errors(gcp: FakeGcp, gke_api: GkeApi, retry_sleeps: list[float]) -> None:
    from cidrx.transport import retry

    gcp.inject(503, path_contains="/global/networks/", times=None)
    with pytest.raises(RetriesExhausted, match="HTTP 503") as caught:
        gke_api.get_network(NETWORK)
    assert caught.value.exit_code == EXIT_RETRY_LATER  # kept failing after every retry: not a bug, retry later
    # Only cidrx's own retry policy retries (GAPIC's is off), and its sleeps are the patched ones.
    attempts = retry.default_policy().max_attempts
    assert gcp.count("GET", "/global/networks/") == attempts and len(retry_sleeps) == attempts - 1
    assert f"gave up after {attempts} attempts" in str(caught.value)


def test_busy_cluster_is_cluster_busy(gcp: FakeGcp, gke_api: GkeApi) -> None:
    fingerprint, ranges = ranges_plus(gke_api, "pods-2", "100.64.0.0/20")
    gcp.op_polls = 0
    gke_api.patch_subnetwork_secondary_ranges(REGION, SUBNET, fingerprint, ranges)
    gcp.op_polls = 1
    gke_api.add_cluster_pod_ranges(CLUSTER, ["pods-2"])
    with pytest.raises(ClusterBusy, match="incompatible operation"):
        gke_api.create_node_pool(CLUSTER, {"name": "other", "initialNodeCount": 1})
    gcp.finish_operations()


# ---- writes and operations ------------------------------------------------------------------------


def test_subnet_patch_then_poll_the_compute_operation(gcp: FakeGcp, gke_api: GkeApi) -> None:
    gcp.op_polls = 2
    fingerprint, ranges = ranges_plus(gke_api, "pods-2", "100.64.0.0/20")
    op = gke_api.patch_subnetwork_secondary_ranges(REGION, SUBNET, fingerprint, ranges)
    assert op.keys() == {"api", "name", "region"}
    assert (op["api"], op["region"]) == ("compute", REGION)
    sent = gcp.requests("PATCH", f"/subnetworks/{SUBNET}")[-1].body
    assert sent == {"fingerprint": fingerprint, "secondaryIpRanges": ranges}
    assert gke_api.get_operation(op) == {"done": False, "error": None, "status": "RUNNING", "progress": "0%"}
    assert gke_api.get_operation(op) == {"done": True, "error": None, "status": "DONE", "progress": "100%"}
    after = gke_api.get_subnetwork(REGION, SUBNET)
    assert after["secondaryIpRanges"][-1] == {"rangeName": "pods-2", "ipCidrRange": "100.64.0.0/20"}
    assert after["fingerprint"] != fingerprint


def test_failed_compute_operation_reports_the_error(gcp: FakeGcp, gke_api: GkeApi) -> None:
    fingerprint, ranges = ranges_plus(gke_api, "pods-2", "100.64.0.0/20")
    gcp.inject_operation_error(400, "Secondary range limit reached", method="PATCH")
    op = gke_api.patch_subnetwork_secondary_ranges(REGION, SUBNET, fingerprint, ranges)
    state = gke_api.get_operation(op)
    assert state["done"] and state["status"] == "DONE"
    assert state["error"] == "HTTP 400: Secondary range limit reached"


def test_create_node_pool_then_poll_the_container_operation(gcp: FakeGcp, gke_api: GkeApi) -> None:
    fingerprint, ranges = ranges_plus(gke_api, "pods-2", "100.64.0.0/20")
    gcp.op_polls = 0
    gke_api.patch_subnetwork_secondary_ranges(REGION, SUBNET, fingerprint, ranges)
    gcp.op_polls = 1
    autoscaling = {"enabled": True, "minNodeCount": 1, "maxNodeCount": 5, "locationPolicy": "BALANCED"}
    pool: JSON = {
        "name": "pool-2",
        "config": {"machineType": "e2-standard-4", "resourceLabels": {"cidrx-plan": "0123456789abcdef"}},
        "initialNodeCount": 1,
        "locations": [f"{REGION}-a"],
        "autoscaling": autoscaling,
        "maxPodsConstraint": {"maxPodsPerNode": "110"},
        "networkConfig": {"podRange": "pods-2"},
    }
    op = gke_api.create_node_pool(CLUSTER, pool)
    assert op.keys() == {"api", "name"} and op["api"] == "container"
    sent = gcp.requests("POST", "/nodePools")[-1].body["nodePool"]
    # Sent as read, REST JSON with enum names (not through the client library's messages): a setting GKE added
    # after the installed library reaches the new pool unchanged.
    assert sent == pool
    assert (gcp.node_pool(PROJECT, LOCATION, CLUSTER, "pool-2") or {})["status"] == "PROVISIONING"
    state = gke_api.get_operation(op)
    assert state == {"done": True, "error": None, "status": "DONE", "progress": None}
    created = {p["name"]: p for p in gke_api.list_node_pools(CLUSTER)}["pool-2"]
    assert created["status"] == "RUNNING"
    assert created["networkConfig"]["podRange"] == "pods-2"
    assert created["config"]["resourceLabels"] == {"cidrx-plan": "0123456789abcdef"}
    assert created["autoscaling"]["locationPolicy"] == "BALANCED"


def test_failed_container_operation_reports_the_error(gcp: FakeGcp, gke_api: GkeApi) -> None:
    gcp.inject_operation_error(400, "IP_SPACE_EXHAUSTED: no room", path_contains="/nodePools")
    op = gke_api.create_node_pool(CLUSTER, {"name": "np3", "initialNodeCount": 1})
    state = gke_api.get_operation(op)
    assert state["done"] is True
    assert state["error"] == "IP_SPACE_EXHAUSTED: no room"


def test_add_cluster_pod_ranges(gcp: FakeGcp, gke_api: GkeApi) -> None:
    fingerprint, ranges = ranges_plus(gke_api, "pods-2", "100.64.0.0/20")
    gcp.op_polls = 0
    gke_api.patch_subnetwork_secondary_ranges(REGION, SUBNET, fingerprint, ranges)
    gcp.op_polls = 1
    op = gke_api.add_cluster_pod_ranges(CLUSTER, ["pods-2"])
    assert gcp.requests("PUT", f"/clusters/{CLUSTER}")[-1].body == {
        "update": {"additionalPodRangesConfig": {"podRangeNames": ["pods-2"]}}
    }
    assert gke_api.get_operation(op)["done"] is True
    policy = gke_api.get_cluster(CLUSTER)["ipAllocationPolicy"]
    assert policy["additionalPodRangesConfig"]["podRangeNames"] == ["pods-2"]


def test_unknown_operation_is_access_denied(gcp: FakeGcp, gke_api: GkeApi) -> None:
    with pytest.raises(AccessDenied, match="operation nope"):
        gke_api.get_operation({"api": "compute", "name": "nope", "region": REGION})


def test_operation_state_converters() -> None:
    assert container_operation_state(
        {
            "status": "RUNNING",
            "progress": {
                "metrics": [{"name": "NODES_DONE", "intValue": "2"}, {"name": "NODES_TOTAL", "intValue": "3"}]
            },
        }
    ) == {"done": False, "error": None, "status": "RUNNING", "progress": "NODES_DONE=2, NODES_TOTAL=3"}
    assert container_operation_state({"status": "ABORTING", "statusMessage": "cancelled\nby user"})["error"] == (
        "cancelled by user"
    )
    assert container_operation_state({})["status"] == "STATUS_UNSPECIFIED"
    assert compute_operation_state(
        {"status": "DONE", "progress": 100, "error": {"errors": [{"code": "QUOTA_EXCEEDED", "message": "quota"}]}}
    ) == {"done": True, "error": "quota", "status": "DONE", "progress": "100%"}
    assert compute_operation_state({"status": "PENDING"}) == {
        "done": False,
        "error": None,
        "status": "PENDING",
        "progress": None,
    }


@pytest.mark.parametrize(("path", "call"), [("/clusters/", "cluster"), ("/global/networks/", "network")])
def test_a_garbled_success_body_is_retried_and_exit_7_when_it_lasts(
    gcp: FakeGcp, gke_api: GkeApi, path: str, call: str
) -> None:
    def read() -> Any:
        return gke_api.get_cluster(CLUSTER) if call == "cluster" else gke_api.get_network(NETWORK)

    clean = read()
    garbled = '{"name": "demo", "stat'  # a JSON string where an object belongs: what a cut-off body parses to
    gcp.inject(200, method="GET", path_contains=path, times=2, body=garbled)
    assert read() == clean
    gcp.inject(200, method="GET", path_contains=path, times=None, body=garbled)
    with pytest.raises(RetriesExhausted) as caught:
        read()
    gcp.clear_faults()
    assert caught.value.exit_code == EXIT_RETRY_LATER and "could not be read" in caught.value.message
