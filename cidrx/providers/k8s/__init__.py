"""Plain Kubernetes clusters (`--k8s`): no cloud API, everything comes from the cluster itself. Its declaration
(`SPEC`), read by cidrx.registry."""

from __future__ import annotations

from cidrx.registry import ProviderSpec, Strategy

SPEC = ProviderSpec(
    name="k8s",
    title="Kubernetes",
    help="Target a plain Kubernetes cluster.",
    requires=(),
    refuses=("region", "profile", "project", "location"),
    refuse_reason="--k8s reads the cluster through kubeconfig",
    finding_prefix="NODEIPAM-",
    context_hint="",
    provider="cidrx.providers.k8s.provider:PROVIDER",
    permissions_help="Only the Kubernetes ClusterRole (plain clusters).",
    in_cluster=True,
)

STRATEGIES: tuple[Strategy, ...] = ()
