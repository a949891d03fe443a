"""Diagnose Whereabouts: pool capacity from the configured ranges, stale reservations, corrupt keys,
addresses held twice, and overlapping-range reservations nothing allocates.

Why it exists: Whereabouts frees an address only when the CNI DEL runs; a node that crashes (or a pod
force-deleted) leaves its reservation in the IPPool for good, and a small pool runs dry while `kubectl`
shows nothing wrong (docs/cloud-facts.md, "Incidents the examples reproduce"). Its own reconciler once freed
the address of a pod that was still Pending, so two pods got the same IP
(whereabouts issues 162 and 207; docs/cloud-facts.md): the rule here is that a Pending pod, or a pod whose
network-status is not written yet, is always live. On top of that, an address is live whenever any
unfinished pod reports it (cidrx.ipam.liveness), whichever pod the record names, and a reservation is
judged by the addresses its name spells, never by whether its name is the one cidrx expected (Whereabouts
prefixes it with the network name). Pure: a function of the section and the snapshot's pods.

Thresholds: a pool is nearly full when at least NEARLY_FULL (90%) of its usable addresses are taken or
fewer than MIN_FREE (3) are left (small pools, e.g. the KB's five-address range, cross 90% in one step).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from cidrx.ipam.addresses import address_int, address_key
from cidrx.ipam.liveness import FINISHED_PHASES, AddressHolders, canonical_ip
from cidrx.ipam.whereabouts.collect import parse_network
from cidrx.ipam.whereabouts.model import (
    Allocation,
    NetworkRange,
    OverlappingReservation,
    WhereaboutsPool,
    WhereaboutsSection,
)
from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.model.kube import PodState

WHEREABOUTS_NAD_CONFIG_INVALID = FindingKind.parse(
    """WHEREABOUTS-NAD-CONFIG-INVALID (warning): A NetworkAttachmentDefinition's Whereabouts IPAM config cannot
    be parsed, so its pool's capacity is unknown (and pods attaching it fail too)."""
)

WHEREABOUTS_POOL_FULL = FindingKind.parse(
    """WHEREABOUTS-POOL-FULL (critical): Every usable address of a Whereabouts IPPool is reserved, so new pods
    attaching that network cannot start."""
)

WHEREABOUTS_POOL_NEARLY_FULL = FindingKind.parse(
    """WHEREABOUTS-POOL-NEARLY-FULL (warning): A Whereabouts IPPool has few unreserved addresses left."""
)

WHEREABOUTS_STALE_ALLOCATION = FindingKind.parse(
    """WHEREABOUTS-STALE-ALLOCATION (warning): IPPool reservations belong to pods that no longer exist (or run
    with another address), typically after a node died; `cidrx reclaim --ipam whereabouts` frees them."""
)

WHEREABOUTS_CORRUPT_KEY = FindingKind.parse(
    """WHEREABOUTS-CORRUPT-KEY (warning): An IPPool allocation key is not a decimal offset inside the pool's
    range; Whereabouts cannot interpret it."""
)

WHEREABOUTS_POOL_RANGE_HOST_BITS = FindingKind.parse(
    """WHEREABOUTS-POOL-RANGE-HOST-BITS (warning): An IPPool's `spec.range` has host bits set (e.g.
    `10.10.10.0/16`): Whereabouts counts offsets from the address as written, its own config loader never writes
    such a range, so what each offset means is ambiguous; cidrx never releases anything from the pool."""
)

WHEREABOUTS_DUPLICATE_IP = FindingKind.parse(
    """WHEREABOUTS-DUPLICATE-IP (critical): The same address is reserved more than once, so two pods may share
    an IP."""
)

WHEREABOUTS_ORPHAN_RESERVATION = FindingKind.parse(
    """WHEREABOUTS-ORPHAN-RESERVATION (warning): OverlappingRangeIPReservations without a matching pool
    allocation keep their address from every pool."""
)

# What this module raises, for the findings catalogue (python -m tools.docgen).
KINDS = FindingKind.all_in(globals())


NEARLY_FULL = 0.9
MIN_FREE = 3
MAX_EVIDENCE = 20
CAPACITY_KIND = "whereabouts-pool"

# Fix commands in backticks, one command each (renderers print them one per line, runnable as printed).
RECLAIM = "`cidrx reclaim --k8s --ipam whereabouts --plan --out reclaim.json` `cidrx reclaim --apply reclaim.json`"
REVIEW = "plan the release, review the plan, then apply it (no workload has to be scaled down)"

Interval = tuple[int, int]  # inclusive first and last address as ints


# --------------------------------------------------------------------------------------------------
# Shared decisions (the strategies and the actions use the same ones)
# --------------------------------------------------------------------------------------------------


def holds(pod: PodState, addresses: Sequence[str]) -> bool:
    """Whether `pod` reports any of `addresses` (status.podIPs or the Multus network-status annotation)."""
    wanted = {canonical_ip(ip) for ip in addresses}
    return any(canonical_ip(own) in wanted for own in pod.ips)


def holders_of(pods: Mapping[str, PodState]) -> AddressHolders:
    """The liveness rule's index over the snapshot's pods (cidrx.ipam.liveness)."""
    return AddressHolders.of(pods.values())


def _listed(addresses: Sequence[str]) -> str:
    return " or ".join(addresses) if addresses else "its address"


def stale_reason(
    addresses: str | Sequence[str], podref: str, pod: PodState | None, holders: AddressHolders
) -> str | None:
    """Why a record of `addresses` (one allocation's address, or every address a reservation's name can
    spell) by `podref` is stale, or None while the address may be in use.

    Never stale: an address any unfinished pod reports, whichever pod the record names (the liveness rule,
    cidrx.ipam.liveness); a record naming no pod; a named pod that is Pending, of unknown phase, or has no
    network-status yet (the annotation is written after the CNI returns, so the address may be being handed
    to it right now: the duplicate-IP race). Stale: nobody reports the address and the named pod is gone or
    finished, or it is Running with its network-status written and not listing the address (a StatefulSet
    pod recreated under the same name got another address).
    """
    ips = (addresses,) if isinstance(addresses, str) else tuple(addresses)
    if not ips or any(holders.is_live(ip) for ip in ips):
        return None
    if not podref:
        return None
    if pod is None:
        return f"pod {podref} no longer exists"
    if pod.phase in FINISHED_PHASES:
        return f"pod {podref} has finished ({pod.phase})"
    if pod.phase == "Running" and pod.has_network_status and not holds(pod, ips):
        listed = ", ".join(pod.ips) or "no addresses"
        return f"pod {podref} is Running and its network-status lists {listed}, not {_listed(ips)}"
    return None


def kept_reason(addresses: Sequence[str], podref: str, pod: PodState | None, holders: AddressHolders) -> str:
    """Why stale_reason found the record in use, for evidence and apply outputs."""
    phase = (pod.phase if pod is not None else "") or "unknown phase"
    for ip in addresses:
        held = holders.holders(ip)
        if held and [p.key for p in held] == [podref]:
            return f"pod {podref} is live ({phase})"
        if held:
            return f"{ip} is live: {holders.describe(ip)}"
    if not addresses:
        return "its name spells no address, so nobody can tell whether it is in use"
    if not podref:
        return "it names no pod"
    return f"pod {podref} is live ({phase})"


@dataclass(frozen=True)
class StaleAllocation:
    pool: WhereaboutsPool
    allocation: Allocation
    why: str


def reclaimable(pool: WhereaboutsPool) -> bool:
    """Whether cidrx may release anything from `pool`: never when its range has host bits (offsets would
    be ambiguous) or cannot be read."""
    return parse_network(pool.range) is not None and not pool.host_bits


def stale_allocations(
    section: WhereaboutsSection, pods: Mapping[str, PodState], holders: AddressHolders | None = None
) -> list[StaleAllocation]:
    """Every stale allocation (valid keys of reclaimable pools only: the rest are for a person), pool by
    pool, offset order."""
    live = holders if holders is not None else holders_of(pods)
    found: list[StaleAllocation] = []
    for pool in section.pools:
        if not reclaimable(pool):
            continue
        for a in pool.allocations:
            if not a.ip:
                continue
            why = stale_reason(a.ip, a.podref, pods.get(a.podref), live)
            if why is not None:
                found.append(StaleAllocation(pool, a, why))
    return found


AllocationIndex = Mapping[str, list[tuple[WhereaboutsPool, Allocation]]]


def allocations_by_address(section: WhereaboutsSection) -> AllocationIndex:
    """Every allocation with a valid address, keyed by the address (canonical spelling; pool order, then
    offset order), so that looking up one reservation does not scan every pool."""
    index: dict[str, list[tuple[WhereaboutsPool, Allocation]]] = {}
    for pool in section.pools:
        for a in pool.allocations:
            if a.ip:
                index.setdefault(canonical_ip(a.ip), []).append((pool, a))
    return index


def allocations_of(r: OverlappingReservation, index: AllocationIndex) -> list[tuple[WhereaboutsPool, Allocation]]:
    """Every allocation, by any pod, of an address the reservation's name can spell."""
    return [held for ip in r.addresses for held in index.get(canonical_ip(ip), [])]


def matching_allocations(
    section: WhereaboutsSection, r: OverlappingReservation, index: AllocationIndex | None = None
) -> list[tuple[WhereaboutsPool, Allocation]]:
    """Allocations of the reservation's address by the reservation's pod. Pass `index` (from
    `allocations_by_address`) when checking many reservations."""
    held = allocations_of(r, index if index is not None else allocations_by_address(section))
    return [(pool, a) for pool, a in held if a.podref == r.podref]


@dataclass(frozen=True)
class ReservationVerdict:
    """Whether an OverlappingRangeIPReservation may be deleted: `why` it is stale, or `kept` why not.
    `after` are the stale allocations of its address that must be released first."""

    reservation: OverlappingReservation
    why: str | None
    kept: str = ""
    after: tuple[StaleAllocation, ...] = ()


def judge_reservation(
    r: OverlappingReservation,
    index: AllocationIndex,
    pods: Mapping[str, PodState],
    holders: AddressHolders,
    stale: Mapping[tuple[str, str], StaleAllocation],
) -> ReservationVerdict:
    """A reservation is judged by the addresses its name spells and the pods that hold them, never by
    whether its name is the one cidrx would have written: deleted only when no unfinished pod reports any
    of those addresses, its own pod is stale, and every allocation of the address (in any pool, by any
    pod) is itself stale and released first. `stale` maps (pool key, offset) to stale allocations."""
    addrs = r.addresses
    pod = pods.get(r.podref)
    why = stale_reason(addrs, r.podref, pod, holders)
    if why is None:
        return ReservationVerdict(r, None, kept_reason(addrs, r.podref, pod, holders))
    after: list[StaleAllocation] = []
    for pool, a in allocations_of(r, index):
        s = stale.get((pool.key, a.offset))
        if s is None:
            return ReservationVerdict(
                r, None, f"{a.ip} is still allocated in IPPool {pool.key} to {a.podref or 'no pod'}"
            )
        after.append(s)
    return ReservationVerdict(r, why, after=tuple(after))


def judge_reservations(
    section: WhereaboutsSection, pods: Mapping[str, PodState], stale: list[StaleAllocation], holders: AddressHolders
) -> list[ReservationVerdict]:
    index = allocations_by_address(section)
    by_key = {(s.pool.key, s.allocation.offset): s for s in stale}
    return [judge_reservation(r, index, pods, holders, by_key) for r in section.overlapping]


# --------------------------------------------------------------------------------------------------
# Usable addresses of a pool
# --------------------------------------------------------------------------------------------------


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for lo, hi in sorted(i for i in intervals if i[0] <= i[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _subtract(intervals: list[Interval], cut: Interval) -> list[Interval]:
    out: list[Interval] = []
    for lo, hi in intervals:
        if cut[1] < lo or cut[0] > hi:
            out.append((lo, hi))
            continue
        if lo < cut[0]:
            out.append((lo, cut[0] - 1))
        if cut[1] < hi:
            out.append((cut[1] + 1, hi))
    return out


def range_intervals(r: NetworkRange) -> list[Interval]:
    """The addresses one configured range hands out: range_start..range_end within the network, without
    the network and broadcast addresses (IPv4; the network address only for IPv6) and the excludes."""
    net = parse_network(r.range) if r.range else None
    if net is None:
        return []
    first, last = int(net.network_address), int(net.broadcast_address)
    lo = int(ipaddress.ip_address(r.range_start)) if r.range_start else first
    hi = int(ipaddress.ip_address(r.range_end)) if r.range_end else last
    if net.num_addresses > 2:
        lo = max(lo, first + 1)
        if net.version == 4:
            hi = min(hi, last - 1)
    usable = _union([(lo, hi)])
    for text in r.exclude:
        ex = parse_network(text)
        if ex is not None and ex.version == net.version:
            usable = _subtract(usable, (int(ex.network_address), int(ex.broadcast_address)))
    return usable


@dataclass(frozen=True)
class PoolSpace:
    intervals: tuple[Interval, ...]
    ranges: tuple[NetworkRange, ...]  # the configured ranges that feed this pool (none: whole range assumed)

    @property
    def size(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.intervals)

    def contains(self, ip: str) -> bool:
        value = address_int(ip)
        return any(lo <= value <= hi for lo, hi in self.intervals)


def pool_space(pool: WhereaboutsPool, ranges: Iterable[NetworkRange]) -> PoolSpace:
    """What the NetworkAttachmentDefinitions say this pool may hand out (union when several feed it).

    A pool no config names (its NAD was deleted, or lives in a config file on the nodes) is taken to
    use its whole range."""
    feeding = tuple(r for r in ranges if r.range and not r.problem and r.pool_name == pool.name)
    if feeding:
        return PoolSpace(tuple(_union(i for r in feeding for i in range_intervals(r))), feeding)
    net = parse_network(pool.range)
    if net is None:
        return PoolSpace((), ())
    return PoolSpace(tuple(range_intervals(NetworkRange(nad="", range=str(net)))), ())


# --------------------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------------------


def _more(lines: list[str]) -> tuple[str, ...]:
    if len(lines) <= MAX_EVIDENCE:
        return tuple(lines)
    return (*lines[:MAX_EVIDENCE], f"... and {len(lines) - MAX_EVIDENCE} more")


def _entry(a: Allocation) -> str:
    return f"offset {a.offset} ({a.ip or 'no address'}) held by {a.podref or 'no pod'}"


def analyze_whereabouts(
    section: WhereaboutsSection, pods: Mapping[str, PodState], available: bool = True
) -> tuple[list[Capacity], list[Finding]]:
    """Capacity per pool and findings. `pods` maps "namespace/name" to the pods the records name and to
    every unfinished pod reporting an address in a Whereabouts range; a named pod missing from it is gone.
    With `available` False the pods were not read, so nothing is judged stale."""
    capacity: list[Capacity] = []
    findings: list[Finding] = [_bad_config(n.key, n.problem) for n in section.nads if n.problem]
    holders = holders_of(pods)
    stale = stale_allocations(section, pods, holders) if available else []
    # Grouped once: matching every pool against every range (and every stale entry) is quadratic.
    ranges_of: dict[str, list[NetworkRange]] = {}
    for r in section.ranges:
        ranges_of.setdefault(r.pool_name, []).append(r)
    stale_of: dict[int, list[StaleAllocation]] = {}
    for s in stale:
        stale_of.setdefault(id(s.pool), []).append(s)
    for pool in section.pools:
        c, f = _pool(pool, ranges_of.get(pool.name, []), stale_of.get(id(pool), []), available)
        capacity.append(replace(c, nodes_fit=_nodes_fit(pool, pods, c.free)) if available else c)
        findings += f
    findings += _duplicates(section)
    if available:
        findings += _orphans(section, pods, holders)
    return capacity, findings


def _nodes_fit(pool: WhereaboutsPool, pods: Mapping[str, PodState], free: int) -> int | None:
    """More nodes the range has addresses for, each taking what a node holds from it today on average
    (Whereabouts hands out one address per attaching pod, wherever it runs); None when no live pod on a
    known node holds one, so there is no per-node share to go by."""
    live = [pods[a.podref] for a in pool.allocations if a.ip and a.podref in pods]
    held = [p.node for p in live if p.node and p.phase not in FINISHED_PHASES]
    if not held:
        return None
    per_node = -(-len(held) // len(set(held)))
    return free // per_node


def _bad_config(nad: str, problem: str) -> Finding:
    return WHEREABOUTS_NAD_CONFIG_INVALID.finding(
        severity=Severity.WARNING,
        subject=f"NetworkAttachmentDefinition {nad}",
        summary=f"the Whereabouts IPAM config of {nad} cannot be read, so its pool's capacity is unknown",
        evidence=(problem,),
        remediation="fix spec.config (`kubectl edit network-attachment-definitions`); pods attaching it fail too",
    )


def _pool(
    pool: WhereaboutsPool, ranges: Iterable[NetworkRange], stale: list[StaleAllocation], available: bool
) -> tuple[Capacity, list[Finding]]:
    space = pool_space(pool, ranges)
    corrupt = [a for a in pool.allocations if not a.ip]
    held = {a.ip for a in pool.allocations if a.ip and space.contains(a.ip)}
    size, used = space.size, len(held)
    free = max(0, size - used)
    subject = f"IPPool {pool.key} ({pool.range})"
    where = ", ".join(sorted({r.nad for r in space.ranges})) or "no NetworkAttachmentDefinition (whole range assumed)"
    note = f"stale={len(stale)}; corrupt={len(corrupt)}; config: {where}"
    if not available:
        note += "; pods not read, staleness unknown"
    cap = Capacity(
        kind=CAPACITY_KIND,
        name=pool.key,
        cidr=pool.range,
        size=size,
        used=used,
        free=free,
        utilization=utilization(used, size),
        note=note,
        extra={"stale": len(stale), "corrupt": len(corrupt)} if available else {"corrupt": len(corrupt)},
    )
    findings: list[Finding] = []
    stale_note = f"; {len(stale)} of them stale" if stale else ""
    fix = (
        f"{REVIEW.capitalize()}: {RECLAIM}"
        if stale
        else "widen the range (a larger range or another ipRanges entry) in the NAD"
    )
    if size > 0 and (free == 0 or utilization(used, size) >= NEARLY_FULL or free < MIN_FREE):
        full = free == 0
        kind, severity = (
            (WHEREABOUTS_POOL_FULL, Severity.CRITICAL) if full else (WHEREABOUTS_POOL_NEARLY_FULL, Severity.WARNING)
        )
        summary = (
            f"all {size} usable addresses are reserved{stale_note}: new pods attaching it cannot start"
            if full
            else f"{used} of {size} usable addresses reserved, {free} left{stale_note}"
        )
        evidence = (f"size {size}, used {used}, free {free}", f"config: {where}")
        findings.append(kind.finding(severity, subject, summary, evidence, fix))
    if stale:
        findings.append(
            WHEREABOUTS_STALE_ALLOCATION.finding(
                severity=Severity.WARNING,
                subject=subject,
                summary=f"{len(stale)} reservation(s) belong to pods that are gone or run with another address",
                evidence=_more([f"{_entry(s.allocation)}: {s.why}" for s in stale]),
                remediation=(
                    f"{REVIEW.capitalize()}; Pending pods and pods without network-status are never touched: {RECLAIM}"
                ),
            )
        )
    if corrupt:
        findings.append(
            WHEREABOUTS_CORRUPT_KEY.finding(
                severity=Severity.WARNING,
                subject=subject,
                summary=f"{len(corrupt)} allocation key(s) are not a decimal offset into {pool.range}",
                evidence=_more(
                    [f"key {a.offset!r} ({_key_problem(pool, a)}) held by {a.podref or 'no pod'}" for a in corrupt]
                ),
                remediation=(
                    "Whereabouts cannot place these; check who wrote them, then remove them by hand "
                    f"(`kubectl edit ippools.whereabouts.cni.cncf.io -n {pool.namespace} {pool.name}`)"
                ),
            )
        )
    if pool.host_bits:
        findings.append(_host_bits(pool, subject))
    return cap, findings


def _key_problem(pool: WhereaboutsPool, a: Allocation) -> str:
    """Why a key is corrupt: Whereabouts only writes fmt.Sprintf("%d") of a non-negative offset
    (toAllocationMap, pkg/storage/kubernetes/ipam.go @3a262bd)."""
    if parse_network(pool.range) is None:
        return "the pool's range is not a CIDR"
    if a.offset.startswith("-") and a.offset[1:].isdigit():
        return "negative"
    if not a.offset.isdigit() or not a.offset.isascii():
        return "not an integer"
    return f"past the end of {pool.range}"


def _host_bits(pool: WhereaboutsPool, subject: str) -> Finding:
    net = parse_network(pool.range)
    return WHEREABOUTS_POOL_RANGE_HOST_BITS.finding(
        severity=Severity.WARNING,
        subject=subject,
        summary=(
            f"spec.range {pool.range} has host bits set (the network is {net}): Whereabouts counts allocation "
            "offsets from the address as written, so what each offset means is ambiguous; cidrx never releases "
            "anything from this pool"
        ),
        evidence=(
            f"range {pool.range}, network {net}",
            f"{len(pool.allocations)} allocation(s), decoded from {pool.range.split('/')[0]} as Whereabouts does",
        ),
        remediation=(
            "Whereabouts itself always writes the network address (its config loader masks host bits), so "
            "something else wrote this pool: find out what, compare each allocation with its pod's "
            f"network-status, and fix it by hand (`kubectl edit ippools.whereabouts.cni.cncf.io -n {pool.namespace} "
            f"{pool.name}`)"
        ),
    )


def _address_order(ip: str) -> tuple[int, int]:
    """IPv4 before IPv6, then numeric: dual-stack pools put both families in one list (and ipaddress
    refuses to compare across them)."""
    return address_key(ip)


def _duplicates(section: WhereaboutsSection) -> list[Finding]:
    """Addresses held by more than one allocation on the same network (pools of different network_name
    are separate networks and may reuse addresses)."""
    # Counted first, per network, so that only addresses held twice get a list (tens of thousands of
    # allocations each with its own key and list would be a transient index of about 10 MB).
    counts: dict[str, dict[str, int]] = {}
    for pool in section.pools:
        seen = counts.setdefault(pool.network_name, {})
        for a in pool.allocations:
            if a.ip:
                seen[a.ip] = seen.get(a.ip, 0) + 1
    holders: dict[tuple[str, str], list[tuple[WhereaboutsPool, Allocation]]] = {}
    for pool in section.pools:
        seen = counts[pool.network_name]
        for a in pool.allocations:
            if a.ip and seen[a.ip] > 1:
                holders.setdefault((pool.network_name, a.ip), []).append((pool, a))
    del counts
    findings: list[Finding] = []
    for (network, ip), held in sorted(holders.items(), key=lambda kv: (kv[0][0], _address_order(kv[0][1]))):
        pods = sorted({a.podref or "no pod" for _, a in held})
        findings.append(
            WHEREABOUTS_DUPLICATE_IP.finding(
                severity=Severity.CRITICAL,
                subject=f"address {ip}" + (f" on network {network}" if network else ""),
                summary=f"{ip} is reserved {len(held)} times ({', '.join(pods)}): pods may share an address",
                evidence=_more([f"IPPool {p.key} {_entry(a)}" for p, a in held]),
                remediation=(
                    "find which pod really uses the address (its network-status), delete the other pod so it "
                    "gets a new one, and make sure the overlapping ranges have enable_overlapping_ranges on; "
                    f"remove stale holders (plan, review, apply): {RECLAIM}"
                ),
            )
        )
    return findings


def _orphans(section: WhereaboutsSection, pods: Mapping[str, PodState], holders: AddressHolders) -> list[Finding]:
    lines: list[str] = []
    index = allocations_by_address(section)
    for r in section.overlapping:
        if matching_allocations(section, r, index):
            continue
        others = sorted({a.podref or "no pod" for _pool, a in allocations_of(r, index)})
        if not r.addresses:
            held = "its name spells no address"
        elif others:
            held = f"the address is allocated to {', '.join(others)}"
        else:
            held = "no pool allocates the address"
        why = stale_reason(r.addresses, r.podref, pods.get(r.podref), holders)
        state = f"; {why}" if why else f"; kept: {kept_reason(r.addresses, r.podref, pods.get(r.podref), holders)}"
        lines.append(f"{r.namespace}/{r.name} ({r.ip or 'no address'}) for {r.podref or 'no pod'}: {held}{state}")
    if not lines:
        return []
    return [
        WHEREABOUTS_ORPHAN_RESERVATION.finding(
            severity=Severity.WARNING,
            subject="OverlappingRangeIPReservations",
            summary=f"{len(lines)} reservation(s) with no matching allocation keep their address from every pool",
            evidence=_more(lines),
            remediation=(
                f"{REVIEW.capitalize()}; reservations of pods that are gone are deleted, live ones are kept: {RECLAIM}"
            ),
        )
    ]
