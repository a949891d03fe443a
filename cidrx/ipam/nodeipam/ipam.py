"""Kubernetes node IPAM as one object (registered as its `ipam` path).

Why it exists: node IPAM is only collected for the providers its registry entry lists (plain Kubernetes),
and is part of their diagnosis: their provider object finds it through the registry, so providers and IPAM
packages never import each other. It has no plans of its own (no strategies, no maps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx.ipam.nodeipam import SPEC
from cidrx.ipam.plans import DeclaredPlans

if TYPE_CHECKING:
    from cidrx.ipam.nodeipam.model import NodeIpamConfig
    from cidrx.model.findings import Capacity, Finding
    from cidrx.model.kube import KubeSection


class NodeIpam(DeclaredPlans):
    def analyze(self, section: NodeIpamConfig | None, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        """`section` may be None (settings unreadable): nodes refused a podCIDR are still reported."""
        from cidrx.ipam.nodeipam.analyze import analyze_node_ipam

        return analyze_node_ipam(kube)


IPAM = NodeIpam(SPEC.name)
