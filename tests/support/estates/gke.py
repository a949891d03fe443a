"""The GKE incident of the talk, built in the loopback GCP fake, for collect/analyze/plan/apply tests.

Project ``p1``, regional cluster ``demo-ip`` in ``australia-southeast1`` on VPC ``demo-vpc``. Its subnet
``demo-ip-subnet`` (10.0.0.0/24) has the secondary ranges ``pods`` 10.4.0.0/22 and ``services``
10.8.0.0/24. Node pool ``default-pool`` (e2-standard-4, three zones, 110 max pods per node, so a /24 per
node) has 4 nodes: the /22 holds exactly 4 such blocks, while the autoscaler may go to 3 per zone (9). So
cluster-autoscaler reports "IP space exhausted" and pods stay Pending.

Space a planner must not pick, all in the same network: subnet ``us-workloads`` 10.1.0.0/16 in
us-central1 with secondary ``us-pods`` 10.5.0.0/16, subnet ``eu-db`` 10.2.0.0/20 in europe-west1, the
control plane's 172.16.0.32/28, a route 10.100.0.0/16 imported over peering ``peer-shared-services``
and the private-services-access allocation 10.200.0.0/16. Decoys that must *not* count: a subnet of
another network (``other-vpc``, 10.60.0.0/16) and an external address.

Use the fixtures of conftest_gke.py (registered for every test):

    def test_x(gcp: FakeGcp, gke_api: GkeApi) -> None: ...

``gcp`` is ``gke_estate(monkeypatch)``: a started FakeGcp with the world built, and the CIDRX_* endpoint
variables set (so a plain ``GkeApi(PROJECT, LOCATION)`` and the CLI in-process reach it); it fails the test
at teardown on any discovery-document violation. For a subprocess, pass ``gcp_env(fake)`` in its environment.
``incident_kube()`` is the Kubernetes side of the incident (nodes, Pending pods, autoscaler events) and
``incident_snapshot(section)`` the sealed snapshot bundled as examples/gke-demo-ip.snapshot.json.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cidrx.model.kube import KubeEvent, KubeNode, KubePod, KubeSection
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target
from cidrx.providers.gke.api import ANONYMOUS_ENV, COMPUTE_ENDPOINT_ENV, CONTAINER_ENDPOINT_ENV
from cidrx.providers.gke.model import GkeSection
from tests.support.fakes.gcp_server import FakeGcp

PROJECT = "p1"
LOCATION = "australia-southeast1"
REGION = LOCATION
ZONES = (f"{REGION}-a", f"{REGION}-b", f"{REGION}-c")
CLUSTER = "demo-ip"
NETWORK = "demo-vpc"
SUBNET = "demo-ip-subnet"
SUBNET_CIDR = "10.0.0.0/24"
POD_RANGE = "pods"
POD_CIDR = "10.4.0.0/22"
# Fixed so that a snapshot of the world is reproducible (a real fingerprint is 8 random bytes, base64).
SUBNET_FINGERPRINT = "k3Yv0bq2ZTg="
SERVICES_RANGE = "services"
SERVICES_CIDR = "10.8.0.0/24"
MASTER_CIDR = "172.16.0.32/28"
POOL = "default-pool"
MACHINE_TYPE = "e2-standard-4"
MAX_PODS = 110  # -> a /24 per node -> 4 nodes in the /22
NODES_NOW = 4
AUTOSCALING_MAX_PER_ZONE = 3
VERSION = "1.27.3-gke.100"

OTHER_SUBNETS: dict[str, tuple[str, str, dict[str, str]]] = {
    # name: (region, primary, {secondary name: cidr})
    "us-workloads": ("us-central1", "10.1.0.0/16", {"us-pods": "10.5.0.0/16"}),
    "eu-db": ("europe-west1", "10.2.0.0/20", {}),
}
OTHER_NETWORK = "other-vpc"
OTHER_NETWORK_SUBNET = ("elsewhere", REGION, "10.60.0.0/16")
PEERING = "peer-shared-services"
PEERING_ROUTE = "10.100.0.0/16"
PSA_NAME = "google-managed-services-demo-vpc"
PSA_CIDR = "10.200.0.0/16"

NODE_NAMES = tuple(f"gke-demo-ip-default-pool-5f2c9a7e-{suffix}" for suffix in ("8f44", "zzzt", "q7lm", "c2rd"))
NODE_ZONES = (ZONES[0], ZONES[1], ZONES[2], ZONES[0])
NODE_POD_CIDRS = tuple(f"10.4.{i}.0/24" for i in range(NODES_NOW))
SCALE_UP_FAILED = (
    "Node scale up in zones {zone} associated with this pod failed: IP space exhausted. "
    "Pod is at risk of not being scheduled."
)

JSON = dict[str, Any]


def build_incident(fake: FakeGcp, project: str = PROJECT) -> JSON:
    """Seed the incident into ``fake`` (network, subnets, peering, PSA, cluster, node pool); returns the
    cluster as the API shows it."""
    fake.add_network(project, {"name": NETWORK})
    fake.add_subnet(
        project,
        REGION,
        {
            "name": SUBNET,
            "network": NETWORK,
            "ipCidrRange": SUBNET_CIDR,
            "fingerprint": SUBNET_FINGERPRINT,
            "privateIpGoogleAccess": True,
            "secondaryIpRanges": [
                {"rangeName": POD_RANGE, "ipCidrRange": POD_CIDR},
                {"rangeName": SERVICES_RANGE, "ipCidrRange": SERVICES_CIDR},
            ],
        },
    )
    for name, (region, primary, secondary) in OTHER_SUBNETS.items():
        fake.add_subnet(
            project,
            region,
            {
                "name": name,
                "network": NETWORK,
                "ipCidrRange": primary,
                "fingerprint": f"fp-{name}=",
                "secondaryIpRanges": [{"rangeName": k, "ipCidrRange": v} for k, v in secondary.items()],
            },
        )
    fake.add_network(project, {"name": OTHER_NETWORK})
    other_name, other_region, other_cidr = OTHER_NETWORK_SUBNET
    fake.add_subnet(project, other_region, {"name": other_name, "network": OTHER_NETWORK, "ipCidrRange": other_cidr})
    fake.add_peering_route(project, NETWORK, PEERING, {"destRange": PEERING_ROUTE})
    psa_address, psa_prefix = PSA_CIDR.split("/")
    fake.add_global_address(
        project,
        {
            "name": PSA_NAME,
            "purpose": "VPC_PEERING",
            "address": psa_address,
            "prefixLength": int(psa_prefix),
            "network": NETWORK,
        },
    )
    fake.add_global_address(project, {"name": "lb-ip", "address": "34.1.2.3", "addressType": "EXTERNAL"})

    for rule in incident_firewalls():
        fake.add_firewall(project, rule)

    pool: JSON = {
        "name": POOL,
        "config": {
            "machineType": MACHINE_TYPE,
            "diskSizeGb": 100,
            "diskType": "pd-balanced",
            "imageType": "COS_CONTAINERD",
            "serviceAccount": "default",
            "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
            "metadata": {"disable-legacy-endpoints": "true"},
            "shieldedInstanceConfig": {"enableIntegrityMonitoring": True},
            "resourceLabels": {"team": "platform"},
            "accelerators": [],
        },
        "initialNodeCount": 1,
        "locations": list(ZONES),
        "autoscaling": {
            "enabled": True,
            "minNodeCount": 1,
            "maxNodeCount": AUTOSCALING_MAX_PER_ZONE,
            "locationPolicy": "BALANCED",
        },
        "management": {"autoUpgrade": True, "autoRepair": True},
        "maxPodsConstraint": {"maxPodsPerNode": str(MAX_PODS)},
        "networkConfig": {"podRange": POD_RANGE, "podIpv4CidrBlock": POD_CIDR, "podIpv4RangeUtilization": 1.0},
        "instanceGroupUrls": [
            f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{z}/instanceGroupManagers/"
            f"gke-demo-ip-default-pool-5f2c9a7e-grp"
            for z in ZONES
        ],
        "version": VERSION,
    }
    return fake.add_cluster(
        project,
        LOCATION,
        {
            "name": CLUSTER,
            "network": NETWORK,
            "subnetwork": SUBNET,
            "locations": list(ZONES),
            "currentMasterVersion": VERSION,
            "defaultMaxPodsConstraint": {"maxPodsPerNode": str(MAX_PODS)},
            "privateClusterConfig": {"enablePrivateNodes": True, "masterIpv4CidrBlock": MASTER_CIDR},
            "ipAllocationPolicy": full_alias_policy(POD_RANGE, POD_CIDR, SERVICES_RANGE, SERVICES_CIDR),
            "nodePools": [pool],
        },
    )


def full_alias_policy(pod_range: str, pod_cidr: str, services_range: str, services_cidr: str) -> JSON:
    """A VPC-native cluster's ipAllocationPolicy whose default pod range GKE reports fully allocated."""
    return {
        "useIpAliases": True,
        "clusterSecondaryRangeName": pod_range,
        "servicesSecondaryRangeName": services_range,
        "clusterIpv4CidrBlock": pod_cidr,
        "servicesIpv4CidrBlock": services_cidr,
        "defaultPodIpv4RangeUtilization": 1.0,
    }


GPU_POOL = "gpu-pool"
GPU_SERVICE_ACCOUNT = f"gke-nodes@{PROJECT}.iam.gserviceaccount.com"


def gpu_pool_json() -> JSON:
    """A GPU node pool of the incident cluster, shaped after real container v1 dumps (GoogleCloudPlatform/
    gcpdiag test-data/gke1/json-dumps/container-clusters.json at 06ec8584ec5919df53a4e6841ad2ad74a5f045b2:
    cluster gke6's `accelerators` [{acceleratorCount "1", acceleratorType nvidia-tesla-v100}] on n1-standard-2,
    gke2's custom serviceAccount, `tags`, workloadMetadataConfig GKE_METADATA and upgradeSettings
    {maxSurge 1, strategy SURGE}, low-pod-per-node-pool's `preemptible` and maxPodsConstraint "8"), plus the
    NodeConfig fields a GPU pool typically sets (taints, labels, GPU driver installation, reservation
    affinity, placement), every one checked against the container v1 discovery document by the fake."""
    return {
        "name": GPU_POOL,
        "config": {
            "machineType": "n1-standard-8",
            "diskSizeGb": 200,
            "diskType": "pd-ssd",
            "imageType": "COS_CONTAINERD",
            "serviceAccount": GPU_SERVICE_ACCOUNT,
            "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
            "metadata": {"disable-legacy-endpoints": "true"},
            "labels": {"workload": "training", "gpu": "v100"},
            "resourceLabels": {"team": "ml"},
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
            "tags": ["gke-demo-ip-gpu", "allow-nccl"],
            "accelerators": [
                {
                    "acceleratorCount": "2",
                    "acceleratorType": "nvidia-tesla-v100",
                    "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
                }
            ],
            "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
            "reservationAffinity": {"consumeReservationType": "ANY_RESERVATION"},
            "windowsNodeConfig": {},
        },
        "initialNodeCount": 1,
        "locations": [ZONES[0], ZONES[1]],
        "autoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"},
        "management": {"autoUpgrade": True, "autoRepair": True},
        "upgradeSettings": {"maxSurge": 1, "strategy": "SURGE"},
        "placementPolicy": {"type": "COMPACT"},
        "maxPodsConstraint": {"maxPodsPerNode": "32"},
        "networkConfig": {"podRange": POD_RANGE, "enablePrivateNodes": True},
        "version": VERSION,
    }


def add_gpu_pool(fake: FakeGcp, project: str = PROJECT) -> JSON:
    """Add `gpu_pool_json()` to the incident cluster in `fake`."""
    return fake.add_node_pool(project, LOCATION, CLUSTER, gpu_pool_json())


CLUSTER_HASH = "5f2c9a7e"
FIREWALL_ALL = f"gke-{CLUSTER}-{CLUSTER_HASH}-all"
ALL_PROTOCOLS = [{"IPProtocol": p} for p in ("tcp", "udp", "icmp", "esp", "ah", "sctp")]


def incident_firewalls() -> list[JSON]:
    """The rules GKE creates for a private cluster (gke-<cluster>-<hash>-all from the pod range, -vms from the
    node subnet, -master from the control plane), shaped after the real rules in GoogleCloudPlatform/gcpdiag
    test-data/gke1/json-dumps/compute-effective-firewalls-default.json (06ec8584ec5919df53a4e6841ad2ad74a5f045b2),
    a broad user rule (like the default network's default-allow-internal) and a rule of another network."""
    tag = [f"gke-{CLUSTER}-{CLUSTER_HASH}-node"]
    return [
        {
            "name": FIREWALL_ALL,
            "network": NETWORK,
            "sourceRanges": [POD_CIDR],
            "targetTags": tag,
            "allowed": ALL_PROTOCOLS,
        },
        {
            "name": f"gke-{CLUSTER}-{CLUSTER_HASH}-vms",
            "network": NETWORK,
            "sourceRanges": [SUBNET_CIDR],
            "targetTags": tag,
            "allowed": [{"IPProtocol": "icmp"}, {"IPProtocol": "tcp", "ports": ["1-65535"]}],
        },
        {
            "name": f"gke-{CLUSTER}-{CLUSTER_HASH}-master",
            "network": NETWORK,
            "sourceRanges": [MASTER_CIDR],
            "targetTags": tag,
            "allowed": [{"IPProtocol": "tcp", "ports": ["10250", "443"]}],
        },
        {
            "name": "demo-vpc-allow-internal",
            "network": NETWORK,
            "priority": 65534,
            "sourceRanges": ["10.0.0.0/8"],
            "allowed": [{"IPProtocol": "tcp", "ports": ["0-65535"]}],
        },
        {
            "name": "other-vpc-allow-pods",
            "network": OTHER_NETWORK,
            "sourceRanges": [POD_CIDR],
            "allowed": ALL_PROTOCOLS,
        },
    ]


# The node subnet full while the pod range has room: the incident's subnet with a /28 primary range (12 usable
# addresses: GCP reserves 4) held by the 4 nodes, 5 other VMs, 2 internal load balancers and 1 reserved address.
SMALL_SUBNET_CIDR = "10.0.0.0/28"
FIREWALL_VMS = f"gke-{CLUSTER}-{CLUSTER_HASH}-vms"


def build_node_subnet_full(fake: FakeGcp, project: str = PROJECT) -> JSON:
    """The incident (`build_incident`) whose subnet's PRIMARY range is what ran out: ``demo-ip-subnet`` is a /28
    whose 12 usable addresses are all held, and GKE's -vms firewall rule names it."""
    cluster = build_incident(fake, project)
    fake.update_subnet(
        project,
        REGION,
        SUBNET,
        {"ipCidrRange": SMALL_SUBNET_CIDR, "gatewayAddress": "10.0.0.1"},
        touch_fingerprint=False,
    )
    rule = fake.firewall(project, FIREWALL_VMS)
    assert rule is not None
    fake.add_firewall(project, {**rule, "sourceRanges": [SMALL_SUBNET_CIDR]})
    held = iter(f"10.0.0.{i}" for i in range(2, 14))
    for name, zone in zip(NODE_NAMES, NODE_ZONES, strict=True):
        fake.add_instance(project, zone, name, next(held), subnet=SUBNET, network=NETWORK, gke_cluster=CLUSTER)
    for i in range(5):
        fake.add_instance(project, ZONES[i % 3], f"batch-vm-{i}", next(held), subnet=SUBNET, network=NETWORK)
    for i in range(2):
        fake.add_forwarding_rule(
            project,
            REGION,
            {"name": f"a3f9c1e2d4b5-ilb-{i}", "IPAddress": next(held), "subnetwork": SUBNET, "network": NETWORK},
        )
    fake.add_address(project, REGION, {"name": "dns-forwarder", "address": next(held), "subnetwork": SUBNET})
    return cluster


def gcp_env(fake: FakeGcp) -> dict[str, str]:
    """The environment that points cidrx's GkeApi (in-process or a subprocess) at ``fake``."""
    return {CONTAINER_ENDPOINT_ENV: fake.url, COMPUTE_ENDPOINT_ENV: fake.url, ANONYMOUS_ENV: "1"}


@contextlib.contextmanager
def gke_estate(mp: pytest.MonkeyPatch, build: Callable[[FakeGcp], object] = build_incident) -> Iterator[FakeGcp]:
    """A started FakeGcp holding the incident (or what `build` seeds), with the CIDRX_* variables (through
    `mp`) pointing at it; fails at exit on any discovery-document violation or fake error."""
    with FakeGcp() as server:
        build(server)
        for key, value in gcp_env(server).items():
            mp.setenv(key, value)
        yield server
    server.check()


def incident_kube() -> KubeSection:
    """The Kubernetes side of the incident: 4 nodes whose /24s fill the pod range, Pending pods and the
    cluster-autoscaler events GKE shows ("IP space exhausted"), a few hostNetwork pods per node."""
    nodes = tuple(
        KubeNode(
            name=name,
            zone=zone,
            instance_type=MACHINE_TYPE,
            created=f"2023-11-04T0{i}:1{i}:00Z",
            ready=True,
            pod_cidrs=(cidr,),
            internal_ip=f"10.0.0.{10 + i}",
            allocatable_pods=MAX_PODS,
            pool=POOL,
        )
        for i, (name, zone, cidr) in enumerate(zip(NODE_NAMES, NODE_ZONES, NODE_POD_CIDRS, strict=True))
    )
    pending = tuple(
        KubePod(
            namespace="test",
            name=f"alpine-curl-648f8f669c-{suffix}",
            phase="Pending",
            node="",
            reason="Unschedulable",
            created="2023-11-04T03:02:00Z",
        )
        for suffix in ("2hqmq", "2xtbq", "8mplc", "9zxzn", "wltzt")
    )
    events: list[KubeEvent] = []
    for pod in pending[:3]:
        events.append(
            KubeEvent(
                namespace=pod.namespace,
                kind="Pod",
                name=pod.name,
                reason="FailedScaleUp",
                type="Warning",
                message=SCALE_UP_FAILED.format(zone=", ".join(ZONES)),
                count=2,
                last_seen="2023-11-04T03:18:00Z",
                source="cluster-autoscaler",
            )
        )
    for pod in pending[3:]:
        events.append(
            KubeEvent(
                namespace=pod.namespace,
                kind="Pod",
                name=pod.name,
                reason="NotTriggerScaleUp",
                type="Normal",
                message=(
                    "pod didn't trigger scale-up: 1 max node group size reached, "
                    "3 IP space exhausted in zones " + ", ".join(ZONES)
                ),
                count=4,
                last_seen="2023-11-04T03:19:00Z",
                source="cluster-autoscaler",
            )
        )
    events.append(
        KubeEvent(
            namespace="test",
            kind="Pod",
            name=pending[0].name,
            reason="FailedScheduling",
            type="Warning",
            message="0/4 nodes are available: 4 Too many pods. preemption: 0/4 nodes are available: "
            "4 No preemption victims found for incoming pod.",
            count=6,
            last_seen="2023-11-04T03:19:30Z",
            source="default-scheduler",
        )
    )
    return KubeSection(
        available=True,
        context=f"gke_{PROJECT}_{LOCATION}_{CLUSTER}",
        api_groups=("apps", "batch", "cloud.google.com", "networking.gke.io", "networking.k8s.io", "policy"),
        nodes=nodes,
        pods_per_node={name: 104 for name in NODE_NAMES},
        host_network_pods_per_node={name: 6 for name in NODE_NAMES},
        waiting_pods=pending,
        events=tuple(events),
    )


def incident_kube_objects() -> list[JSON]:
    """The cluster side of the incident (`incident_kube()`) as API objects for the fake API server: its 4 nodes
    with their /24s, a few pods on each (one hostNetwork), the Pending pods and the events about them."""
    section = incident_kube()
    objs: list[JSON] = []
    for node in section.nodes:
        labels = {
            "topology.kubernetes.io/zone": node.zone,
            "node.kubernetes.io/instance-type": node.instance_type,
            "cloud.google.com/gke-nodepool": node.pool,
        }
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node.name, "labels": labels, "creationTimestamp": node.created},
                "spec": {"podCIDR": node.pod_cidrs[0], "podCIDRs": list(node.pod_cidrs)},
                "status": {
                    "addresses": [{"type": "InternalIP", "address": node.internal_ip}],
                    "allocatable": {"pods": str(node.allocatable_pods)},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        for i in range(4):
            objs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"web-{node.name[-4:]}-{i}", "namespace": "test"},
                    "spec": {"nodeName": node.name, "hostNetwork": i == 0, "containers": [{"name": "c"}]},
                    "status": {"phase": "Running"},
                }
            )
    for pod in section.waiting_pods:
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "creationTimestamp": pod.created},
                "spec": {"containers": [{"name": "c"}]},
                "status": {
                    "phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": pod.reason}],
                },
            }
        )
    for i, event in enumerate(section.events):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{event.name}.{i:04x}", "namespace": event.namespace},
                "involvedObject": {"kind": event.kind, "name": event.name, "namespace": event.namespace},
                "reason": event.reason,
                "type": event.type,
                "message": event.message,
                "count": event.count,
                "lastTimestamp": event.last_seen,
                "source": {"component": event.source},
            }
        )
    return objs


EXAMPLE_TAKEN_AT = "2023-11-04T03:20:00Z"


def incident_snapshot(gke: GkeSection) -> Snapshot:
    """The sealed snapshot of the incident (``examples/gke-demo-ip.snapshot.json``) from a collected
    GKE section: target gke p1/australia-southeast1/demo-ip plus ``incident_kube()``."""
    target = Target("gke", CLUSTER, project=PROJECT, location=LOCATION)
    return seal(Snapshot(target=target, taken_at=EXAMPLE_TAKEN_AT, kube=incident_kube(), gke=gke))
