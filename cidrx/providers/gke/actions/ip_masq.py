"""Step action `kube.add-ip-masq-cidr`: the new pod range added to ip-masq-agent's nonMasqueradeCIDRs
(facts.masquerade decides whether it must be), its executor, its undo and its Terraform (a comment: the
ConfigMap is rarely in Terraform).

The ConfigMap is changed with a JSON patch whose first op tests the resourceVersion just read, so a concurrent
writer makes it fail (422) instead of being overwritten; the undo removes exactly the planned CIDR, and only
when the plan added it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.gke.actions.operations import GkeApis, cluster_api, no_cluster
from cidrx.providers.gke.actions.range_lists import added_by_plan, already_or_unchanged, covered
from cidrx.registry import Action
from cidrx.render.hcl import Comment
from cidrx.render.terraform import Emitter

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi


IP_MASQ_RETRIES = 3


def _kube(ctx: StepContext) -> KubeApi:
    apis: GkeApis = ctx.apis
    if apis.kube is None:
        raise CloudError(
            "the ip-masq-agent step changes a ConfigMap in the cluster and needs its Kubernetes API: run the "
            "apply with cluster access (without --no-kube)"
        )
    return apis.kube


class AddIpMasqCidr:
    """Append the new range to ip-masq-agent's nonMasqueradeCIDRs with a JSON patch that starts with a `test`
    of the resourceVersion just read, so a concurrent writer makes it fail (422) instead of being overwritten."""

    def _read(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        cm = _kube(ctx).get_custom("", "v1", "configmaps", params["name"], params["namespace"])
        if cm is None:
            raise StalePlan(
                f"ConfigMap {params['namespace']}/{params['name']} was deleted since the plan was made; make a new plan"
            )
        return cm

    def _cidrs(self, cm: dict[str, Any], params: dict[str, Any]) -> tuple[list[str], str]:
        from cidrx.providers.gke.facts.masquerade import DEFAULT_NON_MASQUERADE, parse_config

        text = str((cm.get("data") or {}).get(params["key"]) or "")
        config = parse_config(text)
        if config is None:
            raise StalePlan(f"ConfigMap {params['namespace']}/{params['name']} no longer holds a readable config")
        raw = config.get("nonMasqueradeCIDRs")
        return ([str(c) for c in raw] if isinstance(raw, list) else list(DEFAULT_NON_MASQUERADE)), text

    def _done(self, params: dict[str, Any]) -> Outputs:
        return {"config_map": f"{params['namespace']}/{params['name']}", "cidr": params["cidr"]}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        cidrs, _ = self._cidrs(self._read(params, ctx), params)
        return self._done(params) if covered(cidrs, params["cidr"]) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        where = f"ConfigMap {params['namespace']}/{params['name']}"
        return self.patch(params, ctx, lambda cidrs: already_or_unchanged(cidrs, params, where, "nonMasqueradeCIDRs"))

    def patch(self, params: dict[str, Any], ctx: StepContext, done: Callable[[list[str]], bool]) -> Outputs:
        """Add the planned CIDR (or take it out, `remove`) unless `done(cidrs)` says there is nothing to do;
        a JSON patch whose first op tests the resourceVersion just read, read again on 422."""
        from cidrx.kube.errors import PatchTestFailed
        from cidrx.providers.gke.facts.masquerade import updated_config

        where = f"ConfigMap {params['namespace']}/{params['name']}"
        for _ in range(IP_MASQ_RETRIES):
            cm = self._read(params, ctx)
            cidrs, text = self._cidrs(cm, params)
            if done(cidrs):
                return self._done(params)
            version = str((cm.get("metadata") or {}).get("resourceVersion") or "")
            op = "replace" if params["key"] in (cm.get("data") or {}) else "add"
            value = updated_config(text, params["cidr"], remove=bool(params.get("remove")))
            ops = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": version},
                {"op": op, "path": f"/data/{params['key']}", "value": value},
            ]
            try:
                _kube(ctx).json_patch("", "v1", "configmaps", params["name"], ops, namespace=params["namespace"])
            except PatchTestFailed:
                continue  # written meanwhile: read again and decide again
            return self._done(params)
        raise CloudError(f"{where} kept changing under us ({IP_MASQ_RETRIES} attempts); run again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None  # the agent re-reads its config every resyncInterval (60 s by default)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(
                f"ConfigMap {params['namespace']}/{params['name']} does not list {params['cidr']} after the patch"
            )


class UndoIpMasqCidr:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        adder = AddIpMasqCidr()
        cm = cluster_api(ctx).get_custom("", "v1", "configmaps", params["name"], params["namespace"])
        if cm is None:
            return None
        cidrs, _ = adder._cidrs(cm, params)
        return {"config_map": f"{params['namespace']}/{params['name']}"} if added_by_plan(cidrs, params) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None if cluster_api(ctx) is not None else no_cluster(f"ConfigMap {found['config_map']}")

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove {params['cidr']} from nonMasqueradeCIDRs of ConfigMap {found['config_map']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        return AddIpMasqCidr().patch({**params, "remove": True}, ctx, lambda cidrs: not added_by_plan(cidrs, params))

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None  # the patch is the change; find() sees it at once


def ip_masq_hcl(e: Emitter, step: Step) -> None:
    """What to set in the ConfigMap, as a comment."""
    p = step.params
    cidrs = ", ".join([*p["seen"], p["cidr"]])
    e.items.append(
        Comment(
            f"step {step.id}: {step.description}.\n"
            f"In ConfigMap {p['namespace']}/{p['name']}, key {p['key']}, set nonMasqueradeCIDRs to: {cidrs}. "
            "If Terraform does not manage that ConfigMap, apply the step with cidrx instead."
        )
    )


ADD_IP_MASQ_CIDR = Action(
    "kube.add-ip-masq-cidr",
    ("kubernetes: configmaps get,patch in kube-system",),
    AddIpMasqCidr,
    undo=UndoIpMasqCidr,
    undo_permissions=("kubernetes: configmaps get,patch in kube-system",),
    hcl=ip_masq_hcl,
)
