"""Where Karpenter launches nodes, zone by zone, and whether that subnet can take one: the facts behind the
EKS-KARPENTER-SUBNET-FULL finding and the `karpenter-subnets` strategy. Pure.

Upstream behaviour relied on (aws/karpenter-provider-aws at 1d927085dd81a9df9301e613f371dac5b4d16bfe):
- pkg/apis/v1/ec2nodeclass.go: subnetSelectorTerms are ORed, the fields of one term ANDed; `id` cannot be
  combined with `tags`; at most 30 terms. The terms are `hash:"ignore"`: changing them is not NodeClassDrift.
- pkg/providers/subnet/subnet.go ZonalSubnetsForLaunch: per zone Karpenter launches into the resolved subnet
  (status.subnets) with the most available addresses, whatever that count is: a zone whose selected subnets
  are all full still gets nodes, and their pods fail with "failed to assign an IP address"
  (aws/karpenter-provider-aws#5234).
- pkg/cloudprovider/drift.go isSubnetDrifted: a node whose subnet is no longer in status.subnets is drifted
  (SubnetDrift), so narrowing the selection replaces the nodes in the subnets left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from cidrx.model.kube import KubeSection
from cidrx.providers.eks.facts.cni import CniConfig, node_ips_for_new_node
from cidrx.providers.eks.facts.provisioners import node_class_subnets, provisioners
from cidrx.providers.eks.model import EC2_NODE_CLASS, EksSection, InstanceType, NodeClass, Subnet


@dataclass(frozen=True)
class ZonePlacement:
    """One zone of one EC2NodeClass: its selected subnets that cannot take one more node (`full`), those that
    can (`roomy`), and the cluster's own subnets there it does not select that can (`selectable`)."""

    zone: str
    need: int  # addresses one more node of this class takes from its subnet
    full: tuple[Subnet, ...]
    roomy: tuple[Subnet, ...]
    selectable: tuple[Subnet, ...]

    @property
    def stuck(self) -> bool:
        """Karpenter launches into a full subnet here: no selected subnet of the zone has room."""
        return bool(self.full) and not self.roomy


@dataclass(frozen=True)
class ClassPlacement:
    node_class: NodeClass
    zones: tuple[ZonePlacement, ...]  # only zones with a full subnet and somewhere else to go
    keep: tuple[str, ...]  # the selection without the full subnets, plus room where the zone had none
    nodes: tuple[str, ...]  # nodes of the NodePools that use this class
    nodes_leaving: tuple[str, ...]  # those in subnets the narrowed selection leaves out (SubnetDrift)


def _node_type(eks: EksSection, kube: KubeSection, names: set[str]) -> InstanceType | None:
    types = {t.name: t for t in eks.instance_types}
    mine = [types[n.instance_type] for n in kube.nodes if n.name in names and n.instance_type in types]
    return max(mine or list(types.values()), key=lambda t: t.ips_per_eni, default=None)


def _subnet_of(ip: str, subnets: list[Subnet]) -> str | None:
    try:
        address = IPv4Address(ip)
    except ValueError:
        return None
    return next((s.subnet_id for s in subnets if address in IPv4Network(s.cidr, strict=False)), None)


def class_nodes(eks: EksSection, kube: KubeSection, c: NodeClass) -> tuple[str, ...]:
    pools = {p.name for p in provisioners(eks).node_pools if (p.node_class_kind, p.node_class) == (c.kind, c.name)}
    return tuple(sorted(n.name for n in kube.nodes if n.pool in pools))


def placements(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[ClassPlacement]:
    """Every EC2NodeClass that selects a subnet which cannot take one more node while another subnet it
    selects, or one of the cluster's own subnets, in the same zone can."""
    by_id = {s.subnet_id: s for s in eks.subnets}
    out: list[ClassPlacement] = []
    for c in provisioners(eks).classes(EC2_NODE_CLASS):
        selected = [by_id[i] for i in node_class_subnets(eks, c) if i in by_id]
        nodes = class_nodes(eks, kube, c)
        need = node_ips_for_new_node(_node_type(eks, kube, set(nodes)), cni)
        zones: list[ZonePlacement] = []
        for zone in sorted({s.az for s in selected}):
            here = [s for s in selected if s.az == zone]
            full = tuple(s for s in here if s.available_ips < need)
            roomy = tuple(s for s in here if s.available_ips >= need)
            chosen = {s.subnet_id for s in here}
            selectable = tuple(
                by_id[i]
                for i in sorted(eks.cluster.subnet_ids)
                if i in by_id and i not in chosen and by_id[i].az == zone and by_id[i].available_ips >= need
            )
            if full and (roomy or selectable):
                zones.append(ZonePlacement(zone, need, full, roomy, selectable))
        if not zones:
            continue
        dropped = {s.subnet_id for z in zones for s in z.full}
        added = {s.subnet_id for z in zones if not z.roomy for s in z.selectable}
        keep = tuple(sorted(({s.subnet_id for s in selected} - dropped) | added))
        leaving = tuple(
            n.name
            for n in kube.nodes
            if n.name in nodes and n.internal_ip and _subnet_of(n.internal_ip, list(by_id.values())) in dropped
        )
        out.append(ClassPlacement(c, tuple(zones), keep, nodes, leaving))
    return out
