"""The `whereabouts.release-allocations` step action: its declaration and its executor.

Why it exists: removing an allocation is only safe if it is still stale at the moment of the write. The
reconciler race (whereabouts issues 162 and 207; docs/cloud-facts.md) came from deciding on a pool read and a
pod read that were already out of date. So act re-reads the pool and every pod it names right before
writing, decides each entry again with the same rule as analysis (a Pending pod or one without
network-status is live), and writes one JSON patch whose first op tests /metadata/resourceVersion: if
Whereabouts allocated in between, the patch fails with 422 and the step reads and decides again. A change
made before apply started is refused by the plan's drift check (exit 4); entries that change after it,
while apply runs (another pod or container holds the offset, the pod is back), are kept and reported in
the step outputs. Everything is safe to repeat: a second apply finds nothing to remove.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.ipam.whereabouts.actions.reads import ATTEMPTS, Pods, kube_of
from cidrx.ipam.whereabouts.analyze import kept_reason, stale_reason
from cidrx.ipam.whereabouts.model import GROUP, POOLS, VERSION
from cidrx.model.plan import Step
from cidrx.registry import Action

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi


def pointer_token(key: str) -> str:
    """A map key as one JSON-pointer reference token (RFC 6901 §3: `~` -> `~0`, `/` -> `~1`)."""
    return key.replace("~", "~0").replace("/", "~1")


def _allocations(pool: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pool.get("spec") or {}
    found = spec.get("allocations") if isinstance(spec, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _entry_out(entry: Mapping[str, Any], why: str) -> dict[str, str]:
    return {"offset": str(entry["offset"]), "ip": str(entry["ip"]), "podref": str(entry["podref"]), "why": why}


class ReleaseAllocations:
    """`whereabouts.release-allocations`: params {namespace, pool, range, allocations: [{offset, ip, podref,
    id, why}]}. Outputs: released, kept (with why), already_released."""

    def _decide(self, step: Step, params: dict[str, Any], kube: KubeApi) -> tuple[dict[str, Any] | None, Outputs]:
        pool = kube.get_custom(GROUP, VERSION, POOLS, params["pool"], params["namespace"])
        out: Outputs = {"remove": [], "kept": [], "already_released": []}
        if pool is None:
            out["already_released"] = [_entry_out(e, "the IPPool is gone") for e in params["allocations"]]
            return None, out
        current_range = (pool.get("spec") or {}).get("range")
        if current_range != params["range"]:
            raise StalePlan(
                f"IPPool {params['namespace']}/{params['pool']} now has range {current_range}, not "
                f"{params['range']}: its offsets name other addresses. Nothing more was changed; make a new plan"
            )
        held = _allocations(pool)
        pods = Pods(kube)
        for e in params["allocations"]:
            cur = held.get(e["offset"])
            if not isinstance(cur, Mapping):
                out["already_released"].append(_entry_out(e, "no longer allocated"))
                continue
            podref, cid = str(cur.get("podref") or ""), str(cur.get("id") or "")
            if podref != e["podref"] or (e.get("id") and cid != e["id"]):
                now = f"{podref or 'no pod'} (container {cid or 'unknown'})"
                out["kept"].append(_entry_out(e, f"allocation changed since the plan: now held by {now}"))
                continue
            why = stale_reason(e["ip"], podref, pods.get(podref), pods.holders)
            if why is None:
                kept = kept_reason([e["ip"]], podref, pods.get(podref), pods.holders)
                out["kept"].append(_entry_out(e, f"{kept}; not removed"))
                continue
            out["remove"].append(_entry_out(e, why))
        return pool, out

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        _, out = self._decide(step, params, kube_of(ctx, step))
        if out["remove"]:
            return None
        return {"released": [], "kept": out["kept"], "already_released": out["already_released"]}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict, NotFound

        kube = kube_of(ctx, step)
        for _ in range(ATTEMPTS):
            pool, out = self._decide(step, params, kube)
            if pool is None or not out["remove"]:
                return {"released": [], "kept": out["kept"], "already_released": out["already_released"]}
            ops: list[dict[str, Any]] = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": pool["metadata"]["resourceVersion"]}
            ]
            ops += [{"op": "remove", "path": f"/spec/allocations/{pointer_token(e['offset'])}"} for e in out["remove"]]
            try:  # PatchTestFailed (422) is a Conflict: Whereabouts wrote the pool since we read it
                kube.json_patch(GROUP, VERSION, POOLS, params["pool"], ops, params["namespace"])
            except (Conflict, NotFound):
                continue
            ctx.progress.note(
                f"{step.id}: released {len(out['remove'])} allocation(s)"
                + (f", kept {len(out['kept'])} that are live or changed" if out["kept"] else "")
            )
            return {"released": out["remove"], "kept": out["kept"], "already_released": out["already_released"]}
        raise CloudError(
            f"IPPool {params['namespace']}/{params['pool']} changed on every one of {ATTEMPTS} attempts; "
            "Whereabouts is busy allocating from it. Run the same command again"
        )

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        pool = kube_of(ctx, step).get_custom(GROUP, VERSION, POOLS, params["pool"], params["namespace"])
        held = _allocations(pool) if pool is not None else {}
        planned = {e["offset"]: e for e in params["allocations"]}
        for e in outputs.get("released", []):
            cur = held.get(e["offset"])
            same_id = not planned[e["offset"]].get("id") or (
                isinstance(cur, Mapping) and cur.get("id") == planned[e["offset"]]["id"]
            )
            if isinstance(cur, Mapping) and cur.get("podref") == e["podref"] and same_id:
                raise CloudError(
                    f"IPPool {params['namespace']}/{params['pool']} still holds offset {e['offset']} for {e['podref']}"
                )


# Declared once: the plan attaches its name and permissions to its Steps (each step narrows the first grant to
# the namespace of the pool it writes), `cidrx permissions` prints them without making a plan, apply runs its
# executor. Apply lists the pods: every unfinished pod reporting the address makes it live.
RELEASE = Action(
    "whereabouts.release-allocations",
    ("kubernetes: ippools.whereabouts.cni.cncf.io get,patch", "kubernetes: pods get,list"),
    executor=ReleaseAllocations,
)
