"""EKS in fleet mode (`diagnose --eks --region R --all-clusters`): the clusters of a region, and the
kubeconfig context each one's own tooling names (`aws eks update-kubeconfig`, `eksctl`).

Why it exists: the registry names these hooks (`list_clusters`, `kube_context`), so the CLI and
cidrx.fleet list and match clusters of any provider without naming one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from cidrx.model.fleet import Listing
from cidrx.model.target import Target

Account = tuple[str, str]  # (partition, account id)


def list_clusters(*, region: str | None, project: str | None, profile: str | None) -> Listing:
    from cidrx.providers.eks.api import EksApi

    assert region is not None  # the fleet flags require --region
    api = EksApi(region, profile)
    targets = [Target("eks", name, region=region) for name in sorted(api.list_clusters())]
    return Listing(
        tuple(targets),
        account=api.caller_account,
        empty=f"no EKS cluster in {region}: nothing to diagnose",
        empty_hint="check --region and --profile (the account the credentials use)",
    )


def eks_arn(target: Target, account: str, partition: str = "aws") -> str:
    """The context name `aws eks update-kubeconfig` writes: the cluster's ARN."""
    return f"arn:{partition}:eks:{target.region}:{account}:cluster/{target.cluster}"


def eks_context(target: Target, contexts: Sequence[str], account: Account | None) -> str | None:
    """The context of an EKS cluster: its exact ARN when the account is known (`account` is
    (partition, account id)); else the one context that is an ARN of this region and name in any
    account, or eksctl's `USER@CLUSTER.REGION.eksctl.io`. None when there is none, or several."""
    region, name = re.escape(target.region or ""), re.escape(target.cluster)
    if account is not None:
        arn = eks_arn(target, account[1], account[0])
        if arn in contexts:
            return arn
        pattern = re.compile(rf"^[^@]+@{name}\.{region}\.eksctl\.io$")
    else:
        pattern = re.compile(
            rf"^(arn:aws[a-z-]*:eks:{region}:\d{{12}}:cluster/{name}|[^@]+@{name}\.{region}\.eksctl\.io)$"
        )
    found = [c for c in contexts if pattern.match(c)]
    return found[0] if len(found) == 1 else None


def kube_context(
    target: Target, contexts: Sequence[str], account: Callable[[], Account | None] | None
) -> tuple[str | None, str]:
    """(the context, or None; the name a missing one would have). The account is asked only when some
    context is an ARN (it costs a request)."""
    known = account() if account is not None and any(c.startswith("arn:") for c in contexts) else None
    wanted = (
        eks_arn(target, known[1], known[0])
        if known
        else f"arn:aws:eks:{target.region}:ACCOUNT:cluster/{target.cluster}"
    )
    return eks_context(target, contexts, known), wanted
