"""The in-cluster IPAMs (Whereabouts, Calico) as one piece every provider shares.

Whatever cloud a cluster runs on, its in-cluster IPAM pools can run dry on their own: `diagnose` adds
these checks for every target whose cluster has the CRDs, and the reclaim / calico-pool plans only touch
the Kubernetes API, so they are planned, drift-checked and applied here rather than by a cloud provider.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.model.target import in_cluster_flags

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.kube.model import KubeSection
    from cidrx.model.findings import Capacity, Finding
    from cidrx.model.options import PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot


def analyze(kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
    """Capacity and findings of every IPAM the snapshot found in the cluster (none: nothing)."""
    capacity: list[Capacity] = []
    findings: list[Finding] = []
    pods = {p.key: p for p in kube.ipam_pods}
    if kube.whereabouts is not None:
        from cidrx.ipam.whereabouts.analyze import analyze_whereabouts

        c, f = analyze_whereabouts(kube.whereabouts, pods, available=kube.available)
        capacity += c
        findings += f
    if kube.calico is not None:
        from cidrx.ipam.calico.analyze import analyze_calico

        c, f = analyze_calico(kube.calico, pods, kube.nodes, available=kube.available)
        capacity += c
        findings += f
    return capacity, [_through_context(f, kube.context) for f in findings]


def _through_context(finding: Finding, context: str) -> Finding:
    """The finding with its in-cluster fix commands (`cidrx reclaim --k8s ...`, `cidrx expand --k8s ...`)
    pointed at the kubeconfig context the cluster was read through: the current context may be another."""
    flags = in_cluster_flags(context)
    if flags == "--k8s":
        return finding
    text = finding.remediation
    for verb in ("reclaim", "expand"):
        text = text.replace(f"cidrx {verb} --k8s ", f"cidrx {verb} {flags} ")
    return replace(finding, remediation=text)


def _require(snapshot: Snapshot, ipam: str) -> None:
    kube = snapshot.kube
    if not kube.available:
        raise InvalidInput(f"{ipam} plans need the Kubernetes API, which was not reachable: {kube.reason}")
    section = getattr(kube, ipam)
    if section is None or not section.pools:
        raise InvalidInput(f"no {ipam} IP pools found in {snapshot.target.label()}: nothing to reclaim or extend")


def make_reclaim_plan(snapshot: Snapshot, ipam: str, created_at: str) -> Plan:
    _require(snapshot, ipam)
    if ipam == "whereabouts":
        from cidrx.ipam.whereabouts.plan import make_reclaim_plan as whereabouts_plan

        return whereabouts_plan(snapshot, created_at)
    if ipam == "calico":
        from cidrx.ipam.calico.plan import make_reclaim_plan as calico_plan

        return calico_plan(snapshot, created_at)
    raise InvalidInput(f"unknown IPAM {ipam!r}; choose one of {', '.join(i.name for i in registry.ipams())}")


def make_expand_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    _require(snapshot, "calico")
    from cidrx.ipam.calico.plan import make_pool_plan

    return make_pool_plan(snapshot, opts, created_at)


def _module(plan: Plan) -> str:
    strategy = registry.strategy(plan.strategy)
    if strategy is None or registry.ipam_spec(strategy.owner) is None:
        raise InvalidInput(f"plan strategy {plan.strategy!r} is not an in-cluster IPAM plan")
    return strategy.owner


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """`begun`: steps an earlier apply of `plan` started (their entries are re-decided per entry instead)."""
    if _module(plan) == "whereabouts":
        from cidrx.ipam.whereabouts.plan import check_drift as whereabouts_drift

        whereabouts_drift(plan, snapshot, begun)
    else:
        from cidrx.ipam.calico.plan import check_drift as calico_drift

        calico_drift(plan, snapshot, begun)


def executors(plan: Plan) -> Mapping[str, Executor]:
    if _module(plan) == "whereabouts":
        from cidrx.ipam.whereabouts.steps import EXECUTORS as WHEREABOUTS

        return WHEREABOUTS
    from cidrx.ipam.calico.steps import EXECUTORS as CALICO

    return CALICO
