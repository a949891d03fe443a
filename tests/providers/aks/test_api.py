"""The Azure door (cidrx/providers/aks/api.py): lazy SDK imports, the test-token switch, error translation,
and the real azure-mgmt clients against the loopback ARM fake (ETag guards, long-running operations)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cidrx.errors import AccessDenied, InvalidInput, StalePlan
from cidrx.providers.aks.api import ANONYMOUS_ENV, ENDPOINT_ENV, AksApi, parse_id
from tests.support.estates import aks as aw
from tests.support.fakes.arm_server import FakeArm

REPO = Path(__file__).resolve().parents[3]


def test_help_and_the_package_import_no_azure_sdk() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from cidrx.cli import cli\n"
        "CliRunner().invoke(cli, ['--help'])\n"
        "import cidrx.providers.aks.provider, cidrx.providers.aks.api, cidrx.providers.aks.collect.collect\n"
        "from cidrx.providers.aks.api import AksApi\n"
        "AksApi('s')\n"
        "print(sorted(m for m in sys.modules if m == 'azure' or m.startswith('azure.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_test_token_needs_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)
    monkeypatch.setenv(ANONYMOUS_ENV, "1")
    with pytest.raises(InvalidInput, match="CIDRX_ARM_ENDPOINT"):
        AksApi(aw.SUB).get_cluster(aw.RG, aw.NODE_CLUSTER)


def test_reads_through_the_real_clients(arm: FakeArm) -> None:
    api = AksApi(aw.SUB)
    cluster = api.get_cluster(aw.RG, aw.POD_CLUSTER)
    assert cluster["properties"]["networkProfile"]["networkPlugin"] == "azure"
    [pool] = api.list_agent_pools(aw.RG, aw.POD_CLUSTER)
    assert pool["properties"]["podSubnetID"].endswith("/subnets/pods")
    assert api.get_agent_pool(aw.RG, aw.POD_CLUSTER, "nope") is None
    vnet = api.get_vnet(aw.RG, aw.POD_VNET)
    assert [s["name"] for s in vnet["properties"]["subnets"]] == ["nodes", "pods"]
    assert parse_id(pool["properties"]["vnetSubnetID"])["child"] == "nodes"


def test_a_missing_cluster_is_an_access_error_naming_it(arm: FakeArm) -> None:
    with pytest.raises(AccessDenied, match="reading AKS cluster rg-aks/ghost"):
        AksApi(aw.SUB).get_cluster(aw.RG, "ghost")


def test_writes_are_guarded_by_etags(arm: FakeArm) -> None:
    api = AksApi(aw.SUB)
    body = {"properties": {"addressPrefix": "10.30.8.0/24"}}
    api.create_subnet(aw.RG, aw.POD_VNET, "extra", body).result()
    assert api.get_subnet(aw.RG, aw.POD_VNET, "extra")["properties"]["provisioningState"] == "Succeeded"
    # If-None-Match: * never replaces what exists.
    with pytest.raises(StalePlan, match="ETag mismatch"):
        api.create_subnet(aw.RG, aw.POD_VNET, "extra", body)
    # If-Match with an old etag is refused; with the current one the delete goes through.
    with pytest.raises(StalePlan):
        api.delete_subnet(aw.RG, aw.POD_VNET, "extra", 'W/"old"')
    etag = api.get_subnet(aw.RG, aw.POD_VNET, "extra")["etag"]
    api.delete_subnet(aw.RG, aw.POD_VNET, "extra", etag).result()
    assert api.get_subnet(aw.RG, aw.POD_VNET, "extra") is None
    headers = [r.headers for r in arm.request_log if r.method in ("PUT", "DELETE")]
    assert headers[0].get("if-none-match") == "*" and headers[-1].get("if-match") == etag


def test_the_fake_refuses_a_pool_the_node_subnet_cannot_hold(arm: FakeArm) -> None:
    """AKS's up-front check, as the fake enforces it: (5 + 1) x (30 + 1) = 186 > 59 - 31 free in aks-nodes."""
    api = AksApi(aw.SUB)
    pool = aw.pool_json("extra", count=1, maxPods=30, enableAutoScaling=True, minCount=1, maxCount=5)
    pool["properties"]["vnetSubnetID"] = aw.subnet_id(aw.NODE_VNET, "aks-nodes")
    body = {"properties": {k: v for k, v in pool["properties"].items() if k != "provisioningState"}}
    with pytest.raises(Exception, match="InsufficientSubnetSize"):
        api.create_agent_pool(aw.RG, aw.NODE_CLUSTER, "extra", body)
