"""Whereabouts as one object: what the use cases (`cidrx.app`) call for it (registered as its `ipam` path).

Why it exists: dispatch names no IPAM; it walks the registry and calls each IPAM's object, so adding an
IPAM is a package and a `register()` line, never a new branch in shared code. Plans, drift checks and
executors come from the strategies the package declares (cidrx.ipam.plans); analysis is its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx.ipam.plans import DeclaredPlans
from cidrx.ipam.whereabouts import SPEC

if TYPE_CHECKING:
    from cidrx.ipam.whereabouts.model import WhereaboutsSection
    from cidrx.model.findings import Capacity, Finding
    from cidrx.model.kube import KubeSection


class Whereabouts(DeclaredPlans):
    def analyze(self, section: WhereaboutsSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        from cidrx.ipam.liveness import PodsByKey
        from cidrx.ipam.whereabouts.analyze import analyze_whereabouts

        return analyze_whereabouts(section, PodsByKey(kube.ipam_pods), available=kube.available)


IPAM = Whereabouts(SPEC.name)
