"""EKS expansion planning: turn a snapshot into the ordered steps that give pods new address space.

Two strategies. `custom-networking` (default, what the incident write-up does by hand): associate a
secondary VPC CIDR, carve one subnet per AZ in use, route each like the node subnet of its AZ, an
ENIConfig per AZ, switch the VPC CNI to custom networking, and add a node group (only new nodes use
ENIConfigs). `prefix-delegation`: switch the CNI to /28 prefixes and reserve aligned space in fragmented
subnets. Pure: no I/O; `check_drift` compares a plan's basis with a fresh snapshot before apply.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.plan import DIGEST_TAG, Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.analyze import node_subnet_ids, subnet_label, subnet_uses, usable_addresses
from cidrx.providers.eks.cni import (
    CUSTOM_NETWORK,
    LABEL_DEF,
    PREFIX_DELEGATION,
    ZONE_LABEL,
    CniConfig,
    cni_config,
    max_pods,
)
from cidrx.providers.eks.eniconfig import security_groups as eniconfig_security_groups
from cidrx.providers.eks.ipampool import ASSOCIATE_VPC_CIDR_FROM_POOL, carve, pool_drift, pool_netmask, vpc_pool
from cidrx.providers.eks.model import EksSection, IpamPool, Nodegroup, Subnet
from cidrx.providers.eks.provisioner_plan import (
    PROVISIONER_ACTIONS,
    SELF_MANAGED_ACTIONS,
    UPDATE_EC2_NODE_CLASS,
    auto_mode_custom_networking,
    check_not_auto_mode_only,
    has_provisioner,
    karpenter_custom_networking,
    karpenter_prefix_delegation,
    node_type,
    provisioner_drift,
    self_managed,
    uses_aws_cni,
    without_identity,
)
from cidrx.providers.eks.provisioners import provisioners
from cidrx.providers.eks.routing import routed_elsewhere, unreadable_routes
from cidrx.registry import Action

STRATEGIES = ("custom-networking", "prefix-delegation", "subnet-discovery")
DEFAULT_CIDR_PREFIX = 20  # the incident's 100.64.0.0/20: room to grow, cheap in 100.64/10
ACTIVE_STATES = ("associated", "associating")
SUBNET_MAX_PREFIX = 28  # CreateSubnet accepts /16 to /28

# Each step action, declared once: the step builders attach its name and permissions to their Steps, `cidrx
# permissions` prints them without making a plan (cidrx.permissions), apply runs its executor (steps.py).
_STEPS = "cidrx.providers.eks.steps"
_UNDO = "cidrx.providers.eks.undo"  # how `cidrx rollback` takes each back (cidrx.engine.undo)
ASSOCIATE_VPC_CIDR = Action(
    "eks.associate-vpc-cidr",
    ("ec2:AssociateVpcCidrBlock", "ec2:DescribeVpcs"),
    f"{_STEPS}:AssociateVpcCidr",
    undo=f"{_UNDO}:UndoVpcCidr",
    undo_permissions=("ec2:DisassociateVpcCidrBlock", "ec2:DescribeVpcs", "ec2:DescribeSubnets"),
)
CREATE_SUBNET = Action(
    "eks.create-subnet",
    ("ec2:CreateSubnet", "ec2:CreateTags", "ec2:DescribeSubnets"),
    f"{_STEPS}:CreateSubnet",
    undo=f"{_UNDO}:UndoSubnet",
    undo_permissions=("ec2:DeleteSubnet", "ec2:DescribeSubnets", "ec2:DescribeNetworkInterfaces"),
)
ASSOCIATE_ROUTE_TABLE = Action(
    "eks.associate-route-table",
    ("ec2:AssociateRouteTable", "ec2:DescribeRouteTables"),
    f"{_STEPS}:AssociateRouteTable",
    undo=f"{_UNDO}:UndoRouteTableAssociation",
    undo_permissions=("ec2:DisassociateRouteTable", "ec2:DescribeRouteTables", "ec2:DescribeSubnets"),
)
APPLY_ENICONFIG = Action(
    "kube.apply-eniconfig",
    ("kubernetes: eniconfigs.crd.k8s.amazonaws.com get,create,update",),
    f"{_STEPS}:ApplyEniConfig",
    undo=f"{_UNDO}:UndoEniConfig",
    undo_permissions=("kubernetes: eniconfigs.crd.k8s.amazonaws.com get,update,delete",),
)
UPDATE_ADDON_ENV = Action(
    "eks.update-addon-env",
    ("eks:UpdateAddon", "eks:DescribeAddon", "eks:DescribeAddonConfiguration", "eks:DescribeUpdate"),
    f"{_STEPS}:UpdateAddonEnv",
    undo=f"{_UNDO}:UndoAddonEnv",
    undo_permissions=("eks:UpdateAddon", "eks:DescribeAddon"),
)
SET_DAEMONSET_ENV = Action(
    "kube.set-daemonset-env",
    ("kubernetes: daemonsets get,update in kube-system",),
    f"{_STEPS}:SetDaemonSetEnv",
    undo=f"{_UNDO}:UndoDaemonSetEnv",
    undo_permissions=("kubernetes: daemonsets get,update in kube-system",),
)
# iam:PassRole: CreateNodegroup passes the node role to EKS.
CREATE_NODEGROUP = Action(
    "eks.create-nodegroup",
    ("eks:CreateNodegroup", "eks:ListNodegroups", "eks:DescribeNodegroup", "iam:PassRole"),
    f"{_STEPS}:CreateNodegroup",
    undo=f"{_UNDO}:UndoNodegroup",
    undo_permissions=("eks:DeleteNodegroup", "eks:ListNodegroups", "eks:DescribeNodegroup", "kubernetes: nodes list"),
)
RESERVE_SUBNET_CIDR = Action(
    "eks.reserve-subnet-cidr",
    ("ec2:CreateSubnetCidrReservation", "ec2:CreateTags", "ec2:GetSubnetCidrReservations"),
    f"{_STEPS}:ReserveSubnetCidr",
    undo=f"{_UNDO}:UndoSubnetCidrReservation",
    undo_permissions=("ec2:DeleteSubnetCidrReservation", "ec2:GetSubnetCidrReservations"),
)
CUSTOM_NETWORKING_ACTIONS = (
    ASSOCIATE_VPC_CIDR,
    CREATE_SUBNET,
    ASSOCIATE_ROUTE_TABLE,
    APPLY_ENICONFIG,
    UPDATE_ADDON_ENV,
    SET_DAEMONSET_ENV,
    CREATE_NODEGROUP,
    ASSOCIATE_VPC_CIDR_FROM_POOL,
    *PROVISIONER_ACTIONS,
)
PREFIX_DELEGATION_ACTIONS = (
    RESERVE_SUBNET_CIDR,
    UPDATE_ADDON_ENV,
    SET_DAEMONSET_ENV,
    UPDATE_EC2_NODE_CLASS,
    *SELF_MANAGED_ACTIONS,
)
ACTIONS = (*CUSTOM_NETWORKING_ACTIONS, RESERVE_SUBNET_CIDR)  # subnet-discovery's are among them


@dataclass(frozen=True)
class EksPlanOptions:
    strategy: str = "custom-networking"
    cidr: str | None = None
    add_nodes: int | None = None
    nodegroup_name: str | None = None
    template_nodegroup: str | None = None
    created_at: str = ""


def _eks(snapshot: Snapshot) -> EksSection:
    eks: EksSection | None = snapshot.eks
    if eks is None:
        raise InvalidInput("this snapshot has no EKS section; it was taken for another provider")
    return eks


def occupied_space(eks: EksSection, *, ignore_plan: str | None = None) -> list[tuple[IPv4Network, str]]:
    """Everything a new VPC CIDR must not overlap, each with where it comes from.

    Subnets tagged with `ignore_plan` are left out (a resumed apply made them); so is 0.0.0.0/0.
    """
    out: list[tuple[IPv4Network, str]] = []
    for c in eks.vpc.cidrs:
        if c.state in ACTIVE_STATES:
            out.append((netmath.parse_cidr(c.cidr), f"VPC {eks.vpc.vpc_id} CIDR {c.cidr}"))
    for s in eks.subnets:
        if ignore_plan and s.tags.get(DIGEST_TAG) == ignore_plan:
            continue
        out.append((netmath.parse_cidr(s.cidr), f"subnet {subnet_label(s)}"))
    for p in eks.peerings:
        for cidr in p.cidrs:
            out.append((netmath.parse_cidr(cidr), f"peered VPC {p.peer_vpc_id} ({p.peering_id})"))
    for rt in eks.route_tables:
        for dest in rt.destinations:
            net = IPv4Network(dest, strict=False)
            if net.prefixlen == 0:
                continue
            vgw = (eks.vgw_routes or {}).get(rt.route_table_id, ())
            propagated = " (propagated by a virtual private gateway)" if dest in vgw else ""
            out.append((net, f"route to {dest} in {rt.route_table_id}{propagated}"))
    out += routed_elsewhere(eks)
    return out


def _template(eks: EksSection, name: str | None) -> Nodegroup:
    if not eks.nodegroups:
        raise InvalidInput(
            f"cluster {eks.cluster.name} has no managed node groups to copy"
            + (f" (--template-nodegroup {name})" if name else "")
            + ", and no self-managed group, Karpenter node class or Auto Mode was found: add nodes by hand"
        )
    if name:
        for ng in eks.nodegroups:
            if ng.name == name:
                return ng
        known = ", ".join(ng.name for ng in eks.nodegroups)
        raise InvalidInput(f"node group {name!r} not found in cluster {eks.cluster.name} (known: {known})")
    # Prefer groups cidrx did not make, so re-planning after an apply copies the user's own group.
    return max(eks.nodegroups, key=lambda ng: (DIGEST_TAG not in ng.tags, ng.desired_size, ng.max_size, ng.name))


def _zones(eks: EksSection, snapshot: Snapshot) -> list[str]:
    subnets = {s.subnet_id: s for s in eks.subnets}
    zones = {subnets[sid].az for sid in node_subnet_ids(eks) if sid in subnets}
    zones |= {n.zone for n in snapshot.kube.nodes if n.zone}
    if not zones:
        raise InvalidInput(f"cannot tell which availability zones cluster {eks.cluster.name} uses")
    return sorted(zones)


def _route_table_for(eks: EksSection, az: str, placed: str | None) -> tuple[str, str]:
    """Route table for the new pod subnet in `az`: that of the subnet the new nodes live in, else of the
    current node subnet there (never the main table by accident), and the subnet it was copied from."""
    by_id = {s.subnet_id: s for s in eks.subnets}
    if placed and by_id[placed].route_table_id:
        return str(by_id[placed].route_table_id), placed
    node_ids = node_subnet_ids(eks)
    candidates = sorted((s for s in eks.subnets if s.az == az and s.subnet_id in node_ids), key=lambda s: s.subnet_id)
    if not candidates:
        candidates = sorted((s for s in eks.subnets if s.az == az and s.route_table_id), key=lambda s: s.subnet_id)
    for s in candidates:
        if s.route_table_id:
            return s.route_table_id, s.subnet_id
    raise InvalidInput(f"no subnet of the cluster in {az} has a route table to copy")


def _cidr_prefixes_for(pods_needed: int, zones: int) -> tuple[int, int]:
    """(preferred, largest acceptable) prefix lengths for a secondary CIDR holding `pods_needed` pod
    addresses split over `zones` subnets: at least the needed size, /20 by default when less is needed."""
    per_zone = math.ceil(pods_needed / zones) + netmath.AWS_RESERVED_PER_SUBNET
    needed = netmath.smallest_prefix_for(per_zone) - math.ceil(math.log2(zones)) if zones > 1 else 0
    if zones <= 1:
        needed = netmath.smallest_prefix_for(per_zone)
    if needed < netmath.AWS_SECONDARY_MIN_PREFIX:
        raise InvalidInput(
            f"{pods_needed} pod addresses do not fit one secondary CIDR (AWS allows /16 at most); "
            "lower --add-nodes or run expand twice"
        )
    # One size up for headroom (so today's scale-up is not the next incident), /20 at least, /16 at most.
    return max(netmath.AWS_SECONDARY_MIN_PREFIX, min(needed - 1, DEFAULT_CIDR_PREFIX)), needed


def choose_cidr(eks: EksSection, preferred: int, needed: int) -> IPv4Network:
    """The first free block, largest preferred size first, that no occupied range touches and AWS allows."""
    occupied = [net for net, _ in occupied_space(eks)]
    primary = netmath.parse_cidr(eks.vpc.primary_cidr)
    spaces = netmath.aws_secondary_candidate_spaces(primary)
    for pre in range(preferred, needed + 1):
        found = netmath.first_free_block(pre, spaces, occupied)
        if found is not None:
            return found
    raise InvalidInput(f"no free /{needed} or larger for a secondary CIDR in VPC {eks.vpc.vpc_id}; pass --cidr")


def validate_cidr(eks: EksSection, text: str) -> IPv4Network:
    net = netmath.parse_cidr(text)
    netmath.check_not_forbidden(net)
    primary = netmath.parse_cidr(eks.vpc.primary_cidr)
    existing = [netmath.parse_cidr(c.cidr) for c in eks.vpc.cidrs if c.state in ACTIVE_STATES]
    occupied = occupied_space(eks)
    netmath.aws_check_secondary(primary, existing, net, [n for n, _ in occupied])
    return net


def _active_cidrs(eks: EksSection) -> list[str]:
    return sorted(c.cidr for c in eks.vpc.cidrs if c.state in ACTIVE_STATES)


def _node_placement(
    eks: EksSection, template: Nodegroup | None, zones: list[str], max_nodes: int
) -> tuple[dict[str, str | None], list[str]]:
    """Per AZ, the existing cluster subnet that can hold the new group's nodes (each needs one node address
    with custom networking), preferring one routed like the template's subnet there; None means the new
    nodes take their addresses from the new pod subnet. The nodes' own addresses must come from somewhere:
    in an incident the template's subnets are usually the full ones."""
    per_zone = math.ceil(max_nodes / len(zones)) + 1
    wanted = set(eks.cluster.subnet_ids) | node_subnet_ids(eks)
    template_subnets = set(template.subnet_ids) if template else node_subnet_ids(eks)
    whose = f"{template.name}'s" if template else "the current nodes'"
    template_tables = {s.route_table_id for s in eks.subnets if s.subnet_id in template_subnets}
    egress = {rt.route_table_id for rt in eks.route_tables if "0.0.0.0/0" in rt.destinations}
    # Nodes must reach the EKS endpoint and image registries: where the template's nodes have a default
    # route, only subnets that also have one are candidates.
    need_egress = bool(template_tables & egress)
    placement: dict[str, str | None] = {}
    notes: list[str] = []
    for az in zones:
        fits = [
            s
            for s in eks.subnets
            if s.az == az
            and s.subnet_id in wanted
            and s.available_ips >= per_zone
            and (s.route_table_id in egress or not need_egress)
        ]
        best = max(
            fits, key=lambda s: (s.route_table_id in template_tables, s.available_ips, s.subnet_id), default=None
        )
        if best is not None:
            placement[az] = best.subnet_id
            routed = (
                ""
                if best.route_table_id in template_tables
                else f", routed by {best.route_table_id} unlike {whose} subnets"
            )
            notes.append(
                f"New nodes in {az} take their own address from {subnet_label(best)} "
                f"({best.available_ips} free{routed}); pods get addresses from the new subnet."
            )
        else:
            placement[az] = None
            notes.append(
                f"No existing cluster subnet in {az} has room for {per_zone} node addresses: new nodes there take "
                "their own address from the new subnet too, so it must give nodes egress (NAT or public IPs) like "
                f"{whose} subnets do."
            )
    return placement, notes


def _env_step(eks: EksSection, cni: CniConfig, env: dict[str, str], step_id: str, what: str) -> Step:
    if eks.vpc_cni_addon is not None:
        from cidrx.providers.eks.addon_schema import check_env_update

        check_env_update(eks.vpc_cni_addon, env)
        return Step(
            id=step_id,
            action=UPDATE_ADDON_ENV.name,
            params={"cluster": eks.cluster.name, "addon": eks.vpc_cni_addon.name, "env": env},
            description=f"set {what} on the vpc-cni managed add-on ({', '.join(f'{k}={v}' for k, v in env.items())})",
            permissions=UPDATE_ADDON_ENV.permissions,
        )
    return Step(
        id=step_id,
        action=SET_DAEMONSET_ENV.name,
        params={"namespace": "kube-system", "name": "aws-node", "container": "aws-node", "env": env},
        description=f"set {what} on DaemonSet kube-system/aws-node ({', '.join(f'{k}={v}' for k, v in env.items())})",
        permissions=SET_DAEMONSET_ENV.permissions,
    )


def associate_step(eks: EksSection, cidr: IPv4Network, pool: IpamPool | None) -> Step:
    """`associate-vpc-cidr`: `cidr` itself, or (with the IPAM `pool` the VPC's CIDRs come from) a block of
    its size that IPAM picks when the association is made."""
    if pool is None:
        return Step(
            id="associate-vpc-cidr",
            action=ASSOCIATE_VPC_CIDR.name,
            params={"vpc_id": eks.vpc.vpc_id, "cidr": str(cidr)},
            description=f"associate secondary CIDR {cidr} with {eks.vpc.vpc_id} and wait until associated",
            permissions=ASSOCIATE_VPC_CIDR.permissions,
        )
    return Step(
        id="associate-vpc-cidr",
        action=ASSOCIATE_VPC_CIDR_FROM_POOL.name,
        params={"vpc_id": eks.vpc.vpc_id, "ipam_pool_id": pool.pool_id, "netmask_length": cidr.prefixlen},
        description=f"associate a /{cidr.prefixlen} from IPAM pool {pool.pool_id} with {eks.vpc.vpc_id} (IPAM "
        "picks the CIDR) and wait until associated",
        permissions=ASSOCIATE_VPC_CIDR_FROM_POOL.permissions,
    )


def zone_subnet_steps(
    eks: EksSection,
    az: str,
    cidr: str,
    tags: dict[str, str],
    create: tuple[str, tuple[str, ...]],
    route: tuple[str, str],
    *,
    carved: dict[str, Any] | None = None,
) -> list[Step]:
    """`create-subnet-<az>` (description, depends_on) and `route-subnet-<az>` (route table, description).
    With `carved`, the subnet's CIDR is carved at apply time from a CIDR known only then (an IPAM pool's)."""
    (create_text, create_after), (table, route_text) = create, route
    where: dict[str, Any] = {"cidr": cidr} if carved is None else {"carve": carved}
    return [
        Step(
            id=f"create-subnet-{az}",
            action=CREATE_SUBNET.name,
            params={"vpc_id": eks.vpc.vpc_id, "az": az, **where, "tags": tags},
            description=create_text,
            depends_on=create_after,
            permissions=CREATE_SUBNET.permissions,
        ),
        Step(
            id=f"route-subnet-{az}",
            action=ASSOCIATE_ROUTE_TABLE.name,
            params={"route_table_id": table, "subnet_id": f"${{create-subnet-{az}.subnet_id}}"},
            description=route_text,
            depends_on=(f"create-subnet-{az}",),
            permissions=ASSOCIATE_ROUTE_TABLE.permissions,
        ),
    ]


def _nodegroup_name(eks: EksSection, template: Nodegroup, wanted: str | None, suffix: str) -> str:
    taken = {ng.name for ng in eks.nodegroups}
    if wanted:
        if wanted in taken:
            raise InvalidInput(f"node group {wanted!r} already exists in cluster {eks.cluster.name}")
        return wanted
    base = f"{template.name}-{suffix}"[:63]
    name, n = base, 2
    while name in taken:
        name, n = f"{base[:60]}-{n}", n + 1
    return name


def _nodegroup_params(
    eks: EksSection, template: Nodegroup, name: str, subnets: list[str], desired: int, max_size: int
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "cluster": eks.cluster.name,
        "name": name,
        "subnets": subnets,
        "node_role": template.node_role,
        "scaling": {"minSize": min(template.min_size, desired), "maxSize": max_size, "desiredSize": desired},
        "labels": without_identity(template.labels, template.tags)[0],
        "tags": {
            k: v
            for k, v in without_identity(template.labels, template.tags)[1].items()
            if not k.startswith("aws:") and k != DIGEST_TAG
        },
    }
    if template.launch_template:
        params["launch_template"] = dict(template.launch_template)
    else:
        params["instance_types"] = list(template.instance_types)
        if template.disk_size:
            params["disk_size"] = template.disk_size
    for key, value in (("ami_type", template.ami_type), ("capacity_type", template.capacity_type)):
        if value:
            params[key] = value
    return params


def _custom_networking(snapshot: Snapshot, eks: EksSection, opts: EksPlanOptions) -> Plan:
    cni = cni_config(eks, snapshot.kube)
    # No plan requires a managed node group: without one, the other provisioners bring the new nodes.
    template = _template(eks, opts.template_nodegroup) if eks.nodegroups or not has_provisioner(eks) else None
    if template is None and opts.template_nodegroup:
        _template(eks, opts.template_nodegroup)
    zones = _zones(eks, snapshot)
    types = {t.name: t for t in eks.instance_types}
    if template is not None:
        itype = next((types[n] for n in template.instance_types if n in types), None)
    else:
        itype = node_type(eks, snapshot.kube)
    cn_cni = replace(cni, custom_networking=True, prefix_delegation=False)
    per_node = max_pods(itype, cn_cni) if itype else 110
    nodes_now = len(snapshot.kube.nodes) or sum(ng.desired_size for ng in eks.nodegroups)
    template_max = template.max_size if template else 0
    add_nodes = opts.add_nodes if opts.add_nodes is not None else max(nodes_now, template_max, 2)
    if add_nodes < 1:
        raise InvalidInput("--add-nodes must be at least 1")
    active = _active_cidrs(eks)
    if len(active) >= eks.vpc_cidr_quota:
        raise InvalidInput(
            f"{eks.vpc.vpc_id} already has {len(active)} CIDR blocks (quota {eks.vpc_cidr_quota}); request a "
            "quota increase (L-83CA0A9D) first"
        )
    pool = None if opts.cidr else vpc_pool(eks)
    if opts.cidr:
        cidr = validate_cidr(eks, opts.cidr)
    elif pool is not None:
        # IPAM picks the block when the association is made: only its size is planned here.
        cidr = IPv4Network((0, pool_netmask(eks, pool, *_cidr_prefixes_for(add_nodes * per_node, len(zones)))))
    else:
        cidr = choose_cidr(eks, *_cidr_prefixes_for(add_nodes * per_node, len(zones)))
    cidr_text = f"a /{cidr.prefixlen} from IPAM pool {pool.pool_id}" if pool is not None else str(cidr)
    pieces = netmath.split_equal(cidr, len(zones))
    min_per_zone = per_node + netmath.AWS_RESERVED_PER_SUBNET
    # A /29 zone subnet may hold one node's pods, yet CreateSubnet rejects it.
    too_small = pieces[0].prefixlen > SUBNET_MAX_PREFIX
    if too_small or usable_addresses(str(pieces[0])) < min_per_zone - netmath.AWS_RESERVED_PER_SUBNET:
        raise InvalidInput(
            f"{cidr_text} is too small: each of {len(zones)} zone subnets (/{pieces[0].prefixlen}) must be a /28 or "
            "larger and "
            f"hold at least one node's {per_node} pods"
        )
    placement, placement_notes = _node_placement(eks, template, zones, template_max + add_nodes)
    # ENIConfigs only where the VPC CNI runs (EKS Auto Mode nodes ignore them).
    groups, groups_from = eniconfig_security_groups(eks) if uses_aws_cni(eks) else ([], "")
    cluster = eks.cluster.name
    steps: list[Step] = [associate_step(eks, cidr, pool)]
    route_tables: dict[str, str] = {}
    for index, (az, piece) in enumerate(zip(zones, pieces, strict=True)):
        rt, via = _route_table_for(eks, az, placement[az])
        route_tables[az] = rt
        steps += zone_subnet_steps(
            eks,
            az,
            str(piece),
            {"Name": f"cidrx-{cluster}-pods-{az}", f"kubernetes.io/cluster/{cluster}": "shared"},
            (
                f"create pod subnet {piece} in {az}"
                if pool is None
                else f"create pod subnet in {az}: /{piece.prefixlen} number {index + 1} of the CIDR IPAM picks",
                ("associate-vpc-cidr",),
            ),
            (rt, f"associate the {az} pod subnet with {rt} (routed like {via}, where the new nodes live)"),
            carved=None if pool is None else carve("${associate-vpc-cidr.cidr}", len(zones), index),
        )
        if not uses_aws_cni(eks):
            continue  # EKS Auto Mode only: its nodes ignore ENIConfigs
        steps.append(
            Step(
                id=f"eniconfig-{az}",
                action=APPLY_ENICONFIG.name,
                params={
                    "name": az,
                    "subnet": f"${{create-subnet-{az}.subnet_id}}",
                    "security_groups": groups,
                },
                description=f"create ENIConfig {az} (pod subnet in {az}, {groups_from})",
                depends_on=(f"create-subnet-{az}",),
                permissions=APPLY_ENICONFIG.permissions,
            )
        )
    routed = tuple(f"route-subnet-{az}" for az in zones)
    after: tuple[str, ...] = routed
    if uses_aws_cni(eks):
        env = {CUSTOM_NETWORK: "true", LABEL_DEF: ZONE_LABEL}
        env_step = _env_step(eks, cni, env, "enable-custom-networking", "custom networking")
        steps.append(replace(env_step, depends_on=tuple(f"eniconfig-{az}" for az in zones)))
        after = ("enable-custom-networking", *routed)
    ng_name = ""
    notes = [*placement_notes]
    if template is not None:
        ng_name = _nodegroup_name(eks, template, opts.nodegroup_name, "cn")
        ng_subnets = [placement[az] or f"${{create-subnet-{az}.subnet_id}}" for az in zones]
        desired = max(template.desired_size, 1)
        max_size = max(template.max_size, desired + add_nodes)
        steps.append(
            Step(
                id="create-nodegroup",
                action=CREATE_NODEGROUP.name,
                params=_nodegroup_params(eks, template, ng_name, ng_subnets, desired, max_size),
                description=f"create node group {ng_name} like {template.name} ({desired}..{max_size} nodes); "
                "its nodes use the ENIConfigs",
                depends_on=after,
                permissions=CREATE_NODEGROUP.permissions,
            )
        )
        notes.append(
            f"Only nodes that join after custom networking is on use the ENIConfigs: when {ng_name} is ready, "
            f"cordon and drain the nodes of {template.name} (kubectl drain --ignore-daemonsets), then scale it "
            "down. cidrx does not drain nodes."
        )
        dropped = without_identity(template.labels, template.tags)[2]
        if dropped:
            notes.append(f"{ng_name} does not copy {template.name}'s identity: " + ", ".join(dropped) + ".")
    follow_ups = [
        karpenter_custom_networking(eks, snapshot.kube, zones, placement, add_nodes, after),
        auto_mode_custom_networking(eks, zones, placement, add_nodes, routed),
    ]
    for f in follow_ups:
        steps += f.steps
        notes += f.notes
    self_managed_groups = self_managed(eks, cn_cni, after, prefix_delegation=False)
    steps += self_managed_groups.steps
    notes += self_managed_groups.notes
    notes += [
        f"Pods now get addresses from {cidr_text}: update security groups, NACLs, firewall rules and NetworkPolicy "
        "ipBlocks that list pod CIDRs.",
    ]
    if pool is None and unreadable_routes(eks):
        notes.append(
            f"Routes cidrx could not read may already use {cidr}: "
            + "; ".join(unreadable_routes(eks)[:3])
            + ". Check it against the network's IP plan before applying."
        )
    if pool is not None:
        notes.append(
            f"The VPC's CIDRs come from IPAM pool {pool.pool_id}: the secondary CIDR is allocated from it (a "
            f"/{cidr.prefixlen}, within the pool's rules); IPAM picks the block when the association is made, the "
            "apply journal records it and the pod subnets are carved from it then."
        )
    elif eks.ipam_unreadable:
        notes.append(
            f"VPC IPAM pools could not be read ({eks.ipam_unreadable}): if your organisation allocates VPC CIDRs "
            "from IPAM, AssociateVpcCidrBlock with a plain CIDR may be refused (an SCP); plan again with access."
        )
    where: dict[str, Any] = (
        {"cidr": str(cidr)} if pool is None else {"ipam_pool_id": pool.pool_id, "netmask_length": cidr.prefixlen}
    )
    if uses_aws_cni(eks):
        notes.append(
            f"Max pods per {itype.name if itype else 'node'} drops to {per_node} with custom networking (the "
            "primary ENI no longer holds pod addresses); nodes with a custom max-pods in their launch template "
            "need it lowered."
        )
    basis: dict[str, Any] = {
        "vpc_id": eks.vpc.vpc_id,
        "primary_cidr": eks.vpc.primary_cidr,
        "vpc_cidrs": active,
        **where,
        "route_tables": route_tables,
        "cluster_security_group": eks.cluster.cluster_security_group_id,
        "template_nodegroup": template.name if template else None,
        "nodegroup_name": ng_name or None,
        "eniconfigs": sorted(e.name for e in snapshot.kube.eniconfigs),
        "cni_source": cni.source,
        # Empty on EKS Auto Mode-only clusters: no ENIConfig is written there (the codec prunes the empty list).
        "eniconfig_security_groups": groups or None,
    }
    for f in (*follow_ups, self_managed_groups):
        basis.update(f.basis or {})
    if provisioners(eks).auto_mode:
        basis["auto_mode"] = True
    summary = {
        **(
            {"cidr": str(cidr), "subnets": {az: str(p) for az, p in zip(zones, pieces, strict=True)}}
            if pool is None
            else {
                "ipam_pool": pool.pool_id,
                "netmask_length": cidr.prefixlen,
                "subnet_netmask_length": pieces[0].prefixlen,
            }
        ),
        "pods_per_node": per_node,
        "pod_addresses": sum(usable_addresses(str(p)) for p in pieces),
        "nodegroup": ng_name or None,
    }
    return seal_plan(snapshot, opts.created_at, "custom-networking", basis, steps, notes, summary)


def _prefix_delegation(snapshot: Snapshot, eks: EksSection, opts: EksPlanOptions) -> Plan:
    cni = cni_config(eks, snapshot.kube)
    if opts.cidr:
        raise InvalidInput("--cidr does not apply to --strategy prefix-delegation (it uses existing subnets)")
    check_not_auto_mode_only(eks, "prefix-delegation")
    types = {t.name: t for t in eks.instance_types}
    in_use = {t for ng in eks.nodegroups for t in ng.instance_types} | {n.instance_type for n in snapshot.kube.nodes}
    non_nitro = sorted(t for t in in_use if t in types and types[t].hypervisor != "nitro" and not types[t].bare_metal)
    if non_nitro:
        raise InvalidInput(
            f"prefix delegation needs Nitro instances; {', '.join(non_nitro)} "
            f"{'is' if len(non_nitro) == 1 else 'are'} not Nitro. Use --strategy custom-networking"
        )
    uses = [u for u in subnet_uses(eks, snapshot.kube, cni) if "pods" in u.roles or "nodes" in u.roles]
    dead = [u for u in uses if u.free_28 == 0]
    if dead and len(dead) == len(uses):
        raise InvalidInput(
            "prefix delegation cannot help: no pod subnet has a free aligned /28 ("
            + ", ".join(f"{u.subnet.cidr} {u.subnet.available_ips} free" for u in dead)
            + "). Use --strategy custom-networking"
        )
    steps: list[Step] = []
    for u in uses:
        if u.free_28 == 0 or u.subnet.reservations:
            continue
        occupied = [*netmath.aws_reserved_addresses(netmath.parse_cidr(u.subnet.cidr))]
        occupied += [IPv4Network(x, strict=False) for x in u.subnet.used]
        block = _largest_free_block(u.subnet, occupied)
        if block is None:
            continue
        steps.append(
            Step(
                id=f"reserve-prefixes-{u.subnet.subnet_id}",
                action=RESERVE_SUBNET_CIDR.name,
                params={"subnet_id": u.subnet.subnet_id, "cidr": str(block), "type": "prefix"},
                description=f"reserve {block} in {subnet_label(u.subnet)} for /28 prefixes so single addresses "
                "do not fragment it",
                permissions=RESERVE_SUBNET_CIDR.permissions,
            )
        )
    env = {PREFIX_DELEGATION: "true", "WARM_PREFIX_TARGET": "1"}
    steps.append(_env_step(eks, cni, env, "enable-prefix-delegation", "prefix delegation"))
    template = _template(eks, opts.template_nodegroup) if eks.nodegroups else None
    itype = next((types[n] for n in (template.instance_types if template else ()) if n in types), None)
    pd_cni = replace(cni, prefix_delegation=True)
    notes = [
        "Existing nodes keep their max-pods until they are replaced: roll the node groups "
        "(or create new ones) after the change.",
    ]
    if itype:
        notes.append(f"{itype.name} nodes can run {max_pods(itype, pd_cni)} pods with prefix delegation.")
    if dead:
        notes.append(
            "These subnets have no free /28 and gain nothing: " + ", ".join(subnet_label(u.subnet) for u in dead)
        )
    karpenter = karpenter_prefix_delegation(eks, snapshot.kube, pd_cni)
    groups = self_managed(eks, pd_cni, ("enable-prefix-delegation",), prefix_delegation=True)
    steps += [*karpenter.steps, *groups.steps]
    notes += [*karpenter.notes, *groups.notes]
    if provisioners(eks).auto_mode:
        notes.append("EKS Auto Mode nodes are unaffected: they ignore aws-node env and use /28 prefixes already.")
    basis: dict[str, Any] = {
        "vpc_id": eks.vpc.vpc_id,
        "subnets": {u.subnet.subnet_id: u.subnet.cidr for u in uses},
        "reservations": {u.subnet.subnet_id: list(u.subnet.reservations) for u in uses},
        "cni_source": cni.source,
        **(karpenter.basis or {}),
        **(groups.basis or {}),
    }
    summary = {"free_28": {u.subnet.subnet_id: u.free_28 for u in uses}}
    return seal_plan(snapshot, opts.created_at, "prefix-delegation", basis, steps, notes, summary)


def _largest_free_block(subnet: Subnet, occupied: list[IPv4Network]) -> IPv4Network | None:
    net = netmath.parse_cidr(subnet.cidr)
    for prefix in range(max(net.prefixlen + 1, 24), 29):
        block = netmath.first_free_block(prefix, [net], occupied)
        if block is not None:
            return block
    return None


def make_plan(snapshot: Snapshot, opts: EksPlanOptions) -> Plan:
    eks = _eks(snapshot)
    if opts.strategy == "custom-networking":
        return _custom_networking(snapshot, eks, opts)
    if opts.strategy == "prefix-delegation":
        return _prefix_delegation(snapshot, eks, opts)
    if opts.strategy == "subnet-discovery":
        from cidrx.providers.eks.discovery_plan import make_discovery_plan

        return make_discovery_plan(snapshot, eks, opts)
    raise InvalidInput(f"unknown EKS strategy {opts.strategy!r}; choose one of {', '.join(STRATEGIES)}")


def check_drift(plan: Plan, snapshot: Snapshot) -> None:
    """Refuse (StalePlan, exit 4) when what the plan relied on no longer holds.

    What this plan already did (resources tagged with its plan id, its own CIDR association) is not
    drift, so a resumed apply passes; unrelated changes (a tag elsewhere) do not matter either.
    """
    eks = _eks(snapshot)
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    b = plan.basis
    problems: list[str] = []
    if eks.vpc.vpc_id != b["vpc_id"]:
        problems.append(f"the cluster now uses VPC {eks.vpc.vpc_id}, not {b['vpc_id']}")
    problems += _cni_management_drift(plan, eks)
    problems += provisioner_drift(plan.steps, b, eks, plan.plan_id)
    if plan.strategy == "custom-networking":
        problems += _custom_networking_drift(plan, eks, snapshot)
    elif plan.strategy == "subnet-discovery":
        from cidrx.providers.eks.discovery_plan import discovery_drift

        problems += discovery_drift(plan, snapshot, eks)
    else:
        problems += _prefix_drift(plan, eks)
    if problems:
        raise StalePlan("the plan is stale: " + "; ".join(problems) + ". Nothing was applied; make a new plan")


def _cni_management_drift(plan: Plan, eks: EksSection) -> list[str]:
    """The CNI change targets either the managed add-on or the aws-node DaemonSet; if the cluster moved
    from one to the other since the plan was made, the planned change would land where it is ignored
    (EKS overwrites DaemonSet edits of a managed add-on) or fail halfway through the apply."""
    for step in plan.steps:
        if step.action == UPDATE_ADDON_ENV.name and eks.vpc_cni_addon is None:
            return [
                f"the VPC CNI is no longer the EKS add-on {step.params['addon']} (the plan would update the add-on)"
            ]
        if step.action == SET_DAEMONSET_ENV.name and eks.vpc_cni_addon is not None:
            return [
                f"the VPC CNI is now the managed EKS add-on {eks.vpc_cni_addon.name} "
                "(the plan would edit the aws-node DaemonSet)"
            ]
    return []


def _custom_networking_drift(plan: Plan, eks: EksSection, snapshot: Snapshot) -> list[str]:
    b = plan.basis
    problems: list[str] = _cidr_drift(plan, eks) if "cidr" in b else pool_drift(b, eks)
    problems += _placement_drift(plan, eks, snapshot)
    return problems


def _cidr_drift(plan: Plan, eks: EksSection) -> list[str]:
    b = plan.basis
    problems: list[str] = []
    cidr = netmath.parse_cidr(b["cidr"])
    mine = plan.plan_id
    ours_associated = any(c.cidr == str(cidr) and c.state in ACTIVE_STATES for c in eks.vpc.cidrs)
    for net, where in occupied_space(eks, ignore_plan=mine):
        if where.startswith(f"VPC {eks.vpc.vpc_id} CIDR") and net == cidr:
            continue  # our own association, made by an earlier run of this plan
        if ours_associated and where.startswith("route to ") and net == cidr:
            # Every route table of a VPC has one local route per VPC CIDR block (VPC User Guide, "Replace
            # or restore the target for a local route"): our own association brings these along.
            continue
        if netmath.overlaps(net, cidr):
            problems.append(f"{cidr} now overlaps {where}")
    if not ours_associated and len(_active_cidrs(eks)) >= eks.vpc_cidr_quota:
        problems.append(f"{eks.vpc.vpc_id} has reached its CIDR block quota ({eks.vpc_cidr_quota})")
    return problems


def _placement_drift(plan: Plan, eks: EksSection, snapshot: Snapshot) -> list[str]:
    b = plan.basis
    mine = plan.plan_id
    problems: list[str] = []
    tables = {rt.route_table_id for rt in eks.route_tables}
    for az, rt in b["route_tables"].items():
        if rt not in tables:
            problems.append(f"route table {rt} for {az} no longer exists")
    if eks.cluster.cluster_security_group_id != b["cluster_security_group"]:
        problems.append("the cluster security group changed")
    elif b.get("eniconfig_security_groups") and _groups_now(eks) != b["eniconfig_security_groups"]:
        problems.append(f"the security groups for the ENIConfigs changed (planned {b['eniconfig_security_groups']})")
    names = {ng.name: ng for ng in eks.nodegroups}
    if b.get("template_nodegroup") and b["template_nodegroup"] not in names:
        problems.append(f"template node group {b['template_nodegroup']} no longer exists")
    other = names.get(b.get("nodegroup_name") or "")
    if other is not None and other.tags.get(DIGEST_TAG) != mine:
        problems.append(f"a node group named {b['nodegroup_name']} was created by someone else")
    our_subnets = {s.subnet_id for s in eks.subnets if s.tags.get(DIGEST_TAG) == mine}
    for e in snapshot.kube.eniconfigs:
        foreign = e.labels.get(DIGEST_TAG) != mine and e.subnet not in our_subnets
        if e.name in b["route_tables"] and e.name not in b["eniconfigs"] and foreign:
            problems.append(f"ENIConfig {e.name} was created by someone else (subnet {e.subnet})")
    return problems


def _groups_now(eks: EksSection) -> list[str] | None:
    try:
        return eniconfig_security_groups(eks)[0]
    except InvalidInput:
        return None


def _prefix_drift(plan: Plan, eks: EksSection) -> list[str]:
    problems: list[str] = []
    subnets = {s.subnet_id: s for s in eks.subnets}
    for sid, cidr in plan.basis["subnets"].items():
        s = subnets.get(sid)
        if s is None or s.cidr != cidr:
            problems.append(f"subnet {sid} ({cidr}) is gone or changed")
    for step in plan.steps:
        if step.action != RESERVE_SUBNET_CIDR.name:
            continue
        s = subnets.get(step.params["subnet_id"])
        if s is None:
            continue
        block = netmath.parse_cidr(step.params["cidr"])
        before = set(plan.basis["reservations"].get(s.subnet_id, ()))
        for r in s.reservations:
            # Our own reservation from an earlier run of this plan is progress, not drift.
            if r != str(block) and r not in before and netmath.overlaps(netmath.parse_cidr(r), block):
                problems.append(f"{r} was reserved in {s.subnet_id} and overlaps the planned {block}")
        taken = [u for u in s.used if netmath.overlaps(IPv4Network(u, strict=False), block)]
        if taken and str(block) not in s.reservations:
            problems.append(f"{', '.join(taken[:3])} in {s.subnet_id} now sit inside the planned {block}")
    return problems


def env_json(env: dict[str, str]) -> str:
    """configurationValues for the vpc-cni add-on carrying `env` (EKS accepts JSON)."""
    return json.dumps({"env": env}, sort_keys=True)
