"""What every EKS step executor and undo takes from the apply engine's StepContext: the AWS and Kubernetes
clients (EksApis), the plan tag every created resource carries, what the journal recorded before a change,
and the retry and timeout budgets they share.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.model import APPLIED_AT_TAG

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.providers.eks.api import EksApi


CONFLICT_RETRIES = 5  # re-reads of an object whose guarded replace met a concurrent writer (409)
# VPC CIDR association and add-on updates take seconds; rollouts of aws-node and Karpenter take minutes.
SHORT_TIMEOUT = 5 * 60.0
ROLLOUT_TIMEOUT = 15 * 60.0  # a Deployment's rollout (Karpenter's controller)


@dataclass(frozen=True)
class EksApis:
    """The clients a step uses: AWS always, Kubernetes when the apply could reach the cluster."""

    eks: EksApi
    kube: KubeApi | None


def eks_api(ctx: StepContext) -> EksApi:
    """The AWS client of this apply."""
    apis: EksApis = ctx.apis
    return apis.eks


def kube_api(ctx: StepContext, step: Step) -> KubeApi:
    """The Kubernetes client of this apply; `step` cannot run without one."""
    apis: EksApis = ctx.apis
    if apis.kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return apis.kube


def plan_tags(ctx: StepContext, tags: dict[str, str] | None = None) -> dict[str, str]:
    """`tags` plus the plan tag that lets resume and rollback find what this plan created, and the time it was
    created (diagnose says when a plan was applied)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {**(tags or {}), DIGEST_TAG: ctx.plan_id, APPLIED_AT_TAG: now}


def tag_of(obj: dict[str, Any]) -> str | None:
    """The plan tag of an AWS object (its Tags list, or a tags map), None when it has none."""
    tags = obj.get("Tags") or obj.get("tags") or {}
    if isinstance(tags, list):
        tags = {t.get("Key"): t.get("Value") for t in tags}
    value = tags.get(DIGEST_TAG)
    return str(value) if value is not None else None


def recorded_before(step: Step, ctx: StepContext) -> dict[str, Any] | None:
    """The `before` values the apply journal recorded for `step` (None: no record)."""
    before = (ctx.recorded_before.get(step.id) or {}).get("before")
    return dict(before) if isinstance(before, dict) else None


def recorded_outputs(step: Step, ctx: StepContext) -> dict[str, Any]:
    """Everything the apply journal recorded for `step` before its change."""
    return dict(ctx.recorded_before.get(step.id) or {})
