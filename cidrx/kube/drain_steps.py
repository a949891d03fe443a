"""The step executors and undos of a node drain, for any provider's migration plan: cordon a node (undo:
uncordon), evict its pods with the Eviction API honouring PodDisruptionBudgets (undo: nothing to put back, the
pods' controllers recreated them on nodes with addresses).

Why it exists: a migration off full address space drains nodes the same way on every cloud; only the step that
then scales the old group down is the provider's. A provider declares its own Actions (names, permissions) with
these executors. They reach the cluster through the apply's clients (`ctx.apis.kube`, a KubeApi, None under
--no-kube) and use only Kubernetes calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cidrx.errors import ApplyInterrupted, CloudError
from cidrx.kube.drain import to_evict
from cidrx.model.plan import Step
from cidrx.registry import Action

if TYPE_CHECKING:
    from cidrx.engine.executor import Outputs, StepContext
    from cidrx.kube.api import KubeApi

NODE_PERMISSIONS = ("kubernetes: nodes get,patch",)
EVICT_PERMISSIONS = (
    "kubernetes: pods list",
    "kubernetes: pods/eviction create",
    "kubernetes: poddisruptionbudgets.policy list",
)
# How long one node's pods may take to leave (a budget allowing no disruption stops the apply after it).
EVICT_TIMEOUT = 10 * 60.0


def kube_of(ctx: StepContext, step: Step) -> KubeApi:
    """The Kubernetes client of this apply; `step` cannot run without one."""
    api: KubeApi | None = getattr(ctx.apis, "kube", None)
    if api is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return api


def _node(ctx: StepContext, step: Step, name: str) -> dict[str, Any] | None:
    return kube_of(ctx, step).get_custom("", "v1", "nodes", name)


def _cordoned(node: dict[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


class CordonNode:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        node = _node(ctx, step, params["node"])
        if node is None:
            return {"node": params["node"], "gone": True}  # already replaced: nothing to cordon
        return {"node": params["node"]} if _cordoned(node) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        kube_of(ctx, step).cordon(params["node"])
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
        kube_of(ctx, step).cordon(params["node"], False)
        return {"node": params["node"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class EvictNodePods:
    def _left(self, step: Step, params: dict[str, Any], ctx: StepContext) -> list[tuple[str, str]]:
        return to_evict(kube_of(ctx, step).pods_on(params["node"]))

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return None if self._left(step, params, ctx) else {"node": params["node"]}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        api = kube_of(ctx, step)
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


def _budgets(api: KubeApi, namespaces: set[str]) -> list[str]:
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


def drain_actions(family: str) -> tuple[Action, Action]:
    """A provider's cordon and evict Actions (`<family>.cordon-node`, `<family>.evict-node-pods`): the same
    Kubernetes steps and permissions whichever cloud's migration runs them. Rollback uncordons; evicted pods stay
    where their controllers recreated them."""
    cordon = Action(
        f"{family}.cordon-node", NODE_PERMISSIONS, CordonNode, undo=UncordonNode, undo_permissions=NODE_PERMISSIONS
    )
    return cordon, Action(f"{family}.evict-node-pods", EVICT_PERMISSIONS, EvictNodePods, undo=LeaveEvicted)
