"""GKE in fleet mode (`diagnose --gke --project P --all-clusters`): the clusters of a project in every
location, and the kubeconfig context `gcloud container clusters get-credentials` names for each.

Why it exists: the registry names these hooks (`list_clusters`, `kube_context`), so the CLI and
cidrx.fleet list and match clusters of any provider without naming one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cidrx.model.fleet import Listing
from cidrx.model.target import Target


def list_clusters(*, region: str | None, project: str | None, profile: str | None) -> Listing:
    from cidrx.providers.gke.api import ALL_LOCATIONS, GkeApi

    assert project is not None  # the fleet flags require --project
    listed = GkeApi(project, ALL_LOCATIONS).list_clusters()
    found = sorted((str(c.get("location", "")), str(c.get("name", ""))) for c in listed.get("clusters", []))
    missing = [str(z) for z in listed.get("missingZones", [])]
    return Listing(
        tuple(Target("gke", name, project=project, location=loc) for loc, name in found),
        notes=(f"GKE could not list clusters in {', '.join(missing)}: clusters there are not diagnosed",)
        if missing
        else (),
        empty=f"no GKE cluster in project {project}: nothing to diagnose",
        empty_hint="check --project and the credentials",
    )


def gke_context(target: Target, contexts: Sequence[str]) -> str | None:
    """The context `gcloud container clusters get-credentials` writes: `gke_PROJECT_LOCATION_CLUSTER`."""
    name = f"gke_{target.project}_{target.location}_{target.cluster}"
    return name if name in contexts else None


def kube_context(target: Target, contexts: Sequence[str], account: Callable[[], Any] | None) -> tuple[str | None, str]:
    """(the context, or None; the name a missing one would have)."""
    return gke_context(target, contexts), f"gke_{target.project}_{target.location}_{target.cluster}"
