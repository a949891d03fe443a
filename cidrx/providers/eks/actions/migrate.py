"""The migration actions: cordon a node in full subnets, evict its pods with the Eviction API honouring
PodDisruptionBudgets, scale its old managed node group (UpdateNodegroupConfig) or self-managed Auto Scaling
group (UpdateAutoScalingGroup) down to 0; with their undos (uncordon, scale back to the size the apply journal
recorded). Evicted pods are not put back: their controllers already recreated them on nodes with addresses, so
that undo finds nothing to do.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import ApplyInterrupted, CloudError
from cidrx.kube.drain import to_evict
from cidrx.model.plan import Step
from cidrx.providers.eks.actions.context import eks_api, kube_api
from cidrx.registry import Action

NODE_PERMISSIONS = ("kubernetes: nodes get,patch",)
EVICT_PERMISSIONS = (
    "kubernetes: pods list",
    "kubernetes: pods/eviction create",
    "kubernetes: poddisruptionbudgets.policy list",
)
SCALE_PERMISSIONS = ("eks:DescribeNodegroup", "eks:UpdateNodegroupConfig")
SCALE_GROUP_PERMISSIONS = ("autoscaling:DescribeAutoScalingGroups", "autoscaling:UpdateAutoScalingGroup")
# How long one node's pods may take to leave (a budget allowing no disruption stops the apply after it).
EVICT_TIMEOUT = 10 * 60.0
NODEGROUP_TIMEOUT = 20 * 60.0


def _node(ctx: StepContext, step: Step, name: str) -> dict[str, Any] | None:
    return kube_api(ctx, step).get_custom("", "v1", "nodes", name)


def _cordoned(node: dict[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


class CordonNode:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        node = _node(ctx, step, params["node"])
        if node is None:
            return {"node": params["node"], "gone": True}  # already replaced: nothing to cordon
        return {"node": params["node"]} if _cordoned(node) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        kube_api(ctx, step).cordon(params["node"])
        return {"node": params["node"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        node = _node(ctx, step, params["node"])
        if node is not None and not _cordoned(node):
            raise CloudError(f"node {params['node']} is not cordoned")


class UncordonNode:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        node = _node(ctx, step, params["node"])
        return {"node": params["node"]} if node is not None and _cordoned(node) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"uncordon node {params['node']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        kube_api(ctx, step).cordon(params["node"], False)
        return {"node": params["node"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class EvictNodePods:
    def _left(self, step: Step, params: dict[str, Any], ctx: StepContext) -> list[tuple[str, str]]:
        return to_evict(kube_api(ctx, step).pods_on(params["node"]))

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return None if self._left(step, params, ctx) else {"node": params["node"]}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        api = kube_api(ctx, step)
        refused: dict[str, str] = {}
        evicted: list[str] = []

        def probe() -> bool | None:
            left = self._left(step, params, ctx)
            for ns, name in left:
                why = api.evict(ns, name)
                if why is None:
                    if f"{ns}/{name}" not in evicted:
                        evicted.append(f"{ns}/{name}")
                        ctx.progress.note(f"evicted {ns}/{name} from node {params['node']}")
                    refused.pop(f"{ns}/{name}", None)
                else:
                    refused[f"{ns}/{name}"] = why
            return True if not self._left(step, params, ctx) else None

        timeout = float(params.get("timeout_seconds") or EVICT_TIMEOUT)
        try:
            ctx.wait_until(f"the pods of node {params['node']} to be evicted", probe, timeout=timeout)
        except ApplyInterrupted as exc:  # the deadline: name what never allowed, leave the node cordoned
            if not refused:
                raise
            held = "; ".join(f"{pod}: {why}" for pod, why in sorted(refused.items()))
            budgets = _budgets(api, {pod.split("/", 1)[0] for pod in refused})
            if budgets:
                held += "; budgets: " + ", ".join(budgets)
            raise CloudError(
                f"node {params['node']}: {len(refused)} pod(s) could not be evicted within {timeout:.0f}s ({held})",
                hint="a PodDisruptionBudget allows no disruption: scale its workload up or relax the budget, then "
                "run the same command again (the node stays cordoned; nothing was deleted)",
            ) from exc
        return {"node": params["node"], "evicted": evicted}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        left = self._left(step, params, ctx)
        if left:
            raise CloudError(f"node {params['node']} still runs {', '.join(f'{n}/{p}' for n, p in left)}")


def _budgets(api: Any, namespaces: set[str]) -> list[str]:
    """The PodDisruptionBudgets of `namespaces` that allow no disruption now, as `ns/name (n healthy, m wanted)`."""
    out = []
    for ns in sorted(namespaces):
        for b in api.iter_custom("policy", "v1", "poddisruptionbudgets", ns):
            st = b.get("status") or {}
            if int(st.get("disruptionsAllowed", 0)) < 1:
                out.append(
                    f"{ns}/{b['metadata']['name']} ({st.get('currentHealthy', '?')} healthy, "
                    f"{st.get('desiredHealthy', '?')} wanted)"
                )
    return out


class LeaveEvicted:
    """Evicted pods are not put back: their controllers recreated them on nodes that can address them."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"nothing to put back on node {params['node']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        return {}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


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


CORDON_NODE = Action(
    "eks.cordon-node", NODE_PERMISSIONS, CordonNode, undo=UncordonNode, undo_permissions=NODE_PERMISSIONS
)
EVICT_NODE_PODS = Action("eks.evict-node-pods", EVICT_PERMISSIONS, EvictNodePods, undo=LeaveEvicted)
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
