"""Whereabouts as one object: what `cidrx.ipam.dispatch` calls for it (registered as its `ipam` path).

Why it exists: dispatch names no IPAM; it walks the registry and calls each IPAM's object, so adding an
IPAM is a package and a `register()` line, never a new branch in shared code.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.ipam.whereabouts.model import WhereaboutsSection
    from cidrx.kube.model import KubeSection
    from cidrx.model.findings import Capacity, Finding
    from cidrx.model.options import PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot


class Whereabouts:
    def analyze(self, section: WhereaboutsSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        from cidrx.ipam.whereabouts.analyze import analyze_whereabouts

        return analyze_whereabouts(section, {p.key: p for p in kube.ipam_pods}, available=kube.available)

    def make_reclaim_plan(self, snapshot: Snapshot, created_at: str) -> Plan:
        from cidrx.ipam.whereabouts.plan import make_reclaim_plan

        return make_reclaim_plan(snapshot, created_at)

    def make_pool_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan | None:
        return None  # Whereabouts pools are NetworkAttachmentDefinition config, not objects cidrx creates

    def check_drift(self, plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
        from cidrx.ipam.whereabouts.plan import check_drift

        check_drift(plan, snapshot, begun)

    def executors(self) -> Mapping[str, Executor]:
        from cidrx.ipam.whereabouts.steps import EXECUTORS

        return EXECUTORS


IPAM = Whereabouts()
