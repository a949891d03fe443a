"""The basis of the EKS plan kinds, re-read from a fresh snapshot (cidrx.engine.basis compares it key by key).

Why it exists: a plan promises that apply refuses it if any basis fact changed; these readers give, for each
key the planners write, the value the estate shows now in the basis's own terms. What the plan itself did is
discounted, so a resumed or repeated apply is not its own drift: its VPC CIDR association, what carries its
plan tag/label (subnets, ENIConfigs, node classes), its own launch template version. Claims a plan makes
about its own steps (the CIDR it associates, the route tables its subnets join, the name of its node group)
are read against those steps, so a basis re-signed by hand that disagrees with them is refused too.
"""

from __future__ import annotations

from typing import Any

from cidrx.errors import InvalidInput
from cidrx.model.plan import DIGEST_TAG, Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.cni_env import UPDATE_ADDON_ENV
from cidrx.providers.eks.actions.eniconfig import APPLY_ENICONFIG
from cidrx.providers.eks.actions.launch_template import CREATE_LAUNCH_TEMPLATE_VERSION
from cidrx.providers.eks.actions.nodegroup import CREATE_NODEGROUP
from cidrx.providers.eks.actions.subnets import ASSOCIATE_ROUTE_TABLE, CREATE_SUBNET, RESERVE_SUBNET_CIDR
from cidrx.providers.eks.actions.vpc_cidr import ASSOCIATE_VPC_CIDR, ASSOCIATE_VPC_CIDR_FROM_POOL
from cidrx.providers.eks.facts import discovery
from cidrx.providers.eks.facts.cni import cni_config
from cidrx.providers.eks.facts.eniconfig import security_groups as eniconfig_security_groups
from cidrx.providers.eks.facts.ipam_pools import GONE
from cidrx.providers.eks.facts.provisioners import provisioners
from cidrx.providers.eks.facts.subnets import subnet_uses
from cidrx.providers.eks.model import AUTO_NODE_CLASS, EC2_NODE_CLASS, EksSection, eks_section
from cidrx.providers.eks.strategies.provisioners import classes_in_use, uses_aws_cni
from cidrx.providers.eks.strategies.space import active_cidrs


def _associated(plan: Plan, eks: EksSection) -> set[str]:
    """The VPC CIDR(s) this plan associated: its planned CIDR, or (IPAM pool plans) the one new block of the
    planned size inside the pool's allocations to the VPC."""
    mine: set[str] = set()
    for step in plan.steps:
        if step.action == ASSOCIATE_VPC_CIDR.name and step.params.get("cidr"):
            mine.add(str(step.params["cidr"]))
        elif step.action == ASSOCIATE_VPC_CIDR_FROM_POOL.name:
            pool = next((p for p in eks.ipam_pools or () if p.pool_id == step.params.get("ipam_pool_id")), None)
            planned = set(plan.basis.get("vpc_cidrs") or ())
            netmask = f"/{step.params.get('netmask_length')}"
            new = [
                c.cidr
                for c in eks.vpc.cidrs
                if c.state not in GONE and c.cidr not in planned and pool is not None and c.cidr in pool.vpc_cidrs
            ]
            if len(new) == 1 and new[0].endswith(netmask):
                mine.add(new[0])
    return mine


def _step_param(plan: Plan, action: str, key: str) -> Any:
    return next((s.params.get(key) for s in plan.steps if s.action == action), None)


def _vpc(plan: Plan, eks: EksSection) -> dict[str, Any]:
    mine = _associated(plan, eks)
    # A CIDR this plan associated is in the list only when the plan was made after it (never: it is new).
    return {
        "vpc_id": eks.vpc.vpc_id,
        "primary_cidr": eks.vpc.primary_cidr,
        "vpc_cidrs": [c for c in active_cidrs(eks) if c not in mine],
    }


def _space(plan: Plan, eks: EksSection) -> dict[str, Any]:
    """The planned space: the CIDR the association step names, or the IPAM pool (if it still allocates to the
    VPC) and the size it asks for. Whether the CIDR is still free is the strategy's own drift check."""
    pools = {p.pool_id for p in eks.ipam_pools or ()}
    pool_id = _step_param(plan, ASSOCIATE_VPC_CIDR_FROM_POOL.name, "ipam_pool_id")
    return {
        "cidr": _step_param(plan, ASSOCIATE_VPC_CIDR.name, "cidr") or "",
        "ipam_pool_id": pool_id if pool_id in pools else None,
        "netmask_length": _step_param(plan, ASSOCIATE_VPC_CIDR_FROM_POOL.name, "netmask_length"),
    }


def _zone(step_id: str, prefix: str) -> str:
    return step_id.removeprefix(prefix)


def _route_tables(plan: Plan, eks: EksSection) -> dict[str, Any]:
    """Per zone, the route table its new subnet joins (per the plan's steps), if it still exists."""
    tables = {rt.route_table_id for rt in eks.route_tables}
    out: dict[str, Any] = {}
    for s in plan.steps:
        if s.action == ASSOCIATE_ROUTE_TABLE.name:
            rt = s.params.get("route_table_id")
            out[_zone(s.id, "route-subnet-")] = rt if rt in tables else None
    return out


def _provisioners(plan: Plan, eks: EksSection) -> dict[str, Any]:
    """Karpenter, Auto Mode and self-managed groups as the provisioner steps rely on them. A node class this
    plan labelled, and a group whose max pods is the one this plan's launch template version sets, count as
    they were planned."""
    mine, b = plan.plan_id, plan.basis
    p = provisioners(eks)

    def classes(kind: str, planned: dict[str, Any]) -> dict[str, str]:
        return {
            c.name: planned[c.name] if c.labels.get(DIGEST_TAG) == mine and c.name in planned else c.resource_version
            for c in classes_in_use(p, kind)
            if kind != AUTO_NODE_CLASS or c.labels.get(DIGEST_TAG) != mine or c.name in planned
        }

    groups: dict[str, Any] = {}
    for g in p.self_managed:
        was = (b.get("self_managed") or {}).get(g.name)
        planned_to = [
            s.params.get("max_pods_to")
            for s in plan.steps
            if s.action == CREATE_LAUNCH_TEMPLATE_VERSION.name and s.id == f"launch-template-{g.name}"
        ]
        if was is not None and planned_to and g.max_pods in planned_to:
            groups[g.name] = was  # our own version, made by an earlier run
        else:
            groups[g.name] = {"launch_template_version": g.launch_template_version, "max_pods": g.max_pods}
    return {
        "ec2nodeclasses": classes(EC2_NODE_CLASS, b.get("ec2nodeclasses") or {}),
        "auto_nodeclasses": classes(AUTO_NODE_CLASS, b.get("auto_nodeclasses") or {}),
        "karpenter": f"{p.karpenter.namespace}/{p.karpenter.name}" if p.karpenter else "",
        "self_managed": groups,
        "auto_mode": p.auto_mode,
    }


def _cni_source(plan: Plan, eks: EksSection, snapshot: Snapshot) -> str:
    """Where the VPC CNI's settings are read: aws-node's env when the cluster was read, else the add-on's
    configuration values ("addon", or "default" without any). A plan made without the cluster (--no-kube) and
    applied with it (or the other way round) saw the other side: the reading compares only like with like
    (where the settings are changed, add-on or DaemonSet, is the steps' own drift check). An add-on without
    configuration values gains them from this plan's own add-on update: still the source it was made for."""
    now = cni_config(eks, snapshot.kube).source
    was = plan.basis.get("cni_source")
    if was in ("aws-node", "addon", "default") and (was == "aws-node") != (now == "aws-node"):
        return str(was)
    ours = any(s.action == UPDATE_ADDON_ENV.name for s in plan.steps)
    return "default" if now == "addon" and ours and was == "default" else now


def _security_groups(eks: EksSection) -> list[str] | None:
    if not uses_aws_cni(eks):
        return None
    try:
        return eniconfig_security_groups(eks)[0] or None
    except InvalidInput:
        return None


def custom_networking(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    eks = eks_section(snapshot)
    mine = plan.plan_id
    b = plan.basis
    ours = {s.subnet_id for s in eks.subnets if s.tags.get(DIGEST_TAG) == mine}
    planned = set(b.get("eniconfigs") or ())
    written = {str(s.params.get("name")) for s in plan.steps if s.action == APPLY_ENICONFIG.name}
    # The ENIConfigs the plan saw that still exist, and any that appeared since for a zone the plan writes one
    # for (not those this plan created: labelled, or on its subnets). One for a zone the plan does not touch
    # is nothing the plan relies on.
    eniconfigs = sorted(
        e.name
        for e in snapshot.kube.eniconfigs
        if e.name in planned or (e.name in written and e.labels.get(DIGEST_TAG) != mine and e.subnet not in ours)
    )
    names = {ng.name: ng for ng in eks.nodegroups}
    template = b.get("template_nodegroup")
    wanted = _step_param(plan, CREATE_NODEGROUP.name, "name")
    taken = names.get(wanted or "")
    return {
        **_vpc(plan, eks),
        **_space(plan, eks),
        "route_tables": _route_tables(plan, eks),
        "cluster_security_group": eks.cluster.cluster_security_group_id,
        "template_nodegroup": template if template in names else None,
        # The new group's name while it is free (or the group is this plan's own).
        "nodegroup_name": wanted if taken is None or taken.tags.get(DIGEST_TAG) == mine else f"{wanted} (taken)",
        "eniconfigs": eniconfigs,
        "cni_source": _cni_source(plan, eks, snapshot),
        "eniconfig_security_groups": _security_groups(eks),
        **_provisioners(plan, eks),
    }


def subnet_discovery(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    eks = eks_section(snapshot)
    state = discovery.discovery_state(eks, snapshot.kube, cni_config(eks, snapshot.kube))
    subnets = {
        _zone(s.id, "create-subnet-"): s.params["cidr"]
        for s in plan.steps
        if s.action == CREATE_SUBNET.name and "cidr" in s.params
    }
    return {
        **_vpc(plan, eks),
        **_space(plan, eks),
        "subnets": subnets,
        "route_tables": _route_tables(plan, eks),
        "cni_source": _cni_source(plan, eks, snapshot),
        "cni_version": discovery.version_text(state.version) if state.version is not None else None,
    }


def prefix_delegation(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    eks = eks_section(snapshot)
    subnets = {s.subnet_id: s for s in eks.subnets}
    # The subnets pods and nodes use now (as the planner picks them).
    uses = [
        u for u in subnet_uses(eks, snapshot.kube, cni_config(eks, snapshot.kube)) if {"pods", "nodes"} & set(u.roles)
    ]
    planned = [u.subnet.subnet_id for u in uses]
    blocks: dict[str, set[str]] = {}
    for step in plan.steps:
        if step.action == RESERVE_SUBNET_CIDR.name:
            blocks.setdefault(str(step.params.get("subnet_id")), set()).add(str(step.params.get("cidr")))
    return {
        "vpc_id": eks.vpc.vpc_id,
        "subnets": {sid: subnets[sid].cidr for sid in planned if sid in subnets},
        # Reservations other than this plan's own blocks.
        "reservations": {
            sid: [r for r in subnets[sid].reservations if r not in blocks.get(sid, set())]
            for sid in planned
            if sid in subnets
        },
        "cni_source": _cni_source(plan, eks, snapshot),
        **_provisioners(plan, eks),
    }
