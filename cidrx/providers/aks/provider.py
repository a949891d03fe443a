"""AKS as a provider: the object the use cases (`cidrx.app`) use for `--aks` targets (`PROVIDER`).

Collect, analysis, address maps, permissions and the step APIs are AKS's own; plans, drift checks and
executors are the strategies' (cidrx.providers.aks.strategies), looked up through the registry by the strategy
a plan names. The azure SDKs and the planning code are imported inside the methods, so `diagnose --snapshot`
and `--help` never load what they do not use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cidrx import registry
from cidrx.model.snapshot import Snapshot, with_sections
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Diagnosis
    from cidrx.model.kube import KubeSection
    from cidrx.model.options import Access, PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.providers.aks.api import AksApi

NAME = "aks"


def own_strategies() -> tuple[str, ...]:
    spec = registry.provider_spec(NAME)
    return spec.strategies if spec is not None else ()


def default_strategy(snapshot: Snapshot, opts: PlanOptions) -> str:
    """`aks-pod-subnet` when the pool a plan would copy takes its pods from a pod subnet, else `aks-node-pool`
    (Overlay and kubenet clusters get `aks-node-pool`, whose plan explains why their pod CIDR cannot grow)."""
    aks = snapshot.aks
    if aks is not None and any(p.pod_subnet_id for p in aks.agent_pools):
        template = aks.pool(opts.template) if opts.template else None
        if template is None or template.pod_subnet_id:
            return "aks-pod-subnet"
    return "aks-node-pool"


@dataclass(frozen=True)
class AksApis:
    """The clients an AKS plan is applied with: ARM, and the cluster's Kubernetes API (None: not reached)."""

    aks: AksApi
    kube: KubeApi | None


class AksProvider:
    """The `cidrx.providers.base.Provider` of AKS targets."""

    cluster_only = False  # its plans change the cloud, not only the cluster

    def collect(self, target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot:
        from cidrx.kube.collect import check_same_cluster
        from cidrx.providers.aks.api import AksApi
        from cidrx.providers.aks.collect.collect import collect_aks

        assert target.subscription is not None and target.resource_group is not None  # resolve_target did
        aks = collect_aks(AksApi(target.subscription), target.resource_group, target.cluster)
        nets = [s.address_prefix for s in (aks.vnet.subnets if aks.vnet else ()) if s.address_prefix]
        if nets:
            check_same_cluster(kube, nets, target)
        return with_sections(Snapshot(target=target, taken_at=taken_at, kube=kube), aks=aks)

    def analyze(self, snapshot: Snapshot) -> Diagnosis:
        from cidrx.providers.aks.analyze.analyze import analyze

        return analyze(snapshot)

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> Any:
        from cidrx.providers.aks.api import AksApi

        assert plan.target.subscription is not None
        return AksApis(aks=AksApi(plan.target.subscription), kube=kube)

    def address_maps(self, snapshot: Snapshot) -> Sequence[Any]:
        from cidrx.providers.aks.netmap import address_maps

        return address_maps(snapshot)

    def cloud_permissions(self) -> tuple[str, ...]:
        from cidrx.providers.aks.api import COLLECT_PERMISSIONS, FLEET_PERMISSIONS

        return tuple(dict.fromkeys((*COLLECT_PERMISSIONS, *FLEET_PERMISSIONS)))


PROVIDER = AksProvider()
"""The provider object `cidrx.registry` names (`cidrx.providers.base.Provider`)."""
