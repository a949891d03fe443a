"""The `cilium.restart-operator` step action: restart cilium-operator so it reads the grown cluster pool, then
verify that the nodes the plan was made for got a CIDR.

Why it exists: cilium-operator builds its cluster-pool allocators from `cluster-pool-ipv4-cidr` when it starts
(pkg/ipam/allocator/clusterpool/clusterpool.go), so a CIDR appended to the list is used only after a restart.
The restart is the one `kubectl rollout restart` does: a changed annotation on the Deployment's pod template,
here `cidrx.io/plan` = the plan id, written with a resourceVersion guard (and found again on a repeated apply).
Undo has nothing of its own to take back: the CIDR step's undo restarts the operator again after removing the
CIDR, in that order.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.ipam.addresses import v4_network
from cidrx.ipam.cilium.actions.objects import CONFLICT_RETRIES, guard, kube_of, meta_of, set_annotation
from cidrx.ipam.cilium.collect import node_from
from cidrx.ipam.cilium.model import POOL_GROUP
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.registry import Action

VERIFY_TIMEOUT = 600.0  # seconds for the operator to come back and hand the waiting nodes their CIDRs
BASE = "/spec/template/metadata/annotations"


def _deployment(ctx: StepContext, step: Step, params: dict[str, Any]) -> dict[str, Any]:
    found = kube_of(ctx, step).get_custom("apps", "v1", "deployments", params["name"], params["namespace"])
    if found is None:
        raise CloudError(
            f"Deployment {params['namespace']}/{params['name']} not found; restart cilium-operator by hand"
        )
    return found


def _template_annotations(obj: dict[str, Any]) -> dict[str, Any] | None:
    annotations: dict[str, Any] | None = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "annotations"
    )
    return annotations


def restarted_for(ctx: StepContext, step: Step, params: dict[str, Any]) -> str | None:
    """The pod template's `cidrx.io/plan` annotation: which restart cidrx last made (None: none, or no Deployment)."""
    found = kube_of(ctx, step).get_custom("apps", "v1", "deployments", params["name"], params["namespace"])
    annotations = _template_annotations(found) if found is not None else None
    return None if annotations is None else annotations.get(DIGEST_TAG)


def restart(ctx: StepContext, step: Step, params: dict[str, Any], value: str) -> Outputs:
    """Set the pod template's `cidrx.io/plan` annotation to `value` (a rollout), guarded; nothing when it
    already holds it."""
    from cidrx.kube.errors import Conflict

    api = kube_of(ctx, step)
    for _ in range(CONFLICT_RETRIES):
        obj = _deployment(ctx, step, params)
        annotations = _template_annotations(obj)
        if annotations is not None and annotations.get(DIGEST_TAG) == value:
            return {"deployment": params["name"], "restarted": value}
        if ((obj.get("spec") or {}).get("template") or {}).get("metadata") is None:
            ops = [
                guard(obj),
                {"op": "add", "path": "/spec/template/metadata", "value": {"annotations": {DIGEST_TAG: value}}},
            ]
        else:
            ops = [guard(obj), *set_annotation(annotations, BASE, value)]
        try:
            api.json_patch("apps", "v1", "deployments", params["name"], ops, params["namespace"])
        except Conflict:
            continue
        return {
            "deployment": params["name"],
            "restarted": value,
            "resourceVersion": str(meta_of(obj).get("resourceVersion")),
        }
    raise CloudError(
        f"Deployment {params['namespace']}/{params['name']} kept changing under us; run the same command again"
    )


class RestartOperator:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        annotations = _template_annotations(_deployment(ctx, step, params))
        if annotations is not None and annotations.get(DIGEST_TAG) == ctx.plan_id:
            return {"deployment": params["name"], "restarted": ctx.plan_id}
        return None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        return restart(ctx, step, params, ctx.plan_id)

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        """Every node that was waiting for a CIDR when the plan was made (and still exists) holds one now."""
        waiting = set(params.get("waiting") or ())
        if not waiting:
            return
        api = kube_of(ctx, step)

        def still_waiting() -> list[str]:
            nodes = [node_from(o) for o in api.iter_custom(POOL_GROUP, "v2", "ciliumnodes")]
            return sorted(n.name for n in nodes if n.name in waiting and not any(v4_network(c) for c in n.v4_pod_cidrs))

        def probe() -> bool | None:
            return True if not still_waiting() else None

        # Times out with ApplyInterrupted (exit 5): running the same command again verifies again.
        ctx.wait_until("CiliumNodes that were waiting for a pod CIDR to get one", probe, timeout=VERIFY_TIMEOUT)


class NothingToUndo:
    """The restart leaves nothing to take back: the CIDR step's undo restarts the operator after removing it."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return "nothing: the operator is restarted by the CIDR step's undo"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        return {}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


RESTART_PERMISSIONS = ("kubernetes: deployments.apps get,patch in kube-system named cilium-operator",)
RESTART_OPERATOR = Action(
    "cilium.restart-operator",
    (*RESTART_PERMISSIONS, "kubernetes: ciliumnodes.cilium.io list"),
    executor=RestartOperator,
    undo=NothingToUndo,
    undo_permissions=(),
)
