"""`cidrx permissions`: print the least-privilege IAM policy / GCP role and Kubernetes ClusterRole.

Why it exists: whoever sets up the CI job has to grant cidrx exactly what it uses. The lists come from
cidrx.app.permissions: the collectors' reads and the permissions each plan module declares for its steps, so
the command works wherever cidrx is installed and follows the steps as they change.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import click

from cidrx import registry
from cidrx.cli.options import OutputFormat


def iam_policy_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc["iam_policy"], indent=2) + "\n"


def gcp_role_yaml(doc: dict[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(doc["gcp_role"], sort_keys=False, width=1000))


def gcp_projects_comment(doc: dict[str, Any]) -> str:
    """Under Shared VPC the role is split: what the host project (the network's) and the service project (the
    cluster's) must grant; without Shared VPC both are the cluster's project and the role above is all."""
    split = doc.get("gcp_projects") or {}
    if not split:
        return ""
    lines = ["# Shared VPC: grant these in the HOST project (the network's; a network admin there):"]
    lines += [f"#   {p}" for p in split.get("host_project", [])]
    lines.append("# and these in the SERVICE project (the cluster's):")
    lines += [f"#   {p}" for p in split.get("service_project", [])]
    return "\n".join(lines) + "\n"


def cluster_role_yaml(doc: dict[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(doc["cluster_role"], sort_keys=False, default_flow_style=None, width=1000))


def render_text(doc: dict[str, Any]) -> str:
    """A YAML stream: the cloud document (IAM policy as JSON, which YAML reads too; or the GCP role), then
    the ClusterRole. Comments say what each is for."""
    purpose = doc["for"]
    role = doc["cluster_role"]["metadata"]["name"]
    parts: list[str] = []
    if "iam_policy" in doc:
        parts.append(
            f"# AWS IAM policy for `cidrx` ({purpose}) on EKS: attach it to the role or user cidrx runs as.\n"
            + iam_policy_json(doc)
        )
    elif "gcp_role" in doc:
        parts.append(
            f"# Google Cloud custom role for `cidrx` ({purpose}) on GKE:\n"
            f"#   gcloud iam roles create cidrx_{doc['provider']}_{purpose} --project PROJECT --file THIS_PART.yaml\n"
            + gcp_role_yaml(doc)
            + gcp_projects_comment(doc)
        )
    elif "azure_role" in doc:
        parts.append(
            f"# Azure custom role for `cidrx` ({purpose}): set AssignableScopes, then\n"
            "#   az role definition create --role-definition THIS_PART.json\n"
            + json.dumps(doc["azure_role"], indent=2)
            + "\n"
        )
    parts.append(
        f"# Kubernetes RBAC for `cidrx` ({purpose}): bind it to the identity cidrx uses in the cluster\n"
        f"# (kubectl create clusterrolebinding {role} --clusterrole {role} --user/--group/--serviceaccount ...).\n"
        + cluster_role_yaml(doc)
    )
    return "---\n".join(parts)


def _provider_flags(f: Callable[..., Any]) -> Callable[..., Any]:
    """One flag per registered provider (`--eks`, `--gke`, `--k8s`, ...), handed on as `chosen`."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        chosen = [p.name for p in registry.providers() if kwargs.pop(p.name)]
        return f(*args, chosen=chosen, **kwargs)

    for p in reversed(registry.providers()):
        wrapper = click.option(p.flag, p.name, is_flag=True, help=p.permissions_help or p.help)(wrapper)
    return wrapper


@click.command(short_help="Print the least-privilege IAM policy / GCP or Azure role and RBAC ClusterRole.")
@_provider_flags
@click.option(
    "--for",
    "purpose",
    type=click.Choice(["diagnose", "apply", "rollback", "all"]),
    default="all",
    show_default=True,
    help="diagnose: read-only (diagnose, snapshot, --plan). apply: also every write the apply steps make. "
    "rollback: what `cidrx rollback` needs to undo them. all: apply and rollback.",
)
@click.option(
    "-o",
    "--output",
    type=OutputFormat(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format (text: table).",
)
def permissions(chosen: list[str], purpose: str, output: str) -> int:
    """Print what cidrx needs: an AWS IAM policy (--eks), Google Cloud permissions and a custom role
    (--gke) or an Azure custom role definition (--aks), and always a Kubernetes ClusterRole.

    \b
      cidrx permissions --eks --for diagnose               read-only, for scheduled CI
      cidrx permissions --eks -o json | jq .iam_policy     just the policy document
      cidrx permissions --gke -o json | jq .gcp_role       the role file for gcloud
      cidrx permissions --aks -o json | jq .azure_role     the role definition for az
    """
    from cidrx.app.permissions import document, needs
    from cidrx.errors import InvalidInput

    if len(chosen) > 1:  # the words of every other command's target options (cli/options.py)
        raise InvalidInput(f"choose one provider, not {' and '.join('--' + p for p in chosen)}")
    if not chosen:
        flags = [p.flag for p in registry.providers()]
        raise InvalidInput(f"say which provider: {', '.join(flags[:-1])} or {flags[-1]}")
    provider = chosen[0]
    doc = document(needs(provider, purpose))
    if output == "json":
        click.echo(json.dumps(doc, indent=2))
    # table (or its other name, text): the documents as a YAML stream, each with a comment saying what it is
    else:
        click.echo(render_text(doc), nl=False)
    return 0
