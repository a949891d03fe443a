"""The `calico-pool` strategy: add an IPPool in free address space.

Why it exists: when a Calico cluster's pools are claimed block by block, the way out is more address
space: a new pool clear of every pool, block, node network and the Service range, with blocks small
enough that every node can hold two. `check_drift` refuses a plan (exit 4, before any write) whose range
someone else took since it was made. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.calico.actions.create_ippool import CREATE_IPPOOL
from cidrx.ipam.calico.model import DEFAULT_BLOCK_SIZE, CalicoSection, IPPool
from cidrx.ipam.calico.strategies.section import calico_section, current_section
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot

STRATEGY = "calico-pool"
ACTIONS = (CREATE_IPPOOL,)  # the step actions its plans use
DEFAULT_MAX_PODS = 110  # kubelet's default max pods per node
BLOCKS_PER_NODE = 2  # room for every node to claim a second block before anyone is left without one
MIN_BLOCK_PREFIX, MAX_BLOCK_PREFIX = 20, 32  # Calico's IPv4 blockSize range
LARGEST_POOL_PREFIX = 16  # a bigger pool is a decision for a human (--cidr)
# Not visible from the Kubernetes API: kubeadm's default Service CIDR is kept clear just in case.
DEFAULT_SERVICE_CIDR = netmath.parse_cidr("10.96.0.0/12")
NODE_NETWORK_PREFIX = 16  # node InternalIPs come without their mask: keep clear the /16 around each
SPACES: tuple[IPv4Network, ...] = (*netmath.RFC1918, netmath.CGNAT)


def default_strategy(snapshot: Snapshot, opts: PlanOptions) -> str:
    """What `expand --plan` without --strategy plans on a cluster whose IPAM is Calico: a new pool."""
    return STRATEGY


def _ipv4_pools(calico: CalicoSection) -> list[IPPool]:
    return [p for p in calico.pools if ":" not in p.cidr]


def occupied_space(snapshot: Snapshot, *, ignore_plan: str | None = None) -> list[tuple[IPv4Network, str]]:
    """What a new pool must not overlap, each with where it comes from (pools `ignore_plan` made left out)."""
    calico = calico_section(snapshot)
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


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    """One `calico.create-ippool` step: a pool in free space, with blocks small enough that every node
    (today's and --add-nodes more) can hold BLOCKS_PER_NODE of them."""
    calico = calico_section(snapshot)
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
    }
    summary = {"cidr": str(net), "block_size": block_size, "blocks": blocks, "nodes": nodes, "name": name}
    return seal_plan(snapshot, created_at, STRATEGY, basis, [step], notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when the plan's facts no longer hold. What the plan already did (its own
    pool, the blocks nodes claimed from it) is progress, not drift."""
    calico = current_section(plan, snapshot)
    problems = _pool_drift(plan, snapshot, calico)
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the cluster shows it now (cidrx.engine.basis compares it key by key): the pool the step
    creates while its name is free (or the pool is this plan's own), and every other IPPool with its CIDR.
    The node count the blocks were sized for is in the summary, not the basis: nodes come and go."""
    calico = current_section(plan, snapshot)
    step = next((s for s in plan.steps if s.action == CREATE_IPPOOL.name), None)
    name = str(step.params.get("name", "")) if step else ""
    other = next((p for p in calico.pools if p.name == name and p.plan_label != plan.plan_id), None)
    return {
        "pool_name": name if other is None else f"{name} (taken)",
        "cidr": str(step.params.get("cidr", "")) if step else "",
        "pools": {p.name: p.cidr for p in calico.pools if p.plan_label != plan.plan_id or p.name != name},
    }


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
