"""Calico as one object: what the use cases (`cidrx.app`) call for it (registered as its `ipam` path).

Why it exists: dispatch names no IPAM; it walks the registry and calls each IPAM's object, so adding an
IPAM is a package and a `register()` line, never a new branch in shared code. Plans, drift checks and
executors come from the strategies the package declares (cidrx.ipam.plans); analysis is its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx.ipam.calico import SPEC
from cidrx.ipam.plans import DeclaredPlans

if TYPE_CHECKING:
    from cidrx.ipam.calico.model import CalicoSection
    from cidrx.model.findings import Capacity, Finding
    from cidrx.model.kube import KubeSection


class Calico(DeclaredPlans):
    def analyze(self, section: CalicoSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        from cidrx.ipam.calico.analyze import analyze_calico
        from cidrx.ipam.liveness import PodsByKey

        pods = PodsByKey(kube.ipam_pods)
        return analyze_calico(section, pods, kube.nodes, available=kube.available)


IPAM = Calico(SPEC.name)
