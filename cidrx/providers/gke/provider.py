"""GKE as a provider: the object the use cases (`cidrx.app`) use for `--gke` targets (`PROVIDER`).

Collect, analysis, address maps, permissions and the step APIs are GKE's own; plans, drift checks and
executors are the strategies' (cidrx.providers.gke.strategies), looked up through the registry by the
strategy a plan names, so nothing here lists strategies. The google-cloud SDKs and the planning code are
imported inside the methods so that `diagnose --snapshot` and `--help` never load what they do not use.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.model.snapshot import Snapshot, with_sections
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Diagnosis
    from cidrx.model.kube import KubeSection
    from cidrx.model.options import Access, PlanOptions
    from cidrx.model.plan import Plan

NAME = "gke"


def own_strategies() -> tuple[str, ...]:
    """The strategies GKE declares (cidrx.providers.gke.STRATEGIES), in declaration order."""
    spec = registry.provider_spec(NAME)
    return spec.strategies if spec is not None else ()


def default_strategy(snapshot: Snapshot, opts: PlanOptions) -> str:
    """The strategy `expand --plan` uses without --strategy: `subnet-expand` when what ran out is the subnet's
    primary range (node addresses) while no pod range is tight (full, nearly full, or smaller than its pools'
    autoscaler max: the pod-range findings' remediation is this default); else on Autopilot, where GKE owns the
    node pools, the cluster's additional pod ranges (`cluster-range`); elsewhere the first declared (`node-pool`)."""
    from cidrx.providers.gke.analyze.analyze import NEARLY_FULL
    from cidrx.providers.gke.facts.node_subnet import node_subnet_use
    from cidrx.providers.gke.facts.pod_ranges import pod_ranges

    gke = snapshot.gke
    if gke is None:
        return own_strategies()[0]
    use = node_subnet_use(gke)
    if use is not None and use.free == 0:
        ranges = pod_ranges(gke, snapshot.kube)
        tight = [
            r
            for r in ranges
            if r.pools
            and (r.free_for(r.node_prefix) == 0 or r.node_utilization >= NEARLY_FULL or r.autoscaler_max > r.max_nodes)
        ]
        if not tight:
            return "subnet-expand"
    return "cluster-range" if gke.cluster.autopilot else own_strategies()[0]


def strategy_of(name: str) -> registry.Strategy:
    """GKE's declaration of strategy `name`; InvalidInput for a strategy GKE does not own."""
    found = registry.strategy(name)
    if found is None or found.owner != NAME:
        raise InvalidInput(f"unknown GKE strategy {name!r}; choose one of {', '.join(own_strategies())}")
    return found


class GkeProvider:
    """The `cidrx.providers.base.Provider` of GKE targets, with the split of its permissions by project."""

    cluster_only = False  # its plans change the cloud, not only the cluster

    def collect(self, target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot:
        from cidrx.kube.collect import check_same_cluster
        from cidrx.providers.gke.api import GkeApi
        from cidrx.providers.gke.collect.collect import collect_gke

        assert target.project is not None and target.location is not None  # resolve_target guarantees them
        gke = collect_gke(GkeApi(target.project, target.location), target.cluster)
        check_same_cluster(kube, [s.ip_cidr_range for s in gke.subnets], target)
        return with_sections(Snapshot(target=target, taken_at=taken_at, kube=kube), gke=gke)

    def analyze(self, snapshot: Snapshot) -> Diagnosis:
        from cidrx.providers.gke.analyze.analyze import analyze

        return analyze(snapshot)

    def make_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
        """The plan of `opts.strategy` (default: `default_strategy`), made by that strategy's unit."""
        from cidrx.providers.gke.strategies.pod_range import gke_section

        gke_section(snapshot)  # a snapshot of another provider is refused before anything else
        name = opts.strategy or default_strategy(snapshot, opts)
        plan: Plan = registry.load(strategy_of(name).plan)(snapshot, opts, created_at)
        return plan

    def check_drift(self, plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
        """The drift check of the plan's strategy (StalePlan when what it relied on no longer holds)."""
        registry.load(strategy_of(plan.strategy).drift)(plan, snapshot, begun)

    def executors(self, plan: Plan | None = None) -> Mapping[str, Executor]:
        """{action name: executor} for the actions of `plan`'s strategy (None: of every GKE strategy)."""
        names = [plan.strategy] if plan is not None else own_strategies()
        declared = [a for name in names for a in registry.strategy_actions(strategy_of(name))]
        return registry.executors(dict.fromkeys(declared))

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> Any:
        from cidrx.providers.gke.actions.operations import GkeApis
        from cidrx.providers.gke.api import GkeApi

        assert plan.target.project is not None and plan.target.location is not None
        return GkeApis(gke=GkeApi(plan.target.project, plan.target.location), kube=kube)

    def address_maps(self, snapshot: Snapshot) -> Sequence[Any]:
        from cidrx.providers.gke.netmap import address_maps

        return address_maps(snapshot)

    def cloud_permissions(self) -> tuple[str, ...]:
        """What collect reads (routes and other clusters too), plus the listing of fleet mode."""
        from cidrx.providers.gke.api import COLLECT_PERMISSIONS, FLEET_PERMISSIONS, ROUTE_PERMISSIONS

        return tuple(dict.fromkeys((*COLLECT_PERMISSIONS, *ROUTE_PERMISSIONS, *FLEET_PERMISSIONS)))

    def permissions_by_project(self, permissions: Sequence[str]) -> dict[str, list[str]]:
        """`permissions` split by the project they are needed in, for Shared VPC: the host project owns the
        network (its subnets, routes, peerings, allocations, firewall rules, the subnet and firewall patches),
        the service project the
        cluster (clusters, node pools, their operations). Without Shared VPC both are the cluster's project.
        container.clusters.list is needed in both (routes-based clusters of either project)."""
        from cidrx.providers.gke.actions.firewall import ADD_FIREWALL_RANGE
        from cidrx.providers.gke.actions.subnet_expand import EXPAND_SUBNET_RANGE
        from cidrx.providers.gke.actions.subnet_ranges import ADD_SECONDARY_RANGE
        from cidrx.providers.gke.api import NETWORK_PROJECT_READS, SUBNET_ADDRESS_READS

        host = {*NETWORK_PROJECT_READS, *ADD_SECONDARY_RANGE.permissions, *SUBNET_ADDRESS_READS}
        host |= set(EXPAND_SUBNET_RANGE.permissions)
        host |= set(ADD_FIREWALL_RANGE.permissions)
        both = {"container.clusters.list", *SUBNET_ADDRESS_READS}
        return {
            "host_project": sorted(p for p in set(permissions) if p in host),
            "service_project": sorted(p for p in set(permissions) if p not in host or p in both),
        }


PROVIDER = GkeProvider()
"""The provider object `cidrx.registry` names (`cidrx.providers.base.Provider`)."""
