"""The `cilium.append-cluster-pool-cidr` step action: its declaration, its executor and its undo.

Why it exists: the cluster pool grows only by APPENDING to `cluster-pool-ipv4-cidr` (Cilium's docs, "Expanding
the cluster pool": never change or reorder existing entries; the mask size cannot change). The executor
re-reads `kube-system/cilium-config`, refuses (exit 4) when the list is no longer the one the plan saw, and
writes the list with the new entry at its end through a JSON patch guarded by the resourceVersion, annotating
the ConfigMap `cidrx.io/plan` = plan id. Undo removes only that entry, refused (exit 4) while a CiliumNode
holds a CIDR inside it, then restarts cilium-operator again (it builds its allocators at start-up).
"""

from __future__ import annotations

from typing import Any

from cidrx import netmath
from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.ipam.cilium.actions.objects import (
    CONFLICT_RETRIES,
    guard,
    kube_of,
    meta_of,
    node_cidrs_in,
    set_annotation,
)
from cidrx.ipam.cilium.actions.operator import RESTART_PERMISSIONS, restart, restarted_for
from cidrx.ipam.cilium.collect import split_list
from cidrx.ipam.cilium.model import CIDR_KEY, DEFAULT_CLUSTER_POOL
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.registry import Action

KEY = CIDR_KEY.replace("~", "~0").replace("/", "~1")


def _config(ctx: StepContext, step: Step, params: dict[str, Any]) -> dict[str, Any]:
    found = kube_of(ctx, step).get_custom("", "v1", "configmaps", params["name"], params["namespace"])
    if found is None:
        raise StalePlan(
            f"the plan is stale: ConfigMap {params['namespace']}/{params['name']} is gone; nothing was changed"
        )
    return found


def _raw(obj: dict[str, Any]) -> str | None:
    value = (obj.get("data") or {}).get(CIDR_KEY)
    return None if value is None else str(value)


def entries(raw: str | None) -> list[str]:
    return list(split_list(raw)) if raw is not None else list(DEFAULT_CLUSTER_POOL)


def appended(raw: str | None, cidr: str) -> str:
    """The list with `cidr` at its end, every existing entry kept exactly as written."""
    if raw is None or not raw.strip():
        return " ".join([*entries(raw), cidr])
    return f"{raw.rstrip()} {cidr}"


def without(raw: str, cidr: str) -> str:
    """The list without the entry `cidr`, the others in their order."""
    return " ".join(e for e in split_list(raw) if e != cidr)


class AppendClusterPoolCidr:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        raw = _raw(_config(ctx, step, params))
        return {"cidr": params["cidr"], "list": raw} if params["cidr"] in entries(raw) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = kube_of(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            obj = _config(ctx, step, params)
            raw = _raw(obj)
            now = entries(raw)
            if params["cidr"] in now:
                return {"cidr": params["cidr"], "list": raw}
            if now != list(params["before"]):
                raise StalePlan(
                    f"the plan is stale: {CIDR_KEY} is now {' '.join(now)!r}, not {' '.join(params['before'])!r} as "
                    "planned; nothing was changed; make a new plan"
                )
            value = appended(raw, params["cidr"])
            annotations = meta_of(obj).get("annotations")
            data_op = {"op": "add", "path": f"/data/{KEY}", "value": value}
            ops = [guard(obj), data_op, *set_annotation(annotations, "/metadata/annotations", ctx.plan_id)]
            if obj.get("data") is None:
                ops[1] = {"op": "add", "path": "/data", "value": {CIDR_KEY: value}}
            try:
                api.json_patch("", "v1", "configmaps", params["name"], ops, params["namespace"])
            except Conflict:
                continue
            return {"cidr": params["cidr"], "list": value}
        raise CloudError(
            f"ConfigMap {params['namespace']}/{params['name']} kept changing under us; run the same command again"
        )

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        now = entries(_raw(_config(ctx, step, params)))
        before = list(params["before"])
        if now[: len(before)] != before or params["cidr"] not in now:
            raise CloudError(
                f"{CIDR_KEY} is {' '.join(now)!r}: expected {' '.join(before)!r} followed by {params['cidr']}"
            )


class RemoveClusterPoolCidr:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        """The entry while the list holds it; after it is gone, the operator restart still owed when a rollback
        stopped between the two (the operator still carries the apply's restart annotation)."""
        raw = _raw(_config(ctx, step, params))
        if params["cidr"] in entries(raw):
            return {"cidr": params["cidr"]}
        operator = {"namespace": params["namespace"], "name": params["operator"]}
        if restarted_for(ctx, step, operator) == ctx.plan_id:
            return {"cidr": params["cidr"], "restart_only": True}
        return None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        held = node_cidrs_in(kube_of(ctx, step), netmath.parse_cidr(params["cidr"]))
        if held:
            return f"{len(held)} CiliumNode CIDR(s) lie in {params['cidr']}: {', '.join(held[:3])}"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        if found.get("restart_only"):
            return f"restart cilium-operator ({params['cidr']} is already out of {CIDR_KEY})"
        return f"remove {params['cidr']} from {CIDR_KEY} and restart cilium-operator"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = kube_of(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            obj = _config(ctx, step, params)
            raw = _raw(obj)
            if raw is None or params["cidr"] not in entries(raw):
                break
            rest = without(raw, params["cidr"])
            # Back to the text the plan saw when nothing else changed (its spacing included).
            value = params.get("raw_before") if split_list(rest) == tuple(params["before"]) else rest
            annotations = meta_of(obj).get("annotations")
            mine = annotations is not None and annotations.get(DIGEST_TAG) == ctx.plan_id
            data_op = (
                {"op": "remove", "path": f"/data/{KEY}"}
                if value is None
                else {"op": "replace", "path": f"/data/{KEY}", "value": value}
            )
            ops = [guard(obj), data_op, *(set_annotation(annotations, "/metadata/annotations", None) if mine else [])]
            try:
                api.json_patch("", "v1", "configmaps", params["name"], ops, params["namespace"])
            except Conflict:
                continue
            break
        else:
            raise CloudError(
                f"ConfigMap {params['namespace']}/{params['name']} kept changing under us; run the same command again"
            )
        operator = {"namespace": params["namespace"], "name": params["operator"]}
        restart(ctx, step, operator, f"{ctx.plan_id}-rollback")
        return {"cidr": params["cidr"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


APPEND_CLUSTER_POOL_CIDR = Action(
    "cilium.append-cluster-pool-cidr",
    ("kubernetes: configmaps get,patch in kube-system named cilium-config",),
    executor=AppendClusterPoolCidr,
    undo=RemoveClusterPoolCidr,
    undo_permissions=(
        "kubernetes: configmaps get,patch in kube-system named cilium-config",
        "kubernetes: ciliumnodes.cilium.io list",
        *RESTART_PERMISSIONS,
    ),
)
