"""Large synthetic estates, served by the project's loopback fakes, for the benchmarks of docs/performance.md.

Why it exists: the budgets are stated for a 2,000-node, 60,000-pod cluster with 600 Whereabouts pools and
4,096 Calico blocks, and a VPC with 5,000 subnets; nobody has such a cluster at hand, so this module
builds one in `tests/support/fakes/kube_server.py`, `tests/support/fakes/gcp_server.py` and a moto server
(the EKS incident of `tests/support/estates/eks.py` with its VPC grown to as many subnets). `scale` multiplies
every count (`--scale 0.01` is the CI smoke size).

The objects are shaped like a real API server's answers (managedFields, container specs, node images,
conditions), so pages weigh what real pages weigh (about 3-4 KB per pod). Parts that are the same for every
pod of a Deployment are shared dicts: the fake never mutates a stored object, and sharing keeps the server's
own memory (in the parent process) small; the JSON on the wire is the same.

The cluster: pod p runs on node p % nodes in Deployment p // 30; Calico pool 10.0.0.0/14 split into /26
blocks, two affine to each node (ordinal 0 = tunnel address, then the node's pods); the first 40% of pods
also have a Whereabouts address (pools of /26 in 172.16.0.0/12, 40 allocations each, plus two allocations
per pool whose pod is gone: stale); node IPAM gives each node a /24 of 10.192.0.0/13 (kube-controller-manager
flags in kube-system). 3% of pods wait in ContainerCreating; events mix the reasons cidrx reads with
ordinary ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Any

from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer

JSON = dict[str, Any]

FULL = {
    "nodes": 2000,
    "pods": 60000,
    "events": 20000,
    "whereabouts_pools": 600,
    "calico_blocks": 4096,
    "subnets": 5000,
    "routes": 20000,
}
PODS_PER_DEPLOYMENT = 30
NAMESPACES = 60
WB_PER_POOL = 40
WB_STALE_PER_POOL = 2
CALICO = "crd.projectcalico.org/v1"
WHEREABOUTS = "whereabouts.cni.cncf.io/v1alpha1"
CALICO_POOL = IPv4Network("10.0.0.0/14")
WB_BASE = int(IPv4Address("172.16.0.0"))
NODE_CIDR_BASE = int(IPv4Address("10.192.0.0"))
CLUSTER_CIDR = "10.192.0.0/13"
NET_NS = "net-attach"
TS = "2024-11-02T08:00:00Z"
EVENT_MIX = (  # reason, type, share in 20: about half are reasons cidrx reads
    ("FailedCreatePodSandBox", "Warning", 4),
    ("FailedScheduling", "Warning", 3),
    ("InsufficientFreeAddressesInSubnet", "Warning", 1),
    ("FailedScaleUp", "Warning", 1),
    ("NotTriggerScaleUp", "Normal", 1),
    ("Pulled", "Normal", 4),
    ("Started", "Normal", 3),
    ("Scheduled", "Normal", 3),
)


@dataclass(frozen=True)
class Sizes:
    nodes: int
    pods: int
    events: int
    whereabouts_pools: int
    calico_blocks: int
    subnets: int
    routes: int

    @classmethod
    def at(cls, scale: float) -> Sizes:
        return cls(**{k: max(1, round(v * scale)) for k, v in FULL.items()})


def scaled(scale: float) -> Sizes:
    return Sizes.at(scale)


# ---- Kubernetes objects -------------------------------------------------------------------------


def _managed_fields(manager: str) -> list[JSON]:
    return [
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": TS,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}},
        }
    ]


def node_obj(i: int) -> JSON:
    name = f"node-{i:05d}"
    zone = f"zone-{'abc'[i % 3]}"
    cidr = str(IPv4Network((NODE_CIDR_BASE + (i << 8), 24)))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "creationTimestamp": TS,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "lab",
                "node.kubernetes.io/instance-type": "vm.16c64g",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "projectcalico.org/IPv4Address": f"172.20.{i >> 8}.{i & 255}/16",
            },
            "managedFields": _managed_fields("kubelet"),
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"lab://{name}"},
        "status": {
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "lastHeartbeatTime": TS,
                    "reason": f"Kubelet{t}",
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"172.20.{i >> 8}.{i & 255}"},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": {"cpu": "15890m", "memory": "61Gi", "pods": "110", "ephemeral-storage": "95Gi"},
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "nodeInfo": _NODE_INFO,
            "images": _NODE_IMAGES,
        },
    }


_NODE_INFO = {
    "kubeletVersion": "v1.30.2",
    "kubeProxyVersion": "v1.30.2",
    "containerRuntimeVersion": "containerd://1.7.13",
    "osImage": "Ubuntu 22.04.4 LTS",
    "kernelVersion": "6.5.0-1020",
    "operatingSystem": "linux",
    "architecture": "amd64",
}
_NODE_IMAGES = [
    {"names": [f"registry.example/img-{k}@sha256:{k:064x}"], "sizeBytes": 10_000_000 + k} for k in range(12)
]


def _pod_spec(d: int) -> JSON:
    """The spec template of Deployment `d` (shared by its pods; nodeName is per pod)."""
    return {
        "containers": [
            {
                "name": "app",
                "image": f"registry.example/team-{d % 40}/svc-{d}:1.{d % 9}.0",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": f"SETTING_{k}", "value": f"value-{d}-{k}"} for k in range(6)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                "volumeMounts": [
                    {
                        "name": "kube-api-access",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": True,
                    }
                ],
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
            }
        ],
        "volumes": [
            {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
        ],
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
    }


def calico_block_cidr(b: int) -> str:
    return str(IPv4Network((int(CALICO_POOL.network_address) + (b << 6), 26)))


def wb_pool_cidr(i: int) -> str:
    return str(IPv4Network((WB_BASE + (i << 6), 26)))


def pod_name(p: int) -> tuple[str, str]:
    d = p // PODS_PER_DEPLOYMENT
    return f"ns-{d % NAMESPACES:02d}", f"svc-{d:05d}-7f9c{d % 97:02d}-{p % PODS_PER_DEPLOYMENT:02d}"


class KubeEstate:
    """The objects of one synthetic cluster, generated lazily (see the module docstring)."""

    def __init__(self, sizes: Sizes) -> None:
        self.sizes = sizes
        self.wb_pods = min(sizes.pods, sizes.whereabouts_pools * WB_PER_POOL, round(sizes.pods * 0.4))

    def calico_ip(self, p: int) -> str | None:
        """The Calico address of pod p: in the first block of its node, at ordinal 1 + p // nodes."""
        n = p % self.sizes.nodes
        ordinal = 1 + p // self.sizes.nodes
        block = 2 * n + (ordinal >> 6)
        if block >= self.sizes.calico_blocks:
            return None
        return str(IPv4Address(int(CALICO_POOL.network_address) + (block << 6) + (ordinal & 63)))

    def wb_ip(self, p: int) -> str:
        return str(IPv4Address(WB_BASE + ((p // WB_PER_POOL) << 6) + 1 + p % WB_PER_POOL))

    def nodes(self) -> Iterator[JSON]:
        for i in range(self.sizes.nodes):
            yield node_obj(i)

    def pods(self) -> Iterator[JSON]:
        specs: dict[int, JSON] = {}
        owner_refs: dict[int, list[JSON]] = {}
        mf = _managed_fields("kube-controller-manager")
        for p in range(self.sizes.pods):
            d = p // PODS_PER_DEPLOYMENT
            ns, name = pod_name(p)
            node = f"node-{p % self.sizes.nodes:05d}"
            template = specs.get(d)
            if template is None:
                specs.clear()
                template = specs[d] = _pod_spec(d)
                owner_refs.clear()
                owner_refs[d] = [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": f"svc-{d:05d}-7f9c{d % 97:02d}",
                        "uid": f"rs-{d}",
                        "controller": True,
                    }
                ]
            waiting = p % 33 == 7
            ip = None if waiting else self.calico_ip(p)
            annotations: JSON = {"cni.projectcalico.org/podIP": f"{ip}/32"} if ip else {}
            if p < self.wb_pods and not waiting:
                annotations["k8s.v1.cni.cncf.io/network-status"] = json.dumps(
                    [
                        {"name": "k8s-pod-network", "interface": "eth0", "ips": [ip] if ip else [], "default": True},
                        {"name": f"{NET_NS}/wb-{p // WB_PER_POOL:04d}", "interface": "net1", "ips": [self.wb_ip(p)]},
                    ]
                )
            status: JSON
            if waiting:
                status = {
                    "phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": TS}],
                    "containerStatuses": [
                        {
                            "name": "app",
                            "ready": False,
                            "restartCount": 0,
                            "image": "x",
                            "imageID": "",
                            "state": {"waiting": {"reason": "ContainerCreating"}},
                        }
                    ],
                    "hostIP": f"172.20.{(p % self.sizes.nodes) >> 8}.{p % self.sizes.nodes & 255}",
                    "qosClass": "Burstable",
                    "startTime": TS,
                }
            else:
                status = {
                    "phase": "Running",
                    "podIP": ip,
                    "podIPs": [{"ip": ip}] if ip else [],
                    "hostIP": f"172.20.{(p % self.sizes.nodes) >> 8}.{p % self.sizes.nodes & 255}",
                    "conditions": _RUNNING_CONDITIONS,
                    "containerStatuses": [
                        {
                            "name": "app",
                            "ready": True,
                            "restartCount": 0,
                            "started": True,
                            "image": template["containers"][0]["image"],
                            "imageID": f"sha256:{d:064x}",
                            "containerID": f"containerd://{p:064x}",
                            "state": {"running": {"startedAt": TS}},
                        }
                    ],
                    "qosClass": "Burstable",
                    "startTime": TS,
                }
                if not ip:
                    status.pop("podIP")
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "creationTimestamp": TS,
                    "labels": {"app": f"svc-{d:05d}", "pod-template-hash": f"7f9c{d % 97:02d}"},
                    "annotations": annotations,
                    "ownerReferences": owner_refs[d],
                    "managedFields": mf,
                },
                "spec": {**template, "nodeName": node},
                "status": status,
            }

    def control_plane(self) -> Iterator[JSON]:
        yield {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "kube-controller-manager-cp-0",
                "namespace": "kube-system",
                "labels": {"component": "kube-controller-manager", "tier": "control-plane"},
            },
            "spec": {
                "nodeName": "cp-0",
                "hostNetwork": True,
                "containers": [
                    {
                        "name": "kube-controller-manager",
                        "command": [
                            "kube-controller-manager",
                            "--allocate-node-cidrs=true",
                            f"--cluster-cidr={CLUSTER_CIDR}",
                            "--node-cidr-mask-size=24",
                        ],
                    }
                ],
            },
            "status": {"phase": "Running"},
        }

    def events(self) -> Iterator[JSON]:
        wheel = [(r, t) for r, t, share in EVENT_MIX for _ in range(share)]
        for e in range(self.sizes.events):
            reason, kind_type = wheel[e % len(wheel)]
            p = (e * 7919) % self.sizes.pods
            ns, name = pod_name(p)
            yield {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{name}.{e:012x}", "namespace": ns, "creationTimestamp": TS},
                "involvedObject": {"kind": "Pod", "namespace": ns, "name": name, "uid": f"uid-{p}", "apiVersion": "v1"},
                "reason": reason,
                "type": kind_type,
                "message": f"{reason}: synthetic event {e} for pod {ns}/{name}",
                "source": {"component": "kubelet", "host": f"node-{p % self.sizes.nodes:05d}"},
                "firstTimestamp": TS,
                "lastTimestamp": TS,
                "count": 1 + e % 5,
            }

    def whereabouts(self) -> Iterator[JSON]:
        pools = self.sizes.whereabouts_pools
        for i in range(pools):
            cidr = wb_pool_cidr(i)
            allocations: JSON = {}
            for k in range(WB_PER_POOL):
                p = i * WB_PER_POOL + k
                if p >= self.wb_pods:
                    break
                ns, name = pod_name(p)
                allocations[str(1 + k)] = {"id": f"{p:064x}", "podref": f"{ns}/{name}", "ifname": "net1"}
                yield {  # the cluster-wide reservation Whereabouts writes for every address
                    "apiVersion": WHEREABOUTS,
                    "kind": "OverlappingRangeIPReservation",
                    "metadata": {"name": self.wb_ip(p), "namespace": "kube-system"},
                    "spec": {"containerid": f"{p:064x}", "podref": f"{ns}/{name}", "ifname": "net1"},
                }
            for k in range(WB_STALE_PER_POOL):  # pods that died with a node: stale
                allocations[str(50 + k)] = {"id": f"dead{i:060x}", "podref": f"ns-00/gone-{i}-{k}", "ifname": "net1"}
            yield {
                "apiVersion": WHEREABOUTS,
                "kind": "IPPool",
                "metadata": {"name": cidr.replace("/", "-"), "namespace": "kube-system"},
                "spec": {"range": cidr, "allocations": allocations},
            }
            config = {
                "cniVersion": "0.3.1",
                "name": f"wb-{i:04d}",
                "type": "macvlan",
                "master": "eth1",
                "mode": "bridge",
                "ipam": {"type": "whereabouts", "range": cidr},
            }
            yield {
                "apiVersion": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": f"wb-{i:04d}", "namespace": NET_NS},
                "spec": {"config": json.dumps(config)},
            }

    def calico(self) -> Iterator[JSON]:
        s = self.sizes
        yield {
            "apiVersion": CALICO,
            "kind": "IPPool",
            "metadata": {"name": "default-ipv4-ippool"},
            "spec": {"cidr": str(CALICO_POOL), "blockSize": 26, "ipipMode": "Always", "natOutgoing": True},
        }
        yield {
            "apiVersion": CALICO,
            "kind": "IPAMConfig",
            "metadata": {"name": "default"},
            "spec": {"strictAffinity": False, "autoAllocateBlocks": True, "maxBlocksPerHost": 0},
        }
        # ordinals used in each block: pods p with calico_ip in it
        used: dict[int, dict[int, JSON]] = {}
        for p in range(s.pods):
            ip = self.calico_ip(p)
            if ip is None or p % 33 == 7:
                continue
            off = int(IPv4Address(ip)) - int(CALICO_POOL.network_address)
            ns, name = pod_name(p)
            node = f"node-{p % s.nodes:05d}"
            used.setdefault(off >> 6, {})[off & 63] = {
                "handle_id": f"k8s-pod-network.{p:064x}",
                "secondary": {"namespace": ns, "pod": name, "node": node},
            }
        for b in range(s.calico_blocks):
            n = b // 2
            host = f"node-{n:05d}" if n < s.nodes else None
            ordinals = used.get(b, {})
            if host and b % 2 == 0:
                ordinals[0] = {
                    "handle_id": f"ipip-tunnel-addr-{host}",
                    "secondary": {"node": host, "type": "ipipTunnelAddress"},
                }
                if n % 50 == 3:  # a leaked address: its pod is gone
                    ordinals[63] = {
                        "handle_id": f"k8s-pod-network.gone{n:060x}",
                        "secondary": {"namespace": "ns-00", "pod": f"gone-{n}", "node": host},
                    }
            allocations: list[int | None] = [None] * 64
            attributes: list[JSON] = []
            for o in sorted(ordinals):
                allocations[o] = len(attributes)
                attributes.append(ordinals[o])
            cidr = calico_block_cidr(b)
            yield {
                "apiVersion": CALICO,
                "kind": "IPAMBlock",
                "metadata": {"name": cidr.replace(".", "-").replace("/", "-")},
                "spec": {
                    "cidr": cidr,
                    "affinity": f"host:{host}" if host else None,
                    "strictAffinity": False,
                    "allocations": allocations,
                    "unallocated": [o for o in range(64) if allocations[o] is None],
                    "attributes": attributes,
                    "deleted": False,
                },
            }
            if host:
                yield {
                    "apiVersion": CALICO,
                    "kind": "BlockAffinity",
                    "metadata": {"name": f"{host}-{cidr.replace('.', '-').replace('/', '-')}"},
                    "spec": {"node": host, "cidr": cidr, "state": "confirmed", "deleted": "false"},
                }
            for attr in attributes:
                hid = attr["handle_id"]
                yield {
                    "apiVersion": CALICO,
                    "kind": "IPAMHandle",
                    "metadata": {"name": hid.lower()},
                    "spec": {"handleID": hid, "block": {cidr: 1}, "deleted": False},
                }

    def objects(self) -> Iterator[JSON]:
        yield from self.nodes()
        yield from self.control_plane()
        yield from self.pods()
        yield from self.events()
        yield from self.whereabouts()
        yield from self.calico()


_RUNNING_CONDITIONS = [
    {"type": t, "status": "True", "lastTransitionTime": TS}
    for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
]


@contextmanager
def serve_kube(sizes: Sizes, workdir: Path) -> Iterator[tuple[FakeKubeServer, Path, dict[str, int]]]:
    """A started fake API server holding the estate, its kubeconfig, and how many objects of each kind."""
    counts: dict[str, int] = {}
    estate = KubeEstate(sizes)

    def counted() -> Iterator[JSON]:
        for obj in estate.objects():
            counts[obj["kind"]] = counts.get(obj["kind"], 0) + 1
            yield obj

    with FakeKubeServer() as server:
        server.put_many(counted(), copy=False)
        yield server, server.kubeconfig(workdir / "kubeconfig.yaml"), counts


# ---- GCP ----------------------------------------------------------------------------------------

GCP_PROJECT = "bench"
GCP_LOCATION = "us-central1"
GCP_REGIONS = ("us-central1", "us-east1", "europe-west1", "asia-southeast1", "australia-southeast1")
GCP_NETWORK = "shared-vpc"
GKE_CLUSTER = "big"


def bench_routes(count: int) -> Iterator[JSON]:
    """`count` routes of the bench network in 172.16.0.0/12: mostly GKE node routes (/28 here, next hop an
    instance), every 10th a static route to an IP, every 50th one over a VPN tunnel."""
    base = int(IPv4Address("172.16.0.0"))
    link = "https://www.googleapis.com/compute/v1/projects"
    for i in range(count):
        route: JSON = {
            "name": f"route-{i:05d}",
            "network": GCP_NETWORK,
            "destRange": str(IPv4Network((base + (i << 4), 28))),
        }
        if i % 50 == 0:
            route["nextHopVpnTunnel"] = f"{link}/{GCP_PROJECT}/regions/{GCP_LOCATION}/vpnTunnels/dc-{i % 7}"
        elif i % 10 == 0:
            route["nextHopIp"] = "10.0.0.250"
        else:
            route["description"] = "k8s-node-route"
            route["nextHopInstance"] = f"{link}/{GCP_PROJECT}/zones/{GCP_LOCATION}-a/instances/gke-node-{i:05d}"
        yield route


def seed_gcp(fake: FakeGcp, sizes: Sizes) -> None:
    """A Shared-VPC-style network with `sizes.subnets` subnets (/24 primary, two secondary ranges each)
    over five regions, `sizes.routes` routes besides the subnets' own, and a GKE cluster on the first one."""
    fake.add_network(GCP_PROJECT, {"name": GCP_NETWORK})
    fake.add_routes(GCP_PROJECT, bench_routes(sizes.routes))
    for i in range(sizes.subnets):
        region = GCP_REGIONS[i % len(GCP_REGIONS)]
        fake.add_subnet(
            GCP_PROJECT,
            region,
            {
                "name": f"subnet-{i:05d}",
                "network": GCP_NETWORK,
                "ipCidrRange": str(IPv4Network((int(IPv4Address("10.0.0.0")) + (i << 8), 24))),
                "secondaryIpRanges": [
                    {
                        "rangeName": f"pods-{i:05d}",
                        "ipCidrRange": str(IPv4Network((int(IPv4Address("100.64.0.0")) + (i << 10), 22))),
                    },
                    {
                        "rangeName": f"svc-{i:05d}",
                        "ipCidrRange": str(IPv4Network((int(IPv4Address("192.168.0.0")) + (i << 4), 28))),
                    },
                ],
            },
        )
    fake.add_cluster(
        GCP_PROJECT,
        GCP_LOCATION,
        {
            "name": GKE_CLUSTER,
            "network": GCP_NETWORK,
            "subnetwork": "subnet-00000",
            "ipAllocationPolicy": {
                "useIpAliases": True,
                "clusterSecondaryRangeName": "pods-00000",
                "servicesSecondaryRangeName": "svc-00000",
                "clusterIpv4CidrBlock": "100.64.0.0/22",
                "servicesIpv4CidrBlock": "192.168.0.0/28",
            },
            "defaultMaxPodsConstraint": {"maxPodsPerNode": "110"},
            "nodePools": [
                {
                    "name": "default-pool",
                    "config": {"machineType": "e2-standard-4"},
                    "initialNodeCount": 3,
                    "locations": [f"{GCP_LOCATION}-a"],
                    "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 10},
                    "maxPodsConstraint": {"maxPodsPerNode": "110"},
                    "networkConfig": {"podRange": "pods-00000", "podIpv4CidrBlock": "100.64.0.0/22"},
                }
            ],
        },
    )


@contextmanager
def serve_gcp(sizes: Sizes) -> Iterator[FakeGcp]:
    with FakeGcp(regions=GCP_REGIONS, validate=False) as fake:
        seed_gcp(fake, sizes)
        yield fake


AWS_REGION = "ap-southeast-2"
AWS_CLUSTER = "big"
# Bulk subnets go into secondary CIDRs of their own, clear of the incident world's 10.0/16 and its peer's 10.1/16.
AWS_BULK_CIDRS = ("10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16", "100.64.0.0/16")


def aws_env(url: str) -> dict[str, str]:
    """The environment that points boto3 (in a worker process) at the moto server, with fake keys."""
    from tests.support.estates.eks import FAKE_AWS_ENV

    return {**FAKE_AWS_ENV, "AWS_ENDPOINT_URL": url}


def seed_aws(url: str, sizes: Sizes) -> str:
    """The EKS incident of tests/support/estates/eks.py, then its VPC grown to `sizes.subnets` subnets (/27s in four
    associated secondary CIDRs, over three AZs); returns the VPC id.

    The bulk subnets are added through moto's EC2 backend in this process (the server shares it): 5,000
    CreateSubnet round trips cost minutes in moto, and only the reads are measured.
    """
    import boto3
    from moto.ec2.models import ec2_backends

    from tests.support.estates.eks import ACCOUNT, build_incident

    session = boto3.Session(region_name=AWS_REGION)
    ec2, eks = session.client("ec2", endpoint_url=url), session.client("eks", endpoint_url=url)
    world = build_incident(ec2, eks, region=AWS_REGION, cluster=AWS_CLUSTER)
    for cidr in AWS_BULK_CIDRS:
        ec2.associate_vpc_cidr_block(VpcId=world.vpc_id, CidrBlock=cidr)
    backend = ec2_backends[ACCOUNT][AWS_REGION]
    per_cidr = 1 << (27 - 16)
    for i in range(max(0, sizes.subnets - len(world.subnet_ids))):
        base = IPv4Network(AWS_BULK_CIDRS[i // per_cidr]).network_address
        net = IPv4Network((int(base) + ((i % per_cidr) << 5), 27))
        backend.create_subnet(
            world.vpc_id,
            str(net),
            availability_zone=f"{AWS_REGION}{'abc'[i % 3]}",
            tags={"subnet": {"Name": f"bulk-{i:05d}"}},
        )
    return world.vpc_id


@contextmanager
def serve_aws(sizes: Sizes) -> Iterator[str]:
    """A moto server on loopback holding the grown EKS incident; yields its URL."""
    import logging
    import os

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MOTO_EC2_LOAD_DEFAULT_AMIS")}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        seed_aws(url, sizes)
        yield url
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
