"""Calico as one object: what `cidrx.ipam.dispatch` calls for it (registered as its `ipam` path).

Why it exists: dispatch names no IPAM; it walks the registry and calls each IPAM's object, so adding an
IPAM is a package and a `register()` line, never a new branch in shared code.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.ipam.calico.model import CalicoSection
    from cidrx.kube.model import KubeSection
    from cidrx.model.findings import Capacity, Finding
    from cidrx.model.options import PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot


class Calico:
    def analyze(self, section: CalicoSection, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        from cidrx.ipam.calico.analyze import analyze_calico

        pods = {p.key: p for p in kube.ipam_pods}
        return analyze_calico(section, pods, kube.nodes, available=kube.available)

    def make_reclaim_plan(self, snapshot: Snapshot, created_at: str) -> Plan:
        from cidrx.ipam.calico.plan import make_reclaim_plan

        return make_reclaim_plan(snapshot, created_at)

    def make_pool_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan | None:
        from cidrx.ipam.calico.plan import make_pool_plan

        return make_pool_plan(snapshot, opts, created_at)

    def check_drift(self, plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
        from cidrx.ipam.calico.plan import check_drift

        check_drift(plan, snapshot, begun)

    def executors(self) -> Mapping[str, Executor]:
        from cidrx.ipam.calico.steps import EXECUTORS

        return EXECUTORS


IPAM = Calico()
