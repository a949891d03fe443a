"""Compact records of Whereabouts' IPAM state: IPPools, the ranges NetworkAttachmentDefinitions configure,
and OverlappingRangeIPReservations.

Why it exists: a node that crashes leaves its pods' reservations in the IPPool, and a small pool then runs
dry (docs/cloud-facts.md, "Incidents the examples reproduce"). Deciding which reservations are stale needs
each allocation (decoded to its address), the configured usable range, and the reservations; these frozen
records keep only those fields so a cluster with hundreds of pools stays small in a snapshot.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

from cidrx.ipam.addresses import v4_value
from cidrx.model.validation import IpAddrOrEmpty, IpCidr, IpCidrOrEmpty, first_problem, repeated

GROUP, VERSION = "whereabouts.cni.cncf.io", "v1alpha1"
POOLS, RESERVATIONS = "ippools", "overlappingrangeipreservations"
NAD_GROUP, NAD_VERSION, NADS = "k8s.cni.cncf.io", "v1", "network-attachment-definitions"


# Names as Whereabouts writes them: IPPoolName/normalizeRange and NormalizeIP in
# k8snetworkplumbingwg/whereabouts pkg/storage/kubernetes/ipam.go (commit 3a262bd0cd873e13d9b379342f8251b852a89b8f).
# Both append "0" when the text ends in ':' (an IPv6 address ending in "::"), then turn ':' into '-', and put
# `<network_name>-` in front when the IPAM config sets network_name. The mapping is not invertible (a
# network name may contain '-', and so does every normalised IPv6 address): upstream's reconciler turns
# every '-' back into ':' (pkg/reconciler/iploop.go, findClusterWideIPReservations), which is wrong for any
# named network. cidrx only ever normalises forward and compares names.


def normalized_range(cidr: str) -> str:
    """The pool-name form of a range (upstream normalizeRange): trailing ':' + "0", ':' and '/' become '-'."""
    if cidr.endswith(":"):
        cidr += "0"
    return cidr.replace(":", "-").replace("/", "-")


def pool_name(cidr: str, network_name: str = "", node_name: str = "") -> str:
    """The IPPool name Whereabouts uses for `cidr` (IPPoolName): `[network_name-][node_name-]range`, the
    node name only for node-slice pools."""
    return "-".join(part for part in (network_name, node_name, normalized_range(cidr)) if part)


def go_ip_string(ip: str) -> str:
    """The address as Go's net.IP.String() prints it (what NormalizeIP starts from): RFC 5952 for IPv6,
    dotted quad for IPv4 and for IPv4-mapped IPv6; the text unchanged when it is no address."""
    text = ip.strip()
    if v4_value(text) is not None:
        return text  # the one spelling ipaddress accepts is also the one it prints
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return ip
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


def reservation_name(ip: str, network_name: str = "") -> str:
    """The OverlappingRangeIPReservation name of an address (upstream NormalizeIP)."""
    text = go_ip_string(ip)
    if text.endswith(":"):
        text += "0"
    text = text.replace(":", "-")
    return f"{network_name}-{text}" if network_name else text


@lru_cache(maxsize=1 << 16)
def name_addresses(name: str) -> tuple[str, ...]:
    """Every address A for which `name` is NormalizeIP(A, N) for some network name N ("" included).

    Candidates are the name itself and every tail after a '-'; a tail counts only when normalising the
    address it spells gives back exactly that tail, so each result is checked forward. Longest tail first
    (the address with the shortest network-name prefix). More than one result means the name is
    ambiguous (e.g. `net-fd00-1--5` is fd00:1::5 on `net`, or 1::5 on `net-fd00`): judge it by all.
    """
    found: list[str] = []
    tails = [name] + [name[i + 1 :] for i, ch in enumerate(name) if ch == "-"]
    for tail in tails:
        for text in dict.fromkeys((tail, tail.replace("-", ":"))):  # one candidate when the tail has no '-'
            if v4_value(text) is not None:
                # A dotted quad ipaddress accepts prints as itself, and NormalizeIP leaves it so.
                if text == tail and text not in found:
                    found.append(text)
                continue
            try:
                spelled = str(ipaddress.ip_address(text))
            except ValueError:
                continue
            if reservation_name(spelled) == tail and spelled not in found:
                found.append(spelled)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Allocation:
    """One entry of IPPool spec.allocations."""

    offset: str  # the key exactly as stored: decimal offset from the range's network address
    ip: IpAddrOrEmpty  # the address it decodes to; "" when the key is not a valid offset into the range
    podref: str  # "namespace/name" ("" when the entry names no pod, as very old releases wrote)
    ifname: str = ""
    id: str = ""  # container id


@dataclass(frozen=True)
class WhereaboutsPool:
    name: str
    namespace: str
    range: str  # spec.range as stored (raw evidence: a corrupt one is reported, not refused)
    allocations: tuple[Allocation, ...] = ()
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def host_bits(self) -> bool:
        """True when spec.range names an address inside the network rather than the network itself
        (e.g. 10.10.10.0/16). Whereabouts counts offsets from the address as written (net.ParseCIDR's IP, in
        KubernetesIPAM.GetIPPool, pkg/storage/kubernetes/ipam.go @3a262bd), its own config loader never
        writes such a range, so whoever did may have meant offsets from the network: cidrx reports the pool
        and never releases from it."""
        try:
            iface = ipaddress.ip_interface(self.range.strip())
        except ValueError:
            return False
        return iface.ip != iface.network.network_address

    @property
    def network_name(self) -> str:
        """The `network_name` the pool was made for: what precedes the normalized range in its name."""
        base = normalized_range(self.range)
        if self.name != base and self.name.endswith("-" + base):
            return self.name[: -len(base) - 1]
        return ""


@dataclass(frozen=True)
class NetworkRange:
    """One range of a Whereabouts IPAM config (the top-level `range` or one `ipRanges[]` entry)."""

    nad: str  # "namespace/name" of the NetworkAttachmentDefinition
    range: IpCidrOrEmpty  # the network as a CIDR ("" when the config's range could not be read)
    range_start: IpAddrOrEmpty = ""  # first usable address ("" = from the network's start)
    range_end: IpAddrOrEmpty = ""  # last usable address ("" = to the network's end)
    exclude: tuple[IpCidr, ...] = ()
    network_name: str = ""
    written: str = ""  # the range exactly as configured (e.g. "10.0.0.10-10.0.0.20/24")
    problem: str = ""  # why the range is unusable, when it is

    @property
    def pool_name(self) -> str:
        return pool_name(self.range, self.network_name) if self.range else ""


@dataclass(frozen=True, slots=True)
class OverlappingReservation:
    """An OverlappingRangeIPReservation: cluster-wide claim on one address, named by it.

    Its spec holds only podref, ifname and containerid (upstream CRD doc/crds/
    whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml @3a262bd): the address is in the name
    alone, as NormalizeIP wrote it, `<network_name>-` prefix included when the network has a name.
    """

    name: str  # NormalizeIP(ip, network_name)
    namespace: str
    podref: str
    resource_version: str = ""
    ifname: str = ""

    @property
    def addresses(self) -> tuple[str, ...]:
        """Every address the name can spell (see name_addresses); usually exactly one, none when the name
        is no NormalizeIP output at all (such a reservation cannot be judged and is never deleted)."""
        return name_addresses(self.name)

    @property
    def ip(self) -> str:
        """The address with the shortest network-name prefix, "" when the name spells none."""
        found = self.addresses
        return found[0] if found else ""


@dataclass(frozen=True)
class NadConfig:
    """A NetworkAttachmentDefinition whose config uses Whereabouts, or could not be read at all."""

    namespace: str
    name: str
    problem: str = ""  # "" when its config parsed; else what is wrong (bad JSON, bad range)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class WhereaboutsSection:
    pools: tuple[WhereaboutsPool, ...] = ()
    ranges: tuple[NetworkRange, ...] = ()
    overlapping: tuple[OverlappingReservation, ...] = ()
    nads: tuple[NadConfig, ...] = ()

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("pools", self.pools, lambda p: p.key, "IPPool"),
            repeated("overlapping", self.overlapping, lambda r: (r.namespace, r.name), "reservation"),
            repeated("nads", self.nads, lambda n: n.key, "NetworkAttachmentDefinition"),
        )
