"""The AKS migration actions: cordon a node of an old agent pool whose pod subnet is full, evict its pods with
the Eviction API honouring PodDisruptionBudgets (both Kubernetes' own executors, cidrx.kube.drain_steps), and
scale the old agent pool to 0 through the agent pool API; with their undos (uncordon; restore the count and
autoscaler settings the apply journal recorded).

The scale step is an ARM PUT of the agent pool with its writable properties as read, autoscaling off
(`enableAutoScaling=false`, no min/max count: the autoscaler owns an autoscaled pool's count) and `count` 0,
sent with `If-Match` and the ETag of that read, so a concurrent change to the pool makes it fail (412) instead of
being overwritten (docs/cloud-facts.md, "AKS migration").
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.kube.drain_steps import drain_actions
from cidrx.model.plan import Step
from cidrx.providers.aks.actions.common import POOL_TIMEOUT, aks_api, wait
from cidrx.registry import Action

SCALE_PERMISSIONS = (
    "Microsoft.ContainerService/managedClusters/agentPools/read",
    "Microsoft.ContainerService/managedClusters/agentPools/write",
)
# Read-only properties of ManagedClusterAgentPoolProfileProperties (azure-rest-api-specs, managedClusters.json):
# ARM returns them on GET, a PUT does not send them back.
READ_ONLY = ("provisioningState", "currentOrchestratorVersion", "nodeImageVersion", "eTag")


def scaling(properties: dict[str, Any]) -> dict[str, Any]:
    """What a scale-down changes and its undo restores: the count and the autoscaler settings."""
    auto = bool(properties.get("enableAutoScaling"))
    out: dict[str, Any] = {"count": int(properties.get("count") or 0), "enableAutoScaling": auto}
    if auto:
        out["minCount"] = properties.get("minCount")
        out["maxCount"] = properties.get("maxCount")
    return out


def _body(pool: dict[str, Any], to: dict[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in (pool.get("properties") or {}).items() if k not in READ_ONLY}
    for key in ("minCount", "maxCount"):
        props.pop(key, None)
    props.update({k: v for k, v in to.items() if v is not None})
    return {"properties": props}


def _get(params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
    return aks_api(ctx).get_agent_pool(params["resource_group"], params["cluster"], params["pool"])


def _put(params: dict[str, Any], ctx: StepContext, pool: dict[str, Any], to: dict[str, Any], what: str) -> None:
    poller = aks_api(ctx).update_agent_pool(
        params["resource_group"], params["cluster"], params["pool"], _body(pool, to), str(pool.get("etag") or "")
    )
    wait(ctx, poller, what, POOL_TIMEOUT)


class ScaleAgentPool:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        pool = _get(params, ctx)
        return {"scaling": scaling(pool.get("properties") or {})} if pool is not None else {}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = _get(params, ctx)
        if pool is None:
            return {"agent_pool": params["pool"], "gone": True}  # deleted since: nothing left to scale
        return {"agent_pool": params["pool"]} if scaling(pool.get("properties") or {}) == params["to"] else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        pool = _get(params, ctx)
        if pool is None:
            return {"agent_pool": params["pool"], "gone": True}
        _put(params, ctx, pool, params["to"], f"scaling agent pool {params['pool']} to 0")
        return {"agent_pool": params["pool"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None  # the PUT's long-running operation was waited on

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"agent pool {params['pool']} is not scaled to 0 with autoscaling off")


class ScalePoolBack:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        was = (ctx.recorded_before.get(step.id) or {}).get("scaling")
        if not was:
            return None
        pool = _get(params, ctx)
        if pool is None or scaling(pool.get("properties") or {}) == was:
            return None
        return {"scaling": was}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        s = found["scaling"]
        auto = f", autoscaling {s['minCount']}-{s['maxCount']}" if s.get("enableAutoScaling") else ""
        return f"scale agent pool {params['pool']} back to {s['count']} node(s){auto}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        pool = _get(params, ctx)
        if pool is None:
            return {}
        _put(params, ctx, pool, found["scaling"], f"scaling agent pool {params['pool']} back")
        return {"agent_pool": params["pool"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


CORDON_NODE, EVICT_NODE_PODS = drain_actions("aks")
SCALE_AGENT_POOL = Action(
    "aks.scale-agent-pool", SCALE_PERMISSIONS, ScaleAgentPool, undo=ScalePoolBack, undo_permissions=SCALE_PERMISSIONS
)
