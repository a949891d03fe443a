"""GKE as a provider: what differs from cloud to cloud in the provider object `cidrx.dispatch` uses for `--gke` targets.

Collect, plan options and the step APIs; the rest (analysis, drift, executors, address maps, permissions)
comes from the package's usual modules through `PackageProvider`; the google-cloud SDKs are
imported inside the functions so that `diagnose --snapshot` and `--help` never load them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cidrx.model.snapshot import Snapshot, with_sections
from cidrx.model.target import Target
from cidrx.providers.package import PackageProvider

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.kube.model import KubeSection
    from cidrx.model.options import Access, PlanOptions
    from cidrx.model.plan import Plan


def collect(target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot:
    from cidrx.kube.collect import check_same_cluster
    from cidrx.providers.gke.api import GkeApi
    from cidrx.providers.gke.collect import collect_gke

    assert target.project is not None and target.location is not None  # resolve_target guarantees them
    gke = collect_gke(GkeApi(target.project, target.location), target.cluster)
    check_same_cluster(kube, [s.ip_cidr_range for s in gke.subnets], target)
    return with_sections(Snapshot(target=target, taken_at=taken_at, kube=kube), gke=gke)


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    from cidrx.providers.gke.plan import STRATEGIES, GkePlanOptions
    from cidrx.providers.gke.plan import make_plan as make_gke_plan

    # Autopilot: GKE owns the node pools, so the default is the cluster's additional pod ranges.
    autopilot = snapshot.gke is not None and snapshot.gke.cluster.autopilot
    gke_opts = GkePlanOptions(
        strategy=opts.strategy or ("cluster-range" if autopilot else STRATEGIES[0]),
        cidr=opts.cidr,
        add_nodes=opts.add_nodes,
        max_pods_per_node=opts.max_pods_per_node,
        pool_name=opts.pool_name,
        template_pool=opts.template,
        allow_class_e=opts.allow_class_e,
        created_at=created_at,
    )
    return make_gke_plan(snapshot, gke_opts)


def apis(plan: Plan, access: Access, kube: KubeApi | None) -> Any:
    from cidrx.providers.gke.api import GkeApi
    from cidrx.providers.gke.steps import GkeApis

    assert plan.target.project is not None and plan.target.location is not None
    return GkeApis(gke=GkeApi(plan.target.project, plan.target.location), kube=kube)


class GkeProvider(PackageProvider):
    """The usual package provider, with the route reads in its permissions and a split by project."""

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
        from cidrx.providers.gke.api import NETWORK_PROJECT_READS
        from cidrx.providers.gke.plan import ADD_FIREWALL_RANGE, ADD_SECONDARY_RANGE

        host = {*NETWORK_PROJECT_READS, *ADD_SECONDARY_RANGE.permissions}
        host |= set(ADD_FIREWALL_RANGE.permissions)
        both = {"container.clusters.list"}
        return {
            "host_project": sorted(p for p in set(permissions) if p in host),
            "service_project": sorted(p for p in set(permissions) if p not in host or p in both),
        }


PROVIDER = GkeProvider("cidrx.providers.gke", collect=collect, make_plan=make_plan, apis=apis)
"""The provider object `cidrx.registry` names (`cidrx.dispatch.Provider`)."""
