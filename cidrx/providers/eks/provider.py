"""EKS as a provider: the five entry points `cidrx.dispatch` dispatches to for `--eks` targets.

Joins the EKS adapter, collector, analysis, planner and step executors; cloud SDKs are imported inside
the functions so that `diagnose --snapshot` and `--help` never load boto3.
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
    from cidrx.providers.eks.api import EksApi
    from cidrx.providers.eks.collect import collect_eks

    assert target.region is not None  # resolve_target guarantees it for EKS
    # Nodes may run instance types no node group names (self-managed groups, Karpenter).
    node_types = sorted({n.instance_type for n in kube.nodes if "." in n.instance_type})
    api = EksApi(target.region, access.profile)
    eks = collect_eks(api, target.cluster, extra_instance_types=node_types)
    from cidrx.providers.eks.provisioner_collect import collect_provisioners

    eks = collect_provisioners(eks, api, kube, access)
    check_same_cluster(kube, [c.cidr for c in eks.vpc.cidrs if c.state in ("associated", "associating")], target)
    return Snapshot(target=target, taken_at=taken_at, kube=kube, eks=eks)


def analyze(snapshot: Snapshot) -> Diagnosis:
    from cidrx.providers.eks.analyze import analyze as analyze_eks

    return analyze_eks(snapshot)


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    from cidrx.providers.eks.plan import STRATEGIES, EksPlanOptions
    from cidrx.providers.eks.plan import make_plan as make_eks_plan

    eks_opts = EksPlanOptions(
        strategy=opts.strategy or STRATEGIES[0],
        cidr=opts.cidr,
        add_nodes=opts.add_nodes,
        nodegroup_name=opts.pool_name,
        template_nodegroup=opts.template,
        created_at=created_at,
    )
    return make_eks_plan(snapshot, eks_opts)


def check_drift(plan: Plan, snapshot: Snapshot) -> None:
    from cidrx.providers.eks.plan import check_drift as check_eks_drift

    check_eks_drift(plan, snapshot)


def executors() -> Mapping[str, Executor]:
    from cidrx.providers.eks.steps import EXECUTORS

    return EXECUTORS


def apis(plan: Plan, access: Access, kube: KubeApi | None) -> Any:
    from cidrx.providers.eks.api import EksApi
    from cidrx.providers.eks.steps import EksApis

    assert plan.target.region is not None  # every EKS target has one (resolve_target, load_plan)
    return EksApis(eks=EksApi(plan.target.region, access.profile), kube=kube)


def address_maps(snapshot: Snapshot) -> Sequence[Any]:
    from cidrx.providers.eks.netmap import address_maps as maps

    return maps(snapshot)


def cloud_permissions() -> tuple[str, ...]:
    """What collect reads, plus the listing of fleet mode (`diagnose --all-clusters`)."""
    from cidrx.providers.eks.api import COLLECT_PERMISSIONS, FLEET_PERMISSIONS

    return (*COLLECT_PERMISSIONS, *FLEET_PERMISSIONS)


PROVIDER = sys.modules[__name__]
"""This module is the provider object `cidrx.registry` names (`cidrx.dispatch.Provider`)."""
