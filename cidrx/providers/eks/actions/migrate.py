"""The migration actions: cordon a node in full subnets, evict its pods with the Eviction API honouring
PodDisruptionBudgets, scale its old managed node group (UpdateNodegroupConfig) or self-managed Auto Scaling
group (UpdateAutoScalingGroup) down to 0; with their undos (uncordon, scale back to the size the apply journal
recorded). The cordon and eviction executors are Kubernetes' own (cidrx.kube.drain_steps); evicted pods are not
put back.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.kube.drain_steps import drain_actions
from cidrx.model.plan import Step
from cidrx.providers.eks.actions.context import eks_api
from cidrx.registry import Action

SCALE_PERMISSIONS = ("eks:DescribeNodegroup", "eks:UpdateNodegroupConfig")
SCALE_GROUP_PERMISSIONS = ("autoscaling:DescribeAutoScalingGroups", "autoscaling:UpdateAutoScalingGroup")
NODEGROUP_TIMEOUT = 20 * 60.0


def _scaling(ng: dict[str, Any]) -> dict[str, int]:
    sc = ng.get("scalingConfig") or {}
    return {
        "minSize": int(sc.get("minSize", 0)),
        "maxSize": int(sc.get("maxSize", 0)),
        "desiredSize": int(sc.get("desiredSize", 0)),
    }


class ScaleNodegroup:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        return {"scaling": _scaling(eks_api(ctx).describe_nodegroup(params["cluster"], params["name"]))}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        now = _scaling(eks_api(ctx).describe_nodegroup(params["cluster"], params["name"]))
        return {"nodegroup": params["name"]} if now == params["to"] else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        eks_api(ctx).update_nodegroup_scaling(params["cluster"], params["name"], params["to"])
        return {"nodegroup": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def probe() -> bool | None:
            ng = eks_api(ctx).describe_nodegroup(params["cluster"], params["name"])
            return True if _scaling(ng) == params["to"] and ng.get("status") == "ACTIVE" else None

        ctx.wait_until(f"node group {params['name']} to scale to 0", probe, timeout=NODEGROUP_TIMEOUT, interval=15)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"node group {params['name']} is not scaled to 0")


class ScaleBack:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        was = (ctx.recorded_before.get(step.id) or {}).get("scaling")
        if not was:
            return None
        now = _scaling(eks_api(ctx).describe_nodegroup(params["cluster"], params["name"]))
        return {"scaling": was} if now != was else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        s = found["scaling"]
        return f"scale node group {params['name']} back to {s['desiredSize']} (min {s['minSize']}, max {s['maxSize']})"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        eks_api(ctx).update_nodegroup_scaling(params["cluster"], params["name"], found["scaling"])
        return {"nodegroup": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class ScaleAutoScalingGroup:
    """A self-managed group: its Auto Scaling group's MinSize and DesiredCapacity to 0 (MaxSize kept). The group
    terminates the instances itself; a group that is gone has nothing left to scale."""

    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        return {"scaling": eks_api(ctx).group_size(params["name"])}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        now = eks_api(ctx).group_size(params["name"])
        return {"group": params["name"]} if now is None or now == params["to"] else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        eks_api(ctx).set_group_size(params["name"], params["to"])
        return {"group": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None  # the size is set at once; the group terminates its instances after

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"Auto Scaling group {params['name']} is not scaled to 0")


class ScaleGroupBack:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        was = (ctx.recorded_before.get(step.id) or {}).get("scaling")
        if not was:
            return None
        now = eks_api(ctx).group_size(params["name"])
        return {"scaling": was} if now is not None and now != was else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        s = found["scaling"]
        return (
            f"scale Auto Scaling group {params['name']} back to {s['desiredSize']} "
            f"(min {s['minSize']}, max {s['maxSize']})"
        )

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        eks_api(ctx).set_group_size(params["name"], found["scaling"])
        return {"group": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


CORDON_NODE, EVICT_NODE_PODS = drain_actions("eks")
SCALE_NODEGROUP = Action(
    "eks.scale-nodegroup", SCALE_PERMISSIONS, ScaleNodegroup, undo=ScaleBack, undo_permissions=SCALE_PERMISSIONS
)
SCALE_AUTO_SCALING_GROUP = Action(
    "eks.scale-auto-scaling-group",
    SCALE_GROUP_PERMISSIONS,
    ScaleAutoScalingGroup,
    undo=ScaleGroupBack,
    undo_permissions=SCALE_GROUP_PERMISSIONS,
)
