"""What brings nodes into an EKS cluster besides managed node groups, as the snapshot keeps it.

Why it exists: an expansion plan must bring new nodes in through whatever the cluster really uses
(self-managed Auto Scaling groups, Karpenter, EKS Auto Mode), and capacity must count their nodes. Kept in
its own module (the snapshot's EksSection holds one `NodeProvisioners`, None when the cluster has none of
them) so that snapshots of clusters with managed node groups only are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cidrx.model.validation import first_problem, repeated

EC2_NODE_CLASS = "EC2NodeClass"  # karpenter.k8s.aws/v1 (Karpenter on EKS)
AUTO_NODE_CLASS = "NodeClass"  # eks.amazonaws.com/v1 (EKS Auto Mode)


@dataclass(frozen=True)
class SelectorTerm:
    """One term of a subnet/security group selector: by id, by name, or by tags (ANDed within a term)."""

    id: str = ""
    name: str = ""
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeClass:
    """A Karpenter EC2NodeClass or an EKS Auto Mode NodeClass: where its nodes (and, for Auto Mode, their
    pods) take addresses from."""

    kind: str  # EC2_NODE_CLASS | AUTO_NODE_CLASS
    name: str
    resource_version: str = ""
    subnet_terms: tuple[SelectorTerm, ...] = ()
    security_group_terms: tuple[SelectorTerm, ...] = ()
    pod_subnet_terms: tuple[SelectorTerm, ...] = ()  # Auto Mode only
    pod_security_group_terms: tuple[SelectorTerm, ...] = ()  # Auto Mode only
    subnets: tuple[str, ...] = ()  # status.subnets[].id: what the selector resolved to
    max_pods: int | None = None  # spec.kubelet.maxPods (EC2NodeClass)
    tags: dict[str, str] = field(default_factory=dict)  # spec.tags (EC2 tags of its instances)
    labels: dict[str, str] = field(default_factory=dict)
    role: str = ""  # spec.role: the IAM role of its nodes


@dataclass(frozen=True)
class NodePool:
    """A `karpenter.sh/v1` NodePool (Karpenter's, or Auto Mode's own) and the node class it launches with."""

    name: str
    node_class: str
    node_class_kind: str


@dataclass(frozen=True)
class KarpenterController:
    """The Karpenter controller Deployment and its RESERVED_ENIS setting (None: unset, Karpenter uses 0)."""

    namespace: str
    name: str
    container: str
    reserved_enis: int | None = None


@dataclass(frozen=True)
class SelfManagedGroup:
    """An Auto Scaling group (not a managed node group's) whose instances join the cluster."""

    name: str
    subnet_ids: tuple[str, ...]
    instance_types: tuple[str, ...]
    min_size: int
    max_size: int
    desired_size: int
    instances: int
    launch_template: dict[str, str] = field(default_factory=dict)  # id, name, version as the group names it
    launch_template_version: int | None = None  # the version number it resolves to
    max_pods: int | None = None  # --max-pods / maxPods read from the launch template's user data, if plain
    tags: dict[str, str] = field(default_factory=dict)
    nodes: tuple[str, ...] = ()  # the cluster nodes its in-service instances are


@dataclass(frozen=True)
class NodeProvisioners:
    auto_mode: bool = False  # the cluster's computeConfig.enabled
    self_managed: tuple[SelfManagedGroup, ...] = ()
    node_classes: tuple[NodeClass, ...] = ()
    node_pools: tuple[NodePool, ...] = ()
    karpenter: KarpenterController | None = None

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("self_managed", self.self_managed, lambda g: g.name, "Auto Scaling group"),
            repeated("node_classes", self.node_classes, lambda c: (c.kind, c.name), "node class"),
            repeated("node_pools", self.node_pools, lambda p: p.name, "NodePool"),
        )

    def classes(self, kind: str) -> tuple[NodeClass, ...]:
        return tuple(c for c in self.node_classes if c.kind == kind)

    def pools_of(self, node_class: NodeClass) -> tuple[NodePool, ...]:
        return tuple(
            p for p in self.node_pools if p.node_class == node_class.name and p.node_class_kind == node_class.kind
        )
