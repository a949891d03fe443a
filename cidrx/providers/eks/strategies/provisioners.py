"""The follow-up each node provisioner needs after an EKS expansion, so no plan assumes a managed node
group: Karpenter (RESERVED_ENIS, EC2NodeClass update that rolls its nodes), EKS Auto Mode (NodeClass pod
subnets), self-managed Auto Scaling groups (how to roll them), and which identity a copied managed node
group must not carry. Pure: steps, notes and basis for the strategies.

Upstream rules:
- Karpenter replaces a node when its EC2NodeClass drifts: a change of a hashed spec field (spec.tags is
  hashed, subnetSelectorTerms and kubelet are not) or a node whose subnet is no longer in status.subnets
  (aws/karpenter-provider-aws pkg/cloudprovider/drift.go isNodeClassDrifted / isSubnetDrifted,
  pkg/apis/v1/ec2nodeclass.go `hash:"ignore"` tags, at 1d927085dd81a9df9301e613f371dac5b4d16bfe). Tagging
  the node class with the plan therefore rolls its nodes, within the NodePools' disruption budgets.
- Karpenter's RESERVED_ENIS (pkg/operator/options/options.go; Helm value settings.reservedENIs,
  charts/karpenter/values.yaml) keeps ENIs out of its max-pods figure: 1 with VPC CNI custom networking.
- Auto Mode ignores aws-node env and ENIConfigs; pods use podSubnetSelectorTerms subnets with
  podSecurityGroupSelectorTerms groups; it uses /28 prefixes already (EKS user guide, "Create a Node Class
  for Amazon EKS"). Its built-in NodeClass `default` is managed by EKS, so cidrx adds its own.
- eksctl marks a node group's identity with the label and tags `alpha.eksctl.io/nodegroup-name`,
  `alpha.eksctl.io/nodegroup-type`, `eksctl.io/v1alpha2/nodegroup-name` and
  `eksctl.cluster.k8s.io/v1alpha1/nodegroup-id` (eksctl-io/eksctl pkg/apis/eksctl.io/v1alpha5/types.go);
  EKS labels nodes `eks.amazonaws.com/nodegroup` and tags with `eks:` keys itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cidrx.errors import InvalidInput
from cidrx.model.kube import KubeSection
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.actions.auto_mode import APPLY_AUTO_NODE_CLASS
from cidrx.providers.eks.actions.karpenter import SET_DEPLOYMENT_ENV, UPDATE_EC2_NODE_CLASS
from cidrx.providers.eks.actions.launch_template import CREATE_LAUNCH_TEMPLATE_VERSION, SET_GROUP_LAUNCH_TEMPLATE
from cidrx.providers.eks.facts.cni import CniConfig, max_pods
from cidrx.providers.eks.facts.provisioners import (
    BUILTIN_AUTO_NODE_CLASS,
    karpenter_max_pods,
    node_class_subnets,
    provisioners,
    reserved_enis,
)
from cidrx.providers.eks.model import (
    AUTO_NODE_CLASS,
    EC2_NODE_CLASS,
    EksSection,
    InstanceType,
    NodeClass,
    NodeProvisioners,
)

# The actions the node-provisioner steps use (self-managed groups', then every provisioner's).
SELF_MANAGED_ACTIONS = (CREATE_LAUNCH_TEMPLATE_VERSION, SET_GROUP_LAUNCH_TEMPLATE)
PROVISIONER_ACTIONS = (UPDATE_EC2_NODE_CLASS, APPLY_AUTO_NODE_CLASS, SET_DEPLOYMENT_ENV, *SELF_MANAGED_ACTIONS)

AUTO_POD_NODE_CLASS = "cidrx-pod-subnets"  # what cidrx creates next to Auto Mode's built-in NodeClass
RESERVED_ENIS_FOR_CUSTOM_NETWORKING = "1"
IDENTITY_LABELS = ("alpha.eksctl.io/nodegroup-name", "eks.amazonaws.com/nodegroup")
IDENTITY_TAGS = (
    "alpha.eksctl.io/nodegroup-name",
    "alpha.eksctl.io/nodegroup-type",
    "eksctl.io/v1alpha2/nodegroup-name",
    "eksctl.cluster.k8s.io/v1alpha1/nodegroup-id",
)
IDENTITY_PREFIXES = ("eks:", "eks.amazonaws.com/")


def is_identity(key: str, identity: tuple[str, ...]) -> bool:
    return key in identity or key.startswith(IDENTITY_PREFIXES)


def without_identity(labels: dict[str, str], tags: dict[str, str]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """A copied node group's labels and tags without the template's identity, and what was dropped."""
    dropped = [f"label {k}={v}" for k, v in sorted(labels.items()) if is_identity(k, IDENTITY_LABELS)]
    dropped += [f"tag {k}={v}" for k, v in sorted(tags.items()) if is_identity(k, IDENTITY_TAGS)]
    kept_labels = {k: v for k, v in labels.items() if not is_identity(k, IDENTITY_LABELS)}
    kept_tags = {k: v for k, v in tags.items() if not is_identity(k, IDENTITY_TAGS)}
    return kept_labels, kept_tags, dropped


def uses_aws_cni(eks: EksSection) -> bool:
    """Whether some nodes run the VPC CNI (aws-node): all but Auto Mode's."""
    p = provisioners(eks)
    return not p.auto_mode or bool(eks.nodegroups or p.self_managed or p.classes(EC2_NODE_CLASS))


def has_provisioner(eks: EksSection) -> bool:
    p = provisioners(eks)
    return bool(eks.nodegroups or p.self_managed or p.node_classes or p.auto_mode)


def classes_in_use(p: NodeProvisioners, kind: str) -> tuple[NodeClass, ...]:
    """The node classes of `kind` a NodePool launches with (all of them when no NodePool was read)."""
    classes = p.classes(kind)
    used = tuple(c for c in classes if p.pools_of(c))
    return used if p.node_pools else classes


def node_type(eks: EksSection, kube: KubeSection) -> InstanceType | None:
    """The instance type that stands for the cluster's nodes when no managed node group is copied: the most
    common among its nodes, else the largest known."""
    types = {t.name: t for t in eks.instance_types}
    counts: dict[str, int] = {}
    for n in kube.nodes:
        if n.instance_type in types:
            counts[n.instance_type] = counts.get(n.instance_type, 0) + 1
    for g in provisioners(eks).self_managed:
        for name in g.instance_types:
            if name in types:
                counts[name] = counts.get(name, 0) + g.instances
    if counts:
        return types[max(counts, key=lambda n: (counts[n], n))]
    return max(types.values(), key=lambda t: t.ips_per_eni, default=None)


@dataclass(frozen=True)
class FollowUp:
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()
    basis: dict[str, Any] | None = None


def _node_class_types(eks: EksSection, kube: KubeSection, c: NodeClass) -> list[InstanceType]:
    p = provisioners(eks)
    pools = {pool.name for pool in p.pools_of(c)}
    types = {t.name: t for t in eks.instance_types}
    return sorted(
        {types[n.instance_type] for n in kube.nodes if n.pool in pools and n.instance_type in types},
        key=lambda t: t.name,
    )


def _roomy_node_subnets(
    eks: EksSection, c: NodeClass, zones: list[str], placement: dict[str, str | None], per_zone: int
) -> list[str] | None:
    """The node subnets a node class should launch in after the change, when its current ones cannot take the
    new nodes' own addresses in some zone (None: keep the selector as it is)."""
    by_id = {s.subnet_id: s for s in eks.subnets}
    current = [by_id[i] for i in node_class_subnets(eks, c) if i in by_id]
    roomy = {s.az for s in current if s.available_ips >= per_zone}
    if all(az in roomy for az in zones):
        return None
    keep = [s.subnet_id for s in current if s.available_ips >= per_zone]
    add = [placement.get(az) or f"${{create-subnet-{az}.subnet_id}}" for az in zones if az not in roomy]
    return sorted(set(keep)) + add


def karpenter_custom_networking(
    eks: EksSection,
    kube: KubeSection,
    zones: list[str],
    placement: dict[str, str | None],
    add_nodes: int,
    after: tuple[str, ...],
) -> FollowUp:
    """RESERVED_ENIS=1 on the controller, then each EC2NodeClass in use tagged with the plan (its nodes drift
    and are replaced, joining with ENIConfigs), moved to subnets with room for node addresses if needed."""
    p = provisioners(eks)
    classes = classes_in_use(p, EC2_NODE_CLASS)
    if not classes:
        return FollowUp()
    steps: list[Step] = []
    notes: list[str] = []
    deps = list(after)
    if p.karpenter is not None and str(p.karpenter.reserved_enis) != RESERVED_ENIS_FOR_CUSTOM_NETWORKING:
        k = p.karpenter
        steps.append(
            Step(
                id="karpenter-reserved-enis",
                action=SET_DEPLOYMENT_ENV.name,
                params={
                    "namespace": k.namespace,
                    "name": k.name,
                    "container": k.container,
                    "env": {"RESERVED_ENIS": RESERVED_ENIS_FOR_CUSTOM_NETWORKING},
                },
                description=f"set RESERVED_ENIS=1 on Deployment {k.namespace}/{k.name} so Karpenter leaves the "
                "primary ENI out of max pods",
                depends_on=tuple(after),
                permissions=SET_DEPLOYMENT_ENV.permissions,
            )
        )
        deps.append("karpenter-reserved-enis")
        notes.append(
            f'Karpenter is installed with Helm: set settings.reservedENIs="1" in its values too, or the next '
            f"helm upgrade puts RESERVED_ENIS={k.reserved_enis or 0} back."
        )
    elif p.karpenter is None:
        notes.append(
            "The Karpenter controller Deployment was not found in kube-system or karpenter: set RESERVED_ENIS=1 "
            "(Helm value settings.reservedENIs) on it by hand before its nodes are replaced."
        )
    per_zone = math.ceil(add_nodes / max(1, len(zones))) + 1
    types = {t.name: t for t in eks.instance_types}
    for c in classes:
        params: dict[str, Any] = {"name": c.name}
        subnets = _roomy_node_subnets(eks, c, zones, placement, per_zone)
        if subnets is not None:
            params["subnet_ids"] = subnets
        node_types = _node_class_types(eks, kube, c) or [t for t in types.values()]
        if c.max_pods and node_types:
            cn = min(karpenter_max_pods(t, 1) for t in node_types)
            if c.max_pods > cn:
                params["max_pods"] = cn
        what = "tag it with the plan so Karpenter replaces its nodes (drift)"
        if "subnet_ids" in params:
            what += ", and launch nodes in subnets with room for their own addresses"
        if "max_pods" in params:
            what += f", and lower kubelet.maxPods from {c.max_pods} to {params['max_pods']}"
        steps.append(
            Step(
                id=f"ec2nodeclass-{c.name}",
                action=UPDATE_EC2_NODE_CLASS.name,
                params=params,
                description=f"update EC2NodeClass {c.name}: {what}",
                depends_on=tuple(deps),
                permissions=UPDATE_EC2_NODE_CLASS.permissions,
            )
        )
        pools = ", ".join(pool.name for pool in p.pools_of(c)) or "its NodePools"
        notes.append(
            f"Karpenter replaces the nodes of EC2NodeClass {c.name} (NodePools {pools}) because the plan tags it: "
            "drift, within each NodePool's disruption budget; replacements use the ENIConfigs. Watch "
            "`kubectl get nodeclaims`; cidrx does not delete nodes."
        )
    basis = {
        "ec2nodeclasses": {c.name: c.resource_version for c in classes},
        "karpenter": f"{p.karpenter.namespace}/{p.karpenter.name}" if p.karpenter else "",
    }
    return FollowUp(tuple(steps), tuple(notes), basis)


def auto_mode_custom_networking(
    eks: EksSection, zones: list[str], placement: dict[str, str | None], add_nodes: int, after: tuple[str, ...]
) -> FollowUp:
    """Point Auto Mode's pods at the new subnets: podSubnetSelectorTerms and podSecurityGroupSelectorTerms of
    each NodeClass in use (its own NodeClass next to the built-in `default`, which EKS manages), and its nodes
    at subnets with room for their own addresses when the current ones are full."""
    p = provisioners(eks)
    per_zone = math.ceil(add_nodes / max(1, len(zones))) + 1
    if not p.auto_mode:
        return FollowUp()
    classes = classes_in_use(p, AUTO_NODE_CLASS)
    pod_subnets = [f"${{create-subnet-{az}.subnet_id}}" for az in zones]
    groups = [eks.cluster.cluster_security_group_id] if eks.cluster.cluster_security_group_id else []
    groups = groups or list(eks.cluster.security_group_ids)
    if not groups:
        raise InvalidInput(
            f"cluster {eks.cluster.name} reports no security group for Auto Mode pods; pass the cluster security "
            "group in podSecurityGroupSelectorTerms by hand"
        )
    steps: list[Step] = []
    notes: list[str] = []
    targets = [c for c in classes if c.name != BUILTIN_AUTO_NODE_CLASS]
    builtin = next((c for c in classes if c.name == BUILTIN_AUTO_NODE_CLASS), None)
    for c in targets:
        params: dict[str, Any] = {"name": c.name, "pod_subnets": pod_subnets, "pod_security_groups": groups}
        moved = _roomy_node_subnets(eks, c, zones, placement, per_zone)
        if moved is not None:
            params["subnets"] = moved
        steps.append(
            Step(
                id=f"auto-nodeclass-{c.name}",
                action=APPLY_AUTO_NODE_CLASS.name,
                params=params,
                description=f"set podSubnetSelectorTerms (the new subnets) and podSecurityGroupSelectorTerms on "
                f"Auto Mode NodeClass {c.name}" + (", and node subnets with room" if moved is not None else ""),
                depends_on=after,
                permissions=APPLY_AUTO_NODE_CLASS.permissions,
            )
        )
    if builtin is not None or not targets:
        terms = builtin.subnet_terms if builtin is not None else ()
        node_subnets = [t.id for t in terms if t.id] or sorted(node_class_subnets(eks, builtin) if builtin else ())
        if builtin is not None:
            node_subnets = _roomy_node_subnets(eks, builtin, zones, placement, per_zone) or node_subnets
        steps.append(
            Step(
                id=f"auto-nodeclass-{AUTO_POD_NODE_CLASS}",
                action=APPLY_AUTO_NODE_CLASS.name,
                params={
                    "name": AUTO_POD_NODE_CLASS,
                    "create": True,
                    "role": builtin.role if builtin is not None else "",
                    "subnets": node_subnets,
                    "security_groups": groups,
                    "pod_subnets": pod_subnets,
                    "pod_security_groups": groups,
                },
                description=f"create Auto Mode NodeClass {AUTO_POD_NODE_CLASS}: nodes in subnets with room for "
                "their own addresses, pods in the new subnets",
                depends_on=after,
                permissions=APPLY_AUTO_NODE_CLASS.permissions,
            )
        )
        notes.append(
            f"EKS manages the built-in NodeClass {BUILTIN_AUTO_NODE_CLASS}, so the plan creates "
            f"{AUTO_POD_NODE_CLASS}. Point a NodePool at it (spec.template.spec.nodeClassRef: group "
            f"eks.amazonaws.com, kind NodeClass, name {AUTO_POD_NODE_CLASS}); its node role needs an EC2 access "
            "entry unless it is the role of the built-in NodeClass."
        )
    notes.append(
        "EKS Auto Mode ignores aws-node env and ENIConfigs: its pods take addresses from the NodeClass's "
        "podSubnetSelectorTerms. Only nodes launched after the change use them; Auto Mode replaces drifted "
        "nodes within the NodePools' disruption budgets, or delete their NodeClaims to roll them sooner."
    )
    basis = {"auto_nodeclasses": {c.name: c.resource_version for c in classes}}
    return FollowUp(tuple(steps), tuple(notes), basis)


def self_managed(eks: EksSection, cni: CniConfig, after: tuple[str, ...], *, prefix_delegation: bool) -> FollowUp:
    """Each self-managed group's new launch template version (when its user data sets --max-pods in plain
    text, cidrx writes the new figure into a copy of it) and how to roll the group."""
    steps: list[Step] = []
    notes = []
    types = {t.name: t for t in eks.instance_types}
    for g in provisioners(eks).self_managed:
        t = max((types[n] for n in g.instance_types if n in types), key=lambda x: x.ips_per_eni, default=None)
        limit = max_pods(t, cni) if t else None
        lt = g.launch_template
        template = f"launch template {lt.get('name') or lt.get('id')}" if lt else "its launch configuration"
        roll = f"aws autoscaling start-instance-refresh --auto-scaling-group-name {g.name}"
        current = g.max_pods or 0
        change = limit is not None and current != limit and (prefix_delegation or current > limit)
        if change and lt.get("id") and g.launch_template_version and g.max_pods:
            step_id = f"launch-template-{g.name}"
            steps.append(
                Step(
                    id=step_id,
                    action=CREATE_LAUNCH_TEMPLATE_VERSION.name,
                    params={
                        "template_id": lt["id"],
                        "source_version": g.launch_template_version,
                        "max_pods_from": g.max_pods,
                        "max_pods_to": limit,
                    },
                    description=f"create a version of {template} (from v{g.launch_template_version}) with "
                    f"--max-pods={limit} instead of {g.max_pods}, for group {g.name}",
                    depends_on=after,
                    permissions=CREATE_LAUNCH_TEMPLATE_VERSION.permissions,
                )
            )
            if lt.get("version") != "$Latest":
                steps.append(
                    Step(
                        id=f"group-launch-template-{g.name}",
                        action=SET_GROUP_LAUNCH_TEMPLATE.name,
                        params={"group": g.name, "template_id": lt["id"], "version": f"${{{step_id}.version}}"},
                        description=f"point Auto Scaling group {g.name} at the new launch template version",
                        depends_on=(step_id,),
                        permissions=SET_GROUP_LAUNCH_TEMPLATE.permissions,
                    )
                )
            notes.append(
                f"Self-managed group {g.name}: new instances launch with the new {template} version; replace the "
                f"running ones with `{roll}` (cidrx does not drain nodes)."
            )
            continue
        if g.max_pods and limit is not None and (g.max_pods > limit or prefix_delegation):
            fix = f"Create a new version of {template} with --max-pods={limit} (it has {g.max_pods})"
            fix += ", point the group at it"
        elif limit is not None:
            fix = f"Make sure its nodes' kubelet --max-pods is {limit} (in the user data of {template})"
        else:
            fix = f"Set its nodes' kubelet --max-pods in {template}"
        notes.append(
            f"Self-managed group {g.name}: only replaced nodes pick up the change. {fix}, then roll it: {roll}."
        )
    basis = {
        "self_managed": {
            g.name: {"launch_template_version": g.launch_template_version, "max_pods": g.max_pods}
            for g in provisioners(eks).self_managed
        }
    }
    return FollowUp(tuple(steps), tuple(notes), basis if provisioners(eks).self_managed else None)


def karpenter_prefix_delegation(eks: EksSection, kube: KubeSection, cni: CniConfig) -> FollowUp:
    """Karpenter does not know about prefix delegation (its max pods is the ENI formula): give each
    EC2NodeClass in use kubelet.maxPods for the smallest of its instance types, and roll its nodes."""
    p = provisioners(eks)
    steps: list[Step] = []
    notes: list[str] = []
    for c in classes_in_use(p, EC2_NODE_CLASS):
        node_types = _node_class_types(eks, kube, c)
        if not node_types:
            notes.append(
                f"EC2NodeClass {c.name}: no node of it runs now, so cidrx cannot tell its instance types; set "
                "kubelet.maxPods for prefix delegation by hand."
            )
            continue
        limit = min(max_pods(t, cni) for t in node_types)
        steps.append(
            Step(
                id=f"ec2nodeclass-{c.name}",
                action=UPDATE_EC2_NODE_CLASS.name,
                params={"name": c.name, "max_pods": limit},
                description=f"set kubelet.maxPods={limit} on EC2NodeClass {c.name} (prefix delegation, "
                f"{', '.join(t.name for t in node_types)}) and tag it so Karpenter replaces its nodes",
                depends_on=("enable-prefix-delegation",),
                permissions=UPDATE_EC2_NODE_CLASS.permissions,
            )
        )
        notes.append(
            f"Karpenter replaces the nodes of EC2NodeClass {c.name} (drift) within the NodePools' disruption "
            f"budgets; with RESERVED_ENIS={reserved_enis(p)} its own figure would stay at the ENI formula."
        )
    basis = {"ec2nodeclasses": {c.name: c.resource_version for c in classes_in_use(p, EC2_NODE_CLASS)}}
    return FollowUp(tuple(steps), tuple(notes), basis)


def check_not_auto_mode_only(eks: EksSection, strategy: str) -> None:
    if not uses_aws_cni(eks):
        raise InvalidInput(
            f"cluster {eks.cluster.name} runs only EKS Auto Mode nodes, which ignore aws-node env: --strategy "
            f"{strategy} changes nothing there (Auto Mode already assigns /28 prefixes). Use --strategy "
            "custom-networking (NodeClass podSubnetSelectorTerms)"
        )


def provisioner_drift(plan_steps: tuple[Step, ...], basis: dict[str, Any], eks: EksSection, mine: str) -> list[str]:
    """What the provisioner steps rely on that changed since the plan (their own changes are progress)."""
    p = provisioners(eks)
    problems: list[str] = []
    have = {(c.kind, c.name): c for c in p.node_classes}
    for name in basis.get("ec2nodeclasses") or {}:
        if (EC2_NODE_CLASS, name) not in have:
            problems.append(f"EC2NodeClass {name} no longer exists")
    for name in basis.get("auto_nodeclasses") or {}:
        if (AUTO_NODE_CLASS, name) not in have:
            problems.append(f"Auto Mode NodeClass {name} no longer exists")
    for step in plan_steps:
        if step.action == SET_DEPLOYMENT_ENV.name:
            k = p.karpenter
            if k is None or (k.namespace, k.name) != (step.params["namespace"], step.params["name"]):
                problems.append(f"Deployment {step.params['namespace']}/{step.params['name']} (Karpenter) is gone")
        if step.action == APPLY_AUTO_NODE_CLASS.name and step.params.get("create"):
            other = have.get((AUTO_NODE_CLASS, step.params["name"]))
            if other is not None and other.labels.get(DIGEST_TAG) != mine:
                problems.append(f"a NodeClass named {step.params['name']} was created by someone else")
    groups = {g.name: g for g in p.self_managed}
    for name, was in (basis.get("self_managed") or {}).items():
        g = groups.get(name)
        if g is None:
            problems.append(f"self-managed group {name} no longer exists")
            continue
        planned = [s.params["max_pods_to"] for s in plan_steps if s.id == f"launch-template-{name}"]
        if g.max_pods != was["max_pods"] and g.max_pods not in planned:  # our own new version is progress
            problems.append(f"the launch template of {name} now sets max pods {g.max_pods}, not {was['max_pods']}")
    if basis.get("auto_mode") is not None and bool(basis["auto_mode"]) != p.auto_mode:
        problems.append(f"EKS Auto Mode was turned {'on' if p.auto_mode else 'off'}")
    return problems
