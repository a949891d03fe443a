"""The in-cluster IPAMs as one piece every provider shares.

Whatever cloud a cluster runs on, its in-cluster IPAM pools can run dry on their own: `diagnose` adds
these checks for every target whose cluster has the CRDs, and the reclaim / calico-pool plans only touch
the Kubernetes API, so they are planned, drift-checked and applied here rather than by a cloud provider.
Each IPAM is an object (the `Ipam` protocol) its registry entry names; nothing here names an IPAM.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

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


class Ipam(Protocol):
    """What an in-cluster IPAM package exports as `IPAM` (its registry entry names it with `ipam`)."""

    def analyze(self, section: Any, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        """Capacity and findings of its `section` of the snapshot's kube section (never None here)."""
        ...

    def make_reclaim_plan(self, snapshot: Snapshot, created_at: str) -> Plan: ...

    def make_pool_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan | None:
        """A plan adding address space (None: it has no such strategy)."""
        ...

    def check_drift(self, plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None: ...

    def executors(self) -> Mapping[str, Executor]: ...


def _objects() -> list[tuple[registry.IpamSpec, Ipam]]:
    """The IPAMs of every provider's clusters, in registration order (their findings' order); those
    collected for some providers only are analysed by those providers."""
    return [(spec, registry.load(spec.ipam)) for spec in registry.ipams() if spec.ipam and not spec.providers]


def analyze(kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
    """Capacity and findings of every IPAM the snapshot found in the cluster (none: nothing)."""
    capacity: list[Capacity] = []
    findings: list[Finding] = []
    for spec, ipam in _objects():
        section = getattr(kube, spec.field)
        if section is not None:
            c, f = ipam.analyze(section, kube)
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


def _require(snapshot: Snapshot, spec: registry.IpamSpec) -> Ipam:
    """The IPAM's object, when the snapshot read the cluster and found its pools."""
    kube = snapshot.kube
    if not kube.available:
        raise InvalidInput(f"{spec.name} plans need the Kubernetes API, which was not reachable: {kube.reason}")
    section = getattr(kube, spec.field)
    if section is None or not section.pools:
        raise InvalidInput(f"no {spec.name} IP pools found in {snapshot.target.label()}: nothing to reclaim or extend")
    ipam: Ipam = registry.load(spec.ipam)
    return ipam


def make_reclaim_plan(snapshot: Snapshot, ipam: str, created_at: str) -> Plan:
    owners = {s.owner for s in registry.strategies() if s.reclaim}
    reclaiming = [i.name for i in registry.ipams() if i.name in owners]
    spec = registry.ipam_spec(ipam)
    if spec is None or ipam not in reclaiming:
        raise InvalidInput(f"unknown IPAM {ipam!r}; choose one of {', '.join(reclaiming)}")
    return _require(snapshot, spec).make_reclaim_plan(snapshot, created_at)


def make_expand_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    """The plan of an in-cluster expand strategy (`opts.strategy`), made by the IPAM that owns it."""
    spec = _owner(opts.strategy or "")
    plan = _require(snapshot, spec).make_pool_plan(snapshot, opts, created_at)
    if plan is None:
        raise InvalidInput(f"--strategy {opts.strategy} is not an expand plan {spec.title} can make")
    return plan


def _owner(strategy_name: str) -> registry.IpamSpec:
    strategy = registry.strategy(strategy_name)
    spec = registry.ipam_spec(strategy.owner) if strategy is not None else None
    if spec is None or not spec.ipam or spec.providers:
        raise InvalidInput(f"plan strategy {strategy_name!r} is not an in-cluster IPAM plan")
    return spec


def _object(plan: Plan) -> Ipam:
    ipam: Ipam = registry.load(_owner(plan.strategy).ipam)
    return ipam


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """`begun`: steps an earlier apply of `plan` started (their entries are re-decided per entry instead)."""
    _object(plan).check_drift(plan, snapshot, begun)


def executors(plan: Plan) -> Mapping[str, Executor]:
    return _object(plan).executors()
