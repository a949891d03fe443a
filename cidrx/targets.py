"""Dispatch by provider: which collect/analyze/plan/apply functions serve a Target.

The CLI knows flags, the providers know clouds; this thin layer is the only place that joins them, so
adding a provider means one more branch here and nothing in the commands. Provider modules are imported
inside the functions: `cidrx --help` and `diagnose --snapshot` never pay for cloud SDKs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from ipaddress import ip_address, ip_network
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cidrx.errors import InvalidInput
from cidrx.kube.model import KubeSection
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.cli.options import TargetOptions
    from cidrx.eks.model import EksSection
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Diagnosis
    from cidrx.model.plan import Plan
    from cidrx.render.progress import Progress

SUPPORTED = ("eks",)
_NOT_YET = {
    "gke": "GKE support is not in this release yet",
    "k8s": "plain Kubernetes targets (--k8s) are not in this release yet",
}


@dataclass(frozen=True)
class PlanOptions:
    """What `expand --plan` may choose; each provider maps it to its own options type."""

    strategy: str | None = None
    cidr: str | None = None
    add_nodes: int | None = None
    nodegroup_name: str | None = None
    template_nodegroup: str | None = None


@dataclass(frozen=True)
class StepOutcome:
    """One row of an apply's result: `done` (changed something) or `skipped` (found already done)."""

    step_id: str
    action: str
    status: str
    outputs: Mapping[str, Any]


def utc_now() -> str:
    """UTC ISO-8601 to the second, the form every document cidrx writes uses."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def require_supported(target: Target) -> None:
    if target.provider not in SUPPORTED:
        raise InvalidInput(_NOT_YET.get(target.provider, f"unknown provider {target.provider!r}"))


def _collect_kube(opts: TargetOptions, provider: str) -> KubeSection:
    """The cluster side. Unreachable gives `available=False` with the reason (collect_kube decides that);
    access denied is an error, since a silently partial snapshot would mislead a plan."""
    if opts.no_kube:
        return KubeSection(available=False, reason="in-cluster checks skipped (--no-kube)")
    from cidrx.kube.collect import collect_kube

    return collect_kube(opts.kubeconfig, opts.context, provider=provider)


def check_same_cluster(kube: KubeSection, eks: EksSection, target: Target) -> None:
    """Refuse a kubeconfig context that points at another cluster than the EKS target (the current context
    is often a different cluster): its nodes' addresses must lie in the cluster VPC."""
    if not kube.available or not kube.nodes:
        return
    vpc = [ip_network(c.cidr) for c in eks.vpc.cidrs if c.state in ("associated", "associating")]
    for node in kube.nodes:
        with contextlib.suppress(ValueError):
            if any(ip_address(node.internal_ip) in net for net in vpc):
                return
    raise InvalidInput(
        f"Kubernetes context {kube.context or '(current)'} does not look like {target.label()}: none of its "
        f"{len(kube.nodes)} node(s) has an address in {eks.vpc.vpc_id}",
        hint=f"pass --context for this cluster (aws eks update-kubeconfig --name {target.cluster}), or --no-kube",
    )


def collect_snapshot(target: Target, opts: TargetOptions) -> Snapshot:
    """A fresh, sealed snapshot of `target` (cloud section, plus the cluster unless --no-kube)."""
    require_supported(target)
    from cidrx.eks.api import EksApi
    from cidrx.eks.collect import collect_eks

    assert target.region is not None  # resolve_target guarantees it for EKS
    taken_at = utc_now()
    kube = _collect_kube(opts, target.provider)
    # Nodes may run instance types no node group names (self-managed groups, Karpenter).
    node_types = sorted({n.instance_type for n in kube.nodes if "." in n.instance_type})
    eks = collect_eks(EksApi(target.region, opts.profile), target.cluster, extra_instance_types=node_types)
    check_same_cluster(kube, eks, target)
    return seal(Snapshot(target=target, taken_at=taken_at, kube=kube, eks=eks))


def analyze(snapshot: Snapshot) -> Diagnosis:
    require_supported(snapshot.target)
    from cidrx.eks.analyze import analyze as analyze_eks

    return analyze_eks(snapshot)


def make_plan(snapshot: Snapshot, opts: PlanOptions) -> Plan:
    require_supported(snapshot.target)
    from cidrx.eks.plan import EksPlanOptions
    from cidrx.eks.plan import make_plan as make_eks_plan

    eks_opts = EksPlanOptions(
        strategy=opts.strategy or "custom-networking",
        cidr=opts.cidr,
        add_nodes=opts.add_nodes,
        nodegroup_name=opts.nodegroup_name,
        template_nodegroup=opts.template_nodegroup,
        created_at=utc_now(),
    )
    return make_eks_plan(snapshot, eks_opts)


def check_drift(plan: Plan, snapshot: Snapshot) -> None:
    """Raise StalePlan (exit 4) when what `plan` relied on no longer holds in `snapshot`."""
    require_supported(plan.target)
    from cidrx.eks.plan import check_drift as check_eks_drift

    check_eks_drift(plan, snapshot)


def kube_api(opts: TargetOptions, snapshot: Snapshot) -> KubeApi | None:
    """The Kubernetes client for steps that change in-cluster objects; None when the fresh snapshot could
    not reach the cluster (those steps then stop with a message saying so)."""
    if opts.no_kube or not snapshot.kube.available:
        return None
    from cidrx.kube.api import KubeApi

    return KubeApi(opts.kubeconfig, opts.context)


def apply_plan(
    plan: Plan, plan_path: str | Path, snapshot: Snapshot, opts: TargetOptions, progress: Progress
) -> list[StepOutcome]:
    """Run `plan` through the engine: drift check (against `snapshot`, taken just now) before any write,
    then every step with the journal beside `plan_path`. Raises StalePlan / ApplyInterrupted / AccessDenied."""
    require_supported(plan.target)
    from cidrx.eks.api import EksApi
    from cidrx.eks.steps import EXECUTORS, EksApis
    from cidrx.engine.apply import run_plan
    from cidrx.engine.executor import StepContext
    from cidrx.engine.journal import Journal
    from cidrx.engine.waiting import Waiter

    assert plan.target.region is not None  # every EKS target has one (resolve_target, load_plan)
    journal = Journal.open(plan_path, plan)
    apis = EksApis(eks=EksApi(plan.target.region, opts.profile), kube=kube_api(opts, snapshot))
    ctx = StepContext(
        plan=plan,
        apis=apis,
        waiter=Waiter(report=progress.waiting, report_every=progress.report_every),
        progress=progress,
    )
    result = run_plan(plan, EXECUTORS, ctx, journal, preflight=lambda: check_drift(plan, snapshot))
    return [StepOutcome(s.step_id, s.action, s.status, s.outputs) for s in result.steps]
