"""The provider object of a cloud package laid out the usual way, so each cloud writes only what differs.

A cloud provider package (see CONTRIBUTING.md) keeps its analysis in `analyze.analyze`, its drift check in
`plan.check_drift`, its step executors in `steps.EXECUTORS`, its address maps in `netmap.address_maps` and
what collect and fleet listing read in `api.COLLECT_PERMISSIONS` / `api.FLEET_PERMISSIONS`. `PackageProvider`
serves those entry points by importing the module on first use (so `--help` and `diagnose --snapshot` never
load a cloud SDK); the package supplies the three that really differ: collect, make_plan and apis.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.kube.api import KubeApi
    from cidrx.kube.model import KubeSection
    from cidrx.model.findings import Diagnosis
    from cidrx.model.options import Access, PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target


@dataclass(frozen=True)
class PackageProvider:
    """A `cidrx.dispatch.Provider` for the package `package` (e.g. "cidrx.providers.eks")."""

    package: str
    collect: Callable[[Target, Access, KubeSection, str], Snapshot]
    make_plan: Callable[[Snapshot, PlanOptions, str], Plan]
    apis: Callable[[Plan, Access, KubeApi | None], Any]

    def _get(self, module: str, name: str) -> Any:
        return getattr(importlib.import_module(f"{self.package}.{module}"), name)

    def analyze(self, snapshot: Snapshot) -> Diagnosis:
        result: Diagnosis = self._get("analyze", "analyze")(snapshot)
        return result

    def check_drift(self, plan: Plan, snapshot: Snapshot) -> None:
        self._get("plan", "check_drift")(plan, snapshot)

    def executors(self) -> Mapping[str, Executor]:
        result: Mapping[str, Executor] = self._get("steps", "EXECUTORS")
        return result

    def address_maps(self, snapshot: Snapshot) -> Sequence[Any]:
        result: Sequence[Any] = self._get("netmap", "address_maps")(snapshot)
        return result

    def cloud_permissions(self) -> tuple[str, ...]:
        """What collect reads, plus the listing of fleet mode (`diagnose --all-clusters`)."""
        return (*self._get("api", "COLLECT_PERMISSIONS"), *self._get("api", "FLEET_PERMISSIONS"))
