"""The `cilium-pool` strategy: more address space for Cilium, the way its mode takes it.

Why it exists: in cluster-pool mode a node gets a CIDR only while `cluster-pool-ipv4-cidr` has a free one; the
way out is to APPEND a range to that list (existing entries are never edited or reordered and the mask size
is immutable: Cilium's "Expanding the cluster pool") and restart cilium-operator, which builds its allocators at
start-up. In multi-pool mode a CiliumPodIPPool gets another CIDR (the operator picks it up without a restart).
The new range is no smaller than the per-node mask, sized for the nodes waiting plus the nodes to come
(`--add-nodes`, default: as many as the cluster has), and clear of everything occupied
(cidrx.ipam.cilium.strategies.space). `check_drift` refuses a plan (exit 4, before any write) whose facts moved.
Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.cilium.actions.cluster_pool import APPEND_CLUSTER_POOL_CIDR
from cidrx.ipam.cilium.actions.operator import RESTART_OPERATOR
from cidrx.ipam.cilium.actions.pool_cidr import ADD_POOL_CIDR
from cidrx.ipam.cilium.analyze import free_node_cidrs, pool_allocations, pool_blocks, starved, usable
from cidrx.ipam.cilium.model import (
    CIDR_KEY,
    CLUSTER_POOL,
    CONFIG_NAME,
    CONFIG_NAMESPACE,
    HELM_VALUE,
    MULTI_POOL,
    CiliumSection,
    PodIPPool,
)
from cidrx.ipam.cilium.strategies.space import (
    cilium_section,
    current_section,
    first_overlap,
    occupied_space,
    pick_range,
    service_ranges,
)
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot

STRATEGY = "cilium-pool"
ACTIONS = (APPEND_CLUSTER_POOL_CIDR, RESTART_OPERATOR, ADD_POOL_CIDR)  # the step actions its plans use
LARGEST_PREFIX = 12  # a bigger range is a decision for a human (--cidr)


def _bits(n: int) -> int:
    return max(0, math.ceil(math.log2(max(1, n))))


def _prefix(mask: int, blocks: int) -> int:
    prefix = mask - _bits(blocks)
    if prefix < LARGEST_PREFIX:
        raise InvalidInput(
            f"{blocks} /{mask} node CIDRs need more than a /{LARGEST_PREFIX}", hint="choose the range with --cidr"
        )
    return prefix


def _checked(net: IPv4Network, mask: int) -> IPv4Network:
    if net.prefixlen > mask:
        raise InvalidInput(
            f"{net} is smaller than one node CIDR (/{mask}): the operator could not carve a node CIDR from it",
            hint=f"use a /{mask} or larger",
        )
    return net


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    section = cilium_section(snapshot)
    if section.config.mode == CLUSTER_POOL:
        return _cluster_pool_plan(snapshot, section, opts, created_at)
    if section.config.mode == MULTI_POOL:
        return _multi_pool_plan(snapshot, section, opts, created_at)
    raise InvalidInput(
        f"Cilium IPAM mode {section.config.mode} takes pod addresses from outside Cilium: cidrx cannot grow it "
        "in-cluster",
        hint="diagnose the cloud target (--eks, --gke) or node IPAM that hands the addresses out",
    )


def _cluster_pool_plan(snapshot: Snapshot, section: CiliumSection, opts: PlanOptions, created_at: str) -> Plan:
    config = section.config
    if opts.pool_name is not None:
        raise InvalidInput("--pool-name names a CiliumPodIPPool: this cluster runs cluster-pool mode", hint="drop it")
    if not section.operator:
        raise InvalidInput(
            f"Deployment {CONFIG_NAMESPACE}/cilium-operator not found: cidrx restarts it to make the new range count",
            hint="restart your operator by hand after adding a range to cluster-pool-ipv4-cidr",
        )
    if config.plan_label and free_node_cidrs(section) > 0:
        raise InvalidInput(
            f"plan {config.plan_label} already appended to {CIDR_KEY} and the cluster pool still has "
            f"{free_node_cidrs(section)} free node CIDR(s): no second expansion is planned"
        )
    mask = config.mask_size
    waiting = sorted(n.name for n in section.nodes if not n.v4_pod_cidrs)
    nodes = len(waiting) + (opts.add_nodes or max(1, len(section.nodes)))
    net = _checked(pick_range(snapshot, section, opts.cidr, _prefix(mask, nodes), "the cluster pool"), mask)
    before = list(config.cluster_pool)
    helm = [*before, str(net)]
    steps = [
        Step(
            id="append-cluster-pool-cidr",
            action=APPEND_CLUSTER_POOL_CIDR.name,
            params={
                "namespace": CONFIG_NAMESPACE,
                "name": CONFIG_NAME,
                "cidr": str(net),
                "before": before,
                "raw_before": config.cluster_pool_raw,
                "operator": section.operator.partition("/")[2],
            },
            description=f"append {net} to {CIDR_KEY} in {CONFIG_NAMESPACE}/{CONFIG_NAME} "
            f"({' '.join(before)} stay as they are)",
            permissions=APPEND_CLUSTER_POOL_CIDR.permissions,
        ),
        Step(
            id="restart-cilium-operator",
            action=RESTART_OPERATOR.name,
            params={
                "namespace": section.operator.partition("/")[0],
                "name": section.operator.partition("/")[2],
                "waiting": waiting,
            },
            description=f"restart {section.operator} (pod template annotation) so it allocates from {net}"
            + (f"; verify that {len(waiting)} waiting node(s) get a CIDR" if waiting else ""),
            permissions=RESTART_OPERATOR.permissions,
            depends_on=("append-cluster-pool-cidr",),
        ),
    ]
    count = 1 << (mask - net.prefixlen)
    notes = [
        f"Helm users: set {HELM_VALUE}={{{','.join(helm)}}} (values.yaml: {HELM_VALUE} {json.dumps(helm)}) before "
        f"the next helm upgrade, or it takes {net} out again",
        f"existing entries are kept exactly as written and in order; the mask size /{mask} does not change",
        "rollback removes only this entry, and refuses while any CiliumNode holds a CIDR in it",
        "kept clear: Cilium's ranges, Node.spec.podCIDRs, node networks (assumed /16 around each InternalIP), "
        + ", ".join(f"{n} ({w})" for n, w in service_ranges(section))
        + "; not visible from the Kubernetes API: networks routed outside the cluster",
    ]
    basis = {
        "mode": CLUSTER_POOL,
        "cluster_pool": before,
        "mask_size": mask,
        "cidr": str(net),
        "operator": section.operator,
    }
    summary = {"cidr": str(net), "node_cidrs": count, "mask_size": mask, "waiting_nodes": len(waiting), "helm": helm}
    return seal_plan(snapshot, created_at, STRATEGY, basis, steps, notes, summary)


def _fullest(section: CiliumSection) -> PodIPPool:
    candidates = [p for p in section.ippools if p.mask_size and p.cidrs]
    if not candidates:
        raise InvalidInput("no CiliumPodIPPool with IPv4 CIDRs and a maskSize found")

    def pressure(p: PodIPPool) -> tuple[int, float]:
        total = pool_blocks(p) or 1
        taken = sum(len(c) for c in pool_allocations(section, p.name).values())
        return (len(starved(section, p)), taken / total)

    return max(candidates, key=pressure)


def _multi_pool_plan(snapshot: Snapshot, section: CiliumSection, opts: PlanOptions, created_at: str) -> Plan:
    if opts.pool_name is not None:
        pool = section.pool(opts.pool_name)
        if pool is None:
            names = ", ".join(p.name for p in section.ippools) or "none"
            raise InvalidInput(f"no CiliumPodIPPool named {opts.pool_name} (pools: {names})")
    else:
        pool = _fullest(section)
    if not pool.mask_size:
        raise InvalidInput(f"CiliumPodIPPool {pool.name} has no IPv4 maskSize: cidrx adds IPv4 CIDRs only")
    mask = pool.mask_size
    hungry = starved(section, pool)
    short = sum(math.ceil((want - have) / usable(mask)) for _, want, have in hungry)
    users = len(pool_allocations(section, pool.name))
    blocks = short + (opts.add_nodes or max(1, users))
    net = _checked(
        pick_range(snapshot, section, opts.cidr, _prefix(mask, blocks), f"CiliumPodIPPool {pool.name}"), mask
    )
    step = Step(
        id="add-pool-cidr",
        action=ADD_POOL_CIDR.name,
        params={"pool": pool.name, "cidr": str(net), "before": list(pool.cidrs), "api": section.pool_api},
        description=f"add {net} to CiliumPodIPPool {pool.name} spec.ipv4.cidrs "
        f"({1 << (mask - net.prefixlen)} /{mask} blocks)",
        permissions=ADD_POOL_CIDR.permissions,
    )
    notes = [
        "cilium-operator picks the new CIDR up without a restart; nodes get blocks of it as they request addresses",
        f"if the pool is managed by Helm or GitOps, add {net} to its manifest too, or the next sync removes it",
        "rollback removes only this CIDR, and refuses while any node holds a block of it",
    ]
    basis = {"mode": MULTI_POOL, "pool": pool.name, "pool_cidrs": list(pool.cidrs), "mask_size": mask, "cidr": str(net)}
    summary = {"cidr": str(net), "pool": pool.name, "blocks": 1 << (mask - net.prefixlen), "starved_nodes": len(hungry)}
    return seal_plan(snapshot, created_at, STRATEGY, basis, [step], notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when the plan's facts no longer hold. The plan's own range already in the list
    (or pool), and node CIDRs carved from it, are progress, not drift."""
    section = current_section(plan, snapshot)
    basis = plan.basis
    cidr = netmath.parse_cidr(basis["cidr"])
    problems: list[str] = []
    if section.config.mode != basis["mode"]:
        problems.append(f"Cilium's IPAM mode is now {section.config.mode}, not {basis['mode']}")
    elif basis["mode"] == CLUSTER_POOL:
        now = list(section.config.cluster_pool)
        if now not in (basis["cluster_pool"], [*basis["cluster_pool"], basis["cidr"]]):
            problems.append(f"{CIDR_KEY} is now {' '.join(now)!r}, not {' '.join(basis['cluster_pool'])!r}")
        if section.config.mask_size != basis["mask_size"]:
            problems.append(f"the mask size is now /{section.config.mask_size}, not /{basis['mask_size']}")
        if section.operator != basis["operator"]:
            problems.append(f"Deployment {basis['operator']} is gone")
    else:
        pool = section.pool(basis["pool"])
        if pool is None:
            problems.append(f"CiliumPodIPPool {basis['pool']} is gone")
        elif list(pool.cidrs) not in (basis["pool_cidrs"], [*basis["pool_cidrs"], basis["cidr"]]):
            problems.append(f"CiliumPodIPPool {basis['pool']} now has {', '.join(pool.cidrs)}")
    if not problems:
        added_to = CLUSTER_POOL if basis["mode"] == CLUSTER_POOL else basis["pool"]
        hit = first_overlap(cidr, occupied_space(snapshot, section, ours=cidr, added_to=added_to))
        if hit is not None:
            problems.append(f"{cidr} now overlaps {hit[1]} ({hit[0]})")
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the cluster shows it now (cidrx.engine.basis compares it key by key). The range is read
    from the plan's step; the range already in the list (or pool) as its last entry is this plan's own
    progress."""
    section = current_section(plan, snapshot)
    step = next((s for s in plan.steps if s.action in (APPEND_CLUSTER_POOL_CIDR.name, ADD_POOL_CIDR.name)), None)
    cidr = str(step.params.get("cidr", "")) if step else ""

    def without_ours(cidrs: list[str]) -> list[str]:
        return cidrs[:-1] if cidrs and cidrs[-1] == cidr else cidrs

    current: dict[str, Any] = {"mode": section.config.mode, "cidr": cidr}
    if step is not None and step.action == APPEND_CLUSTER_POOL_CIDR.name:
        current["cluster_pool"] = without_ours(list(section.config.cluster_pool))
        current["mask_size"] = section.config.mask_size
        current["operator"] = section.operator
    elif step is not None:
        name = str(step.params.get("pool", ""))
        pool = section.pool(name)
        current["pool"] = name if pool is not None else None
        current["pool_cidrs"] = without_ours(list(pool.cidrs)) if pool is not None else None
        current["mask_size"] = pool.mask_size if pool is not None else None
    return current
