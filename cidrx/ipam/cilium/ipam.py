"""Cilium as one object: what the use cases (`cidrx.app`) call for it (registered as its `ipam` path).

Why it exists: dispatch names no IPAM; it walks the registry and calls each IPAM's object. Plans, drift checks
and executors come from the strategies the package declares (cidrx.ipam.plans); analysis is its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx.ipam.cilium import SPEC
from cidrx.ipam.plans import DeclaredPlans

if TYPE_CHECKING:
    from cidrx.ipam.cilium.model import CiliumSection
    from cidrx.model.findings import Capacity, Finding
    from cidrx.model.kube import KubeSection


class Cilium(DeclaredPlans):
    def analyze(self, section: CiliumSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        from cidrx.ipam.cilium.analyze import analyze_cilium

        return analyze_cilium(section, kube)


IPAM = Cilium(SPEC.name)
