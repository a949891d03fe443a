"""The EKS control plane's own subnets (`resourcesVpcConfig.subnetIds`): how many free addresses they keep
for the control plane's network interfaces, and which other subnets of the cluster's Availability Zones could
be added to them. Pure: analysis (capacity rows, findings) and the `control-plane-subnets` strategy share it.

Upstream rules (docs/cloud-facts.md, "EKS control-plane subnets"):
- Amazon EKS User Guide, "View Amazon EKS networking requirements for VPC and subnets": the cluster's subnets
  must each have at least six free IP addresses for EKS (its network interfaces, new ones on upgrades); 16 are
  recommended. Subnets added later (UpdateClusterConfig) must lie in the Availability Zones the cluster was
  created with, in the cluster's VPC.
- EKS API reference `ClusterIssue`: EKS reports `InsufficientFreeAddresses` in the cluster's health issues.
"""

from __future__ import annotations

from dataclasses import dataclass

from cidrx.providers.eks.model import EksSection, Subnet

MIN_FREE = 6  # "at least six IP addresses for use by Amazon EKS"
RECOMMENDED_FREE = 16  # "we recommend at least 16"
INSUFFICIENT_FREE_ADDRESSES = "InsufficientFreeAddresses"


def cluster_subnets(eks: EksSection) -> list[Subnet]:
    """The cluster's subnets, in the order EKS lists them (those the snapshot does not hold are left out)."""
    by_id = {s.subnet_id: s for s in eks.subnets}
    return [by_id[sid] for sid in eks.cluster.subnet_ids if sid in by_id]


def low_subnets(eks: EksSection, threshold: int = RECOMMENDED_FREE) -> list[Subnet]:
    return [s for s in cluster_subnets(eks) if s.available_ips < threshold]


def cluster_zones(eks: EksSection) -> list[str]:
    return sorted({s.az for s in cluster_subnets(eks)})


@dataclass(frozen=True)
class Candidate:
    """A subnet of the VPC that the control plane could be given, in one of the cluster's zones."""

    subnet: Subnet
    recommended: bool  # holds at least RECOMMENDED_FREE free addresses


def candidates(eks: EksSection, avoid: frozenset[str] = frozenset()) -> list[Candidate]:
    """Per zone of the cluster, the subnet not already the cluster's with the most free addresses (at least
    MIN_FREE); subnets in `avoid` (those nodes and pods fill) only when the zone has no other."""
    mine = set(eks.cluster.subnet_ids)
    out = []
    for az in cluster_zones(eks):
        pool = [s for s in eks.subnets if s.az == az and s.subnet_id not in mine and s.available_ips >= MIN_FREE]
        if not pool:
            continue
        best = max(pool, key=lambda s: (s.subnet_id not in avoid, s.available_ips, s.subnet_id))
        out.append(Candidate(best, best.available_ips >= RECOMMENDED_FREE))
    return out
