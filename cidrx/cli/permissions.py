"""`cidrx permissions`: print the least-privilege IAM policy / GCP role and Kubernetes ClusterRole.

Why it exists: whoever sets up the CI job has to grant cidrx exactly what it uses. The lists come from
cidrx.permissions; the write side is read off plans the real planners make from the example snapshots
shipped in the source tree (examples/*.snapshot.json), so it follows the steps as they change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cidrx.errors import CidrxError

if TYPE_CHECKING:
    from cidrx.model.plan import Plan

EXAMPLES_ENV = "CIDRX_EXAMPLES_DIR"


def examples_dir() -> Path:
    """examples/ beside the package (a source checkout or editable install), or $CIDRX_EXAMPLES_DIR."""
    import os

    import cidrx

    configured = os.environ.get(EXAMPLES_ENV)
    return Path(configured) if configured else Path(cidrx.__file__).resolve().parent.parent / "examples"


def _plans() -> list[Plan]:
    from cidrx.model.snapshot import load_snapshot
    from cidrx.permissions import representative_plans

    where = examples_dir()
    files = sorted(where.glob("*.snapshot.json"))
    if not files:
        raise CidrxError(
            f"no example snapshots in {where}: the write permissions are read off plans made from them",
            hint=f"run from a source checkout of cidrx, or set {EXAMPLES_ENV} to its examples/ folder",
        )
    return representative_plans(load_snapshot(f) for f in files)


def render_text(doc: dict[str, Any]) -> str:
    """A YAML stream: the cloud document (IAM policy as JSON, which YAML reads too; or the GCP role), then
    the ClusterRole. Comments say what each is for."""
    import yaml

    provider, purpose = doc["provider"], doc["for"]
    parts: list[str] = []
    if provider == "eks":
        parts.append(
            f"# AWS IAM policy for `cidrx` ({purpose}) on EKS: attach it to the role or user cidrx runs as.\n"
            + json.dumps(doc["iam_policy"], indent=2)
            + "\n"
        )
    elif provider == "gke":
        parts.append(
            f"# Google Cloud custom role for `cidrx` ({purpose}) on GKE:\n"
            "#   gcloud iam roles create cidrx --project PROJECT --file THIS_PART.yaml\n"
            + yaml.safe_dump(doc["gcp_role"], sort_keys=False, width=1000)
        )
    parts.append(
        f"# Kubernetes RBAC for `cidrx` ({purpose}): bind it to the identity cidrx uses in the cluster\n"
        "# (kubectl create clusterrolebinding cidrx --clusterrole cidrx-... --user/--group/--serviceaccount ...).\n"
        + yaml.safe_dump(doc["cluster_role"], sort_keys=False, default_flow_style=None, width=1000)
    )
    return "---\n".join(parts)


@click.command(short_help="Print the least-privilege IAM policy / GCP role and RBAC ClusterRole.")
@click.option("--eks", "provider", flag_value="eks", help="AWS IAM policy (JSON) for EKS targets.")
@click.option("--gke", "provider", flag_value="gke", help="Google Cloud permissions and custom role for GKE.")
@click.option("--k8s", "provider", flag_value="k8s", help="Only the Kubernetes ClusterRole (plain clusters).")
@click.option(
    "--for",
    "purpose",
    type=click.Choice(["diagnose", "apply", "all"]),
    default="all",
    show_default=True,
    help="diagnose: read-only (diagnose, snapshot, --plan). apply/all: also every write the apply steps make.",
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def permissions(provider: str | None, purpose: str, output: str) -> int:
    """Print what cidrx needs: an AWS IAM policy (--eks) or Google Cloud permissions and a custom role
    (--gke), and always a Kubernetes ClusterRole.

    \b
      cidrx permissions --eks --for diagnose               read-only, for scheduled CI
      cidrx permissions --eks -o json | jq .iam_policy     just the policy document
      cidrx permissions --gke -o json | jq .gcp_role       the role file for gcloud
    """
    from cidrx.errors import InvalidInput
    from cidrx.permissions import document, needs

    if provider is None:
        raise InvalidInput("say which provider: --eks, --gke or --k8s")
    plans = _plans() if purpose != "diagnose" else []
    doc = document(needs(provider, purpose, plans))
    if output == "json":
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(render_text(doc), nl=False)
    return 0
