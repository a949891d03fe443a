"""GKE estates as organisations run them, built in the loopback GCP fake: a Shared VPC whose host project owns
the network while the cluster lives in a service project, with every kind of route on the network and a
routes-based cluster next to it.

Why it exists: the incident world (gke_world.py) has one project and no routes; the first version of cidrx
failed on exactly what this world adds (exit 6 "network not found" under Shared VPC, plans overlapping
routes and routes-based clusters). Object shapes follow real API dumps (gcpdiag, commit 06ec8584):
test-data/gke1/json-dumps/container-clusters.json (routes-based `gke2`: useRoutes, clusterIpv4Cidr,
services in its last /20, a VPC-native pool with its own podRange next to it), test-data/gce1/json-dumps/
compute-network-routes.json (static routes with nextHopGateway / nextHopPeering) and gke1's
compute-network-routes.json (subnet routes, which the fake derives from the subnets).

Host project ``host-net``: network ``shared-vpc``; subnet ``shop-subnet`` 10.0.0.0/24 in australia-southeast1
with ``shop-pods`` 10.4.0.0/22 (full: 4 nodes of /24) and ``shop-services`` 10.8.0.0/24; subnet
``legacy-subnet`` 10.1.0.0/24 in australia-southeast1 for the routes-based cluster ``legacy`` (host project,
zone australia-southeast1-a, clusterIpv4Cidr 10.12.0.0/14, 3 nodes, one GKE route each); a static route to
on-premises 10.16.0.0/12 (next hop an IP), a VPN route 10.96.0.0/11 and 192.168.0.0/16 over a VPN tunnel.
Service project ``shop-svc``: regional cluster ``shop`` whose networkConfig names the host's network and subnet.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from cidrx.model.kube import KubeNode, KubeSection
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target
from cidrx.providers.gke.model import GkeSection
from tests.support.estates.gke import full_alias_policy, gke_estate
from tests.support.fakes.gcp_server import COMPUTE_LINK, FakeGcp

JSON = dict[str, Any]

HOST = "host-net"
SERVICE = "shop-svc"
REGION = "australia-southeast1"
LOCATION = REGION
ZONES = (f"{REGION}-a", f"{REGION}-b")
NETWORK = "shared-vpc"
SUBNET = "shop-subnet"
SUBNET_CIDR = "10.0.0.0/24"
SUBNET_FINGERPRINT = "c2hhcmVkLXZwYw=="
POD_RANGE = "shop-pods"
POD_CIDR = "10.4.0.0/22"
SERVICES_RANGE = "shop-services"
SERVICES_CIDR = "10.8.0.0/24"
CLUSTER = "shop"
POOL = "shop-pool"

LEGACY = "legacy"
LEGACY_LOCATION = f"{REGION}-a"
LEGACY_SUBNET = "legacy-subnet"
LEGACY_CIDR = "10.12.0.0/14"
LEGACY_NODE_BLOCKS = ("10.12.0.0/24", "10.12.1.0/24", "10.12.2.0/24")
LEGACY_MIXED_RANGE = ("legacy-small-pods", "10.40.0.0/16")

ONPREM_ROUTE = ("to-onprem", "10.16.0.0/12")
VPN_ROUTES = (("vpn-dc1", "10.96.0.0/11"), ("vpn-dc2", "192.168.0.0/16"))
# Everything a new pod range must stay out of, besides the subnets' own ranges.
ROUTED = (ONPREM_ROUTE[1], *(c for _, c in VPN_ROUTES), LEGACY_CIDR)


def _instance(project: str, zone: str, name: str) -> str:
    return f"{COMPUTE_LINK}projects/{project}/zones/{zone}/instances/{name}"


def build_shared_vpc(fake: FakeGcp) -> JSON:
    """Seed the estate; returns the service project's cluster as the API shows it."""
    fake.add_network(HOST, {"name": NETWORK})
    fake.add_subnet(
        HOST,
        REGION,
        {
            "name": SUBNET,
            "network": NETWORK,
            "ipCidrRange": SUBNET_CIDR,
            "fingerprint": SUBNET_FINGERPRINT,
            "secondaryIpRanges": [
                {"rangeName": POD_RANGE, "ipCidrRange": POD_CIDR},
                {"rangeName": SERVICES_RANGE, "ipCidrRange": SERVICES_CIDR},
            ],
        },
    )
    mixed_name, mixed_cidr = LEGACY_MIXED_RANGE
    fake.add_subnet(
        HOST,
        REGION,
        {
            "name": LEGACY_SUBNET,
            "network": NETWORK,
            "ipCidrRange": "10.1.0.0/24",
            "fingerprint": "bGVnYWN5",
            "secondaryIpRanges": [{"rangeName": mixed_name, "ipCidrRange": mixed_cidr}],
        },
    )
    name, dest = ONPREM_ROUTE
    fake.add_route(HOST, {"name": name, "network": NETWORK, "destRange": dest, "nextHopIp": "10.0.0.250"})
    for name, dest in VPN_ROUTES:
        tunnel = f"{COMPUTE_LINK}projects/{HOST}/regions/{REGION}/vpnTunnels/{name}"
        fake.add_route(HOST, {"name": name, "network": NETWORK, "destRange": dest, "nextHopVpnTunnel": tunnel})
    _add_legacy(fake)
    pool: JSON = {
        "name": POOL,
        "config": {
            "machineType": "n1-standard-8",
            "diskSizeGb": 100,
            "serviceAccount": f"gke-nodes@{SERVICE}.iam.gserviceaccount.com",
            # A GPU pool (the shape of gcpdiag test-data/gke1/json-dumps/container-clusters.json gke6's
            # `accelerators`, 06ec8584): the copy must keep the GPUs or GPU pods never schedule on it.
            "accelerators": [
                {
                    "acceleratorCount": "1",
                    "acceleratorType": "nvidia-tesla-t4",
                    "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"},
                }
            ],
            "labels": {"team": "shop"},
            "taints": [{"key": "dedicated", "value": "shop", "effect": "NO_SCHEDULE"}],
        },
        "initialNodeCount": 2,
        "locations": list(ZONES),
        "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 4},
        "maxPodsConstraint": {"maxPodsPerNode": "110"},
        "networkConfig": {"podRange": POD_RANGE, "podIpv4CidrBlock": POD_CIDR, "podIpv4RangeUtilization": 1.0},
    }
    return fake.add_cluster(
        SERVICE,
        LOCATION,
        {
            "name": CLUSTER,
            "network": NETWORK,
            "subnetwork": SUBNET,
            "networkConfig": {
                "network": f"projects/{HOST}/global/networks/{NETWORK}",
                "subnetwork": f"projects/{HOST}/regions/{REGION}/subnetworks/{SUBNET}",
            },
            "locations": list(ZONES),
            "defaultMaxPodsConstraint": {"maxPodsPerNode": "110"},
            "ipAllocationPolicy": full_alias_policy(POD_RANGE, POD_CIDR, SERVICES_RANGE, SERVICES_CIDR),
            "nodePools": [pool],
        },
    )


def _add_legacy(fake: FakeGcp) -> None:
    """The routes-based cluster `legacy` in the host project (GKE refuses routes-based clusters on a Shared
    VPC network, so it is the host's own), with a VPC-native pool on its own range next to its default pool
    (as gcpdiag's gke2 has `low-pod-per-node-pool`), and one GKE node route per node."""
    mixed_name, mixed_cidr = LEGACY_MIXED_RANGE
    fake.add_cluster(
        HOST,
        LEGACY_LOCATION,
        {
            "name": LEGACY,
            "network": NETWORK,
            "subnetwork": LEGACY_SUBNET,
            "clusterIpv4Cidr": LEGACY_CIDR,
            "nodeIpv4CidrSize": 24,
            "ipAllocationPolicy": {"useRoutes": True},
            "nodePools": [
                {"name": "default-pool", "initialNodeCount": 1, "config": {"machineType": "e2-medium"}},
                {
                    "name": "low-pod-per-node-pool",
                    "initialNodeCount": 1,
                    "config": {"machineType": "e2-medium"},
                    "maxPodsConstraint": {"maxPodsPerNode": "8"},
                    "networkConfig": {"podRange": mixed_name, "podIpv4CidrBlock": mixed_cidr},
                },
            ],
        },
    )
    for i, block in enumerate(LEGACY_NODE_BLOCKS):
        node = f"gke-{LEGACY}-default-pool-6c1f2a3b-{i:04d}"
        fake.add_route(
            HOST,
            {
                "name": f"gke-{LEGACY}-8e1d3c2a-{i:04d}",
                "description": "k8s-node-route",
                "network": NETWORK,
                "destRange": block,
                "nextHopInstance": _instance(HOST, LEGACY_LOCATION, node),
            },
        )


def shared_vpc_estate(mp: pytest.MonkeyPatch) -> contextlib.AbstractContextManager[FakeGcp]:
    """A started FakeGcp holding the estate, CIDRX_* variables pointing at it; checked at exit."""
    return gke_estate(mp, build_shared_vpc)


EXAMPLE_TAKEN_AT = "2026-11-20T09:30:00Z"
SHOP_NODE_BLOCKS = ("10.4.0.0/24", "10.4.1.0/24", "10.4.2.0/24", "10.4.3.0/24")


def shop_kube() -> KubeSection:
    """The service cluster's nodes: four, one /24 of the full pod range each, 100 pods on every node."""
    nodes = tuple(
        KubeNode(
            name=f"gke-{CLUSTER}-{POOL}-1a2b3c4d-{i:04d}",
            zone=ZONES[i % len(ZONES)],
            instance_type="n2-standard-8",
            created="2026-11-01T08:00:00Z",
            pod_cidrs=(block,),
            internal_ip=f"10.0.0.{10 + i}",
            allocatable_pods=110,
            pool=POOL,
        )
        for i, block in enumerate(SHOP_NODE_BLOCKS)
    )
    return KubeSection(
        available=True,
        context=f"gke_{SERVICE}_{LOCATION}_{CLUSTER}",
        nodes=nodes,
        pods_per_node={n.name: 100 for n in nodes},
    )


def shared_vpc_snapshot(gke: GkeSection) -> Snapshot:
    """The sealed snapshot bundled as examples/gke-shared-vpc.snapshot.json, from a collected GKE section."""
    target = Target("gke", CLUSTER, project=SERVICE, location=LOCATION)
    return seal(Snapshot(target=target, taken_at=EXAMPLE_TAKEN_AT, kube=shop_kube(), gke=gke))
