"""GKE as a provider: the entry points `cidrx.dispatch` dispatches to for `--gke` targets.

Joins the GKE adapter, collector, analysis, planner and step executors; the google-cloud SDKs are
imported inside the functions so that `diagnose --snapshot` and `--help` never load them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cidrx.model.snapshot import Snapshot
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.kube.api import KubeApi
    from cidrx.kube.model import KubeSection
    from cidrx.model.findings import Diagnosis
    from cidrx.model.options import Access, PlanOptions
    from cidrx.model.plan import Plan


def collect(target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot:
    from cidrx.kube.collect import check_same_cluster
    from cidrx.providers.gke.api import GkeApi
    from cidrx.providers.gke.collect import collect_gke

    assert target.project is not None and target.location is not None  # resolve_target guarantees them
    gke = collect_gke(GkeApi(target.project, target.location), target.cluster)
    check_same_cluster(kube, [s.ip_cidr_range for s in gke.subnets], target)
    return Snapshot(target=target, taken_at=taken_at, kube=kube, gke=gke)


def analyze(snapshot: Snapshot) -> Diagnosis:
    from cidrx.providers.gke.analyze import analyze as analyze_gke

    return analyze_gke(snapshot)


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


def check_drift(plan: Plan, snapshot: Snapshot) -> None:
    from cidrx.providers.gke.plan import check_drift as check_gke_drift

    check_gke_drift(plan, snapshot)


def executors() -> Mapping[str, Executor]:
    from cidrx.providers.gke.steps import EXECUTORS

    return EXECUTORS


def apis(plan: Plan, access: Access, kube: KubeApi | None) -> Any:
    from cidrx.providers.gke.api import GkeApi
    from cidrx.providers.gke.steps import GkeApis

    assert plan.target.project is not None and plan.target.location is not None
    return GkeApis(gke=GkeApi(plan.target.project, plan.target.location), kube=kube)


def address_maps(snapshot: Snapshot) -> Sequence[Any]:
    from cidrx.providers.gke.netmap import address_maps as maps

    return maps(snapshot)


def cloud_permissions() -> tuple[str, ...]:
    """What collect reads, plus the listing of fleet mode (`diagnose --all-clusters`)."""
    from cidrx.providers.gke.api import COLLECT_PERMISSIONS, FLEET_PERMISSIONS

    return (*COLLECT_PERMISSIONS, *FLEET_PERMISSIONS)


PROVIDER = sys.modules[__name__]
"""This module is the provider object `cidrx.registry` names (`cidrx.dispatch.Provider`)."""
