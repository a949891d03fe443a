"""Compact records of Calico's IPAM state (Kubernetes datastore: `crd.projectcalico.org/v1`, or
`projectcalico.org/v3` where only Calico's v3 CRDs are installed).

Why it exists: a node that holds no block borrows addresses from another node's block, and that node
blackholes them (docs/cloud-facts.md, "Incidents the examples reproduce"). Seeing it needs the pools, every
block's allocations and affinity, and the IPAM config; these frozen records keep only those fields so a
4,096-block cluster stays small in a snapshot.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from cidrx.model.validation import IpCidr, first_problem, repeated

DEFAULT_BLOCK_SIZE = 26  # IPPool spec.blockSize default for IPv4
# Attribute secondary.type values Calico writes for the node's own tunnel/WireGuard addresses: these have
# no pod behind them and are never leaks (libcalico-go ipam "AttributeType*").
TUNNEL_TYPES = frozenset(
    {
        "ipipTunnelAddress",
        "vxlanTunnelAddress",
        "vxlanV6TunnelAddress",
        "wireguardTunnelAddress",
        "wireguardV6TunnelAddress",
    }
)
# kube-controllers' LoadBalancer controller writes secondary {service, namespace, type: <Service type>}
# (projectcalico/calico kube-controllers/pkg/controllers/loadbalancer/loadbalancer_controller.go assignIP,
# commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2): a Service's address, no pod behind it.
LOAD_BALANCER_TYPE = "LoadBalancer"
# Pool uses (IPPool spec.allowedUses; absent means Workload and Tunnel) and assignment modes
# (spec.assignmentMode, default Automatic), from libcalico-go/config/crd/crd.projectcalico.org_ippools.yaml.
USE_WORKLOAD = "Workload"
DEFAULT_ALLOWED_USES = ("Workload", "Tunnel")
V1_API = "crd.projectcalico.org/v1"
V3_API = "projectcalico.org/v3"


@dataclass(frozen=True)
class IPPool:
    name: str
    cidr: IpCidr
    block_size: int = DEFAULT_BLOCK_SIZE
    disabled: bool = False
    node_selector: str = ""  # "" and "all()" select every node
    ipip_mode: str = ""
    vxlan_mode: str = ""
    nat_outgoing: bool = False
    plan_label: str = ""  # metadata.labels["cidrx.io/plan"] of pools cidrx created
    # None: upstream's defaults (allowedUses Workload+Tunnel, assignmentMode Automatic); kept None when
    # absent so that snapshots taken before these fields existed keep their fingerprints.
    allowed_uses: tuple[str, ...] | None = None
    assignment_mode: str | None = None

    @property
    def uses(self) -> tuple[str, ...]:
        return DEFAULT_ALLOWED_USES if self.allowed_uses is None else self.allowed_uses

    @property
    def is_workload_capacity(self) -> bool:
        """True when Calico hands this pool's blocks to pods automatically: enabled, allowed for
        Workload, and not assignmentMode Manual (libcalico-go/lib/ipam/pools.go selects pools so)."""
        return not self.disabled and USE_WORKLOAD in self.uses and (self.assignment_mode or "Automatic") != "Manual"

    def invariant_problem(self) -> str | None:
        """Blocks are carved out of the pool: their prefix lies between the pool's and the address length."""
        net = ipaddress.ip_network(self.cidr)
        if not net.prefixlen <= self.block_size <= net.max_prefixlen:
            sizes = f"/{net.prefixlen} to /{net.max_prefixlen}"
            return f"has block_size {self.block_size}; blocks of a {self.cidr} pool are {sizes}"
        return None


@dataclass(frozen=True)
class AllocationAttribute:
    """One entry of IPAMBlock spec.attributes: who holds the addresses whose allocation points here."""

    handle_id: str | None = None
    namespace: str = ""
    pod: str = ""
    node: str = ""
    type: str = ""
    # `alternateOwnerAttrs` (the other pod of a KubeVirt live migration, libcalico-go/lib/ipam/vmipam),
    # as "namespace/pod"; `releasedAt` of the cooldown entry a release points the ordinal at; the Service
    # of a LoadBalancer address; `vmi-name` of a KubeVirt VM's address. None when absent.
    alternate: str | None = None
    released_at: str | None = None
    service: str | None = None
    vmi_name: str | None = None

    @property
    def is_tunnel(self) -> bool:
        return self.type in TUNNEL_TYPES

    @property
    def is_load_balancer(self) -> bool:
        return self.type == LOAD_BALANCER_TYPE or bool(self.service)

    @property
    def in_cooldown(self) -> bool:
        return self.released_at is not None

    @property
    def pod_ref(self) -> str | None:
        """ "namespace/pod" when a pod holds the address (tunnel addresses have none)."""
        if self.is_tunnel or self.in_cooldown or not self.pod or not self.namespace:
            return None
        return f"{self.namespace}/{self.pod}"

    @property
    def pod_refs(self) -> tuple[str, ...]:
        """Every pod this allocation names: the active owner (`secondary`) and the alternate owner."""
        refs = [self.pod_ref] if self.pod_ref else []
        if self.alternate and not self.is_tunnel and not self.in_cooldown:
            refs.append(self.alternate)
        return tuple(refs)


@dataclass(frozen=True)
class IPAMBlock:
    name: str
    cidr: IpCidr
    affinity: str | None = None  # "host:<node>"
    # allocations[ordinal] indexes attributes (None: free); ordinal = offset from the block's first address.
    allocations: tuple[int | None, ...] = ()
    unallocated: tuple[int, ...] = ()
    attributes: tuple[AllocationAttribute, ...] = ()
    strict_affinity: bool = False
    deleted: bool = False
    resource_version: str = ""
    affinity_claim_time: str | None = None  # spec.affinityClaimTime (RFC 3339), when the node claimed it
    sequence_number: int | None = None

    @property
    def host(self) -> str | None:
        """The node whose block this is (affinity "host:<node>"), or None."""
        if self.affinity and self.affinity.startswith("host:"):
            return self.affinity[len("host:") :]
        return None

    @property
    def used(self) -> int:
        return sum(1 for a in self.allocations if a is not None)

    def invariant_problem(self) -> str | None:
        """Calico keeps one allocation slot per address of the block: a slot past its end addresses nothing
        (checked when a snapshot is loaded, see cidrx.model.validation)."""
        size = ipaddress.ip_network(self.cidr).num_addresses
        if len(self.allocations) > size:
            return f"has {len(self.allocations)} allocation slots, but the {self.cidr} block has {size} addresses"
        return None

    def attribute(self, ordinal: int) -> AllocationAttribute | None:
        index = self.allocations[ordinal] if 0 <= ordinal < len(self.allocations) else None
        if index is None or not 0 <= index < len(self.attributes):
            return None
        return self.attributes[index]


@dataclass(frozen=True, slots=True)
class BlockAffinity:
    name: str
    node: str
    cidr: IpCidr
    state: str = "confirmed"  # confirmed | pending | pendingDeletion
    deleted: bool = False
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class IPAMHandle:
    name: str
    handle_id: str
    blocks: dict[IpCidr, int] = field(default_factory=dict)  # block CIDR -> addresses held
    resource_version: str = ""


@dataclass(frozen=True)
class IPAMConfig:
    """IPAMConfig `default`; absent means Calico's defaults (borrowing allowed, no block limit)."""

    strict_affinity: bool = False
    max_blocks_per_host: int = 0  # 0: unlimited
    auto_allocate_blocks: bool = True
    ip_cooldown_seconds: int | None = None  # spec.ipCooldownSeconds; absent means 0


@dataclass(frozen=True)
class CalicoSection:
    pools: tuple[IPPool, ...] = ()
    blocks: tuple[IPAMBlock, ...] = ()
    affinities: tuple[BlockAffinity, ...] = ()
    handles: tuple[IPAMHandle, ...] = ()
    config: IPAMConfig | None = None
    # The API the objects were read from and are written back to; None: crd.projectcalico.org/v1.
    api_version: str | None = None

    @property
    def api(self) -> str:
        return self.api_version or V1_API

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("pools", self.pools, lambda p: p.name, "IPPool"),
            repeated("blocks", self.blocks, lambda b: b.name, "IPAMBlock"),
            repeated("affinities", self.affinities, lambda a: a.name, "BlockAffinity"),
            repeated("handles", self.handles, lambda h: h.name, "IPAMHandle"),
        )
