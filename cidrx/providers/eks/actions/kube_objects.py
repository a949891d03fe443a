"""Writing Kubernetes objects a plan changes in place (Karpenter's EC2NodeClass and controller Deployment, EKS
Auto Mode's NodeClass): read, change, replace guarded by resourceVersion (a concurrent writer makes the
replace fail with 409 and the step reads again), with the plan label on what was changed, and taking the
change back the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cidrx.errors import CloudError
from cidrx.model.plan import DIGEST_TAG
from cidrx.providers.eks.actions.context import CONFLICT_RETRIES

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi


def selector_ids(values: list[str]) -> list[dict[str, str]]:
    return [{"id": v} for v in values]


def labelled(obj: dict[str, Any], plan_id: str) -> bool:
    return (obj.get("metadata", {}).get("labels") or {}).get(DIGEST_TAG) == plan_id


def label(obj: dict[str, Any], plan_id: str) -> None:
    obj.setdefault("metadata", {}).setdefault("labels", {})[DIGEST_TAG] = plan_id


def replace_until_done(
    kube: KubeApi,
    res: tuple[str, str, str],
    name: str,
    namespace: str | None,
    change: Any,
) -> dict[str, Any]:
    """Read, change (a function of the object that edits it in place and returns what it replaced), replace
    guarded by resourceVersion; on 409 read again. Returns what `change` reported of the first read."""
    from cidrx.kube.errors import Conflict

    for _ in range(CONFLICT_RETRIES):
        current = kube.get_custom(*res, name, namespace)
        if current is None:
            raise CloudError(f"{res[2]} {name} no longer exists; make a new plan")
        before = change(current)
        try:
            kube.replace_custom(*res, current)
        except Conflict:
            continue
        return dict(before)
    raise CloudError(f"{res[2]} {name} kept changing under us; run the same command again")


def unmark(obj: dict[str, Any], had_labels: bool) -> None:
    """Drop the plan label (and the labels map, when the object had none before the apply)."""
    meta = obj.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != DIGEST_TAG}
    if labels or had_labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)


def restore_field(spec: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        spec.pop(key, None)
    else:
        spec[key] = value
