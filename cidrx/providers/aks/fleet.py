"""AKS in fleet mode (`diagnose --aks --subscription S --all-clusters`): the managed clusters of a subscription
in every resource group, and the kubeconfig context `az aks get-credentials` names for each (the cluster's
name).

Why it exists: the registry names these hooks (`list_clusters`, `kube_context`), so the CLI and cidrx.app.fleet
list and match clusters of any provider without naming one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cidrx.model.fleet import Listing
from cidrx.model.target import Target


def list_clusters(*, region: str | None, project: str | None, profile: str | None, subscription: str | None) -> Listing:
    from cidrx.providers.aks.api import AksApi, parse_id

    assert subscription is not None  # the fleet flags require --subscription
    found = sorted(
        (parse_id(str(c.get("id") or ""))["rg"], str(c.get("name") or "")) for c in AksApi(subscription).list_clusters()
    )
    return Listing(
        tuple(Target("aks", name, subscription=subscription, resource_group=rg) for rg, name in found),
        empty=f"no AKS cluster in subscription {subscription}: nothing to diagnose",
        empty_hint="check --subscription and the credentials",
    )


def kube_context(target: Target, contexts: Sequence[str], account: Callable[[], Any] | None) -> tuple[str | None, str]:
    """(the context, or None; the name a missing one would have): `az aks get-credentials` names it after the
    cluster."""
    return (target.cluster if target.cluster in contexts else None), target.cluster
