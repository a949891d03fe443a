"""The in-cluster part of a snapshot: compact records of nodes, pods, events and CNI configuration.

Only the fields analysis reads are kept, so a 2,000-node, 60,000-pod cluster stays small in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cidrx.model.validation import IpAddr, IpAddrOrEmpty, IpCidr, first_problem, repeated

if TYPE_CHECKING:
    # Named as strings only; cidrx.registry.bind_sections resolves them from the registered IPAMs when a
    # snapshot is decoded, so the client layer imports no IPAM.
    from cidrx.ipam.calico.model import CalicoSection
    from cidrx.ipam.nodeipam.model import NodeIpamConfig
    from cidrx.ipam.whereabouts.model import WhereaboutsSection


@dataclass(frozen=True)
class KubeNode:
    name: str
    zone: str
    instance_type: str
    created: str
    ready: bool = True
    pod_cidrs: tuple[IpCidr, ...] = ()
    internal_ip: IpAddrOrEmpty = ""
    allocatable_pods: int | None = None
    pool: str = ""  # node group / node pool label when present


@dataclass(frozen=True)
class KubePod:
    """A pod that is waiting: Pending, or Running-phase-less ContainerCreating."""

    namespace: str
    name: str
    phase: str
    node: str
    reason: str  # e.g. ContainerCreating, Unschedulable
    created: str


@dataclass(frozen=True)
class KubeEvent:
    namespace: str
    kind: str
    name: str
    reason: str
    type: str
    message: str
    count: int
    last_seen: str
    source: str = ""


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str


@dataclass(frozen=True)
class WorkloadEnv:
    """The env of one container of a DaemonSet, e.g. aws-node's aws-node container."""

    namespace: str
    name: str
    container: str
    env: tuple[EnvVar, ...]
    resource_version: str

    def get(self, key: str, default: str | None = None) -> str | None:
        for var in self.env:
            if var.name == key:
                return var.value
        return default


@dataclass(frozen=True)
class EniConfig:
    name: str
    subnet: str
    security_groups: tuple[str, ...]
    created: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PodState:
    """A pod that an IPAM record names (a Whereabouts podref, a Calico allocation's namespace/pod), or an
    unfinished pod that reports an address inside an IPAM-managed range: the evidence for deciding whether
    a record is stale and whether its address is live. Only such pods are kept, not every pod."""

    namespace: str
    name: str
    phase: str  # Pending, Running, ... ("" when the API gave none)
    node: str
    # status.podIPs plus every address in the k8s.v1.cni.cncf.io/network-status annotation (Multus).
    ips: tuple[IpAddr, ...] = ()
    # True when the network-status annotation was present (so a missing IP there means something).
    has_network_status: bool = False
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class KubeSection:
    available: bool
    reason: str = ""  # why not available (e.g. --no-kube, unreachable)
    context: str = ""
    api_groups: tuple[str, ...] = ()
    nodes: tuple[KubeNode, ...] = ()
    pods_per_node: dict[str, int] = field(default_factory=dict)  # pod-network pods, not hostNetwork
    # hostNetwork pods count against a node's max pods but take no pod address (GKE still reserves the
    # per-node block for them), keyed by node; only non-zero entries.
    host_network_pods_per_node: dict[str, int] = field(default_factory=dict)
    waiting_pods: tuple[KubePod, ...] = ()
    events: tuple[KubeEvent, ...] = ()
    aws_node: WorkloadEnv | None = None
    eniconfigs: tuple[EniConfig, ...] = ()
    # Pods named by IPAM records, and every unfinished pod reporting an address inside an IPAM-managed range
    # (see PodState, cidrx.ipam.liveness), sorted by namespace/name; a named pod missing here is gone.
    ipam_pods: tuple[PodState, ...] = ()
    calico: CalicoSection | None = None
    whereabouts: WhereaboutsSection | None = None
    node_ipam: NodeIpamConfig | None = None

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("nodes", self.nodes, lambda n: n.name, "node"),
            repeated("ipam_pods", self.ipam_pods, lambda p: p.key, "pod"),
            repeated("eniconfigs", self.eniconfigs, lambda e: e.name, "ENIConfig"),
        )
