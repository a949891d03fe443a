"""Read Whereabouts' objects (list calls only) into the compact records of cidrx.ipam.whereabouts.model.

Why it exists: analysis and planning are pure functions of a snapshot, so everything they need about
Whereabouts is read here once: every IPPool (allocations decoded to addresses), every
OverlappingRangeIPReservation, and the IPAM config of every NetworkAttachmentDefinition, which is the only
place the usable part of a range (range_start, range_end, exclude) is written down. A config that cannot
be read is recorded with what is wrong, never a crash: one broken NAD must not hide the other pools.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from sys import intern
from typing import TYPE_CHECKING, Any

import msgspec

from cidrx.ipam.addresses import address_key, address_text
from cidrx.ipam.records import Listed, listed, parts
from cidrx.ipam.whereabouts.model import (
    GROUP,
    NAD_GROUP,
    NAD_VERSION,
    NADS,
    POOLS,
    RESERVATIONS,
    VERSION,
    Allocation,
    NadConfig,
    NetworkRange,
    OverlappingReservation,
    WhereaboutsPool,
    WhereaboutsSection,
)

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

JSON = Mapping[str, Any]
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddr = ipaddress.IPv4Address | ipaddress.IPv6Address
_DECIMAL = re.compile(r"[0-9]+")


def collect_whereabouts(api: KubeApi) -> WhereaboutsSection:
    """Pools, overlapping-range reservations and NetworkAttachmentDefinitions (three list calls)."""
    return section_from(
        api.iter_custom_records(GROUP, VERSION, POOLS, PoolRecord),
        api.iter_custom_records(GROUP, VERSION, RESERVATIONS, ReservationRecord),
        api.iter_custom(NAD_GROUP, NAD_VERSION, NADS),
    )


def pod_refs(section: WhereaboutsSection) -> set[str]:
    """ "namespace/name" of every pod an allocation or reservation names: the pods collection must keep."""
    refs = {a.podref for p in section.pools for a in p.allocations if a.podref}
    refs |= {r.podref for r in section.overlapping if r.podref}
    return refs


def section_from(
    pools: Iterable[Listed | JSON], reservations: Iterable[Listed | JSON], nads: Iterable[JSON]
) -> WhereaboutsSection:
    """A WhereaboutsSection from the objects as dicts (pools and reservations also as listed records), each
    kind sorted for a stable fingerprint."""
    ranges: list[NetworkRange] = []
    nad_configs: list[NadConfig] = []
    for nad in nads:
        found, config = ranges_from_nad(nad)
        ranges += found
        if config is not None:
            nad_configs.append(config)
    podrefs: dict[str, str] = {}  # one collection's memo: a pod's allocation and its reservation share the podref
    return WhereaboutsSection(
        pools=tuple(sorted((pool_from(p, podrefs) for p in pools), key=lambda p: (p.namespace, p.name))),
        ranges=tuple(sorted(ranges, key=lambda r: (r.nad, r.network_name, r.written))),
        overlapping=tuple(sorted((reservation_from(r, podrefs) for r in reservations), key=_reservation_order)),
        nads=tuple(sorted(nad_configs, key=lambda n: (n.namespace, n.name))),
    )


# ---- converters -----------------------------------------------------------------------------------


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def parse_network(text: str) -> IPNet | None:
    """A CIDR, host bits allowed (Whereabouts masks them off), IPv4 or IPv6; None when it is not one."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False) if "/" in text else None
    except ValueError:
        return None


def first_address(text: str) -> IPAddr | None:
    """The address offsets count from: the address as written in spec.range, host bits included, as
    Whereabouts takes it (net.ParseCIDR's IP in KubernetesIPAM.GetIPPool, pkg/storage/kubernetes/ipam.go,
    k8snetworkplumbingwg/whereabouts @3a262bd0cd873e13d9b379342f8251b852a89b8f); None when it is no CIDR."""
    try:
        return ipaddress.ip_interface(text.strip()).ip if "/" in text else None
    except ValueError:
        return None


def offset_ip(network: IPNet | None, key: str, first: IPAddr | None = None) -> str:
    """The address an allocation key decodes to, or "" when the key is not an offset into `network`.

    Whereabouts writes keys with fmt.Sprintf("%d") of a non-negative offset (toAllocationMap, ipam.go), so
    anything but plain decimal digits (a sign, a non-integer) is corrupt, as is an offset past the end of
    the range. Offsets count from `first` (the written address, see first_address), else the network."""
    if network is None:
        return ""
    start = first if first is not None else network.network_address
    return _offset_text(int(start), int(network.broadcast_address), key)


def _offset_text(start: int, last: int, key: str) -> str:
    """offset_ip with the range's ends as integers (worked out once per pool, not once per allocation)."""
    if not _DECIMAL.fullmatch(key):
        return ""
    value = start + int(key)
    return address_text(value) if value <= last else ""


class _PoolSpec(msgspec.Struct):
    range: Any = None
    allocations: Any = None


PoolRecord = listed("IPPool", _PoolSpec)  # what pool_from reads (cidrx.ipam.records: any value taken)


class _ReservationSpec(msgspec.Struct):
    podref: Any = None
    ifname: Any = None


ReservationRecord = listed("OverlappingRangeIPReservation", _ReservationSpec)


def _shared(text: str, memo: dict[str, str] | None) -> str:
    """`text`, or the equal string already in `memo` (which keeps the first of each)."""
    return text if memo is None else memo.setdefault(text, text)


def pool_from(obj: Listed | JSON, podrefs: dict[str, str] | None = None) -> WhereaboutsPool:
    """One IPPool. With `podrefs` (one collection's memo, see `section_from`), equal podrefs are one string."""
    meta, spec = parts(obj, PoolRecord, _PoolSpec)
    cidr = str(spec.range or "")
    network = parse_network(cidr)
    first = first_address(cidr)
    raw = spec.allocations
    allocations: list[Allocation] = []
    if isinstance(raw, Mapping):
        if network is not None:
            start = int(first if first is not None else network.network_address)
            last = int(network.broadcast_address)
        for key, entry in raw.items():
            entry = entry if isinstance(entry, Mapping) else {}
            allocations.append(
                Allocation(
                    offset=str(key),
                    ip=_offset_text(start, last, str(key)) if network is not None else "",
                    podref=_shared(str(entry.get("podref") or ""), podrefs),
                    ifname=intern(str(entry.get("ifname") or "")),  # a few interface names, 24,000 entries
                    id=str(entry.get("id") or ""),
                )
            )
    allocations.sort(key=_offset_order)
    return WhereaboutsPool(
        name=str(meta.name or ""),
        namespace=str(meta.namespace or ""),
        range=cidr,
        allocations=tuple(allocations),
        resource_version=str(meta.resourceVersion or ""),
    )


def _offset_order(a: Allocation) -> tuple[int, int, str]:
    """Numeric order of valid offsets, then every other key in text order."""
    return (0, int(a.offset), a.offset) if _DECIMAL.fullmatch(a.offset) else (1, 0, a.offset)


def _reservation_order(r: OverlappingReservation) -> tuple[str, int, int, int, str]:
    """By namespace, then the address the name spells (IPv4 before IPv6), then name."""
    if not r.ip:
        return (r.namespace, 1, 0, 0, r.name)
    version, value = address_key(r.ip)
    return (r.namespace, 0, version, value, r.name)


def reservation_from(obj: Listed | JSON, podrefs: dict[str, str] | None = None) -> OverlappingReservation:
    meta, spec = parts(obj, ReservationRecord, _ReservationSpec)
    return OverlappingReservation(
        name=str(meta.name or ""),
        namespace=intern(str(meta.namespace or "")),
        podref=_shared(str(spec.podref or ""), podrefs),
        resource_version=str(meta.resourceVersion or ""),
        ifname=intern(str(spec.ifname or "")),
    )


# ---- NetworkAttachmentDefinition IPAM config ------------------------------------------------------


def _whereabouts_ipams(config: JSON) -> Iterator[JSON]:
    """The `ipam` sections of type whereabouts: of a single plugin config, or of each `plugins[]` entry of a
    conflist (Multus accepts both in spec.config)."""
    plugins = config.get("plugins")
    candidates: list[Any] = [config, *(plugins if isinstance(plugins, list) else [])]
    for plugin in candidates:
        ipam = plugin.get("ipam") if isinstance(plugin, Mapping) else None
        if isinstance(ipam, Mapping) and ipam.get("type") == "whereabouts":
            yield ipam


def ranges_from_nad(obj: JSON) -> tuple[list[NetworkRange], NadConfig | None]:
    """The Whereabouts ranges a NetworkAttachmentDefinition configures, and its NadConfig record (None when it
    parsed and does not use Whereabouts: not ours)."""
    meta = _meta(obj)
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    raw = _spec(obj).get("config")
    if not raw:
        return [], None  # a NAD without config names a CNI config file on the node: nothing to read here
    try:
        config = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as exc:
        return [], NadConfig(namespace, name, f"spec.config is not valid JSON ({exc})")
    if not isinstance(config, Mapping):
        return [], NadConfig(namespace, name, "spec.config is not a JSON object")
    ranges: list[NetworkRange] = []
    for ipam in _whereabouts_ipams(config):
        ranges += ranges_from_ipam(f"{namespace}/{name}", ipam)
    if not ranges:
        return [], None
    problems = sorted({r.problem for r in ranges if r.problem})
    return ranges, NadConfig(namespace, name, "; ".join(problems))


def ranges_from_ipam(nad: str, ipam: JSON) -> list[NetworkRange]:
    """The top-level `range` (with its range_start/range_end/exclude) followed by every `ipRanges[]` entry,
    as Whereabouts' own config loader orders them."""
    network_name = str(ipam.get("network_name") or "")
    entries: list[JSON] = []
    if ipam.get("range"):
        entries.append(ipam)
    ip_ranges = ipam.get("ipRanges")
    if isinstance(ip_ranges, list):
        entries += [e for e in ip_ranges if isinstance(e, Mapping)]
    return [range_from(nad, network_name, e) for e in entries]


def _ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(str(text).strip())
    except ValueError:
        return None


def _covering(
    a: ipaddress.IPv4Address | ipaddress.IPv6Address, b: ipaddress.IPv4Address | ipaddress.IPv6Address
) -> IPNet:
    """The smallest network holding both addresses."""
    bits = a.max_prefixlen
    diff = int(a) ^ int(b)
    prefix = bits - diff.bit_length()
    return ipaddress.ip_network(f"{a}/{prefix}", strict=False)


def range_from(nad: str, network_name: str, entry: JSON) -> NetworkRange:
    """One range. Forms: a CIDR ("10.0.0.0/24", host bits allowed), "first-last/prefix" (Whereabouts' own
    short form: first and last usable address in the CIDR), and a bare "first-last" (read as the smallest
    network holding both ends). Explicit range_start/range_end win over the short form's ends."""
    written = str(entry.get("range") or "")
    start, end = "", ""
    problems: list[str] = []
    network: IPNet | None = None
    if "-" in written:
        first_text, rest = written.split("-", 1)
        first = _ip(first_text)
        if "/" in rest:
            network = parse_network(rest)
            last = _ip(rest.split("/", 1)[0])
        else:
            last = _ip(rest)
            if first is not None and last is not None and first.version == last.version:
                network = _covering(first, last)
        if first is None or last is None or network is None:
            network = None
            problems.append(f"range {written!r} is not first-last/prefix")
        else:
            start, end = str(first), str(last)
    else:
        network = parse_network(written)
        if network is None:
            problems.append(f"range {written!r} is not a CIDR")
    for key in ("range_start", "range_end"):
        value = entry.get(key)
        if not value:
            continue
        addr = _ip(value)
        if addr is None or network is None or addr not in network:
            problems.append(f"{key} {value!r} is not an address in {written!r}")
        elif key == "range_start":
            start = str(addr)
        else:
            end = str(addr)
    exclude: list[str] = []
    raw_exclude = entry.get("exclude")
    for item in raw_exclude if isinstance(raw_exclude, list) else []:
        net = parse_network(str(item))
        if net is None:
            problems.append(f"exclude {item!r} is not a CIDR")
        else:
            exclude.append(str(net))
    return NetworkRange(
        nad=nad,
        range=str(network) if network is not None else "",
        range_start=start,
        range_end=end,
        exclude=tuple(exclude),
        network_name=network_name,
        written=written,
        problem="; ".join(problems),
    )


def collect_served(api: KubeApi, groups: set[str]) -> WhereaboutsSection | None:
    """The section, when the cluster serves Whereabouts' API group (otherwise None)."""
    return collect_whereabouts(api) if GROUP in groups else None


def cidrs(section: WhereaboutsSection) -> list[str]:
    """Every range Whereabouts hands addresses out of: pools and configured ranges, and the addresses of
    overlapping reservations (which may lie outside every remaining pool and NAD range, both deleted)."""
    out = [p.range for p in section.pools] + [r.range for r in section.ranges if r.range]
    return out + [ip for r in section.overlapping for ip in r.addresses]
