"""EKS as a provider: the object `cidrx.dispatch` uses for `--eks` targets.

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
    from cidrx.kube.model import KubeSection
    from cidrx.model.findings import Diagnosis
    from cidrx.model.options import Access, PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target


class EksProvider:
    """The `cidrx.dispatch.Provider` of EKS targets."""

    # Its plans change the cloud, not only the cluster (IPAM objects say True).
    cluster_only = False

    def collect(self, target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot:
        from cidrx.kube.collect import check_same_cluster
        from cidrx.model.snapshot import Snapshot
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
        return Snapshot(target=target, taken_at=taken_at, kube=kube, eks=eks)

    def analyze(self, snapshot: Snapshot) -> Diagnosis:
        from cidrx.providers.eks.analyze.diagnosis import analyze

        return analyze(snapshot)

    def make_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
        from dataclasses import replace

        from cidrx.providers.eks.discovery_plan import default_strategy
        from cidrx.providers.eks.plan import EksPlanOptions
        from cidrx.providers.eks.plan import make_plan as make_eks_plan

        eks_opts = EksPlanOptions(
            strategy=opts.strategy or "",
            cidr=opts.cidr,
            add_nodes=opts.add_nodes,
            nodegroup_name=opts.pool_name,
            template_nodegroup=opts.template,
            created_at=created_at,
        )
        if not eks_opts.strategy:
            eks_opts = replace(eks_opts, strategy=default_strategy(snapshot, eks_opts))
        return make_eks_plan(snapshot, eks_opts)

    def check_drift(self, plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
        from cidrx.providers.eks.plan import check_drift

        check_drift(plan, snapshot)

    def executors(self) -> Mapping[str, Executor]:
        from cidrx.providers.eks.steps import EXECUTORS

        return EXECUTORS

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> Any:
        from cidrx.providers.eks.api import EksApi
        from cidrx.providers.eks.steps import EksApis

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
"""The provider object `cidrx.registry` names (`cidrx.dispatch.Provider`)."""
