"""AKS estates in the loopback ARM fake (tests/support/fakes/arm_server.py), for collect, analyze, plan, apply
and rollback tests, and the bundled examples examples/aks-*.snapshot.json.

Three clusters in subscription SUB, resource group RG, each in a VNet of its own (shapes after the
azure-rest-api-specs examples ManagedClustersGet / AgentPoolsGet / VirtualNetworkGet):

- node-subnet (`build_node_subnet`): Azure CNI node subnet. Pool `nodepool1` (Standard_D4s_v5, max pods 30,
  autoscaler 1..5) has 1 node in subnet `aks-nodes` 10.10.0.0/26: 59 usable addresses, 31 taken (the node and
  its 30 pods), so a second node (31 more) does not fit (SubnetIsFull), and AKS's up-front check
  (5 + 1) x 31 = 186 fails (InsufficientSubnetSize). Around it: `AzureBastionSubnet` 10.10.1.0/26, `db`
  10.10.2.0/24, a peering to hub VNet 10.100.0.0/16, a route 10.10.4.0/22 to a firewall in route table
  `aks-routes` on the node subnet, service CIDR 10.0.0.0/16.
- pod-subnet (`build_pod_subnet`): Azure CNI with a dynamic pod subnet. Pool `workers` (max pods 50,
  autoscaler 2..6) has 3 nodes in `nodes` 10.30.0.0/24 and its pods in `pods` 10.30.1.0/27: 27 usable, 24
  taken, so no node gets another batch of 16; ClusterSubnetState `pods` says exhausted.
- overlay (`build_overlay`): Azure CNI Overlay with pod CIDR 10.244.0.0/22 (four /24s), all held by the 4 nodes
  of `nodepool1`; its pod CIDR cannot be expanded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cidrx.model.kube import KubeEvent, KubeNode, KubeSection
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target
from cidrx.providers.aks.api import ANONYMOUS_ENV, ENDPOINT_ENV
from cidrx.providers.aks.collect.cluster import ClusterSubnetState
from cidrx.providers.aks.model import AksSection
from tests.support.fakes.arm_server import FakeArm

JSON = dict[str, Any]
SUB = "00000000-0000-0000-0000-0000000000a1"
RG = "rg-aks"
LOCATION = "westeurope"
EXAMPLE_TAKEN_AT = "2025-03-14T09:30:00Z"
VM_SIZE = "Standard_D4s_v5"


def _rid(kind: str, name: str, rg: str = RG, sub: str = SUB) -> str:
    return f"/subscriptions/{sub}/resourceGroups/{rg}/providers/{kind}/{name}"


def vnet_id(name: str) -> str:
    return _rid("Microsoft.Network/virtualNetworks", name)


def subnet_id(vnet: str, name: str) -> str:
    return f"{vnet_id(vnet)}/subnets/{name}"


def cluster_json(name: str, network: JSON) -> JSON:
    return {
        "id": _rid("Microsoft.ContainerService/managedClusters", name),
        "name": name,
        "type": "Microsoft.ContainerService/ManagedClusters",
        "location": LOCATION,
        "properties": {
            "provisioningState": "Succeeded",
            "kubernetesVersion": "1.30.5",
            "dnsPrefix": f"{name}-dns",
            "nodeResourceGroup": f"MC_{RG}_{name}_{LOCATION}",
            "networkProfile": {
                "serviceCidr": "10.0.0.0/16",
                "dnsServiceIP": "10.0.0.10",
                "outboundType": "loadBalancer",
                "loadBalancerSku": "standard",
                **network,
            },
        },
    }


def pool_json(name: str, **props: Any) -> JSON:
    return {
        "name": name,
        "type": "Microsoft.ContainerService/managedClusters/agentPools",
        "properties": {
            "provisioningState": "Succeeded",
            "vmSize": VM_SIZE,
            "osType": "Linux",
            "osSKU": "Ubuntu",
            "osDiskSizeGB": 128,
            "osDiskType": "Managed",
            "type": "VirtualMachineScaleSets",
            "mode": "System",
            "availabilityZones": ["1", "2", "3"],
            "nodeLabels": {"team": "platform"},
            "nodeTaints": ["dedicated=platform:NoSchedule"],
            "orchestratorVersion": "1.30.5",
            "upgradeSettings": {"maxSurge": "1"},
            **props,
        },
    }


def ip_configs(vnet: str, subnet: str, count: int) -> list[JSON]:
    nic = _rid("Microsoft.Network/networkInterfaces", "aks-nic", rg=f"MC_{RG}")
    return [{"id": f"{nic}-{subnet}/ipConfigurations/ipconfig{i}"} for i in range(1, count + 1)]


def subnet_json(vnet: str, name: str, prefix: str, used: int = 0, **props: Any) -> JSON:
    return {
        "id": subnet_id(vnet, name),
        "name": name,
        "type": "Microsoft.Network/virtualNetworks/subnets",
        "properties": {
            "addressPrefix": prefix,
            "provisioningState": "Succeeded",
            "privateEndpointNetworkPolicies": "Disabled",
            "privateLinkServiceNetworkPolicies": "Enabled",
            **({"ipConfigurations": ip_configs(vnet, name, used)} if used else {}),
            **props,
        },
    }


def vnet_json(name: str, spaces: list[str], subnets: list[JSON], peerings: list[JSON] = ()) -> JSON:  # type: ignore[assignment]
    return {
        "id": vnet_id(name),
        "name": name,
        "type": "Microsoft.Network/virtualNetworks",
        "location": LOCATION,
        "properties": {
            "provisioningState": "Succeeded",
            "resourceGuid": "5a1c4f0e-0000-4000-8000-000000000001",
            "addressSpace": {"addressPrefixes": spaces},
            "subnets": subnets,
            "virtualNetworkPeerings": list(peerings),
            "enableDdosProtection": False,
        },
    }


def peering_json(vnet: str, name: str, remote: str, spaces: list[str]) -> JSON:
    return {
        "id": f"{vnet_id(vnet)}/virtualNetworkPeerings/{name}",
        "name": name,
        "type": "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
        "properties": {
            "provisioningState": "Succeeded",
            "peeringState": "Connected",
            "peeringSyncLevel": "FullyInSync",
            "allowVirtualNetworkAccess": True,
            "allowForwardedTraffic": True,
            "allowGatewayTransit": False,
            "useRemoteGateways": False,
            "remoteVirtualNetwork": {"id": _rid("Microsoft.Network/virtualNetworks", remote, rg="rg-hub")},
            "remoteAddressSpace": {"addressPrefixes": spaces},
        },
    }


# --- node subnet -----------------------------------------------------------------------------------------------

NODE_CLUSTER, NODE_VNET = "aks-cni", "aks-cni-vnet"
ROUTE_TABLE = "aks-routes"


def build_node_subnet(arm: FakeArm) -> None:
    table = _rid("Microsoft.Network/routeTables", ROUTE_TABLE)
    arm.add_route_table(
        SUB,
        RG,
        {
            "id": table,
            "name": ROUTE_TABLE,
            "location": LOCATION,
            "properties": {
                "provisioningState": "Succeeded",
                "routes": [
                    {
                        "name": "to-firewall",
                        "properties": {
                            "addressPrefix": "10.10.4.0/22",
                            "nextHopType": "VirtualAppliance",
                            "nextHopIpAddress": "10.100.0.4",
                        },
                    }
                ],
            },
        },
    )
    arm.add_cluster(SUB, RG, cluster_json(NODE_CLUSTER, {"networkPlugin": "azure", "networkPolicy": "azure"}))
    arm.add_vnet(
        SUB,
        RG,
        vnet_json(
            NODE_VNET,
            ["10.10.0.0/16"],
            [
                subnet_json(NODE_VNET, "aks-nodes", "10.10.0.0/26", used=31, routeTable={"id": table}),
                subnet_json(NODE_VNET, "AzureBastionSubnet", "10.10.1.0/26", used=2),
                subnet_json(NODE_VNET, "db", "10.10.2.0/24", used=4),
            ],
            [peering_json(NODE_VNET, "to-hub", "hub-vnet", ["10.100.0.0/16"])],
        ),
    )
    arm.add_pool(
        SUB,
        RG,
        NODE_CLUSTER,
        pool_json(
            "nodepool1",
            count=1,
            maxPods=30,
            enableAutoScaling=True,
            minCount=1,
            maxCount=5,
            vnetSubnetID=subnet_id(NODE_VNET, "aks-nodes"),
        ),
    )


def node_subnet_kube() -> KubeSection:
    node = KubeNode(
        name="aks-nodepool1-28337194-vmss000000",
        zone=f"{LOCATION}-1",
        instance_type=VM_SIZE,
        created="2025-03-10T08:00:00Z",
        internal_ip="10.10.0.4",
        allocatable_pods=30,
        pool="nodepool1",
    )
    event = KubeEvent(
        namespace="default",
        kind="Pod",
        name="web-7d4b9c6f5-x2x7q",
        reason="NotTriggerScaleUp",
        type="Normal",
        message="pod didn't trigger scale-up: 1 node(s) didn't match... scale set aks-nodepool1-28337194-vmss: "
        "SubnetIsFull: Subnet aks-nodes with address prefix 10.10.0.0/26 does not have enough capacity for 31 IP "
        "addresses",
        count=14,
        last_seen="2025-03-14T09:28:00Z",
        source="cluster-autoscaler",
    )
    return KubeSection(
        available=True, context=NODE_CLUSTER, nodes=(node,), pods_per_node={node.name: 30}, events=(event,)
    )


# --- pod subnet (dynamic) ---------------------------------------------------------------------------------------

POD_CLUSTER, POD_VNET = "aks-podsubnet", "aks-podsubnet-vnet"


def build_pod_subnet(arm: FakeArm) -> None:
    arm.add_vnet(
        SUB,
        RG,
        vnet_json(
            POD_VNET,
            ["10.30.0.0/16"],
            [
                subnet_json(POD_VNET, "nodes", "10.30.0.0/24", used=3),
                subnet_json(
                    POD_VNET,
                    "pods",
                    "10.30.1.0/27",
                    used=24,
                    delegations=[
                        {
                            "name": "aks-delegation",
                            "properties": {"serviceName": "Microsoft.ContainerService/managedClusters"},
                        }
                    ],
                ),
            ],
        ),
    )
    arm.add_cluster(SUB, RG, cluster_json(POD_CLUSTER, {"networkPlugin": "azure"}))
    arm.add_pool(
        SUB,
        RG,
        POD_CLUSTER,
        pool_json(
            "workers",
            mode="User",
            count=3,
            maxPods=50,
            enableAutoScaling=True,
            minCount=2,
            maxCount=6,
            vnetSubnetID=subnet_id(POD_VNET, "nodes"),
            podSubnetID=subnet_id(POD_VNET, "pods"),
            podIPAllocationMode="DynamicIndividual",
        ),
    )


def pod_subnet_kube() -> KubeSection:
    nodes = tuple(
        KubeNode(
            name=f"aks-workers-41275501-vmss00000{i}",
            zone=f"{LOCATION}-{i + 1}",
            instance_type=VM_SIZE,
            created="2025-03-12T10:00:00Z",
            internal_ip=f"10.30.0.{4 + i}",
            allocatable_pods=50,
            pool="workers",
        )
        for i in range(3)
    )
    event = KubeEvent(
        namespace="shop",
        kind="Pod",
        name="cart-5f6d8b7c9-p7k2m",
        reason="FailedCreatePodSandBox",
        type="Warning",
        message='Failed to create pod sandbox: plugin type="azure-vnet" failed (add): no available addresses: '
        "subnet pods is exhausted",
        count=9,
        last_seen="2025-03-14T09:25:00Z",
        source="kubelet",
    )
    return KubeSection(
        available=True,
        context=POD_CLUSTER,
        nodes=nodes,
        pods_per_node={n.name: 8 for n in nodes},
        events=(event,),
        cluster_subnet_states=(ClusterSubnetState("kube-system", "pods", True, "1741944300"),),
    )


# --- overlay ----------------------------------------------------------------------------------------------------

OVERLAY_CLUSTER, OVERLAY_VNET = "aks-overlay", "aks-overlay-vnet"


def build_overlay(arm: FakeArm) -> None:
    arm.add_vnet(
        SUB, RG, vnet_json(OVERLAY_VNET, ["10.40.0.0/16"], [subnet_json(OVERLAY_VNET, "nodes", "10.40.0.0/24", used=4)])
    )
    arm.add_cluster(
        SUB,
        RG,
        cluster_json(
            OVERLAY_CLUSTER, {"networkPlugin": "azure", "networkPluginMode": "overlay", "podCidr": "10.244.0.0/22"}
        ),
    )
    arm.add_pool(
        SUB,
        RG,
        OVERLAY_CLUSTER,
        pool_json(
            "nodepool1",
            count=4,
            maxPods=250,
            enableAutoScaling=True,
            minCount=3,
            maxCount=8,
            vnetSubnetID=subnet_id(OVERLAY_VNET, "nodes"),
        ),
    )


def overlay_kube() -> KubeSection:
    nodes = tuple(
        KubeNode(
            name=f"aks-nodepool1-11223344-vmss00000{i}",
            zone=f"{LOCATION}-{i % 3 + 1}",
            instance_type=VM_SIZE,
            created="2025-03-11T07:00:00Z",
            pod_cidrs=(f"10.244.{i}.0/24",),
            internal_ip=f"10.40.0.{4 + i}",
            allocatable_pods=250,
            pool="nodepool1",
        )
        for i in range(4)
    )
    return KubeSection(available=True, context=OVERLAY_CLUSTER, nodes=nodes, pods_per_node={n.name: 120 for n in nodes})


# --- wiring -----------------------------------------------------------------------------------------------------

ESTATES: dict[str, tuple[str, Callable[[FakeArm], None], Callable[[], KubeSection]]] = {
    "node-subnet": (NODE_CLUSTER, build_node_subnet, node_subnet_kube),
    "pod-subnet": (POD_CLUSTER, build_pod_subnet, pod_subnet_kube),
    "overlay": (OVERLAY_CLUSTER, build_overlay, overlay_kube),
}


def arm_env(arm: FakeArm) -> dict[str, str]:
    return {ENDPOINT_ENV: arm.url, ANONYMOUS_ENV: "1"}


@contextlib.contextmanager
def aks_estate(mp: pytest.MonkeyPatch, *builds: Callable[[FakeArm], None]) -> Iterator[FakeArm]:
    """A started FakeArm holding what `builds` seed (default: all three clusters), with CIDRX_ARM_* set
    through `mp`; fails at exit on any schema violation."""
    with FakeArm() as arm:
        for build in builds or tuple(b for _, b, _ in ESTATES.values()):
            build(arm)
        for key, value in arm_env(arm).items():
            mp.setenv(key, value)
        yield arm
    arm.check()


def target(cluster: str) -> Target:
    return Target("aks", cluster, subscription=SUB, resource_group=RG)


def target_flags(cluster: str) -> list[str]:
    return ["--aks", "--subscription", SUB, "--resource-group", RG, "--cluster", cluster]


def example_snapshot(aks: AksSection, kube: KubeSection) -> Snapshot:
    """A bundled example: the collected section, the estate's Kubernetes side, a fixed time."""
    return seal(Snapshot(target=target(aks.cluster.name), taken_at=EXAMPLE_TAKEN_AT, kube=kube, aks=aks))
