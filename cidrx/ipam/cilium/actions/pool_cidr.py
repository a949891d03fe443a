"""The `cilium.add-pool-cidr` step action (multi-pool mode): its declaration, its executor and its undo.

Why it exists: a CiliumPodIPPool grows by another entry in `spec.ipv4.cidrs`; the multi-pool operator watches
pools and hands out blocks of the new CIDR without a restart (pkg/ipam/allocator/multipool/pool_allocator.go
UpsertPool; the mask size of an existing pool cannot change). The entry is a string in cilium.io/v2alpha1 and
`{cidr: ...}` in cilium.io/v2, written in the version the plan read. The write appends with a JSON patch guarded
by the resourceVersion; undo removes only that entry, refused (exit 4) while a node holds a block of it.
"""

from __future__ import annotations

from typing import Any

from cidrx import netmath
from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.ipam.cilium.actions.objects import CONFLICT_RETRIES, guard, kube_of, meta_of, node_cidrs_in, set_annotation
from cidrx.ipam.cilium.collect import pool_cidr_text
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.registry import Action

PLURAL = "ciliumpodippools"


def _gv(params: dict[str, Any]) -> tuple[str, str]:
    group, _, version = str(params["api"]).partition("/")
    return group, version


def _pool(ctx: StepContext, step: Step, params: dict[str, Any]) -> dict[str, Any]:
    found = kube_of(ctx, step).get_custom(*_gv(params), PLURAL, params["pool"])
    if found is None:
        raise StalePlan(f"the plan is stale: CiliumPodIPPool {params['pool']} is gone; nothing was changed")
    return found


def _items(obj: dict[str, Any]) -> list[Any]:
    items = (((obj.get("spec") or {}).get("ipv4") or {}).get("cidrs")) or []
    return items if isinstance(items, list) else []


def _cidrs(obj: dict[str, Any]) -> list[str]:
    return [pool_cidr_text(i) for i in _items(obj)]


class AddPoolCidr:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = params["cidr"] in _cidrs(_pool(ctx, step, params))
        return {"pool": params["pool"], "cidr": params["cidr"]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = kube_of(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            obj = _pool(ctx, step, params)
            now = _cidrs(obj)
            if params["cidr"] in now:
                return {"pool": params["pool"], "cidr": params["cidr"]}
            if now != list(params["before"]):
                raise StalePlan(
                    f"the plan is stale: CiliumPodIPPool {params['pool']} now has {', '.join(now)}, not "
                    f"{', '.join(params['before'])}; nothing was changed; make a new plan"
                )
            item: Any = {"cidr": params["cidr"]} if _gv(params)[1] != "v2alpha1" else params["cidr"]
            ops = [
                guard(obj),
                {"op": "add", "path": "/spec/ipv4/cidrs/-", "value": item},
                *set_annotation(meta_of(obj).get("annotations"), "/metadata/annotations", ctx.plan_id),
            ]
            try:
                api.json_patch(*_gv(params), PLURAL, params["pool"], ops)
            except Conflict:
                continue
            return {"pool": params["pool"], "cidr": params["cidr"]}
        raise CloudError(f"CiliumPodIPPool {params['pool']} kept changing under us; run the same command again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        now = _cidrs(_pool(ctx, step, params))
        if now[: len(params["before"])] != list(params["before"]) or params["cidr"] not in now:
            raise CloudError(f"CiliumPodIPPool {params['pool']} has {', '.join(now)}: expected {params['cidr']} added")


class RemovePoolCidr:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = params["cidr"] in _cidrs(_pool(ctx, step, params))
        return {"pool": params["pool"], "cidr": params["cidr"]} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        held = node_cidrs_in(kube_of(ctx, step), netmath.parse_cidr(params["cidr"]), pool=params["pool"])
        if held:
            return f"{len(held)} node block(s) of pool {params['pool']} lie in {params['cidr']}: {', '.join(held[:3])}"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove {params['cidr']} from CiliumPodIPPool {params['pool']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = kube_of(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            obj = _pool(ctx, step, params)
            now = _cidrs(obj)
            if params["cidr"] not in now:
                return {"pool": params["pool"]}
            index = now.index(params["cidr"])
            annotations = meta_of(obj).get("annotations")
            mine = annotations is not None and annotations.get(DIGEST_TAG) == ctx.plan_id
            ops = [
                guard(obj),
                {"op": "remove", "path": f"/spec/ipv4/cidrs/{index}"},
                *(set_annotation(annotations, "/metadata/annotations", None) if mine else []),
            ]
            try:
                api.json_patch(*_gv(params), PLURAL, params["pool"], ops)
            except Conflict:
                continue
            return {"pool": params["pool"], "cidr": params["cidr"]}
        raise CloudError(f"CiliumPodIPPool {params['pool']} kept changing under us; run the same command again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


ADD_POOL_CIDR = Action(
    "cilium.add-pool-cidr",
    ("kubernetes: ciliumpodippools.cilium.io get,patch",),
    executor=AddPoolCidr,
    undo=RemovePoolCidr,
    undo_permissions=("kubernetes: ciliumpodippools.cilium.io get,patch", "kubernetes: ciliumnodes.cilium.io list"),
)
