"""Plans for Calico IPAM: release leaked addresses and idle blocks (`calico-reclaim`), or add an IPPool in
free address space (`calico-pool`).

Why it exists: the incident's fix was deleting IPAMBlock and BlockAffinity objects by hand after checking
them with calicoctl; these plans do the same checks, list exactly what will change for review, and leave
the re-checking at apply time to cidrx.ipam.calico.steps. `check_drift` refuses a reclaim plan (exit 4, before
any write) whose addresses or blocks someone else changed since it was made: an address now held by
another handle, a leaked address whose pod is back, a block now another node's or no longer empty.
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from ipaddress import IPv4Network
from typing import TYPE_CHECKING, Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.calico.analyze import blocks_by_node, is_empty, leak_reason, leaked_ips
from cidrx.ipam.calico.model import (
    DEFAULT_BLOCK_SIZE,
    AllocationAttribute,
    BlockAffinity,
    CalicoSection,
    IPAMBlock,
    IPPool,
)
from cidrx.ipam.liveness import AddressHolders
from cidrx.kube.model import PodState
from cidrx.model.plan import DIGEST_TAG, Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.registry import Action

if TYPE_CHECKING:
    from cidrx.model.options import PlanOptions

RECLAIM, POOL = "calico-reclaim", "calico-pool"
STRATEGIES = (RECLAIM, POOL)
DEFAULT_MAX_PODS = 110  # kubelet's default max pods per node
BLOCKS_PER_NODE = 2  # room for every node to claim a second block before anyone is left without one
MIN_BLOCK_PREFIX, MAX_BLOCK_PREFIX = 20, 32  # Calico's IPv4 blockSize range
LARGEST_POOL_PREFIX = 16  # a bigger pool is a decision for a human (--cidr)
# Not visible from the Kubernetes API: kubeadm's default Service CIDR is kept clear just in case.
DEFAULT_SERVICE_CIDR = netmath.parse_cidr("10.96.0.0/12")
NODE_NETWORK_PREFIX = 16  # node InternalIPs come without their mask: keep clear the /16 around each
SPACES: tuple[IPv4Network, ...] = (*netmath.RFC1918, netmath.CGNAT)
# libcalico-go/lib/ipam/ipam_block_reader_writer.go EmptyBlockMinReclaimAge (commit 87c15906f20c).
EMPTY_BLOCK_MIN_RECLAIM_AGE = 60.0

BLOCK_PERMS = "kubernetes: ipamblocks.crd.projectcalico.org get,update"
HANDLE_PERMS = "kubernetes: ipamhandles.crd.projectcalico.org get,update,delete"
# Each step action, declared once: the step builders attach its name and permissions to their Steps, `cidrx
# permissions` prints them without making a plan (cidrx.permissions), apply runs its executor (steps.py).
# On a projectcalico.org/v3-only cluster the same resources of that group.
RELEASE_IPS = Action(
    "calico.release-ips",
    (
        BLOCK_PERMS,
        HANDLE_PERMS,
        "kubernetes: ipamconfigs.crd.projectcalico.org get",
        "kubernetes: pods list",
    ),
    "cidrx.ipam.calico.steps:ReleaseIps",
)
RELEASE_EMPTY_BLOCK = Action(
    "calico.release-empty-block",
    (
        "kubernetes: ipamblocks.crd.projectcalico.org get,update,delete",
        "kubernetes: blockaffinities.crd.projectcalico.org get,list,update,delete",
    ),
    "cidrx.ipam.calico.steps:ReleaseEmptyBlock",
)
CREATE_IPPOOL = Action(
    "calico.create-ippool",
    ("kubernetes: ippools.crd.projectcalico.org get,create",),
    "cidrx.ipam.calico.steps:CreateIpPool",
    undo="cidrx.ipam.calico.undo:UndoIpPool",
    undo_permissions=(
        "kubernetes: ippools.crd.projectcalico.org get,update,delete",
        "kubernetes: ipamblocks.crd.projectcalico.org list",
        "kubernetes: pods list",
    ),
)
RECLAIM_ACTIONS = (RELEASE_IPS, RELEASE_EMPTY_BLOCK)
POOL_ACTIONS = (CREATE_IPPOOL,)
ACTIONS = (*RECLAIM_ACTIONS, *POOL_ACTIONS)


def _calico(snapshot: Snapshot) -> CalicoSection:
    calico: CalicoSection | None = snapshot.kube.calico
    if calico is None:
        raise InvalidInput(
            f"no Calico IPAM found in {snapshot.target.label()} "
            "(neither crd.projectcalico.org nor projectcalico.org is served)"
        )
    return calico


# --------------------------------------------------------------------------------------------------
# calico-reclaim
# --------------------------------------------------------------------------------------------------


def _handle_names(calico: CalicoSection) -> dict[str, str]:
    return {h.handle_id: h.name for h in calico.handles}


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time as Kubernetes writes it ("2024-05-01T10:00:00Z"), or None."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def block_age_seconds(block: IPAMBlock, now: str) -> float | None:
    """Seconds since the node claimed `block` (spec.affinityClaimTime), or None when unknown.

    Upstream takes a block without affinityClaimTime as claimed at time zero, i.e. old enough
    (libcalico-go/lib/ipam/ipam_block.go affinityClaimTime, commit 87c15906f20c)."""
    claimed, at = parse_time(block.affinity_claim_time or ""), parse_time(now)
    if claimed is None or at is None:
        return None
    return (at - claimed).total_seconds()


def empty_block_keep_reason(
    block: IPAMBlock, affinity: BlockAffinity | None, now: str, *, resuming: bool = False
) -> str | None:
    """Why an empty block must stay, whatever its node holds besides, or None.

    As libcalico-go's releaseBlockAffinity and findUnclaimedBlock (lib/ipam/ipam_block_reader_writer.go,
    commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2): only a block whose BlockAffinity is `confirmed`
    (a `pending` one is a node mid-claim, `pendingDeletion` someone else's release), and not one claimed
    less than EmptyBlockMinReclaimAge (1 minute) ago. `resuming` (apply): a `pendingDeletion` affinity is
    a release already under way (an earlier run of this step, or Calico's own), which may be finished."""
    if block.deleted:
        return "it is being deleted by Calico"
    if affinity is None:
        return "it has no BlockAffinity"
    states = ("confirmed", "pendingDeletion") if resuming else ("confirmed",)
    if affinity.state not in states or affinity.deleted:
        return f"its BlockAffinity is {affinity.state or 'without state'}{' (deleted)' if affinity.deleted else ''}"
    age = block_age_seconds(block, now)
    if age is not None and age < EMPTY_BLOCK_MIN_RECLAIM_AGE:
        return f"it was claimed {max(0, int(age))}s ago (Calico keeps empty blocks younger than 1 minute)"
    return None


def releasable_empty_blocks(calico: CalicoSection, now: str = "") -> list[IPAMBlock]:
    """Empty blocks whose node keeps at least one other block (its busiest ones are kept first), whose
    affinity is confirmed and which are old enough (empty_block_keep_reason). kube-controllers never
    releases a node's last block (kube-controllers/pkg/controllers/node/ipam.go releaseUnusedBlocks)."""
    affinities = {(a.node, a.cidr): a for a in calico.affinities}
    out: list[IPAMBlock] = []
    for node, blocks in sorted(blocks_by_node(calico).items()):
        blocks = [b for b in blocks if not b.deleted]
        empty = [b for b in blocks if is_empty(b)]
        if len(empty) == len(blocks):
            empty = empty[1:]  # every block is empty: the node keeps its first one
        out += [b for b in empty if empty_block_keep_reason(b, affinities.get((node, b.cidr)), now) is None]
    return out


def make_reclaim_plan(snapshot: Snapshot, created_at: str) -> Plan:
    """One `calico.release-ips` step per block with leaked addresses, one `calico.release-empty-block`
    per empty block its node can spare. Apply re-reads and re-decides every one of them."""
    calico = _calico(snapshot)
    if not snapshot.kube.available:
        raise InvalidInput(f"a Calico reclaim plan needs the Kubernetes API: {snapshot.kube.reason}")
    pods = {p.key: p for p in snapshot.kube.ipam_pods}
    handles = _handle_names(calico)
    # Written back in the API the objects were read from; the key only appears for v3 (older plans have none).
    api_param = {"api": calico.api_version} if calico.api_version else {}
    steps: list[Step] = []
    by_block: dict[str, list[dict[str, Any]]] = {}
    cidrs: dict[str, str] = {}
    for leak in leaked_ips(calico, pods):
        cidrs[leak.block] = leak.cidr
        by_block.setdefault(leak.block, []).append(
            {
                "ordinal": leak.ordinal,
                "ip": leak.ip,
                "handle_id": leak.handle_id,
                "handle": handles.get(leak.handle_id or "", (leak.handle_id or "").lower()),
                "pod": leak.pod,
                "why": leak.why,
            }
        )
    for name, ips in by_block.items():
        steps.append(
            Step(
                id=f"release-ips-{name}",
                action=RELEASE_IPS.name,
                params={"block": name, "cidr": cidrs[name], "ips": ips, **api_param},
                description=f"release {len(ips)} leaked address(es) of block {cidrs[name]}: "
                + ", ".join(i["ip"] for i in ips[:8])
                + (" ..." if len(ips) > 8 else ""),
                permissions=RELEASE_IPS.permissions,
            )
        )
    affinities = {(a.node, a.cidr): a.name for a in calico.affinities}
    empty = releasable_empty_blocks(calico, snapshot.taken_at)
    for block in empty:
        node = block.host or ""
        steps.append(
            Step(
                id=f"release-empty-block-{block.name}",
                action=RELEASE_EMPTY_BLOCK.name,
                params={
                    "block": block.name,
                    "cidr": block.cidr,
                    "node": node,
                    "affinity": affinities.get((node, block.cidr), ""),
                    **api_param,
                },
                description=f"release empty block {block.cidr} of node {node} (it keeps another block)",
                permissions=RELEASE_EMPTY_BLOCK.permissions,
            )
        )
    released = sum(len(v) for v in by_block.values())
    notes = [
        "apply refuses (exit 4, nothing written) when an address or block of this plan changed hands since "
        "it was made; it re-reads every block and pod right before writing, and an address whose pod comes "
        "back, or that is reassigned, while it runs is left alone; writes are compare-and-swap on resourceVersion",
        "a block emptied by this plan is released by the next reclaim plan, not this one",
    ]
    if not steps:
        notes.insert(0, "nothing to reclaim: no leaked addresses and no spare empty blocks")
    hosts = {b.name: b.host or "" for b in [*empty, *(b for b in calico.blocks if b.name in cidrs)]}
    gone = sorted({ip["pod"] for ips in by_block.values() for ip in ips if ip["pod"] not in pods})
    basis = {
        "blocks": {b: c for b, c in sorted({**cidrs, **{e.name: e.cidr for e in empty}}.items())},
        "hosts": dict(sorted(hosts.items())),
        "gone_pods": gone,
    }
    summary = {"leaked_ips": released, "blocks_with_leaks": len(by_block), "empty_blocks": len(empty)}
    return seal_plan(snapshot, created_at, RECLAIM, basis, steps, notes, summary)


# --------------------------------------------------------------------------------------------------
# calico-pool
# --------------------------------------------------------------------------------------------------


def _ipv4_pools(calico: CalicoSection) -> list[IPPool]:
    return [p for p in calico.pools if ":" not in p.cidr]


def occupied_space(snapshot: Snapshot, *, ignore_plan: str | None = None) -> list[tuple[IPv4Network, str]]:
    """What a new pool must not overlap, each with where it comes from (pools `ignore_plan` made left out)."""
    calico = _calico(snapshot)
    out: list[tuple[IPv4Network, str]] = []
    for pool in _ipv4_pools(calico):
        if ignore_plan and pool.plan_label == ignore_plan:
            continue
        out.append((netmath.parse_cidr(pool.cidr), f"IPPool {pool.name}"))
    for block in calico.blocks:
        if ":" not in block.cidr:
            out.append((netmath.parse_cidr(block.cidr), f"IPAMBlock {block.name}"))
    for node in snapshot.kube.nodes:
        for cidr in node.pod_cidrs:
            if ":" not in cidr:
                out.append((netmath.parse_cidr(cidr), f"podCIDR of node {node.name}"))
        if node.internal_ip and ":" not in node.internal_ip:
            net = IPv4Network(f"{node.internal_ip}/{NODE_NETWORK_PREFIX}", strict=False)
            out.append((net, f"network of node {node.name} ({node.internal_ip}, assumed /{NODE_NETWORK_PREFIX})"))
    out.append((DEFAULT_SERVICE_CIDR, "kubeadm's default Service CIDR"))
    return out


def _log2_ceil(n: int) -> int:
    return max(0, math.ceil(math.log2(max(1, n))))


def _base_block_size(calico: CalicoSection) -> int:
    enabled = [p for p in _ipv4_pools(calico) if p.is_workload_capacity]
    return enabled[0].block_size if enabled else DEFAULT_BLOCK_SIZE


def choose_block_size(pool_prefix: int, nodes: int, base: int) -> int:
    """The largest block (`base` or smaller) that still gives each of `nodes` nodes BLOCKS_PER_NODE blocks."""
    size = max(base, MIN_BLOCK_PREFIX, pool_prefix + _log2_ceil(BLOCKS_PER_NODE * nodes))
    if size > MAX_BLOCK_PREFIX:
        raise InvalidInput(
            f"a /{pool_prefix} pool cannot give {nodes} nodes {BLOCKS_PER_NODE} blocks each",
            hint=f"use a pool of /{MAX_BLOCK_PREFIX - _log2_ceil(BLOCKS_PER_NODE * nodes)} or larger",
        )
    return size


def _pool_prefix(nodes: int, base: int, max_pods: int) -> int:
    per_node = max(BLOCKS_PER_NODE << (32 - base), netmath.next_pow2(max_pods))
    prefix = netmath.smallest_prefix_for(nodes * per_node)
    if prefix < LARGEST_POOL_PREFIX:
        raise InvalidInput(
            f"{nodes} nodes need more than a /{LARGEST_POOL_PREFIX} pool", hint="choose the range with --cidr"
        )
    return prefix


def validate_cidr(snapshot: Snapshot, text: str) -> IPv4Network:
    net = netmath.parse_cidr(text)
    netmath.check_not_forbidden(net)
    for occupied, where in occupied_space(snapshot):
        if netmath.overlaps(net, occupied):
            raise InvalidInput(f"{net} overlaps {where} ({occupied})", hint="choose a free range or omit --cidr")
    return net


def _pool_name(calico: CalicoSection, wanted: str | None, net: IPv4Network) -> str:
    name = wanted or f"cidrx-{str(net).replace('.', '-').replace('/', '-')}"
    if any(p.name == name for p in calico.pools):
        raise InvalidInput(f"an IPPool named {name} already exists", hint="choose another name")
    return name


def make_pool_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    """One `calico.create-ippool` step: a pool in free space, with blocks small enough that every node
    (today's and --add-nodes more) can hold BLOCKS_PER_NODE of them."""
    calico = _calico(snapshot)
    kube = snapshot.kube
    nodes = max(1, len(kube.nodes) + (opts.add_nodes or 0))
    base = _base_block_size(calico)
    max_pods = max((n.allocatable_pods or 0 for n in kube.nodes), default=0) or DEFAULT_MAX_PODS
    if opts.cidr:
        net = validate_cidr(snapshot, opts.cidr)
    else:
        prefix = _pool_prefix(nodes, base, max_pods)
        found = netmath.first_free_block(prefix, SPACES, [n for n, _ in occupied_space(snapshot)])
        if found is None:
            raise InvalidInput(f"no free /{prefix} in RFC 1918 or 100.64.0.0/10 for a new IPPool; pass --cidr")
        net = found
    block_size = choose_block_size(net.prefixlen, nodes, base)
    name = _pool_name(calico, opts.pool_name, net)
    # Settings come only from a pool pods really use: never a LoadBalancer/Tunnel-only, Manual or disabled one.
    template = next((p for p in _ipv4_pools(calico) if p.is_workload_capacity), None)
    params = {
        "name": name,
        "cidr": str(net),
        "block_size": block_size,
        "ipip_mode": template.ipip_mode if template else "",
        "vxlan_mode": template.vxlan_mode if template else "",
        "nat_outgoing": template.nat_outgoing if template else True,
        "node_selector": "all()",
        **({"api": calico.api_version} if calico.api_version else {}),
    }
    blocks = 1 << (block_size - net.prefixlen)
    step = Step(
        id="create-ippool",
        action=CREATE_IPPOOL.name,
        params=params,
        description=f"create IPPool {name} {net} with /{block_size} blocks ({blocks} blocks for {nodes} nodes)",
        permissions=CREATE_IPPOOL.permissions,
    )
    notes = [
        f"nodes claim blocks of {net} when they need a new block; existing blocks are kept",
        "pods that borrowed addresses keep them until restarted; restart them after apply",
        f"labelled {DIGEST_TAG}=<plan id> so a repeated apply finds it",
        "not checked (not visible from the Kubernetes API): networks routed outside the cluster and the real "
        f"Service CIDR ({DEFAULT_SERVICE_CIDR} is kept clear); node networks are assumed /{NODE_NETWORK_PREFIX}",
    ]
    if calico.config is None or not calico.config.strict_affinity:
        notes.append(
            "strictAffinity is off: set it in IPAMConfig default so nodes never borrow another node's addresses"
        )
    basis = {
        "pool_name": name,
        "cidr": str(net),
        "pools": {p.name: p.cidr for p in calico.pools},
        "nodes": nodes,
    }
    summary = {"cidr": str(net), "block_size": block_size, "blocks": blocks, "nodes": nodes, "name": name}
    return seal_plan(snapshot, created_at, POOL, basis, [step], notes, summary)


# --------------------------------------------------------------------------------------------------
# Drift
# --------------------------------------------------------------------------------------------------


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when the plan's facts no longer hold. What the plan already did (its
    own pool, released addresses and blocks) is progress, not drift: for a reclaim plan, `begun` names the
    steps an earlier apply started (from the journal), whose addresses may have been handed out again after
    this plan released them; those are re-decided per address at apply instead."""
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    calico: CalicoSection | None = snapshot.kube.calico
    if calico is None:
        raise StalePlan("the plan is stale: Calico IPAM is no longer found in the cluster. Nothing was applied")
    problems: list[str] = []
    if plan.strategy == POOL:
        problems += _pool_drift(plan, snapshot, calico)
    elif plan.strategy == RECLAIM:
        blocks = {b.name: b.cidr for b in calico.blocks}
        for name, cidr in plan.basis.get("blocks", {}).items():
            if name in blocks and blocks[name] != cidr:
                problems.append(f"IPAMBlock {name} now covers {blocks[name]}, not {cidr}")
        pods = {p.key: p for p in snapshot.kube.ipam_pods}
        holders = AddressHolders.of(pods.values())
        for step in plan.steps:
            if step.id not in begun:
                problems += _reclaim_step_drift(plan, step, calico, pods, holders)
    else:
        raise InvalidInput(f"plan strategy {plan.strategy!r} is not a Calico plan")
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")


def _holder(attr: AllocationAttribute) -> str:
    who = attr.pod_ref or attr.type or "no pod"
    return f"handle {attr.handle_id or '(none)'} ({who})"


def _reclaim_step_drift(
    plan: Plan, step: Step, calico: CalicoSection, pods: Mapping[str, PodState], holders: AddressHolders
) -> list[str]:
    """What someone else changed in the block one reclaim step would write, since the plan was made."""
    name = str(step.params.get("block") or "")
    block = next((b for b in calico.blocks if b.name == name), None)
    if block is None or block.cidr != step.params.get("cidr"):
        return []  # released meanwhile: nothing left to do; a changed CIDR is reported for the whole plan
    problems: list[str] = []
    planned_host = (plan.basis.get("hosts") or {}).get(name)
    if planned_host is not None and (block.host or "") != planned_host:
        problems.append(
            f"IPAMBlock {name} ({block.cidr}) now belongs to {block.affinity or 'no node'}, not host:{planned_host} "
            "(released and claimed again)"
        )
        return problems
    if step.action == RELEASE_EMPTY_BLOCK.name:
        if block.used:
            problems.append(
                f"IPAMBlock {name} ({block.cidr}), planned for release as empty, now holds {block.used} address(es)"
            )
        return problems
    gone = set(plan.basis.get("gone_pods") or [])
    for entry in step.params.get("ips") or []:
        ip, ordinal = str(entry.get("ip")), int(entry.get("ordinal", -1))
        attr = block.attribute(ordinal)
        if attr is None:
            continue  # released by someone else meanwhile
        was = (
            f"{ip} of IPAMBlock {name}, planned for release from handle {entry.get('handle_id')} ({entry.get('pod')}),"
        )
        if attr.handle_id != entry.get("handle_id") or attr.pod_ref != entry.get("pod"):
            problems.append(f"{was} is now allocated to {_holder(attr)}")
            continue
        pod = pods.get(attr.pod_ref or "")
        if pod is not None:
            phase = pod.phase or "unknown phase"
            reports = not pod.ips or ip in pod.ips
            again = "is live again" if reports else "exists again" if attr.pod_ref in gone else "exists"
            problems.append(f"{was} is in use: its pod {attr.pod_ref} {again} ({phase})")
        elif holders.is_live(ip):
            problems.append(f"{was} is in use: {holders.describe(ip)}")
        elif leak_reason(attr, ip, pods, holders) is None:
            problems.append(f"{was} is in use: {', '.join(attr.pod_refs)} (a pod its allocation names) exists")
    return problems


def _pool_drift(plan: Plan, snapshot: Snapshot, calico: CalicoSection) -> list[str]:
    problems: list[str] = []
    name, cidr = plan.basis["pool_name"], netmath.parse_cidr(plan.basis["cidr"])
    for pool in calico.pools:
        if pool.name == name and pool.plan_label != plan.plan_id:
            problems.append(f"an IPPool named {name} was created by someone else ({pool.cidr})")
    ours_exists = any(p.name == name and p.plan_label == plan.plan_id for p in calico.pools)
    for net, where in occupied_space(snapshot, ignore_plan=plan.plan_id):
        if ours_exists and where.startswith("IPAMBlock ") and net.subnet_of(cidr):
            continue  # blocks nodes claimed from our own pool after an earlier apply
        if where.startswith("IPPool ") and where == f"IPPool {name}":
            continue
        if netmath.overlaps(net, cidr):
            problems.append(f"{cidr} now overlaps {where} ({net})")
    return problems


def ippool_object(params: dict[str, Any], plan_id: str) -> dict[str, Any]:
    """The IPPool a `calico.create-ippool` step creates (metadata and spec), labelled with the plan id: what
    apply sends and what `--emit terraform` writes as a kubernetes_manifest. Always for pods: allowedUses
    Workload (+Tunnel, upstream's default) and assignmentMode Automatic."""
    spec: dict[str, Any] = {
        "cidr": params["cidr"],
        "blockSize": params["block_size"],
        "natOutgoing": bool(params.get("nat_outgoing")),
        "nodeSelector": params.get("node_selector") or "all()",
        "disabled": False,
        "allowedUses": ["Workload", "Tunnel"],
        "assignmentMode": "Automatic",
    }
    if params.get("ipip_mode"):
        spec["ipipMode"] = params["ipip_mode"]
    if params.get("vxlan_mode"):
        spec["vxlanMode"] = params["vxlan_mode"]
    return {"metadata": {"name": params["name"], "labels": {DIGEST_TAG: plan_id}}, "spec": spec}
