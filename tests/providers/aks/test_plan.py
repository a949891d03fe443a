"""AKS plans (pure, from the bundled examples), their Terraform, and the new-address-space path applied and
rolled back through the real azure-mgmt clients on the loopback ARM fake."""

from __future__ import annotations

import json
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from cidrx.app import plan as app_plan
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan
from cidrx.model.snapshot import load_snapshot
from cidrx.render.terraform import render_terraform
from tests.support.cli import run
from tests.support.estates import aks as aw
from tests.support.fakes.arm_server import FakeArm
from tests.support.fakes.kube_server import FakeKubeServer
from tests.support.terraform_check import parse, resources

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NODE = "aks-cni-node-subnet.snapshot.json"
PODS = "aks-dynamic-pod-subnet.snapshot.json"


def plan_of(name: str, **opts: object) -> Plan:
    return app_plan.make_plan(load_snapshot(EXAMPLES / name), PlanOptions(**opts))  # type: ignore[arg-type]


def step(plan: Plan, sid: str) -> dict[str, object]:
    return next(s.params for s in plan.steps if s.id == sid)


def test_node_subnet_plan_places_a_subnet_clear_of_everything_and_copies_the_pool() -> None:
    plan = plan_of(NODE)
    assert plan.strategy == "aks-node-pool"
    assert [s.id for s in plan.steps] == ["create-subnet", "create-agent-pool"]
    subnet = step(plan, "create-subnet")
    # (5 + 1) x 31 + 5 = 191 -> a /24; 10.10.0-2.x are subnets, 10.10.4.0/22 is a route.
    assert subnet["body"] == {
        "properties": {
            "addressPrefix": "10.10.3.0/24",
            "routeTable": {"id": aw._rid("Microsoft.Network/routeTables", aw.ROUTE_TABLE)},
        }
    }
    pool = step(plan, "create-agent-pool")
    props = pool["body"]["properties"]  # type: ignore[index]
    assert props["vnetSubnetID"] == aw.subnet_id(aw.NODE_VNET, "nodepool12-nodes")
    assert (props["vmSize"], props["maxPods"], props["maxCount"], props["availabilityZones"]) == (
        aw.VM_SIZE,
        30,
        5,
        ["1", "2", "3"],
    )
    assert props["nodeTaints"] == ["dedicated=platform:NoSchedule"] and props["nodeLabels"] == {"team": "platform"}
    assert "orchestratorVersion" not in props and "provisioningState" not in props


def test_pod_subnet_plan_adds_a_pod_subnet_and_keeps_the_node_subnet() -> None:
    plan = plan_of(PODS)
    assert plan.strategy == "aks-pod-subnet"
    subnet = step(plan, "create-subnet")
    # 6 nodes x 64 (50 max pods in whole batches of 16) + 5 = 389 -> a /23, delegated like the old pod subnet.
    assert subnet["body"]["properties"]["addressPrefix"] == "10.30.2.0/23"  # type: ignore[index]
    assert subnet["body"]["properties"]["delegations"][0]["properties"]["serviceName"] == (  # type: ignore[index]
        "Microsoft.ContainerService/managedClusters"
    )
    props = step(plan, "create-agent-pool")["body"]["properties"]  # type: ignore[index]
    assert props["vnetSubnetID"] == aw.subnet_id(aw.POD_VNET, "nodes")
    assert props["podSubnetID"] == aw.subnet_id(aw.POD_VNET, "workers2-pods")


@pytest.mark.parametrize(
    ("cidr", "words"),
    [
        ("10.10.4.0/24", "route to-firewall"),
        ("10.0.1.0/24", "service CIDR"),
        ("10.100.7.0/24", "peered VNet"),
        ("10.10.0.0/24", "subnet aks-nodes"),
        ("10.10.3.0/27", "the new pool needs 191"),
    ],
)
def test_a_given_cidr_must_be_clear_and_large_enough(cidr: str, words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        plan_of(NODE, cidr=cidr)


def test_strategies_refuse_the_other_mode() -> None:
    with pytest.raises(InvalidInput, match="aks-node-pool"):
        plan_of(NODE, strategy="aks-pod-subnet")
    with pytest.raises(InvalidInput, match="aks-pod-subnet"):
        plan_of(PODS, strategy="aks-node-pool")


def test_overlay_plan_exits_2_saying_why_and_what_instead() -> None:
    result = run("expand", "--snapshot", str(EXAMPLES / "aks-overlay-pod-cidr.snapshot.json"), "--plan")
    assert result.exit_code == 2, result.output
    assert "cannot give it more pod addresses" in result.output
    assert "Azure/AKS#4591" in result.output and "larger --pod-cidr" in result.output
    assert "Traceback" not in result.output


def test_terraform_has_the_subnet_and_the_node_pool() -> None:
    plan = plan_of(NODE)
    doc = parse(render_terraform(plan))
    found = resources(doc)
    subnet = found[("azurerm_subnet", "nodepool12_nodes")]
    assert subnet["address_prefixes"] == ["10.10.3.0/24"] and subnet["virtual_network_name"] == aw.NODE_VNET
    assert ("azurerm_subnet_route_table_association", "nodepool12_nodes") in found
    pool = found[("azurerm_kubernetes_cluster_node_pool", "nodepool12")]
    assert pool["vm_size"] == aw.VM_SIZE and pool["max_pods"] == 30 and pool["zones"] == ["1", "2", "3"]
    assert pool["tags"]["cidrx-plan"] == plan.plan_id


def test_html_and_prometheus_outputs_cover_the_examples() -> None:
    html = run("diagnose", "--snapshot", str(EXAMPLES / NODE), "-o", "html")
    assert html.exit_code == 3 and "aks-cni-vnet" in html.stdout
    prom = run("diagnose", "--snapshot", str(EXAMPLES / PODS), "-o", "prometheus")
    assert prom.exit_code == 3 and 'kind="subnet"' in prom.stdout


def full_vnet(arm: FakeArm) -> None:
    """The node-subnet estate with its VNet shrunk to 10.10.0.0/23: no free /24 is left in it."""
    aw.build_node_subnet(arm)
    vnet = arm.vnet(aw.SUB, aw.RG, aw.NODE_VNET)
    vnet["properties"]["addressSpace"]["addressPrefixes"] = ["10.10.0.0/23"]
    vnet["properties"]["subnets"] = [s for s in vnet["properties"]["subnets"] if s["name"] != "db"]


def test_a_full_vnet_gets_an_address_space_synced_to_its_peerings_and_rollback_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with aw.aks_estate(monkeypatch, full_vnet) as arm, FakeKubeServer() as kube:
        plan_path = tmp_path / "plan.json"
        made = run("expand", *aw.target_flags(aw.NODE_CLUSTER), "--no-kube", "--plan", "--out", str(plan_path))
        assert made.exit_code == 0, made.output
        doc = json.loads(plan_path.read_text())
        assert [s["id"] for s in doc["steps"]] == ["add-address-space", "create-subnet", "create-agent-pool"]
        space = doc["basis"]["new_address_space"]
        assert IPv4Network(space) == IPv4Network("10.1.0.0/24")  # 10.0.0.0/16 is the service CIDR

        applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
        assert applied.exit_code == 0, applied.output
        vnet = arm.vnet(aw.SUB, aw.RG, aw.NODE_VNET)
        assert vnet["properties"]["addressSpace"]["addressPrefixes"] == ["10.10.0.0/23", space]
        [peering] = vnet["properties"]["virtualNetworkPeerings"]
        assert peering["properties"]["peeringSyncLevel"] == "FullyInSync"
        synced = [r for r in arm.request_log if "virtualNetworkPeerings" in r.path and r.method == "PUT"]
        assert [r.query.get("syncRemoteAddressSpace") for r in synced] == ["true"]
        assert synced[0].headers.get("if-match")  # guarded by the peering's etag
        assert any(s["name"] == "nodepool12-nodes" for s in vnet["properties"]["subnets"])

        kubeconfig = str(kube.kubeconfig(tmp_path / "kubeconfig"))
        undone = run("rollback", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
        assert undone.exit_code == 0, undone.output
        vnet = arm.vnet(aw.SUB, aw.RG, aw.NODE_VNET)
        assert vnet["properties"]["addressSpace"]["addressPrefixes"] == ["10.10.0.0/23"]
        assert [s["name"] for s in vnet["properties"]["subnets"]] == ["aks-nodes", "AzureBastionSubnet"]
        assert vnet["properties"]["virtualNetworkPeerings"][0]["properties"]["peeringSyncLevel"] == "FullyInSync"


def test_a_removed_template_pool_makes_the_plan_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with aw.aks_estate(monkeypatch, aw.build_pod_subnet) as arm:
        plan_path = tmp_path / "plan.json"
        made = run("expand", *aw.target_flags(aw.POD_CLUSTER), "--no-kube", "--plan", "--out", str(plan_path))
        assert made.exit_code == 0, made.output
        del arm.pools[(aw.SUB, aw.RG, aw.POD_CLUSTER, "workers")]
        arm.reset_log()
        applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
        assert applied.exit_code == 4, applied.output
        assert "template agent pool workers no longer exists" in applied.output
        assert arm.writes() == []


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--eks", "--region", "r", "--cluster", "c", "--subscription", "s"], "--subscription is not used with --eks"),
        (["--aks", "--subscription", "s", "--resource-group", "g", "--cluster", "c", "--project", "p"], "--project"),
        (["--aks", "--cluster", "c"], "--aks needs --subscription and --resource-group"),
    ],
)
def test_target_flags_of_another_provider_are_refused(
    args: list[str], words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    result = run("diagnose", *args, "--no-kube")
    assert result.exit_code == 2 and words in result.output, result.output
