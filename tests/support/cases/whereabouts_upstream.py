"""Whereabouts' own reconciler test table, replayed as cidrx cases, and the named-network cluster.

Why it exists: cidrx's rules about Whereabouts must be grounded in what Whereabouts itself decides, not in
our own assumptions. Each case rebuilds one fixture of k8snetworkplumbingwg/whereabouts
pkg/reconciler/ip_test.go (commit 3a262bd0cd873e13d9b379342f8251b852a89b8f; pods, IPPools and
OverlappingRangeIPReservations as its generatePod/generateIPPoolSpec/generateClusterWideIPReservation
helpers make them), writes down what upstream's reconciler removes, and what cidrx removes. cidrx may
remove less (it is never less safe): where it does, `differs` says why.

Several upstream fixtures use a range with host bits (10.10.10.0/16, 2001:1b74:480:60b1::10/64). cidrx
never releases from such a pool, so each of those cases also has a `canonical` twin: the same addresses
allocated from the network's own range (offsets re-counted from the network address), where cidrx's
decisions can be compared with upstream's entry by entry.

The named-network cluster (`named_network_objects`) is the incident that broke the first version: IPAM
configs with `network_name`, so every pool and reservation name carries the `<network_name>-` prefix, and
an IPv6 address ending in "::" (NormalizeIP appends "0").
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field, replace
from typing import Any

from cidrx.ipam.whereabouts.model import pool_name, reservation_name
from cidrx.model.snapshot import Snapshot
from tests.support.cases import whereabouts as wc

JSON = dict[str, Any]
UPSTREAM = "k8snetworkplumbingwg/whereabouts pkg/reconciler/ip_test.go @3a262bd"
NS = "default"  # ip_test.go's namespace for pods, pools and reservations alike


def upstream_pod(name: str, *nets: tuple[str, str], phase: str = "Running", extra: JSON | None = None) -> JSON:
    """generatePod: Multus network-status listing (ip, network) pairs, interfaces net1.., no default
    network entry, no status.podIPs; an empty list marshals as "null" (Go's nil slice)."""
    status = [{"name": net, "interface": f"net{i + 1}", "ips": [ip]} for i, (ip, net) in enumerate(nets)]
    meta: JSON = {
        "name": name,
        "namespace": NS,
        "annotations": {
            "k8s.v1.cni.cncf.io/networks": ",".join(net for _ip, net in nets),
            "k8s.v1.cni.cncf.io/network-status": json.dumps(status or None),
        },
    }
    obj: JSON = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}, "status": {"phase": phase}}
    if extra:
        obj["status"].update(extra)
    return obj


def upstream_pool(name: str, cidr: str, allocations: dict[str, str]) -> JSON:
    """generateIPPoolSpec: offset -> podref, ContainerID empty (serialised as "id": "", required by the CRD)."""
    return wc.ippool(name, cidr, {k: {"id": "", "podref": ref} for k, ref in allocations.items()}, namespace=NS)


def upstream_reservation(name: str, podref: str) -> JSON:
    return {
        "apiVersion": "whereabouts.cni.cncf.io/v1alpha1",
        "kind": "OverlappingRangeIPReservation",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"podref": podref},
    }


@dataclass(frozen=True)
class UpstreamCase:
    id: str
    source: str  # the upstream Context/It it replays
    objects: tuple[JSON, ...]
    upstream_released: frozenset[tuple[str, str]]  # (pool, offset key) upstream's reconciler removes
    upstream_deleted: frozenset[str]  # reservation names upstream's reconciler deletes
    released: frozenset[tuple[str, str]]  # what cidrx removes
    deleted: frozenset[str] = frozenset()
    findings: frozenset[str] = frozenset()  # finding ids `cidrx diagnose` must report
    differs: str = ""  # why cidrx removes less than upstream, when it does


def canonical(case: UpstreamCase, why: str = "", **changes: Any) -> UpstreamCase:
    """The case with every host-bit pool re-counted from its network address (same addresses held)."""
    objects: list[JSON] = []
    keys: dict[tuple[str, str], str] = {}
    for obj in case.objects:
        if obj["kind"] == "IPPool":
            iface = ipaddress.ip_interface(obj["spec"]["range"])
            shift = int(iface.ip) - int(iface.network.network_address)
            moved = {str(int(k) + shift): v for k, v in obj["spec"]["allocations"].items()}
            keys |= {(obj["metadata"]["name"], k): str(int(k) + shift) for k in obj["spec"]["allocations"]}
            obj = {**obj, "spec": {"range": str(iface.network), "allocations": moved}}
        objects.append(obj)

    def rekey(entries: frozenset[tuple[str, str]]) -> frozenset[tuple[str, str]]:
        return frozenset((pool, keys.get((pool, k), k)) for pool, k in entries)

    base = replace(
        case,
        id=f"{case.id}-canonical",
        objects=tuple(objects),
        upstream_released=rekey(case.upstream_released),
        released=rekey(case.upstream_released),
        deleted=case.upstream_deleted,
        findings=frozenset(f for f in case.findings if f != "WHEREABOUTS-POOL-RANGE-HOST-BITS"),
        differs=why,
    )
    return replace(base, **changes)


HOST_BITS = (
    "the pool's range 10.10.10.0/16 has host bits: Whereabouts' own config loader never writes one, so offsets "
    "are ambiguous; cidrx reports WHEREABOUTS-POOL-RANGE-HOST-BITS and releases nothing from it"
)


def _cases() -> list[UpstreamCase]:
    pod1 = f"{NS}/pod1"
    cases: list[UpstreamCase] = []

    # Context "reconciling IP pools with a single running pod" / "the pod dies".
    dies = UpstreamCase(
        id="single-pod-dies",
        source="reconciling IP pools with a single running pod > the pod dies",
        objects=(upstream_pool("pool1", "10.10.10.0/16", {"1": pod1}),),
        upstream_released=frozenset({("pool1", "1")}),
        upstream_deleted=frozenset(),
        released=frozenset(),
        findings=frozenset({"WHEREABOUTS-POOL-RANGE-HOST-BITS"}),
        differs=HOST_BITS,
    )
    cases += [dies, canonical(dies, findings=frozenset({"WHEREABOUTS-STALE-ALLOCATION"}))]

    # Context "reconciling an IP pool with multiple pods attached": only pod2 is alive.
    multi = UpstreamCase(
        id="multiple-pods-one-dead",
        source="reconciling an IP pool with multiple pods attached",
        objects=(
            upstream_pool("pool1", "10.10.10.0/16", {"1": pod1, "2": f"{NS}/pod2"}),
            upstream_pod("pod2", ("10.10.10.2", "net1")),
        ),
        upstream_released=frozenset({("pool1", "1")}),
        upstream_deleted=frozenset(),
        released=frozenset(),
        findings=frozenset({"WHEREABOUTS-POOL-RANGE-HOST-BITS"}),
        differs=HOST_BITS,
    )
    cases += [multi, canonical(multi)]

    # Context "reconciling an IP pool with entries from the same pod reference".
    same = UpstreamCase(
        id="same-podref-twice",
        source="reconciling an IP pool with entries from the same pod reference",
        objects=(
            upstream_pool("pool1", "10.10.10.0/16", {"1": pod1, "2": pod1}),
            upstream_pod("pod1", ("10.10.10.1", "net1")),
        ),
        upstream_released=frozenset({("pool1", "2")}),
        upstream_deleted=frozenset(),
        released=frozenset(),
        findings=frozenset({"WHEREABOUTS-POOL-RANGE-HOST-BITS"}),
        differs=HOST_BITS,
    )
    cases += [same, canonical(same)]

    # Context "reconciling cluster wide IPs - overlapping IPs": pod1 is deleted. Upstream's It only runs
    # ReconcileOverlappingIPAddresses; its ReconcileIPPools on the same objects would also release pool1's
    # offset 2 (pod3 reports 10.10.10.3) and pool2's offset 1 (pod2 reports 10.10.10.2).
    overlap = UpstreamCase(
        id="overlapping-pod1-deleted",
        source="reconciling cluster wide IPs - overlapping IPs > will delete an orphaned IP address",
        objects=(
            upstream_pool("pool1", "10.10.10.0/16", {"1": pod1, "2": f"{NS}/pod3"}),
            upstream_pool("pool2", "10.10.10.0/24", {"1": f"{NS}/pod2"}),
            upstream_pod("pod2", ("10.10.10.2", "network2")),
            upstream_pod("pod3", ("10.10.10.3", "network1")),
            upstream_reservation("10.10.10.1", pod1),
            upstream_reservation("10.10.10.2", f"{NS}/pod2"),
            upstream_reservation("10.10.10.3", f"{NS}/pod3"),
        ),
        upstream_released=frozenset({("pool1", "1"), ("pool1", "2"), ("pool2", "1")}),
        upstream_deleted=frozenset({"10.10.10.1"}),
        released=frozenset({("pool2", "1")}),
        findings=frozenset({"WHEREABOUTS-POOL-RANGE-HOST-BITS", "WHEREABOUTS-DUPLICATE-IP"}),
        differs=(
            f"{HOST_BITS}; reservation 10.10.10.1 stays because pool1 still allocates 10.10.10.1 (deleting it "
            "would let an overlapping pool hand out an address another pool still records)"
        ),
    )
    cases += [
        overlap,
        canonical(
            overlap,
            "pool1's offset for 10.10.10.2 names pod3, but pod2 (Running) reports 10.10.10.2: the address is live, "
            "so cidrx keeps that record (upstream's pool reconciler would release it and pool1 could hand "
            "10.10.10.2 out again while pod2 uses it)",
            released=frozenset({("pool1", "2561"), ("pool2", "1")}),
            findings=frozenset({"WHEREABOUTS-DUPLICATE-IP"}),
        ),
    ]

    # Context "reconciling cluster wide IPs - overlapping IPs (ipv6)": the pod is alive. Upstream names the
    # reservation with the address's un-normalised text (its fake client accepts ':' in names, a real
    # apiserver does not): here it is named as NormalizeIP names it.
    v6_ip = "2001:1b74:0480:60b1:0000:0000:0000:0002"
    v6 = UpstreamCase(
        id="overlapping-ipv6-live",
        source="reconciling cluster wide IPs - overlapping IPs (ipv6) > will not delete an IP address that is live",
        objects=(
            upstream_pool("dummypool", "2001:1b74:480:60b1::10/64", {"1": pod1}),
            upstream_pod("pod1", (v6_ip, "dummyNetwork")),
            upstream_reservation(reservation_name(v6_ip), pod1),
        ),
        upstream_released=frozenset(),
        upstream_deleted=frozenset(),
        released=frozenset(),
        findings=frozenset({"WHEREABOUTS-POOL-RANGE-HOST-BITS", "WHEREABOUTS-ORPHAN-RESERVATION"}),
    )
    cases.append(v6)

    # Context "a pod in pending state, without an IP in its network-status": upstream re-reads the pod three
    # times (250 ms apart) and then releases its address.
    pending = UpstreamCase(
        id="pending-pod-no-status",
        source="a pod in pending state, without an IP in its network-status > can be reconciled",
        objects=(
            upstream_pool("pool1", "10.10.10.0/16", {"1": pod1}),
            upstream_pod("pod1", phase="Pending"),
        ),
        upstream_released=frozenset({("pool1", "1")}),
        upstream_deleted=frozenset(),
        released=frozenset(),
        findings=frozenset({"WHEREABOUTS-POOL-RANGE-HOST-BITS"}),
        differs=HOST_BITS,
    )
    cases += [
        pending,
        canonical(
            pending,
            "a Pending pod's network-status may not be written yet (the CNI ADD is still returning): releasing "
            "its address is the duplicate-IP race; cidrx never releases what a Pending pod's record holds",
            released=frozenset(),
        ),
    ]

    # Describe "IPReconciler" (orphans handed in precomputed): none, then one, then only the orphaned one.
    cases.append(
        UpstreamCase(
            id="nothing-to-reconcile",
            source="IPReconciler > there are no IP addresses to reconcile",
            objects=(upstream_pool("pool1", "192.168.14.0/24", {}),),
            upstream_released=frozenset(),
            upstream_deleted=frozenset(),
            released=frozenset(),
        )
    )
    cases.append(
        UpstreamCase(
            id="one-orphan",
            source="IPReconciler > there are IP addresses to reconcile",
            objects=(upstream_pool("pool1", "192.168.14.0/24", {"1": pod1}),),
            upstream_released=frozenset({("pool1", "1")}),
            upstream_deleted=frozenset(),
            released=frozenset({("pool1", "1")}),
            findings=frozenset({"WHEREABOUTS-STALE-ALLOCATION"}),
        )
    )
    cases.append(
        UpstreamCase(
            id="only-the-orphan",
            source="IPReconciler > and they are actually multiple IPs > does delete *only the orphaned* the IP",
            objects=(
                upstream_pool("pool1", "192.168.14.0/24", {"1": f"{NS}/pod1", "2": f"{NS}/pod2", "3": f"{NS}/pod3"}),
                upstream_pod("pod1", ("192.168.14.1", "net1")),
                upstream_pod("pod3", ("192.168.14.3", "net1")),
            ),
            upstream_released=frozenset({("pool1", "2")}),
            upstream_deleted=frozenset(),
            released=frozenset({("pool1", "2")}),
            findings=frozenset({"WHEREABOUTS-STALE-ALLOCATION"}),
        )
    )

    # pkg/reconciler/wrappedPod.go indexPods: a pod whose DisruptionTarget condition says
    # DeletionByTaintManager is left out of the live pods, so its addresses are released while it may
    # still be running.
    evicting = UpstreamCase(
        id="pod-marked-for-deletion",
        source="wrappedPod.go isPodMarkedForDeletion (no ip_test.go case)",
        objects=(
            upstream_pool("pool1", "10.10.10.0/24", {"1": pod1}),
            upstream_pod(
                "pod1",
                ("10.10.10.1", "net1"),
                extra={
                    "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}]
                },
            ),
            upstream_reservation("10.10.10.1", pod1),
        ),
        upstream_released=frozenset({("pool1", "1")}),
        upstream_deleted=frozenset({"10.10.10.1"}),
        released=frozenset(),
        differs=(
            "the pod is being evicted but has not finished: it still reports 10.10.10.1, so the address is live "
            "until it is gone"
        ),
    )
    cases.append(evicting)

    # pkg/reconciler/iploop.go findClusterWideIPReservations turns every '-' of a reservation's name back
    # into ':', so with network_name set the Running pod's reservation never matches and is deleted.
    named = UpstreamCase(
        id="named-network-reservation",
        source="iploop.go findClusterWideIPReservations de-normalisation (no ip_test.go case)",
        objects=(
            upstream_pool(pool_name("10.20.0.0/24", "blue"), "10.20.0.0/24", {"5": pod1}),
            upstream_pod("pod1", ("10.20.0.5", "blue")),
            upstream_reservation(reservation_name("10.20.0.5", "blue"), pod1),
        ),
        upstream_released=frozenset(),
        upstream_deleted=frozenset({"blue-10.20.0.5"}),
        released=frozenset(),
        differs="the reservation is judged by the address its name spells (10.20.0.5), which pod1 reports",
    )
    cases.append(named)
    return cases


CASES: tuple[UpstreamCase, ...] = tuple(_cases())


# ---- the named-network cluster (examples/whereabouts-named-network.snapshot.json) ---------------------

NAMED_EXAMPLE = wc.EXAMPLE.parent / "whereabouts-named-network.snapshot.json"
APPS = "apps"
V4_NET, V6_NET = "blue", "blue6"
V4_RANGE, V6_RANGE = "10.40.0.0/24", "fd00:40::/64"
V6_ENDS_IN_COLONS = "fd00:40::1:0:0:0"  # written "fd00:40:0:0:1::" (RFC 5952): NormalizeIP appends "0"
V6_STALE = "fd00:40::dead"


def _offset(cidr: str, ip: str) -> str:
    return str(int(ipaddress.ip_address(ip)) - int(ipaddress.ip_network(cidr).network_address))


@dataclass(frozen=True)
class NamedNetwork:
    objects: list[JSON] = field(default_factory=list)
    live: frozenset[str] = frozenset()  # addresses a Running or Pending pod holds
    stale_keys: frozenset[tuple[str, str]] = frozenset()  # (pool, key) cidrx releases
    stale_reservations: frozenset[str] = frozenset()  # reservation names cidrx deletes


def named_network() -> NamedNetwork:
    """Two NADs with network_name (IPv4 `blue`, IPv6 `blue6`), pools and reservations named as upstream
    names them, and: a Running pod whose reservation is `blue-10.40.0.5`; a Running pod holding
    fd00:40:0:0:1:: (reservation `blue6-fd00-40-0-0-1--0`); a Pending pod without network-status;
    reservations and an allocation naming deleted pods while another Running or Pending pod reports their
    address; and two entries of deleted pods, the only ones cidrx may remove."""
    v4_pool, v6_pool = pool_name(V4_RANGE, V4_NET), pool_name(V6_RANGE, V6_NET)

    def a(cidr: str, ip: str, pod: str, n: int) -> tuple[str, JSON]:
        return _offset(cidr, ip), wc.alloc(f"{APPS}/{pod}", n)

    v4 = dict(
        [
            a(V4_RANGE, "10.40.0.5", "api-0", 1),
            a(V4_RANGE, "10.40.0.6", "gone-0", 2),
            a(V4_RANGE, "10.40.0.7", "starting-0", 3),
            a(V4_RANGE, "10.40.0.8", "new-0", 4),
            a(V4_RANGE, "10.40.0.10", "old-2", 10),  # its pod is gone, but other-0 reports the address
        ]
    )
    v6 = dict([a(V6_RANGE, V6_ENDS_IN_COLONS, "api-1", 5), a(V6_RANGE, V6_STALE, "gone-1", 6)])

    def res(ip: str, net: str, pod: str, n: int) -> JSON:
        return wc.orip(ip, f"{APPS}/{pod}", n, network_name=net)

    def pod(name: str, phase: str, ips: list[str] | None, net: str) -> JSON:
        return wc.pod(name, phase, wc.LIVE_NODES[0], ips=ips, namespace=APPS, network=net)

    objects: list[JSON] = [
        wc.nad("ipv4-data", wc.macvlan(wc.whereabouts(range=V4_RANGE, network_name=V4_NET)), namespace=APPS),
        wc.nad("ipv6-data", wc.macvlan(wc.whereabouts(range=V6_RANGE, network_name=V6_NET)), namespace=APPS),
        wc.ippool(v4_pool, V4_RANGE, v4),
        wc.ippool(v6_pool, V6_RANGE, v6),
        *(wc.node(n) for n in wc.LIVE_NODES),
        res("10.40.0.5", V4_NET, "api-0", 1),
        res("10.40.0.6", V4_NET, "gone-0", 2),
        res("10.40.0.7", V4_NET, "starting-0", 3),
        res("10.40.0.8", V4_NET, "old-0", 9),  # named after the pod new-0 replaced; new-0 reports the address
        res("10.40.0.9", V4_NET, "old-1", 11),  # no pool allocates it any more, but moved-0 reports it
        res(V6_ENDS_IN_COLONS, V6_NET, "api-1", 5),
        res(V6_STALE, V6_NET, "gone-1", 6),
        pod("api-0", "Running", ["10.40.0.5"], "ipv4-data"),
        pod("starting-0", "Pending", None, "ipv4-data"),
        pod("new-0", "Running", ["10.40.0.8"], "ipv4-data"),
        pod("moved-0", "Running", ["10.40.0.9"], "ipv4-data"),
        pod("other-0", "Pending", ["10.40.0.10"], "ipv4-data"),
        pod("api-1", "Running", [V6_ENDS_IN_COLONS], "ipv6-data"),
    ]
    return NamedNetwork(
        objects=objects,
        live=frozenset({"10.40.0.5", "10.40.0.7", "10.40.0.8", "10.40.0.9", "10.40.0.10", V6_ENDS_IN_COLONS}),
        stale_keys=frozenset({(v4_pool, _offset(V4_RANGE, "10.40.0.6")), (v6_pool, _offset(V6_RANGE, V6_STALE))}),
        stale_reservations=frozenset({reservation_name("10.40.0.6", V4_NET), reservation_name(V6_STALE, V6_NET)}),
    )


def named_network_snapshot() -> Snapshot:
    """What examples/whereabouts-named-network.snapshot.json holds."""
    return wc.snapshot_of(named_network().objects)
