"""Plain Kubernetes as a provider: the entry points the use cases (`cidrx.app`) call for `--k8s` targets.

Why it exists: clusters outside GKE/EKS (kubeadm, on-premises, kind) run out of pod addresses too, through
node IPAM (`--allocate-node-cidrs`) or an in-cluster IPAM. There is no cloud section: the snapshot is the
cluster alone. The checks and plans of the in-cluster IPAMs every provider's clusters may run are added by
the use cases (`cidrx.app`), so this module covers only what is specific to a cluster without a cloud: the registered
IPAMs collected for `k8s` targets only (their `providers` name it) and reachability. No IPAM is named here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cidrx.model.snapshot import Snapshot
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Diagnosis
    from cidrx.model.kube import KubeSection
    from cidrx.model.options import Access
    from cidrx.model.plan import Plan

# No expand strategy of its own: the in-cluster IPAMs' expand and reclaim plans are theirs (cidrx.app.plan).
cluster_only = False  # its targets are reached through `apis` (cidrx.kube.api.KubeApis), like a cloud's


def collect(target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot:
    return Snapshot(target=target, taken_at=taken_at, kube=kube)


def analyze(snapshot: Snapshot) -> Diagnosis:
    from cidrx import registry
    from cidrx.model.findings import Capacity, Finding, kube_unreachable, make_diagnosis

    kube = snapshot.kube
    capacity: list[Capacity] = []
    findings: list[Finding] = []
    # The IPAMs collected only for this provider's targets (node IPAM) are part of its diagnosis.
    for spec in registry.ipams():
        if snapshot.target.provider in spec.providers and spec.ipam:
            c, f = registry.load(spec.ipam).analyze(getattr(kube, spec.field), kube)
            capacity += c
            findings += f
    if not kube.available:
        findings.append(
            kube_unreachable(
                "in-cluster checks did not run: the Kubernetes API could not be read",
                "check the kubeconfig and context (--kubeconfig, --context) and network access to the API server, "
                "then run again",
                reason=kube.reason or None,
                subject=kube.context or snapshot.target.cluster,
            )
        )
    return make_diagnosis(snapshot.target, snapshot.fingerprint, capacity, findings)


def apis(plan: Plan, access: Access, kube: KubeApi | None) -> Any:
    from cidrx.kube.api import KubeApis

    return KubeApis(kube=kube)


def address_maps(snapshot: Snapshot) -> Sequence[Any]:
    return ()


def cloud_permissions() -> tuple[str, ...]:
    return ()


PROVIDER = sys.modules[__name__]
"""This module is the provider object `cidrx.registry` names (`cidrx.providers.base.Provider`)."""
