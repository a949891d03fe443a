"""EKS as a provider: what differs from cloud to cloud in the provider object `cidrx.dispatch` uses for `--eks` targets.

Collect, plan options and the step APIs; the rest (analysis, drift, executors, address maps, permissions)
comes from the package's usual modules through `PackageProvider`; cloud SDKs are imported inside
the functions so that `diagnose --snapshot` and `--help` never load boto3.
"""

from __future__ import annotations

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
    from cidrx.providers.eks.api import EksApi
    from cidrx.providers.eks.collect import collect_eks

    assert target.region is not None  # resolve_target guarantees it for EKS
    # Nodes may run instance types no node group names (self-managed groups, Karpenter).
    node_types = sorted({n.instance_type for n in kube.nodes if "." in n.instance_type})
    node_ips = [n.internal_ip for n in kube.nodes if n.internal_ip]
    api = EksApi(target.region, access.profile)
    eks = collect_eks(api, target.cluster, extra_instance_types=node_types, node_ips=node_ips)
    from cidrx.providers.eks.provisioner_collect import collect_provisioners

    eks = collect_provisioners(eks, api, kube, access)
    check_same_cluster(kube, [c.cidr for c in eks.vpc.cidrs if c.state in ("associated", "associating")], target)
    return with_sections(Snapshot(target=target, taken_at=taken_at, kube=kube), eks=eks)


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
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
    # No --strategy: subnet discovery where the VPC CNI supports it, else custom networking.
    if not eks_opts.strategy:
        eks_opts = replace(eks_opts, strategy=default_strategy(snapshot, eks_opts))
    return make_eks_plan(snapshot, eks_opts)


def apis(plan: Plan, access: Access, kube: KubeApi | None) -> Any:
    from cidrx.providers.eks.api import EksApi
    from cidrx.providers.eks.steps import EksApis

    assert plan.target.region is not None  # every EKS target has one (resolve_target, load_plan)
    return EksApis(eks=EksApi(plan.target.region, access.profile), kube=kube)


PROVIDER = PackageProvider("cidrx.providers.eks", collect=collect, make_plan=make_plan, apis=apis)
"""The provider object `cidrx.registry` names (`cidrx.dispatch.Provider`)."""
