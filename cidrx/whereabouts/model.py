"""Compact records of Whereabouts' IPAM state: IPPools, the ranges NetworkAttachmentDefinitions configure,
and OverlappingRangeIPReservations.

Why it exists: a node that crashes leaves its pods' reservations in the IPPool, and a small pool then runs
dry (docs/cloud-facts.md, "Incidents the examples reproduce"). Deciding which reservations are stale needs
each allocation (decoded to its address), the configured usable range, and the reservations; these frozen
records keep only those fields so a cluster with hundreds of pools stays small in a snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from cidrx.model.validation import IpAddrOrEmpty, IpCidr, IpCidrOrEmpty, first_problem, repeated

GROUP, VERSION = "whereabouts.cni.cncf.io", "v1alpha1"
POOLS, RESERVATIONS = "ippools", "overlappingrangeipreservations"
NAD_GROUP, NAD_VERSION, NADS = "k8s.cni.cncf.io", "v1", "network-attachment-definitions"


def normalized_range(cidr: str) -> str:
    """The pool-name form of a range: `/` and `:` become `-` (docs/cloud-facts.md)."""
    return cidr.replace("/", "-").replace(":", "-")


def pool_name(cidr: str, network_name: str = "") -> str:
    """The IPPool name Whereabouts uses for `cidr`, prefixed by `network_name-` when one is set."""
    base = normalized_range(cidr)
    return f"{network_name}-{base}" if network_name else base


def reservation_name(ip: str) -> str:
    """The OverlappingRangeIPReservation name of an address (IPv6 `:` become `-`)."""
    return ip.replace(":", "-")


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class OverlappingReservation:
    """An OverlappingRangeIPReservation: cluster-wide claim on one address, named by it."""

    name: str  # the IP with ':' -> '-'
    namespace: str
    podref: str
    resource_version: str = ""
    ifname: str = ""

    @property
    def ip(self) -> str:
        # IPv4 names are the address itself; IPv6 names lost their ':' and cannot be turned back
        # unambiguously, so those are matched by name (see reservation_name).
        return self.name


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
