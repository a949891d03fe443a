"""Strategy custom-networking (what the incident write-up does by hand): associate a secondary VPC CIDR, carve
one subnet per AZ in use, route each like the node subnet of its AZ, an ENIConfig per AZ, switch the VPC CNI
to custom networking, and bring new nodes through the cluster's provisioners (a node group like the template,
Karpenter, EKS Auto Mode, self-managed groups): only new nodes use ENIConfigs. Pure: no I/O; check_drift
compares the plan's basis with a fresh snapshot before apply.
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
from cidrx.model.plan import DIGEST_TAG, Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.cni_env import SET_DAEMONSET_ENV, UPDATE_ADDON_ENV
from cidrx.providers.eks.actions.eniconfig import APPLY_ENICONFIG
from cidrx.providers.eks.actions.nodegroup import CREATE_NODEGROUP
from cidrx.providers.eks.actions.subnets import ASSOCIATE_ROUTE_TABLE, CREATE_SUBNET
from cidrx.providers.eks.actions.vpc_cidr import ASSOCIATE_VPC_CIDR, ASSOCIATE_VPC_CIDR_FROM_POOL
from cidrx.providers.eks.facts.cni import CUSTOM_NETWORK, LABEL_DEF, ZONE_LABEL, cni_config, max_pods
from cidrx.providers.eks.facts.eniconfig import security_groups as eniconfig_security_groups
from cidrx.providers.eks.facts.ipam_pools import carve, pool_drift, pool_netmask, vpc_pool
from cidrx.providers.eks.facts.provisioners import provisioners
from cidrx.providers.eks.facts.routing import unreadable_routes
from cidrx.providers.eks.facts.subnets import node_subnet_ids, subnet_label, usable_addresses
from cidrx.providers.eks.model import APPLIED_AT_TAG, EksSection, Nodegroup, eks_section
from cidrx.providers.eks.strategies.drift import check_plan_drift
from cidrx.providers.eks.strategies.network_steps import associate_step, env_step, zone_subnet_steps
from cidrx.providers.eks.strategies.placement import route_table_for, template_nodegroup, zones_in_use
from cidrx.providers.eks.strategies.provisioners import (
    PROVISIONER_ACTIONS,
    auto_mode_custom_networking,
    has_provisioner,
    karpenter_custom_networking,
    node_type,
    self_managed,
    uses_aws_cni,
    without_identity,
)
from cidrx.providers.eks.strategies.space import (
    ACTIVE_STATES,
    SUBNET_MAX_PREFIX,
    active_cidrs,
    choose_cidr,
    cidr_prefixes_for,
    occupied_space,
    validate_cidr,
)


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
            if not k.startswith("aws:") and k not in (DIGEST_TAG, APPLIED_AT_TAG)
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


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    eks = eks_section(snapshot)
    cni = cni_config(eks, snapshot.kube)
    # No plan requires a managed node group: without one, the other provisioners bring the new nodes.
    template = template_nodegroup(eks, opts.template) if eks.nodegroups or not has_provisioner(eks) else None
    if template is None and opts.template:
        template_nodegroup(eks, opts.template)
    zones = zones_in_use(eks, snapshot)
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
    active = active_cidrs(eks)
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
        cidr = IPv4Network((0, pool_netmask(eks, pool, *cidr_prefixes_for(add_nodes * per_node, len(zones)))))
    else:
        cidr = choose_cidr(eks, *cidr_prefixes_for(add_nodes * per_node, len(zones)))
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
        rt, via = route_table_for(eks, az, placement[az])
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
        change = env_step(eks, cni, env, "enable-custom-networking", "custom networking")
        steps.append(replace(change, depends_on=tuple(f"eniconfig-{az}" for az in zones)))
        after = ("enable-custom-networking", *routed)
    ng_name = ""
    notes = [*placement_notes]
    if template is not None:
        ng_name = _nodegroup_name(eks, template, opts.pool_name, "cn")
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
    return seal_plan(snapshot, created_at, "custom-networking", basis, steps, notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan) when the planned CIDR, route tables, security groups or names are no longer free."""
    check_plan_drift(plan, snapshot, _drift)


def _drift(plan: Plan, eks: EksSection, snapshot: Snapshot) -> list[str]:
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
    if not ours_associated and len(active_cidrs(eks)) >= eks.vpc_cidr_quota:
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


ACTIONS = (
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
