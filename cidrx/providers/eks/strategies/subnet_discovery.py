"""Strategy `subnet-discovery`: give pods new address space through VPC CNI subnet discovery (v1.18+).

Why it exists: where the installed VPC CNI supports subnet discovery and custom networking is off, this is
the least disruptive fix for full subnets: one subnet per AZ in use, tagged `kubernetes.io/role/cni=1` and
routed like that AZ's node subnet, and ipamd puts nodes' *new* ENIs there. No ENIConfig, no node group,
no node replacement. It is not magic, and the plan says so: existing ENIs never move (nodes at their ENI
limit gain nothing) and new nodes still need a free primary address in their node subnets. The rules come
from `cidrx.providers.eks.facts.discovery`. Pure: no I/O, like every planner.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import replace
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.cni_env import SET_DAEMONSET_ENV, UPDATE_ADDON_ENV
from cidrx.providers.eks.actions.subnets import ASSOCIATE_ROUTE_TABLE, CREATE_SUBNET
from cidrx.providers.eks.actions.vpc_cidr import ASSOCIATE_VPC_CIDR, ASSOCIATE_VPC_CIDR_FROM_POOL
from cidrx.providers.eks.facts import discovery
from cidrx.providers.eks.facts.cni import cni_config, max_pods
from cidrx.providers.eks.facts.ipam_pools import carve, pool_drift, pool_netmask, vpc_pool
from cidrx.providers.eks.facts.subnets import node_subnet_ids, subnet_label, usable_addresses
from cidrx.providers.eks.model import EksSection, InstanceType, IpamPool, eks_section
from cidrx.providers.eks.strategies.drift import check_plan_drift
from cidrx.providers.eks.strategies.network_steps import associate_step, env_step, zone_subnet_steps
from cidrx.providers.eks.strategies.placement import route_table_for, zones_in_use
from cidrx.providers.eks.strategies.space import (
    ACTIVE_STATES,
    SUBNET_MAX_PREFIX,
    active_cidrs,
    choose_cidr,
    cidr_prefixes_for,
    occupied_space,
    validate_cidr,
)

STRATEGY = "subnet-discovery"
ACTIONS = (
    ASSOCIATE_VPC_CIDR,
    ASSOCIATE_VPC_CIDR_FROM_POOL,
    CREATE_SUBNET,
    ASSOCIATE_ROUTE_TABLE,
    UPDATE_ADDON_ENV,
    SET_DAEMONSET_ENV,
)
ZONE_PREFIX_CAP = 24  # in existing VPC space, at least a /24 per zone when that much is free


def _local(eks: EksSection) -> list[IPv4Network]:
    return [netmath.parse_cidr(c.cidr) for c in eks.vpc.cidrs if c.state in ACTIVE_STATES]


def _occupied_inside(eks: EksSection, *, ignore_plan: str | None = None) -> list[tuple[IPv4Network, str]]:
    """What a new subnet inside an existing VPC CIDR must not overlap: subnets, peered ranges and routes
    other than the VPC's own local routes (the VPC CIDRs themselves are the space, not an obstacle)."""
    local = set(_local(eks))
    return [
        (net, where)
        for net, where in occupied_space(eks, ignore_plan=ignore_plan)
        if not where.startswith(f"VPC {eks.vpc.vpc_id} CIDR") and net not in local
    ]


def _carve(within: list[IPv4Network], occupied: list[IPv4Network], prefix: int, count: int) -> list[IPv4Network]:
    taken, out = list(occupied), []
    for _ in range(count):
        block = netmath.first_free_block(prefix, within, taken)
        if block is None:
            return []
        out.append(block)
        taken.append(block)
    return out


def _space(
    eks: EksSection, opts: PlanOptions, pods: int, zones: int
) -> tuple[IPv4Network | None, list[IPv4Network], IpamPool | None]:
    """(the secondary CIDR to associate, or None when the subnets fit in the VPC's own CIDRs; a block per zone;
    the IPAM pool the VPC's CIDRs come from, when the new CIDR must be allocated from it: then only the CIDR's
    size is known at plan time, and the blocks are carved at apply time from what IPAM gives)."""
    local = _local(eks)
    per_zone = math.ceil(pods / zones) + netmath.AWS_RESERVED_PER_SUBNET
    need = min(netmath.smallest_prefix_for(per_zone), SUBNET_MAX_PREFIX)
    if opts.cidr:
        net = netmath.parse_cidr(opts.cidr)
        if any(net.subnet_of(c) for c in local):
            clash = [w for n, w in _occupied_inside(eks) if netmath.overlaps(n, net)]
            if clash:
                raise InvalidInput(f"{net} is not free inside the VPC: it overlaps {clash[0]}")
            return None, netmath.split_equal(net, zones), None
        secondary = validate_cidr(eks, opts.cidr)
        return secondary, netmath.split_equal(secondary, zones), None
    occupied = [n for n, _ in _occupied_inside(eks)]
    for prefix in range(max(netmath.AWS_SECONDARY_MIN_PREFIX, min(need - 1, ZONE_PREFIX_CAP)), need + 1):
        pieces = _carve(local, occupied, prefix, zones)
        if pieces:
            return None, pieces, None
    active = active_cidrs(eks)
    if len(active) >= eks.vpc_cidr_quota:
        raise InvalidInput(
            f"{eks.vpc.vpc_id} has no free /{need} per zone and already {len(active)} CIDR blocks (quota "
            f"{eks.vpc_cidr_quota}); request a quota increase (L-83CA0A9D) or pass --cidr inside the VPC"
        )
    pool = vpc_pool(eks)
    if pool is not None:  # IPAM picks the block when the association is made
        cidr = IPv4Network((0, pool_netmask(eks, pool, *cidr_prefixes_for(pods, zones))))
    else:
        cidr = choose_cidr(eks, *cidr_prefixes_for(pods, zones))
    return cidr, netmath.split_equal(cidr, zones), pool


def _node_type(eks: EksSection, snapshot: Snapshot) -> InstanceType | None:
    types = {t.name: t for t in eks.instance_types}
    names = {t for ng in eks.nodegroups for t in ng.instance_types} | {n.instance_type for n in snapshot.kube.nodes}
    known = [types[n] for n in sorted(names) if n in types]
    return max(known, key=lambda t: (t.pod_enis * t.ips_per_eni, t.name), default=None)


def _subnet_tags(cluster: str, az: str, state: discovery.DiscoveryState) -> dict[str, str]:
    # The cluster tag keeps other clusters of the VPC that set CLUSTER_NAME (v1.22.1+) out of the subnet;
    # ipamd compares it with CLUSTER_NAME, which is the EKS cluster name unless someone set it otherwise.
    owner = state.cluster_name or cluster
    return {
        "Name": f"cidrx-{cluster}-cni-{az}",
        f"kubernetes.io/cluster/{cluster}": "shared",
        discovery.ROLE_TAG: discovery.ROLE_INCLUDED,
        f"{discovery.CLUSTER_PREFIX}{owner}": "shared",
    }


def _fit_notes(
    eks: EksSection, zones: list[str], add_nodes: int, heads: list[discovery.NodeHeadroom], known: bool
) -> tuple[list[str], int, int]:
    """How existing and new nodes benefit, per AZ; (notes, nodes that can still attach ENIs, new nodes that fit)."""
    node_ids = node_subnet_ids(eks)
    per_zone = math.ceil(add_nodes / len(zones))
    notes: list[str] = []
    fits = 0
    for az in zones:
        room = sorted((s for s in eks.subnets if s.az == az and s.subnet_id in node_ids), key=lambda s: s.subnet_id)
        free = sum(s.available_ips for s in room)
        where = ", ".join(f"{subnet_label(s)} {s.available_ips} free" for s in room) or "no node subnet"
        fits += min(free, per_zone)
        if free >= per_zone:
            notes.append(
                f"New nodes in {az} take their own address from their node subnets ({where}): room for "
                f"{free} node(s); their extra ENIs, and so most pod addresses, come from the zone's tagged subnets."
            )
        else:
            notes.append(
                f"Node subnets in {az} have {free} free address(es) ({where}): at most {free} new node(s) can "
                "launch there, each needing its primary address; --strategy custom-networking puts a new node "
                "group in subnets with room."
            )
    open_nodes = [h for h in heads if h.free_slots]
    full = [h for h in heads if not h.free_slots]
    if not known:
        notes.append(
            "ENI headroom of the existing nodes is unknown (no nodes or ENIs in the snapshot): only new ENIs use "
            "the new subnets."
        )
    else:
        if open_nodes:
            notes.append(
                f"{len(open_nodes)} existing node(s) can still attach ENIs; ipamd puts their next ENIs in the new "
                "subnets as soon as they are tagged (no restart): "
                + ", ".join(f"{h.node} ({h.free_slots} free)" for h in open_nodes[:6])
            )
        if full:
            notes.append(
                f"{len(full)} node(s) are at their ENI limit and gain nothing (existing ENIs never move): "
                + ", ".join(h.node for h in full[:6])
                + ". Replace them (cordon, drain) to use the new subnets; cidrx does not drain nodes."
            )
    return notes, len(open_nodes), fits


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    eks = eks_section(snapshot)
    cni = cni_config(eks, snapshot.kube)
    state = discovery.discovery_state(eks, snapshot.kube, cni)
    if state.version is None:
        raise InvalidInput(
            "cannot tell the installed VPC CNI version (no aws-node image, no add-on version), and subnet "
            "discovery needs v1.18 or later; use --strategy custom-networking"
        )
    version = discovery.version_text(state.version)
    if not state.supported:
        raise InvalidInput(
            f"subnet discovery needs VPC CNI v1.18 or later; this cluster runs {version} ({state.version_from}). "
            "Upgrade the VPC CNI, or use --strategy custom-networking"
        )
    if state.custom_networking:
        raise InvalidInput(
            "custom networking is on: the VPC CNI then places ENIs by ENIConfig and ignores tagged subnets; use "
            "--strategy custom-networking"
        )
    in_use = zones_in_use(eks, snapshot)
    itype = _node_type(eks, snapshot)
    per_node = max_pods(itype, cni) if itype else 110
    nodes_now = len(snapshot.kube.nodes) or sum(ng.desired_size for ng in eks.nodegroups)
    add_nodes = opts.add_nodes if opts.add_nodes is not None else max(nodes_now, 2)
    if add_nodes < 1:
        raise InvalidInput("--add-nodes must be at least 1")
    heads = discovery.node_headroom(eks, snapshot.kube, state)
    known = bool(heads)
    fit_notes, open_nodes, fits = _fit_notes(eks, in_use, add_nodes, heads, known)
    if known and open_nodes == 0 and fits == 0:
        raise InvalidInput(
            "subnet discovery cannot help: every node is at its ENI limit and the node subnets have no free "
            "address for a new node. Use --strategy custom-networking (it adds a node group where its nodes fit)"
        )
    # A zone whose tagged subnets already hold its share of the new pods gets no new subnet.
    per_zone = math.ceil(add_nodes * per_node / len(in_use))
    covered = {
        z.az: z for z in discovery.by_zone(eks, snapshot.kube, state, node_subnet_ids(eks)) if z.free >= per_zone
    }
    zones = [az for az in in_use if az not in covered]
    if not zones:
        raise InvalidInput(
            f"the tagged subnets of every zone already have room for {per_zone} pod addresses ("
            + ", ".join(f"{az} {z.free} free" for az, z in sorted(covered.items()))
            + "): nothing to add. New ENIs use them; nodes at their ENI limit gain nothing (see diagnose)"
        )
    fit_notes += [
        f"{az} already has tagged subnets with {z.free} free addresses "
        f"({', '.join(subnet_label(s) for s in z.subnets)}): no new subnet there."
        for az, z in sorted(covered.items())
    ]
    cidr, pieces, pool = _space(eks, opts, per_zone * len(zones), len(zones))
    if pieces[0].prefixlen > SUBNET_MAX_PREFIX:
        raise InvalidInput(
            f"{cidr or opts.cidr} is too small: each of {len(zones)} zone subnets must be a /28 or larger"
        )
    cluster = eks.cluster.name
    steps: list[Step] = []
    if cidr is not None:
        steps.append(associate_step(eks, cidr, pool))
    route_tables: dict[str, str] = {}
    for index, (az, piece) in enumerate(zip(zones, pieces, strict=True)):
        rt, via = route_table_for(eks, az, None)
        route_tables[az] = rt
        steps += zone_subnet_steps(
            eks,
            az,
            str(piece),
            _subnet_tags(cluster, az, state),
            (
                (
                    f"create subnet {piece} in {az}"
                    if pool is None
                    else f"create a /{piece.prefixlen} subnet in {az} (number {index + 1} of the CIDR IPAM picks)"
                )
                + f" tagged {discovery.ROLE_TAG}=1 for new pod ENIs",
                ("associate-vpc-cidr",) if cidr is not None else (),
            ),
            (rt, f"associate the {az} subnet with {rt} (routed like the node subnet {via})"),
            carved=None if pool is None else carve("${associate-vpc-cidr.cidr}", len(zones), index),
        )
    if not state.env_on:
        change = env_step(eks, cni, {discovery.ENV: "true"}, "enable-subnet-discovery", "subnet discovery")
        steps.append(replace(change, depends_on=tuple(f"route-subnet-{az}" for az in zones)))
    space = f"the new secondary CIDR {cidr}" if cidr is not None else "free space of the VPC's own CIDRs"
    if pool is not None and cidr is not None:
        space = f"a new /{cidr.prefixlen} secondary CIDR from IPAM pool {pool.pool_id} (IPAM picks it at apply)"
    pod_space = ", ".join(str(p) for p in pieces) if pool is None else space
    notes = [
        f"VPC CNI {version} ({state.version_from}) places new ENIs in subnets of the node's AZ tagged "
        f"{discovery.ROLE_TAG}; the new subnets come from {space}.",
        *fit_notes,
        "ENIs in the new subnets get the security groups of each node's primary ENI: no ENIConfig, no node group, "
        "and max pods per node do not change.",
        f"Pods now get addresses from {pod_space}: update security groups, NACLs, firewall "
        "rules and NetworkPolicy ipBlocks that list pod CIDRs.",
    ]
    if state.env_on:
        notes.append(
            f"{discovery.ENV} is "
            + ("unset (on by default)" if state.env_value is None else f"{state.env_value!r}")
            + ": nothing to change on aws-node."
        )
    basis: dict[str, Any] = {
        "vpc_id": eks.vpc.vpc_id,
        "primary_cidr": eks.vpc.primary_cidr,
        "vpc_cidrs": active_cidrs(eks),
        **(
            {
                "cidr": str(cidr) if cidr is not None else "",
                "subnets": {az: str(p) for az, p in zip(zones, pieces, strict=True)},
            }
            if pool is None
            else {"ipam_pool_id": pool.pool_id, "netmask_length": cidr.prefixlen if cidr else 0}
        ),
        "route_tables": route_tables,
        "cni_source": cni.source,
        "cni_version": version,
    }
    summary = {
        **(
            {
                "cidr": str(cidr) if cidr is not None else "",
                "subnets": {az: str(p) for az, p in zip(zones, pieces, strict=True)},
            }
            if pool is None
            else {"ipam_pool": pool.pool_id, "subnet_netmask_length": pieces[0].prefixlen}
        ),
        "pod_addresses": sum(usable_addresses(str(p)) for p in pieces),
        "nodes_with_free_eni_slots": open_nodes,
    }
    return seal_plan(snapshot, created_at, STRATEGY, basis, steps, notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan) when custom networking came on or the planned space is no longer free."""
    check_plan_drift(plan, snapshot, _drift)


def _drift(plan: Plan, eks: EksSection, snapshot: Snapshot) -> list[str]:
    """What the plan relied on and no longer holds; its own earlier work (tagged subnets, its association,
    the local routes that come with it) is progress, not drift."""
    b = plan.basis
    mine = plan.plan_id
    problems: list[str] = []
    state = discovery.discovery_state(eks, snapshot.kube, cni_config(eks, snapshot.kube))
    if state.custom_networking:
        problems.append("custom networking is now on, so the VPC CNI would ignore tagged subnets")
    local = _local(eks)
    if "ipam_pool_id" in b:  # the CIDR is IPAM's choice at apply time: the pool and its rules are the basis
        problems += pool_drift(b, eks)
    elif b["cidr"]:
        cidr = netmath.parse_cidr(b["cidr"])
        ours = cidr in local
        for net, where in occupied_space(eks, ignore_plan=mine):
            if net == cidr and (
                where.startswith(f"VPC {eks.vpc.vpc_id} CIDR") or (ours and where.startswith("route to "))
            ):
                continue  # our association and the local route every table gets with it
            if netmath.overlaps(net, cidr):
                problems.append(f"{cidr} now overlaps {where}")
        if not ours and len(active_cidrs(eks)) >= eks.vpc_cidr_quota:
            problems.append(f"{eks.vpc.vpc_id} has reached its CIDR block quota ({eks.vpc_cidr_quota})")
    else:
        for piece in (netmath.parse_cidr(p) for p in b["subnets"].values()):
            if not any(piece.subnet_of(c) for c in local):
                problems.append(f"{piece} is no longer inside a CIDR of {eks.vpc.vpc_id}")
            for net, where in _occupied_inside(eks, ignore_plan=mine):
                if netmath.overlaps(net, piece):
                    problems.append(f"{piece} now overlaps {where}")
    tables = {rt.route_table_id for rt in eks.route_tables}
    for az, rt in b["route_tables"].items():
        if rt not in tables:
            problems.append(f"route table {rt} for {az} no longer exists")
    return problems
