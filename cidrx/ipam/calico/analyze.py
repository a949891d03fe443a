"""Diagnose Calico IPAM: blocks claimed per pool, nodes left without a block, borrowed and leaked IPs.

Why it exists: with Calico's default IPAM a node claims a block (a /26 by default) of a pool and keeps it;
busy nodes claim several, so once every block is claimed a new node gets none and its pods borrow
addresses from another node's block. That node routes the whole block to itself and blackholes the
borrowed addresses (docs/cloud-facts.md, "Incidents the examples reproduce"). Calico raises no alert for
any of this; these findings do. Pure: a function of the snapshot's Calico section, pods and nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.ipam.addresses import v4_text
from cidrx.ipam.calico.model import AllocationAttribute, CalicoSection, IPAMBlock, IPPool
from cidrx.ipam.liveness import AddressHolders
from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.model.kube import KubeNode, PodState

CALICO_POOL_BLOCKS_EXHAUSTED = FindingKind.parse(
    """CALICO-POOL-BLOCKS-EXHAUSTED (critical or warning): All blocks of a Calico IPPool are claimed by nodes; a
    node without a block must borrow addresses (critical when some node has none)."""
)

CALICO_POOL_NEARLY_FULL = FindingKind.parse(
    """CALICO-POOL-NEARLY-FULL (critical or warning): Most addresses of a Calico IPPool are allocated (critical
    once all are)."""
)

CALICO_NODE_WITHOUT_BLOCK = FindingKind.parse(
    """CALICO-NODE-WITHOUT-BLOCK (warning): Nodes hold no Calico block, so their pods borrow addresses from
    other nodes' blocks (or fail with strictAffinity)."""
)

CALICO_BORROWED_IPS = FindingKind.parse(
    """CALICO-BORROWED-IPS (warning): Pods use addresses from a block affine to another node; routes to them
    depend on the block owner and can be blackholed."""
)

CALICO_NODE_HOARDING_BLOCKS = FindingKind.parse(
    """CALICO-NODE-HOARDING-BLOCKS (warning): A node holds several blocks (some empty) while other nodes have
    none."""
)

CALICO_EMPTY_BLOCK = FindingKind.parse(
    """CALICO-EMPTY-BLOCK (warning or info): A node keeps a block with no address in use; warning when the pool
    is tight and the block could be released, info otherwise."""
)

CALICO_LEAKED_IP = FindingKind.parse(
    """CALICO-LEAKED-IP (warning): Block addresses are held for pods that no longer exist (not tunnel
    addresses); `cidrx reclaim --ipam calico` releases them."""
)

# What this module raises, for the findings catalogue (python -m tools.docgen).
KINDS = FindingKind.all_in(globals())


NEARLY_FULL = 0.85  # share of a pool's addresses in use that earns a warning
MAX_EVIDENCE = 20  # lines of per-address evidence before "... and N more"

# Fix commands in backticks, one command each (renderers print them one per line, runnable as printed).
RECLAIM = "`cidrx reclaim --k8s --ipam calico --plan --out reclaim.json` `cidrx reclaim --apply reclaim.json`"
NEW_POOL = "`cidrx expand --k8s --strategy calico-pool --plan --out pool.json` `cidrx expand --apply pool.json`"
STRICT = "set strictAffinity: true in IPAMConfig `default` so a node without a block fails the pod instead of borrowing"
STRICT_CMD = "`calicoctl ipam configure --strictaffinity=true`"


# --------------------------------------------------------------------------------------------------
# Shared decisions (the strategies and the actions use the same ones)
# --------------------------------------------------------------------------------------------------


def block_ip(block_cidr: str, ordinal: int) -> str:
    """The address of `ordinal` in a block (ordinal 0 is the block's first address)."""
    return str(netmath.parse_cidr(block_cidr).network_address + ordinal)


def is_empty(block: IPAMBlock) -> bool:
    return block.used == 0


def leak_reason(
    attr: AllocationAttribute, ip: str, pods: Mapping[str, PodState], holders: AddressHolders
) -> str | None:
    """Why an allocation is leaked, or None while anything may still use its address.

    Live (never a leak), cidrx.ipam.liveness first: any unfinished pod reports `ip`. Then Calico's own:
    a tunnel or LoadBalancer address; an entry in cooldown (already released); an allocation naming no
    pod (a stopped KubeVirt VM keeps its address with its owner fields cleared, and kube-controllers
    assumes such allocations valid: projectcalico/calico kube-controllers/pkg/controllers/node/ipam.go
    allocationIsValid, commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2); a KubeVirt VM's address
    (`vmi-name`: upstream asks the VirtualMachine objects, which cidrx does not read); and an allocation
    whose `secondary` or `alternateOwnerAttrs` names a pod that still exists (libcalico-go/lib/ipam/vmipam
    swaps the two during a live migration). `pods`: the unfinished pods by "namespace/name".
    """
    if holders.is_live(ip):
        return None
    if attr.is_tunnel or attr.is_load_balancer or attr.in_cooldown or attr.vmi_name:
        return None
    refs = attr.pod_refs
    if not refs or any(ref in pods for ref in refs):
        return None
    return "no pod reports it and " + " and ".join(f"pod {ref} no longer exists" for ref in refs)


def live_reason(attr: AllocationAttribute, ip: str, pods: Mapping[str, PodState], holders: AddressHolders) -> str:
    """Why an address is live, for refusals ("" when it is not)."""
    if holders.is_live(ip):
        return holders.describe(ip)
    if attr.is_tunnel:
        return f"a {attr.type} of node {attr.node}"
    if attr.is_load_balancer:
        return f"a LoadBalancer address of Service {attr.namespace}/{attr.service or '?'}"
    if attr.in_cooldown:
        return "already released (in cooldown)"
    if attr.vmi_name:
        return f"the address of KubeVirt VM {attr.namespace}/{attr.vmi_name}"
    refs = attr.pod_refs
    if not refs:
        return "its allocation names no pod"
    alive = [r for r in refs if r in pods]
    return f"pod {', '.join(alive)} exists" if alive else ""


@dataclass(frozen=True)
class LeakedIp:
    block: str  # IPAMBlock name
    cidr: str  # the block's CIDR
    ordinal: int
    ip: str
    handle_id: str | None
    pod: str  # namespace/name
    why: str


def leaked_ips(section: CalicoSection, pods: Mapping[str, PodState]) -> list[LeakedIp]:
    """Every allocation no pod can be using (leak_reason), block by block, ordinal order."""
    holders = AddressHolders.of(pods.values())
    found: list[LeakedIp] = []
    for block in section.blocks:
        base: int | None = None
        for ordinal, index in enumerate(block.allocations):
            if index is None:
                continue
            attr = block.attribute(ordinal)
            if attr is None or attr.pod_ref is None:
                continue
            if base is None:  # parsed once per block; an IPv4 block (parse_cidr), so its addresses are quads
                base = int(netmath.parse_cidr(block.cidr).network_address)
            ip = v4_text(base + ordinal)
            why = leak_reason(attr, ip, pods, holders)
            if why is not None:
                found.append(LeakedIp(block.name, block.cidr, ordinal, ip, attr.handle_id, attr.pod_ref, why))
    return found


def pool_of(block: IPAMBlock, pools: Sequence[IPPool]) -> IPPool | None:
    try:
        first, last = _span(block.cidr)
    except InvalidInput:  # a malformed block CIDR belongs to no pool
        return None
    for pool in pools:
        lo, hi = _span(pool.cidr)
        if lo <= first and last <= hi:
            return pool
    return None


@lru_cache(maxsize=1 << 14)
def _span(cidr: str) -> tuple[int, int]:
    """First and last address of an IPv4 CIDR (netmath.parse_cidr's rules and errors), kept for the next
    call: every block is matched against the pools more than once."""
    net = netmath.parse_cidr(cidr)
    first = int(net.network_address)
    return first, first + net.num_addresses - 1


def _net(cidr: str) -> IPv4Network:
    return netmath.parse_cidr(cidr)


def total_blocks(pool: IPPool) -> int:
    return 1 << max(0, pool.block_size - _net(pool.cidr).prefixlen)


def blocks_by_node(section: CalicoSection) -> dict[str, list[IPAMBlock]]:
    out: dict[str, list[IPAMBlock]] = {}
    for block in section.blocks:
        if block.host is not None:
            out.setdefault(block.host, []).append(block)
    return out


def workload_blocks_by_node(section: CalicoSection) -> dict[str, list[IPAMBlock]]:
    """Blocks of workload pools only (IPPool.is_workload_capacity): a block of a LoadBalancer- or
    Tunnel-only, disabled or Manual pool gives a node no addresses for its pods."""
    pools = [p for p in section.pools if p.is_workload_capacity]
    out: dict[str, list[IPAMBlock]] = {}
    for block in section.blocks:
        if block.host is not None and pool_of(block, pools) is not None:
            out.setdefault(block.host, []).append(block)
    return out


def _more(lines: list[str]) -> tuple[str, ...]:
    if len(lines) <= MAX_EVIDENCE:
        return tuple(lines)
    return (*lines[:MAX_EVIDENCE], f"... and {len(lines) - MAX_EVIDENCE} more")


def _ipv4(pool: IPPool) -> bool:
    return ":" not in pool.cidr


# --------------------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PoolUse:
    pool: IPPool
    blocks: tuple[IPAMBlock, ...]
    total: int
    used: int

    @property
    def claimed(self) -> int:
        return len(self.blocks)

    @property
    def size(self) -> int:
        return _net(self.pool.cidr).num_addresses

    @property
    def exhausted(self) -> bool:
        return self.claimed >= self.total


def analyze_calico(
    section: CalicoSection,
    pods: Mapping[str, PodState],
    nodes: Sequence[KubeNode],
    available: bool = True,
) -> tuple[list[Capacity], list[Finding]]:
    """Capacity per IPv4 pool (addresses and blocks) and the Calico findings.

    `pods`: the pods allocations name, by "namespace/name" (a name missing here is a gone pod).
    `available=False` (the pod list could not be read) skips the leak findings, which would be wrong.
    """
    pools = [p for p in section.pools if _ipv4(p)]
    uses = [_pool_use(p, section) for p in pools]
    by_node = blocks_by_node(section)
    workload = workload_blocks_by_node(section)
    node_names = [n.name for n in nodes]
    enabled = [u for u in uses if u.pool.is_workload_capacity]
    no_room = bool(enabled) and all(u.exhausted for u in enabled)
    without = [n for n in node_names if n not in workload]
    borrowed = borrowed_ips(section)
    borrowers = {attr.node for _, _, attr in borrowed}
    leaks = leaked_ips(section, pods) if available else None

    capacity: list[Capacity] = []
    findings: list[Finding] = []
    for u in uses:
        capacity += _capacity(u, borrowed, leaks)
        findings += _pool_findings(u, without, section)
    findings += _without_block(without, borrowers, no_room, section)
    findings += _borrowed_findings(borrowed, section)
    findings += _hoarding(by_node, uses, without, section)
    findings += _empty_blocks(section, by_node, uses, without)
    if leaks is not None:
        findings += _leak_findings(leaks)
    return capacity, findings


def _pool_use(pool: IPPool, section: CalicoSection) -> _PoolUse:
    blocks = tuple(b for b in section.blocks if pool_of(b, [pool]) is not None)
    return _PoolUse(pool, blocks, total_blocks(pool), sum(b.used for b in blocks))


def _capacity(
    u: _PoolUse, borrowed: list[tuple[IPAMBlock, int, AllocationAttribute]], leaks: list[LeakedIp] | None
) -> list[Capacity]:
    hosts = sorted({b.host for b in u.blocks if b.host})
    state = " (disabled)" if u.pool.disabled else ""
    if not u.pool.disabled and not u.pool.is_workload_capacity:
        mode = u.pool.assignment_mode or "Automatic"
        state = f" (not for pods: allowedUses {'/'.join(u.pool.uses) or 'none'}, assignmentMode {mode})"
    # The same addresses the CALICO-BORROWED-IPS and CALICO-LEAKED-IP findings list, counted per pool.
    mine = {b.name for b in u.blocks}
    extra: dict[str, float] = {
        "blocks_claimed": u.claimed,
        "blocks_total": u.total,
        "borrowed": sum(1 for block, _, _ in borrowed if block.name in mine),
    }
    if leaks is not None:  # pods not read: leaks unknown, not zero
        extra["leaked"] = sum(1 for leak in leaks if leak.block in mine)
    return [
        Capacity(
            kind="calico-pool",
            name=u.pool.name,
            cidr=u.pool.cidr,
            size=u.size,
            used=u.used,
            free=u.size - u.used,
            utilization=utilization(u.used, u.size),
            max_nodes=u.total,
            nodes=len(hosts),
            # A new node claims a block of its own; once none is left it borrows (CALICO-NODE-WITHOUT-BLOCK).
            nodes_fit=max(0, u.total - u.claimed),
            note=f"blocks /{u.pool.block_size}: {u.claimed} of {u.total} claimed{state}",
            extra=extra,
        ),
        Capacity(
            kind="calico-blocks",
            unit="blocks",  # size/used/free count the pool's blocks, not addresses
            name=u.pool.name,
            cidr=u.pool.cidr,
            size=u.total,
            used=u.claimed,
            free=max(0, u.total - u.claimed),
            utilization=utilization(u.claimed, u.total),
            nodes_fit=max(0, u.total - u.claimed),
            note=f"/{u.pool.block_size} blocks held by {len(hosts)} node(s)",
        ),
    ]


def _config_line(section: CalicoSection) -> str:
    c = section.config
    if c is None:
        return "IPAMConfig default: absent (strictAffinity false, maxBlocksPerHost unlimited)"
    limit = c.max_blocks_per_host or "unlimited"
    return f"IPAMConfig default: strictAffinity {str(c.strict_affinity).lower()}, maxBlocksPerHost {limit}"


def _per_node_line(blocks: Sequence[IPAMBlock]) -> str:
    counts: dict[str, int] = {}
    for b in blocks:
        counts[b.host or "(no affinity)"] = counts.get(b.host or "(no affinity)", 0) + 1
    return "blocks per node: " + ", ".join(f"{n} {c}" for n, c in sorted(counts.items()))


def _pool_findings(u: _PoolUse, without: list[str], section: CalicoSection) -> list[Finding]:
    if not u.pool.is_workload_capacity:
        return []
    out: list[Finding] = []
    subject = f"IPPool {u.pool.name} ({u.pool.cidr})"
    if u.exhausted:
        severity = Severity.CRITICAL if without else Severity.WARNING
        who = f"; {len(without)} node(s) have no block: {', '.join(without)}" if without else ""
        out.append(
            CALICO_POOL_BLOCKS_EXHAUSTED.finding(
                severity=severity,
                subject=subject,
                summary=f"all {u.total} /{u.pool.block_size} blocks of {u.pool.cidr} are claimed{who}",
                evidence=(
                    f"{u.claimed} of {u.total} blocks claimed, {u.used} of {u.size} addresses allocated",
                    _per_node_line(u.blocks),
                    _config_line(section),
                ),
                remediation=(
                    "Add a pool (plan, then apply), free the blocks that hold nothing (plan, then apply) and "
                    f"{STRICT}: {NEW_POOL} {RECLAIM} {STRICT_CMD}"
                ),
            )
        )
    share = u.used / u.size if u.size else 1.0
    if share >= NEARLY_FULL:
        full = u.used >= u.size
        out.append(
            CALICO_POOL_NEARLY_FULL.finding(
                severity=Severity.CRITICAL if full else Severity.WARNING,
                subject=subject,
                summary=f"{u.used} of {u.size} addresses allocated ({share:.0%})",
                evidence=(f"{u.claimed} of {u.total} blocks claimed",),
                remediation=f"Release leaked addresses, then add a pool (plan, then apply each): {RECLAIM} {NEW_POOL}",
            )
        )
    return out


def _without_block(without: list[str], borrowers: set[str], no_room: bool, section: CalicoSection) -> list[Finding]:
    # A node claims its first block only when its first pod starts, so a node without one is normal while
    # blocks are left; it matters when none are left, or when the node already borrows.
    flagged = [n for n in without if no_room or n in borrowers]
    if not flagged:
        return []
    borrowing = [n for n in flagged if n in borrowers]
    evidence = [f"{n}: no block{' (its pods borrow addresses)' if n in borrowers else ''}" for n in flagged]
    evidence.append(
        "every workload pool's blocks are claimed (disabled, Manual and LoadBalancer/Tunnel-only pools do not count)"
        if no_room
        else "workload pools still have free blocks"
    )
    evidence.append(_config_line(section))
    return [
        CALICO_NODE_WITHOUT_BLOCK.finding(
            severity=Severity.WARNING,
            subject="nodes " + ", ".join(flagged),
            summary=f"{len(flagged)} node(s) hold no Calico block"
            + (f"; {len(borrowing)} of them borrow addresses from other nodes' blocks" if borrowing else ""),
            evidence=tuple(evidence),
            remediation=f"Give them blocks with a new pool, or free empty blocks (the last two): {NEW_POOL} {RECLAIM}",
        )
    ]


def borrowed_ips(section: CalicoSection) -> list[tuple[IPAMBlock, int, AllocationAttribute]]:
    """Every allocation of a block used by a pod on another node than the block's (block, ordinal, attribute)."""
    out: list[tuple[IPAMBlock, int, AllocationAttribute]] = []
    for block in section.blocks:
        host = block.host
        if host is None:
            continue
        for ordinal, index in enumerate(block.allocations):
            if index is None:
                continue
            attr = block.attribute(ordinal)
            if attr is not None and attr.node and attr.node != host:
                out.append((block, ordinal, attr))
    return out


def _borrowed_findings(
    borrowed: list[tuple[IPAMBlock, int, AllocationAttribute]], section: CalicoSection
) -> list[Finding]:
    by_block: dict[str, list[tuple[IPAMBlock, int, AllocationAttribute]]] = {}
    for entry in borrowed:
        by_block.setdefault(entry[0].name, []).append(entry)
    out: list[Finding] = []
    for entries in by_block.values():
        block = entries[0][0]
        nodes = sorted({attr.node for _, _, attr in entries})
        lines = [
            f"{block_ip(block.cidr, o)} used by {a.pod_ref or a.type or a.handle_id or 'unknown'} on {a.node}"
            for _, o, a in entries
        ]
        lines.append(f"block strictAffinity {str(block.strict_affinity).lower()}; {_config_line(section)}")
        out.append(
            CALICO_BORROWED_IPS.finding(
                severity=Severity.WARNING,
                subject=f"block {block.cidr} of node {block.host}",
                summary=(
                    f"{len(entries)} address(es) of {block.host}'s block {block.cidr} are used by pods on "
                    f"{', '.join(nodes)}; {block.host} routes the whole block to itself and may blackhole them"
                ),
                evidence=_more(lines),
                remediation=(
                    f"S{STRICT[1:]}; give every node its own blocks with a new pool (or smaller blocks) and free "
                    "empty blocks; then restart the borrowing pods so they get addresses from their own node's "
                    f"block: {STRICT_CMD} {NEW_POOL} {RECLAIM}"
                ),
            )
        )
    return out


def _hoarding(
    by_node: dict[str, list[IPAMBlock]], uses: list[_PoolUse], without: list[str], section: CalicoSection
) -> list[Finding]:
    # Several blocks per node is how Calico grows; it hurts once it leaves other nodes without any.
    exhausted = any(u.exhausted for u in uses if u.pool.is_workload_capacity)
    if not (without and exhausted):
        return []
    out: list[Finding] = []
    limit = section.config.max_blocks_per_host if section.config else 0
    for node, blocks in sorted(by_node.items()):
        if len(blocks) < 2:
            continue
        lines = [f"{b.cidr}: {b.used} of {len(b.allocations) or '?'} addresses in use" for b in blocks]
        lines.append(_config_line(section))
        idle = sum(1 for b in blocks if is_empty(b))
        out.append(
            CALICO_NODE_HOARDING_BLOCKS.finding(
                severity=Severity.WARNING,
                subject=f"node {node}",
                summary=f"{node} holds {len(blocks)} blocks ({idle} empty) while {len(without)} node(s) have none",
                evidence=tuple(lines),
                remediation=(
                    # Only empty blocks can be released; with none, reclaim has nothing to free on this node.
                    (f"Free its {idle} empty block(s) (the first two), " if idle else "")
                    + ("c" if idle else "C")
                    + "ap blocks per node with IPAMConfig maxBlocksPerHost"
                    + (f" (now {limit})" if limit else "")
                    + f", or add space with a new pool: {RECLAIM + ' ' if idle else ''}{NEW_POOL}"
                ),
            )
        )
    return out


def _empty_blocks(
    section: CalicoSection, by_node: dict[str, list[IPAMBlock]], uses: list[_PoolUse], without: list[str]
) -> list[Finding]:
    tight = bool(without) or any(u.exhausted for u in uses if u.pool.is_workload_capacity)
    out: list[Finding] = []
    for block in section.blocks:
        if block.host is None or not is_empty(block):
            continue
        others = len(by_node.get(block.host, [])) - 1
        releasable = others >= 1
        out.append(
            CALICO_EMPTY_BLOCK.finding(
                severity=Severity.WARNING if tight and releasable else Severity.INFO,
                subject=f"block {block.cidr} of node {block.host}",
                summary=f"{block.host} holds block {block.cidr} with no address in use",
                evidence=(
                    f"{block.host} holds {others} other block(s)",
                    "releasable: the node keeps another block" if releasable else "kept: it is the node's only block",
                ),
                remediation=f"Release it: {RECLAIM}" if releasable else "Nothing to do: it is the node's only block.",
            )
        )
    return out


def _leak_findings(leaks: list[LeakedIp]) -> list[Finding]:
    by_block: dict[str, list[LeakedIp]] = {}
    for leak in leaks:
        by_block.setdefault(leak.block, []).append(leak)
    out: list[Finding] = []
    for entries in by_block.values():
        cidr = entries[0].cidr
        out.append(
            CALICO_LEAKED_IP.finding(
                severity=Severity.WARNING,
                subject=f"block {cidr}",
                summary=f"{len(entries)} address(es) of block {cidr} are held for pods that no longer use them",
                evidence=_more([f"{e.ip} ({e.handle_id}): {e.why}" for e in entries]),
                remediation=f"Release them: {RECLAIM}",
            )
        )
    return out
