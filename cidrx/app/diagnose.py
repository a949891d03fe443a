"""`diagnose` as a use case: collect a target into a sealed snapshot, and analyze one (the provider's
diagnosis plus the in-cluster IPAM analysis of whatever IPAMs the cluster runs).

Why it exists: the CLI's `diagnose`, `snapshot` and `expand --plan`, the exporter and fleet mode all collect
and analyze the same way; they call this module and never a provider directly.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cidrx import registry
from cidrx.app.owners import provider, require_supported
from cidrx.model.kube import KubeSection
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import in_cluster_flags

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Capacity, Diagnosis, Finding
    from cidrx.model.options import Access
    from cidrx.model.target import Target
    from cidrx.providers.base import Ipam


def utc_now() -> str:
    """UTC ISO-8601 to the second, the form every document cidrx writes uses."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def collect_kube(access: Access, provider_name: str, api: KubeApi | None = None) -> KubeSection:
    """The cluster side, read through `api` when one is already open (an apply's session), else through a
    client of its own. Unreachable gives `available=False` with the reason (collect_kube decides that);
    access denied is an error, since a silently partial snapshot would mislead a plan."""
    if access.no_kube:
        return KubeSection(available=False, reason="in-cluster checks skipped (--no-kube)")
    if api is not None:
        from cidrx.kube.collect import collect_with

        return collect_with(api, provider=provider_name)
    from cidrx.kube.collect import collect_kube as read_cluster

    return read_cluster(access.kubeconfig, access.context, provider=provider_name)


def collect_snapshot(target: Target, access: Access, api: KubeApi | None = None) -> Snapshot:
    """A fresh, sealed snapshot of `target` (cloud section, plus the cluster unless --no-kube)."""
    module = provider(target)
    taken_at = utc_now()
    kube = collect_kube(access, target.provider, api)
    return seal(module.collect(target, access, kube, taken_at))


def collect_target(target: Target, access: Access) -> Snapshot:
    """A fresh snapshot of `target` for a diagnosis.

    A plain Kubernetes target has nothing but the cluster: when its API cannot be read, the snapshot is
    empty and a diagnosis of it would pass a CI gate, so that is an access error (exit 6) instead.
    """
    from cidrx.errors import AccessDenied

    spec = require_supported(target)
    snap = collect_snapshot(target, access)
    if spec.in_cluster and not snap.kube.available:
        from cidrx.model.findings import KUBECONFIG_FROM_ENV

        reason = snap.kube.reason or "the Kubernetes API is unreachable"
        raise AccessDenied(
            f"cannot read {target.label()}: {reason}",
            hint="KUBECONFIG is set and was used: check that its context (or --context) names this cluster and "
            "that the API server is reachable from here"
            if KUBECONFIG_FROM_ENV in reason
            else "check --kubeconfig / --context and network access to the API server",
        )
    return snap


def collect_cloud_side(target: Target, access: Access, why_no_cluster: str) -> Snapshot:
    """A snapshot of the cloud side alone, its cluster section saying why it was not read."""
    kube = KubeSection(available=False, reason=why_no_cluster)
    return seal(provider(target).collect(target, access, kube, utc_now()))


def collect_cluster(target: Target, access: Access, api: KubeApi | None = None) -> Snapshot:
    """A sealed snapshot of `target`'s cluster alone (what a cluster-only plan is checked against)."""
    taken_at = utc_now()
    return seal(Snapshot(target=target, taken_at=taken_at, kube=collect_kube(access, target.provider, api)))


def analyze(snapshot: Snapshot) -> Diagnosis:
    """The provider's diagnosis plus the in-cluster IPAM checks for whatever IPAMs the cluster runs."""
    from cidrx.model.findings import make_diagnosis

    d = provider(snapshot.target).analyze(snapshot)
    capacity, findings = analyze_cluster(snapshot.kube)
    if not capacity and not findings:
        return d
    return make_diagnosis(d.target, d.snapshot_fingerprint, [*d.capacity, *capacity], [*d.findings, *findings])


def cluster_diagnosis(snapshot: Snapshot) -> Diagnosis:
    """The in-cluster IPAMs' diagnosis alone (of a snapshot that holds only the cluster)."""
    from cidrx.model.findings import make_diagnosis

    capacity, findings = analyze_cluster(snapshot.kube)
    return make_diagnosis(snapshot.target, snapshot.fingerprint, capacity, findings)


def _ipams() -> list[tuple[registry.IpamSpec, Ipam]]:
    """The IPAMs of every provider's clusters, in registration order (their findings' order); those
    collected for some providers only are analysed by those providers."""
    return [(spec, registry.load(spec.ipam)) for spec in registry.ipams() if spec.ipam and not spec.providers]


def analyze_cluster(kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
    """Capacity and findings of every IPAM the snapshot found in the cluster (none: nothing)."""
    capacity: list[Capacity] = []
    findings: list[Finding] = []
    for spec, ipam in _ipams():
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


def address_maps(snapshot: Snapshot) -> tuple[Any, ...]:
    """The address maps of the snapshot (cidrx.model.netmap.NetworkMap): the provider's networks (its
    `maps`: address blocks, private spaces) and the in-cluster IPAM pools, for the HTML map."""
    spec = require_supported(snapshot.target)
    own = registry.load(spec.maps)(snapshot) if spec.maps else provider(snapshot.target).address_maps(snapshot)
    from cidrx.ipam.netmap import address_maps as ipam_maps

    return (*own, *ipam_maps(snapshot.kube))
