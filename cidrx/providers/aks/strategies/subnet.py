"""What both AKS expand strategies plan alike: a new subnet in the cluster's VNet, sized for the nodes (or
pods) the new agent pool needs, in the VNet's free space or in a new address space (synced to every peering),
clear of every subnet, peered VNet, route and the cluster's service and pod CIDRs; an agent pool copying the
template pool but for its subnet(s) and name; the plan's basis, summary and notes; and the drift check.

Why a module of its own: `aks-node-pool` and `aks-pod-subnet` differ only in which subnet is new (the nodes',
or the pods') and how its size follows from the nodes wanted. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.actions.agent_pool import CREATE_AGENT_POOL
from cidrx.providers.aks.actions.network import ADD_ADDRESS_SPACE, CREATE_SUBNET
from cidrx.providers.aks.analyze.analyze import OVERLAY_WAY_OUT, aks_section
from cidrx.providers.aks.api import parse_id, subnet_id
from cidrx.providers.aks.facts.pool_copy import PLAN_TAG, agent_pool_body, choose_template, differences, pool_name
from cidrx.providers.aks.facts.space import clashes, free_in_vnet, new_address_space, vnet_spaces
from cidrx.providers.aks.facts.subnets import (
    AZURE_RESERVED_PER_SUBNET,
    NODE_SUBNET,
    OVERLAY,
    POD_SUBNET,
    cluster_mode,
    pod_cidr_use,
    pod_subnet_need,
    pool_mode,
)
from cidrx.providers.aks.model import AgentPool, AksSection, Subnet

SMALLEST_SUBNET = 29  # Azure's smallest subnet
ACTIONS = (ADD_ADDRESS_SPACE, CREATE_SUBNET, CREATE_AGENT_POOL)


@dataclass(frozen=True)
class Start:
    aks: AksSection
    template: AgentPool
    template_subnet: Subnet  # the subnet the plan replaces for the new pool (nodes' or pods')
    max_pods: int
    add_nodes: int


def start(snapshot: Snapshot, opts: PlanOptions, role: str) -> Start:
    """Refuse what cannot be expanded, pick the template pool and what the new pool holds. `role` is the
    subnet the plan adds: "nodes" or "pods"."""
    aks = aks_section(snapshot)
    c = aks.cluster
    mode = cluster_mode(c)
    use = pod_cidr_use(aks)
    if use is not None and use.nodes >= use.max_nodes:
        what = "Azure CNI Overlay" if mode == OVERLAY else "kubenet"
        raise InvalidInput(
            f"cluster {c.name} ({what}) has used every /24 of its pod CIDR {use.cidr} ({use.nodes} of "
            f"{use.max_nodes} nodes): a new subnet or agent pool cannot give it more pod addresses",
            hint=OVERLAY_WAY_OUT,
        )
    if aks.vnet is None:
        raise InvalidInput(
            f"cluster {c.name} uses the VNet AKS manages for it (no vnetSubnetID on its pools): cidrx cannot add "
            "subnets there",
            hint="create the agent pools in a VNet of your own (bring your own VNet)",
        )
    if opts.add_nodes is not None and opts.add_nodes < 1:
        raise InvalidInput("--add-nodes must be at least 1")
    pools = [p for p in aks.agent_pools if (pool_mode(c, p) == POD_SUBNET) == (role == "pods")]
    if not pools and not opts.template:
        if role == "pods":
            raise InvalidInput(
                f"no agent pool of cluster {c.name} takes pod addresses from a pod subnet",
                hint="use --strategy aks-node-pool",
            )
        raise InvalidInput(
            f"every agent pool of cluster {c.name} uses a pod subnet", hint="use --strategy aks-pod-subnet"
        )
    ids = {p.pod_subnet_id if role == "pods" else p.vnet_subnet_id for p in pools}
    template = choose_template(aks, ids, opts.template)
    if (pool_mode(c, template) == POD_SUBNET) != (role == "pods"):
        other = "aks-node-pool" if role == "pods" else "aks-pod-subnet"
        raise InvalidInput(f"agent pool {template.name} does not fit this strategy", hint=f"use --strategy {other}")
    where = template.pod_subnet_id if role == "pods" else template.vnet_subnet_id
    subnet = aks.vnet.subnet(where)
    if subnet is None:
        raise InvalidInput(f"agent pool {template.name}'s subnet {where} is not in VNet {aks.vnet.name}")
    max_pods = opts.max_pods_per_node or template.max_pods
    add_nodes = opts.add_nodes or max(template.max_nodes, 1)
    return Start(aks, template, subnet, max_pods, add_nodes)


def addresses_needed(found: Start, role: str) -> int:
    """What the new subnet must hold for `add_nodes` nodes: in a node subnet AKS checks (nodes + 1) x (what a
    node takes) up front; in a pod subnet each node takes whole batches of 16."""
    c, template = found.aks.cluster, found.template
    if role == "pods":
        per_node = pod_subnet_need(AgentPool(**{**template.__dict__, "max_pods": found.max_pods}))
        return found.add_nodes * per_node + AZURE_RESERVED_PER_SUBNET
    per_node = found.max_pods + 1 if pool_mode(c, template) == NODE_SUBNET else 1
    return (found.add_nodes + 1) * per_node + AZURE_RESERVED_PER_SUBNET


@dataclass(frozen=True)
class Placement:
    cidr: IPv4Network
    new_space: IPv4Network | None  # an address space the VNet must take first


def place(aks: AksSection, need: int, wanted: str | None) -> Placement:
    """--cidr (checked against everything taken), else the first free block in the VNet, else a new address
    space."""
    prefix = min(SMALLEST_SUBNET, netmath.smallest_prefix_for(need))
    if wanted:
        net = netmath.parse_cidr(wanted)
        netmath.check_not_forbidden(net)
        if net.prefixlen > SMALLEST_SUBNET:
            raise InvalidInput(f"{net} is smaller than Azure's smallest subnet (/{SMALLEST_SUBNET})")
        if net.num_addresses < need:
            raise InvalidInput(
                f"{net} holds {net.num_addresses} addresses; the new pool needs {need}", hint="use a larger --cidr"
            )
        found = clashes(aks, net)
        if found:
            raise InvalidInput(f"{net} overlaps {', '.join(found)}", hint="pick a free range or leave --cidr out")
        inside = any(net.subnet_of(s) for s in vnet_spaces(aks))
        if not inside and any(netmath.overlaps(net, s) for s in vnet_spaces(aks)):
            raise InvalidInput(f"{net} straddles an address space of VNet {aks.vnet.name if aks.vnet else ''}")
        return Placement(net, None if inside else net)
    free = free_in_vnet(aks, prefix)
    if free is not None:
        return Placement(free, None)
    space = new_address_space(aks, prefix)
    if space is None:
        raise InvalidInput(f"no free /{prefix} in the VNet nor in private address space", hint="pass --cidr")
    return Placement(space, space)


def _subnet_name(aks: AksSection, base: str) -> str:
    taken = {s.name for s in aks.vnet.subnets} if aks.vnet else set()
    n = 2
    while True:
        name = f"{base}-{n}" if f"{base}" in taken or n > 2 else base
        if name not in taken:
            return name
        n += 1


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str, strategy: str, role: str) -> Plan:
    found = start(snapshot, opts, role)
    aks, template, old = found.aks, found.template, found.template_subnet
    assert aks.vnet is not None
    need = addresses_needed(found, role)
    placed = place(aks, need, opts.cidr)
    new_pool = pool_name(aks, template, opts.pool_name)
    vnet_parts = parse_id(aks.vnet.id)
    rg, vnet = vnet_parts["rg"], aks.vnet.name
    subnet_name = _subnet_name(aks, f"{new_pool}-{'pods' if role == 'pods' else 'nodes'}")
    new_id = subnet_id(vnet_parts["sub"], rg, vnet, subnet_name)
    steps: list[Step] = []
    if placed.new_space is not None:
        steps.append(
            Step(
                id="add-address-space",
                action=ADD_ADDRESS_SPACE.name,
                params={
                    "resource_group": rg,
                    "vnet": vnet,
                    "cidr": str(placed.new_space),
                    "seen": list(aks.vnet.address_prefixes),
                },
                description=f"add address space {placed.new_space} to virtual network {vnet} (it has no free "
                f"/{placed.cidr.prefixlen} left) and sync its {len(aks.vnet.peerings)} peering(s)",
                permissions=ADD_ADDRESS_SPACE.permissions,
            )
        )
    props: dict[str, Any] = {"addressPrefix": str(placed.cidr)}
    # The new subnet keeps the routing and filtering of the one it relieves (kubenet's node routes, NSG rules).
    if old.route_table_id:
        props["routeTable"] = {"id": old.route_table_id}
    if old.network_security_group_id:
        props["networkSecurityGroup"] = {"id": old.network_security_group_id}
    if old.delegations:
        props["delegations"] = [
            {"name": d.name, "properties": {"serviceName": d.service_name}} for d in old.delegations
        ]
    usable = placed.cidr.num_addresses - AZURE_RESERVED_PER_SUBNET
    steps.append(
        Step(
            id="create-subnet",
            action=CREATE_SUBNET.name,
            params={"resource_group": rg, "vnet": vnet, "subnet": subnet_name, "body": {"properties": props}},
            description=f"create {role} subnet {subnet_name} {placed.cidr} in virtual network {vnet} ({usable} usable "
            f"addresses; {need - AZURE_RESERVED_PER_SUBNET} needed for {found.add_nodes} node(s))",
            depends_on=tuple(s.id for s in steps),
            permissions=CREATE_SUBNET.permissions,
        )
    )
    node_subnet = new_id if role == "nodes" else template.vnet_subnet_id
    pod_subnet = new_id if role == "pods" else template.pod_subnet_id
    body = agent_pool_body(
        template, node_subnet, pod_subnet, found.max_pods, max(1, min(template.count, found.add_nodes))
    )
    changed = differences(template, body)
    steps.append(
        Step(
            id="create-agent-pool",
            action=CREATE_AGENT_POOL.name,
            params={
                "resource_group": aks.resource_group,
                "cluster": aks.cluster.name,
                "cluster_id": aks.cluster.id,
                "pool": new_pool,
                "body": body,
                "differences": changed,
            },
            description=f"create agent pool {new_pool} as a copy of {template.name} ({template.vm_size}, "
            f"{template.os_type}, max pods {found.max_pods}) using subnet {subnet_name}; it differs only in: "
            + "; ".join(changed),
            depends_on=("create-subnet",),
            permissions=CREATE_AGENT_POOL.permissions,
        )
    )
    basis: dict[str, Any] = {
        "vnet": aks.vnet.id,
        "address_prefixes": list(aks.vnet.address_prefixes),
        "cidr": str(placed.cidr),
        "subnet": subnet_name,
        "template_pool": template.name,
        "template_subnet": old.id,
        "agent_pool": new_pool,
        "service_cidr": aks.cluster.service_cidr,
        "network_plugin": aks.cluster.network_plugin,
        "network_plugin_mode": aks.cluster.network_plugin_mode,
    }
    if placed.new_space is not None:
        basis["new_address_space"] = str(placed.new_space)
    summary = {
        "cidr": str(placed.cidr),
        "subnet": subnet_name,
        "role": role,
        "usable_addresses": usable,
        "nodes": found.add_nodes,
        "max_pods": found.max_pods,
        "agent_pool": new_pool,
        "template_pool": template.name,
        "new_address_space": str(placed.new_space) if placed.new_space else None,
    }
    if role == "pods":
        # Dynamic allocation: a node asks its own pool's pod subnet for batches of 16 as its pods grow
        # (docs/cloud-facts.md, "AKS after an expansion").
        after = (
            f"After the apply, move the workloads: {template.name}'s nodes still take pod addresses from "
            f"{old.name} in batches of 16, so pods placed on them fail once their batches are used. Plan their "
            f"migration (cordon, drain, scale {template.name} to 0): `cidrx expand {snapshot.target.flags()} --plan "
            "--out migrate.json --strategy aks-migrate`."
        )
    else:
        after = (
            f"Nothing has to move after the apply: {template.name}'s nodes keep the addresses they reserved for their "
            f"pods when they were created; new nodes come from {new_pool}. {template.name} cannot scale up or take "
            f"an upgrade's surge node on {old.name}: lower its max count, or move its workloads to {new_pool} before "
            "its next upgrade."
        )
    notes = [
        after,
        "Azure subnets carry no tags: cidrx knows its subnet by name and address prefix, and its agent pool by the "
        f"tag {PLAN_TAG}.",
        f"NSG rules and firewalls that list {old.address_prefix} must list {placed.cidr} too.",
    ]
    return seal_plan(snapshot, created_at, strategy, basis, steps, notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when what the plan relied on no longer holds: the planned range now overlaps
    something (other than the plan's own subnet), the template pool or its subnet is gone, or a pool or subnet
    of the plan's names exists that it did not create."""
    aks = aks_section(snapshot)
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    b = plan.basis
    problems: list[str] = []
    if aks.vnet is None or aks.vnet.id.lower() != str(b["vnet"]).lower():
        problems.append(f"virtual network {b['vnet']} is no longer the cluster's")
    else:
        cidr = IPv4Network(b["cidr"])
        own = next((s for s in aks.vnet.subnets if s.name == b["subnet"]), None)
        if own is not None and own.address_prefix != b["cidr"]:
            problems.append(f"a subnet named {b['subnet']} ({own.address_prefix}) was created by someone else")
        others = [
            f"{net} ({where})"
            for net, where in _occupied_but_own(aks, b["subnet"], b.get("new_address_space"))
            if netmath.overlaps(cidr, net)
        ]
        if others:
            problems.append(f"{cidr} now overlaps {', '.join(others)}")
    pools = {p.name: p for p in aks.agent_pools}
    if b["template_pool"] not in pools:
        problems.append(f"template agent pool {b['template_pool']} no longer exists")
    other = pools.get(b["agent_pool"])
    if other is not None and other.tags.get(PLAN_TAG) != plan.plan_id:
        problems.append(f"an agent pool named {b['agent_pool']} was created by someone else")
    if aks.cluster.service_cidr != b["service_cidr"]:
        problems.append(f"the cluster's service CIDR is now {aks.cluster.service_cidr}, not {b['service_cidr']}")
    if problems:
        raise StalePlan("the plan is stale: " + "; ".join(problems) + ". Nothing was applied; make a new plan")


def _occupied_but_own(aks: AksSection, subnet: str, space: str | None) -> list[tuple[IPv4Network, str]]:
    from cidrx.providers.aks.facts.space import occupied

    return [(n, w) for n, w in occupied(aks) if w != f"subnet {subnet}"]
