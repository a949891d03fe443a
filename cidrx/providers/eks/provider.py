"""EKS as a provider: the object the use cases (`cidrx.app`) use for `--eks` targets.

Each method hands over to the unit that owns the work: collect to `collect/`, analysis to `analyze/`, plans,
drift checks and executors to the strategy and action units the package declares in its `__init__` (looked
up through `cidrx.registry`, so no method names a strategy). Cloud SDKs are imported inside the functions so
that `diagnose --snapshot` and `--help` never load boto3.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cidrx import registry

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Diagnosis
    from cidrx.model.kube import KubeSection
    from cidrx.model.options import Access, PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target


class EksProvider:
    """The `cidrx.providers.base.Provider` of EKS targets."""

    # Its plans change the cloud, not only the cluster (IPAM objects say True).
    cluster_only = False

    def collect(self, target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot:
        from cidrx.kube.collect import check_same_cluster
        from cidrx.model.snapshot import Snapshot, with_sections
        from cidrx.providers.eks.api import EksApi
        from cidrx.providers.eks.collect.provisioners import collect_provisioners
        from cidrx.providers.eks.collect.vpc import collect_eks

        assert target.region is not None  # resolve_target guarantees it for EKS
        # Nodes may run instance types no node group names (self-managed groups, Karpenter).
        node_types = sorted({n.instance_type for n in kube.nodes if "." in n.instance_type})
        node_ips = [n.internal_ip for n in kube.nodes if n.internal_ip]
        api = EksApi(target.region, access.profile)
        eks = collect_eks(api, target.cluster, extra_instance_types=node_types, node_ips=node_ips)
        eks = collect_provisioners(eks, api, kube, access)
        active = [c.cidr for c in eks.vpc.cidrs if c.state in ("associated", "associating")]
        check_same_cluster(kube, active, target)
        return with_sections(Snapshot(target=target, taken_at=taken_at, kube=kube), eks=eks)

    def analyze(self, snapshot: Snapshot) -> Diagnosis:
        from cidrx.providers.eks.analyze.diagnosis import analyze

        return analyze(snapshot)

    def make_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
        """The plan of `opts.strategy`, or (none given) of the strategy the package's `default_strategy` picks."""
        from dataclasses import replace

        spec = _spec()
        if not opts.strategy:
            opts = replace(opts, strategy=registry.load(spec.default_strategy)(snapshot, opts))
        make: Any = registry.load(_strategy(opts.strategy or "").plan)
        plan: Plan = make(snapshot, opts, created_at)
        return plan

    def check_drift(self, plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
        registry.load(_strategy(plan.strategy).drift)(plan, snapshot, begun)

    def executors(self) -> Mapping[str, Executor]:
        return registry.executors(registry.actions("eks"))

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> Any:
        from cidrx.providers.eks.actions.context import EksApis
        from cidrx.providers.eks.api import EksApi

        assert plan.target.region is not None  # every EKS target has one (resolve_target, load_plan)
        return EksApis(eks=EksApi(plan.target.region, access.profile), kube=kube)

    def address_maps(self, snapshot: Snapshot) -> Sequence[Any]:
        from cidrx.providers.eks.netmap import address_maps

        return address_maps(snapshot)

    def cloud_permissions(self) -> tuple[str, ...]:
        """What collect reads, plus the listing of fleet mode (`diagnose --all-clusters`)."""
        from cidrx.providers.eks.api import COLLECT_PERMISSIONS, FLEET_PERMISSIONS

        return (*COLLECT_PERMISSIONS, *FLEET_PERMISSIONS)


def _spec() -> registry.ProviderSpec:
    spec = registry.provider_spec("eks")
    assert spec is not None  # declared in this package's __init__
    return spec


def _strategy(name: str) -> registry.Strategy:
    """The EKS strategy `name`; an unknown name is refused the way the strategies' declarations list them."""
    from cidrx.errors import InvalidInput

    s = registry.strategy(name)
    if s is None or s.owner != "eks":
        raise InvalidInput(f"unknown EKS strategy {name!r}; choose one of {', '.join(_spec().strategies)}")
    return s


PROVIDER = EksProvider()
"""The provider object `cidrx.registry` names (`cidrx.providers.base.Provider`)."""
