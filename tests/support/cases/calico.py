"""Calico IPAM worlds as plain Kubernetes objects (dicts), shared by the pure and the fake-server tests.

`incident()` is the Calico incident of docs/cloud-facts.md in small: pool 10.0.0.0/24 with /26
blocks (4 blocks); node-1 and node-2 hold two blocks each, node-3 holds none and three of its pods
borrowed addresses from node-1's first block. On top: a leaked address (pod gone), an address of a pod
that now runs with another one, a Pending pod's address (never a leak), tunnel addresses (never leaks)
and an empty block on node-2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any

from cidrx.ipam.calico.collect import section_from
from cidrx.ipam.calico.model import CalicoSection
from cidrx.kube.collect import pod_state_from
from cidrx.model.kube import KubeNode, KubeSection, PodState
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target

JSON = dict[str, Any]
API = "crd.projectcalico.org/v1"
TARGET = Target("k8s", "lab", context="lab")
TAKEN_AT = "2024-05-01T10:00:00Z"


def handle_of(ns: str, pod: str) -> str:
    return f"k8s-pod-network.{ns}.{pod}"


def pod_attr(ns: str, pod: str, node: str) -> JSON:
    return {"handle_id": handle_of(ns, pod), "secondary": {"namespace": ns, "pod": pod, "node": node}}


def tunnel_attr(node: str, kind: str = "ipipTunnelAddress") -> JSON:
    return {"handle_id": f"ipip-tunnel-addr-{node}", "secondary": {"node": node, "type": kind}}


def block_name(cidr: str) -> str:
    return cidr.replace(".", "-").replace("/", "-")


def ippool(name: str, cidr: str, block_size: int = 26, **spec: Any) -> JSON:
    body = {"cidr": cidr, "blockSize": block_size, "ipipMode": "Always", "natOutgoing": True, **spec}
    return {"apiVersion": API, "kind": "IPPool", "metadata": {"name": name}, "spec": body}


def ipamblock(cidr: str, host: str | None, used: dict[int, JSON]) -> JSON:
    """A block whose ordinals in `used` hold those attributes (one attribute entry each)."""
    size = IPv4Network(cidr).num_addresses
    attributes: list[JSON] = []
    allocations: list[int | None] = [None] * size
    for ordinal in sorted(used):
        allocations[ordinal] = len(attributes)
        attributes.append(used[ordinal])
    spec: JSON = {
        "cidr": cidr,
        "strictAffinity": False,
        "allocations": allocations,
        "unallocated": [o for o in range(size) if allocations[o] is None],
        "attributes": attributes,
        "deleted": False,
    }
    if host:  # upstream's CRD types affinity as a string: a block without one leaves the field out
        spec["affinity"] = f"host:{host}"
    return {"apiVersion": API, "kind": "IPAMBlock", "metadata": {"name": block_name(cidr)}, "spec": spec}


def affinity(node: str, cidr: str) -> JSON:
    spec = {"node": node, "cidr": cidr, "state": "confirmed", "deleted": "false"}
    name = f"{node}-{block_name(cidr)}"
    return {"apiVersion": API, "kind": "BlockAffinity", "metadata": {"name": name}, "spec": spec}


def handles_for(blocks: list[JSON]) -> list[JSON]:
    counts: dict[str, dict[str, int]] = {}
    for b in blocks:
        spec = b["spec"]
        for a in spec["allocations"]:
            if a is not None:
                hid = spec["attributes"][a]["handle_id"]
                per = counts.setdefault(hid, {})
                per[spec["cidr"]] = per.get(spec["cidr"], 0) + 1
    return [
        {
            "apiVersion": API,
            "kind": "IPAMHandle",
            "metadata": {"name": hid.lower()},
            "spec": {"handleID": hid, "block": per, "deleted": False},
        }
        for hid, per in sorted(counts.items())
    ]


def ipamconfig(strict: bool = False, max_blocks: int = 0) -> JSON:
    spec = {"strictAffinity": strict, "autoAllocateBlocks": True, "maxBlocksPerHost": max_blocks}
    return {"apiVersion": API, "kind": "IPAMConfig", "metadata": {"name": "default"}, "spec": spec}


def node(name: str, ip: str, pods: int = 110) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "lab-a"}},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": ip}],
            "allocatable": {"pods": str(pods)},
        },
    }


def pod(ns: str, name: str, node_name: str, ip: str | None, phase: str = "Running") -> JSON:
    status: JSON = {"phase": phase}
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"nodeName": node_name},
        "status": status,
    }


@dataclass
class World:
    pools: list[JSON] = field(default_factory=list)
    blocks: list[JSON] = field(default_factory=list)
    affinities: list[JSON] = field(default_factory=list)
    config: list[JSON] = field(default_factory=list)
    nodes: list[JSON] = field(default_factory=list)
    pods: list[JSON] = field(default_factory=list)

    @property
    def handles(self) -> list[JSON]:
        return handles_for(self.blocks)

    def objects(self) -> list[JSON]:
        return [*self.pools, *self.blocks, *self.affinities, *self.handles, *self.config, *self.nodes, *self.pods]

    def calico(self) -> CalicoSection:
        return section_from(self.pools, self.blocks, self.affinities, self.handles, self.config)

    def pod_states(self) -> dict[str, PodState]:
        states = [pod_state_from(p) for p in self.pods]
        return {p.key: p for p in states}

    def kube_nodes(self) -> list[KubeNode]:
        out = []
        for n in self.nodes:
            ip = n["status"]["addresses"][0]["address"]
            pods = int(n["status"]["allocatable"]["pods"])
            out.append(KubeNode(n["metadata"]["name"], "lab-a", "", "", internal_ip=ip, allocatable_pods=pods))
        return out

    def snapshot(self) -> Snapshot:
        kube = KubeSection(
            available=True,
            context="lab",
            api_groups=("crd.projectcalico.org",),
            nodes=tuple(self.kube_nodes()),
            ipam_pods=tuple(sorted(self.pod_states().values(), key=lambda p: (p.namespace, p.name))),
            calico=self.calico(),
        )
        return seal(Snapshot(target=TARGET, taken_at=TAKEN_AT, kube=kube))


BLOCK_A, BLOCK_B, BLOCK_C, BLOCK_D = "10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/26", "10.0.0.192/26"


def incident() -> World:
    w = World()
    w.pools = [ippool("default-ipv4-ippool", "10.0.0.0/24")]
    w.config = []  # no IPAMConfig: Calico's defaults, borrowing allowed
    w.nodes = [node("node-1", "10.10.0.11"), node("node-2", "10.10.0.12"), node("node-3", "10.10.0.13")]
    a: dict[int, JSON] = {0: tunnel_attr("node-1")}
    for i in range(40):  # ordinals 1..40: node-1's own pods
        a[1 + i] = pod_attr("default", f"web-{i}", "node-1")
        w.pods.append(pod("default", f"web-{i}", "node-1", f"10.0.0.{1 + i}"))
    for i in range(3):  # ordinals 41..43: node-3's pods borrowed node-1's addresses
        a[41 + i] = pod_attr("default", f"app-{i}", "node-3")
        w.pods.append(pod("default", f"app-{i}", "node-3", f"10.0.0.{41 + i}"))
    a[44] = pod_attr("default", "web-gone", "node-1")  # its pod is gone: leaked
    a[45] = pod_attr("default", "web-pending", "node-1")  # its pod is Pending: never a leak
    w.pods.append(pod("default", "web-pending", "node-1", None, phase="Pending"))
    b: dict[int, JSON] = {}
    for i in range(10):
        b[i] = pod_attr("batch", f"job-{i}", "node-1")
        w.pods.append(pod("batch", f"job-{i}", "node-1", f"10.0.0.{64 + i}"))
    b[10] = pod_attr("default", "replaced", "node-1")  # its pod is gone (replaced by another): leaked
    b[11] = pod_attr("default", "moved", "node-1")  # the pod exists, now with 10.0.0.159: live (never released)
    c: dict[int, JSON] = {0: tunnel_attr("node-2")}
    for i in range(30):
        c[1 + i] = pod_attr("shop", f"cart-{i}", "node-2")
        w.pods.append(pod("shop", f"cart-{i}", "node-2", f"10.0.0.{129 + i}"))
    c[31] = pod_attr("default", "moved", "node-2")
    w.pods.append(pod("default", "moved", "node-2", "10.0.0.159"))
    w.blocks = [
        ipamblock(BLOCK_A, "node-1", a),
        ipamblock(BLOCK_B, "node-1", b),
        ipamblock(BLOCK_C, "node-2", c),
        ipamblock(BLOCK_D, "node-2", {}),
    ]
    w.affinities = [
        affinity("node-1", BLOCK_A),
        affinity("node-1", BLOCK_B),
        affinity("node-2", BLOCK_C),
        affinity("node-2", BLOCK_D),
    ]
    return w


def healthy() -> World:
    """Three nodes, one block each in a /24, strictAffinity on: nothing to report."""
    w = World()
    w.pools = [ippool("default-ipv4-ippool", "10.0.0.0/24")]
    w.config = [ipamconfig(strict=True, max_blocks=1)]
    for n, cidr in enumerate((BLOCK_A, BLOCK_B, BLOCK_C), start=1):
        name = f"node-{n}"
        w.nodes.append(node(name, f"10.10.0.{10 + n}"))
        used = {0: tunnel_attr(name, "vxlanTunnelAddress")}
        for i in range(5):
            used[1 + i] = pod_attr("default", f"{name}-p{i}", name)
            w.pods.append(pod("default", f"{name}-p{i}", name, str(IPv4Network(cidr).network_address + 1 + i)))
        w.blocks.append(ipamblock(cidr, name, used))
        w.affinities.append(affinity(name, cidr))
    return w
