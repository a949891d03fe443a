"""`cidrx permissions`: print the least-privilege IAM policy / GCP role and Kubernetes ClusterRole.

Why it exists: whoever sets up the CI job has to grant cidrx exactly what it uses. The lists come from
cidrx.permissions: the collectors' reads and the permissions each plan module declares for its steps, so
the command works wherever cidrx is installed and follows the steps as they change.
"""

from __future__ import annotations

import json
from typing import Any

import click


def iam_policy_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc["iam_policy"], indent=2) + "\n"


def gcp_role_yaml(doc: dict[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(doc["gcp_role"], sort_keys=False, width=1000))


def cluster_role_yaml(doc: dict[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(doc["cluster_role"], sort_keys=False, default_flow_style=None, width=1000))


def render_text(doc: dict[str, Any]) -> str:
    """A YAML stream: the cloud document (IAM policy as JSON, which YAML reads too; or the GCP role), then
    the ClusterRole. Comments say what each is for."""
    provider, purpose = doc["provider"], doc["for"]
    parts: list[str] = []
    if provider == "eks":
        parts.append(
            f"# AWS IAM policy for `cidrx` ({purpose}) on EKS: attach it to the role or user cidrx runs as.\n"
            + iam_policy_json(doc)
        )
    elif provider == "gke":
        parts.append(
            f"# Google Cloud custom role for `cidrx` ({purpose}) on GKE:\n"
            "#   gcloud iam roles create cidrx --project PROJECT --file THIS_PART.yaml\n" + gcp_role_yaml(doc)
        )
    parts.append(
        f"# Kubernetes RBAC for `cidrx` ({purpose}): bind it to the identity cidrx uses in the cluster\n"
        "# (kubectl create clusterrolebinding cidrx --clusterrole cidrx-... --user/--group/--serviceaccount ...).\n"
        + cluster_role_yaml(doc)
    )
    return "---\n".join(parts)


@click.command(short_help="Print the least-privilege IAM policy / GCP role and RBAC ClusterRole.")
@click.option("--eks", is_flag=True, help="AWS IAM policy (JSON) for EKS targets.")
@click.option("--gke", is_flag=True, help="Google Cloud permissions and custom role for GKE.")
@click.option("--k8s", is_flag=True, help="Only the Kubernetes ClusterRole (plain clusters).")
@click.option(
    "--for",
    "purpose",
    type=click.Choice(["diagnose", "apply", "all"]),
    default="all",
    show_default=True,
    help="diagnose: read-only (diagnose, snapshot, --plan). apply/all: also every write the apply steps make.",
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def permissions(eks: bool, gke: bool, k8s: bool, purpose: str, output: str) -> int:
    """Print what cidrx needs: an AWS IAM policy (--eks) or Google Cloud permissions and a custom role
    (--gke), and always a Kubernetes ClusterRole.

    \b
      cidrx permissions --eks --for diagnose               read-only, for scheduled CI
      cidrx permissions --eks -o json | jq .iam_policy     just the policy document
      cidrx permissions --gke -o json | jq .gcp_role       the role file for gcloud
    """
    from cidrx.errors import InvalidInput
    from cidrx.permissions import document, needs

    chosen = [name for name, given in (("eks", eks), ("gke", gke), ("k8s", k8s)) if given]
    if len(chosen) > 1:  # the words of every other command's target options (cli/options.py)
        raise InvalidInput(f"choose one provider, not {' and '.join('--' + p for p in chosen)}")
    if not chosen:
        raise InvalidInput("say which provider: --eks, --gke or --k8s")
    provider = chosen[0]
    doc = document(needs(provider, purpose))
    if output == "json":
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(render_text(doc), nl=False)
    return 0
