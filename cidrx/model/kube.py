"""The in-cluster part of a snapshot: compact records of nodes, pods and events, and the ConfigMaps a provider reads.

Only the fields analysis reads are kept, so a 2,000-node, 60,000-pod cluster stays small in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cidrx import registry
from cidrx.model.validation import IpAddr, IpAddrOrEmpty, IpCidr, first_problem, repeated


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
    # The node pool its nodeSelector pins it to (a provider's `pod_pool_labels`). None (not "") when none,
    # so that snapshots taken before this field keep their fingerprints (the codec prunes None, not "").
    node_pool: str | None = None


@dataclass(frozen=True, slots=True)
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
    """The env of one container of a DaemonSet or Deployment (e.g. a CNI's agent), with the resourceVersion
    a guarded write needs."""

    namespace: str
    name: str
    container: str
    env: tuple[EnvVar, ...]
    resource_version: str
    image: str = ""  # the container's image (its tag names the version, e.g. amazon-k8s-cni:v1.18.1)

    def get(self, key: str, default: str | None = None) -> str | None:
        for var in self.env:
            if var.name == key:
                return var.value
        return default


@dataclass(frozen=True, slots=True)
class PodState:
    """A pod that an IPAM record names (an allocation's pod reference), or an
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
class ConfigMapData:
    """A ConfigMap a provider's plans read (its `kube_configmaps`), with the resourceVersion a
    guarded write needs."""

    namespace: str
    name: str
    data: dict[str, str] = field(default_factory=dict)
    resource_version: str = ""


@dataclass(frozen=True)
class KubeSection:
    """The cluster as every provider reads it. The plugins add their own fields (a provider's `kube_fields`,
    each IPAM's section under its `field`): the class `KubeSection(...)` really makes is composed from the
    declarations (`cidrx.registry.kube_section_type`), so this layer names no plugin and the JSON keys stay
    the plugins' names."""

    available: bool
    reason: str = ""  # why not available (e.g. --no-kube, unreachable)
    context: str = ""
    api_groups: tuple[str, ...] = ()
    nodes: tuple[KubeNode, ...] = ()
    pods_per_node: dict[str, int] = field(default_factory=dict)  # pod-network pods, not hostNetwork
    # hostNetwork pods count against a node's max pods but take no pod address (a provider may still reserve
    # per-node address space for them), keyed by node; only non-zero entries.
    host_network_pods_per_node: dict[str, int] = field(default_factory=dict)
    waiting_pods: tuple[KubePod, ...] = ()
    events: tuple[KubeEvent, ...] = ()
    # Pods named by IPAM records, and every unfinished pod reporting an address inside an IPAM-managed range
    # (see PodState, cidrx.ipam.liveness), sorted by namespace/name; a named pod missing here is gone.
    ipam_pods: tuple[PodState, ...] = ()
    # The ConfigMaps the provider names (ProviderSpec.kube_configmaps) that exist; None: not read.
    config_maps: tuple[ConfigMapData, ...] | None = None

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...  # a plugin's field, by its name

    def __new__(cls, *args: Any, **kwargs: Any) -> KubeSection:
        # `KubeSection(...)` makes the composed class, which has the plugins' fields.
        real = registry.kube_section_type() if cls is KubeSection else cls
        return super().__new__(real)  # type: ignore[no-any-return]

    def config_map(self, namespace: str, name: str) -> ConfigMapData | None:
        return next((c for c in self.config_maps or () if (c.namespace, c.name) == (namespace, name)), None)

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("nodes", self.nodes, lambda n: n.name, "node"),
            repeated("ipam_pods", self.ipam_pods, lambda p: p.key, "pod"),
        )


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time as Kubernetes and the clouds write it ("2024-05-01T10:00:00Z"), in UTC when it names no
    zone; None when absent or unreadable."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def first_node_created(kube: KubeSection, pool: str) -> str:
    """When the first node of node pool `pool` still in the cluster was created (its Node's creationTimestamp, as
    written), "" when none is known: the earliest moment a snapshot proves the pool existed."""
    times = [(t, n.created) for n in kube.nodes if n.pool == pool and (t := parse_time(n.created)) is not None]
    return min(times)[1] if times else ""
