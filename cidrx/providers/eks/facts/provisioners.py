"""Who provisions an EKS cluster's nodes besides managed node groups, and what that means for pod
addresses: the subnets their nodes (and Auto Mode's pods) take addresses from and their max pods (their
capacity rows and findings are cidrx.providers.eks.analyze.provisioners'). Pure: analysis and planning both
read it.

Upstream rules followed here:
- Karpenter's max pods without `kubelet.maxPods` is the ENI formula less RESERVED_ENIS:
  (ENIs − RESERVED_ENIS) × (IPv4 per ENI − 1) + 2 (aws/karpenter-provider-aws
  pkg/providers/instancetype/types.go ENILimitedPods, pkg/operator/options/options.go RESERVED_ENIS default
  0, at 1d927085dd81a9df9301e613f371dac5b4d16bfe). With VPC CNI custom networking the primary ENI holds no
  pod addresses, so RESERVED_ENIS must be 1 or nodes advertise pods the CNI cannot address.
- EKS Auto Mode does pod networking itself: aws-node env and ENIConfigs do nothing for its nodes; pods take
  addresses from the NodeClass's podSubnetSelectorTerms subnets (else the node subnets), with /28 prefixes
  by default (EKS user guide, "Create a Node Class for Amazon EKS").
"""

from __future__ import annotations

from collections.abc import Iterable

from cidrx.providers.eks.model import (
    AUTO_NODE_CLASS,
    EksSection,
    InstanceType,
    NodeClass,
    NodeProvisioners,
    SelectorTerm,
    Subnet,
)

BUILTIN_AUTO_NODE_CLASS = "default"  # the NodeClass EKS Auto Mode creates and manages itself


def provisioners(eks: EksSection) -> NodeProvisioners:
    return eks.provisioners or NodeProvisioners()


def term_matches(term: SelectorTerm, subnet: Subnet) -> bool:
    """A selector term ANDs its fields; a tag value `*` matches any value (ec2nodeclass.go SubnetSelectorTerm)."""
    if term.id and term.id != subnet.subnet_id:
        return False
    for key, value in term.tags.items():
        if key not in subnet.tags or (value != "*" and subnet.tags[key] != value):
            return False
    return bool(term.id or term.tags)


def resolve_subnets(terms: Iterable[SelectorTerm], subnets: Iterable[Subnet]) -> tuple[str, ...]:
    wanted = tuple(terms)
    return tuple(sorted(s.subnet_id for s in subnets if any(term_matches(t, s) for t in wanted)))


def node_class_subnets(eks: EksSection, c: NodeClass) -> tuple[str, ...]:
    """Where its nodes launch: status.subnets when the controller resolved them, else the selectors."""
    return c.subnets or resolve_subnets(c.subnet_terms, eks.subnets)


def pod_subnets(eks: EksSection, c: NodeClass) -> tuple[str, ...]:
    """Auto Mode: the subnets its pods take addresses from (none selected: the node subnets)."""
    return resolve_subnets(c.pod_subnet_terms, eks.subnets) if c.pod_subnet_terms else ()


def node_subnets(eks: EksSection) -> set[str]:
    """Subnets nodes of self-managed groups and node classes launch in."""
    p = provisioners(eks)
    ids = {sid for g in p.self_managed for sid in g.subnet_ids}
    for c in p.node_classes:
        ids |= set(node_class_subnets(eks, c))
    return ids


def auto_mode_pod_subnets(eks: EksSection) -> set[str]:
    return {sid for c in provisioners(eks).classes(AUTO_NODE_CLASS) for sid in pod_subnets(eks, c)}


def karpenter_max_pods(itype: InstanceType, reserved_enis: int) -> int:
    """Karpenter's ENI-limited max pods (ENILimitedPods): it knows nothing of the CNI's own settings."""
    usable = max(0, itype.pod_enis - reserved_enis)  # VPC CNI only uses the default network card
    return usable * (itype.ips_per_eni - 1) + 2 if usable else 0


def reserved_enis(p: NodeProvisioners) -> int:
    return (p.karpenter.reserved_enis or 0) if p.karpenter is not None else 0
