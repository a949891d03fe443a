"""The cluster's subnets as its nodes and pods use them: which subnets hold nodes and pods, what one more
node takes from each, how many aligned /28 blocks are free. Pure facts, shared by analysis, planning and the
address maps.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.model.kube import KubeSection
from cidrx.providers.eks.facts import provisioners
from cidrx.providers.eks.facts.cni import CniConfig, node_ips_for_new_node, pod_ips_for_new_node
from cidrx.providers.eks.model import EksSection, InstanceType, Subnet

NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"


@dataclass(frozen=True)
class SubnetUse:
    """A subnet as this cluster uses it: for pods, for nodes, or just listed on the cluster."""

    subnet: Subnet
    roles: tuple[str, ...]
    size: int
    free_28: int
    need_pods: int  # pod addresses one more node takes here (0 when no pods come from it)
    need_node: int  # node addresses one more node takes here (0 when no nodes go here)

    @property
    def need(self) -> int:
        return self.need_pods + self.need_node

    @property
    def used(self) -> int:
        return max(0, self.size - self.subnet.available_ips)


def subnet_label(s: Subnet) -> str:
    name = s.tags.get("Name")
    return f"{s.subnet_id} ({name})" if name else s.subnet_id


def usable_addresses(cidr: str) -> int:
    return max(0, netmath.parse_cidr(cidr).num_addresses - netmath.AWS_RESERVED_PER_SUBNET)


def free_prefix_blocks(s: Subnet) -> int:
    """Aligned /28 blocks with no address in use: what prefix delegation can actually get."""
    net = netmath.parse_cidr(s.cidr)
    if net.prefixlen > 28:
        return 0
    occupied: list[IPv4Network] = list(netmath.aws_reserved_addresses(net))
    for u in s.used:
        try:
            occupied.append(IPv4Network(u, strict=False))
        except ValueError:
            continue
    return netmath.count_free_blocks(28, [net], occupied)


def types_by_name(eks: EksSection) -> dict[str, InstanceType]:
    return {t.name: t for t in eks.instance_types}


def largest_type(names: tuple[str, ...], types: dict[str, InstanceType]) -> InstanceType | None:
    known = [types[n] for n in names if n in types]
    return max(known, key=lambda t: t.ips_per_eni, default=None)


def pod_subnet_ids(eks: EksSection, kube: KubeSection, cni: CniConfig) -> set[str]:
    if cni.custom_networking and kube.eniconfigs:
        return {e.subnet for e in kube.eniconfigs} | provisioners.auto_mode_pod_subnets(eks)
    return node_subnet_ids(eks) | provisioners.auto_mode_pod_subnets(eks)


def node_subnet_ids(eks: EksSection) -> set[str]:
    ids = {sid for ng in eks.nodegroups for sid in ng.subnet_ids} | provisioners.node_subnets(eks)
    return ids or set(eks.cluster.subnet_ids)


def subnet_uses(eks: EksSection, kube: KubeSection, cni: CniConfig) -> list[SubnetUse]:
    """The cluster's subnets (cluster, node group and ENIConfig subnets), each with what one more node
    would take from it."""
    types = types_by_name(eks)
    pods = pod_subnet_ids(eks, kube, cni)
    nodes = node_subnet_ids(eks)
    node_type_by_subnet: dict[str, InstanceType | None] = {}
    for ng in eks.nodegroups:
        t = largest_type(ng.instance_types, types)
        for sid in ng.subnet_ids:
            cur = node_type_by_subnet.get(sid)
            if cur is None or (t is not None and t.ips_per_eni > cur.ips_per_eni):
                node_type_by_subnet[sid] = t
    any_type = largest_type(tuple(types), types)
    wanted = set(eks.cluster.subnet_ids) | pods | nodes
    out: list[SubnetUse] = []
    for s in sorted(eks.subnets, key=lambda x: (x.az, x.cidr)):
        if s.subnet_id not in wanted:
            continue
        roles = []
        if s.subnet_id in nodes:
            roles.append("nodes")
        if s.subnet_id in pods:
            roles.append("pods")
        if s.subnet_id in eks.cluster.subnet_ids:
            roles.append("cluster")
        itype = node_type_by_subnet.get(s.subnet_id) or any_type
        need_node = node_ips_for_new_node(itype, cni) if s.subnet_id in nodes else 0
        if cni.custom_networking and s.subnet_id in nodes:
            need_node = 1
        need_pods = pod_ips_for_new_node(itype, cni) if (cni.custom_networking and s.subnet_id in pods) else 0
        out.append(SubnetUse(s, tuple(roles), usable_addresses(s.cidr), free_prefix_blocks(s), need_pods, need_node))
    return out


def subnet_nodes_fit(u: SubnetUse, prefix_delegation: bool) -> int | None:
    """How many more nodes this subnet can take, each taking what one more node takes here (`need`: its
    primary address and, when pods share the subnet, the warm pool); None when new nodes take nothing here.
    With prefix delegation the pod share comes in aligned /28s, so free /28 blocks bound it too."""
    if u.need <= 0:
        return None
    fit = u.subnet.available_ips // u.need
    pod_share = u.need_pods if u.need_pods else max(0, u.need_node - 1)
    if prefix_delegation and pod_share:
        fit = min(fit, u.free_28 // max(1, -(-pod_share // 16)))
    return fit


def nodes_fit_in(uses: list[SubnetUse], subnet_ids: set[str] | None, prefix_delegation: bool) -> int | None:
    """More nodes that fit across subnets (all of `uses` when `subnet_ids` is None), zone by zone: a node needs
    its own address from a node subnet and, with custom networking, pod addresses from its zone's pod subnets,
    so a zone fits as many nodes as the scarcer side has room for. None when no subnet takes nodes."""
    by_az: dict[str, list[SubnetUse]] = {}
    for u in uses:
        if u.need > 0:
            by_az.setdefault(u.subnet.az, []).append(u)
    total: int | None = None
    for az_uses in by_az.values():
        nodes = [u for u in az_uses if u.need_node and (subnet_ids is None or u.subnet.subnet_id in subnet_ids)]
        if not nodes:
            continue
        fit = sum(subnet_nodes_fit(u, prefix_delegation) or 0 for u in nodes)
        pods = [u for u in az_uses if not u.need_node]
        if pods:
            fit = min(fit, sum(subnet_nodes_fit(u, prefix_delegation) or 0 for u in pods))
        total = (total or 0) + fit
    return total
