"""Cilium IPAM, analysis: how many more nodes the cluster pool (or each CiliumPodIPPool) can give a CIDR,
which nodes got none and why, and which nodes' own CIDRs are full.

Why it exists: in cluster-pool mode Node.spec.podCIDR is not Cilium's, so a cluster whose kube-controller-manager
range looks healthy can have a node that never got a Cilium CIDR (cilium-operator records "allocator full" on its
CiliumNode and the node stays NotReady) and nothing else says so. Capacity is node CIDRs the list holds vs
CiliumNodes holding one; per-node use is the pods on the node (the agent allocates in memory, so
`status.ipam.used` stays empty). Error strings are matched as upstream words them (docs/cloud-facts.md,
"Cilium"). Pure: capacity and findings from the section and the kube section.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Network

from cidrx import registry
from cidrx.ipam.addresses import v4_network
from cidrx.ipam.cilium.model import (
    CLOUD_MODES,
    CLUSTER_POOL,
    HELM_VALUE,
    KUBERNETES,
    MULTI_POOL,
    CiliumNode,
    CiliumSection,
    PodIPPool,
)
from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.model.kube import KubeSection

CLUSTER_POOL_KIND = "cilium-cluster-pool"
POOL_KIND = "cilium-pool"
NODE_KIND = "cilium-node-cidr"
NEARLY_EXHAUSTED = 0.8
MAX_EVIDENCE = 10
# cilium-operator's ErrAllocatorFull (pkg/ipam/allocator/podcidr/podcidr.go), recorded in the CiliumNode's
# status.ipam.operator-status.error; the agent's ipallocator.ErrFull (pkg/ipam/service/ipallocator/allocator.go),
# seen in the kubelet's FailedCreatePodSandBox events; the multi-pool operator's allocation error
# (pkg/ipam/allocator/multipool/pool_allocator.go AllocateToNode).
ALLOCATOR_FULL = "allocator full"
RANGE_FULL = "range is full"
POOL_ALLOCATION_FAILED = "failed to allocate ipv4 address"
SANDBOX_REASON = "FailedCreatePodSandBox"

CILIUM_CLUSTER_POOL_EXHAUSTED = FindingKind.parse(
    """CILIUM-CLUSTER-POOL-EXHAUSTED (critical): Every per-node CIDR of Cilium's cluster pool
    (cluster-pool-ipv4-cidr) is taken: cilium-operator gives the next node none ("allocator full") and that node
    stays NotReady."""
)
CILIUM_CLUSTER_POOL_NEARLY_EXHAUSTED = FindingKind.parse(
    """CILIUM-CLUSTER-POOL-NEARLY-EXHAUSTED (warning): Cilium's cluster pool has few per-node CIDRs left."""
)
CILIUM_NODES_WITHOUT_CIDR = FindingKind.parse(
    """CILIUM-NODES-WITHOUT-CIDR (critical or warning): CiliumNodes hold no pod CIDR from cilium-operator: the
    Cilium agent on them waits and their pods cannot start."""
)
CILIUM_NODE_CIDR_FULL = FindingKind.parse(
    """CILIUM-NODE-CIDR-FULL (critical or warning): A node's own pod CIDR is (nearly) used up: the Cilium agent
    answers "range is full" and new pods on that node fail to start."""
)
CILIUM_POOL_EXHAUSTED = FindingKind.parse(
    """CILIUM-POOL-EXHAUSTED (critical): A CiliumPodIPPool has no free block left for nodes that request
    addresses from it (multi-pool mode)."""
)
CILIUM_POOL_NEARLY_EXHAUSTED = FindingKind.parse(
    """CILIUM-POOL-NEARLY-EXHAUSTED (warning): A CiliumPodIPPool has few blocks left (multi-pool mode)."""
)
CILIUM_ADDRESSES_ELSEWHERE = FindingKind.parse(
    """CILIUM-ADDRESSES-ELSEWHERE (info): Cilium's IPAM mode takes pod addresses from somewhere else (the cloud
    network, or Node.spec.podCIDR): that is where capacity is diagnosed."""
)

# What this module raises, for the findings catalogue (python -m tools.docgen).
KINDS = FindingKind.all_in(globals())


def _listed(lines: list[str], limit: int = MAX_EVIDENCE) -> tuple[str, ...]:
    return tuple(lines) if len(lines) <= limit else (*lines[:limit], f"... and {len(lines) - limit} more")


def usable(prefix: int) -> int:
    """Addresses a per-node CIDR gives pods: the agent's range allocator skips the network and broadcast
    addresses (ipallocator.NewCIDRRange)."""
    size = 1 << (32 - prefix)
    return size - 2 if size > 2 else size


def node_cidrs_of(net: IPv4Network, mask: int) -> int:
    """How many per-node CIDRs of /`mask` `net` holds (0 when the mask is shorter than the range)."""
    return 1 << (mask - net.prefixlen) if net.prefixlen <= mask <= 32 else 0


def expand_hint(what: str) -> str:
    return f"plan more space with `cidrx expand --k8s --strategy cilium-pool --plan` ({what})"


def analyze_cilium(section: CiliumSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
    mode = section.config.mode
    if mode == CLUSTER_POOL:
        capacity, findings = _cluster_pool(section, kube)
    elif mode == MULTI_POOL:
        capacity, findings = _multi_pool(section, kube)
    else:
        return [], [_elsewhere(mode)]
    return capacity, findings + _full_nodes(section, kube)


def _elsewhere(mode: str) -> Finding:
    if mode in CLOUD_MODES:
        provider = registry.provider_spec(CLOUD_MODES[mode]) if CLOUD_MODES[mode] else None
        where = "the cloud network (ENIs / interfaces of the nodes)"
        fix = (
            f"diagnose the cloud side: `cidrx diagnose {provider.flag} ...` (its subnets are where pods get addresses)"
            if provider is not None
            else "diagnose the cloud network's subnets; cidrx has no target for this cloud yet"
        )
    elif mode == KUBERNETES:
        where = "Node.spec.podCIDR (Kubernetes host-scope IPAM: kube-controller-manager or the cloud assigns it)"
        fix = "see the node IPAM findings, or diagnose the cloud target (e.g. --gke) whose range assigns podCIDRs"
    else:
        where = f"IPAM mode {mode!r}, which cidrx does not read"
        fix = "check the IPAM that mode delegates to"
    return CILIUM_ADDRESSES_ELSEWHERE.finding(
        severity=Severity.INFO,
        subject=f"cilium-config ipam={mode}",
        summary=f"Cilium takes pod addresses from {where}; no Cilium-managed range to diagnose",
        remediation=fix,
    )


def _holders(nodes: Iterable[CiliumNode], nets: list[IPv4Network]) -> dict[IPv4Network, list[CiliumNode]]:
    out: dict[IPv4Network, list[CiliumNode]] = {n: [] for n in nets}
    for node in nodes:
        for text in node.v4_pod_cidrs:
            cidr = v4_network(text)
            home = next((n for n in nets if cidr is not None and cidr.subnet_of(n)), None)
            if home is not None:
                out[home].append(node)
    return out


def cluster_pool_entries(section: CiliumSection) -> list[IPv4Network]:
    return [n for n in (v4_network(c) for c in section.config.cluster_pool) if n is not None]


def free_node_cidrs(section: CiliumSection) -> int:
    """Per-node CIDRs of the cluster pool that no CiliumNode holds."""
    mask = section.config.mask_size
    nets = cluster_pool_entries(section)
    held = _holders(section.nodes, nets)
    return sum(max(0, node_cidrs_of(n, mask) - len(held[n])) for n in nets)


def _cluster_pool(section: CiliumSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
    mask = section.config.mask_size
    nets = cluster_pool_entries(section)
    held = _holders(section.nodes, nets)
    per_node = kube.pods_per_node
    rows: list[Capacity] = []
    for net in nets:
        total = node_cidrs_of(net, mask)
        taken = len(held[net])
        in_use = sum(min(per_node.get(n.name, 0), usable(mask)) for n in held[net])
        rows.append(
            Capacity(
                kind=CLUSTER_POOL_KIND,
                name="cluster-pool",
                cidr=str(net),
                size=net.num_addresses,
                used=min(taken << (32 - mask), net.num_addresses),
                free=max(0, (total - taken) << (32 - mask)),
                utilization=utilization(taken, total),
                max_nodes=total,
                nodes=taken,
                note=f"/{mask} per node (cluster-pool-ipv4-mask-size); CiliumNodes holding one, not Node.spec.podCIDR",
                extra={
                    "node_cidrs_free": float(max(0, total - taken)),
                    "pod_ips_free": float(max(0, (total - taken) * usable(mask) + taken * usable(mask) - in_use)),
                },
            )
        )
    findings: list[Finding] = []
    listed = " ".join(section.config.cluster_pool)
    total = sum(c.max_nodes or 0 for c in rows)
    taken = sum(c.nodes or 0 for c in rows)
    free = total - taken
    missing = [n for n in section.nodes if not n.v4_pod_cidrs]
    full = [n for n in missing if ALLOCATOR_FULL in n.operator_error]
    ready = {n.name: n.ready for n in kube.nodes}
    helm = f"Helm users: add it to {HELM_VALUE} too, or the next helm upgrade takes it out again"
    fix = expand_hint(f"it appends a CIDR to cluster-pool-ipv4-cidr and restarts cilium-operator; {helm}")
    subject = f"cluster-pool {listed}"
    if full or (free <= 0 and total):
        findings.append(
            CILIUM_CLUSTER_POOL_EXHAUSTED.finding(
                severity=Severity.CRITICAL,
                subject=subject,
                summary=(
                    f"Cilium's cluster pool ({listed}) has no free /{mask} left: {taken} of {total} node CIDRs "
                    f"are held"
                    + (f" and {len(full)} CiliumNode(s) got none (cilium-operator: {ALLOCATOR_FULL!r})" if full else "")
                ),
                evidence=(
                    *_listed(
                        [
                            f"CiliumNode {n.name}: {n.operator_error}"
                            + ("" if ready.get(n.name, True) else "; node NotReady")
                            for n in full
                        ]
                    ),
                    f"{taken} CiliumNode(s) hold a /{mask} of {listed}; room for {total}",
                ),
                remediation=fix,
            )
        )
    elif total and utilization(taken, total) >= NEARLY_EXHAUSTED:
        findings.append(
            CILIUM_CLUSTER_POOL_NEARLY_EXHAUSTED.finding(
                severity=Severity.WARNING,
                subject=subject,
                summary=f"Cilium's cluster pool ({listed}) is {taken / total:.0%} used: {free} of {total} node CIDRs "
                "left",
                evidence=(f"{taken} CiliumNode(s) hold a /{mask} of {listed}; room for {total}",),
                remediation=fix,
            )
        )
    others = [n for n in missing if n not in full]
    if others:
        errored = [n for n in others if n.operator_error]
        findings.append(
            CILIUM_NODES_WITHOUT_CIDR.finding(
                severity=Severity.CRITICAL if errored or free <= 0 else Severity.WARNING,
                subject=subject,
                summary=f"{len(others)} CiliumNode(s) hold no pod CIDR; the Cilium agent there cannot start pods",
                evidence=_listed(
                    [
                        f"CiliumNode {n.name}: "
                        + (f"cilium-operator: {n.operator_error}" if n.operator_error else "no CIDR yet")
                        + ("" if ready.get(n.name, True) else "; node NotReady")
                        for n in others
                    ]
                ),
                remediation="a node that just joined gets its CIDR within seconds; otherwise read the error above and "
                "the cilium-operator log. " + fix,
            )
        )
    return rows, findings


def _pool_nets(pool: PodIPPool) -> list[IPv4Network]:
    return [n for n in (v4_network(c) for c in pool.cidrs) if n is not None]


def pool_blocks(pool: PodIPPool) -> int:
    mask = pool.mask_size or 0
    return sum(node_cidrs_of(n, mask) for n in _pool_nets(pool))


def pool_allocations(section: CiliumSection, pool: str) -> dict[str, list[str]]:
    """node -> the IPv4 CIDRs of `pool` allocated to it."""
    return {
        n.name: cidrs
        for n in section.nodes
        if (cidrs := [c for a in n.allocated if a.pool == pool for c in a.cidrs if ":" not in c])
    }


def starved(section: CiliumSection, pool: PodIPPool) -> list[tuple[CiliumNode, int, int]]:
    """(node, addresses requested, addresses allocated) of the nodes `pool` gives fewer than they request."""
    out = []
    mask = pool.mask_size or 32
    alloc = pool_allocations(section, pool.name)
    for node in section.nodes:
        want = sum(r.ipv4_addrs for r in node.requested if r.pool == pool.name)
        have = len(alloc.get(node.name, ())) * usable(mask)
        if want > have:
            out.append((node, want, have))
    return out


def _multi_pool(section: CiliumSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
    rows: list[Capacity] = []
    findings: list[Finding] = []
    for pool in section.ippools:
        mask = pool.mask_size
        nets = _pool_nets(pool)
        if mask is None or not nets:
            continue
        total = pool_blocks(pool)
        taken = sum(len(c) for c in pool_allocations(section, pool.name).values())
        size = sum(n.num_addresses for n in nets)
        rows.append(
            Capacity(
                kind=POOL_KIND,
                name=pool.name,
                cidr=" ".join(str(n) for n in nets),
                size=size,
                used=min(size, taken << (32 - mask)),
                free=max(0, (total - taken) << (32 - mask)),
                utilization=utilization(taken, total),
                max_nodes=total,
                nodes=taken,
                note=f"CiliumPodIPPool; /{mask} blocks (maskSize); blocks allocated to nodes",
                extra={
                    "node_cidrs_free": float(max(0, total - taken)),
                    "pod_ips_free": float(max(0, total - taken) * usable(mask)),
                },
            )
        )
        hungry = starved(section, pool)
        errors = [
            n for n in section.nodes if POOL_ALLOCATION_FAILED in n.operator_error and pool.name in n.operator_error
        ]
        fix = expand_hint(f"it adds a CIDR to CiliumPodIPPool {pool.name} spec.ipv4.cidrs; no restart is needed")
        if (hungry or errors) and taken >= total:
            findings.append(
                CILIUM_POOL_EXHAUSTED.finding(
                    severity=Severity.CRITICAL,
                    subject=f"CiliumPodIPPool {pool.name}",
                    summary=f"CiliumPodIPPool {pool.name} has no free /{mask} left: all {total} blocks are allocated "
                    f"and {len(hungry)} node(s) need more addresses from it",
                    evidence=_listed(
                        [f"CiliumNode {n.name}: requests {want} addresses, holds {have}" for n, want, have in hungry]
                        + [f"CiliumNode {n.name}: cilium-operator: {n.operator_error}" for n in errors]
                    ),
                    remediation=fix,
                )
            )
        elif total and utilization(taken, total) >= NEARLY_EXHAUSTED:
            findings.append(
                CILIUM_POOL_NEARLY_EXHAUSTED.finding(
                    severity=Severity.WARNING,
                    subject=f"CiliumPodIPPool {pool.name}",
                    summary=f"CiliumPodIPPool {pool.name} is {taken / total:.0%} allocated: {total - taken} of "
                    f"{total} /{mask} blocks left",
                    remediation=fix,
                )
            )
    return rows, findings


def _full_nodes(section: CiliumSection, kube: KubeSection) -> list[Finding]:
    """Nodes whose own CIDR is (nearly) full: pods counted against the CIDR, and the agent's "range is full"
    in sandbox events (cluster-pool mode; in multi-pool mode a node asks the operator for more instead)."""
    if section.config.mode != CLUSTER_POOL:
        return []
    mask = section.config.mask_size
    room = usable(mask)
    lines: list[str] = []
    worst = Severity.WARNING
    for node in section.nodes:
        if not node.v4_pod_cidrs:
            continue
        pods = kube.pods_per_node.get(node.name, 0)
        cap = room * len(node.v4_pod_cidrs)
        if pods >= cap:
            worst = Severity.CRITICAL
            lines.append(f"node {node.name}: {pods} pods on {', '.join(node.v4_pod_cidrs)} ({cap} usable addresses)")
        elif cap and pods / cap >= NEARLY_EXHAUSTED:
            lines.append(f"node {node.name}: {pods} of {cap} addresses of {', '.join(node.v4_pod_cidrs)} in use")
    events = [e for e in kube.events if e.reason == SANDBOX_REASON and RANGE_FULL in e.message]
    if events:
        worst = Severity.CRITICAL
        lines += [f"{e.kind or 'Pod'} {e.namespace}/{e.name}: {e.message}" for e in events]
    if not lines:
        return []
    return [
        CILIUM_NODE_CIDR_FULL.finding(
            severity=worst,
            subject=f"per-node /{mask} CIDRs",
            summary=f"node pod CIDRs are {'full' if worst is Severity.CRITICAL else 'nearly full'}: Cilium's agent "
            f"answers {RANGE_FULL!r} when a node's /{mask} has no address left",
            evidence=_listed(lines),
            remediation="a node's CIDR size (cluster-pool-ipv4-mask-size) cannot be changed for existing nodes; lower "
            "max pods per node (kubelet maxPods) to fit the CIDR, spread pods to other nodes, or add nodes (each gets "
            "its own CIDR while the cluster pool has room)",
        )
    ]
