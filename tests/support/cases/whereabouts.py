"""Whereabouts objects for tests, shaped like the incidents (docs/cloud-facts.md).

Plain Kubernetes dicts (IPPools, OverlappingRangeIPReservations, NetworkAttachmentDefinitions, pods,
nodes) so the same case seeds the fake API server or feeds the pure converters. The main case is the KB's
crashed node: a small pool (10.10.0.0/28, 14 usable addresses) whose every address is reserved, six of them
by pods that died with node `lab-worker-3`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cidrx.ipam.liveness import FINISHED_PHASES
from cidrx.ipam.whereabouts.collect import pod_refs, section_from
from cidrx.ipam.whereabouts.model import WhereaboutsSection, reservation_name
from cidrx.kube.collect import AddressRanges, _ipam_cidrs, node_from
from cidrx.kube.collect import section_from as kube_section_from
from cidrx.model.kube import KubeSection, PodState
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target

JSON = dict[str, Any]
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "whereabouts-stale.snapshot.json"
TARGET = Target("k8s", "lab", context="lab")
TAKEN_AT = "2024-12-09T03:41:00Z"

POOL_NS = "kube-system"  # where Whereabouts keeps its IPPools (its kubeconfig's namespace)
APP_NS = "nstest"
RANGE = "10.10.0.0/28"
POOL = "10.10.0.0-28"
NAD = "macvlan-data"
LIVE_NODES = ("lab-worker-1", "lab-worker-2")
CRASHED_NODE = "lab-worker-3"  # powered off: deleted from the cluster with its pods, CNI DEL never ran
LIVE_OFFSETS = tuple(range(1, 9))  # web-0..web-7 on the live nodes
STALE_OFFSETS = tuple(range(9, 15))  # db-0..db-5 on the crashed node, gone


def cid(n: int) -> str:
    return f"{n:02x}" * 32


def ip_of(offset: int, base: str = "10.10.0.") -> str:
    return f"{base}{offset}"


def ippool(name: str, cidr: str, allocations: dict[str, JSON], namespace: str = POOL_NS) -> JSON:
    return {
        "apiVersion": "whereabouts.cni.cncf.io/v1alpha1",
        "kind": "IPPool",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"range": cidr, "allocations": allocations},
    }


def alloc(podref: str, n: int, ifname: str = "net1") -> JSON:
    return {"id": cid(n), "podref": podref, "ifname": ifname}


def orip(ip: str, podref: str, n: int, namespace: str = POOL_NS, network_name: str = "") -> JSON:
    """An OverlappingRangeIPReservation named as Whereabouts names it (NormalizeIP)."""
    return {
        "apiVersion": "whereabouts.cni.cncf.io/v1alpha1",
        "kind": "OverlappingRangeIPReservation",
        "metadata": {"name": reservation_name(ip, network_name), "namespace": namespace},
        "spec": {"containerid": cid(n), "podref": podref, "ifname": "net1"},
    }


def nad(name: str, config: JSON | str, namespace: str = APP_NS) -> JSON:
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"config": config if isinstance(config, str) else json.dumps(config)},
    }


def macvlan(ipam: JSON) -> JSON:
    return {"cniVersion": "0.3.1", "name": "data", "type": "macvlan", "master": "eth1", "mode": "bridge", "ipam": ipam}


def whereabouts(**ipam: Any) -> JSON:
    return {"type": "whereabouts", **ipam}


def pod(
    name: str,
    phase: str,
    node: str,
    *,
    ips: list[str] | None = None,
    namespace: str = APP_NS,
    network: str = NAD,
) -> JSON:
    """A pod; `ips` (secondary-network addresses) writes the Multus network-status annotation, None leaves it
    out (not written yet)."""
    meta: JSON = {"name": name, "namespace": namespace, "annotations": {}}
    status: JSON = {"phase": phase}
    primary = f"192.168.{len(name)}.{sum(map(ord, name)) % 250 + 1}"
    if phase == "Running":
        status["podIP"] = primary
        status["podIPs"] = [{"ip": primary}]
    if ips is not None:
        entries = [
            {"name": "cbr0", "interface": "eth0", "ips": [primary], "default": True},
            {"name": f"{namespace}/{network}", "interface": "net1", "ips": ips},
        ]
        meta["annotations"]["k8s.v1.cni.cncf.io/network-status"] = json.dumps(entries)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": node}, "status": status}


def node(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"topology.kubernetes.io/zone": "lab-a", "node.kubernetes.io/instance-type": "vm.8c32g"},
            "creationTimestamp": "2024-11-02T08:00:00Z",
        },
        "spec": {"podCIDR": f"192.168.{LIVE_NODES.index(name) if name in LIVE_NODES else 9}.0/24"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": f"172.20.0.{11 + len(name) % 7}"}],
            "allocatable": {"pods": "110"},
        },
    }


def web(i: int) -> str:
    return f"{APP_NS}/web-{i - 1}"


def db(i: int) -> str:
    return f"{APP_NS}/db-{i - STALE_OFFSETS[0]}"


def crashed_node_objects() -> list[JSON]:
    """The KB incident: every address of 10.10.0.0/28 reserved; db-0..db-5 died with lab-worker-3."""
    allocations = {str(i): alloc(web(i), i) for i in LIVE_OFFSETS}
    allocations |= {str(i): alloc(db(i), i) for i in STALE_OFFSETS}
    objs: list[JSON] = [
        nad(NAD, macvlan(whereabouts(range=RANGE))),
        ippool(POOL, RANGE, allocations),
        *(node(n) for n in LIVE_NODES),
    ]
    for i in LIVE_OFFSETS:
        objs.append(orip(ip_of(i), web(i), i))
        objs.append(pod(f"web-{i - 1}", "Running", LIVE_NODES[i % 2], ips=[ip_of(i)]))
    objs += [orip(ip_of(i), db(i), i) for i in STALE_OFFSETS]
    return objs


def split(objs: list[JSON]) -> dict[str, list[JSON]]:
    out: dict[str, list[JSON]] = {}
    for obj in objs:
        out.setdefault(obj["kind"], []).append(obj)
    return out


def section_of(objs: list[JSON]) -> WhereaboutsSection:
    kinds = split(objs)
    return section_from(
        kinds.get("IPPool", []),
        kinds.get("OverlappingRangeIPReservation", []),
        kinds.get("NetworkAttachmentDefinition", []),
    )


def kept_pods(pods: Iterable[JSON], section: WhereaboutsSection) -> list[PodState]:
    """The pods the collector keeps (cidrx.kube.collect): of the unfinished pods (finished ones are not
    even listed), every pod a record names and every pod reporting an address in a Whereabouts range or
    an address a reservation's name spells."""
    kube = kube_section_from(
        (),
        (),
        (p for p in pods if (p.get("status") or {}).get("phase") not in FINISHED_PHASES),
        (),
        "",
        ipam_pod_refs=pod_refs(section),
        ipam_ranges=AddressRanges.of(_ipam_cidrs({"whereabouts": section})),
    )
    return list(kube.ipam_pods)


def pods_of(objs: list[JSON], section: WhereaboutsSection) -> dict[str, PodState]:
    return {s.key: s for s in kept_pods(split(objs).get("Pod", []), section)}


def snapshot_of(objs: list[JSON], taken_at: str = TAKEN_AT) -> Snapshot:
    section = section_of(objs)
    pods = pods_of(objs, section)
    kube = KubeSection(
        available=True,
        context="lab",
        api_groups=("k8s.cni.cncf.io", "whereabouts.cni.cncf.io"),
        nodes=tuple(sorted((node_from(n) for n in split(objs).get("Node", [])), key=lambda n: n.name)),
        ipam_pods=tuple(sorted(pods.values(), key=lambda p: (p.namespace, p.name))),
        whereabouts=section,
    )
    return seal(Snapshot(target=TARGET, taken_at=taken_at, kube=kube))


def example_snapshot() -> Snapshot:
    """What examples/whereabouts-stale.snapshot.json holds."""
    return snapshot_of(crashed_node_objects())
